"""One SimGRAG example's record, as `SimGRAG.run` writes it (one JSON line of `examples.jsonl`)."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["SimGRAGRecord", "STAGES"]

#: the stages a question can be lost at (a record's `failed_stage`)
STAGES = ("pattern", "retrieval", "generation")


#: the keys whose names hold "@" (metric names), which the class syntax cannot spell
_SimGRAGRecordMetrics = TypedDict("_SimGRAGRecordMetrics", {"hits@1": float}, total=False)


class SimGRAGRecord(_SimGRAGRecordMetrics, total=False):
    """Keys of a record (an example that raised holds only id, question, answers_gold, answerable,
    hops, task, failed=True, error, traceback, and 0 scores)."""

    id: str                      # the question's id
    scores: dict                 # {variant: {metric: value}}: the values the run summary averages (methods/summary.py; None = no gold)
    task: str                    # "qa" or "verify" (FactKG claims)
    question: str
    topic_entities: list[str]
    answers_gold: list[str]
    hops: int
    qtype: str
    answerable: bool | None      # every gold answer is reached by the gold chain in this KB
    pattern_source: str          # "llm", "oracle" or "copied"
    gold_pattern: dict | None    # the oracle pattern of the gold chain
    pattern_prompt: list | None  # the chat messages of the pattern call (None for oracle patterns)
    pattern_raw: str | None      # the LLM's reply
    pattern_phrases: list[str]
    pattern_triples: list[list[str]]
    pattern_ok: bool             # parsed and validated
    pattern_error: str | None
    pattern_warnings: list[str]
    pattern_demos: list[str]     # demos="nearest": ids of the training questions shown as shots (nearest last)
    pattern_demo_scores: list[float]  # their cosine similarity to the question, same order
    pattern_demo_types: list[str | None]  # their question types, same order
    demo_own_type: str | None    # how many of them have the question's own type: all | some | none (stages.demos.own_type_group)
    pattern_demo_tokens: int     # tokens of those shots' turns (the prompt's part no other question shares)
    pattern: dict | None         # the pattern used for retrieval
    pattern_demo_respelt: bool | None  # nearest demos: the respelling changed the question before the choice (None: no pool)
    candidates: dict | None      # entity / relation / type candidates per pattern node and edge
    subgraphs: list[dict]        # the top-k subgraphs with their GSD terms
    nodes_expanded: int
    timed_out: bool
    top1_answer: str | None      # the top-1 subgraph's answer node
    top1_hit: bool | None
    top1_relations: list[str] | None  # the KG relation of each fact of the top-1 subgraph, in pattern edge order
    top1_gold_relations: bool | None  # they are the gold pattern's relations (as a multiset; None: no gold pattern)
    retrieval_hit: bool          # the evidence holds a gold answer (verify: every claim entity)
    oracle_retrieval_hit: bool | None
    miss_class: str              # oracle patterns, an answerable miss: why (stages.oracle.MISS_CLASSES)
    evidence: list[str]          # "graph [i]: (h, r, t), ..." lines given to the answer prompt
    answer_prompt: list | None
    answer_demos: list[str]      # answer_demos="nearest": ids of the training questions shown as answer shots
    answer_raw: str | None
    answers: list[str]           # parsed answers (verify: ["True"] or ["False"])
    prediction: str | None
    samples: list[dict]          # samples > 1: every sampled pattern (seed, temperature, triples, gsd, answers, vote weight)
    sample_representative: int   # samples > 1: the sample whose pattern and evidence the record holds
    sample_votes: dict[str, float]  # samples > 1: each answer's total vote weight
    timings: dict[str, float]    # pattern_s, encode_ms, node_search_ms, enumerate_ms, answer_s, ...
    tokens: dict[str, Any]       # pattern_prompt, pattern_completion, answer_prompt, ..., *_cached
    containment: float           # lenient: a gold answer appears in the raw answer (hits@1: strict, the first answer equals a gold answer)
    failed: bool                 # a system failure (no usable pattern, no evidence, empty answer, raised)
    failure: str | None          # "pattern" | "retrieval" | "generation"
    failed_stage: str | None     # the stage blamed for a strict miss
    failed_stage_lenient: str | None
    error: str                   # only when the example raised
    traceback: str
