"""SimGRAG retrieval over a KG built out of core (kg_disk.DiskKG): the memory-mapped incidence, an
entity index that need not hold the vectors (compressed_index.CompressedIndex, or any object with
`search(queries, k)`), and a function that returns the exact vectors of given entity ids.

Filtering asks the index for `rerank` times `entity_topk` entities per known node and re-scores them
exactly (Euclidean distance to the exact vectors), keeping the `entity_topk` nearest, as
GSDRetriever re-scores its FAISS candidates; relation distances and the enumeration are GSDRetriever's.
Nothing here needs entity names: a pattern node's vector is given with the pattern. Relation aliases (SimGRAG's
`relation_aliases`) come as more rows of `relation_vectors` with `relation_owners` naming the relation of each row
(`gsd_search.alias_rows` builds both), as GSDRetriever holds them.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ....errors import ConfigError
from .gsd_enumerate import Candidates, GSDConfig, Incidence, SearchResult, search_topk
from .gsd_search import l2_rows, relation_distances
from .pattern import Pattern

__all__ = ["ScaleRetriever"]


class ScaleRetriever:
    """Candidates and top-k subgraphs for patterns whose node and relation vectors are given."""

    def __init__(self, incidence: Incidence, index, entity_rows: Callable[[np.ndarray], np.ndarray],
                 relation_vectors: np.ndarray, rerank: int = 4, relation_owners: np.ndarray | None = None):
        self.incidence, self.index, self.entity_rows, self.rerank = incidence, index, entity_rows, int(rerank)
        self.relation_vectors64 = np.asarray(relation_vectors, dtype=np.float64)
        self.relation_owners = None if relation_owners is None else np.asarray(relation_owners, dtype=np.int64)
        if self.relation_owners is not None and self.relation_owners.shape[0] != self.relation_vectors64.shape[0]:
            raise ConfigError(f"relation_owners names {self.relation_owners.shape[0]} rows, relation_vectors has "
                              f"{self.relation_vectors64.shape[0]}: one owner per row (gsd_search.alias_rows).")

    def candidates(self, pattern: Pattern, config: GSDConfig, node_vectors: np.ndarray,
                   relation_vectors: np.ndarray) -> Candidates:
        """Index search + exact re-scoring for the known nodes (one batched call), relation distances."""
        t0 = time.perf_counter()
        known = pattern.known_nodes
        ids: list[np.ndarray | None] = [None] * len(pattern.nodes)
        dists: list[np.ndarray | None] = [None] * len(pattern.nodes)
        if known:
            _, found = self.index.search(np.asarray(node_vectors, dtype=np.float32), config.entity_topk * self.rerank)
            for row, v in enumerate(known):
                hit = np.unique(found[row][found[row] >= 0]).astype(np.int64)
                d = l2_rows(node_vectors[row:row + 1], self.entity_rows(hit))[0]
                order = np.lexsort((hit, d))[: config.entity_topk]  # nearest exactly, ties by id
                ids[v], dists[v] = hit[order], d[order]
        t1 = time.perf_counter()
        rel = relation_distances(relation_vectors, self.relation_vectors64, config.relation_topk, self.relation_owners)
        t2 = time.perf_counter()
        return Candidates(ids, dists, rel, {"node_search_ms": (t1 - t0) * 1e3, "relation_ms": (t2 - t1) * 1e3,
                                            "known_nodes": len(known)})

    def search(self, pattern: Pattern, config: GSDConfig, candidates: Candidates) -> SearchResult:
        t0 = time.perf_counter()
        result = search_topk(self.incidence, pattern, candidates, config)
        result.candidates = candidates
        result.timings = {**candidates.timings, "enumerate_ms": (time.perf_counter() - t0) * 1e3}
        return result
