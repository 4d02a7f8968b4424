"""Top-k subgraphs of a KG by Graph Semantic Distance (GSD) to a pattern graph.

Under a mapping f of pattern nodes to KG entities (and of pattern edges to KG facts),

    GSD = sum over KNOWN pattern nodes v of ||z_v - z_f(v)||  +  sum over pattern edges e of ||z_e - z_f(e)||

where z are L2-normalised sentence embeddings of the names (UNKNOWN nodes cost 0). The search
follows SimGRAG's filtering - ordering - enumerating scheme:

* filtering: top-`entity_topk` KG entities per known pattern node (vector search) and top-`relation_topk`
  KG relation types per pattern relation, with the relation distances held as a
  (pattern edge x KG relation) matrix (inf outside the top-m);
* ordering: the root is the node with the fewest candidates; edges are taken in DFS order from the
  root, higher-degree pattern neighbours first, so each edge has a mapped endpoint ("tree" edges
  map a new node, "back" edges close a cycle between two mapped nodes);
* enumerating: depth-first over the KG's adjacency (both directions of every fact, grouped by
  entity then relation), children in ascending partial cost, pruning a branch when its partial
  cost plus a lower bound of the remaining edges reaches the current k-th best GSD.

The lower bound is admissible: for each remaining edge it adds the smallest relation distance the
edge can have and, for a TREE edge only, the smallest node distance of the node it introduces; a
back edge adds only its relation term because both its nodes are already paid for. (The reference
code also charges node terms on back edges, which can over-estimate on cyclic patterns and prune
the optimum.) Hence the top-k GSD values equal exhaustive enumeration (tests/test_simgrag_gsd.py
checks this against brute force on random KGs and path, tree and cyclic patterns).

A pattern edge may match a fact in either direction (`direction="any"`, as the reference code) or
only in its own direction (`"same"`); evidence is always reported in the KG's direction, with a
`reversed` flag per edge. Ties in GSD go to the match with fewer reversed edges (a
secondary key that never changes the top-k GSD values). By default a mapping may reuse a KG node
or fact (any homomorphism: walks such as PathQuestion's X -spouse-> Y -spouse-> X, or MetaQA 3-hop
answers reached through the topic itself), as the reference code allows; on equal GSD (and equal
reversals) matches that repeat fewer entities and facts rank first (a simple path before a walk
through the topic). `injective=True` restricts the search to injective mappings (no KG entity serves
two pattern nodes, no fact serves two pattern edges); every result says whether its node mapping is
injective. Distinct mappings that
use the same set of facts (pattern automorphisms) count once (`distinct=True`). Disconnected
patterns are searched per component. The per-query time limit is checked inside the loop.

A component without any known node is searched only when the retriever knows the KG's entity
types (FactKG's DBpedia): SimGRAG's type-candidate rule (`type_candidates.py`) then restricts each
typed UNKNOWN node of that component to the entities of the `type_topk` most similar types, at node
cost 0, and the search starts from the node with the fewest of them.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from ...errors import ConfigError
from .pattern import Pattern

if TYPE_CHECKING:  # pragma: no cover
    from ...kg import KG
    from .type_candidates import TypeIndex

__all__ = [
    "GSDConfig", "Incidence", "Candidates", "Subgraph", "SearchResult", "GSDRetriever",
    "search_topk", "embedding_text", "l2_rows",
]

_DENSE_SCAN = 512  # above this many facts around an entity, select relations by binary search

#: index_kind="auto": exact flat search below this many entities, HNSW (built once, cached on disk) from it.
#: Flat search reads every entity vector per query: 2.5-2.6 ms per pattern node on MetaQA's 42,718 MiniLM
#: vectors on the shared 2-core machine (benchmarks/results/simgrag_metaqa-*_flat.json); one-thread CPU time
#: per 384-d query measured 0.24 / 0.86 / 1.36 / 2.30 ms at 10k / 20k / 30k / 42.7k vectors, so flat stays
#: under the issue's 2 ms per node below 30,000 entities. HNSW: 0.39-0.47 ms on MetaQA with the same Hits@1
#: (the top-n candidates are re-scored exactly either way), about 21 s to build once.
AUTO_HNSW_MIN_ENTITIES = 30_000
#: From this many entities (DBpedia-scale KGs such as FactKG's) index_kind="auto" uses IVF: on 1M random 384-d
#: vectors (benchmarks/results/simgrag_node_search_1M.json, 2 shared cores) IVF with 2048 lists built in 123 s and
#: found the perturbed entity for 99.7% of queries at 0.47 ms (nprobe 16; 100% at 0.89 ms with nprobe 32), while
#: an HNSW graph with cheap build settings (M 16, efConstruction 40) took 183 s and found it for only 29%;
#: HNSW's default settings (M 32, efConstruction 200) would take far longer to build at this size.
AUTO_IVF_MIN_ENTITIES = 500_000
AUTO_IVF_NPROBE = 32
INDEX_KINDS = ("auto", "flat", "hnsw", "ivf")


def resolve_index_kind(kind: str, n_entities: int) -> str:
    """The concrete FAISS index kind for `kind` ("auto" picks by KG size: flat, then HNSW from
    AUTO_HNSW_MIN_ENTITIES, then IVF from AUTO_IVF_MIN_ENTITIES)."""
    if kind not in INDEX_KINDS:
        raise ConfigError(f"index_kind must be one of {INDEX_KINDS}, got {kind!r}.")
    if kind != "auto":
        return kind
    if n_entities >= AUTO_IVF_MIN_ENTITIES:
        return "ivf"
    return "hnsw" if n_entities >= AUTO_HNSW_MIN_ENTITIES else "flat"


def auto_index_options(kind: str, n_entities: int, options: dict) -> dict:
    """Options for an index that `auto` chose: IVF gets about 2 sqrt(n) lists and nprobe 32 unless given."""
    if kind != "ivf":
        return dict(options)
    out = {"nlist": max(1024, int(round(2 * np.sqrt(n_entities)))), "nprobe": AUTO_IVF_NPROBE}
    out.update(options)
    return out


def _cached_index(kind: str, vectors: np.ndarray, options: dict):
    """A FAISS index over `vectors`; an HNSW graph or an IVF index is kept on disk (cache/simgrag_index),
    keyed by the vectors' bytes and the options, because building HNSW over 43k vectors takes 20-70 s
    here and IVF over 1M vectors about 2 minutes."""
    import hashlib
    import json

    from ... import settings
    from ...vector_index import VectorIndex, make_index

    def build():
        index = make_index("faiss", dim=int(vectors.shape[1]), metric="ip", kind=kind, use_gpu=False, **options)
        index.add(vectors)
        return index

    if kind not in ("hnsw", "ivf"):
        return build(), False
    digest = hashlib.sha256(np.ascontiguousarray(vectors).tobytes())
    digest.update(json.dumps({"kind": kind, **options}, sort_keys=True).encode())
    folder = settings.cache_dir("simgrag_index") / digest.hexdigest()[:24]
    if folder.is_dir():
        try:
            index = VectorIndex.load(folder, use_gpu=False)
            if len(index) == vectors.shape[0]:
                return index, True
        except Exception:  # a damaged cache entry is rebuilt below
            pass
    index = build()
    index.save(folder)
    return index, False


def embedding_text(name: str) -> str:
    """The text embedded for an entity or relation name: underscores read as spaces."""
    return " ".join(str(name).replace("_", " ").split())


def l2_rows(queries: np.ndarray, rows: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """(q, r) Euclidean distances computed from differences in float64, so equal vectors give
    exactly 0 (sqrt(2 - 2 ip) in float32 turns rounding into distances of about 1e-3)."""
    q = np.asarray(queries, dtype=np.float64)
    out = np.empty((q.shape[0], rows.shape[0]))
    for s in range(0, rows.shape[0], chunk):
        block = np.asarray(rows[s:s + chunk], dtype=np.float64)
        out[:, s:s + chunk] = np.sqrt(((q[:, None, :] - block[None, :, :]) ** 2).sum(axis=2))
    return out


@dataclass(frozen=True)
class GSDConfig:
    """Search parameters (reference values: n = m = 16, k = 3)."""

    top_k: int = 3
    entity_topk: int = 16
    relation_topk: int = 16
    injective: bool = False  # True: no KG entity or fact serves two pattern nodes / edges (no walks)
    direction: str = "any"  # "any": a pattern edge matches a fact either way; "same": only its own way
    distinct: bool = True  # mappings that use the same facts count once
    time_limit_s: float | None = 2.0
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

    @property
    def nbytes(self) -> int:
        return int(self.nbr.nbytes + self.rel.nbytes + self.eid.nbytes + self.out.nbytes + self.indptr.nbytes)

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


@dataclass
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


def _search_order(pattern: Pattern, nodes: list[int], edges: list[int], n_candidates: dict[int, int]):
    """(root, steps): steps are (mapped node, other node, edge index, is_tree) in DFS order."""
    deg = pattern.degree()
    root = min(nodes, key=lambda v: (n_candidates.get(v, np.iinfo(np.int64).max), -deg[v], v))
    incident: dict[int, list[tuple[int, int]]] = {v: [] for v in nodes}
    for j in edges:
        e = pattern.edges[j]
        incident[e.head].append((j, e.tail))
        incident[e.tail].append((j, e.head))
    visited, done, steps = {root}, set(), []

    def dfs(u: int) -> None:
        for j, w in sorted(incident[u], key=lambda jw: (-deg[jw[1]], not pattern.nodes[jw[1]].known, jw[0])):
            if j in done:
                continue
            done.add(j)
            if w in visited:
                steps.append((u, w, j, False))
            else:
                visited.add(w)
                steps.append((u, w, j, True))
                dfs(w)

    dfs(root)
    return root, steps


class _TopK:
    """The k best results so far, distinct by fact set when asked.

    Results rank by (GSD, tie) where `tie` counts, lexicographically, pattern edges matched against
    their direction and then repeated entities and facts (non-injective searches only): equal GSD
    goes to the match that follows the pattern's directions and then repeats the least. (MetaQA
    merges same-name entities, e.g. the film and the actor "James Dean", so a reversed fact can tie
    at GSD 0 and lead off the question's chain; PathQuestion stores inverse relations such as
    parents / children, whose reversed facts tie too; a walk through the topic ties with a simple path.)
    `threshold` is the k-th (GSD, tie) pair; a branch is pruned when its lower-bound pair is >= it,
    which is admissible because both parts only grow along a branch.
    """

    def __init__(self, k: int, distinct: bool):
        self.k, self.distinct = k, distinct
        self.items: list[tuple[float, int, int, Subgraph]] = []
        self.keys: dict = {}
        self.seq = 0
        self.threshold = (np.inf, 0)

    def admits(self, cost: float, tie: int) -> bool:
        """Could a result with this (lower bound of) GSD and tie count enter the top k?"""
        t_cost, t_tie = self.threshold
        return cost < t_cost or (cost == t_cost and tie < t_tie)

    def offer(self, cost: float, tie: int, make: Callable[[], Subgraph], key) -> None:
        if not self.admits(cost, tie):
            return
        if self.distinct:
            old = self.keys.get(key)
            if old is not None:
                if (cost, tie) >= (old[0], old[1]):
                    return
                self.items.remove(old)
        self.seq += 1
        item = (cost, tie, self.seq, make())
        self.items.append(item)
        self.items.sort(key=lambda it: (it[0], it[1], it[2]))
        if self.distinct:
            self.keys[key] = item
        while len(self.items) > self.k:
            dropped = self.items.pop()
            if self.distinct:
                self.keys.pop(frozenset(dropped[3].edges.values()), None)
        if len(self.items) >= self.k:
            self.threshold = (self.items[-1][0], self.items[-1][1])


class _Deadline(Exception):
    pass


def search_topk(incidence: Incidence, pattern: Pattern, candidates: Candidates, config: GSDConfig,
                start: float | None = None) -> SearchResult:
    """Enumerate the top-k subgraphs of each pattern component (see the module docstring)."""
    t0 = time.perf_counter() if start is None else start
    deadline = t0 + config.time_limit_s if config.time_limit_s is not None else np.inf
    rel_dist = candidates.rel_dist
    n_edges = len(pattern.edges)
    if rel_dist.shape[0] != n_edges:
        raise ConfigError(f"candidates hold {rel_dist.shape[0]} relation rows for a pattern of {n_edges} edges.")
    allowed_mask = np.isfinite(rel_dist)
    allowed_sorted = [np.flatnonzero(allowed_mask[j]) for j in range(n_edges)]
    rel_min = [float(rel_dist[j][allowed_sorted[j]].min()) if allowed_sorted[j].size else np.inf for j in range(n_edges)]
    # known nodes: candidates sorted by id for lookups, and by distance for the root
    lookup_ids: dict[int, np.ndarray] = {}
    lookup_dist: dict[int, np.ndarray] = {}
    lookup_rank: dict[int, np.ndarray] = {}  # position in the candidate list: breaks ties between equal costs
    node_min: dict[int, float] = {}
    for v, node in enumerate(pattern.nodes):
        typed = not node.known and v < len(candidates.node_ids) and candidates.node_ids[v] is not None
        if node.known or typed:
            ids = candidates.node_ids[v]
            dist = candidates.node_dist[v]
            if ids is None or dist is None:
                raise ConfigError(f"no entity candidates for known pattern node {node.label!r}.")
            o = np.argsort(ids, kind="stable")
            lookup_ids[v], lookup_dist[v], lookup_rank[v] = ids[o], np.asarray(dist, dtype=np.float64)[o], o
            node_min[v] = float(dist.min()) if dist.size else np.inf

    stats = {"expanded": 0, "timed_out": False}
    results: list[list[Subgraph]] = []
    orders = []
    same_dir = config.direction == "same"
    for ci, (comp_nodes, comp_edges) in enumerate(pattern.components()):
        if not any(v in lookup_ids for v in comp_nodes):
            raise ConfigError("a pattern component has no known entity and no type candidates: validate the pattern "
                              "first (validate_pattern), or give the retriever entity types.")
        n_cand = {v: int(lookup_ids[v].size) for v in comp_nodes if v in lookup_ids}
        root, steps = _search_order(pattern, comp_nodes, comp_edges, n_cand)
        orders.append([(u, w, j, tree) for u, w, j, tree in steps])
        # lower bound of steps i.. : relation minimum per edge + node minimum of each node a tree edge maps
        step_lb = [rel_min[j] + (node_min.get(w, 0.0) if tree else 0.0) for u, w, j, tree in steps]
        lb_rest = np.zeros(len(steps) + 1)
        for i in range(len(steps) - 1, -1, -1):
            lb_rest[i] = lb_rest[i + 1] + step_lb[i]
        top = _TopK(config.top_k, config.distinct)
        mapping: dict[int, int] = {}
        chosen: dict[int, int] = {}
        node_terms: dict[int, float] = {}
        edge_terms: dict[int, float] = {}
        rev: dict[int, bool] = {}

        def finish(cost: float, tie: int) -> None:
            nodes, edges = dict(mapping), dict(chosen)
            key = frozenset(edges.values())
            top.offer(cost, tie, lambda: Subgraph(cost, ci, nodes, edges, dict(node_terms), dict(edge_terms), dict(rev),
                                             len(set(nodes.values())) == len(nodes)), key)

        last = len(steps)
        reversal_weight = 2 * len(steps) + 1  # more than the repeats a match can have: reversals rank first

        def expand(i: int, partial: float, tie: int) -> None:
            stats["expanded"] += 1
            if time.perf_counter() > deadline:
                raise _Deadline
            u, w, j, tree = steps[i]
            pos = incidence.around(mapping[u], allowed_mask[j], allowed_sorted[j])
            if pos.size == 0:
                return
            nbr = incidence.nbr[pos]
            eid = incidence.eid[pos]
            out = incidence.out[pos]
            total = rel_dist[j][incidence.rel[pos]]  # the relation term, then + node term + partial
            u_is_head = pattern.edges[j].head == u
            # same direction: the fact runs the pattern edge's way; a self-loop (stored once) runs both ways
            ok = ((out == u_is_head) | (nbr == mapping[u])) if same_dir else None
            node_cost = rank = None
            if tree:
                if w in lookup_ids:
                    ids, dist = lookup_ids[w], lookup_dist[w]
                    if ids.size == 0:
                        return
                    at = np.minimum(np.searchsorted(ids, nbr), ids.size - 1)
                    hit = ids[at] == nbr
                    ok = hit if ok is None else ok & hit
                    node_cost = np.where(hit, dist[at], np.inf)
                    rank = lookup_rank[w][at]
                if config.injective:
                    for y in mapping.values():
                        ok = (nbr != y) if ok is None else ok & (nbr != y)
            else:
                ok = (nbr == mapping[w]) if ok is None else ok & (nbr == mapping[w])
            if config.injective:  # a subgraph uses each fact once; a homomorphism may reuse one
                for f in chosen.values():
                    ok = (eid != f) if ok is None else ok & (eid != f)
            rel_terms = total
            if node_cost is not None:
                total = total + node_cost
            total = total + partial
            rest = lb_rest[i + 1]
            reversed_ = (out != u_is_head) & (nbr != mapping[u])  # a self-loop runs both ways
            step_tie = reversal_weight * reversed_.astype(np.int64)
            if not config.injective:  # one reversal outweighs any number of repeated entities and facts
                step_tie += np.isin(eid, list(chosen.values()))
                if tree:
                    step_tie += np.isin(nbr, list(mapping.values()))
            bound, child_tie = total + rest, tie + step_tie
            t_cost, t_tie = top.threshold
            keep = (bound < t_cost) | ((bound == t_cost) & (child_tie < t_tie))
            idx = np.flatnonzero(keep if ok is None else keep & ok)
            if idx.size == 0:
                return
            # children by partial GSD, then fewer repeats and reversals, then candidate rank
            idx = idx[np.lexsort((step_tie[idx], total[idx])) if rank is None else
                      np.lexsort((rank[idx], step_tie[idx], total[idx]))]
            child_cost = total[idx].tolist()
            child_rel = rel_terms[idx].tolist()
            child_eid = eid[idx].tolist()
            child_rev = reversed_[idx].tolist()
            child_tie = child_tie[idx].tolist()
            child_nbr = nbr[idx].tolist() if tree else None
            child_node = node_cost[idx].tolist() if node_cost is not None else None
            for c in range(idx.size):
                child = child_cost[c]
                if not top.admits(child + rest, child_tie[c]):
                    break  # children are sorted by (cost, tie): no later one is admitted either
                chosen[j] = child_eid[c]
                edge_terms[j] = child_rel[c]
                rev[j] = child_rev[c]
                if tree:
                    mapping[w] = child_nbr[c]
                    if child_node is not None:
                        node_terms[w] = child_node[c]
                if i + 1 == last:
                    finish(child, child_tie[c])
                else:
                    expand(i + 1, child, child_tie[c])
                if tree:
                    del mapping[w]
                    node_terms.pop(w, None)
            chosen.pop(j, None)
            edge_terms.pop(j, None)
            rev.pop(j, None)

        root_ids, root_dist = candidates.node_ids[root], candidates.node_dist[root]
        try:
            for x, d in zip(root_ids.tolist(), np.asarray(root_dist, dtype=np.float64).tolist()):
                if not top.admits(d + lb_rest[0], 0):
                    break  # root candidates come nearest first
                mapping[root] = int(x)
                node_terms[root] = float(d)
                expand(0, float(d), 0)
                mapping.clear()
                node_terms.clear()
        except _Deadline:
            stats["timed_out"] = True
            mapping.clear()
        results.append([it[3] for it in top.items])
        if stats["timed_out"]:
            results.extend([] for _ in pattern.components()[ci + 1:])
            break
    return SearchResult(results, stats["expanded"], stats["timed_out"], orders=orders)


# ----------------------------------------------------------------------------- the retriever


@contextmanager
def _faiss_threads(n: int | None):
    """Run FAISS with n OpenMP threads inside the block: a handful of queries gains nothing from more
    threads, and on a busy machine their spin-waiting costs several times the search itself."""
    if n is None:
        yield
        return
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(int(n))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


class GSDRetriever:
    """Embeddings, vector index and adjacency of one KG, ready to answer pattern queries.

    `entity_vectors` / `relation_vectors`: L2-normalised float32 rows in KG id order. `encode`
    turns texts into vectors of the same model (needed for LLM patterns; tests may pass vectors).
    `type_index` (entity types with type-name vectors) enables the type-candidate rule for pattern
    components without a known node.
    """

    def __init__(self, kg: "KG", entity_vectors: np.ndarray, relation_vectors: np.ndarray,
                 encode: Callable[[list[str]], np.ndarray] | None = None, index_kind: str = "auto",
                 index_options: dict | None = None, search_threads: int | None = 1,
                 type_index: "TypeIndex | None" = None):
        ent = np.ascontiguousarray(entity_vectors, dtype=np.float32)
        rel = np.ascontiguousarray(relation_vectors, dtype=np.float32)
        if ent.shape[0] != kg.num_entities or rel.shape[0] != kg.num_relations:
            raise ConfigError(f"need one vector per entity ({kg.num_entities}) and per relation ({kg.num_relations}); "
                              f"got {ent.shape[0]} and {rel.shape[0]}.")
        self.kg = kg
        self.encode = encode
        self.search_threads = search_threads  # FAISS threads for a pattern's few queries (None: FAISS' default)
        self.entity_vectors = ent  # kept to re-score the top-n candidates exactly
        self.relation_vectors = rel
        self._relation_vectors64 = rel.astype(np.float64)
        self.dim = int(ent.shape[1])
        if type_index is not None and len(type_index) and type_index.vectors.shape[1] != self.dim:
            raise ConfigError(f"type vectors have dimension {type_index.vectors.shape[1]}, entity vectors {self.dim}: "
                              "embed both with the same model.")
        self.type_index = type_index if type_index is not None and len(type_index) else None
        t0 = time.perf_counter()
        self.incidence = Incidence(kg)
        t1 = time.perf_counter()
        self.index_kind = resolve_index_kind(index_kind, kg.num_entities)
        options = dict(index_options or {})
        if index_kind == "auto":
            options = auto_index_options(self.index_kind, kg.num_entities, options)
        self.index_options = options
        self.index, self.index_from_cache = _cached_index(self.index_kind, ent, options)
        self.build_seconds = {"incidence": t1 - t0, "index": time.perf_counter() - t1}

    @classmethod
    def from_embedder(cls, kg: "KG", embedder="minilm", index_kind: str = "auto", progress: bool | None = None,
                      search_threads: int | None = 1, entity_types=None, **index_options) -> "GSDRetriever":
        """Embed every entity and relation name (through the embedder's on-disk cache) and index them.

        `entity_types`: the KG's types (FactKG: `dataset.info["entity_types"]`, with names / indptr /
        entity_ids) for the type-candidate rule; their names are embedded with the same model.
        """
        from ...embeddings import load_embedder
        from .type_candidates import TypeIndex

        emb = load_embedder(embedder) if isinstance(embedder, str) else embedder
        ent = emb.encode([embedding_text(n) for n in kg.entity_names], progress=progress)
        rel = emb.encode([embedding_text(n) for n in kg.relation_names])
        encode = lambda texts: emb.encode(list(texts))  # noqa: E731
        types = TypeIndex.from_types(entity_types, encode) if entity_types is not None and len(entity_types) else None
        return cls(kg, ent, rel, encode=encode, index_kind=index_kind, index_options=index_options,
                   search_threads=search_threads, type_index=types)

    # -------------------------------------------------------------- the type-candidate rule
    def unanchored_typed_nodes(self, pattern: Pattern) -> list[int]:
        """UNKNOWN nodes with a type in components without a known node (those the rule applies to)."""
        out = []
        for nodes, _ in pattern.components():
            if not any(pattern.nodes[v].known for v in nodes):
                out.extend(v for v in nodes if (pattern.nodes[v].type or "").strip())
        return sorted(out)

    def type_candidates(self, pattern: Pattern, config: GSDConfig,
                        type_vectors: np.ndarray | None = None) -> dict[int, tuple[np.ndarray, list[str]]]:
        """{unknown node: (entity ids of its `type_topk` nearest types, those type names)} for the
        typed UNKNOWN nodes of components without a known node; empty without a type index."""
        nodes = self.unanchored_typed_nodes(pattern) if self.type_index is not None else []
        if not nodes:
            return {}
        if type_vectors is None:
            if self.encode is None:
                raise ConfigError("this retriever has no encoder: build it with from_embedder() or pass type vectors.")
            from .type_candidates import type_text

            type_vectors = np.asarray(self.encode([type_text(pattern.nodes[v].type) for v in nodes]), dtype=np.float32)
        out = {}
        for v, tids in zip(nodes, self.type_index.nearest_types(type_vectors, config.type_topk)):
            out[v] = (self.type_index.entities_of(tids), [str(self.type_index.names[t]) for t in tids])
        return out

    # -------------------------------------------------------------- filtering
    def pattern_vectors(self, pattern: Pattern) -> tuple[np.ndarray, np.ndarray]:
        """(known node vectors, edge relation vectors) for a pattern, through `encode`."""
        if self.encode is None:
            raise ConfigError("this retriever has no encoder: build it with from_embedder() or pass encode=.")
        known = pattern.known_nodes
        texts = [embedding_text(pattern.nodes[v].label) for v in known] + \
                [embedding_text(e.relation) for e in pattern.edges]
        vecs = np.asarray(self.encode(texts), dtype=np.float32)
        return vecs[: len(known)], vecs[len(known):]

    def candidates(self, pattern: Pattern, config: GSDConfig, node_vectors: np.ndarray | None = None,
                   relation_vectors: np.ndarray | None = None, type_vectors: np.ndarray | None = None) -> Candidates:
        """Vector search for the known nodes (one batched call), relation distances for the edges, and
        type candidates for the UNKNOWN nodes of unanchored components (when the KG has types)."""
        t0 = time.perf_counter()
        if node_vectors is None or relation_vectors is None:
            node_vectors, relation_vectors = self.pattern_vectors(pattern)
        t1, c1 = time.perf_counter(), time.process_time()
        known = pattern.known_nodes
        ids: list[np.ndarray | None] = [None] * len(pattern.nodes)
        dists: list[np.ndarray | None] = [None] * len(pattern.nodes)
        if known:
            with _faiss_threads(self.search_threads):
                scores, found = self.index.search(np.asarray(node_vectors, dtype=np.float32), config.entity_topk)
            for row, v in enumerate(known):
                hit = found[row][found[row] >= 0].astype(np.int64)
                d = l2_rows(node_vectors[row:row + 1], self.entity_vectors[hit])[0]
                # equal distances (an uncased embedder maps "McLean" and "Mclean" to one vector) go to
                # the name written exactly as in the pattern, then to a case-insensitive match
                label = pattern.nodes[v].label
                names = self.kg.entity_names[hit]
                spelling = np.array([0 if n == label else 1 if n.casefold() == label.casefold() else 2 for n in names])
                order = np.lexsort((hit, spelling, d))
                ids[v], dists[v] = hit[order], d[order]
        t2, c2 = time.perf_counter(), time.process_time()
        rel_full = l2_rows(relation_vectors, self._relation_vectors64)
        rel = np.full(rel_full.shape, np.inf)
        m = min(config.relation_topk, rel_full.shape[1])
        if m:
            top = np.argpartition(rel_full, m - 1, axis=1)[:, :m] if m < rel_full.shape[1] else \
                np.broadcast_to(np.arange(rel_full.shape[1]), rel_full.shape)
            rows = np.arange(rel_full.shape[0])[:, None]
            rel[rows, top] = rel_full[rows, top]
        t3, c3 = time.perf_counter(), time.process_time()
        typed = {}
        for v, (ent_ids, type_names) in self.type_candidates(pattern, config, type_vectors).items():
            ids[v], dists[v] = ent_ids, np.zeros(ent_ids.size)
            typed[v] = type_names
        t4 = time.perf_counter()
        # wall-clock ms, and process CPU ms (all threads) that a busy shared machine does not inflate
        timings = {"encode_ms": (t1 - t0) * 1e3, "node_search_ms": (t2 - t1) * 1e3,
                   "node_search_cpu_ms": (c2 - c1) * 1e3, "relation_ms": (t3 - t2) * 1e3,
                   "relation_cpu_ms": (c3 - c2) * 1e3, "known_nodes": len(known)}
        if typed:
            timings.update({"type_candidates_ms": (t4 - t3) * 1e3, "typed_nodes": len(typed)})
        return Candidates(ids, dists, rel, timings, typed)

    def describe_candidates(self, pattern: Pattern, cand: Candidates, limit: int = 5) -> dict:
        """Names and distances of the best candidates, for per-example records."""
        kg = self.kg
        nodes = {}
        for v in pattern.known_nodes:
            ids, d = cand.node_ids[v], cand.node_dist[v]
            nodes[pattern.nodes[v].label] = [[str(kg.entity_names[i]), round(float(x), 4)]
                                             for i, x in zip(ids[:limit].tolist(), d[:limit].tolist())]
        typed = {pattern.nodes[v].label: {"types": names, "entities": int(cand.node_ids[v].size)}
                 for v, names in cand.typed.items()}
        rels = []
        for j, e in enumerate(pattern.edges):
            ids, d = cand.relation_candidates(j)
            rels.append({"relation": e.relation,
                         "top": [[str(kg.relation_names[i]), round(float(x), 4)] for i, x in zip(ids[:limit], d[:limit])]})
        out = {"nodes": nodes, "relations": rels}
        if typed:
            out["typed"] = typed
        return out

    # -------------------------------------------------------------- search
    def search(self, pattern: Pattern, config: GSDConfig, candidates: Candidates) -> SearchResult:
        t0, c0 = time.perf_counter(), time.thread_time()
        result = search_topk(self.incidence, pattern, candidates, config, start=t0)
        result.candidates = candidates
        result.timings = {**candidates.timings, "enumerate_ms": (time.perf_counter() - t0) * 1e3,
                          "enumerate_cpu_ms": (time.thread_time() - c0) * 1e3}
        return result

    def retrieve(self, pattern: Pattern, config: GSDConfig | None = None) -> tuple[SearchResult, Candidates]:
        """Filtering + enumeration for one validated pattern."""
        config = config or GSDConfig()
        cand = self.candidates(pattern, config)
        return self.search(pattern, config, cand), cand

