"""SimGRAG's side of the protocol, pure functions of its records (`SimGRAG.run` writes them).

Score rows (`record_scores`): strict Hits@1 and lenient containment on all questions (variant
`pattern=<source>`) and on the answerable subset (`..., answerable`); for fact verification (FactKG)
also `accuracy` (= strict: the verdict equals the label). Failed examples count as wrong, never
dropped. The cost of a question is the prompt tokens and LLM seconds of its pattern and answer calls.
Stage errors: the strict failed stage (pattern, retrieval, generation). Everything shared (n, failures,
means, the answerable subset, cost per question, the rows) is `kgrag_utils.methods.summary`'s.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ...metrics import ACCURACY, CONTAINMENT, FACT_HIT, HITS1
from ...metrics import summarize as summarize_rows
from .. import summary as shared
from ..scoring import cost, mean
from ..summary import SummaryHooks, answerable, record_value
from .config import PATTERN_SOURCES
from .record import STAGES
from .stages.demos import own_type_counts
from .stages.oracle import MISS_CLASSES

__all__ = ["HOOKS", "summarize", "scores", "extras", "record_scores", "stage_errors", "cost_of",
           "variant_of", "uses_llm", "demonstrations", "llm_seconds"]

#: SimGRAG's own score-row metrics beside the shared ones (questions with a gold pattern; the demonstration ones where
#: the run chose demonstrations per question), with their definitions
METRICS = {
    "gold_relations": "the top-1 subgraph's facts use exactly the gold chain's KG relations (no subgraph: 0)",
    "pattern_miss": "the gold pattern's evidence holds a gold answer and this pattern's does not (the pattern's loss)",
    "own_type_share": "share of the chosen pattern demonstrations whose question type is the question's own",
    "own_type_all": "every chosen pattern demonstration has the question's own type",
    "own_type_none": "no chosen pattern demonstration has the question's own type",
}
_FACT_HIT = "fact-level: a top-k subgraph holds a gold answer (the evidence's retrieval hit, before any answer)"
DEFINITIONS = {(f"pattern={source}", metric): text for source in PATTERN_SOURCES
               for metric, text in {**METRICS, FACT_HIT: _FACT_HIT}.items()}
__all__ += ["METRICS", "relation_extras"]


def variant_of(records: Sequence[Mapping] = (), run: Mapping | None = None) -> str:
    sources = {r.get("pattern_source") for r in records if r.get("pattern_source")}
    source = sources.pop() if len(sources) == 1 else ((run or {}).get("params") or {}).get("pattern_source", "?")
    return f"pattern={source}"


def cost_of(records: Sequence[Mapping], variant: str | None = None) -> dict:
    """{variant: cost}: prompt tokens and seconds of the pattern and answer calls, share served from the cache."""
    def tok(r):
        t = r.get("tokens") or {}
        vals = [t.get(k) for k in ("pattern_prompt", "answer_prompt") if isinstance(t.get(k), (int, float))]
        return sum(vals) if vals else None

    def sec(r):
        t = r.get("timings") or {}
        vals = [t.get(k) for k in ("pattern_s", "answer_s") if isinstance(t.get(k), (int, float))]
        return sum(vals) if vals else None

    cached = [mean(float(bool((r.get("tokens") or {}).get(k))) for k in ("pattern_cached", "answer_cached"))
              for r in records]
    c = cost((tok(r) for r in records), (sec(r) for r in records))
    c["cached_share"] = mean(cached) if records else None
    return {variant or variant_of(records): c}



def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def _p95(values: list[float]) -> float | None:
    return float(np.percentile(values, 95)) if values else None


def relation_extras(records: Sequence[Mapping]) -> dict:
    """`relation_swaps` ("gold -> used": pattern edges whose top-1 fact uses another KG relation than the gold
    pattern's, edge by edge where the pattern has the gold pattern's number of edges, in order as oracle and copied
    patterns have them) and, where the demonstrations were chosen per question, `questions_respelt` (how many
    questions the respelling changed before the choice)."""
    out: dict = {}
    chosen = [r for r in records if r.get("pattern_demo_respelt") is not None]
    if chosen:
        out["questions_respelt"] = sum(bool(r["pattern_demo_respelt"]) for r in chosen)
    swaps: dict[str, int] = {}
    for r in records:
        gold = [t[1] for t in ((r.get("gold_pattern") or {}).get("triples") or [])]
        used = r.get("top1_relations") or []
        if gold and len(used) == len(gold):
            for g, u in zip(gold, used):
                if g != u:
                    swaps[f"{g} -> {u}"] = swaps.get(f"{g} -> {u}", 0) + 1
    out["relation_swaps"] = dict(sorted(swaps.items(), key=lambda kv: -kv[1]))
    return out


def extras(records: Sequence[Mapping]) -> dict:
    """SimGRAG's own summary keys: scores on all questions and on the answerable subset (`all`,
    `answerable`: `metrics.summarize`), the task and, for claims, accuracy, verdicts and accuracy per
    reasoning type; pattern parse and retrieval hit rates, the top-1 subgraph's Hits@1, the strict and
    lenient failed stages, timings (median, p95), time-outs, tokens, the pattern source, LLM use; with oracle
    patterns, the answerable misses by class (`stages.oracle.MISS_CLASSES`)."""
    records = list(records)
    out: dict = {"all": summarize_rows(records, ["hits@1", "containment"])}
    out["answerable"] = summarize_rows(answerable(records), ["hits@1", "containment"])
    n = len(records)
    tasks = {r.get("task", "qa") for r in records}
    out["task"] = tasks.pop() if len(tasks) == 1 else "mixed"
    if out["task"] == "verify":  # accuracy = strict verdict match; by FactKG reasoning type too
        out["accuracy"] = out["all"]["hits@1"]
        out["verdicts"] = {v: sum(1 for r in records if r.get("prediction") == v) for v in ("True", "False")}
        out["verdicts"]["none"] = n - out["verdicts"]["True"] - out["verdicts"]["False"]
        out["by_qtype"] = {str(t): summarize_rows([r for r in records if r.get("qtype") == t], ["hits@1"])
                           for t in sorted({r.get("qtype") for r in records}, key=str)}
    out["pattern_parse_rate"] = sum(bool(r.get("pattern_ok")) for r in records) / n if n else float("nan")
    out["retrieval_hit_rate"] = sum(bool(r.get("retrieval_hit")) for r in records) / n if n else float("nan")
    top1 = [r["top1_hit"] for r in records if r.get("top1_hit") is not None]
    out["top1_subgraph_hits@1"] = float(np.mean(top1)) if top1 else None
    out.update(relation_extras(records))
    for key in ("failed_stage", "failed_stage_lenient"):
        counts = {s: 0 for s in STAGES}
        for r in records:
            if r.get(key):
                counts[r[key]] = counts.get(r[key], 0) + 1
        out[key] = counts
    timing_keys = sorted({k for r in records for k in (r.get("timings") or {}) if k.endswith(("_ms", "_s"))})
    out["timings"] = {k: {"median": _median([r["timings"][k] for r in records if k in r.get("timings", {})]),
                          "p95": _p95([r["timings"][k] for r in records if k in r.get("timings", {})])}
                      for k in timing_keys}
    out["timed_out"] = sum(bool(r.get("timed_out")) for r in records)
    tok = {}
    for r in records:
        for k, v in (r.get("tokens") or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                tok[k] = tok.get(k, 0) + v
    out["tokens"] = tok
    sources = {r.get("pattern_source") for r in records if r.get("pattern_source")}
    out["pattern_source"] = sources.pop() if len(sources) == 1 else ("mixed" if sources else None)
    out["uses_llm"] = uses_llm("", records)
    if out["pattern_source"] == "oracle":  # why retrieval alone missed answerable questions (records' miss_class)
        out["answerable_misses_by_class"] = {c: sum(r.get("miss_class") == c for r in records) for c in MISS_CLASSES}
    for key, value in (("demonstrations", demonstrations(records)), ("llm_seconds", llm_seconds(records))):
        if value is not None:
            out[key] = value
    return out


def demonstrations(records: Sequence[Mapping]) -> dict | None:
    """Nearest demonstrations (None when no question had any): their tokens per question (mean over all questions),
    the distinct sets chosen, and `own_type`: how many of the chosen have the question's own type, and the questions
    (with strict Hits@1) whose demonstrations all / some / none have it (`stages.demos.own_type_counts`; records
    written before they held `pattern_demo_types` leave it out)."""
    chosen = [r for r in records if r.get("pattern_demos")]
    if not chosen:
        return None
    out: dict = {"demo_tokens_per_question": mean(float(r.get("pattern_demo_tokens") or 0) for r in records),
                 "distinct_demo_sets": len({tuple(r["pattern_demos"]) for r in chosen})}
    typed = [r for r in chosen if r.get("pattern_demo_types")]
    if typed:
        out["own_type"] = own_type_counts([(r.get("qtype"), r["pattern_demo_types"], record_value(r, HITS1) == 1.0)
                                           for r in typed])
    return out


def llm_seconds(records: Sequence[Mapping]) -> dict | None:
    """LLM seconds per question over the questions whose LLM calls were all computed here (none served from the
    response cache, which keeps no times): their mean, and how many; None when no question called an LLM."""
    called = [r for r in records if uses_llm("", [r])]
    if not called:
        return None
    fresh = [r for r in called if not any((r.get("tokens") or {}).get(k) for k in ("pattern_cached", "answer_cached"))]
    seconds = [sum(float((r.get("timings") or {}).get(k) or 0.0) for k in ("pattern_s", "answer_s")) for r in fresh]
    return {"per_uncached_question": mean(seconds) if seconds else None, "n_uncached": len(fresh), "n_called": len(called)}


def uses_llm(variant: str, records: Sequence[Mapping]) -> bool:
    """Whether an LLM wrote the patterns or the answers (oracle patterns without a reader call none)."""
    return any(r.get("pattern_prompt") or r.get("answer_prompt") for r in records)


def record_scores(r: Mapping) -> dict:
    """Strict Hits@1 and lenient containment (and, for claims, accuracy = the strict verdict match) of one
    record, in its variant `pattern=<source>`; a failed record scores 0."""
    hits = record_value(r, HITS1)
    scores = {HITS1: hits, CONTAINMENT: record_value(r, CONTAINMENT)}
    if r.get("task") == "verify":
        scores[ACCURACY] = hits
    else:  # retrieval: the evidence, the top subgraph's relations, what the pattern lost against the gold one
        oracle, gold_rel = r.get("oracle_retrieval_hit"), r.get("top1_gold_relations")
        scores[FACT_HIT] = record_value(r, "retrieval_hit", failed_key=None)
        scores["gold_relations"] = float("nan") if gold_rel is None else float(bool(gold_rel))
        scores["pattern_miss"] = float("nan") if oracle is None else float(bool(oracle) and not r.get("retrieval_hit"))
    types, qtype = r.get("pattern_demo_types") or [], r.get("qtype")
    if types and qtype is not None:  # the demonstrations chosen for it (`demos.own_type_group`)
        own = sum(t == str(qtype) for t in types)
        scores.update({"own_type_share": own / len(types), "own_type_all": float(own == len(types)),
                       "own_type_none": float(own == 0)})
    return {f"pattern={r.get('pattern_source')}": scores}


def stage_errors(records: Sequence[Mapping]) -> dict:
    """Questions lost at each stage (strict): pattern, retrieval, generation (`failed_stage`)."""
    counts = {s: 0 for s in STAGES}
    for r in records:
        if r.get("failed_stage"):
            counts[r["failed_stage"]] = counts.get(r["failed_stage"], 0) + 1
    return counts


HOOKS = SummaryHooks(record_scores=record_scores, cost=lambda records: cost_of(records), stage_errors=stage_errors,
                     extras=extras, uses_llm=uses_llm, answerable_rows=True, definitions=DEFINITIONS)


def summarize(records: Sequence[Mapping]) -> dict:
    """The run summary (`methods.summary.summarize`): the shared keys and score rows, and SimGRAG's extras."""
    return shared.summarize(records, "simgrag", HOOKS)


def scores(summary: Mapping, run: Mapping | None = None) -> list[dict]:
    """The long-form score rows stored in a summary, with the run's fields."""
    return shared.score_rows(summary, run)
