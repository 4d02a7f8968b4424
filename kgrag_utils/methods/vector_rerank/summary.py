"""Vector retrieval + LLM rerank's side of the protocol, pure functions of its records.

Score rows (`record_scores`). Passage datasets: passage recall@2 and recall@5 per variant. KG question
datasets: strict Hits@1 and lenient containment of the answer from the reranked facts (rerank), and
every variant's fact hit (for rerank it scores the chosen facts even where the answer call then
failed); the same on the answerable questions. Variants without an LLM (naive, expand) say `llm=none`
and 0 prompt tokens; an LLM variant's prompt tokens are all LLM calls of the question (entities,
rerank, answer), its seconds those of its own stages. Failed examples count as wrong, never dropped.
Everything shared is `kgrag_utils.methods.summary`'s.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ...metrics import CONTAINMENT, FACT_HIT, HITS1
from ...metrics import summarize as summarize_rows
from .. import summary as shared
from ..isolation import is_error_record
from ..scoring import mean, num
from ..summary import SummaryHooks, record_value
from .config import KGQA_VARIANT_LABELS, KGQA_VARIANTS, RECALL_KS, VARIANT_LABELS

__all__ = ["HOOKS", "summarize", "scores", "record_scores", "cost_of", "variant_seconds", "is_kgqa",
           "passage_extras", "kgqa_extras"]

#: the stages a rerank question is lost at: an unusable reply, or a usable one that loses what retrieval had
RERANK_STAGE = "failed: rerank reply (or, on KG questions, the answer) unusable"
RERANK_LOSS_STAGE = "rerank: its pick scores below plain retrieval's (passages) or misses the answer (KG)"


def is_kgqa(records: Sequence[Mapping]) -> bool:
    """Records of a KG question dataset (facts are the unit, answers scored) rather than of passages."""
    return any(_is_kgqa(r) for r in records)


def _is_kgqa(r: Mapping) -> bool:
    return r.get("task") == "kgqa" or r.get("gold_key") == "answer"


def _passage_variants(records: Sequence[Mapping]) -> list[str]:
    return sorted({v for r in records for v in r.get("variants", {})}, key=lambda v: list(VARIANT_LABELS).index(v))


def _kgqa_variants(records: Sequence[Mapping]) -> list[str]:
    return [v for v in KGQA_VARIANTS if any(v in r.get("variants", {}) for r in records)]


def record_scores(r: Mapping) -> dict:
    """One record's values per variant: recall@2 / @5 (passages), or fact hit and, for rerank, strict Hits@1
    and lenient containment (KG questions); a variant that failed scores 0 (but rerank's fact hit scores
    the chosen facts)."""
    variants = r.get("variants") or {}
    if _is_kgqa(r):
        out = {}
        for v in _kgqa_variants([r]):
            row = variants[v]
            out[v] = ({HITS1: record_value(row, HITS1), CONTAINMENT: record_value(row, CONTAINMENT),
                       FACT_HIT: record_value(row, FACT_HIT, failed_key=None)} if v == "rerank"
                      else {FACT_HIT: record_value(row, FACT_HIT)})
        return out
    return {v: {f"recall@{k}": record_value(variants[v], f"recall@{k}") for k in RECALL_KS}
            for v in _passage_variants([r])}


def stage_errors(records: Sequence[Mapping]) -> dict:
    """Runs with the rerank variant: questions whose rerank reply (or, on KG questions, the answer) was
    unusable, and questions whose usable reply lost at the rerank (the explorer's "rerank" stage): on
    passages its Recall@5 is below naive's or expand's, on KG questions none of its chosen facts holds a
    gold answer."""
    if not any("rerank" in (r.get("variants") or {}) for r in records):
        return {}
    kept = [r for r in records if not is_error_record(r)]
    failed = [bool((r.get("variants") or {}).get("rerank", {}).get("failed")) for r in kept]
    lost = sum(1 for r, f in zip(kept, failed) if not f and "rerank" in (r.get("variants") or {}) and _lost_at_rerank(r))
    return {RERANK_STAGE: sum(failed), RERANK_LOSS_STAGE: lost}


def _lost_at_rerank(r: Mapping) -> bool:
    variants = r.get("variants") or {}
    if _is_kgqa(r):
        return variants["rerank"].get("fact_hit") is not None and not variants["rerank"].get("fact_hit")
    own = num(variants["rerank"].get("recall@5")) or 0.0
    return any((num((variants.get(o) or {}).get("recall@5")) or 0.0) > own for o in ("naive", "expand"))


def variant_seconds(timings: Mapping | None, variant: str) -> float | None:
    """Seconds one variant spent: its own stages (`rerank_*` for every rerank-*), the query embedding,
    and the LLM entity step for the rerank variants."""
    if not isinstance(timings, Mapping):
        return None
    stem = variant.split("-")[0]
    vals = [num(v) for k, v in timings.items()
            if k == stem or k.startswith(stem + "_") or k == "embed" or (stem == "rerank" and k == "entities_llm")]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


def cost_of(records: Sequence[Mapping], variants: Sequence[str] | None = None) -> dict:
    """{variant: cost}: prompt tokens of every LLM call for the rerank variants (0 for the others), seconds
    of the variant's own stages."""
    names = list(variants) if variants is not None else sorted({v for r in records for v in (r.get("variants") or {})})
    tok_all = mean(num((r.get("tokens") or {}).get("prompt")) for r in records)
    return {name: {"prompt_tokens_per_q": tok_all if name.startswith("rerank") else 0.0,
                   "seconds_per_q": mean(variant_seconds(r.get("timings"), name) for r in records),
                   "cached_share": None} for name in names}


def passage_extras(records: Sequence[Mapping]) -> dict:
    """Passage datasets, per variant: mean Recall@2/@5 over ALL records (a failed rerank counts as 0), n,
    n_failed, label, recall curve; plus expansion sizes, rerank statuses, per-stage latency and tokens."""
    records = list(records)
    names = _passage_variants(records)
    out: dict = {"variants": {}}
    for v in names:
        rows = []
        for r in records:
            row = dict(r.get("variants", {}).get(v, {"failed": True}))
            rows.append(row)
        keys = [f"recall@{k}" for k in RECALL_KS]
        s = summarize_rows(rows, keys)
        curve_rows = [row.get("recall_curve") for row in rows if row.get("recall_curve")]
        s["recall_curve"] = np.mean(np.asarray(curve_rows, dtype=float), axis=0).tolist() if curve_rows else []
        s["mean_passages"] = float(np.mean([row.get("n_passages", 0) for row in rows])) if rows else 0.0
        s["label"] = VARIANT_LABELS[v]
        if v in ("rerank-padded", "rerank-filled"):
            s["n_rerank_failed"] = sum(1 for row in rows if row.get("rerank_failed"))
        out["variants"][v] = s
    for role in ("expand", "rerank"):
        sizes = [r["graph"][role]["expansion_size"] for r in records if role in r.get("graph", {})]
        if sizes:
            cands = [len(r["graph"][role]["candidates"]) for r in records if role in r.get("graph", {})]
            sources = [r["graph"][role]["entity_source"] for r in records if role in r.get("graph", {})]
            out[f"{role}_graph"] = {"expansion_size_mean": float(np.mean(sizes)), "expansion_size_median": float(np.median(sizes)),
                                    "expansion_size_max": int(np.max(sizes)), "candidates_mean": float(np.mean(cands)),
                                    "entity_sources": {s: sources.count(s) for s in sorted(set(sources))}}
    statuses = [r["rerank"].get("status") for r in records if "rerank" in r]
    if statuses:
        out["rerank_status"] = {s: statuses.count(s) for s in sorted(set(map(str, statuses)))}
        out["rerank_bad_ids"] = int(sum(len(r["rerank"].get("bad_ids") or []) for r in records if "rerank" in r))
        out["rerank_duplicates"] = int(sum(r["rerank"].get("duplicates") or 0 for r in records if "rerank" in r))
        out.update(pick_shape(records))
    return _finish(out, records)


def pick_shape(records: Sequence[Mapping]) -> dict:
    """What the rerank replies chose: mean relations per reply, and how many replies are the list's head in list
    order (ids 1, 2, ..., k with k >= 3): a model that counts down the list instead of choosing (the vr-2 grammar
    wrote the ids first, and 81 of the 1.5B's 100 MuSiQue replies were the list's head, mostly [1, 2, 3, 4, 5])."""
    picks = [list(r["rerank"].get("positions") or []) for r in records if r.get("rerank", {}).get("raw") is not None]
    if not picks:
        return {}
    head = sum(1 for p in picks if len(p) >= 3 and p == list(range(len(p))))
    out = {"rerank_picks_mean": float(np.mean([len(p) for p in picks])), "rerank_list_head": head,
           "rerank_replies": len(picks)}
    rules = [str(r["rerank"]["vote"]) for r in records if r.get("rerank", {}).get("vote") is not None]
    if rules:  # samples > 1 (samples.py): the voted picks above, and how each vote was decided
        out["rerank_votes"] = {k: rules.count(k) for k in sorted(set(rules))}
    return out


def _finish(out: dict, records: Sequence[Mapping]) -> dict:
    """Latency and tokens, the same for passage and KG-question summaries."""
    stages = sorted({k for r in records for k in (r.get("timings") or {})})
    out["latency_mean_s"] = {k: float(np.mean([(r.get("timings") or {}).get(k, 0.0) for r in records])) for k in stages}
    out["tokens"] = {"prompt": int(sum(r.get("tokens", {}).get("prompt", 0) for r in records)),
                     "completion": int(sum(r.get("tokens", {}).get("completion", 0) for r in records))}
    out.setdefault("task", "passages")
    return out


def kgqa_extras(records: Sequence[Mapping]) -> dict:
    """Per variant: fact_hit (all variants; for rerank it scores the chosen facts even where the answer call
    failed), hits@1 strict and containment lenient (rerank), over ALL records (failures count as wrong), n,
    n_failed, label; the same on the answerable questions; candidate
    coverage, rerank statuses, mean stage seconds and tokens."""
    records = list(records)
    names = _kgqa_variants(records)
    out: dict = {"task": "kgqa", "variants": {}}
    for v in names:
        rows = [dict(r.get("variants", {}).get(v, {"failed": True})) for r in records]
        keys = ["hits@1", "containment", "fact_hit"] if v == "rerank" else ["fact_hit"]
        s = summarize_rows(rows, keys)
        if v == "rerank":  # the chosen facts are scored even where the answer call then failed (a retrieval measure)
            s["fact_hit"] = summarize_rows([{"fact_hit": row.get("fact_hit")} for row in rows], ["fact_hit"])["fact_hit"]
        s["label"] = KGQA_VARIANT_LABELS[v]
        s["mean_facts"] = float(np.mean([row.get("n_facts", 0) for row in rows])) if rows else 0.0
        ans = [row for row, r in zip(rows, records) if r.get("answerable")]
        if ans and len(ans) < len(rows):
            s["answerable"] = summarize_rows(ans, keys)
        if v == "rerank":
            st = [str(row.get("answer_status")) for row in rows]
            s["answer_status"] = {k: st.count(k) for k in sorted(set(st))}
        out["variants"][v] = s
    for role in ("expand", "rerank"):
        gs = [r["graph"][role] for r in records if role in r.get("graph", {})]
        if gs:
            sizes = [g["expansion_size"] for g in gs]
            sources = [g["entity_source"] for g in gs]
            out[f"{role}_graph"] = {"expansion_size_mean": float(np.mean(sizes)), "expansion_size_median": float(np.median(sizes)),
                                    "expansion_size_max": int(np.max(sizes)),
                                    "candidates_mean": float(np.mean([len(g["candidates"]) for g in gs])),
                                    "candidate_fact_hit": float(np.nanmean([g.get("candidate_fact_hit", np.nan) for g in gs])),
                                    "entity_sources": {s: sources.count(s) for s in sorted(set(sources))}}
    statuses = [r["rerank"].get("status") for r in records if "rerank" in r]
    if statuses:
        out["rerank_status"] = {s: statuses.count(s) for s in sorted(set(map(str, statuses)))}
    return _finish(out, records)


def summarize(records: Sequence[Mapping]) -> dict:
    """The run summary (`methods.summary.summarize`): the shared keys and score rows, and per-variant
    details, rerank statuses, latency and tokens (the task is read from the records)."""
    return shared.summarize(records, "vector_rerank", HOOKS)


def scores(summary: Mapping, run: Mapping | None = None) -> list[dict]:
    """The long-form score rows stored in a summary, with the run's fields."""
    return shared.score_rows(summary, run)


HOOKS = SummaryHooks(record_scores=record_scores,
                     cost=lambda records: cost_of(records, (_kgqa_variants if is_kgqa(records) else _passage_variants)(records)),
                     stage_errors=stage_errors,
                     extras=lambda records: kgqa_extras(records) if is_kgqa(records) else passage_extras(records),
                     uses_llm=lambda variant, records: variant.startswith("rerank"), answerable_rows=True)
