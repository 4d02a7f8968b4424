"""Which passages and triples an index is built from: the released triples, or OpenIE, optionally on a pool.

OpenIE with a CPU LLM is slow (seconds per passage), so for large corpora without triples the
index can be restricted to a *pool*: the gold passages of the evaluated questions plus each
question's top-n naive (dense) passages, the way these benchmark corpora were themselves built
(gold + retrieved distractors). Every variant is then evaluated on the same pool, and the pool is
recorded with the results; it makes retrieval easier than on the full corpus and is labelled so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ....errors import ConfigError
from .graph_index import passage_text

if TYPE_CHECKING:  # pragma: no cover
    from ....datasets.items import Dataset, Passage
    from ....embeddings import Embedder
    from ....llm import LLM

__all__ = ["pool_corpus", "dataset_triples", "build_index"]


def pool_corpus(corpus: Sequence["Passage"], questions: Sequence, embedder: "Embedder", per_question: int,
                gold_key: str = "pid") -> tuple[list["Passage"], dict]:
    """Gold passages of `questions` plus each question's top `per_question` dense passages (corpus order kept)."""
    if per_question < 0:
        raise ConfigError(f"per_question must be >= 0, got {per_question}.")
    vecs = embedder.encode([passage_text(p.title, p.text) for p in corpus])
    qv = embedder.encode([q.question for q in questions])
    keep = np.zeros(len(corpus), dtype=bool)
    if per_question:
        top = np.argsort(-(qv @ vecs.T), axis=1, kind="stable")[:, :per_question]
        keep[top.ravel()] = True
    by_key: dict[str, list[int]] = {}
    for i, p in enumerate(corpus):
        by_key.setdefault(p.title if gold_key == "title" else p.pid, []).append(i)
    missing = 0
    for q in questions:
        for g in (q.supporting_titles if gold_key == "title" else q.supporting):
            rows = by_key.get(g)
            if rows:
                keep[rows] = True
            else:
                missing += 1
    pool = [p for p, k in zip(corpus, keep) if k]
    info = {"pool": True, "pool_rule": f"gold passages + top-{per_question} dense passages per question",
            "pool_passages": len(pool), "full_corpus_passages": len(corpus), "pool_questions": len(questions),
            "gold_not_in_corpus": missing}
    return pool, info


def dataset_triples(dataset: "Dataset", corpus: Sequence["Passage"], llm: "LLM | None" = None, tag: str | None = None,
                    batch_size: int = 4, progress: bool = True) -> tuple[dict, dict]:
    """Triples for `corpus`: the dataset's own (released OpenIE) when it has them, else OpenIE with `llm`."""
    if dataset.triples is not None:
        wanted = {p.pid for p in corpus}
        triples = {pid: rows for pid, rows in dataset.triples.items() if pid in wanted}
        return triples, {"triples_source": "released", "openie_file": dataset.info.get("openie_file")}
    if llm is None:
        raise ConfigError(f"dataset {dataset.name!r} has no released triples: pass an LLM for the OpenIE step (or use a dataset with released OpenIE triples).")
    from .openie import extract_openie

    result = extract_openie(corpus, llm, tag=tag or dataset.name, batch_size=batch_size, progress=progress)
    return result.triples, {"triples_source": "openie", "openie_model": llm.model_id,
                            "openie_backend": llm.backend_name, **result.stats}


def build_index(config, dataset: "Dataset", embedder: "Embedder", llm: "LLM | None" = None, progress: bool = True,
                openie_batch: int = 4):
    """The GraphIndex a run uses: whole corpus or pool (config.pool_per_question), released triples or OpenIE.

    Returns (index, info) where info says which corpus and which triples were used. A naive-only
    run needs no triples (and no LLM). A KG question dataset (kind "kgqa") gives the index of its KG's
    facts (`GraphIndex.from_kg`).
    """
    from .graph_index import GraphIndex

    if getattr(dataset, "kind", None) == "kgqa":  # the KG's facts are the unit of retrieval; no passages, no OpenIE
        if dataset.kg is None:
            raise ConfigError(f"dataset {dataset.name!r} has no KG: load a KG question dataset (kind 'kgqa').")
        index = GraphIndex.from_kg(dataset.kg)
        index.attach_vectors(embedder, backend=config.vector_store, milvus_uri=config.milvus_uri or None, progress=progress)
        return index, {"pool": False, "triples_source": "the dataset's KG"}
    corpus, info = list(dataset.corpus or []), {"pool": False}
    if config.pool_per_question >= 0:
        corpus, info = pool_corpus(corpus, dataset.items, embedder, config.pool_per_question,
                                   gold_key=dataset.traits.gold_unit)
    if any(v != "naive" for v in config.variants_for("passages")):
        # the OpenIE store is keyed by passage id, so pools of one dataset share it
        triples, triple_info = dataset_triples(dataset, corpus, llm, tag=dataset.name, batch_size=openie_batch,
                                               progress=progress)
    else:
        triples, triple_info = {}, {"triples_source": "not needed (naive only)"}
    index = GraphIndex.build(corpus, triples, embedder, backend=config.vector_store, milvus_uri=config.milvus_uri or None,
                             progress=progress)
    return index, {**info, **triple_info}
