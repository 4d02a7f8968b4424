"""FactKG (claims verified against DBpedia) in its released pickle format, read safely.

Files (github.com/jiho283/FactKG, README "Dataset" and "Data resource"; all pickles):
* `factkg_{train,dev,test}.pickle`: dict claim -> {'Label': [bool], 'Entity_set': [entity, ...],
  'Evidence': {entity: [[rel, ...], ...]}, 'types': [str, ...]}; the test file has no 'Evidence'.
* `dbpedia_2015_undirected.pickle` (and `_light`, only the relations FactKG uses): dict entity ->
  relation -> [neighbour, ...]. The release made DBpedia undirected by adding, for every fact
  (h, r, t), the entry t -> '~r' -> h.
* `relations_for_final.pickle` (FactKG repo, with_evidence/retrieve/model/relation_predict/): the
  relation names FactKG's baseline keeps; SimGRAG filters the full graph with it.

Claims become `KGQuestion`s (answers ["True"] / ["False"], the entity set as topic entities, the
reasoning type as qtype, the raw types and evidence in meta; `hops` is the longest evidence path,
or, where the file gives no evidence (test), 2 for multi-hop claims and 1 otherwise). The graph
becomes a directed `KG`:

    facts = {(e, r, n) : n in G[e][r], r without '~'}  U  {(n, r, e) : n in G[e]['~' + r]}

i.e. a '~r' entry is turned back into the forward fact, so a fact survives even where only one of
its two directions was stored; duplicates are dropped. The relation '22-rdf-syntax-ns#type' is not
a fact: it becomes `EntityTypes` (type -> entities; Wikidata ids such as 'Q5' are left out), which
SimGRAG uses for pattern nodes that have no known entity. The build works on flat arrays
(one pass over the (entity, relation) groups, neighbours flattened in C, ids by pandas.factorize)
and is cached as .npz under settings.cache_dir("kg"), so the 10M-edge graph is converted once.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ConfigError, DatasetMissingError, IntegrityError
from ..kg import KG
from .items import KGQuestion
from .safe_pickle import safe_load

# defaultdict is data-only (its factory must itself be an admitted builtin); admitted because the
# published pickles may have been written from defaultdicts
_ALLOW = ("collections.defaultdict", "collections.OrderedDict")

__all__ = ["CLAIM_FILES", "GRAPH_FILES", "RELATION_FILTER_FILE", "TYPE_RELATION", "REASONING_TYPES",
           "EntityTypes", "reasoning_type", "read_claims", "claims_to_questions", "build_dbpedia_kg",
           "load_dbpedia", "find_graph"]

CLAIM_FILES = {"train": "factkg_train.pickle", "dev": "factkg_dev.pickle", "test": "factkg_test.pickle"}
GRAPH_FILES = {"light": "dbpedia_2015_undirected_light.pickle", "full": "dbpedia_2015_undirected.pickle"}
RELATION_FILTER_FILE = "relations_for_final.pickle"
TYPE_RELATION = "22-rdf-syntax-ns#type"
_REVERSE = "~"
_WIKIDATA_ID = re.compile(r"^Q\d+$")
_CACHE_VERSION = 1

#: FactKG's reasoning-type tags, in the order its own baseline resolves a claim with several tags
#: (with_evidence/classifier/baseline.py: negation, num1, multi hop, multi claim, existence).
REASONING_TYPES = (("negation", "negation"), ("num1", "one-hop"), ("multi hop", "multi-hop"),
                   ("multi claim", "conjunction"), ("existence", "existence"))
_STYLES = ("written", "coll:model", "coll:presup")


def reasoning_type(types: list[str]) -> str | None:
    """The one reasoning type of a claim from its tags (None when no reasoning tag is present)."""
    tags = set(types)
    for tag, name in REASONING_TYPES:
        if tag in tags:
            return name
    return None


@dataclass(frozen=True)
class EntityTypes:
    """DBpedia types of the KG's entities: type names and, per type, sorted entity ids (CSR)."""

    names: np.ndarray  # type names (object array)
    indptr: np.ndarray  # len(names) + 1
    entity_ids: np.ndarray  # entity ids grouped by type

    def __len__(self) -> int:
        return int(self.names.size)

    def __repr__(self) -> str:
        return f"EntityTypes({self.names.size:,} types, {self.entity_ids.size:,} assignments)"

    def entities_of(self, type_name: str) -> np.ndarray:
        """Entity ids of one type (empty when the type is unknown)."""
        hit = np.flatnonzero(self.names == type_name)
        if hit.size == 0:
            return np.empty(0, dtype=np.int64)
        i = int(hit[0])
        return self.entity_ids[self.indptr[i]:self.indptr[i + 1]]

    def types_of(self, entity_id: int) -> list[str]:
        """Type names of one entity id."""
        pos = np.flatnonzero(self.entity_ids == int(entity_id))
        owners = np.searchsorted(self.indptr, pos, side="right") - 1
        return [str(self.names[i]) for i in owners]


# ----------------------------------------------------------------------------- claims


def read_claims(path: Path) -> dict:
    """A claim file as the plain dict it holds (safe unpickling; see safe_pickle)."""
    data = safe_load(path, allow=_ALLOW)
    if not isinstance(data, dict):
        raise IntegrityError(f"{path}: expected a dict claim -> record, found {type(data).__name__}; re-fetch it.")
    return data


def _label(record: dict, claim: str, path: Path) -> bool:
    label = record.get("Label")
    if isinstance(label, (list, tuple)) and len(label) == 1 and isinstance(label[0], bool):
        return label[0]
    if isinstance(label, bool):
        return label
    raise IntegrityError(f"{path}: claim {claim[:60]!r} has Label {label!r}, expected [True] or [False]; re-fetch it.")


def _evidence_hops(evidence: dict | None) -> int | None:
    if not evidence:
        return None
    lengths = [len(p) for paths in evidence.values() for p in (paths or []) if isinstance(p, (list, tuple))]
    return max(lengths) if lengths else None


def claims_to_questions(data: dict, split: str, path: Path, prefix: str = "factkg") -> list[KGQuestion]:
    """FactKG records as KGQuestions (answers ["True"]/["False"]; topic entities = Entity_set)."""
    out = []
    for i, (claim, record) in enumerate(data.items()):
        if not isinstance(record, dict):
            raise IntegrityError(f"{path}: claim {str(claim)[:60]!r} maps to {type(record).__name__}, not a dict.")
        label = _label(record, str(claim), path)
        types = [str(t) for t in record.get("types", [])]
        evidence = record.get("Evidence")
        hops = _evidence_hops(evidence)
        style = next((t for t in types if t in _STYLES), None)
        out.append(KGQuestion(
            qid=f"{prefix}-{split}-{i:06d}",
            question=str(claim),
            topic_entities=[str(e) for e in record.get("Entity_set", [])],
            answers=["True" if label else "False"],
            chain=None,
            hops=hops if hops is not None else (2 if "multi hop" in types else 1),
            qtype=reasoning_type(types),
            meta={"label": label, "types": types, "style": style, "substitution": "substitution" in types,
                  "evidence": evidence, "file": path.name, "index": i},
        ))
    return out


# ----------------------------------------------------------------------------- the graph


def find_graph(root: Path, graph: str = "auto") -> Path:
    """The DBpedia pickle to read: 'light', 'full', or 'auto' (light when present, else full)."""
    if graph not in ("auto", "light", "full"):
        raise ConfigError(f"graph must be 'auto', 'light' or 'full' (got {graph!r}).")
    order = ("light", "full") if graph == "auto" else (graph,)
    for key in order:
        path = Path(root) / GRAPH_FILES[key]
        if path.is_file():
            return path
    names = " or ".join(GRAPH_FILES[k] for k in order)
    raise DatasetMissingError(f"no {names} in {root}")


def build_dbpedia_kg(graph: dict, relations: set[str] | None = None, type_relation: str | None = TYPE_RELATION,
                     name: str = "dbpedia") -> tuple[KG, EntityTypes, dict]:
    """Directed KG (and entity types) from the undirected entity -> relation -> neighbours dict.

    `relations` keeps only those relation names (forward names, without '~'); the type relation is
    never a fact. Returns (kg, types, stats) where stats counts the stored entries and how many facts
    were seen only in their forward or only in their reverse ('~') form.
    """
    keys, g_owner, g_rel, lengths, neighbours = _relation_groups(graph)
    heads, rel, tails, rev, entity_names, base_names = _directed_entries(keys, g_owner, g_rel, lengths, neighbours)
    type_id = None
    if type_relation is not None:
        hit = np.flatnonzero(base_names == type_relation)
        type_id = int(hit[0]) if hit.size else None
    types = _types_of(heads, rel, tails, rev, entity_names, type_id)
    keep_rel = np.ones(base_names.size, dtype=bool)
    if type_id is not None:
        keep_rel[type_id] = False
    if relations is not None:
        keep_rel &= np.isin(base_names, np.asarray(sorted(relations), dtype=object))
    fact = keep_rel[rel]
    heads, rel, tails, rev = heads[fact], rel[fact], tails[fact], rev[fact]
    forward_only, reverse_only = _one_way_facts(heads, rel, tails, rev, entity_names.size, base_names.size)
    stats = {"stored_entries": int(lengths.sum()), "entity_keys": len(keys),
             "facts_forward_only": forward_only, "facts_reverse_only": reverse_only,
             "type_assignments": int(types.entity_ids.size)}
    # compact ids: relations that are kept, entities that are in a fact or have a type
    used = np.flatnonzero(keep_rel)
    remap = np.full(base_names.size, -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    ents = np.unique(np.concatenate([heads, tails, types.entity_ids]).astype(np.int64))
    types = EntityTypes(types.names, types.indptr, np.searchsorted(ents, types.entity_ids))
    kg = KG.from_ids(np.searchsorted(ents, heads), remap[rel], np.searchsorted(ents, tails), entity_names[ents],
                     base_names[used], name=name)
    return kg, types, stats


def _relation_groups(graph: dict):
    """The dict read one (entity, relation) group at a time: (keys, group owner index, group relation
    name, group lengths, all neighbours concatenated); neighbours stay in their lists until the end."""
    if not isinstance(graph, dict):
        raise IntegrityError("the DBpedia pickle must hold a dict entity -> relation -> neighbours "
                             f"(got {type(graph).__name__}).")
    keys = list(graph.keys())
    g_owner: list[int] = []
    g_rel: list[str] = []
    g_len: list[int] = []
    lists: list = []
    for i, e in enumerate(keys):
        rels = graph[e]
        if not isinstance(rels, dict):
            raise IntegrityError(f"the DBpedia pickle maps {str(e)[:60]!r} to {type(rels).__name__}, not a dict.")
        for r, nbrs in rels.items():
            g_owner.append(i)
            g_rel.append(r)
            g_len.append(len(nbrs))
            lists.append(nbrs)
    lengths = np.asarray(g_len, dtype=np.int64)
    neighbours = np.fromiter(itertools.chain.from_iterable(lists), dtype=object, count=int(lengths.sum()))
    return keys, np.asarray(g_owner, dtype=np.int64), g_rel, lengths, neighbours


def _directed_entries(keys, g_owner, g_rel, lengths, neighbours):
    """Every stored entry as a directed edge: (heads, forward relation ids, tails, was-reverse,
    entity names, forward relation names). A '~r' entry of x listing y is the fact y -r-> x."""
    rel_codes, rel_names = pd.factorize(np.asarray(g_rel, dtype=object))
    rel_names = np.asarray(rel_names, dtype=object)
    is_rev = np.fromiter((str(r).startswith(_REVERSE) for r in rel_names), dtype=bool, count=rel_names.size)
    base = np.array([str(r)[1:] if rev else str(r) for r, rev in zip(rel_names, is_rev)], dtype=object)
    base_codes, base_names = pd.factorize(base)
    base_names = np.asarray(base_names, dtype=object)
    # entity vocabulary: the dict's keys first, then neighbours never used as keys
    codes, entity_names = pd.factorize(np.concatenate([np.asarray(keys, dtype=object), neighbours]))
    entity_names = np.asarray(entity_names, dtype=object)
    if entity_names.size and not all(isinstance(x, str) for x in entity_names[:1000]):
        raise IntegrityError("DBpedia entity names must be strings; the pickle holds something else.")
    owner = np.repeat(codes[:len(keys)][g_owner], lengths)
    nb_codes = codes[len(keys):]
    rel = np.repeat(base_codes[rel_codes], lengths)
    rev = np.repeat(is_rev[rel_codes], lengths)
    return np.where(rev, nb_codes, owner), rel, np.where(rev, owner, nb_codes), rev, entity_names, base_names


def _types_of(heads, rel, tails, rev, entity_names, type_id: int | None) -> EntityTypes:
    """Entity types from the forward entries of the type relation (Wikidata ids are not types)."""
    if type_id is None:
        return _entity_types(np.empty(0, dtype=np.int64), np.empty(0, dtype=object))
    sel = (rel == type_id) & ~rev
    t_ent, t_name = heads[sel], entity_names[tails[sel]]
    keep = np.fromiter((not _WIKIDATA_ID.match(str(x)) for x in t_name), dtype=bool, count=t_name.size)
    return _entity_types(t_ent[keep], t_name[keep])


def _one_way_facts(heads, rel, tails, rev, n_entities: int, n_relations: int) -> tuple[int, int]:
    """How many facts were stored only forwards, and how many only in their reverse ('~') form."""
    key = (heads.astype(np.int64) * max(n_relations, 1) + rel) * max(n_entities, 1) + tails
    fwd_keys = np.unique(key[~rev])
    rev_keys = np.unique(key[rev])
    return (int(np.setdiff1d(fwd_keys, rev_keys, assume_unique=True).size),
            int(np.setdiff1d(rev_keys, fwd_keys, assume_unique=True).size))


def _entity_types(entity_ids: np.ndarray, type_names: np.ndarray) -> EntityTypes:
    if entity_ids.size == 0:
        return EntityTypes(np.empty(0, dtype=object), np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int64))
    codes, names = pd.factorize(type_names, sort=True)
    order = np.lexsort((entity_ids, codes))
    codes, ents = codes[order], entity_ids[order].astype(np.int64)
    pair = np.ones(codes.size, dtype=bool)
    pair[1:] = (codes[1:] != codes[:-1]) | (ents[1:] != ents[:-1])
    codes, ents = codes[pair], ents[pair]
    indptr = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=len(names)), out=indptr[1:])
    return EntityTypes(np.asarray(names, dtype=object), indptr, ents)


def _cache_paths(path: Path, relations_path: Path | None, type_relation: str | None) -> tuple[Path, Path]:
    from ..settings import cache_dir

    parts = []
    for p in (path, relations_path):
        if p is not None:
            st = p.stat()
            parts.append(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}")
    ident = "|".join(parts) + f"|{type_relation!r}|v{_CACHE_VERSION}"
    digest = hashlib.sha256(ident.encode("utf-8")).hexdigest()[:16]
    base = cache_dir("kg")
    return base / f"{path.stem}-{digest}.npz", base / f"{path.stem}-{digest}.types.npz"


def _save_types(types: EntityTypes, stats: dict, path: Path) -> None:
    """Entity types and the build's counts beside the KG's .npz (no pickles: plain arrays and json)."""
    import io
    import json

    from ..fileio import atomic_write_bytes

    blob = "\x00".join(types.names.tolist()).encode("utf-8")
    buf = io.BytesIO()
    np.savez(buf, names=np.frombuffer(blob, dtype=np.uint8), count=np.array(types.names.size),
             indptr=types.indptr, entity_ids=types.entity_ids,
             stats=np.frombuffer(json.dumps(stats).encode("utf-8"), dtype=np.uint8))
    atomic_write_bytes(path, buf.getvalue())


def _load_types(path: Path) -> tuple[EntityTypes, dict]:
    import json

    with np.load(path, allow_pickle=False) as data:
        n = int(data["count"])
        names = data["names"].tobytes().decode("utf-8").split("\x00") if n else []
        if len(names) != n:
            raise IntegrityError(f"corrupt type cache {path}; delete it.")
        stats = json.loads(data["stats"].tobytes().decode("utf-8"))
        return EntityTypes(np.asarray(names, dtype=object), data["indptr"], data["entity_ids"]), stats


def load_dbpedia(path: Path, relations_path: Path | None = None, type_relation: str | None = TYPE_RELATION,
                 cache: bool = True) -> tuple[KG, EntityTypes, dict]:
    """The DBpedia pickle as (KG, EntityTypes, info), through an .npz cache keyed by the files' identity."""
    path = Path(path)
    if not path.is_file():
        raise DatasetMissingError(f"file {path} not found")
    if relations_path is not None and not Path(relations_path).is_file():
        raise DatasetMissingError(f"file {relations_path} not found")
    kg_cache, types_cache = _cache_paths(path, relations_path, type_relation)
    info = {"kg_file": path.name, "relation_filter": Path(relations_path).name if relations_path else None}
    if cache and kg_cache.is_file() and types_cache.is_file():
        try:
            types, stats = _load_types(types_cache)
            return KG.load_npz(kg_cache), types, {**info, **stats, "kg_cache": str(kg_cache)}
        except (ConfigError, IntegrityError, OSError, ValueError, KeyError):
            kg_cache.unlink(missing_ok=True)
            types_cache.unlink(missing_ok=True)
    graph = safe_load(path, allow=_ALLOW)
    relations = None
    if relations_path is not None:
        rel_data = safe_load(relations_path, allow=_ALLOW)
        if not isinstance(rel_data, (list, tuple, set, frozenset)):
            raise IntegrityError(f"{relations_path}: expected a list of relation names; re-fetch it.")
        relations = {str(r).lstrip(_REVERSE) for r in rel_data}
    kg, types, stats = build_dbpedia_kg(graph, relations, type_relation, name=path.stem)
    del graph
    if cache:
        kg.save(kg_cache)
        _save_types(types, stats, types_cache)
    return kg, types, {**info, **stats}
