"""A directed knowledge graph held as flat integer arrays, built for 10M-edge graphs.

Entities and relations have integer ids and name <-> id vocabularies. Every fact (edge) has an
id; `heads[e]`, `rels[e]`, `tails[e]` describe edge `e`. Two compressed sparse row (CSR) indexes
serve lookups in both directions:

* out-index: edge ids sorted by (head, relation, tail), with `indptr` per head and one group
  per (head, relation) pair, so "edges of relation r leaving entity x" is one binary search;
* in-index: the same sorted by (tail, relation, head).

Traversals (relation chains, k-hop neighbourhoods) work a whole frontier at a time with numpy
range expansion (`np.repeat` / `cumsum`), so there is no Python loop per edge anywhere.
"""

from __future__ import annotations

import difflib
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np
import pandas as pd

from .errors import ConfigError, DatasetMissingError

if TYPE_CHECKING:  # pragma: no cover
    import networkx

__all__ = ["KG", "ChainResult", "NPZ_FORMAT_VERSION"]

NPZ_FORMAT_VERSION = 1
_DIRECTIONS = ("out", "in", "both")
_INT64_LIMIT = 2**62  # keep composite sort keys well inside int64
_NAME_SEP = "\x00"  # separator of the packed name blob in the npz cache


@dataclass(frozen=True)
class ChainResult:
    """What following a relation chain found.

    reached:       sorted unique entity ids at the end of some complete path.
    edge_ids:      sorted unique ids of the facts that lie on at least one complete path from a
                   start entity to a reached entity (dead-end branches are pruned away).
    frontiers:     entity ids touched before pruning: frontiers[0] is the start set and
                   frontiers[i] the entities reached after step i (len == len(chain) + 1).
    step_edge_ids: per step, the facts of that step that lie on a complete path.
    step_entities: per position, the entities that lie on a complete path (pruned frontiers;
                   step_entities[0] are the start entities that derive something).
    truncated:     True when `max_paths_facts` cut a step short (the result is then a subset).
    """

    reached: np.ndarray
    edge_ids: np.ndarray
    frontiers: list[np.ndarray]
    step_edge_ids: list[np.ndarray] = field(default_factory=list)
    step_entities: list[np.ndarray] = field(default_factory=list)
    truncated: bool = False

    @property
    def num_facts(self) -> int:
        return int(self.edge_ids.size)

    @property
    def derivable(self) -> bool:
        """True when at least one complete path exists."""
        return bool(self.reached.size)


# ----------------------------------------------------------------------------- array helpers


def _expand_ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate the integer ranges [starts[i], ends[i]) and say which i each position came from."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(ends, dtype=np.int64) - starts
    total = int(lengths.sum()) if lengths.size else 0
    if total == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    owner = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    offsets = np.cumsum(lengths) - lengths
    positions = np.arange(total, dtype=np.int64) + np.repeat(starts - offsets, lengths)
    return positions, owner


def _in_sorted(values: np.ndarray, sorted_unique: np.ndarray) -> np.ndarray:
    """Membership of `values` in a sorted unique array (binary search; no hash table)."""
    if sorted_unique.size == 0 or values.size == 0:
        return np.zeros(values.shape, dtype=bool)
    idx = np.searchsorted(sorted_unique, values)
    idx[idx == sorted_unique.size] = 0
    return sorted_unique[idx] == values


def _id_dtype(n: int) -> type:
    return np.int32 if n < 2**31 - 1 else np.int64


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def _group_starts(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique keys of a sorted array and the start of each run (plus a final end sentinel)."""
    n = sorted_keys.size
    if n == 0:
        return np.empty(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    keys = sorted_keys[starts].astype(np.int64, copy=False)
    return keys, np.append(starts, n).astype(np.int64)


def _pack_names(names: np.ndarray, what: str) -> np.ndarray:
    joined = _NAME_SEP.join(names.tolist())
    if joined.count(_NAME_SEP) != max(len(names) - 1, 0):
        raise ConfigError(f"cannot save: a {what} name contains a NUL character; rename it before calling KG.save().")
    return np.frombuffer(joined.encode("utf-8"), dtype=np.uint8)


def _unpack_names(blob: np.ndarray, count: int) -> np.ndarray:
    if count == 0:
        return np.empty(0, dtype=object)
    parts = blob.tobytes().decode("utf-8").split(_NAME_SEP)
    if len(parts) != count:
        raise ConfigError(f"corrupt KG cache: expected {count} names, found {len(parts)}; delete the .npz and rebuild it.")
    return np.array(parts, dtype=object)


def _close_matches(name: str, names: np.ndarray, n: int = 3) -> list[str]:
    """A few similar names for an error hint (bounded work even for millions of names)."""
    if names.size == 0:
        return []
    folded = name.casefold()
    pool = names
    if names.size > 50_000:
        lowered = pd.Series(names, dtype=object).str.casefold()
        exact = names[(lowered == folded).to_numpy()]
        if exact.size:
            return [str(x) for x in exact[:n]]
        prefix = folded[:2]
        pool = names[lowered.str.startswith(prefix).to_numpy()][:50_000] if prefix else names[:0]
    else:
        exact = [str(x) for x in pool if str(x).casefold() == folded]
        if exact:
            return exact[:n]
    return difflib.get_close_matches(name, [str(x) for x in pool], n=n, cutoff=0.6)


def _sentence_part(text: str) -> str:
    return text.replace("_", " ")


# ----------------------------------------------------------------------------- text reading


def _first_fact_line(path: Path) -> str | None:
    """The first non-blank line of a text file, or None when it holds no fact at all."""
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.strip():
                return line
    return None


def _detect_separator(line: str, path: Path) -> str:
    if "\t" in line:
        return "\t"
    if "|" in line:
        return "|"
    raise ConfigError(
        f"cannot detect the separator of {path}: the first fact line has neither a tab nor '|'; pass sep= explicitly."
    )


def _read_columns(path: Path, sep: str):
    """Three stripped string columns as pyarrow arrays (pyarrow's multi-threaded C++ CSV reader; pyarrow is a
    core dependency)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    bad: list[str] = []

    def on_bad_row(row) -> str:
        if not row.text.replace(sep, "").strip():
            return "skip"  # a line of blanks and separators only counts as blank
        bad.append(row.text)
        return "error"

    try:
        table = pacsv.read_csv(
            str(path),
            read_options=pacsv.ReadOptions(column_names=["h", "r", "t"], block_size=1 << 24),
            parse_options=pacsv.ParseOptions(
                delimiter=sep, quote_char=False, escape_char=False, newlines_in_values=False,
                ignore_empty_lines=True, invalid_row_handler=on_bad_row,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.large_string() for c in "hrt"}, strings_can_be_null=False,
                quoted_strings_can_be_null=False, null_values=[],
            ),
        )
    except pa.ArrowInvalid as exc:
        detail = f"bad line {bad[0][:80]!r}" if bad else str(exc).splitlines()[0][:120]
        raise ConfigError(
            f"{path} is not a 3-column fact file with separator {sep!r} ({detail}); fix the line or pass sep=."
        ) from exc
    return [pc.utf8_trim_whitespace(table.column(c).combine_chunks()) for c in "hrt"]


def _encode_columns(cols, path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Drop blank rows, check for empty fields, and factorise names to ids (first-appearance order).

    `cols` are the three pyarrow string arrays of `_read_columns`."""
    if len(cols[0]) == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty, np.empty(0, dtype=object), np.empty(0, dtype=object)
    import pyarrow as pa
    import pyarrow.compute as pc

    lens = [pc.utf8_length(c) for c in cols]
    nonempty = [pc.greater(n, 0) for n in lens]
    any_field = pc.or_(pc.or_(nonempty[0], nonempty[1]), nonempty[2])
    all_fields = pc.and_(pc.and_(nonempty[0], nonempty[1]), nonempty[2])
    if not pc.all(pc.equal(any_field, all_fields)).as_py():
        row = int(pc.index(pc.not_equal(any_field, all_fields), True).as_py())
        shown = " | ".join(str(c[row].as_py()) for c in cols)
        raise ConfigError(f"{path}: a fact has an empty head, relation or tail ({shown!r}); fix or remove that line.")
    if not pc.all(any_field).as_py():
        cols = [c.filter(any_field) for c in cols]
    ents = pa.concat_arrays([cols[0], cols[2]]).dictionary_encode()
    codes = ents.indices.to_numpy(zero_copy_only=False)
    entity_names = np.asarray(ents.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    rel_enc = cols[1].dictionary_encode()
    rels = rel_enc.indices.to_numpy(zero_copy_only=False)
    relation_names = np.asarray(rel_enc.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    n = codes.size // 2
    return codes[:n], np.asarray(rels), codes[n:], entity_names, relation_names


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
        self.entity_names = _frozen(np.asarray(entity_names, dtype=object))
        self.relation_names = _frozen(np.asarray(relation_names, dtype=object))
        self.num_entities = int(self.entity_names.size)
        self.num_relations = int(self.relation_names.size)
        self.heads = _frozen(heads)
        self.rels = _frozen(rels)
        self.tails = _frozen(tails)
        self.num_edges = int(heads.size)
        self._entity_index: pd.Index | None = None
        self._relation_index: dict[str, int] | None = None
        if index is None:
            index = self._build_index()
        for key, arr in index.items():
            setattr(self, "_" + key, _frozen(arr))

    def _build_index(self) -> dict[str, np.ndarray]:
        """CSR out/in orders, per-entity indptr and per-(entity, relation) groups."""
        n_e, n_r, n_edges = self.num_entities, self.num_relations, self.num_edges
        order_dtype = _id_dtype(n_edges)
        index: dict[str, np.ndarray] = {}
        for side, src, dst in (("out", self.heads, self.tails), ("in", self.tails, self.heads)):
            src64 = src.astype(np.int64)
            group = src64 * max(n_r, 1) + self.rels
            if max(n_e, 1) * max(n_r, 1) * max(n_e, 1) < _INT64_LIMIT:
                order = np.argsort(group * max(n_e, 1) + dst)  # keys are unique: any sort is exact
            else:  # pragma: no cover - only for astronomically large vocabularies
                order = np.lexsort((dst, self.rels, src))
            gkeys, gstarts = _group_starts(group[order])
            del group
            index[f"{side}_order"] = order.astype(order_dtype, copy=False)
            counts = np.bincount(src64, minlength=n_e) if n_edges else np.zeros(n_e, dtype=np.int64)
            indptr = np.zeros(n_e + 1, dtype=np.int64)
            np.cumsum(counts, out=indptr[1:])
            index[f"{side}_indptr"] = indptr
            index[f"{side}_gkeys"] = gkeys
            index[f"{side}_gstarts"] = gstarts
        return index

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
        id_dtype = _id_dtype(max(n_e, n_r))
        heads = heads.astype(id_dtype, copy=False)
        rels = rels.astype(id_dtype, copy=False)
        tails = tails.astype(id_dtype, copy=False)
        if heads.size:
            if max(n_e, 1) * max(n_r, 1) * max(n_e, 1) < _INT64_LIMIT:
                key = (heads.astype(np.int64) * max(n_r, 1) + rels) * max(n_e, 1) + tails
                dup = pd.Series(key, copy=False).duplicated(keep="first").to_numpy()
                del key
            else:  # pragma: no cover
                dup = pd.DataFrame({"h": heads, "r": rels, "t": tails}).duplicated(keep="first").to_numpy()
            if dup.any():
                keep = ~dup
                heads, rels, tails = heads[keep], rels[keep], tails[keep]
        # own the memory (inputs may be views of caller arrays that we are about to freeze)
        heads, rels, tails = (np.array(a, dtype=id_dtype, copy=True) for a in (heads, rels, tails))
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
        first = _first_fact_line(path)
        if first is None:  # empty or blank-only file
            empty = np.empty(0, dtype=np.int32)
            return cls._build(empty, empty, empty, [], [], name, check=False)
        sep = _detect_separator(first, path) if sep is None else sep
        if len(sep) != 1:
            raise ConfigError(f"sep must be a single character such as '|' or '\\t' (got {sep!r}).")
        cols = _read_columns(path, sep)
        heads, rels, tails, entity_names, relation_names = _encode_columns(cols, path)
        del cols
        return cls._build(heads, rels, tails, entity_names, relation_names, name, check=False)

    @classmethod
    def load_cached(cls, path, sep: str | None = None, name: str | None = None) -> "KG":
        """`load()` through an .npz cache in settings.cache_dir("kg"), keyed by the file's path,
        size and modification time, so a large KG is parsed once and then reloads in seconds."""
        import hashlib

        from .settings import cache_dir

        path = Path(path)
        if not path.is_file():
            raise DatasetMissingError(f"KG file {path} not found: check the data directory (KGRAG_DATA_DIR) or the path.")
        stat = path.stat()
        ident = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{sep!r}|{name!r}|v{NPZ_FORMAT_VERSION}"
        digest = hashlib.sha256(ident.encode("utf-8")).hexdigest()[:16]
        cached = cache_dir("kg") / f"{path.stem}-{digest}.npz"
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
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {
            "format_version": np.array(NPZ_FORMAT_VERSION),
            "name": np.frombuffer(self.name.encode("utf-8"), dtype=np.uint8),
            "entity_names": _pack_names(self.entity_names, "entity"),
            "relation_names": _pack_names(self.relation_names, "relation"),
            "counts": np.array([self.num_entities, self.num_relations, self.num_edges], dtype=np.int64),
            "heads": self.heads, "rels": self.rels, "tails": self.tails,
        }
        for side in ("out", "in"):
            for part in ("order", "indptr", "gkeys", "gstarts"):
                arrays[f"{side}_{part}"] = getattr(self, f"_{side}_{part}")
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load_npz(cls, path) -> "KG":
        """Reload a KG written by `save()` (no re-sorting: the indexes are stored)."""
        path = Path(path)
        if not path.is_file():
            raise DatasetMissingError(f"KG cache {path} not found: build the KG and call kg.save({str(path)!r}) first.")
        with np.load(path, allow_pickle=False) as data:
            version = int(data["format_version"]) if "format_version" in data.files else -1
            if version != NPZ_FORMAT_VERSION:
                raise ConfigError(
                    f"KG cache {path} has format {version}, this code reads {NPZ_FORMAT_VERSION}: delete it and rebuild."
                )
            n_e, n_r, n_edges = (int(x) for x in data["counts"])
            index = {f"{side}_{part}": data[f"{side}_{part}"]
                     for side in ("out", "in") for part in ("order", "indptr", "gkeys", "gstarts")}
            kg = cls(
                name=data["name"].tobytes().decode("utf-8"),
                entity_names=_unpack_names(data["entity_names"], n_e),
                relation_names=_unpack_names(data["relation_names"], n_r),
                heads=data["heads"], rels=data["rels"], tails=data["tails"], index=index,
            )
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
        hint = _close_matches(str(name), self.entity_names)
        tip = f" did you mean {', '.join(repr(h) for h in hint)}?" if hint else " check spelling and case."
        return ConfigError(f"unknown entity {name!r} in KG {self.name!r}:{tip}")

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
        hint = difflib.get_close_matches(str(name), list(lookup), n=3, cutoff=0.5)
        tip = f"did you mean {', '.join(repr(h) for h in hint)}?" if hint else \
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
        positions, owner = _expand_ranges(starts, ends)
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
        expanded: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        truncated = False
        for rel, forward in steps:
            edges, src, dst = self._edges_from(frontier, rel, forward)
            if max_paths_facts is not None and edges.size > max_paths_facts:
                edges, src, dst = edges[:max_paths_facts], src[:max_paths_facts], dst[:max_paths_facts]
                truncated = True
            expanded.append((edges, src, dst))
            frontier = np.unique(dst)
            frontiers.append(frontier)
        alive = frontier
        if exclude_start and steps:
            alive = alive[~_in_sorted(alive, frontiers[0])]
        reached = alive
        step_edges: list[np.ndarray] = []
        step_entities = [alive]
        for edges, src, dst in reversed(expanded):
            keep = _in_sorted(dst, alive)
            step_edges.append(np.unique(edges[keep]))
            alive = np.unique(src[keep])
            step_entities.append(alive)
        step_edges.reverse()
        step_entities.reverse()
        edge_ids = np.unique(np.concatenate(step_edges)) if step_edges else np.empty(0, dtype=np.int64)
        return ChainResult(reached=reached, edge_ids=edge_ids.astype(np.int64), frontiers=frontiers,
                           step_edge_ids=step_edges, step_entities=step_entities, truncated=truncated)

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
            new = new[~_in_sorted(new, collected)]
            if max_edges is not None and collected.size + new.size > max_edges:
                new = new[: max_edges - collected.size]
                collected = np.union1d(collected, new)
                break
            collected = np.union1d(collected, new)
            ends = np.unique(np.concatenate([self.heads[new], self.tails[new]]).astype(np.int64))
            frontier = ends[~_in_sorted(ends, visited)]
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
        found = [edges[_in_sorted(dst, sb)]]
        if not directed:
            edges, _, dst = self._edges_from(sb, None, True)
            found.append(edges[_in_sorted(dst, sa)])
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
