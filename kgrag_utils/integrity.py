"""Are the files we read the files we think they are? Cheap checks at load, with one-line answers.

- `file_digest(path)`: sha256 (and line count) of a file, cached by (size, mtime) in
  `cache_dir("integrity")/digests.json`, so a check costs a `stat` unless the file changed.
- `verify_file(path, pin, fix)`: a file against its pin (the released size / sha256 / line count that the
  download step knows) or, for a file with no pin, against what it was when first verified on this
  machine (size and sha256). A file that is cut, extended or edited is a one-line `IntegrityError`
  naming the file and the fix (how to refetch it, or how to accept a change made on purpose).

A real dataset's files are checked against their pins by `kgrag_utils.datasets.verify`, which
uses these primitives. Derived files (samples, fixtures, caches) are not verified here: their writers keep digests and
recompute what fails (see `datasets/samples.py`, `embeddings.VectorCache`).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import settings
from .errors import IntegrityError
from .fileio import atomic_write_text

_CHUNK = 1 << 20
_lock = threading.Lock()
_memo: dict[str, dict] = {}  # this process's view of the digest store, by store path


@dataclass(frozen=True)
class Pin:
    """What a released file is known to be (any of the three may be unknown)."""

    size: int | None = None
    sha256: str | None = None
    lines: int | None = None


def _store_path() -> Path:
    return settings.cache_dir("integrity") / "digests.json"


def _load(store: Path) -> dict:
    key = str(store)
    if key not in _memo:
        try:
            data = json.loads(store.read_text(encoding="utf-8"))
            _memo[key] = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            _memo[key] = {}  # a missing or damaged store is rebuilt: it only caches digests
    return _memo[key]


def _save(store: Path, data: dict) -> None:
    # merge with what other processes wrote meanwhile (entries are facts about files; the latest wins)
    try:
        disk = json.loads(store.read_text(encoding="utf-8"))
        if isinstance(disk, dict):
            disk.update(data)
            data.update(disk)
    except (OSError, ValueError):
        pass
    atomic_write_text(store, json.dumps(data, indent=0, sort_keys=True))


def _hash(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    lines = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
            lines += block.count(b"\n")
    return h.hexdigest(), lines


def file_digest(path: Path | str) -> dict[str, Any]:
    """{"size", "mtime_ns", "sha256", "lines", "first"}: the file now; hashed only when its size or mtime changed.

    "first" is the entry as it was first recorded on this machine (size, sha256, when), kept across changes.
    """
    path = Path(path).resolve()
    st = path.stat()
    store = _store_path()
    with _lock:
        data = _load(store)
        entry = data.get(str(path))
        if isinstance(entry, dict) and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns:
            return dict(entry)
    digest, lines = _hash(path)
    with _lock:
        data = _load(store)
        old = data.get(str(path)) if isinstance(data.get(str(path)), dict) else {}
        first = old.get("first") or {"size": st.st_size, "sha256": digest, "when": time.strftime("%Y-%m-%d %H:%M")}
        entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest, "lines": lines, "first": first}
        data[str(path)] = entry
        _save(store, data)
    return dict(entry)


def accept(path: Path | str) -> dict[str, Any]:
    """Record the file as it is now as its reference (a change made on purpose)."""
    path = Path(path).resolve()
    entry = file_digest(path)
    entry["first"] = {"size": entry["size"], "sha256": entry["sha256"], "when": time.strftime("%Y-%m-%d %H:%M")}
    with _lock:
        data = _load(_store_path())
        data[str(path)] = entry
        _save(_store_path(), data)
    return entry


def verify_file(path: Path | str, pin: Pin | None = None, fix: str = "restore it",
                accept_hint: str = "`kgrag data verify NAME --accept`") -> None:
    """Raise a one-line IntegrityError when the file differs from its pin, or (no pin) from what it first was."""
    path = Path(path)
    size = path.stat().st_size
    if pin is not None and pin.size is not None and size != pin.size:
        raise IntegrityError(f"{path} has {size:,} bytes, not the {pin.size:,} of the released file (cut or "
                             f"replaced): {fix}.")
    entry = file_digest(path)
    if pin is not None and pin.sha256 is not None:
        if entry["sha256"] != pin.sha256:
            raise IntegrityError(f"{path} does not match the released file (sha256 {entry['sha256'][:12]}..., "
                                 f"expected {pin.sha256[:12]}...): {fix}.")
        return
    if pin is not None and pin.lines is not None and entry["lines"] != pin.lines:
        raise IntegrityError(f"{path} has {entry['lines']:,} lines, not the {pin.lines:,} of the released file "
                             f"(cut or replaced): {fix}.")
    first = entry.get("first") or {}
    if first.get("sha256") and first["sha256"] != entry["sha256"]:
        raise IntegrityError(
            f"{path} changed since it was first verified here on {first.get('when')} ({first.get('size'):,} -> "
            f"{entry['size']:,} bytes): {fix}; if you changed it on purpose, {accept_hint}."
        )


def files_match(base: Path | str, files: dict) -> bool:
    """Every file of a marker (`{rel: {"size", "sha256"}}`) is in place with that size and sha256.

    The sha256 is re-read only when a file's size or mtime changed, so the check is a stat per file.
    """
    base = Path(base)
    try:
        for rel, info in files.items():
            path = base / rel
            if path.stat().st_size != int(info["size"]):
                return False
            if info.get("sha256") and file_digest(path)["sha256"] != info["sha256"]:
                return False
    except (OSError, KeyError, TypeError, ValueError):
        return False
    return True
