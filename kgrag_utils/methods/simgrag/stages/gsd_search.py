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
from typing import TYPE_CHECKING, Callable

import numpy as np

from ....errors import ConfigError
from .gsd_enumerate import Candidates, GSDConfig, Incidence, SearchResult, Subgraph, search_topk
from .pattern import Pattern

if TYPE_CHECKING:  # pragma: no cover
    from ....kg import KG
    from .type_candidates import TypeIndex

__all__ = [
    "GSDConfig", "Incidence", "Candidates", "Subgraph", "SearchResult", "GSDRetriever",
    "search_topk", "embedding_text", "l2_rows", "relation_distances", "alias_rows",
]


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

    from .... import settings
    from ....vector_index import VectorIndex, make_index

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


# ----------------------------------------------------------------------------- the retriever


def relation_distances(pattern_vectors: np.ndarray, relation_vectors64: np.ndarray, m: int,
                       owners: np.ndarray | None = None) -> np.ndarray:
    """(pattern edges x KG relations) Euclidean distances, inf outside each edge's m nearest relations.

    With many relations (a thousand in a Wikidata-sized KG) the differences of every pair would cost
    milliseconds per pattern: the nearest 2m are preselected by the inner-product form of the distance
    (float64; its rounding is ~1e-7, far below the gaps it ranks) and only they are computed exactly.

    `owners` (config relation_aliases): row i of `relation_vectors64` stands for KG relation `owners[i]` (its name's
    rows first, in id order, then its aliases'); a relation's distance is then the smallest over its rows."""
    if owners is not None:
        return _aliased_distances(pattern_vectors, relation_vectors64, m, np.asarray(owners, dtype=np.int64))
    q = np.asarray(pattern_vectors, dtype=np.float64)
    n_rel = relation_vectors64.shape[0]
    rel = np.full((q.shape[0], n_rel), np.inf)
    m = min(m, n_rel)
    if not m:
        return rel
    if n_rel <= 4 * m:
        pool = np.broadcast_to(np.arange(n_rel), (q.shape[0], n_rel))
    else:
        approx = (q * q).sum(1)[:, None] + (relation_vectors64 ** 2).sum(1)[None, :] - 2 * q @ relation_vectors64.T
        pool = np.argpartition(approx, 2 * m - 1, axis=1)[:, : 2 * m]
    for j in range(q.shape[0]):
        d = l2_rows(q[j:j + 1], relation_vectors64[pool[j]])[0]
        keep = np.argpartition(d, m - 1)[:m] if m < d.size else np.arange(d.size)
        rel[j, pool[j][keep]] = d[keep]
    return rel


def _aliased_distances(pattern_vectors: np.ndarray, rows64: np.ndarray, m: int, owners: np.ndarray) -> np.ndarray:
    """`relation_distances` where several rows stand for one relation: per relation the smallest row distance, the
    2m nearest relations preselected (by their rows' inner-product form) when there are over 4m."""
    q = np.asarray(pattern_vectors, dtype=np.float64)
    n_rel = int(owners.max()) + 1 if owners.size else 0
    out = np.full((q.shape[0], n_rel), np.inf)
    m = min(m, n_rel)
    if not m:
        return out
    approx = None
    if n_rel > 4 * m:
        approx = (q * q).sum(1)[:, None] + (rows64 ** 2).sum(1)[None, :] - 2 * q @ rows64.T
    for j in range(q.shape[0]):
        rows = np.arange(rows64.shape[0])
        if approx is not None:
            best = np.full(n_rel, np.inf)
            np.minimum.at(best, owners, approx[j])
            rows = np.flatnonzero(np.isin(owners, np.argpartition(best, 2 * m - 1)[: 2 * m]))
        best = np.full(n_rel, np.inf)
        np.minimum.at(best, owners[rows], l2_rows(q[j:j + 1], rows64[rows])[0])
        seen = np.flatnonzero(np.isfinite(best))
        keep = seen[np.argpartition(best[seen], m - 1)[:m]] if m < seen.size else seen
        out[j, keep] = best[keep]
    return out


def alias_rows(relation_names, relation_vectors: np.ndarray, aliases: dict[str, list[str]],
               encode: Callable[[list[str]], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(rows, owners) for `relation_distances`: the relations' name vectors, then one row per alias (config
    relation_aliases: {KG relation name: alias phrases}, embedded by `encode` as names are). An alias of a relation
    the KG does not have is refused."""
    ids = {str(n): i for i, n in enumerate(relation_names)}
    unknown = sorted(set(aliases) - set(ids))
    if unknown:
        raise ConfigError(f"relation aliases for {unknown[:5]}, which are not this KG's relations.")
    pairs = [(ids[r], a) for r, names in sorted(aliases.items()) for a in names]
    rows = np.asarray(relation_vectors, dtype=np.float64)
    owners = np.arange(rows.shape[0], dtype=np.int64)
    if pairs:
        vecs = np.asarray(encode([embedding_text(a) for _, a in pairs]), dtype=np.float64)
        rows = np.vstack([rows, vecs])
        owners = np.concatenate([owners, np.array([i for i, _ in pairs], dtype=np.int64)])
    return rows, owners


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
        self._relation_owners: np.ndarray | None = None  # with aliases: the relation each row of the above stands for
        self.relation_aliases: dict[str, list[str]] = {}
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
        from ....embeddings import load_embedder
        from .type_candidates import TypeIndex

        emb = load_embedder(embedder) if isinstance(embedder, str) else embedder
        ent = emb.encode([embedding_text(n) for n in kg.entity_names], progress=progress)
        rel = emb.encode([embedding_text(n) for n in kg.relation_names])
        encode = lambda texts: emb.encode(list(texts))  # noqa: E731
        types = TypeIndex.from_types(entity_types, encode) if entity_types is not None and len(entity_types) else None
        return cls(kg, ent, rel, encode=encode, index_kind=index_kind, index_options=index_options,
                   search_threads=search_threads, type_index=types)

    def set_relation_aliases(self, aliases: dict[str, list[str]]) -> None:
        """Give the KG's relations other names (config relation_aliases; `kgrag_utils.relation_aliases`): a pattern
        relation's distance to a KG relation becomes the smallest over its name and its aliases. Embedded once."""
        if self.encode is None:
            raise ConfigError("relation aliases need the retriever's encoder: build it with from_embedder().")
        names = self.kg.relation_names
        self._relation_vectors64, self._relation_owners = alias_rows(names, self.relation_vectors, aliases, self.encode)
        self.relation_aliases = {r: list(a) for r, a in aliases.items()}

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
        rel = relation_distances(relation_vectors, self._relation_vectors64, config.relation_topk, self._relation_owners)
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
        result = search_topk(self.incidence, pattern, candidates, config)
        result.candidates = candidates
        result.timings = {**candidates.timings, "enumerate_ms": (time.perf_counter() - t0) * 1e3,
                          "enumerate_cpu_ms": (time.thread_time() - c0) * 1e3}
        return result

    def retrieve(self, pattern: Pattern, config: GSDConfig | None = None) -> tuple[SearchResult, Candidates]:
        """Filtering + enumeration for one validated pattern."""
        config = config or GSDConfig()
        cand = self.candidates(pattern, config)
        return self.search(pattern, config, cand), cand

