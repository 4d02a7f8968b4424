"""Vector retrieval + LLM rerank: the authors' published Recall@5, printed beside ours, never instead of ours."""

from __future__ import annotations

__all__ = ["PAPER", "PUBLISHED_SETUP", "OUR_METRICS", "rows"]

#: the paper's numbers (the name every method's published.py gives them): Recall@5 (%) published by the authors
#: (gpt-5-mini rerank, bge-large embeddings; the graph run is padded with naive results), dataset -> system -> value
PAPER = {
    "musique": {"naive": 55.6, "vector-graph-rag (padded)": 73.0, "HippoRAG 2": 74.7},
    "hotpotqa": {"naive": 90.8, "vector-graph-rag (padded)": 96.3, "HippoRAG 2": 96.3},
    "2wiki": {"naive": 73.7, "vector-graph-rag (padded)": 94.1, "HippoRAG 2": 90.4},
}

PUBLISHED_SETUP = "published (gpt-5-mini rerank, bge-large; graph run padded with naive)"

#: our metrics that sit beside the published ones
OUR_METRICS = ("recall@5",)


def rows() -> list[dict]:
    return [{"method": "vector_rerank", "system": system, "dataset": ds, "metric": "recall@5", "value": v / 100,
             "source": "published (gpt-5-mini rerank, bge-large embeddings)"}
            for ds, cells in PAPER.items() for system, v in cells.items()]
