"""The `KG` class: a directed multi-relational graph on flat id arrays with CSR indexes both ways.

Construction, vocabularies, id validation, traversals and export live here; the array primitives
are in `arrays`, fact-file reading in `text`, the .npz cache in `storage` and the chain pruning in
`chains` (see the package docstring).
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError, DatasetMissingError, did_you_mean
from .arrays import csr_index, duplicate_facts, expand_ranges, frozen, id_dtype, in_sorted
from .chains import ChainResult, complete_paths
from .storage import cache_file, read_npz, write_npz
from .text import read_fact_file

if TYPE_CHECKING:  # pragma: no cover
    import networkx

__all__ = ["KG"]

_DIRECTIONS = ("out", "in", "both")


def _sentence_part(text: str) -> str:
    return text.replace("_", " ")



# ----------------------------------------------------------------------------- the graph


class KG:
    """A directed multi-relational graph with integer ids and CSR indexes in both directions.

    Build with `KG.from_triples`, `KG.from_ids`, `KG.load` (text) or `KG.load_npz` (binary cache).
    Duplicate facts are dropped at build time; edge ids follow the first appearance of each fact.
    Arrays are read-only: a KG does not change after it is built.
    """

    # ------------------------------------------------------------------ construction
    def __init__(self, *, name: str, entity_names: np.ndarray, relation_names: np.ndarray,
                 heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, index: dict | None = None):
        """Internal: use the `from_*` / `load*` constructors (arrays must already be unique facts)."""
        self.name = str(name)
        self.entity_names = frozen(np.asarray(entity_names, dtype=object))
        self.relation_names = frozen(np.asarray(relation_names, dtype=object))
        self.num_entities = int(self.entity_names.size)
        self.num_relations = int(self.relation_names.size)
        self.heads = frozen(heads)
        self.rels = frozen(rels)
        self.tails = frozen(tails)
        self.num_edges = int(heads.size)
        self._entity_index: pd.Index | None = None
        self._relation_index: dict[str, int] | None = None
        if index is None:
            index = csr_index(self.heads, self.rels, self.tails, self.num_entities, self.num_relations)
        for key, arr in index.items():
            setattr(self, "_" + key, frozen(arr))

    @classmethod
    def _build(cls, heads, rels, tails, entity_names, relation_names, name: str, *, check: bool = True) -> "KG":
        entity_names = np.asarray(entity_names, dtype=object).reshape(-1)
        relation_names = np.asarray(relation_names, dtype=object).reshape(-1)
        heads = np.asarray(heads).reshape(-1)
        rels = np.asarray(rels).reshape(-1)
        tails = np.asarray(tails).reshape(-1)
        n_e, n_r = entity_names.size, relation_names.size
        if check:
            if not (heads.size == rels.size == tails.size):
                raise ConfigError(
                    f"heads, rels and tails must have the same length (got {heads.size}, {rels.size}, {tails.size})."
                )
            for label, arr, bound in (("head", heads, n_e), ("tail", tails, n_e), ("relation", rels, n_r)):
                if arr.size and not np.issubdtype(arr.dtype, np.integer):
                    raise ConfigError(f"{label} ids must be integers (got dtype {arr.dtype}); map names with from_triples().")
                if arr.size and (arr.min() < 0 or arr.max() >= bound):
                    raise ConfigError(
                        f"{label} ids must lie in [0, {bound}) (found {int(arr.min())}..{int(arr.max())}); "
                        f"pass a name for every id."
                    )
            for label, names in (("entity", entity_names), ("relation", relation_names)):
                if names.size and not all(isinstance(x, str) for x in names):
                    raise ConfigError(f"every {label} name must be a str; convert the names before building the KG.")
                if names.size and not pd.Index(names, dtype=object).is_unique:
                    dup = pd.Index(names, dtype=object)
                    first = str(dup[dup.duplicated()][0])
                    raise ConfigError(f"{label} names must be unique ({first!r} appears twice); merge or rename them.")
        ids = id_dtype(max(n_e, n_r))
        heads = heads.astype(ids, copy=False)
        rels = rels.astype(ids, copy=False)
        tails = tails.astype(ids, copy=False)
        if heads.size:
            dup = duplicate_facts(heads, rels, tails, n_e, n_r)
            if dup.any():
                keep = ~dup
                heads, rels, tails = heads[keep], rels[keep], tails[keep]
        # own the memory (inputs may be views of caller arrays that we are about to freeze)
        heads, rels, tails = (np.array(a, dtype=ids, copy=True) for a in (heads, rels, tails))
        return cls(name=name, entity_names=entity_names, relation_names=relation_names,
                   heads=heads, rels=rels, tails=tails)

    @classmethod
    def from_triples(cls, triples: Iterable[tuple[str, str, str]], name: str = "") -> "KG":
        """Build from (head, relation, tail) name triples; ids follow first appearance."""
        rows = list(triples)
        if any(len(row) != 3 for row in rows):
            bad = next(row for row in rows if len(row) != 3)
            raise ConfigError(f"each triple must be (head, relation, tail); got {bad!r}.")
        if any(not isinstance(x, str) for row in rows for x in row):
            raise ConfigError("triples must hold str names; convert ids to names or use KG.from_ids().")
        if rows:
            h, r, t = (np.array(col, dtype=object) for col in zip(*rows))
        else:
            h = r = t = np.empty(0, dtype=object)
        codes, entity_names = pd.factorize(np.concatenate([h, t]))
        rel_codes, relation_names = pd.factorize(r)
        n = h.size
        return cls._build(codes[:n], rel_codes, codes[n:], np.asarray(entity_names, dtype=object),
                          np.asarray(relation_names, dtype=object), name, check=False)

    @classmethod
    def from_ids(cls, heads, rels, tails, entity_names: Sequence[str], relation_names: Sequence[str],
                 name: str = "") -> "KG":
        """Build from integer id arrays plus the two vocabularies (id -> name)."""
        return cls._build(heads, rels, tails, entity_names, relation_names, name, check=True)

    @classmethod
    def load(cls, path, sep: str | None = None, name: str | None = None) -> "KG":
        """Read a fact file: one `head|relation|tail` or tab-separated fact a line.

        The separator is detected from the first fact line when `sep` is None. Fields are
        stripped of surrounding whitespace, blank lines are skipped, duplicate facts dropped.
        No quoting: quote characters are part of the names. Strings such as "NA" stay names.
        """
        path = Path(path)
        if not path.is_file():
            raise DatasetMissingError(f"KG file {path} not found: check the data directory (KGRAG_DATA_DIR) or the path.")
        name = path.stem if name is None else name
        heads, rels, tails, entity_names, relation_names = read_fact_file(path, sep)
        return cls._build(heads, rels, tails, entity_names, relation_names, name, check=False)

    @classmethod
    def load_cached(cls, path, sep: str | None = None, name: str | None = None) -> "KG":
        """`load()` through an .npz cache in settings.cache_dir("kg"), keyed by the file's path,
        size and modification time, so a large KG is parsed once and then reloads in seconds."""
        path = Path(path)
        if not path.is_file():
            raise DatasetMissingError(f"KG file {path} not found: check the data directory (KGRAG_DATA_DIR) or the path.")
        cached = cache_file(path, sep, name)
        if cached.is_file():
            try:
                return cls.load_npz(cached)
            except (ConfigError, OSError, ValueError, KeyError, zipfile.BadZipFile):
                cached.unlink(missing_ok=True)  # stale or damaged: rebuild below
        kg = cls.load(path, sep=sep, name=name)
        kg.save(cached)
        return kg

    # ------------------------------------------------------------------ binary cache
    def save(self, path) -> Path:
        """Write an uncompressed .npz cache (ids, names and indexes) atomically; returns the path."""
        return write_npz(self, path)

    @classmethod
    def load_npz(cls, path) -> "KG":
        """Reload a KG written by `save()` (no re-sorting: the indexes are stored)."""
        kwargs, (n_e, _, n_edges) = read_npz(path)
        kg = cls(**kwargs)
        if kg.num_edges != n_edges or kg._out_indptr.size != n_e + 1:
            raise ConfigError(f"corrupt KG cache {path}: array sizes disagree; delete it and rebuild.")
        return kg

    # ------------------------------------------------------------------ vocabularies
    def __repr__(self) -> str:
        return (f"KG(name={self.name!r}, entities={self.num_entities:,}, relations={self.num_relations:,}, "
                f"edges={self.num_edges:,})")

    def __len__(self) -> int:
        return self.num_edges

    def _entity_lookup(self) -> pd.Index:
        if self._entity_index is None:
            self._entity_index = pd.Index(self.entity_names, dtype=object)
        return self._entity_index

    def _relation_lookup(self) -> dict[str, int]:
        if self._relation_index is None:
            self._relation_index = {str(n): i for i, n in enumerate(self.relation_names)}
        return self._relation_index

    def has_entity(self, name: str) -> bool:
        return isinstance(name, str) and name in self._entity_lookup()

    def has_relation(self, name: str) -> bool:
        return isinstance(name, str) and name in self._relation_lookup()

    def _unknown_entity(self, name) -> ConfigError:
        tip = did_you_mean(name, self.entity_names, n=3) or "check spelling and case."
        return ConfigError(f"unknown entity {name!r} in KG {self.name!r}: {tip}")

    def entity_id(self, name: str) -> int:
        """Id of an entity name (ConfigError with close matches when unknown)."""
        if not isinstance(name, str):
            raise ConfigError(f"entity names are str (got {type(name).__name__} {name!r}); pass ids to the id-based methods.")
        try:
            return int(self._entity_lookup().get_loc(name))
        except KeyError:
            raise self._unknown_entity(name) from None

    def entity_ids(self, names) -> np.ndarray:
        """Ids of many entity names at once (vectorised; ConfigError naming the first unknown)."""
        names = [names] if isinstance(names, str) else list(names)
        if not names:
            return np.empty(0, dtype=np.int64)
        ids = self._entity_lookup().get_indexer(pd.Index(names, dtype=object))
        if (ids < 0).any():
            missing = [names[i] for i in np.flatnonzero(ids < 0)]
            err = self._unknown_entity(missing[0])
            if len(missing) > 1:
                err = ConfigError(f"{err} ({len(missing)} names unknown in all)")
            raise err
        return ids.astype(np.int64)

    def relation_id(self, name: str) -> int:
        """Id of a relation name (ConfigError listing close matches when unknown)."""
        lookup = self._relation_lookup()
        if isinstance(name, str) and name in lookup:
            return lookup[name]
        tip = did_you_mean(name, lookup, n=3, cutoff=0.5) or \
            f"known relations: {', '.join(list(lookup)[:12])}{' ...' if len(lookup) > 12 else ''}"
        raise ConfigError(f"unknown relation {name!r} in KG {self.name!r}: {tip}")

    def relation_ids(self, names) -> np.ndarray:
        return np.array([self.relation_id(n) for n in names], dtype=np.int64)

    # ------------------------------------------------------------------ degrees and sizes
    @property
    def out_degree(self) -> np.ndarray:
        return np.diff(self._out_indptr)

    @property
    def in_degree(self) -> np.ndarray:
        return np.diff(self._in_indptr)

    @property
    def degree(self) -> np.ndarray:
        """In + out degree (a self-loop counts twice)."""
        return self.out_degree + self.in_degree

    def nbytes(self) -> dict[str, int]:
        """Bytes held by the id arrays and indexes (names counted separately, as Python strings)."""
        sizes = {k: int(getattr(self, k).nbytes) for k in ("heads", "rels", "tails")}
        for side in ("out", "in"):
            sizes[f"{side}_index"] = sum(int(getattr(self, f"_{side}_{p}").nbytes)
                                         for p in ("order", "indptr", "gkeys", "gstarts"))
        sizes["arrays_total"] = sum(sizes.values())
        import sys

        sizes["names_approx"] = int(sum(sys.getsizeof(x) for x in self.entity_names[:10_000]) *
                                    max(self.num_entities, 1) / max(min(self.num_entities, 10_000), 1)
                                    + self.entity_names.nbytes + self.relation_names.nbytes)
        return sizes

    # ------------------------------------------------------------------ id validation
    def _as_entities(self, entities, what: str = "entity") -> np.ndarray:
        if isinstance(entities, str):
            raise ConfigError(f"{what} must be an entity id (int); map names with kg.entity_id({entities!r}).")
        arr = np.atleast_1d(np.asarray(entities))
        if arr.size == 0:
            return np.empty(0, dtype=np.int64)
        if arr.dtype == object and all(isinstance(x, str) for x in arr.ravel()):
            raise ConfigError(f"{what} must be entity ids (int); map names with kg.entity_ids(...).")
        if not np.issubdtype(arr.dtype, np.integer):
            raise ConfigError(f"{what} must be integer entity ids (got dtype {arr.dtype}).")
        arr = arr.astype(np.int64).reshape(-1)
        if arr.min() < 0 or arr.max() >= self.num_entities:
            raise ConfigError(f"{what} id out of range [0, {self.num_entities}): {int(arr[(arr < 0) | (arr >= self.num_entities)][0])}.")
        return arr

    def _as_relation(self, relation) -> int | None:
        if relation is None:
            return None
        if isinstance(relation, str):
            return self.relation_id(relation)
        if isinstance(relation, (int, np.integer)) and not isinstance(relation, bool):
            if not 0 <= int(relation) < self.num_relations:
                raise ConfigError(f"relation id {int(relation)} out of range [0, {self.num_relations}).")
            return int(relation)
        raise ConfigError(f"a relation is a name (str) or an id (int), got {relation!r}.")

    def _as_edges(self, edge_ids) -> np.ndarray:
        arr = np.atleast_1d(np.asarray(edge_ids)).reshape(-1)
        if arr.size == 0:
            return np.empty(0, dtype=np.int64)
        if not np.issubdtype(arr.dtype, np.integer):
            raise ConfigError(f"edge ids must be integers (got dtype {arr.dtype}).")
        arr = arr.astype(np.int64)
        if arr.min() < 0 or arr.max() >= self.num_edges:
            raise ConfigError(f"edge id out of range [0, {self.num_edges}).")
        return arr

    # ------------------------------------------------------------------ vectorised lookups
    def _edges_from(self, nodes: np.ndarray, relation: int | None, forward: bool):
        """All edges leaving (forward) or entering (backward) `nodes`, optionally of one relation.

        Returns (edge ids, node each edge was reached from, node at the other end), grouped by
        the position of the node in `nodes`, then by relation and neighbour id.
        """
        side = "out" if forward else "in"
        order = getattr(self, f"_{side}_order")
        if relation is None:
            indptr = getattr(self, f"_{side}_indptr")
            starts, ends = indptr[nodes], indptr[nodes + 1]
        else:
            gkeys = getattr(self, f"_{side}_gkeys")
            gstarts = getattr(self, f"_{side}_gstarts")
            if gkeys.size == 0 or nodes.size == 0:
                empty = np.empty(0, dtype=np.int64)
                return empty, empty, empty
            keys = nodes * max(self.num_relations, 1) + relation
            idx = np.searchsorted(gkeys, keys)
            idx[idx == gkeys.size] = 0
            hit = gkeys[idx] == keys
            idx = idx[hit]
            starts, ends = gstarts[idx], gstarts[idx + 1]
            nodes = nodes[hit]
        positions, owner = expand_ranges(starts, ends)
        edges = order[positions].astype(np.int64)
        src = nodes[owner]
        dst = (self.tails if forward else self.heads)[edges].astype(np.int64)
        return edges, src, dst

    def neighbors(self, entity: int, relation: int | str | None = None,
                  direction: str = "out") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(neighbour ids, relation ids, edge ids) around one entity.

        direction "out" follows head -> tail, "in" tail -> head, "both" gives out then in.
        Within a direction, results are sorted by relation id, then neighbour id.
        """
        if direction not in _DIRECTIONS:
            raise ConfigError(f"direction must be one of {_DIRECTIONS} (got {direction!r}).")
        if not isinstance(entity, (int, np.integer)) or isinstance(entity, bool):
            raise ConfigError(f"entity must be one entity id (int); got {entity!r} (names: use kg.entity_id()).")
        node = self._as_entities(entity)
        rel = self._as_relation(relation)
        parts = []
        for forward in ((True,) if direction == "out" else (False,) if direction == "in" else (True, False)):
            edges, _, dst = self._edges_from(node, rel, forward)
            parts.append((dst, edges))
        nbrs = np.concatenate([p[0] for p in parts])
        edges = np.concatenate([p[1] for p in parts])
        return nbrs, self.rels[edges].astype(np.int64), edges

    def _parse_step(self, step) -> tuple[int | None, bool]:
        if isinstance(step, (str, int, np.integer)):
            return self._as_relation(step), True
        try:
            rel, forward = step
        except (TypeError, ValueError):
            raise ConfigError(f"a chain step is (relation, forward) such as ('directed_by', False); got {step!r}.") from None
        if not isinstance(forward, (bool, np.bool_)):
            raise ConfigError(f"the direction of a chain step is a bool (True = head->tail); got {forward!r}.")
        return self._as_relation(rel), bool(forward)

    def follow_chain(self, start, chain: Sequence[tuple[str | int, bool]],
                     max_paths_facts: int | None = None, exclude_start: bool = False) -> ChainResult:
        """Follow a relation chain from start entities and keep only facts on complete paths.

        Each step is (relation name or id, forward); forward=False walks an edge from its tail to
        its head. A relation of None matches any relation. Paths are walks: an entity may repeat
        (so a 2-step chain can lead back to the start). With `exclude_start`, start entities are
        not accepted as endpoints. `max_paths_facts` caps the facts expanded at each step (kept in
        frontier order); when it bites, the result holds only paths through the kept facts and
        `truncated` is True.
        """
        frontier = np.unique(self._as_entities(start, "start"))
        steps = [self._parse_step(s) for s in chain]
        if max_paths_facts is not None and max_paths_facts < 0:
            raise ConfigError(f"max_paths_facts must be >= 0 or None (got {max_paths_facts}).")
        frontiers = [frontier]
        expanded: list[tuple[np.ndarray, bool]] = []
        truncated = False
        for rel, forward in steps:
            edges, _, dst = self._edges_from(frontier, rel, forward)
            if max_paths_facts is not None and edges.size > max_paths_facts:
                edges, dst = edges[:max_paths_facts], dst[:max_paths_facts]
                truncated = True
            expanded.append((edges, forward))
            frontier = np.unique(dst)
            frontiers.append(frontier)
        ends = frontier
        if exclude_start and steps:
            ends = ends[~in_sorted(ends, frontiers[0])]
        return complete_paths(self.heads, self.tails, expanded, ends, frontiers, truncated)

    def prune_chain(self, chain: Sequence, step_edge_ids: Sequence[np.ndarray], ends, frontiers: list[np.ndarray],
                    truncated: bool = False) -> ChainResult:
        """The complete paths of an already followed chain that end in `ends` (sorted unique ids).

        `step_edge_ids[i]` are facts step i of `chain` expanded from its frontier (facts that lead
        nowhere are pruned; facts leaving other entities would be kept, so do not add any). This is
        the backward pruning of `follow_chain`, for callers that filter the steps themselves (a
        topic policy, a conjunction of branches).
        """
        directions = [self._parse_step(step)[1] for step in chain]
        ends = np.unique(np.asarray(ends, dtype=np.int64))
        return complete_paths(self.heads, self.tails, list(zip(step_edge_ids, directions)), ends, frontiers, truncated)

    def incident_edges(self, entities) -> np.ndarray:
        """Sorted unique ids of facts touching any of `entities` (either direction)."""
        nodes = np.unique(self._as_entities(entities))
        out_e = self._edges_from(nodes, None, True)[0]
        in_e = self._edges_from(nodes, None, False)[0]
        return np.unique(np.concatenate([out_e, in_e]))

    def khop_edges(self, seeds, k: int, max_edges: int | None = None) -> np.ndarray:
        """Sorted ids of the facts within k hops of the seeds, ignoring direction.

        Hop 1 is every fact touching a seed; hop i adds the facts touching entities first reached
        at hop i-1. With `max_edges`, earlier hops win and the last hop is cut in edge-id order.
        """
        if k < 0:
            raise ConfigError(f"k must be >= 0 (got {k}).")
        if max_edges is not None and max_edges < 0:
            raise ConfigError(f"max_edges must be >= 0 or None (got {max_edges}).")
        visited = np.unique(self._as_entities(seeds, "seeds"))
        frontier = visited
        collected = np.empty(0, dtype=np.int64)
        for _ in range(k):
            if frontier.size == 0:
                break
            new = self.incident_edges(frontier)
            new = new[~in_sorted(new, collected)]
            if max_edges is not None and collected.size + new.size > max_edges:
                new = new[: max_edges - collected.size]
                collected = np.union1d(collected, new)
                break
            collected = np.union1d(collected, new)
            ends = np.unique(np.concatenate([self.heads[new], self.tails[new]]).astype(np.int64))
            frontier = ends[~in_sorted(ends, visited)]
            visited = np.union1d(visited, frontier)
        return collected

    def khop_entities(self, seeds, k: int) -> np.ndarray:
        """Sorted ids of entities within k hops of the seeds, ignoring direction (seeds included)."""
        edges = self.khop_edges(seeds, k)
        seeds = self._as_entities(seeds, "seeds")
        return np.unique(np.concatenate([seeds, self.heads[edges], self.tails[edges]]).astype(np.int64))

    def edges_between(self, a, b, directed: bool = False) -> np.ndarray:
        """Sorted ids of facts a -> b (and b -> a unless `directed`); a and b are ids or id arrays."""
        sa = np.unique(self._as_entities(a, "a"))
        sb = np.unique(self._as_entities(b, "b"))
        edges, _, dst = self._edges_from(sa, None, True)
        found = [edges[in_sorted(dst, sb)]]
        if not directed:
            edges, _, dst = self._edges_from(sb, None, True)
            found.append(edges[in_sorted(dst, sa)])
        return np.unique(np.concatenate(found))

    # ------------------------------------------------------------------ export
    def triples(self, edge_ids) -> list[tuple[str, str, str]]:
        """(head name, relation name, tail name) for each edge id, in the order given."""
        e = self._as_edges(edge_ids)
        h = self.entity_names[self.heads[e]]
        r = self.relation_names[self.rels[e]]
        t = self.entity_names[self.tails[e]]
        return list(zip(h.tolist(), r.tolist(), t.tolist()))

    def verbalize(self, edge_ids, style: str = "tuple") -> str:
        """Facts as text, one a line: "(h, r, t)" or, with style="sentence", "h r t" (underscores -> spaces)."""
        if style == "tuple":
            return "\n".join(f"({h}, {r}, {t})" for h, r, t in self.triples(edge_ids))
        if style == "sentence":
            return "\n".join(" ".join(_sentence_part(x) for x in tr) for tr in self.triples(edge_ids))
        raise ConfigError(f"style must be 'tuple' or 'sentence' (got {style!r}).")

    def to_networkx(self, edge_ids) -> "networkx.MultiDiGraph":
        """The facts as a networkx MultiDiGraph: nodes are entity ids with attr `name`; edges are
        keyed by edge id with attrs `relation` (name) and `edge_id`."""
        import networkx as nx

        e = np.unique(self._as_edges(edge_ids))
        graph = nx.MultiDiGraph(name=self.name)
        nodes = np.unique(np.concatenate([self.heads[e], self.tails[e]]))
        graph.add_nodes_from((int(n), {"name": str(self.entity_names[n])}) for n in nodes)
        graph.add_edges_from(
            (int(h), int(t), int(i), {"relation": str(self.relation_names[r]), "edge_id": int(i)})
            for i, h, r, t in zip(e.tolist(), self.heads[e].tolist(), self.rels[e].tolist(), self.tails[e].tolist())
        )
        return graph

    def subgraph_kg(self, edge_ids, name: str | None = None) -> "KG":
        """A new, compact KG of the given facts (ids renumbered; names, relative order kept)."""
        e = np.unique(self._as_edges(edge_ids))
        ents = np.unique(np.concatenate([self.heads[e], self.tails[e]]))
        rels = np.unique(self.rels[e])
        return KG._build(np.searchsorted(ents, self.heads[e]), np.searchsorted(rels, self.rels[e]),
                         np.searchsorted(ents, self.tails[e]), self.entity_names[ents], self.relation_names[rels],
                         self.name if name is None else name, check=False)
