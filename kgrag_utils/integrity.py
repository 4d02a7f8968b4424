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
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import settings
from .errors import IntegrityError, StorageError, cache_write_skipped, storage_errno, storage_message
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


def _read_store(store: Path) -> dict:
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(store: Path, updates: dict[str, dict], reference_from_disk: bool = True) -> None:
    """Merge this process's new entries into the store on disk, entry by entry, under an OS file lock.

    Only the entries this process computed are written; every other entry stays as the other processes
    left it. `reference_from_disk`: an entry's reference ("first", and an acceptance) is the one on disk
    when there is one, so a process that hashed a file before `kgrag data verify --accept` ran elsewhere
    never writes its stale reference back over the acceptance; `accept` passes False (its own is new).
    """
    store.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(store.with_name(store.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        _flock(fd)
        disk = _prune_vanished(_read_store(store))
        for key, entry in updates.items():
            old = disk.get(key) if isinstance(disk.get(key), dict) else {}
            if reference_from_disk and old.get("first"):
                entry = {**entry, "first": old["first"], **({"accepted": old["accepted"]} if "accepted" in old else {})}
            disk[key] = entry
        atomic_write_text(store, json.dumps(disk, indent=0, sort_keys=True))
        _memo[str(store)] = disk  # this process now sees what the others wrote too
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _prune_vanished(disk: dict) -> dict:
    """The store without entries for vanished files under the cache folder (merged-away embedding shards): derived
    files whose entries nobody reads again, which would otherwise make every rewrite of the store longer."""
    root = str(settings.cache_dir(create=False).resolve()) + os.sep
    return {k: v for k, v in disk.items() if not (k.startswith(root) and not os.path.exists(k))}


def _flock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no cross-process lock, merges are still per entry
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def _refresh(path: Path) -> None:
    """Forget this process's view of one file's entry (re-read from the store on the next look)."""
    store = _store_path()
    with _lock:
        disk = _read_store(store)
        data = _load(store)
        if isinstance(disk.get(str(path)), dict):
            data[str(path)] = disk[str(path)]


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
        try:
            _save(store, {str(path): entry})
        except OSError as exc:  # the store only caches digests: a full cache disk costs a re-hash next time
            cache_write_skipped(exc, store, "a file digest")
            data[str(path)] = entry
        entry = _load(store)[str(path)]
    return dict(entry)


def accept(path: Path | str) -> dict[str, Any]:
    """Record the file as it is now as its reference (a change made on purpose)."""
    path = Path(path).resolve()
    entry = file_digest(path)
    entry["first"] = {"size": entry["size"], "sha256": entry["sha256"], "when": time.strftime("%Y-%m-%d %H:%M")}
    entry["accepted"] = entry["sha256"]  # taken as it is on purpose: it passes even where a pin says otherwise
    with _lock:
        try:
            _save(_store_path(), {str(path): entry}, reference_from_disk=False)
        except OSError as exc:  # an acceptance that is not stored would be lost: never skipped
            if not storage_errno(exc):
                raise
            raise StorageError(storage_message(exc, _store_path(), "KGRAG_CACHE_DIR")) from None
    return entry


def verify_file(path: Path | str, pin: Pin | None = None, fix: str = "restore it",
                accept_hint: str = "`kgrag data verify NAME --accept`") -> None:
    """Raise a one-line IntegrityError when the file differs from its pin, or (no pin) from what it first was.

    A file accepted as it is (`accept`, `kgrag data verify NAME --accept`) passes. Before refusing, the store
    is read again: another process may have accepted the file since this one last looked.
    """
    path = Path(path)
    problem = _problem(path, pin, fix, accept_hint)
    if problem:
        _refresh(path.resolve())
        problem = _problem(path, pin, fix, accept_hint)
    if problem:
        raise IntegrityError(problem)


def _problem(path: Path, pin: Pin | None, fix: str, accept_hint: str) -> str | None:
    entry = file_digest(path)
    if entry.get("accepted") == entry["sha256"]:
        return None  # accepted as it is now, on purpose
    problem = _pin_problem(path, entry, pin, fix, accept_hint)
    if problem or (pin is not None and pin.sha256 is not None):
        return problem
    first = entry.get("first") or {}
    if first.get("sha256") and first["sha256"] != entry["sha256"]:
        return (f"{path} changed since it was first verified here on {first.get('when')} ({first.get('size'):,} -> "
                f"{entry['size']:,} bytes): {fix}; if you changed it on purpose, {accept_hint}.")
    return None


def pin_problem(path: Path | str, pin: Pin | None, fix: str = "restore it",
                accept_hint: str = "`kgrag data verify NAME --accept`") -> str | None:
    """The file against its pin only (no acceptance, no first reference): a one-line problem, or None."""
    return _pin_problem(Path(path), file_digest(path), pin, fix, accept_hint) if pin is not None else None


def _pin_problem(path: Path, entry: dict, pin: Pin | None, fix: str, accept_hint: str) -> str | None:
    size = entry["size"]
    if pin is not None and pin.size is not None and size != pin.size:
        return (f"{path} has {size:,} bytes, not the {pin.size:,} of the released file (cut or replaced): {fix}; "
                f"if this copy is the one you mean to use, {accept_hint}.")
    if pin is not None and pin.sha256 is not None:
        if entry["sha256"] != pin.sha256:
            return (f"{path} does not match the released file (sha256 {entry['sha256'][:12]}..., expected "
                    f"{pin.sha256[:12]}...): {fix}; if this copy is the one you mean to use, {accept_hint}.")
        return None
    if pin is not None and pin.lines is not None and entry["lines"] != pin.lines:
        return (f"{path} has {entry['lines']:,} lines, not the {pin.lines:,} of the released file (cut or "
                f"replaced): {fix}; if this copy is the one you mean to use, {accept_hint}.")
    return None


def files_match(base: Path | str, files: dict | None) -> bool:
    """Every file of a marker (`{rel: {"size", "sha256"}}`) is in place with that size and sha256; a marker without
    files (none, empty, not a mapping) matches nothing.

    The sha256 is re-read only when a file's size or mtime changed, so the check is a stat per file.
    """
    if not isinstance(files, dict) or not files:
        return False
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
