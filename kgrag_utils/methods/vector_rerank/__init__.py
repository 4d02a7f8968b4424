"""Vector retrieval + LLM rerank ("Milvus-style" graph RAG): vector search and one LLM call, no graph database.

    from kgrag_utils.methods.vector_rerank import VectorRerank, VectorRerankConfig, summarize
    cfg = VectorRerankConfig(dataset="musique", degree=1)
    method = VectorRerank.prepare(cfg, cfg.load_dataset())   # the index; FactRerank on KG question datasets
    records = method.run(ds.items, recorder=rec)
    summarize(records)           # Recall@2/@5 per variant: naive, expand, rerank, rerank-padded

The package exports what a notebook uses (the method, its config and record types, `summarize`, `scores`,
`figures`, `published`); everything else is imported from its module: the rooms every method folder has
(docs/ARCHITECTURE.md#methods), or `stages/` (the algorithm's own modules).
"""

from . import figures, published
from .config import VectorRerankConfig
from .stages.kgqa import FactRerank  # noqa: F401 - imported so that VectorRerank.prepare finds the KG-question subclass
from .method import VectorRerank
from .record import VectorRerankRecord
from .summary import scores, summarize

__all__ = ["VectorRerank", "VectorRerankConfig", "VectorRerankRecord", "summarize", "scores", "figures", "published"]
