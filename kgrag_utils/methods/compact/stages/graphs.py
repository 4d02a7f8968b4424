"""Where each question's KG comes from: one dataset-wide KG, or one subgraph per question.

MetaQA and PathQuestion answer every question from one KG (`Dataset.kg`). WebQSP and CWQ as
released by RoG have no global KG: each question carries its own Freebase subgraph
(`Dataset.triples.kg(qid)`, `Dataset.kg is None`). Every stage of the method asks a
`QuestionKGs` for the KG of the item at hand, so the same code serves both; per-question KGs
are built on demand and kept in a small LRU cache (derivation, the baseline and the checks of one
batch reuse them).

Relations that are functional (one tail per head) cannot be learned from one small subgraph, so
for per-question KGs they are counted over a sample of training subgraphs
(`functional_relation_names`) and passed to the consistency check by name.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Sequence

import numpy as np

from ....errors import ConfigError

__all__ = ["QuestionKGs", "functional_relation_names"]


class QuestionKGs:
    """The KG of each question: `kg_for(item)`; one shared KG or per-question subgraphs by qid."""

    def __init__(self, kg=None, graphs=None, cache_size: int = 64):
        if (kg is None) == (graphs is None):
            raise ConfigError("QuestionKGs needs exactly one of kg= (one KG) or graphs= (per-question subgraphs).")
        if graphs is not None and not hasattr(graphs, "kg"):
            raise ConfigError("per-question graphs must offer .kg(qid) (RoG's Dataset.triples).")
        self.kg = kg
        self.graphs = graphs
        self.cache_size = max(1, int(cache_size))
        self._cache: OrderedDict = OrderedDict()

    @classmethod
    def of(cls, dataset) -> "QuestionKGs":
        """The source of a KG-question dataset: its KG, else its per-question subgraphs."""
        if getattr(dataset, "kg", None) is not None:
            return cls(kg=dataset.kg)
        graphs = getattr(dataset, "triples", None)
        if graphs is not None and hasattr(graphs, "kg"):
            return cls(graphs=graphs)
        raise ConfigError(f"dataset {getattr(dataset, 'name', '?')!r} has neither a KG nor per-question subgraphs.")

    @property
    def per_question(self) -> bool:
        return self.graphs is not None

    def kg_for(self, item):
        """The KG to answer `item` from (the shared KG, or the question's own subgraph)."""
        if self.graphs is None:
            return self.kg
        qid = item.qid
        kg = self._cache.get(qid)
        if kg is not None:
            self._cache.move_to_end(qid)
            return kg
        if qid not in self.graphs:
            raise ConfigError(f"question {qid!r} has no subgraph in this dataset: pass items of the same split.")
        kg = self.graphs.kg(qid)
        self._cache[qid] = kg
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return kg

    def describe(self) -> dict:
        if self.graphs is None:
            return {"kind": "one KG", "entities": int(self.kg.num_entities), "facts": int(self.kg.num_edges)}
        return {"kind": "per-question subgraphs", "questions": len(self.graphs)}


def functional_relation_names(source: QuestionKGs, items: Sequence, min_share: float = 0.98, min_heads: int = 20,
                              max_items: int = 1000, seed: int = 0) -> list[str]:
    """Relations whose heads (>= min_share of them, over >= min_heads (question, head) pairs) have one tail.

    Counted per question subgraph and pooled over a seeded sample of `max_items` training items:
    a (question, head, relation) group is single when it has exactly one tail.
    """
    items = list(items)
    if len(items) > max_items:
        keep = np.sort(np.random.default_rng(seed).choice(len(items), size=max_items, replace=False))
        items = [items[i] for i in keep]
    single: dict[str, float] = {}
    total: dict[str, float] = {}
    for item in items:
        kg = source.kg_for(item)
        if kg.num_edges == 0:
            continue
        nrel = max(kg.num_relations, 1)
        uniq, counts = np.unique(kg.heads.astype(np.int64) * nrel + kg.rels.astype(np.int64), return_counts=True)
        rel_of = uniq % nrel
        s = np.bincount(rel_of, weights=(counts == 1).astype(float), minlength=nrel)
        t = np.bincount(rel_of, minlength=nrel)
        for r in np.flatnonzero(t):
            name = str(kg.relation_names[r])
            single[name] = single.get(name, 0.0) + float(s[r])
            total[name] = total.get(name, 0.0) + float(t[r])
    return sorted(r for r, n in total.items() if n >= min_heads and single[r] / n >= min_share)
