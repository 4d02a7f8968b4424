"""KGP's side of the protocol, pure functions of its records (`KGP.run` writes them).

Score rows (`record_scores`, variant `traversal=<t>, graph=<g>`): recall@5 and recall@30 of the
retrieved passages, SF-EM@30, and, with the reader, EM, F1 and containment of its answer. Failed
examples count as wrong. The cost of a question is the prompt tokens of the traversal agent and the
reader, and the seconds of every stage. Stage errors: no gold passage within the budget, and the
reader missing with every gold passage retrieved. Everything shared is `kgrag_utils.methods.summary`'s.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ...metrics import CONTAINMENT, EM, F1, recall_name, sf_em_name
from ...metrics import summarize as summarize_rows
from .. import summary as shared
from ..scoring import cost, num
from ..summary import SummaryHooks, record_value
from .config import DEFAULT_KS
from .stages.evaluation import metric_keys

__all__ = ["HOOKS", "summarize", "scores", "extras", "record_scores", "stage_errors", "cost_of", "variant_of",
           "uses_llm", "run_ks", "run_reader"]

#: the metrics of the score rows (those a run measures)
SCORED = (recall_name(5), recall_name(30), sf_em_name(30), EM, F1, CONTAINMENT)


def run_ks(rows: Sequence[Mapping]) -> list[int]:
    """The recall cut-offs of a run (KGP writes them into each record)."""
    return list(next((r["ks"] for r in rows if r.get("ks")), list(DEFAULT_KS)))


def run_reader(rows: Sequence[Mapping]) -> bool:
    """Whether the reader ran (KGP writes it into each record)."""
    return any(r.get("reader") for r in rows)


def variant_of(records: Sequence[Mapping] = (), run: Mapping | None = None) -> str:
    names = {r.get("variant") for r in records if r.get("variant")}
    if len(names) == 1:
        return names.pop()
    params = (run or {}).get("params") or {}
    return f"traversal={params.get('traversal', '?')}, graph={params.get('graph', '?')}"


_STAGE_SECONDS = ("set_seconds", "graph_seconds", "traversal_seconds", "reader_seconds")


def _sum(d: Mapping | None, keys) -> float | None:
    if not isinstance(d, Mapping):
        return None
    vals = [num(d.get(k)) for k in keys]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


def cost_of(records: Sequence[Mapping], variant: str | None = None) -> dict:
    return {variant or variant_of(records): cost((_sum(r.get("tokens"), ("agent_prompt", "reader_prompt")) for r in records),
                                                 (_sum(r.get("timings"), _STAGE_SECONDS) for r in records))}



def extras(rows: Sequence[Mapping]) -> dict:
    """KGP's own summary keys: every metric's mean over ALL records (`metrics.summarize`: failed records
    count as 0; recall@k, sf_em@k, doc_recall@k, doc_sf_em@k for the records' cut-offs `ks`, and EM, F1,
    containment with the reader), set and graph sizes, agent calls, stage seconds, the variant, LLM use."""
    rows = list(rows)
    ks, reader = run_ks(rows), run_reader(rows)
    out = {k: v for k, v in summarize_rows(rows, metric_keys(ks, reader)).items() if k not in ("n", "n_failed")}
    for key in ("set_passages", "graph_density", "graph_avg_degree", "n_agent_calls", "n_reseeds"):
        vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        if vals:
            out[f"mean_{key}"] = float(np.mean(vals))
    for key in ("graph_seconds", "traversal_seconds", "reader_seconds", "set_seconds"):
        vals = [r["timings"][key] for r in rows if isinstance(r.get("timings"), Mapping) and key in r["timings"]]
        if vals:
            out[f"mean_{key}"] = float(np.mean(vals))
    out["variant"] = variant_of(rows) if any(r.get("variant") for r in rows) else None
    out["uses_llm"] = uses_llm("", rows)
    return out


def uses_llm(variant: str, rows: Sequence[Mapping]) -> bool:
    """The reader ran, or the traversal agent was called."""
    return run_reader(rows) or any((r.get("tokens") or {}).get("agent_prompt") for r in rows)


def stage_errors(rows: Sequence[Mapping]) -> dict:
    """Questions lost at retrieval (no gold passage within the largest k) and at the reader (every gold
    passage retrieved, F1 = 0)."""
    ks = run_ks(rows)
    k = max(ks) if ks else 30
    out = {"retrieval (no gold passage in budget)": sum(1 for r in rows if num(r.get(f"recall@{k}")) == 0.0)}
    if run_reader(rows):
        out["reader (all gold retrieved, F1 = 0)"] = sum(
            1 for r in rows if num(r.get(f"recall@{k}")) == 1.0 and num(r.get("f1")) == 0.0)
    return out


def record_scores(r: Mapping) -> dict:
    """recall@5, recall@30, SF-EM@30 and, with the reader, EM, F1 and containment of one record, in its variant
    `traversal=<t>, graph=<g>` (the metrics of its cut-offs; a failed record scores 0)."""
    keys = set(metric_keys(r.get("ks") or DEFAULT_KS, bool(r.get("reader"))))
    return {r.get("variant") or variant_of([r]): {m: record_value(r, m) for m in SCORED if m in keys}}


def summarize(records: Sequence[Mapping]) -> dict:
    """The run summary (`methods.summary.summarize`): the shared keys and score rows, and every metric's mean,
    set and graph sizes, stage seconds (the cut-offs `ks` and whether the reader ran are read from the records)."""
    return shared.summarize(records, "kgp", HOOKS)


def scores(summary: Mapping, run: Mapping | None = None) -> list[dict]:
    """The long-form score rows stored in a summary, with the run's fields."""
    return shared.score_rows(summary, run)


HOOKS = SummaryHooks(record_scores=record_scores,
                     cost=lambda rows: cost_of(rows, variant_of(rows)) if any(r.get("variant") for r in rows) else {},
                     stage_errors=stage_errors, extras=extras, uses_llm=uses_llm)
