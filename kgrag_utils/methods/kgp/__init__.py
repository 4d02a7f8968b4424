"""KGP (Knowledge Graph Prompting, AAAI 2024): an LLM traverses a passage graph, writing the next evidence.

Per question: a document set (own documents + seeded distractors, split into passages) ->
a passage graph (TF-IDF keywords, KNN embeddings, shared entities, document nodes) -> a traversal
from TF-IDF seeds along reasoning paths, ranking each node's unvisited neighbours by similarity
to the evidence the LLM says is needed next -> a reader that answers in a few words.

The package exports what a notebook uses (the method, its config and record types, `summarize`, `scores`,
`figures`, `published`); everything else is imported from its module.
"""

from . import figures, published, sweeps
from .config import KGPConfig
from .pipeline import KGP
from .record import KGPRecord
from .summary import scores, summarize

__all__ = ["KGP", "KGPConfig", "KGPRecord", "summarize", "scores", "figures", "published", "sweeps"]
