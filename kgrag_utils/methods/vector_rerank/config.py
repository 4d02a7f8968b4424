"""The knobs of vector retrieval + LLM rerank, in one place, with the published numbers they are compared to.

The notebook's `parameters` cell repeats these defaults as literals (a test checks they agree), the
benchmark script takes them as command-line defaults, and every run records `to_dict()`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...errors import ConfigError

__all__ = ["VARIANTS", "VARIANT_LABELS", "VectorRerankConfig", "PUBLISHED_RECALL5", "MEASURED_NAIVE_MUSIQUE",
           "parse_variants", "gold_key_for"]

#: the named variants, cheapest first (rerank-filled is ours: it isolates the LLM's reordering of the
#: graph candidates from the naive padding; small models often choose fewer relations than asked)
VARIANTS = ("naive", "expand", "rerank", "rerank-padded", "rerank-filled")

VARIANT_LABELS = {
    "naive": "naive: dense passage search (no graph, no LLM)",
    "expand": "expand: seeds + sparse expansion, relations ranked by query similarity (no LLM)",
    "rerank": "rerank: seeds + expansion + one LLM rerank call (the method)",
    "rerank-padded": "rerank-padded: rerank topped up with naive passages (as the published evaluation did)",
    "rerank-filled": "rerank-filled: the LLM's choices, then its other candidates by similarity (graph only, no naive)",
}

#: Recall@5 (%) published by the authors (gpt-5-mini rerank, bge-large embeddings; the graph run is
#: padded with naive results). Printed beside ours, never instead of ours.
PUBLISHED_RECALL5 = {
    "musique": {"naive": 55.6, "vector-graph-rag (padded)": 73.0, "HippoRAG 2": 74.7},
    "hotpotqa": {"naive": 90.8, "vector-graph-rag (padded)": 96.3, "HippoRAG 2": 96.3},
    "2wiki": {"naive": 73.7, "vector-graph-rag (padded)": 94.1, "HippoRAG 2": 90.4},
}

#: naive MiniLM dense retrieval over the 1,890-passage MuSiQue corpus, 100 questions
#: (docs/METHODS.md#vector-rerank-measurements; benchmarks/results/vector_rerank_musique.json)
MEASURED_NAIVE_MUSIQUE = {"recall@2": 47.2, "recall@5": 62.2}

_TITLE_GOLD = ("hotpotqa", "2wiki")


def gold_key_for(dataset: str) -> str:
    """How gold passages are matched: "title" for HotpotQA and 2Wiki, "pid" (title + text) otherwise."""
    return "title" if dataset in _TITLE_GOLD else "pid"


def parse_variants(variant: str | list | tuple) -> tuple[str, ...]:
    """ "all", one name, a comma list or a sequence -> a tuple of known variant names (in canonical order)."""
    if isinstance(variant, str):
        names = list(VARIANTS) if variant.strip() in ("all", "") else [v.strip() for v in variant.split(",") if v.strip()]
    else:
        names = [str(v) for v in variant]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown or not names:
        raise ConfigError(f"unknown variant(s) {unknown or names}: use 'all' or some of {list(VARIANTS)}.")
    return tuple(v for v in VARIANTS if v in names)


@dataclass(frozen=True)
class VectorRerankConfig:
    """Every setting that changes a run's output (recorded with the run).

    entity_topk: entities kept per query entity; entity_min_score: cosine below which a hit is
    not a seed; relation_topk: relations retrieved for the whole question; degree: expansion
    steps (1 or 2) through the entity-relation incidence; candidate_cap: relations kept (by query
    similarity) for the prompt and for the expand variant; select_n: relations the LLM is asked
    to choose; final_k: passages returned per variant; entity_extraction: "llm" (few-shot, falls
    back to lexical matching when it fails) or "lexical" (no LLM); the expand variant always uses
    lexical seeds so that it needs no LLM. answer_max_tokens: the answer call of KG question
    datasets (answers from the chosen facts; unused on passage datasets). pool_per_question: -1 indexes the whole corpus; n >= 0
    indexes only the gold passages of the evaluated questions plus each one's top-n dense passages
    (for corpora whose triples must come from a slow CPU OpenIE step; recorded and labelled).
    """

    dataset: str = "sample-passages"
    split: str = "test"
    limit: int = 8
    seed: int = 0
    vector_store: str = "faiss"
    milvus_uri: str = ""
    embedder: str = "minilm"
    llm_preset: str = "qwen2.5-coder-0.5b"
    llm_backend: str = ""
    entity_topk: int = 5
    entity_min_score: float = 0.8
    relation_topk: int = 10
    degree: int = 1
    candidate_cap: int = 40
    select_n: int = 5
    final_k: int = 5
    variant: str = "all"
    pool_per_question: int = -1
    entity_extraction: str = "llm"
    entity_max_tokens: int = 64
    rerank_max_tokens: int = 128
    answer_max_tokens: int = 48

    def __post_init__(self):
        for name in ("entity_topk", "relation_topk", "candidate_cap", "select_n", "final_k", "answer_max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive int, got {value!r}.")
        if self.degree not in (0, 1, 2, 3):
            raise ConfigError(f"degree must be 0, 1, 2 or 3 (the method uses 1 or 2), got {self.degree!r}.")
        if isinstance(self.pool_per_question, bool) or not isinstance(self.pool_per_question, int) or self.pool_per_question < -1:
            raise ConfigError(f"pool_per_question must be -1 (whole corpus) or >= 0, got {self.pool_per_question!r}.")
        if self.vector_store not in ("faiss", "milvus"):
            raise ConfigError(f"vector_store must be 'faiss' or 'milvus', got {self.vector_store!r}.")
        if self.entity_extraction not in ("llm", "lexical"):
            raise ConfigError(f"entity_extraction must be 'llm' or 'lexical', got {self.entity_extraction!r}.")
        if not -1.0 <= float(self.entity_min_score) <= 1.0:
            raise ConfigError(f"entity_min_score is a cosine in [-1, 1], got {self.entity_min_score!r}.")
        parse_variants(self.variant)

    @property
    def variants(self) -> tuple[str, ...]:
        return parse_variants(self.variant)

    @property
    def needs_llm(self) -> bool:
        return any(v.startswith("rerank") for v in self.variants)

    def replace(self, **changes) -> "VectorRerankConfig":
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise ConfigError(f"unknown setting(s) {unknown}: use some of {sorted(names)}.")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
