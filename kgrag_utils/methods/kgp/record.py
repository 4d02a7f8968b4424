"""One KGP example's record, as `KGP.run` / `KGP.run_one` write it."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["KGPRecord"]


#: the keys whose names hold "@" (metric names), which the class syntax cannot spell
_KGPRecordMetrics = TypedDict("_KGPRecordMetrics", {"recall@1": float, "recall@5": float, "recall@10": float, "recall@20": float, "recall@30": float, "sf_em@1": float, "sf_em@5": float, "sf_em@10": float, "sf_em@20": float, "sf_em@30": float, "doc_recall@1": float, "doc_recall@5": float, "doc_recall@10": float, "doc_recall@20": float, "doc_recall@30": float, "doc_sf_em@1": float, "doc_sf_em@5": float, "doc_sf_em@10": float, "doc_sf_em@20": float, "doc_sf_em@30": float}, total=False)


class KGPRecord(_KGPRecordMetrics, total=False):
    """Keys of a record. An example that raised keeps id, question, answers, ks, reader, variant and
    holds failed=True, error, traceback (its metrics count as 0)."""

    id: str
    scores: dict                 # {variant: {metric: value}}: the values the run summary averages (methods/summary.py; None = no gold)
    question: str
    answers: list[str]
    qtype: str
    supporting: list[str]        # the gold supporting facts / documents
    ks: list[int]                # the recall cut-offs of this run
    reader: bool                 # whether the reader answered
    variant: str                 # "traversal=<t>, graph=<g>"
    set_passages: int            # the question's document set (own documents + distractors)
    set: dict
    gold_units: list             # gold_kind, gold_fallback beside it
    graph: dict                  # graph stats (density, degree, ...); graph_density, graph_avg_degree
    seeds: list[dict]            # the TF-IDF seed passages with scores
    hops: list[dict]             # each traversal step: path, evidence written by the agent, candidates, chosen
    retrieved: list[str]         # the ranked passage ids
    n_agent_calls: int
    n_reseeds: int
    gold_first_ranks: list[int | None]
    reader_raw: str              # the reader's reply; answer (cleaned), reader_failed, reader_cached
    answer: str
    em: float                    # SQuAD exact match of the answer
    f1: float                    # SQuAD token F1
    containment: float           # a gold answer appears in the answer
    timings: dict[str, float]    # set_seconds, graph_seconds, traversal_seconds, reader_seconds
    tokens: dict[str, Any]       # agent_prompt, agent_completion, reader_prompt, reader_completion
    failed: bool
    error: str
    traceback: str
