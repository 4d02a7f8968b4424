"""A compressed FAISS index for entity vectors that do not fit in memory.

An OPQ rotation, an inverted file whose coarse quantiser is a small HNSW graph over the list
centroids (so that assigning tens of millions of vectors does not compare each with every centroid),
and product-quantised codes of `m` bytes per vector ("OPQ48_384,IVF4096_HNSW32,PQ48": 48 bytes where
float32 needs 1,536). It is trained on a sample, filled chunk by chunk from a function that returns
the vectors of a range of ids (ids are the row numbers), checkpointed so that a killed build resumes,
saved, and opened with the inverted lists memory-mapped (faiss.IO_FLAG_MMAP_IFC). Vectors come in
chunks of 20,000 by default: on this VM a first touch of fresh memory costs about 30 us per page, and
chunks below glibc's mmap threshold reuse the same heap pages.

`exact_topk` is the exact search that the compressed one is compared with: one pass over all vectors,
chunk by chunk, for a batch of queries.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .errors import ConfigError

__all__ = ["build_compressed_index", "CompressedIndex", "exact_topk", "factory_string"]

Rows = Callable[[np.ndarray], np.ndarray]  # ids -> float32 vectors (one row per id)


def factory_string(dim: int, nlist: int, m: int, opq: bool = True) -> str:
    if dim % m:
        raise ConfigError(f"the PQ code size m={m} must divide the dimension {dim}.")
    return f"{f'OPQ{m}_{dim},' if opq else ''}IVF{nlist}_HNSW32,PQ{m}"


def _meta_path(path: Path) -> Path:
    return path.with_suffix(path.suffix + ".json")


def build_compressed_index(path, rows: Rows, count: int, dim: int, nlist: int = 4096, m: int = 48, opq: bool = True,
                           train_size: int = 200_000, chunk: int = 20_000, checkpoint_every: int = 4_000_000,
                           seed: int = 0, threads: int | None = None, opq_iterations: int = 8,
                           opq_points: int = 50_000, progress=None) -> dict:
    """Train on a sample of `train_size` ids, add all `count` vectors in chunks, save to `path`.

    Resumes from the last checkpoint (`path` + `.json` records how many vectors it holds). Returns the
    build record (factory string, bytes per vector, seconds per phase).
    """
    import faiss

    path = Path(path)
    meta_path = _meta_path(path)
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    if meta.get("done"):
        return meta
    if threads:
        faiss.omp_set_num_threads(int(threads))
    factory = factory_string(dim, nlist, m, opq)
    if meta.get("added") and path.is_file():
        index = faiss.read_index(str(path))
    else:
        t0 = time.perf_counter()
        rng = np.random.default_rng(seed)
        sample = np.sort(rng.choice(count, size=min(train_size, count), replace=False))
        index = faiss.index_factory(dim, factory)
        if opq:  # FAISS's OPQ defaults (50 iterations on up to 65k points) take ~10 min on two busy cores
            rotation = faiss.downcast_VectorTransform(faiss.downcast_index(index).chain.at(0))
            rotation.niter, rotation.max_train_points = opq_iterations, min(opq_points, sample.size)
        index.train(np.ascontiguousarray(rows(sample), dtype=np.float32))
        meta = {"factory": factory, "count": int(count), "dim": int(dim), "train_size": int(sample.size),
                "opq": {"iterations": opq_iterations, "points": min(opq_points, int(sample.size))} if opq else None,
                "train_s": round(time.perf_counter() - t0, 2), "added": 0, "add_s": 0.0}
    start = int(meta["added"])
    t0 = time.perf_counter()
    for s in range(start, count, chunk):
        e = min(s + chunk, count)
        index.add(np.ascontiguousarray(rows(np.arange(s, e)), dtype=np.float32))
        if progress is not None:
            progress(e)
        if e == count or (e // checkpoint_every) > (s // checkpoint_every):
            meta.update({"added": e, "add_s": round(meta["add_s"] + time.perf_counter() - t0, 2)})
            t0 = time.perf_counter()
            _save(index, path, meta)
    meta.update({"done": True, "bytes": path.stat().st_size,
                 "bytes_per_vector": round(path.stat().st_size / max(count, 1), 2)})
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def _save(index, path: Path, meta: dict) -> None:
    import faiss

    tmp = path.with_suffix(path.suffix + ".tmp")
    faiss.write_index(index, str(tmp))
    os.replace(tmp, path)
    tmp_meta = _meta_path(path).with_suffix(".tmp")
    tmp_meta.write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(tmp_meta, _meta_path(path))


class CompressedIndex:
    """A saved compressed index, opened with its inverted lists memory-mapped."""

    def __init__(self, path, nprobe: int = 32, ef_search: int = 64, mmap: bool = True):
        import faiss

        self.path = Path(path)
        meta_path = _meta_path(self.path)
        if not meta_path.is_file() or not json.loads(meta_path.read_text()).get("done"):
            raise ConfigError(f"{self.path} is not a finished compressed index (build it with build_compressed_index).")
        self.meta = json.loads(meta_path.read_text())
        flags = faiss.IO_FLAG_MMAP_IFC if mmap else 0
        self.index = faiss.read_index(str(self.path), flags)
        self.ivf = faiss.extract_index_ivf(self.index)
        self.set_search(nprobe, ef_search)

    def set_search(self, nprobe: int, ef_search: int = 64) -> None:
        import faiss

        self.ivf.nprobe = int(nprobe)
        quantizer = faiss.downcast_index(self.ivf.quantizer)
        if hasattr(quantizer, "hnsw"):
            quantizer.hnsw.efSearch = max(int(ef_search), int(nprobe))
        self.params = {"nprobe": int(nprobe), "ef_search": max(int(ef_search), int(nprobe))}

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(squared L2 distances by the codes, ids) of the k nearest codes per query row."""
        return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), int(k))


def exact_topk(rows: Rows, count: int, queries: np.ndarray, k: int, chunk: int = 20_000,
               progress=None) -> np.ndarray:
    """Ids of the k largest inner products (the k nearest unit vectors) per query, by one pass over all
    `count` vectors; (n_queries, k), nearest first."""
    q = np.ascontiguousarray(queries, dtype=np.float32)
    best_s = np.full((q.shape[0], k), -np.inf, dtype=np.float32)
    best_i = np.full((q.shape[0], k), -1, dtype=np.int64)
    for s in range(0, count, chunk):
        e = min(s + chunk, count)
        scores = q @ rows(np.arange(s, e)).T
        kk = min(k, e - s)
        part = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
        cand_s = np.concatenate([best_s, np.take_along_axis(scores, part, axis=1)], axis=1)
        cand_i = np.concatenate([best_i, part + s], axis=1)
        keep = np.argsort(-cand_s, axis=1, kind="stable")[:, :k]
        best_s, best_i = np.take_along_axis(cand_s, keep, axis=1), np.take_along_axis(cand_i, keep, axis=1)
        if progress is not None:
            progress(e)
    return best_i
