"""KGP (Knowledge Graph Prompting, AAAI 2024): an LLM traverses a passage graph, writing the next evidence.

Per question: a document set (own documents + seeded distractors, split into passages) ->
a passage graph (TF-IDF keywords, KNN embeddings, shared entities, document nodes) -> a traversal
from TF-IDF seeds along reasoning paths, ranking each node's unvisited neighbours by similarity
to the evidence the LLM says is needed next -> a reader that answers in a few words.

The package exports what a notebook uses (the method, its config and record types, `summarize`, `scores`,
`figures`, `published`); everything else is imported from its module: the rooms every method folder has
(docs/ARCHITECTURE.md#methods), or `stages/` (the algorithm's own modules).
"""

from . import figures, published
from .stages import sweeps
from .config import KGPConfig
from .method import KGP
from .record import KGPRecord
from .summary import scores, summarize

__all__ = ["KGP", "KGPConfig", "KGPRecord", "summarize", "scores", "figures", "published", "sweeps"]
