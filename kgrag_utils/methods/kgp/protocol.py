"""KGP's side of the protocol: `summarize(records)`, `scores(summary, run=None)`, `stage_errors(...)`.

Rows (variant `traversal=<t>, graph=<g>`): recall@5 and recall@30 of the retrieved passages, SF-EM@30,
and, with the reader, EM, F1 and containment of its answer. Failed examples count as wrong. The cost
of a question is the prompt tokens of the traversal agent and the reader, and the seconds of every stage.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ...metrics import CONTAINMENT, EM, F1, recall_name, sf_em_name
from ..scoring import cost, num, rows, score_row

__all__ = ["summarize", "scores", "stage_errors", "cost_of", "variant_of"]

_STAGE_SECONDS = ("set_seconds", "graph_seconds", "traversal_seconds", "reader_seconds")


def summarize(records: Sequence[Mapping]) -> dict:
    """Means over ALL records (failed ones count as 0), set and graph sizes, stage errors, cost.

    The cut-offs `ks` and whether the reader ran are read from the records (KGP writes them into each)."""
    from .config import DEFAULT_KS
    from .evaluation import summarize_run

    records = list(records)
    ks = next((r["ks"] for r in records if r.get("ks")), list(DEFAULT_KS))
    reader = any(r.get("reader") for r in records)
    return summarize_run(records, ks, reader)


def variant_of(records: Sequence[Mapping] = (), run: Mapping | None = None) -> str:
    names = {r.get("variant") for r in records if r.get("variant")}
    if len(names) == 1:
        return names.pop()
    params = (run or {}).get("params") or {}
    return f"traversal={params.get('traversal', '?')}, graph={params.get('graph', '?')}"


def _sum(d: Mapping | None, keys) -> float | None:
    if not isinstance(d, Mapping):
        return None
    vals = [num(d.get(k)) for k in keys]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


def cost_of(records: Sequence[Mapping], variant: str | None = None) -> dict:
    return {variant or variant_of(records): cost((_sum(r.get("tokens"), ("agent_prompt", "reader_prompt")) for r in records),
                                                 (_sum(r.get("timings"), _STAGE_SECONDS) for r in records))}


def stage_errors(summary: Mapping, run: Mapping | None = None) -> dict:
    """Questions lost at retrieval (no gold passage within the largest k) and at the reader (every gold
    passage retrieved, F1 = 0); examples that raised."""
    s = summary or {}
    out = dict(s.get("stage_errors") or {})
    examples = (run or {}).get("examples") or []
    if not out and examples:
        k = max((int(key.split("@")[1]) for e in examples for key in e if key.startswith("recall@")), default=30)
        out = {"retrieval (no gold passage in budget)": sum(1 for e in examples if num(e.get(f"recall@{k}")) == 0.0)}
        if ((run or {}).get("params") or {}).get("reader") or any("f1" in e for e in examples):
            out["reader (all gold retrieved, F1 = 0)"] = sum(1 for e in examples if num(e.get(f"recall@{k}")) == 1.0
                                                               and num(e.get("f1")) == 0.0)
    if s.get("n_errors"):
        out["raised an error"] = s["n_errors"]
    return {k: float(v) for k, v in out.items()}


def scores(summary: Mapping, run: Mapping | None = None) -> list[dict]:
    s = summary or {}
    if not s.get("n"):
        return []
    variant = s.get("variant") or variant_of((), run)
    c = (s.get("cost") or cost_of((run or {}).get("examples") or [], variant)).get(variant)
    params = (run or {}).get("params") or {}
    uses_llm = bool(s.get("uses_llm", params.get("traversal") in ("llm", "nograph") or params.get("reader", True)))
    metrics = [recall_name(5), recall_name(30), sf_em_name(30), EM, F1, CONTAINMENT]
    return rows(score_row("kgp", variant, s["n"], m, s.get(m), c, run, uses_llm) for m in metrics)
