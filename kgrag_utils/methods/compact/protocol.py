"""Compact relation selection's side of the protocol: `summarize(records)`, `scores(summary, run=None)`,
`stage_errors(...)`.

Rows: the derived answer's strict Hits@1 (`derived (no LLM)`: the rules' answer, no LLM), and for each
context the LLM read (`LLM reads compact facts`, `LLM reads top-k facts`) strict Hits@1 (= the paper's
EM) and lenient containment. Failed examples count as wrong, never dropped. The cost of a context is
its prompt tokens and the seconds of its reader call.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ...metrics import CONTAINMENT, HITS1
from ..scoring import cost, mean, num, rows, score_row

__all__ = ["summarize", "scores", "stage_errors", "stage_counts", "cost_of", "VARIANTS"]

#: context (or "derived") -> the variant name of its score rows
VARIANTS = {"derived": "derived (no LLM)", "compact": "LLM reads compact facts", "topk": "LLM reads top-k facts"}


def summarize(records: Sequence[Mapping]) -> dict:
    """Chain and derivation accuracy, checks, gate, facts, tokens, the LLM's scores per context, cost."""
    from .pipeline import summarize_records

    return summarize_records(records)


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


def stage_errors(summary: Mapping, run: Mapping | None = None) -> dict:
    """Questions lost at each step: a wrong chain, no derivation, the LLM missing although the compact
    facts hold a gold answer; plus examples that raised."""
    s = summary or {}
    out = dict(s.get("stage_errors") or {})
    examples = (run or {}).get("examples") or []
    if not out and examples:
        out = stage_counts(examples, s.get("kind") or "kgqa")
    if s.get("n_errors"):
        out["raised an error"] = s["n_errors"]
    return {k: float(v) for k, v in out.items()}


def scores(summary: Mapping, run: Mapping | None = None) -> list[dict]:
    s = summary or {}
    if not s.get("n"):
        return []
    costs = s.get("cost") or cost_of((run or {}).get("examples") or [], run)
    derived = VARIANTS["derived"]
    out = [score_row("compact", derived, s["n"], HITS1, s.get("derived_hits@1"), costs.get(derived), run,
                     uses_llm=False, definition_="strict Hits@1 of the answer the rules derive from the compact facts "
                                                 "(no LLM)")]
    for ctx in ("compact", "topk"):
        llm = s.get(f"llm_{ctx}")
        if isinstance(llm, Mapping):
            v = VARIANTS[ctx]
            out += [score_row("compact", v, s["n"], m, llm.get(m), costs.get(v), run) for m in (HITS1, CONTAINMENT)]
    return rows(out)
