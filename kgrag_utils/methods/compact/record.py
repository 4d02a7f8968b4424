"""One compact-relation-selection example's record, as `Compact.run` writes it."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["CompactRecord"]


#: the keys whose names hold "@" (metric names), which the class syntax cannot spell
_CompactRecordMetrics = TypedDict("_CompactRecordMetrics", {"hits@1_compact": float, "hits@1_compact_gated": float, "hits@1_topk": float, "hits@1_topk_gated": float, "derived_hits@1": float}, total=False)


class CompactRecord(_CompactRecordMetrics, total=False):
    """Keys of a record; `<ctx>` is "compact" or "topk" (the contexts the LLM read). Kinship records
    (stories) carry query, target, chain_length, path_relations instead of the KG-question keys. An
    example that raised holds only id, kind, its question / target, failed=True, error, traceback."""

    id: str
    scores: dict                 # {variant: {metric: value}}: the values the run summary averages (methods/summary.py; None = no gold)
    failed: bool                 # the reader gave no usable answer for a context it read, or the example raised
    kind: str                    # "kgqa" or "kinship"
    question: str
    topic_entities: list[str]
    answers: list[str]
    answerable: bool | None
    hops: int
    knowledge: str               # "lexicon", "knn" or "rules"
    proposals: list[dict]        # the chain proposals tried, with their source and derivability
    chain: str | None            # the chosen relation chain; gold_chain, chain_correct beside it
    derivable: bool              # the chain reaches an answer from the topic in the KG
    derived_answers: list[str]
    n_derived: int
    compact_facts: list[list[str]]   # the compact context
    n_facts: int
    consistency: dict            # which checks applied and their conflicts
    consistent: bool
    gate: bool                   # the gate lets the derived answer replace the LLM's
    topk_facts: list[list[str]]  # the baseline context: top_k facts by similarity
    topk_n_facts: int
    topk_has_gold: bool
    prompt_compact: str          # prompt_<ctx>, llm_<ctx> (raw reply), answer_<ctx> (parsed)
    llm_compact: str
    answer_compact: Any
    prompt_tokens_compact: int   # prompt_tokens_<ctx>, completion_tokens_<ctx>, cached_<ctx>, seconds_<ctx>
    containment_compact: float   # lenient (containment_topk too); "hits@1_<ctx>" strict, "hits@1_<ctx>_gated" with the gate
    failed_compact: bool         # "failed_<ctx>": the reply named no answer
    seconds_derive: float
    error: str
    traceback: str
