"""Compact relation selection's side of the protocol, pure functions of its records.

Score rows (`record_scores`): the derived answer's strict Hits@1 (`derived (no LLM)`: the rules'
answer, no LLM), and for each context the LLM read (`LLM reads compact facts`, `LLM reads top-k
facts`) strict Hits@1 (= the paper's EM) and lenient containment. Failed examples count as wrong,
never dropped. The cost of a context is its prompt tokens and the seconds of its reader call. Stage
errors: a wrong chain, no derivation, the LLM missing although the compact facts hold a gold answer.
The extras are `statistics.derivation_statistics`. Everything shared is `kgrag_utils.methods.summary`'s.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ...metrics import CONTAINMENT, HITS1
from .. import summary as shared
from ..scoring import cost, mean, num
from ..summary import SummaryHooks, record_value
from .stages.statistics import derivation_statistics, kind_of

__all__ = ["HOOKS", "VARIANTS", "summarize", "scores", "record_scores", "cost_of", "stage_counts"]

#: context (or "derived") -> the variant name of its score rows
VARIANTS = {"derived": "derived (no LLM)", "compact": "LLM reads compact facts", "topk": "LLM reads top-k facts"}

#: the derived answer's definition (the rows of the other variants use the metric's own)
DERIVED_DEFINITION = "strict Hits@1 of the answer the rules derive from the compact facts (no LLM)"


def record_scores(r: Mapping) -> dict:
    """The derived answer's strict Hits@1, and strict Hits@1 / lenient containment of each context the LLM read."""
    out = {VARIANTS["derived"]: {HITS1: record_value(r, "derived_hits@1", failed_key=None)}}
    for ctx in ("compact", "topk"):
        if f"llm_{ctx}" in r:
            out[VARIANTS[ctx]] = {HITS1: record_value(r, f"hits@1_{ctx}", failed_key=None),
                                  CONTAINMENT: record_value(r, f"containment_{ctx}", failed_key=None)}
    return out


def cost_of(records: Sequence[Mapping], run: Mapping | None = None) -> dict:
    """{variant: cost}. Without per-call seconds in the records (older runs), the run's LLM seconds
    (`run.tokens.generate_seconds`) are split over the contexts by prompt tokens."""
    out = {VARIANTS["derived"]: {"prompt_tokens_per_q": 0.0, "seconds_per_q": mean(r.get("seconds_derive") for r in records),
                                 "cached_share": None}}
    n = max(len(records), 1)
    for ctx in ("compact", "topk"):
        if not any(f"llm_{ctx}" in r or f"prompt_tokens_{ctx}" in r for r in records):
            continue
        c = cost((r.get(f"prompt_tokens_{ctx}") for r in records), (r.get(f"seconds_{ctx}") for r in records),
                 (r.get(f"cached_{ctx}") for r in records if f"cached_{ctx}" in r))
        if c["seconds_per_q"] is None and run is not None:
            gen = num((run.get("tokens") or {}).get("generate_seconds"))
            tot = mean(sum(num(r.get(f"prompt_tokens_{k}")) or 0 for k in ("compact", "topk")) for r in records)
            tok = c["prompt_tokens_per_q"]
            c["seconds_per_q"] = gen / n * (tok / tot) if gen is not None and tok and tot else None
        out[VARIANTS[ctx]] = c
    return out


def stage_counts(records: Sequence[Mapping], kind: str = "kgqa") -> dict:
    """Items lost at each step: a wrong chain (KG questions), no derivation, the LLM missing although
    the compact facts hold a gold answer."""
    out = {"chain (relation knowledge)": sum(1 for e in records if e.get("chain_correct") is False)} if kind == "kgqa" else {}
    out["not derivable"] = sum(1 for e in records if e.get("derivable") is False)
    if any("hits@1_compact" in e for e in records):
        out["LLM reading compact facts"] = sum(1 for e in records if e.get("hits@1_compact") == 0.0
                                               and e.get("compact_has_gold"))
    return out


def summarize(records: Sequence[Mapping]) -> dict:
    """The run summary (`methods.summary.summarize`): the shared keys and score rows, and the derivation
    statistics (chain and derivation accuracy, checks, gate, facts, tokens, the LLM's scores per context)."""
    return shared.summarize(records, "compact", HOOKS)


def scores(summary: Mapping, run: Mapping | None = None) -> list[dict]:
    """The long-form score rows stored in a summary, with the run's fields."""
    return shared.score_rows(summary, run)


HOOKS = SummaryHooks(record_scores=record_scores, cost=lambda records: cost_of(records),
                     stage_errors=lambda records: stage_counts(records, kind_of(records)),
                     extras=lambda records: derivation_statistics(records),
                     uses_llm=lambda variant, records: variant != VARIANTS["derived"],
                     definitions={(VARIANTS["derived"], HITS1): DERIVED_DEFINITION})
