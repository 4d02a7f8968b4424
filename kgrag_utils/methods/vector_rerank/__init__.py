"""Vector retrieval + LLM rerank ("Milvus-style" graph RAG): vector search and one LLM call, no graph database.

    from kgrag_utils.methods.vector_rerank import VectorRerank, VectorRerankConfig, summarize
    cfg = VectorRerankConfig(dataset="musique", degree=1)
    method = VectorRerank.prepare(cfg, cfg.load_dataset())   # the index; FactRerank on KG question datasets
    records = method.run(ds.items, recorder=rec)
    summarize(records)           # Recall@2/@5 per variant: naive, expand, rerank, rerank-padded

The folder has the rooms of every method folder (docs/ARCHITECTURE.md#methods): `config`, `method` (the class),
`record`, `summary`, `figures`, `published`, `prompts`, `ask`, `view` (the run explorer's), and `stages/` (the
algorithm's own modules, listed in `stages/__init__.py`).

The package exports what a notebook uses (the method, its config and record types, `summarize`, `scores`,
`figures`, `published`); everything else is imported from its module.
"""

from . import figures, published
from .config import VectorRerankConfig
from .stages.kgqa import FactRerank  # noqa: F401 - imported so that VectorRerank.prepare finds the KG-question subclass
from .method import VectorRerank
from .record import VectorRerankRecord
from .summary import scores, summarize

__all__ = ["VectorRerank", "VectorRerankConfig", "VectorRerankRecord", "summarize", "scores", "figures", "published"]
