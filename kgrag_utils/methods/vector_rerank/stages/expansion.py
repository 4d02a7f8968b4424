"""Subgraph expansion from seed entities and seed relations through the sparse incidence matrix.

With A the entity x relation incidence (A[e, r] = 1 when e is the subject or object of r), the
published construction expands seed entities E0 to the relations of (A A^T)^(d-1) A and seed
relations R0 to those of (A^T A)^d. Both are the same breadth-first search: the relations reached
in d steps from the entity set E0 plus the entities of R0 (one step = entities -> their relations
-> those relations' entities). We run that search on sparse row slices of A and A^T, touching only
the new frontier at each step, so nothing of size |E| x |R| (or |E| x |E|) is ever formed; a test
checks the result against the matrix-power formula on small graphs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ....errors import ConfigError

__all__ = ["Expansion", "expand", "cap_by_similarity"]


@dataclass
class Expansion:
    """Relations reached (sorted by hop, then id) with the hop each was reached at (0 = seed relation)."""

    relation_ids: np.ndarray
    hops: np.ndarray
    entity_ids: np.ndarray
    degree: int

    def __len__(self) -> int:
        return int(self.relation_ids.size)

    def size_by_hop(self) -> dict[int, int]:
        values, counts = np.unique(self.hops, return_counts=True)
        return {int(v): int(c) for v, c in zip(values, counts)}


def _rows(matrix: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """Unique column ids of the given CSR rows (vectorised over the row slices)."""
    if rows.size == 0:
        return np.empty(0, dtype=np.int64)
    starts, ends = matrix.indptr[rows], matrix.indptr[rows + 1]
    lengths = ends - starts
    if lengths.sum() == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.unique(matrix.indices[np.arange(lengths.sum()) + offsets]).astype(np.int64)


def expand(incidence: sp.csr_matrix, incidence_t: sp.csr_matrix, seed_entities, seed_relations,
           degree: int) -> Expansion:
    """Relations within `degree` steps of the seeds (see the module docstring)."""
    if degree not in (0, 1, 2, 3):
        raise ConfigError(f"degree must be 0..3 (the method uses 1 or 2), got {degree!r}.")
    n_e, n_r = incidence.shape
    e0 = np.unique(np.asarray(list(seed_entities), dtype=np.int64))
    r0 = np.unique(np.asarray(list(seed_relations), dtype=np.int64))
    if (e0.size and (e0.min() < 0 or e0.max() >= n_e)) or (r0.size and (r0.min() < 0 or r0.max() >= n_r)):
        raise ConfigError("seed ids out of range: pass entity ids < |E| and relation ids < |R| of this index.")
    hop = np.full(n_r, -1, dtype=np.int16)
    hop[r0] = 0
    seen_e = np.zeros(n_e, dtype=bool)
    frontier = np.union1d(e0, _rows(incidence_t, r0)) if degree > 0 else np.empty(0, dtype=np.int64)
    seen_e[frontier] = True
    for step in range(1, degree + 1):
        rels = _rows(incidence, frontier)
        new = rels[hop[rels] < 0]
        hop[new] = step
        if step == degree or new.size == 0:
            break
        ents = _rows(incidence_t, new)
        frontier = ents[~seen_e[ents]]
        seen_e[frontier] = True
    reached = np.flatnonzero(hop >= 0)
    order = np.lexsort((reached, hop[reached]))
    reached = reached[order]
    return Expansion(relation_ids=reached, hops=hop[reached].astype(np.int64), entity_ids=np.flatnonzero(seen_e),
                     degree=degree)


def cap_by_similarity(rel_ids: np.ndarray, similarity: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """The `cap` relations most similar to the query, best first (ties broken by id): (ids, scores)."""
    rel_ids = np.asarray(rel_ids, dtype=np.int64)
    similarity = np.asarray(similarity, dtype=np.float32)
    if rel_ids.shape != similarity.shape:
        raise ConfigError("cap_by_similarity needs one similarity per relation id.")
    order = np.lexsort((rel_ids, -similarity))[: max(0, int(cap))]
    return rel_ids[order], similarity[order]
