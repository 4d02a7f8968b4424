"""A KG built out of core: facts streamed in chunks to disk, deduplicated, and the SimGRAG incidence
(every fact around every entity, both directions, grouped by entity then relation) laid out on disk
as CSR arrays that are memory-mapped, so that no step holds more than a chunk of facts in memory.

A folder holds:

* `heads.npy`, `rels.npy`, `tails.npy`: the distinct facts, sorted by (head, relation, tail);
  a fact's id is its row;
* `indptr.npy`, `nbr.npy`, `rel.npy`, `eid.npy`, `out.npy`: the incidence, exactly as
  `gsd_enumerate.Incidence` builds it in memory from the same facts (tests/test_kg_disk.py checks this);
* `meta.json`: sizes, the build's timings and which stages are done (a killed build resumes at the
  first stage that is not).

Deduplication: facts are appended to bucket files by head range, each bucket is deduplicated on its
own (first occurrence in stream order wins), and with `num_edges` the first `num_edges` distinct facts
of the stream are kept. Chunks may come from `synthetic.synthetic_fact_chunks` or any iterator of
(heads, rels, tails) id arrays.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from .errors import ConfigError

__all__ = ["DiskKG", "write_facts", "build_incidence", "FACT_FILES", "INCIDENCE_FILES"]

FACT_FILES = ("heads", "rels", "tails")
INCIDENCE_FILES = ("indptr", "nbr", "rel", "eid", "out")
_BUCKET_FACTS = 4_000_000  # facts per head-range bucket (about 80 MB to deduplicate at a time)
_CHUNK = 4_000_000  # facts per pass step when building the incidence


def _id_dtype(n: int):
    return np.int32 if n < 2**31 - 1 else np.int64


def _read_meta(folder: Path) -> dict:
    path = folder / "meta.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _write_meta(folder: Path, meta: dict) -> None:
    tmp = folder / "meta.json.tmp"
    tmp.write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(tmp, folder / "meta.json")


class _Buckets:
    """Sampled facts appended to one raw file per head range, with their position in the stream."""

    dtype = np.dtype([("h", np.int64), ("r", np.int32), ("t", np.int64), ("seq", np.int64)])

    def __init__(self, folder: Path, num_entities: int, n_buckets: int):
        self.folder = folder
        self.width = -(-num_entities // n_buckets)
        self.n = n_buckets
        self.seq = 0
        folder.mkdir(parents=True, exist_ok=True)

    def path(self, b: int) -> Path:
        return self.folder / f"bucket{b:05d}.raw"

    def append(self, h: np.ndarray, r: np.ndarray, t: np.ndarray) -> None:
        rec = np.empty(h.size, dtype=self.dtype)
        rec["h"], rec["r"], rec["t"] = h, r, t
        rec["seq"] = np.arange(self.seq, self.seq + h.size)
        self.seq += h.size
        b = rec["h"] // self.width
        order = np.argsort(b, kind="stable")
        rec, b = rec[order], b[order]
        cuts = np.searchsorted(b, np.arange(self.n + 1))
        for k in np.flatnonzero(np.diff(cuts)):
            with open(self.path(int(k)), "ab") as f:
                rec[cuts[k]:cuts[k + 1]].tofile(f)

    def load(self, b: int) -> np.ndarray:
        p = self.path(b)
        return np.fromfile(p, dtype=self.dtype) if p.is_file() else np.empty(0, dtype=self.dtype)


def _first_occurrences(rec: np.ndarray, n_rel: int, n_ent: int) -> np.ndarray:
    """Positions in `rec` (in stream order within the bucket) of each distinct fact's first occurrence,
    sorted by (head, relation, tail)."""
    key = (rec["h"] * n_rel + rec["r"]) * n_ent + rec["t"]
    order = np.argsort(key, kind="stable")  # equal keys stay in stream order: the first is the earliest
    k = key[order]
    first = np.ones(k.size, dtype=bool)
    first[1:] = k[1:] != k[:-1]
    return order[first]


def _dedupe(buckets: _Buckets, n_rel: int, n_ent: int) -> np.ndarray:
    """A flag per stream position: True at the first occurrence of a distinct fact."""
    flags = np.zeros(buckets.seq, dtype=bool)
    for b in range(buckets.n):
        rec = buckets.load(b)
        flags[rec["seq"][_first_occurrences(rec, n_rel, n_ent)]] = True
    return flags


def write_facts(folder, chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]], num_entities: int,
                num_relations: int, num_edges: int | None = None, progress=None) -> dict:
    """Stream (heads, rels, tails) chunks into `folder`'s deduplicated, sorted fact arrays.

    With `num_edges`, chunks are drawn until the stream holds that many distinct facts and exactly the
    first `num_edges` of them are kept; without it every chunk is read and all distinct facts kept.
    Self-loops are kept (the incidence lists them once). Returns the folder's meta.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    meta = _read_meta(folder)
    if meta.get("facts_done"):
        return meta
    n_ent, n_rel = int(num_entities), int(num_relations)
    t0 = time.perf_counter()
    tmp = folder / "buckets.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    target = None if num_edges is None else int(num_edges)
    buckets = _Buckets(tmp, n_ent, max(1, -(-(target or 0) // _BUCKET_FACTS)) if target else 64)
    stream: Iterator = iter(chunks)
    flags = np.zeros(0, dtype=bool)
    while True:
        want = None if target is None else int((target - int(flags.sum())) * 1.02) + 1024
        drawn = 0
        for h, r, t in stream:
            h, r, t = (np.asarray(a).reshape(-1) for a in (h, r, t))
            _check_ids(h, r, t, n_ent, n_rel)
            buckets.append(h, r, t)
            drawn += h.size
            if progress is not None:
                progress(buckets.seq)
            if want is not None and drawn >= want:
                break
        flags = _dedupe(buckets, n_rel, n_ent)
        if target is None or flags.sum() >= target or drawn == 0:
            break
    distinct = int(flags.sum())
    if target is not None and distinct < target:
        raise ConfigError(f"the chunks hold only {distinct} distinct facts; {target} were asked for.")
    if target is not None:  # keep the first `target` distinct facts of the stream
        cutoff = int(np.searchsorted(np.cumsum(flags), target)) + 1
        flags[cutoff:] = False
    total = int(flags.sum())
    dtype = _id_dtype(max(n_ent, n_rel))
    out = {name: np.lib.format.open_memmap(folder / f"{name}.npy", mode="w+", dtype=dtype, shape=(total,))
           for name in FACT_FILES}
    at = 0
    for b in range(buckets.n):
        rec = buckets.load(b)
        keep = _first_occurrences(rec, n_rel, n_ent)
        keep = keep[flags[rec["seq"][keep]]]
        for name, col in zip(FACT_FILES, ("h", "r", "t")):
            out[name][at:at + keep.size] = rec[col][keep]
        at += keep.size
    for arr in out.values():
        arr.flush()
    del out
    shutil.rmtree(tmp, ignore_errors=True)
    meta.update({"num_entities": n_ent, "num_relations": n_rel, "num_edges": total, "sampled": int(buckets.seq),
                 "facts_s": round(time.perf_counter() - t0, 2), "facts_done": True})
    _write_meta(folder, meta)
    return meta


def _check_ids(h, r, t, n_ent, n_rel) -> None:
    if not (h.size == r.size == t.size):
        raise ConfigError(f"a chunk's heads, rels and tails differ in length ({h.size}, {r.size}, {t.size}).")
    for label, arr, bound in (("head", h, n_ent), ("tail", t, n_ent), ("relation", r, n_rel)):
        if arr.size and (arr.min() < 0 or arr.max() >= bound):
            raise ConfigError(f"{label} ids must lie in [0, {bound}) (a chunk has {int(arr.min())}..{int(arr.max())}).")


def _open(folder: Path, names, mode="r") -> dict:
    return {n: np.load(folder / f"{n}.npy", mmap_mode=mode) for n in names}


def _count_degrees(facts: dict, n_ent: int, chunk: int) -> np.ndarray:
    counts = np.zeros(n_ent, dtype=np.int64)
    n = facts["heads"].shape[0]
    for s in range(0, n, chunk):
        h, t = np.asarray(facts["heads"][s:s + chunk]), np.asarray(facts["tails"][s:s + chunk])
        counts += np.bincount(h, minlength=n_ent)
        counts += np.bincount(t[h != t], minlength=n_ent)
    return counts


def _scatter(facts: dict, inc: dict, cursor: np.ndarray, chunk: int) -> None:
    """Write every fact's entries at its endpoints' cursors: all outgoing entries in fact order, then
    all incoming ones (self-loops once, as outgoing), which is the in-memory build's order before its
    stable sort by relation."""
    n = facts["heads"].shape[0]
    n_ent = cursor.size
    for outgoing in (True, False):
        for s in range(0, n, chunk):
            h, r, t = (np.asarray(facts[k][s:s + chunk]) for k in FACT_FILES)
            ids = np.arange(s, s + h.size, dtype=np.int64)
            if outgoing:
                node, other = h, t
            else:
                keep = h != t
                node, other, r, ids = t[keep], h[keep], r[keep], ids[keep]
            order = np.argsort(node, kind="stable")
            sn = node[order].astype(np.int64)
            starts = np.flatnonzero(np.r_[True, sn[1:] != sn[:-1]])
            rank = np.arange(sn.size) - np.repeat(starts, np.diff(np.r_[starts, sn.size]))
            pos = cursor[sn] + rank
            inc["nbr"][pos] = other[order]
            inc["rel"][pos] = r[order]
            inc["eid"][pos] = ids[order]
            inc["out"][pos] = outgoing
            cursor += np.bincount(node, minlength=n_ent)


def _sort_by_relation(inc: dict, indptr: np.ndarray, n_rel: int, chunk: int) -> None:
    """Within each entity's slice, order the entries by relation (stable), a block of entities at a time."""
    n_ent = indptr.size - 1
    lo = 0
    while lo < n_ent:
        hi = int(np.searchsorted(indptr, indptr[lo] + chunk, "right")) - 1
        hi = min(max(hi, lo + 1), n_ent)
        a, b = int(indptr[lo]), int(indptr[hi])
        if b > a:
            local = np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(indptr[lo:hi + 1]))
            order = np.argsort(local * max(n_rel, 1) + np.asarray(inc["rel"][a:b]), kind="stable")
            for name in ("nbr", "rel", "eid", "out"):
                inc[name][a:b] = np.asarray(inc[name][a:b])[order]
        lo = hi


def build_incidence(folder, chunk: int = _CHUNK) -> dict:
    """Lay out the incidence of `folder`'s facts on disk (two passes over the facts, then one sort per
    block of entities); returns the folder's meta."""
    folder = Path(folder)
    meta = _read_meta(folder)
    if not meta.get("facts_done"):
        raise ConfigError(f"{folder} has no finished facts: run write_facts first.")
    if meta.get("incidence_done"):
        return meta
    t0 = time.perf_counter()
    n_ent, n_rel, n = meta["num_entities"], meta["num_relations"], meta["num_edges"]
    facts = _open(folder, FACT_FILES)
    counts = _count_degrees(facts, n_ent, chunk)
    indptr = np.zeros(n_ent + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    del counts
    total = int(indptr[-1])
    id_dtype = _id_dtype(max(n_ent, n_rel, n))
    inc = {name: np.lib.format.open_memmap(folder / f"{name}.npy.tmp", mode="w+", dtype=dt, shape=(total,))
           for name, dt in (("nbr", id_dtype), ("rel", id_dtype), ("eid", id_dtype), ("out", np.bool_))}
    _scatter(facts, inc, indptr[:-1].copy(), chunk)
    _sort_by_relation(inc, indptr, n_rel, chunk)
    for arr in inc.values():
        arr.flush()
    del inc
    np.save(folder / "indptr.npy", indptr)
    for name in ("nbr", "rel", "eid", "out"):
        os.replace(folder / f"{name}.npy.tmp", folder / f"{name}.npy")
    meta.update({"incidence_entries": total, "max_degree": int(np.diff(indptr).max()) if n_ent else 0,
                 "incidence_s": round(time.perf_counter() - t0, 2), "incidence_done": True})
    _write_meta(folder, meta)
    return meta


class DiskKG:
    """A KG folder written by `write_facts` + `build_incidence`, opened memory-mapped."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.meta = _read_meta(self.folder)
        if not self.meta.get("incidence_done"):
            raise ConfigError(f"{self.folder} holds no finished KG build (meta.json says {self.meta or 'nothing'}).")
        self.num_entities = int(self.meta["num_entities"])
        self.num_relations = int(self.meta["num_relations"])
        self.num_edges = int(self.meta["num_edges"])
        facts = _open(self.folder, FACT_FILES)
        self.heads, self.rels, self.tails = (np.asarray(facts[k]) for k in FACT_FILES)

    def incidence_arrays(self) -> dict[str, np.ndarray]:
        """The memory-mapped incidence arrays by name (INCIDENCE_FILES), for `Incidence.from_arrays`."""
        return {k: np.asarray(v) for k, v in _open(self.folder, INCIDENCE_FILES).items()}

    def degrees(self) -> np.ndarray:
        return np.diff(np.load(self.folder / "indptr.npy", mmap_mode="r"))

    def nbytes_on_disk(self) -> int:
        return sum((self.folder / f"{n}.npy").stat().st_size for n in FACT_FILES + INCIDENCE_FILES)
