"""SimGRAG's side of the protocol: `summarize(records)`, `scores(summary, run=None)`, `stage_errors(...)`.

Rows: strict Hits@1 and lenient containment on all questions (variant `pattern=<source>`) and on the
answerable subset (`..., answerable`); for fact verification (FactKG) also `accuracy` (= strict: the
verdict equals the label). Failed examples count as wrong, never dropped. The cost of a question is
the prompt tokens and LLM seconds of its pattern and answer calls.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ...metrics import ACCURACY, CONTAINMENT, HITS1
from ..scoring import cost, mean, rows, score_row

__all__ = ["summarize", "scores", "stage_errors", "cost_of", "variant_of"]


def summarize(records: Sequence[Mapping]) -> dict:
    """Scores on all questions and the answerable subset, parse rate, stage errors, timings, tokens, cost."""
    from .pipeline import summarize_records

    return summarize_records(records)


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


def stage_errors(summary: Mapping, run: Mapping | None = None) -> dict:
    """Questions lost at each stage (strict), as the method attributes them, plus examples that raised."""
    s = summary or {}
    out = {k: float(v) for k, v in (s.get("stage_errors") or s.get("failed_stage") or {}).items()}
    if s.get("n_errors"):
        out["raised an error"] = float(s["n_errors"])
    return out


def scores(summary: Mapping, run: Mapping | None = None) -> list[dict]:
    s = summary or {}
    allq = s.get("all") or {}
    if not allq:
        return []
    variant = f"pattern={s['pattern_source']}" if s.get("pattern_source") else variant_of((), run)
    c = (s.get("cost") or cost_of((run or {}).get("examples") or [], variant)).get(variant) or {}
    uses_llm = bool(s.get("uses_llm", True))
    metrics = [HITS1, CONTAINMENT] + ([ACCURACY] if s.get("task") == "verify" else [])
    out = [score_row("simgrag", variant, allq.get("n", s.get("n")), m, allq.get(HITS1 if m == ACCURACY else m), c, run,
                     uses_llm) for m in metrics]
    ans = s.get("answerable") or {}
    if ans.get("n"):
        out += [score_row("simgrag", f"{variant}, answerable", ans.get("n"), m, ans.get(m), c, run, uses_llm)
                for m in (HITS1, CONTAINMENT)]
    return rows(out)
