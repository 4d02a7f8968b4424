"""Data for KGP's two trade-off figures: graph density vs supporting-fact recall (the paper's
Figure 5) and branching factor vs recall at a fixed budget (Figure 7).

Each question's document set and index are built once and reused for every value of the swept
knob; only the graph (density sweep) or the traversal (branching sweep) changes. Besides the
traversal's recall@k / SF-EM@k, the density sweep measures the graph itself against the gold:
`sf_pair_recall` (share of pairs of supporting documents joined by at least one edge) and
`sf_neighbour_precision` (share of the supporting passages' neighbours that are supporting).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from ....datasets.items import PassageQuestion
from ....errors import ConfigError
from ...scoring import mean
from .docsets import GoldUnits, gold_units
from ....datasets.items import Dataset
from ....metrics import summarize as summarize_rows
from ..config import KGPConfig
from .evaluation import metric_keys, retrieval_metrics
from .graphs import PassageGraph, build_graph
from ..method import KGP
from ..summary import summarize
from .similarity import SetIndex
from .traversal import traverse

__all__ = ["SWEEP_KNOBS", "DEFAULT_SWEEP_VALUES", "DEFAULT_BRANCHING_VALUES", "graph_gold_stats", "density_sweep",
           "branching_sweep", "evaluate"]

#: the knob that sets each constructor's density
SWEEP_KNOBS = {"tfidf": "n_keywords", "knn": "knn_k", "entity": "entity_max_df"}
DEFAULT_SWEEP_VALUES = {
    "tfidf": (1, 2, 3, 5, 10, 20),
    "knn": (1, 2, 3, 5, 10, 20, 40),
    "entity": (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.3),
}
DEFAULT_BRANCHING_VALUES = (1, 2, 3, 4, 5, 6, 8, 10)


def graph_gold_stats(graph: PassageGraph, gold: GoldUnits) -> dict:
    """How well the graph alone connects the supporting documents (nan with fewer than two)."""
    covers = [c for c in gold.doc_cover if c.size]
    if len(covers) < 2:
        return {"sf_pair_recall": float("nan"), "sf_neighbour_precision": float("nan")}
    adj = graph.adj
    linked = total = 0
    for a in range(len(covers)):
        for b in range(a + 1, len(covers)):
            total += 1
            linked += int(adj[covers[a]][:, covers[b]].nnz > 0)
    gold_nodes = np.unique(np.concatenate(covers))
    nbr = adj[gold_nodes]
    n_nbr = nbr.nnz
    is_gold = np.zeros(graph.n, dtype=bool)
    is_gold[gold_nodes] = True
    hits = int(is_gold[nbr.indices].sum())
    return {"sf_pair_recall": linked / total, "sf_neighbour_precision": hits / n_nbr if n_nbr else 0.0}


def _mean(rows: Sequence[dict], key: str) -> float:
    """The protocol's mean of one key over rows (nan where no row has a finite number)."""
    return mean((r.get(key) for r in rows), empty=math.nan)


def density_sweep(kgp: KGP, questions: Iterable[PassageQuestion], constructor: str,
                  values: Sequence[float] | None = None, progress: bool = False) -> list[dict]:
    """One row per knob value: mean density / degree, graph-vs-gold stats and traversal metrics."""
    if constructor not in SWEEP_KNOBS:
        raise ConfigError(f"density sweeps cover {list(SWEEP_KNOBS)} (got {constructor!r}).")
    knob = SWEEP_KNOBS[constructor]
    values = list(values or DEFAULT_SWEEP_VALUES[constructor])
    base = kgp.config.replace(graph=constructor, whole_corpus=False)
    per_value: dict[float, list[dict]] = {v: [] for v in values}
    questions = list(questions)
    it = questions
    if progress:
        from ....progress import progress_bar

        it = progress_bar(questions, desc=f"density sweep {constructor}")
    agent = None
    for q in it:
        dset = kgp.corpus.question_set(q, base.set_passages, base.seed)
        index = SetIndex(dset.retrieval_texts(), encode=kgp._encode)
        gold = gold_units(q, dset)
        if base.uses_llm_traversal:
            agent = kgp.evidence_fn(dset)
        for v in values:
            cfg = base.replace(**{knob: v})
            graph = build_graph(dset, constructor, tfidf=index.matrix, embeddings=lambda: index.embeddings,
                                n_keywords=cfg.n_keywords, keyword_max_df=cfg.keyword_max_df,
                                keyword_titles=cfg.keyword_titles, knn_k=cfg.knn_k, entity_max_df=cfg.entity_max_df,
                                structural=cfg.structural)
            res = traverse(q.question, index, graph, cfg, agent) if agent else traverse(q.question, index, graph, cfg)
            row = {"id": q.qid, **graph.stats(), **graph_gold_stats(graph, gold),
                   **retrieval_metrics(res.ranked, gold, cfg.ks)}
            per_value[v].append(row)
    out = []
    for v in values:
        rows = per_value[v]
        summary = summarize_rows(rows, metric_keys(base.ks, reader=False))
        out.append({"constructor": constructor, "knob": knob, "value": v, "n": len(rows),
                    "density": _mean(rows, "density"), "avg_degree": _mean(rows, "avg_degree"),
                    "sf_pair_recall": _mean(rows, "sf_pair_recall"),
                    "sf_neighbour_precision": _mean(rows, "sf_neighbour_precision"),
                    **{k: summary[k] for k in summary if "@" in k}})
    return out


def branching_sweep(kgp: KGP, questions: Iterable[PassageQuestion], values: Sequence[int] | None = None,
                    progress: bool = False) -> list[dict]:
    """One row per branching factor at the config's fixed budget (seeds = budget // (b + 1))."""
    values = [int(v) for v in (values or DEFAULT_BRANCHING_VALUES)]
    questions = list(questions)
    per_value: dict[int, list[dict]] = {v: [] for v in values}
    it = questions
    if progress:
        from ....progress import progress_bar

        it = progress_bar(questions, desc="branching sweep")
    original = kgp.config
    try:
        for q in it:
            kgp.config = original
            prep = kgp.prepare_question(q)
            for v in values:
                kgp.config = original.replace(branching=v)
                res = kgp.retrieve(q, prep)
                per_value[v].append({"id": q.qid, "n_seeds": len(res.seeds), **retrieval_metrics(res.ranked, prep.gold, kgp.config.ks)})
    finally:
        kgp.config = original
    out = []
    for v in values:
        rows = per_value[v]
        summary = summarize_rows(rows, metric_keys(original.ks, reader=False))
        out.append({"branching": v, "n": len(rows), "n_seeds": _mean(rows, "n_seeds"), "graph": original.graph,
                    "traversal": original.traversal, **{k: summary[k] for k in summary if "@" in k}})
    return out


def evaluate(dataset: Dataset, config: KGPConfig, questions: Sequence[PassageQuestion] | None = None, llm=None,
             embedder=None, progress: bool = False) -> tuple[list[dict], dict]:
    """Run one configuration over questions (default: all); returns (records, summary over all of them)."""
    kgp = KGP(config, dataset, llm=llm, embedder=embedder)
    questions = list(dataset.items if questions is None else questions)
    rows = kgp.run(questions, progress=progress)
    return rows, summarize(rows)
