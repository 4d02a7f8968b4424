"""Array primitives of the KG: range expansion, sorted membership, fact dedupe and the CSR indexes.

Everything here works on plain numpy arrays (memory-mapped ones included) and knows nothing of
names, so an out-of-core build can index arrays it never holds in memory as a `KG` object.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["INT64_LIMIT", "INDEX_PARTS", "expand_ranges", "in_sorted", "id_dtype", "frozen", "group_starts",
           "duplicate_facts", "csr_index"]

INT64_LIMIT = 2**62  # keep composite sort keys well inside int64
INDEX_PARTS = tuple(f"{side}_{part}" for side in ("out", "in") for part in ("order", "indptr", "gkeys", "gstarts"))


def expand_ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def in_sorted(values: np.ndarray, sorted_unique: np.ndarray) -> np.ndarray:
    """Membership of `values` in a sorted unique array (binary search; no hash table)."""
    if sorted_unique.size == 0 or values.size == 0:
        return np.zeros(values.shape, dtype=bool)
    idx = np.searchsorted(sorted_unique, values)
    idx[idx == sorted_unique.size] = 0
    return sorted_unique[idx] == values


def id_dtype(n: int) -> type:
    return np.int32 if n < 2**31 - 1 else np.int64


def frozen(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def group_starts(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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



def duplicate_facts(heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, n_e: int, n_r: int) -> np.ndarray:
    """True at every fact that repeats an earlier (head, relation, tail); the first copy is kept."""
    if max(n_e, 1) * max(n_r, 1) * max(n_e, 1) < INT64_LIMIT:
        key = (heads.astype(np.int64) * max(n_r, 1) + rels) * max(n_e, 1) + tails
        return pd.Series(key, copy=False).duplicated(keep="first").to_numpy()
    return pd.DataFrame({"h": heads, "r": rels, "t": tails}).duplicated(keep="first").to_numpy()  # pragma: no cover


def csr_index(heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, n_e: int, n_r: int) -> dict[str, np.ndarray]:
    """CSR out/in orders, per-entity indptr and per-(entity, relation) groups of unique facts.

    Keys are `INDEX_PARTS`: `<side>_order` (edge ids sorted by (src, relation, dst)), `<side>_indptr`
    (per entity), `<side>_gkeys` (src * n_r + relation of each group) and `<side>_gstarts` (group
    starts plus an end sentinel), for side "out" (src = head) and "in" (src = tail).
    """
    n_edges = int(heads.size)
    order_dtype = id_dtype(n_edges)
    index: dict[str, np.ndarray] = {}
    for side, src, dst in (("out", heads, tails), ("in", tails, heads)):
        src64 = src.astype(np.int64)
        group = src64 * max(n_r, 1) + rels
        if max(n_e, 1) * max(n_r, 1) * max(n_e, 1) < INT64_LIMIT:
            order = np.argsort(group * max(n_e, 1) + dst)  # keys are unique: any sort is exact
        else:  # pragma: no cover - only for astronomically large vocabularies
            order = np.lexsort((dst, rels, src))
        gkeys, gstarts = group_starts(group[order])
        del group
        index[f"{side}_order"] = order.astype(order_dtype, copy=False)
        counts = np.bincount(src64, minlength=n_e) if n_edges else np.zeros(n_e, dtype=np.int64)
        indptr = np.zeros(n_e + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        index[f"{side}_indptr"] = indptr
        index[f"{side}_gkeys"] = gkeys
        index[f"{side}_gstarts"] = gstarts
    return index
