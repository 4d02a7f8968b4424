"""One vector-rerank example's record, as `VectorRerank.run` / `FactRerank.run` write it."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["VectorRerankRecord"]


class VectorRerankRecord(TypedDict, total=False):
    """Keys of a record. `variants` maps each evaluated variant to its row: passages: passages,
    n_passages, recall@2, recall@5, recall_curve, failed; KG questions: facts, n_facts, fact_hit,
    failed, and for rerank answer_raw, predictions, hits@1, containment, answer_status. An example
    that raised holds only id, question, qtype, task, failed=True, error, traceback."""

    id: str
    scores: dict                 # {variant: {metric: value}}: the values the run summary averages (methods/summary.py; None = no gold)
    task: str                    # "passages" or "kgqa"
    question: str
    qtype: str
    gold: list[str]              # passages: gold passage ids or titles (gold_key says which)
    gold_key: str                # "pid", "title" (passages) or "answer" (KG questions)
    answers: list[str]           # KG questions: the gold answers (also hops, answerable, topic_entities)
    variants: dict[str, dict]
    graph: dict[str, dict]       # per role (expand / rerank): query entities, seeds, expansion, candidates (+ candidate_triples)
    rerank: dict[str, Any]       # prompt, raw reply, status, chosen relations (or facts), parser details
    timings: dict[str, float]    # seconds per stage (embed, naive, *_seeds, *_expand, rerank_llm, total, ...)
    tokens: dict[str, int]       # prompt / completion tokens of every LLM call of the example
    failed: bool                 # the rerank failed (or the example raised)
    error: str
    traceback: str
