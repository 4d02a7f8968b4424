"""Vector retrieval + LLM rerank ("Milvus-style" graph RAG): vector search and one LLM call, no graph database.

    from kgrag_utils.methods.vector_rerank import GraphIndex, VectorRerank, VectorRerankConfig
    cfg = VectorRerankConfig(dataset="musique", degree=1)
    index = GraphIndex.build(ds.corpus, ds.triples, load_embedder(cfg.embedder), backend=cfg.vector_store)
    records = VectorRerank(index, cfg, llm).run(ds.items, recorder=rec)
    summarize(records)           # Recall@2/@5 per variant: naive, expand, rerank, rerank-padded

Modules: `config` (the knobs, variants, published numbers), `graph_index` (entity / relation /
passage collections, relation -> passages, sparse incidence), `expansion` (degree-d expansion and
the similarity cap), `query_entities` (LLM parse + lexical fallback), `prompts`, `rerank` (robust
id mapping), `openie` (triples for corpora without them, cached and resumable), `corpus`
(released triples or OpenIE, optional pool, `build_index`), `pipeline` (per-question records),
`summary` (the summary hooks), `kgqa` (KG question datasets: the KG's facts are the unit, answers from the chosen
facts, Hits@1), `figures` (tables and figure data for the notebook).
"""

from .config import (KGQA_VARIANT_LABELS, KGQA_VARIANTS, MEASURED_NAIVE_MUSIQUE, PUBLISHED_RECALL5, RECALL_KS,
                     VARIANT_LABELS, VARIANTS, VectorRerankConfig, gold_key_for, parse_variants)
from .corpus import build_index, dataset_triples, pool_corpus
from .expansion import Expansion, cap_by_similarity, expand
from .graph_index import GraphIndex, entity_key, passage_text, relation_sentence
from .kgqa import FactRerank, fact_hits, kgqa_variants
from .openie import OpenIEResult, extract_openie, openie_store_path
from .pipeline import VectorRerank, gold_of
from .prompts import (ANSWER_PROMPT_VERSION, PROMPT_VERSION, answer_prompt, entity_prompt, format_candidates,
                      openie_prompt, rerank_prompt)
from .query_entities import QueryEntities, lexical_entities, marked_entities, parse_entity_answer
from .figures import expansion_sizes, kgqa_results_table, recall_curve_frame, results_table, worked_example_edges
from .rerank import RerankChoice, map_rerank_answer

from . import figures, published
from .record import VectorRerankRecord
from .summary import scores, summarize

__all__ = [
    "summarize", "scores", "VectorRerankRecord", "figures", "published",
    "VectorRerankConfig", "VARIANTS", "VARIANT_LABELS", "PUBLISHED_RECALL5", "MEASURED_NAIVE_MUSIQUE", "gold_key_for",
    "parse_variants", "GraphIndex", "entity_key", "relation_sentence", "passage_text", "Expansion", "expand",
    "cap_by_similarity", "QueryEntities", "lexical_entities", "parse_entity_answer", "RerankChoice", "map_rerank_answer",
    "entity_prompt", "rerank_prompt", "openie_prompt", "format_candidates", "PROMPT_VERSION", "OpenIEResult",
    "extract_openie", "openie_store_path", "pool_corpus", "dataset_triples", "VectorRerank",
    "gold_of", "RECALL_KS", "build_index", "results_table", "recall_curve_frame", "expansion_sizes",
    "worked_example_edges", "FactRerank", "KGQA_VARIANTS", "KGQA_VARIANT_LABELS", "kgqa_variants",
    "fact_hits", "kgqa_results_table", "answer_prompt", "ANSWER_PROMPT_VERSION", "marked_entities",
]
