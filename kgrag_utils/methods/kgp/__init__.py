"""KGP (Knowledge Graph Prompting, AAAI 2024): an LLM traverses a passage graph, writing the next evidence.

Per question: a document set (own documents + seeded distractors, split into passages) ->
a passage graph (TF-IDF keywords, KNN embeddings, shared entities, document nodes) -> a traversal
from TF-IDF seeds along reasoning paths, ranking each node's unvisited neighbours by similarity
to the evidence the LLM says is needed next -> a reader that answers in a few words.
"""

from .config import DEFAULT_KS, GRAPHS, TRAVERSALS, KGPConfig
from .docsets import DocumentSet, GoldUnits, PassageCorpus, gold_units, split_document, split_sentences
from .evaluation import coverage_metrics, metric_keys, retrieval_metrics
from .graphs import PassageGraph, build_graph, knn_graph, tfidf_graph, entity_graph
from .pipeline import KGP, Prepared
from .similarity import SetIndex, top_k
from .traversal import Evidence, TraversalResult, flat_retrieve, path_order, traverse

from . import figures, published
from .record import KGPRecord
from .summary import scores, summarize
from .sweeps import evaluate

__all__ = [
    "summarize", "scores", "KGPRecord", "figures", "published",
    "DEFAULT_KS", "GRAPHS", "TRAVERSALS", "KGPConfig", "DocumentSet", "GoldUnits", "PassageCorpus", "gold_units",
    "split_document", "split_sentences", "coverage_metrics", "metric_keys", "retrieval_metrics",
    "PassageGraph", "build_graph", "knn_graph", "tfidf_graph", "entity_graph", "KGP", "Prepared", "evaluate", "SetIndex",
    "top_k", "Evidence", "TraversalResult", "flat_retrieve", "path_order", "traverse",
]
