"""What compact relation selection did over a set of records (pure functions of the records).

`derivation_statistics(records)` is the method's part of a run summary (the summary's extras,
`summary.py`) and the summary of the validation records `Compact.prepare` chooses the gate on.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Mapping, Sequence

import numpy as np

from ...isolation import is_error_record
from ...scoring import mean
from ...summary import answerable as answerable_subset

__all__ = ["derivation_statistics", "kind_of"]


#: the protocol's mean (every value here is a float; nan where there is none)
_mean = partial(mean, empty=math.nan)


def _dist(values) -> dict:
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    if arr.size == 0:
        return {"mean": float("nan"), "median": float("nan"), "p95": float("nan"), "n": 0}
    return {"mean": float(arr.mean()), "median": float(np.median(arr)), "p95": float(np.percentile(arr, 95)),
            "max": float(arr.max()), "n": int(arr.size)}


def _hits(rec: Mapping, key: str) -> float:
    """A per-record score: a missing value is a failure (0); nan (no gold) stays nan and is left out."""
    v = rec.get(key)
    return 0.0 if v is None else float(v)


def kind_of(records: Sequence[Mapping]) -> str:
    """"kgqa" or "kinship": the kind the records say (KG questions when mixed)."""
    kinds = {r.get("kind") or ("kinship" if "target" in r else "kgqa") for r in records}
    return kinds.pop() if len(kinds) == 1 else "kgqa"


def derivation_statistics(records: Sequence[Mapping], kind: str | None = None, llm: bool = True) -> dict:
    """What the derivation and the reader did over these records: chain / derivation accuracy, checks,
    gate, facts, tokens and, with `llm`, the reader's accuracy per context (`llm_<ctx>`).

    `kind` ("kgqa" | "kinship") is read from the records when not given. Records of examples that
    raised (`error`) count in every denominator, as not derivable and as wrong answers. Used for the
    run summary's extras (`summary.py`) and for the validation records `Compact.prepare` tunes on.
    """
    records = list(records)
    n = len(records)
    if n == 0:
        return {}
    kind = kind or kind_of(records)
    out: dict = {"kind": kind}
    derivable = [r for r in records if r.get("derivable")]
    gated = [r for r in records if r.get("gate")]
    unique = [r for r in derivable if r.get("n_derived") == 1]
    out["derivable_rate"] = len(derivable) / n
    out["derived_hits@1"] = _mean(_hits(r, "derived_hits@1") for r in records)
    out["derived_precision_when_derivable"] = _mean(_hits(r, "derived_hits@1") for r in derivable)
    out["one_answer_coverage"] = len(unique) / n
    out["derived_precision_one_answer"] = _mean(_hits(r, "derived_hits@1") for r in unique)
    out["gate_coverage"] = len(gated) / n
    out["gate_precision"] = _mean(_hits(r, "derived_hits@1") for r in gated)
    out["consistent_rate"] = _mean(float(bool(r.get("consistent"))) for r in records)
    signals = sorted({k for r in records for k in (r.get("consistency") or {}).get("applicable", {})})
    out["consistency"] = {
        s: {"applicable_rate": _mean(float((r.get("consistency") or {}).get("applicable", {}).get(s, False))
                                     for r in records),
            "conflict_rate": _mean(float(bool((r.get("consistency") or {}).get("conflicts", {}).get(s))) for r in records)}
        for s in signals}
    out["facts_per_context"] = _dist(r.get("n_facts") for r in derivable)
    out.update(_kgqa_statistics(records, derivable) if kind == "kgqa" else _kinship_statistics(records))
    for ctx in ("compact", "topk"):
        tok = [r.get(f"prompt_tokens_{ctx}") for r in records if r.get(f"prompt_tokens_{ctx}") is not None]
        if tok:
            out[f"prompt_tokens_{ctx}"] = _dist(tok)
    both = [r for r in records if r.get("prompt_tokens_compact") is not None and r.get("prompt_tokens_topk") is not None]
    if both:  # the ratio of means over the items that have both contexts
        out["prompt_token_ratio_topk_over_compact"] = (float(np.mean([r["prompt_tokens_topk"] for r in both])) /
                                                         max(float(np.mean([r["prompt_tokens_compact"] for r in both])), 1e-9))
    if llm:
        for ctx in ("compact", "topk"):
            if any(f"llm_{ctx}" in r for r in records):
                out[f"llm_{ctx}"] = {
                    "hits@1": _mean(_hits(r, f"hits@1_{ctx}") for r in records),
                    "containment": _mean(_hits(r, f"containment_{ctx}") for r in records),
                    "hits@1_gated": _mean(_hits(r, f"hits@1_{ctx}_gated") for r in records),
                    "n_failed": sum(1 for r in records if r.get(f"failed_{ctx}") or is_error_record(r)),
                }
                if kind == "kgqa":
                    ans = answerable_subset(records)
                    out[f"llm_{ctx}"]["hits@1_answerable"] = _mean(_hits(r, f"hits@1_{ctx}") for r in ans)
    return out


def _kgqa_statistics(records: Sequence[Mapping], derivable: Sequence[Mapping]) -> dict:
    """KG questions: chain accuracy (all, answerable, unseen chains), chain sources, facts, the top-k baseline."""
    out: dict = {}
    with_gold = [r for r in records if r.get("chain_correct") is not None]
    answerable = answerable_subset(records)  # its size is the summary's shared n_answerable
    out["chain_accuracy"] = _mean(float(bool(r["chain_correct"])) for r in with_gold)
    seen = [r for r in records if r.get("gold_chain_seen") is not None]
    if seen:  # the paper: 94.7% of WebQSP test questions have a chain seen in training
        out["gold_chain_seen_rate"] = _mean(float(r["gold_chain_seen"]) for r in seen)
        out["derivable_rate_unseen_chain"] = _mean(float(bool(r.get("derivable"))) for r in seen
                                                   if not r["gold_chain_seen"])
    out["chain_accuracy_answerable"] = _mean(float(bool(r["chain_correct"])) for r in answerable if r.get("chain_correct") is not None)
    out["derived_hits@1_answerable"] = _mean(_hits(r, "derived_hits@1") for r in answerable)
    out["chain_source"] = {s: sum(1 for r in records if r.get("chain_source") == s) for s in
                           sorted({str(r.get("chain_source")) for r in records})}
    out["facts_full_per_context"] = _dist(r.get("n_facts_full") for r in derivable)
    out["capped_rate"] = _mean(float(bool(r.get("capped"))) for r in derivable)
    out["compact_has_gold"] = _mean(float(bool(r.get("compact_has_gold"))) for r in records)
    out["topic_missing"] = sum(1 for r in records if r.get("topic_missing"))
    based = [r for r in records if "topk_n_facts" in r]
    if based:
        out["n_topk"] = len(based)
        out["topk_facts_per_context"] = _dist(r.get("topk_n_facts") for r in based)
        out["topk_has_gold"] = _mean(float(bool(r.get("topk_has_gold"))) for r in based)
        out["compact_has_gold_same_items"] = _mean(float(bool(r.get("compact_has_gold"))) for r in based)
        out["topk_derivable"] = _mean(float(bool(r.get("topk_derivable"))) for r in based if r.get("derivable"))
    return out


def _kinship_statistics(records: Sequence[Mapping]) -> dict:
    """Kinship stories: relation accuracy, derived accuracy and ambiguity by chain length."""
    out: dict = {}
    out["relation_accuracy"] = _mean(float(bool(r.get("relation_correct"))) for r in records)
    by_len: dict = {}
    for r in records:
        by_len.setdefault(int(r.get("chain_length") or 0), []).append(r)
    out["by_chain_length"] = {k: {"n": len(v), "derived_accuracy": _mean(_hits(r, "derived_hits@1") for r in v),
                                  "ambiguous_rate": _mean(float(r.get("n_derived", 0) > 1) for r in v)}
                              for k, v in sorted(by_len.items())}
    return out
