"""Vector retrieval + LLM rerank ("Milvus-style" graph RAG): vector search and one LLM call, no graph database.

    from kgrag_utils.methods.vector_rerank import VectorRerank, VectorRerankConfig, summarize
    cfg = VectorRerankConfig(dataset="musique", degree=1)
    method = VectorRerank.prepare(cfg, cfg.load_dataset())   # the index; FactRerank on KG question datasets
    records = method.run(ds.items, recorder=rec)
    summarize(records)           # Recall@2/@5 per variant: naive, expand, rerank, rerank-padded

Modules: `config` (the knobs, variants, published numbers), `graph_index` (entity / relation /
passage collections, relation -> passages, sparse incidence), `expansion` (degree-d expansion and
the similarity cap), `query_entities` (LLM parse + lexical fallback), `prompts`, `rerank` (robust
id mapping), `openie` (triples for corpora without them, cached and resumable), `corpus`
(released triples or OpenIE, optional pool, `build_index`), `pipeline` (per-question records),
`summary` (the summary hooks), `kgqa` (KG question datasets: the KG's facts are the unit, answers from the chosen
facts, Hits@1), `figures` (tables and figure data for the notebook).

The package exports what a notebook uses (the method, its config and record types, `summarize`, `scores`,
`figures`, `published`); everything else is imported from its module.
"""

from . import figures, published
from .config import VectorRerankConfig
from .kgqa import FactRerank  # noqa: F401 - imported so that VectorRerank.prepare finds the KG-question subclass
from .pipeline import VectorRerank
from .record import VectorRerankRecord
from .summary import scores, summarize

__all__ = ["VectorRerank", "VectorRerankConfig", "VectorRerankRecord", "summarize", "scores", "figures", "published"]
