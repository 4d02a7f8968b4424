"""Enumeration of the top-k subgraphs by GSD: the data it works on and the search itself.

`search_topk` runs SimGRAG's filtering - ordering - enumerating scheme (the GSD and the rules are
described in gsd_search.py, which builds the inputs): it checks the candidates, orders each pattern
component from its root (`_search_order`), computes the admissible bound of the remaining steps,
and hands the depth-first enumeration to the compiled loop in gsd_kernel.py, whose top-k arrays
become `Subgraph`s here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ....errors import ConfigError
from . import gsd_kernel
from .pattern import Pattern

if TYPE_CHECKING:  # pragma: no cover
    from ....kg import KG

__all__ = ["GSDConfig", "Incidence", "Candidates", "Subgraph", "SearchResult", "search_topk"]

_DENSE_SCAN = 512  # above this many facts around an entity, select relations by binary search
_F64, _I64, _INF = np.dtype(np.float64), np.dtype(np.int64), float("inf")
_ERR_NO_ANCHOR, _META_HEAD = gsd_kernel.ERR_NO_ANCHOR, gsd_kernel.META_HEAD


@dataclass(frozen=True)
class GSDConfig:
    """Search parameters (reference values: n = m = 16, k = 3)."""

    top_k: int = 3
    entity_topk: int = 16
    relation_topk: int = 16
    injective: bool = False  # True: no KG entity or fact serves two pattern nodes / edges (no walks)
    direction: str = "any"  # "any": a pattern edge matches a fact either way; "same": only its own way
    distinct: bool = True  # mappings that use the same facts count once
    time_limit_s: float | None = 2.0  # CPU seconds of the searching thread (not wall time: load-independent)
    type_topk: int = 16  # entity types per UNKNOWN node of an unanchored component (reference: 16)

    def __post_init__(self):
        for name in ("top_k", "entity_topk", "relation_topk", "type_topk"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigError(f"{name} must be a positive integer, got {v!r}.")
        if self.direction not in ("any", "same"):
            raise ConfigError(f"direction must be 'any' or 'same', got {self.direction!r}.")
        if self.time_limit_s is not None and self.time_limit_s <= 0:
            raise ConfigError(f"time_limit_s must be > 0 or None, got {self.time_limit_s!r}.")


class Incidence:
    """Every fact around every entity, in both directions, grouped by entity then relation.

    Entry i of entity x's slice [indptr[x], indptr[x+1]) is a fact with neighbour `nbr[i]`,
    relation `rel[i]`, fact id `eid[i]` and `out[i]` True when x is the fact's head. A self-loop
    appears once (as outgoing). Built from the KG's public id arrays with one sort.
    """

    def __init__(self, kg: "KG"):
        heads = np.asarray(kg.heads, dtype=np.int64)
        tails = np.asarray(kg.tails, dtype=np.int64)
        rels = np.asarray(kg.rels, dtype=np.int64)
        n_e, n_r, n = kg.num_entities, max(kg.num_relations, 1), kg.num_edges
        keep_in = np.flatnonzero(heads != tails)
        node = np.concatenate([heads, tails[keep_in]])
        order = np.argsort(node * n_r + np.concatenate([rels, rels[keep_in]]), kind="stable")
        id_dtype = np.int32 if max(n_e, n_r, n) < 2**31 - 1 else np.int64
        self.nbr = np.concatenate([tails, heads[keep_in]])[order].astype(id_dtype)
        self.rel = np.concatenate([rels, rels[keep_in]])[order].astype(id_dtype)
        self.eid = np.concatenate([np.arange(n, dtype=np.int64), keep_in])[order].astype(id_dtype)
        self.out = np.concatenate([np.ones(n, dtype=bool), np.zeros(keep_in.size, dtype=bool)])[order]
        counts = np.bincount(node, minlength=n_e)
        self.indptr = np.zeros(n_e + 1, dtype=np.int64)
        np.cumsum(counts, out=self.indptr[1:])
        self.num_relations = kg.num_relations
        self._max_degree = None
        self._pool, self._out = {}, {}

    @classmethod
    def from_arrays(cls, indptr, nbr, rel, eid, out, num_relations: int) -> "Incidence":
        """An incidence over given arrays (e.g. memory-mapped ones that `kg_disk.build_incidence` wrote),
        laid out as the constructor lays them out."""
        self = cls.__new__(cls)
        self.indptr, self.nbr, self.rel, self.eid, self.out = indptr, nbr, rel, eid, out
        self.num_relations = int(num_relations)
        self._max_degree = None
        self._pool, self._out = {}, {}
        return self

    @property
    def nbytes(self) -> int:
        return int(self.nbr.nbytes + self.rel.nbytes + self.eid.nbytes + self.out.nbytes + self.indptr.nbytes)

    @property
    def arrays(self) -> tuple:
        """(indptr, nbr, rel, eid, out), as the compiled search takes them."""
        return self.indptr, self.nbr, self.rel, self.eid, self.out

    @property
    def max_degree(self) -> int:
        """The most facts around one entity (the search's child pool is sized from it)."""
        if self._max_degree is None:
            self._max_degree = int(np.diff(self.indptr).max()) if self.indptr.size > 1 else 0
        return self._max_degree

    def buffers(self, n_v: int, n_e: int, top_k: int) -> tuple:
        """The compiled search's arrays for a pattern of n_v nodes and n_e edges: (the incidence's arrays, the
        output rows out_f and out_i, `meta`, the child pool pool_f and pool_i (room for n_e * max degree
        children)); allocated once per thread and shape and reused, since fresh ones per call (page faults,
        allocator work) cost a small pattern's search more than the search itself. One set per thread: a
        thread copies its results out after the compiled call returns, and another thread's search must not
        overwrite them in between. The whole tuple is kept per (thread, shape), so a search's set-up is one
        dictionary lookup; a thread's pool only grows, and growing it drops that thread's tuples."""
        thread = threading.get_ident()
        got = self._out.get((thread, n_v, n_e, top_k))
        if got is not None:
            return got
        rows = max(1, n_e * self.max_degree)
        pool = self._pool.get(thread)
        if pool is None or pool[0].size < gsd_kernel.POOL_F * rows:
            pool = self._pool[thread] = (np.empty(gsd_kernel.POOL_F * rows),
                                         np.empty(gsd_kernel.POOL_I * rows, dtype=np.int64))
            for key in [key for key in self._out if key[0] == thread]:  # they hold the smaller pool
                del self._out[key]
        got = self._out[(thread, n_v, n_e, top_k)] = (
            self.arrays, np.empty((n_v * top_k, 1 + n_v + n_e)),
            np.empty((n_v * top_k, 1 + n_v + 2 * n_e), dtype=np.int64),
            np.zeros(gsd_kernel.META_HEAD + 5 * n_v + 4 * n_e, dtype=np.int64), *pool)
        return got

    def around(self, x: int, allowed_mask: np.ndarray, allowed_sorted: np.ndarray) -> np.ndarray:
        """Positions of the facts around entity x whose relation is allowed."""
        s, e = int(self.indptr[x]), int(self.indptr[x + 1])
        if e - s <= _DENSE_SCAN:
            return s + np.flatnonzero(allowed_mask[self.rel[s:e]])
        rel = self.rel[s:e]  # sorted within the entity's slice: pick each allowed relation's run
        lo = np.searchsorted(rel, allowed_sorted, "left")
        hi = np.searchsorted(rel, allowed_sorted, "right")
        lengths = hi - lo
        total = int(lengths.sum())
        if total == 0:
            return np.empty(0, dtype=np.int64)
        nz = lengths > 0
        lo, lengths = lo[nz], lengths[nz]
        offsets = np.cumsum(lengths) - lengths
        return s + np.arange(total, dtype=np.int64) + np.repeat(lo - offsets, lengths)


@dataclass
class Candidates:
    """Filtering output: entity candidates per known node and relation distances per pattern edge.

    node_ids[v] / node_dist[v]: KG entity ids and distances for known node v, nearest first
    (None for unknown nodes, except those given type candidates: entities of their nearest types,
    by id, distance 0; `typed[v]` names those types). rel_dist: (pattern edges x KG relations)
    distances, inf outside each edge's top-m relations.
    """

    node_ids: list[np.ndarray | None]
    node_dist: list[np.ndarray | None]
    rel_dist: np.ndarray
    timings: dict = field(default_factory=dict)
    typed: dict[int, list[str]] = field(default_factory=dict)

    @classmethod
    def from_distances(cls, pattern: Pattern, node_dist_full: dict[int, np.ndarray], rel_dist_full: np.ndarray,
                       entity_topk: int, relation_topk: int) -> "Candidates":
        """Keep the top-n entities per known node and top-m relations per edge from full distance arrays."""
        ids: list[np.ndarray | None] = [None] * len(pattern.nodes)
        dists: list[np.ndarray | None] = [None] * len(pattern.nodes)
        for v, d in node_dist_full.items():
            ids[v], dists[v] = _smallest(np.asarray(d, dtype=np.float64), entity_topk)
        rel = np.full(rel_dist_full.shape, np.inf)
        for j in range(rel.shape[0]):
            keep, vals = _smallest(np.asarray(rel_dist_full[j], dtype=np.float64), relation_topk)
            rel[j, keep] = vals
        return cls(ids, dists, rel)

    def relation_candidates(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(KG relation ids, distances) allowed for pattern edge j, nearest first."""
        row = self.rel_dist[j]
        ids = np.flatnonzero(np.isfinite(row))
        order = np.argsort(row[ids], kind="stable")
        return ids[order], row[ids[order]]


def _smallest(d: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    k = min(int(k), d.size)
    if k <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0)
    part = np.argpartition(d, k - 1)[:k] if k < d.size else np.arange(d.size)
    order = part[np.lexsort((part, d[part]))]  # by distance, ties by id
    return order.astype(np.int64), d[order]


@dataclass(slots=True)
class Subgraph:
    """One match: the pattern's nodes and edges mapped into the KG, with its GSD and terms."""

    gsd: float
    component: int
    nodes: dict[int, int]  # pattern node -> KG entity id
    edges: dict[int, int]  # pattern edge -> KG fact id
    node_terms: dict[int, float]  # known pattern node -> ||z_v - z_f(v)||
    edge_terms: dict[int, float]  # pattern edge -> ||z_r - z_f(r)||
    reversed: dict[int, bool]  # pattern edge -> True when the fact runs the other way
    injective: bool

    @property
    def edge_ids(self) -> list[int]:
        return [self.edges[j] for j in sorted(self.edges)]

    def triples(self, kg: "KG") -> list[tuple[str, str, str]]:
        """The matched facts as (head, relation, tail) names in the KG's own direction."""
        return kg.triples(self.edge_ids)

    def to_dict(self, kg: "KG", pattern: Pattern | None = None) -> dict:
        label = (lambda v: pattern.nodes[v].label) if pattern is not None else str
        return {
            "gsd": round(float(self.gsd), 6),
            "component": self.component,
            "triples": [list(t) for t in self.triples(kg)],
            "nodes": {label(v): str(kg.entity_names[x]) for v, x in sorted(self.nodes.items())},
            "node_terms": {label(v): round(float(c), 6) for v, c in sorted(self.node_terms.items())},
            "edge_terms": [round(float(self.edge_terms[j]), 6) for j in sorted(self.edge_terms)],
            "reversed": [bool(self.reversed[j]) for j in sorted(self.reversed)],
            "injective": bool(self.injective),
        }


@dataclass
class SearchResult:
    """Top-k subgraphs per component (components in pattern order) and what the search did."""

    components: list[list[Subgraph]]
    nodes_expanded: int = 0
    timed_out: bool = False
    dfs_ms: float = 0.0  # the compiled depth-first enumeration alone (no planning, set-up or result objects)
    timings: dict = field(default_factory=dict)
    orders: list[list[tuple[int, int, int, bool]]] = field(default_factory=list)
    candidates: Candidates | None = None

    @property
    def subgraphs(self) -> list[Subgraph]:
        """All components' subgraphs: the i-th best of each component, then the (i+1)-th, ..."""
        out = []
        for i in range(max((len(c) for c in self.components), default=0)):
            out.extend(c[i] for c in self.components if i < len(c))
        return out

    @property
    def best(self) -> Subgraph | None:
        return self.components[0][0] if self.components and self.components[0] else None

    def evidence_entities(self) -> set[int]:
        return {x for sg in self.subgraphs for x in sg.nodes.values()}


# ----------------------------------------------------------------------------- the search


#: search_pattern's `pat` arrays by pattern shape, options and candidate counts (see _kernel_inputs); emptied at the cap
_PATS: dict[tuple, np.ndarray] = {}
_CACHE_CAP = 4096


def _kernel_inputs(pattern: Pattern, candidates: Candidates, config: GSDConfig):
    """The pattern as search_pattern's `pat` array (sizes, options, edge ends, flags, candidate offsets),
    the candidates of every known (or typed) node concatenated, and which nodes have candidates (a tuple).

    `pat` is a function of the key below alone, so one array per key is kept and reused: the kernel only
    reads it, and a search then makes no numpy array out of a Python list (which costs a call on a machine
    whose caches other work has just emptied as much as the rest of the set-up)."""
    nodes, edges = pattern.nodes, pattern.edges
    node_ids, node_dist = candidates.node_ids, candidates.node_dist
    n_ids = len(node_ids)
    known = tuple([node.known for node in nodes])
    has = tuple([bool(k or (v < n_ids and node_ids[v] is not None)) for v, k in enumerate(known)])  # known, or typed
    ptr, ids, dist = [0], [], []
    total = 0
    for v, h in enumerate(has):
        if h:
            if node_ids[v] is None or node_dist[v] is None:
                raise ConfigError(f"no entity candidates for known pattern node {nodes[v].label!r}.")
            ids.append(node_ids[v])
            dist.append(node_dist[v])
            total += len(node_ids[v])
        ptr.append(total)
    key = (config.top_k, config.injective, config.direction, config.distinct, known, has, tuple(ptr),
           tuple([e.head for e in edges]), tuple([e.tail for e in edges]))
    pat = _PATS.get(key)
    if pat is None:
        pat = np.array([len(nodes), len(edges), config.top_k, config.injective, config.direction == "same",
                        config.distinct, _DENSE_SCAN, *key[7], *key[8], *known, *has, *ptr], dtype=np.int64)
        if len(_PATS) >= _CACHE_CAP:
            _PATS.clear()
        _PATS[key] = pat
    if len(ids) == 1:  # (the retrievers' arrays are int64 and float64 already: no numpy call then)
        i, d = ids[0], dist[0]
        if type(i) is not np.ndarray or i.dtype is not _I64:
            i = np.asarray(i, dtype=np.int64)
        if type(d) is not np.ndarray or d.dtype is not _F64:
            d = np.asarray(d, dtype=np.float64)
        return pat, i, d, has
    if not ids:
        return pat, np.empty(0, dtype=np.int64), np.empty(0), has
    return (pat, np.concatenate(ids).astype(np.int64, copy=False),
            np.concatenate(dist).astype(np.float64, copy=False), has)


def _row_builder(nodes: list[int], edges: list[int], terms: list[int], n_v: int, n_e: int):
    """A function (float row, int row, component) -> Subgraph for rows laid out as search_pattern writes
    them (out_f: GSD, node terms, edge terms; out_i: tie, entities, facts, reversed flags): the positions of
    every field are worked out here, once per plan, so a row costs only its lookups."""
    nodes, edges, terms = [int(v) for v in nodes], [int(j) for j in edges], [int(v) for v in terms]
    node_at = [(v, 1 + v) for v in nodes]
    fact_at = [(j, 1 + n_v + j) for j in edges]
    term_at = [(v, 1 + v) for v in terms]
    flag_at = [(j, 1 + n_v + n_e + j) for j in edges]
    n_nodes = len(nodes)

    def build(f, i, ci):
        mapped = {v: i[p] for v, p in node_at}
        return Subgraph(f[0], ci, mapped, {j: i[p] for j, p in fact_at}, {v: f[p] for v, p in term_at},
                        {j: f[p] for j, p in fact_at}, {j: i[p] == 1 for j, p in flag_at},
                        len(set(mapped.values())) == n_nodes)

    return build


class _Gather:
    """How one component's output rows become `Subgraph`s: the pattern nodes in the order the search maps
    them, the edges in step order, the nodes with a term (those with candidates, as the kernel writes NaN
    for the others) and the row builder over their positions. It depends only on the component's search
    order and on which nodes have candidates, so it is planned once per such shape (`_gather`)."""

    __slots__ = ("build", "steps")

    def __init__(self, n_v: int, n_e: int, root: int, has: tuple, flat: tuple):
        self.steps = [(flat[a], flat[a + 1], flat[a + 2], flat[a + 3] == 1) for a in range(0, len(flat), 4)]
        nodes = [root] + [w for _, w, _, tree in self.steps if tree]
        self.build = _row_builder(nodes, [j for _, _, j, _ in self.steps], [v for v in nodes if has[v]], n_v, n_e)

    def subgraphs(self, f_rows: list, i_rows: list, ci: int) -> list[Subgraph]:
        build = self.build
        return [build(f, i, ci) for f, i in zip(f_rows, i_rows)]


#: gather plans by (n_v, n_e, root, nodes with candidates, search order); emptied when it reaches the cap
_GATHERS: dict[tuple, _Gather] = {}


def _gather(key: tuple) -> _Gather:
    """The gather plan of key = (n_v, n_e, root, has, flat steps), from the cache or planned and cached."""
    plan = _GATHERS.get(key)
    if plan is None:
        if len(_GATHERS) >= _CACHE_CAP:
            _GATHERS.clear()
        plan = _GATHERS[key] = _Gather(*key)
    return plan


def search_topk(incidence: Incidence, pattern: Pattern, candidates: Candidates, config: GSDConfig) -> SearchResult:
    """Enumerate the top-k subgraphs of each pattern component (see gsd_search.py's docstring).

    Components are searched in order of their first node. In each, the root is the node with the
    fewest candidates; edges are taken in DFS order from it, towards higher-degree and known
    neighbours first, so each edge has a mapped endpoint ("tree" edges map a new node, "back" edges
    close a cycle); children are tried in ascending partial GSD and a branch is pruned when its
    partial GSD plus the admissible bound of the remaining edges cannot enter the top k.

    Results rank by (GSD, tie) where `tie` counts, lexicographically, pattern edges matched against
    their direction and then repeated entities and facts (non-injective searches only): equal GSD
    goes to the match that follows the pattern's directions and then repeats the least. (MetaQA
    merges same-name entities, e.g. the film and the actor "James Dean", so a reversed fact can tie
    at GSD 0 and lead off the question's chain; PathQuestion stores inverse relations such as
    parents / children, whose reversed facts tie too; a walk through the topic ties with a simple
    path.) Remaining ties go, step by step from the root, to the better-ranked candidate of each newly
    mapped node, then to the entity with more facts around it (a popularity prior: on MetaQA's equal-GSD
    answers it gives a higher Hits@1 than the KB's line order or the reference's alphabetical order,
    benchmarks/simgrag_enumeration_vs_reference.py, and unlike line order it does not change when the
    KB file is reordered), then to the KG's fact order. The bound on (GSD, tie) is admissible because both parts
    only grow along a branch. The compiled loop (gsd_kernel.py) does all of it.
    """
    # the compiled call starts its own clock (the thread's CPU time) on entry: a first call's compilation
    # or cache load is not part of the search's budget
    time_limit = float(config.time_limit_s) if config.time_limit_s is not None else _INF
    n_v, n_e, k = len(pattern.nodes), len(pattern.edges), config.top_k
    rel_dist = candidates.rel_dist
    if rel_dist.shape[0] != n_e:
        raise ConfigError(f"candidates hold {rel_dist.shape[0]} relation rows for a pattern of {n_e} edges.")
    if rel_dist.dtype is not _F64 or not rel_dist.flags.c_contiguous:  # (an equal dtype that is not numpy's
        rel_dist = np.ascontiguousarray(rel_dist, dtype=np.float64)  # own object comes back unchanged)
    pat, ids, dist, has = _kernel_inputs(pattern, candidates, config)
    arrays, out_f, out_i, meta, pool_f, pool_i = incidence.buffers(n_v, n_e, k)
    gsd_kernel.search_pattern(arrays, rel_dist, pat, ids, dist, time_limit, out_f, out_i, meta, pool_f, pool_i)
    meta = meta.tolist()
    if meta[2] == _ERR_NO_ANCHOR:
        raise ConfigError("a pattern component has no known entity and no type candidates: validate the pattern "
                          "first (validate_pattern), or give the retriever entity types.")
    head = _META_HEAD
    results, orders = [], []
    f_rows = i_rows = None
    for ci in range(meta[3]):
        n_items, first, n_steps, searched, root = meta[head + 5 * ci:head + 5 * ci + 5]
        if not searched:
            results.append([])
            continue
        at = head + 5 * n_v + 4 * first
        plan = _gather((n_v, n_e, root, has, tuple(meta[at:at + 4 * n_steps])))
        orders.append(list(plan.steps))
        if not n_items:
            results.append([])
            continue
        if f_rows is None:
            f_rows, i_rows = out_f.tolist(), out_i.tolist()
        results.append(plan.subgraphs(f_rows[ci * k:ci * k + n_items], i_rows[ci * k:ci * k + n_items], ci))
    return SearchResult(results, meta[0], bool(meta[1]), meta[4] * 1e-6, orders=orders)
