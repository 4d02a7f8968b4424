"""Nearest-neighbour search over vectors with names, behind one small interface, two backends.

- ``FaissIndex``: exact ``flat``, graph ``hnsw`` or clustered ``ivf`` indexes; on a GPU when faiss
  has GPU support and CUDA is present (``use_gpu="auto"``; FAISS has no GPU HNSW, so HNSW stays on
  the CPU under "auto").
- ``MilvusIndex``: one Milvus collection per index, in a local Milvus Lite file (``*.db``, one
  process at a time) or on a server URI (``http://host:19530``).

Semantics shared by both: ids are insertion positions 0..n-1; ``search`` returns float32 scores and
int64 ids of shape (m, k), best first, padded with id -1 (score -inf for "ip", +inf for "l2")
when fewer than k vectors exist. Scores are inner products for ``metric="ip"`` (cosine for
L2-normalised vectors) and SQUARED Euclidean distances for ``metric="l2"`` (FAISS' convention and
what Milvus returns; the tests check that both backends give the same scores). ``save(path)``
writes a folder with ``index.json`` (+ ``names.json``, + ``index.faiss`` for FAISS; Milvus data
stays in its database); ``VectorIndex.load(path)`` restores either backend.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import BackendUnavailableError, ConfigError, IntegrityError, MissingDependencyError
from .fileio import atomic_write_bytes
from .settings import cache_dir

__all__ = ["VectorIndex", "FaissIndex", "MilvusIndex", "make_index", "faiss_gpu_available"]

METRICS = ("ip", "l2")
KINDS = ("flat", "hnsw", "ivf")
_FORMAT = 1
_MANIFEST = "index.json"
_NAMES = "names.json"


def _check_choice(value: str, allowed: Sequence[str], what: str) -> str:
    if not isinstance(value, str) or value.lower() not in allowed:
        raise ConfigError(f"{what} must be one of {', '.join(allowed)}, got {value!r}.")
    return value.lower()


class VectorIndex(ABC):
    """Common behaviour: argument checks, the id -> name table, padding, save/load dispatch."""

    backend: str = ""

    def __init__(self, dim: int, metric: str = "ip", kind: str = "flat"):
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ConfigError(f"dim must be a positive integer, got {dim!r}.")
        self.dim = int(dim)
        self.metric = _check_choice(metric, METRICS, "metric")
        self.kind = _check_choice(kind, KINDS, "kind")
        self._names: list[str] | None = None
        self._names_array: np.ndarray | None = None
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, metric={self.metric!r}, kind={self.kind!r}, n={self._n})"

    @property
    def names(self) -> list[str] | None:
        """Names in id order, or None when the vectors were added without names."""
        return self._names

    @property
    def pad_score(self) -> float:
        return float("-inf") if self.metric == "ip" else float("inf")

    # -- checks ------------------------------------------------------------------------------
    def _as_matrix(self, x: Any, what: str) -> np.ndarray:
        arr = np.asarray(x, dtype=np.float32)
        if arr.ndim == 1 and arr.size == self.dim:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise ConfigError(f"{what} must have shape (n, {self.dim}), got {np.shape(x)}.")
        if not np.isfinite(arr).all():
            raise ConfigError(f"{what} contain NaN or inf: check the embeddings before indexing.")
        return np.ascontiguousarray(arr)

    @staticmethod
    def _check_k(k: int) -> int:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"k must be a positive integer, got {k!r}.")
        return int(k)

    # -- public API --------------------------------------------------------------------------
    def add(self, vectors: Any, names: Sequence[str] | None = None) -> None:
        """Append vectors (ids continue from len(self)); give names for all adds or for none."""
        vecs = self._as_matrix(vectors, "vectors")
        if names is not None:
            names = [str(n) for n in names]
            if len(names) != vecs.shape[0]:
                raise ConfigError(f"got {len(names)} names for {vecs.shape[0]} vectors: pass one name per vector.")
        if self._n > 0 and (names is None) != (self._names is None):
            raise ConfigError("this index was built with names on every add or on none: be consistent across add() calls.")
        if vecs.shape[0] == 0:
            return
        self._add(vecs)
        if names is not None:
            self._names = (self._names or []) + names
            self._names_array = None
        self._n += vecs.shape[0]

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores (m, k) float32, ids (m, k) int64), best first, padded with id -1."""
        q = self._as_matrix(queries, "queries")
        k = self._check_k(k)
        scores = np.full((q.shape[0], k), self.pad_score, dtype=np.float32)
        ids = np.full((q.shape[0], k), -1, dtype=np.int64)
        if self._n and q.shape[0]:
            self._search(q, k, scores, ids)
            scores[ids < 0] = self.pad_score
        return scores, ids

    def names_of(self, ids: Any) -> list[list[str]]:
        """Names for an (m, k) id array (one list per row; -1 padding dropped)."""
        if self._names is None:
            raise ConfigError("this index has no names: pass names= to add(), or map ids yourself.")
        if self._names_array is None:
            self._names_array = np.asarray(self._names, dtype=object)
        arr = np.asarray(ids, dtype=np.int64)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.size and arr.max() >= self._n:
            raise ConfigError(f"id {int(arr.max())} is out of range for an index of {self._n} vectors.")
        return [self._names_array[row[row >= 0]].tolist() for row in arr]

    def save(self, path: str | os.PathLike) -> Path:
        """Write the index to the folder ``path`` (created; files there are replaced)."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        if self._names is not None:
            atomic_write_bytes(folder / _NAMES, json.dumps(self._names, ensure_ascii=False).encode("utf-8"))
        elif (folder / _NAMES).exists():
            (folder / _NAMES).unlink()
        manifest = {
            "format": _FORMAT,
            "backend": self.backend,
            "dim": self.dim,
            "metric": self.metric,
            "kind": self.kind,
            "n": self._n,
            "has_names": self._names is not None,
            **self._save_backend(folder),
        }
        atomic_write_bytes(folder / _MANIFEST, json.dumps(manifest, indent=2).encode("utf-8"))  # last: marks a whole save
        return folder

    @staticmethod
    def load(path: str | os.PathLike, use_gpu: bool | str = "auto") -> "VectorIndex":
        """Restore an index written by ``save`` (FAISS or Milvus, as recorded in its manifest)."""
        folder = Path(path)
        manifest_path = folder / _MANIFEST
        if not manifest_path.exists():
            raise ConfigError(f"no saved index at {folder} ({_MANIFEST} missing): pass the folder given to save().")
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("format") != _FORMAT:
            raise IntegrityError(f"{manifest_path} has format {manifest.get('format')!r}, expected {_FORMAT}: rebuild the index.")
        names = None
        if manifest["has_names"]:
            names = json.loads((folder / _NAMES).read_text(encoding="utf-8"))
            if len(names) != manifest["n"]:
                raise IntegrityError(f"{folder / _NAMES} holds {len(names)} names for {manifest['n']} vectors: rebuild the index.")
        cls = {"faiss": FaissIndex, "milvus": MilvusIndex}.get(manifest["backend"])
        if cls is None:
            raise IntegrityError(f"{manifest_path} names unknown backend {manifest['backend']!r}: rebuild the index.")
        index = cls._load_backend(folder, manifest, use_gpu)
        index._names = names
        index._n = int(manifest["n"])
        return index

    # -- backend hooks -----------------------------------------------------------------------
    @abstractmethod
    def _add(self, vectors: np.ndarray) -> None: ...

    @abstractmethod
    def _search(self, queries: np.ndarray, k: int, scores: np.ndarray, ids: np.ndarray) -> None:
        """Fill scores/ids (pre-padded) for the queries."""

    @abstractmethod
    def _save_backend(self, folder: Path) -> dict: ...

    @classmethod
    @abstractmethod
    def _load_backend(cls, folder: Path, manifest: dict, use_gpu: bool | str) -> "VectorIndex": ...


# ---------------------------------------------------------------------------------------------
# FAISS
# ---------------------------------------------------------------------------------------------


_FAISS_CONFIGURED = False


def _faiss():
    try:
        import faiss
    except ImportError as exc:
        raise MissingDependencyError(
            "the FAISS index needs faiss: run `pip install faiss-cpu` (or `pip install -e '.[cpu]'`; faiss-gpu-cu12 for GPUs)."
        ) from exc
    global _FAISS_CONFIGURED
    if not _FAISS_CONFIGURED:
        from . import threads

        threads.configure_faiss(faiss)  # builds and batch searches: the CPU budget, not every core
        _FAISS_CONFIGURED = True
    return faiss


def faiss_gpu_available() -> bool:
    """True when the installed faiss has GPU support and sees at least one CUDA device."""
    faiss = _faiss()
    if not hasattr(faiss, "StandardGpuResources"):
        return False
    try:
        return faiss.get_num_gpus() > 0
    except Exception:  # pragma: no cover - broken CUDA setup
        return False


_GPU_RESOURCES = None
_GPU_MAX_K = 2048  # FAISS GPU k-selection limit


class FaissIndex(VectorIndex):
    """FAISS flat / HNSW / IVF index.

    IVF is trained on the vectors of the first ``add`` (``nlist`` default: about sqrt(n), at least 39
    points per list; ``nprobe`` default: a quarter of the lists, at least 16); raise ``nprobe`` for
    recall, up to ``nlist`` for exact results. HNSW: ``hnsw_m`` links, ``ef_construction``, and
    ``ef_search`` (raised to k when k is larger).
    """

    backend = "faiss"

    def __init__(
        self,
        dim: int,
        metric: str = "ip",
        kind: str = "flat",
        use_gpu: bool | str = "auto",
        *,
        hnsw_m: int = 32,
        ef_construction: int = 200,
        ef_search: int = 128,
        nlist: int | None = None,
        nprobe: int | None = None,
    ):
        super().__init__(dim, metric, kind)
        self.params = {
            "hnsw_m": int(hnsw_m),
            "ef_construction": int(ef_construction),
            "ef_search": int(ef_search),
            "nlist": None if nlist is None else int(nlist),
            "nprobe": None if nprobe is None else int(nprobe),
        }
        self.on_gpu = self._decide_gpu(use_gpu)
        self._index = None if self.kind == "ivf" else self._place(self._new_cpu_index())

    def _decide_gpu(self, use_gpu: bool | str) -> bool:
        if use_gpu not in (True, False, "auto"):
            raise ConfigError(f"use_gpu must be True, False or 'auto', got {use_gpu!r}.")
        if use_gpu is False:
            return False
        available = faiss_gpu_available()
        if use_gpu == "auto":
            return available and self.kind != "hnsw"
        if not available:
            raise MissingDependencyError(
                "use_gpu=True needs faiss with GPU support and a CUDA device: install faiss-gpu-cu12 (`pip install -e '.[gpu]'`) or pass use_gpu='auto'."
            )
        if self.kind == "hnsw":
            raise ConfigError("FAISS has no GPU HNSW index: use kind='flat' or 'ivf' on the GPU, or use_gpu=False.")
        return True

    @property
    def _metric_code(self) -> int:
        faiss = _faiss()
        return faiss.METRIC_INNER_PRODUCT if self.metric == "ip" else faiss.METRIC_L2

    def _new_cpu_index(self, n_train: int = 0):
        faiss = _faiss()
        if self.kind == "flat":
            return faiss.IndexFlatIP(self.dim) if self.metric == "ip" else faiss.IndexFlatL2(self.dim)
        if self.kind == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, self.params["hnsw_m"], self._metric_code)
            index.hnsw.efConstruction = self.params["ef_construction"]
            index.hnsw.efSearch = self.params["ef_search"]
            return index
        # default: about sqrt(n) lists with at least 39 training points each (FAISS' k-means minimum)
        nlist = self.params["nlist"] or max(1, min(int(np.sqrt(n_train)), n_train // 39))
        nlist = max(1, min(nlist, n_train))
        self.params["nlist"] = nlist
        if self.params["nprobe"] is None:
            # a quarter of the lists: recall@10 0.88 for MetaQA questions vs its 43k entity names
            # (benchmarks/embed_index.py); nprobe=16 gave 0.74 there
            self.params["nprobe"] = min(nlist, max(16, -(-nlist // 4)))
        quantizer = faiss.IndexFlatIP(self.dim) if self.metric == "ip" else faiss.IndexFlatL2(self.dim)
        index = faiss.IndexIVFFlat(quantizer, self.dim, nlist, self._metric_code)
        index.nprobe = self.params["nprobe"]
        return index

    def _place(self, cpu_index):
        if not self.on_gpu:
            return cpu_index
        global _GPU_RESOURCES
        faiss = _faiss()
        if _GPU_RESOURCES is None:
            _GPU_RESOURCES = faiss.StandardGpuResources()
        return faiss.index_cpu_to_gpu(_GPU_RESOURCES, 0, cpu_index)

    def _add(self, vectors: np.ndarray) -> None:
        if self._index is None:  # IVF: train on the first batch
            index = self._place(self._new_cpu_index(n_train=vectors.shape[0]))
            index.train(vectors)
            self._index = index
        self._index.add(vectors)

    def _search(self, queries: np.ndarray, k: int, scores: np.ndarray, ids: np.ndarray) -> None:
        if self.on_gpu and k > _GPU_MAX_K:
            raise ConfigError(f"FAISS on GPU returns at most k={_GPU_MAX_K}: lower k or use use_gpu=False.")
        kk = min(k, self._n)
        if self.kind == "hnsw":
            self._index.hnsw.efSearch = max(self.params["ef_search"], kk)
        elif self.kind == "ivf":
            self._index.nprobe = self.params["nprobe"]
        d, i = self._index.search(queries, kk)
        scores[:, :kk] = d
        ids[:, :kk] = i

    def _cpu_index(self):
        if self._index is None or not self.on_gpu:
            return self._index
        return _faiss().index_gpu_to_cpu(self._index)

    def _save_backend(self, folder: Path) -> dict:
        faiss = _faiss()
        index = self._cpu_index()
        target = folder / "index.faiss"
        if index is not None:
            tmp = folder / f".index.faiss.{uuid.uuid4().hex[:8]}.tmp"
            faiss.write_index(index, str(tmp))
            os.replace(tmp, target)
        elif target.exists():
            target.unlink()
        return {"params": self.params, "has_index": index is not None}

    @classmethod
    def _load_backend(cls, folder: Path, manifest: dict, use_gpu: bool | str) -> "FaissIndex":
        faiss = _faiss()
        index = cls(manifest["dim"], manifest["metric"], manifest["kind"], use_gpu, **manifest["params"])
        if manifest["has_index"]:
            cpu = faiss.read_index(str(folder / "index.faiss"))
            if cpu.ntotal != manifest["n"] or cpu.d != manifest["dim"]:
                raise IntegrityError(f"{folder / 'index.faiss'} does not match its manifest: rebuild the index.")
            index._index = index._place(cpu)
        return index


# ---------------------------------------------------------------------------------------------
# Milvus
# ---------------------------------------------------------------------------------------------

_COLLECTION_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
_MILVUS_MAX_K = 16384
_INSERT_BATCH = 2000


def default_milvus_uri() -> str:
    """The local Milvus Lite database used when no URI is given."""
    return str(cache_dir("milvus") / "kgrag.db")


class MilvusIndex(VectorIndex):
    """One Milvus collection (int64 id = position, float vector); names are kept beside it."""

    backend = "milvus"

    def __init__(
        self,
        dim: int,
        metric: str = "ip",
        kind: str = "flat",
        uri: str | None = None,
        collection: str | None = None,
        *,
        overwrite: bool = False,
        token: str | None = None,
        hnsw_m: int = 32,
        ef_construction: int = 200,
        ef_search: int = 128,
        nlist: int = 1024,
        nprobe: int = 16,
        _create: bool = True,
    ):
        super().__init__(dim, metric, kind)
        self.params = {
            "hnsw_m": int(hnsw_m),
            "ef_construction": int(ef_construction),
            "ef_search": int(ef_search),
            "nlist": int(nlist),
            "nprobe": int(nprobe),
        }
        self.uri = str(uri) if uri else default_milvus_uri()
        self.is_lite = self.uri.endswith(".db")
        if self.is_lite:
            self.uri = str(Path(self.uri).expanduser().resolve())
        self.collection = collection or f"kgrag_{uuid.uuid4().hex[:16]}"
        if not _COLLECTION_RE.match(self.collection):
            raise ConfigError(f"Milvus collection names use letters, digits and _ (not starting with a digit), got {self.collection!r}.")
        self._client = self._connect(token)
        self._unflushed = False
        if _create:
            self._create(overwrite)

    def _connect(self, token: str | None):
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:
            raise MissingDependencyError(
                "the Milvus index needs pymilvus and milvus-lite: run `pip install -e '.[milvus]'` (or `pip install pymilvus milvus-lite`)."
            ) from exc
        if self.is_lite:
            Path(self.uri).parent.mkdir(parents=True, exist_ok=True)
        try:
            return MilvusClient(uri=self.uri, token=token or "")
        except Exception as exc:
            where = "another process may hold this Milvus Lite file; pass uri= another .db path" if self.is_lite else "check that the server is up"
            raise BackendUnavailableError(f"cannot open Milvus at {self.uri} ({type(exc).__name__}): {where}.") from exc

    def _create(self, overwrite: bool) -> None:
        from pymilvus import DataType, MilvusClient

        client = self._client
        if client.has_collection(self.collection):
            if not overwrite:
                raise ConfigError(
                    f"Milvus collection {self.collection!r} already exists at {self.uri}: pass overwrite=True, "
                    "another collection name, or VectorIndex.load() its saved folder."
                )
            client.drop_collection(self.collection)
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("vec", DataType.FLOAT_VECTOR, dim=self.dim)
        index_params = client.prepare_index_params()
        index_type, build = {
            "flat": ("FLAT", {}),
            "hnsw": ("HNSW", {"M": self.params["hnsw_m"], "efConstruction": self.params["ef_construction"]}),
            "ivf": ("IVF_FLAT", {"nlist": self.params["nlist"]}),
        }[self.kind]
        index_params.add_index(field_name="vec", index_type=index_type, metric_type=self.metric.upper(), params=build)
        client.create_collection(self.collection, schema=schema, index_params=index_params, consistency_level="Strong")

    def close(self) -> None:
        """Release the connection (the data stays in the database)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def drop(self) -> None:
        """Delete the collection from the database and empty this index."""
        if self._client.has_collection(self.collection):
            self._client.drop_collection(self.collection)
        self._n, self._names, self._names_array = 0, None, None

    def _add(self, vectors: np.ndarray) -> None:
        start = self._n
        for s in range(0, vectors.shape[0], _INSERT_BATCH):
            block = vectors[s : s + _INSERT_BATCH]
            rows = [{"id": start + s + j, "vec": v} for j, v in enumerate(block.tolist())]
            self._client.insert(self.collection, rows)
        self._unflushed = True

    def _search_params(self, k: int) -> dict:
        params: dict = {}
        if self.kind == "hnsw":
            params = {"ef": max(self.params["ef_search"], k)}
        elif self.kind == "ivf":
            params = {"nprobe": self.params["nprobe"]}
        return {"metric_type": self.metric.upper(), "params": params}

    def _search(self, queries: np.ndarray, k: int, scores: np.ndarray, ids: np.ndarray) -> None:
        if k > _MILVUS_MAX_K:
            raise ConfigError(f"Milvus returns at most k={_MILVUS_MAX_K}: lower k.")
        kk = min(k, self._n)
        # Milvus Lite's exact L2 materialises (queries x vectors x dim) floats: keep each call small
        per_call = 1024
        if self.is_lite and self.metric == "l2":
            per_call = max(1, min(per_call, (1 << 26) // max(1, self._n * self.dim)))
        if self.is_lite and self._unflushed:
            # Milvus Lite scans unflushed rows in Python: flushing once makes searches ~20-70x faster (43k x 384)
            self._client.flush(self.collection)
            self._unflushed = False
        search_params = self._search_params(kk)
        for s in range(0, queries.shape[0], per_call):
            block = queries[s : s + per_call]
            hits = self._client.search(
                self.collection, data=block.tolist(), limit=kk, anns_field="vec", search_params=search_params, output_fields=["id"]
            )
            for r, row in enumerate(hits):
                m = min(len(row), kk)
                if m:
                    ids[s + r, :m] = [h["id"] for h in row[:m]]
                    scores[s + r, :m] = [h["distance"] for h in row[:m]]

    def _save_backend(self, folder: Path) -> dict:
        try:
            self._client.flush(self.collection)
            self._unflushed = False
        except Exception:  # pragma: no cover - servers without flush permission still persist
            pass
        return {"uri": self.uri, "collection": self.collection, "params": self.params}

    @classmethod
    def _load_backend(cls, folder: Path, manifest: dict, use_gpu: bool | str) -> "MilvusIndex":
        index = cls(
            manifest["dim"], manifest["metric"], manifest["kind"], manifest["uri"], manifest["collection"], _create=False, **manifest["params"]
        )
        if not index._client.has_collection(index.collection):
            raise IntegrityError(f"Milvus collection {index.collection!r} is gone from {index.uri}: rebuild the index.")
        index._client.load_collection(index.collection)
        return index


# ---------------------------------------------------------------------------------------------


def make_index(
    backend: str = "faiss",
    dim: int | None = None,
    metric: str = "ip",
    kind: str = "flat",
    use_gpu: bool | str = "auto",
    uri: str | None = None,
    collection: str | None = None,
    **options: Any,
) -> VectorIndex:
    """A new, empty index. ``options`` go to the backend (hnsw_m, ef_construction, ef_search,
    nlist, nprobe; Milvus also overwrite, token)."""
    backend = _check_choice(backend, ("faiss", "milvus"), "backend")
    if dim is None:
        raise ConfigError("make_index needs dim (the embedding size, e.g. embedder.dim).")
    if backend == "faiss":
        if uri is not None or collection is not None:
            raise ConfigError("uri and collection apply to backend='milvus' only: drop them for FAISS.")
        return FaissIndex(dim, metric, kind, use_gpu, **options)
    if use_gpu is True:
        raise ConfigError("use_gpu=True applies to FAISS: for Milvus choose a GPU index on the Milvus server.")
    return MilvusIndex(dim, metric, kind, uri, collection, **options)
