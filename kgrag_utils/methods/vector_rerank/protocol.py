"""Vector retrieval + LLM rerank's side of the protocol: `summarize(records)`, `scores(summary, run=None)`,
`stage_errors(...)`.

Passage datasets: passage recall@2 and recall@5 per variant. KG question datasets: strict Hits@1 and
lenient containment of the answer from the reranked facts (rerank), and every variant's fact hit; the
same on the answerable questions. Variants without an LLM (naive, expand) say `llm=none` and 0 prompt
tokens; an LLM variant's prompt tokens are all LLM calls of the question (entities, rerank, answer), its
seconds those of its own stages. Failed examples count as wrong, never dropped.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ...metrics import CONTAINMENT, FACT_HIT, HITS1, recall_name
from ..scoring import mean, num, rows, score_row

__all__ = ["summarize", "scores", "stage_errors", "cost_of", "variant_seconds"]

_RECALL_KS = (2, 5)


def summarize(records: Sequence[Mapping]) -> dict:
    """Per-variant scores (passages: recall@k; KG questions: Hits@1, containment, fact hit), rerank
    statuses, latency, tokens, cost; the task is read from the records."""
    from .kgqa import summarize_kgqa
    from .pipeline import summarize_records

    records = list(records)
    kgqa = any(r.get("task") == "kgqa" or r.get("gold_key") == "answer" for r in records)
    return summarize_kgqa(records) if kgqa else summarize_records(records)


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


def stage_errors(summary: Mapping, run: Mapping | None = None) -> dict:
    """Questions whose rerank reply (or, on KG questions, the answer) was unusable; examples that raised."""
    s = summary or {}
    out = dict(s.get("stage_errors") or {})
    examples = (run or {}).get("examples") or []
    if not out and any("rerank" in (e.get("variants") or {}) for e in examples):
        out = {"failed: rerank reply (or, on KG questions, the answer) unusable":
               sum(1 for e in examples if ((e.get("variants") or {}).get("rerank") or {}).get("failed"))}
    if s.get("n_errors"):
        out["raised an error"] = s["n_errors"]
    return {k: float(v) for k, v in out.items()}


def scores(summary: Mapping, run: Mapping | None = None) -> list[dict]:
    s = summary or {}
    variants = {k: v for k, v in (s.get("variants") or {}).items() if isinstance(v, Mapping)}
    costs = s.get("cost") or cost_of((run or {}).get("examples") or [], list(variants))
    kgqa = s.get("task") == "kgqa"
    out = []
    for name, v in variants.items():
        uses_llm = name.startswith("rerank")
        c = costs.get(name)
        metrics = ([HITS1, CONTAINMENT] if name == "rerank" else []) + [FACT_HIT] if kgqa else \
            [recall_name(k) for k in _RECALL_KS]
        out += [score_row("vector_rerank", name, v.get("n", s.get("n")), m, v.get(m), c, run, uses_llm) for m in metrics]
        sub = v.get("answerable")  # KG questions: the same scores on the answerable questions
        if isinstance(sub, Mapping):
            out += [score_row("vector_rerank", f"{name}, answerable", sub.get("n"), m, sub.get(m), c, run, uses_llm)
                    for m in metrics]
    return rows(out)
