"""The KG's binary cache: one uncompressed .npz of ids, packed names and the CSR indexes.

`save`/`load_npz` on `KG` call these; `cache_file` names the cache of a text fact file in
settings.cache_dir("kg"), keyed by the file's path, size and modification time.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DatasetMissingError
from .arrays import INDEX_PARTS

__all__ = ["NPZ_FORMAT_VERSION", "pack_names", "unpack_names", "write_npz", "read_npz", "cache_file"]

NPZ_FORMAT_VERSION = 1
_NAME_SEP = "\x00"  # separator of the packed name blob in the npz cache


def pack_names(names: np.ndarray, what: str) -> np.ndarray:
    joined = _NAME_SEP.join(names.tolist())
    if joined.count(_NAME_SEP) != max(len(names) - 1, 0):
        raise ConfigError(f"cannot save: a {what} name contains a NUL character; rename it before calling KG.save().")
    return np.frombuffer(joined.encode("utf-8"), dtype=np.uint8)


def unpack_names(blob: np.ndarray, count: int) -> np.ndarray:
    if count == 0:
        return np.empty(0, dtype=object)
    parts = blob.tobytes().decode("utf-8").split(_NAME_SEP)
    if len(parts) != count:
        raise ConfigError(f"corrupt KG cache: expected {count} names, found {len(parts)}; delete the .npz and rebuild it.")
    return np.array(parts, dtype=object)



def write_npz(kg, path) -> Path:
    """Write `kg` as an uncompressed .npz atomically (a temporary file, then a rename); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {
        "format_version": np.array(NPZ_FORMAT_VERSION),
        "name": np.frombuffer(kg.name.encode("utf-8"), dtype=np.uint8),
        "entity_names": pack_names(kg.entity_names, "entity"),
        "relation_names": pack_names(kg.relation_names, "relation"),
        "counts": np.array([kg.num_entities, kg.num_relations, kg.num_edges], dtype=np.int64),
        "heads": kg.heads, "rels": kg.rels, "tails": kg.tails,
    }
    for part in INDEX_PARTS:
        arrays[part] = getattr(kg, f"_{part}")
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_npz(path) -> tuple[dict, tuple[int, int, int]]:
    """The `KG(...)` keyword arguments stored in a cache written by `write_npz`, and its
    (entities, relations, edges) counts for the caller's size check."""
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
        kwargs = dict(
            name=data["name"].tobytes().decode("utf-8"),
            entity_names=unpack_names(data["entity_names"], n_e),
            relation_names=unpack_names(data["relation_names"], n_r),
            heads=data["heads"], rels=data["rels"], tails=data["tails"],
            index={part: data[part] for part in INDEX_PARTS},
        )
    return kwargs, (n_e, n_r, n_edges)


def cache_file(path: Path, sep: str | None, name: str | None) -> Path:
    """Where `KG.load_cached` keeps the .npz of the fact file `path` (settings.cache_dir("kg"))."""
    from ..settings import cache_dir

    stat = path.stat()
    ident = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{sep!r}|{name!r}|v{NPZ_FORMAT_VERSION}"
    digest = hashlib.sha256(ident.encode("utf-8")).hexdigest()[:16]
    return cache_dir("kg") / f"{path.stem}-{digest}.npz"
