"""A persistent LLM response cache in SQLite, safe to share between processes.

Why SQLite: one file, atomic transactions, and WAL mode lets several notebook kernels read while one
writes (a busy timeout makes writers wait instead of failing). Each value is stored with the sha256
of its JSON text; a row whose checksum or JSON does not verify is deleted and counted as a miss, so
the caller regenerates it instead of trusting a garbled answer.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from .. import settings
from ..errors import IntegrityError, KgragError, StorageError, storage_message

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key      TEXT PRIMARY KEY,
    value    TEXT NOT NULL,
    checksum TEXT NOT NULL,
    created  REAL NOT NULL
)
"""
_CHUNK = 500  # keys per SELECT (stays under SQLite's host-parameter limit)


class CacheDamagedError(IntegrityError):
    """The cache file is not a readable SQLite database."""


class CacheLockedError(KgragError):
    """Another process held the cache's write lock for longer than the bounded wait."""


#: how long a write waits, in all, for another process's lock on the cache before giving up in one line
LOCK_WAIT_S = 60.0
#: SQLite's own wait per attempt; between attempts the wait is said once and the bound is checked
_BUSY_S = 1.0


def _full_or_read_only(exc: BaseException, path: Path) -> StorageError | None:
    """SQLite's "disk is full" / "readonly database" as this project's one line naming KGRAG_CACHE_DIR."""
    text = str(exc).lower()
    code = errno.ENOSPC if "full" in text else errno.EROFS if "readonly" in text or "read-only" in text else None
    if code is None:
        return None
    return StorageError(storage_message(OSError(code, os.strerror(code), str(path)), path.parent, "KGRAG_CACHE_DIR"))


def _is_damage(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "disk image" in text


def canonical_json(obj: Any) -> str:
    """Stable JSON text (sorted keys, no spaces) so equal inputs hash equally."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def make_cache_key(parts: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of everything that changes an answer."""
    return hashlib.sha256(canonical_json(dict(parts)).encode("utf-8")).hexdigest()


def _checksum(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def default_cache_path() -> Path:
    return settings.cache_dir("llm") / "responses.sqlite"


class ResponseCache:
    """key -> JSON value store with hit/miss/corruption counters for this process.

    One connection per process (re-opened after a fork); a lock serialises threads.
    """

    def __init__(self, path: str | os.PathLike | None = None, timeout_s: float = LOCK_WAIT_S):
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.timeout_s = float(timeout_s)
        self.hits = 0
        self.misses = 0
        self.corrupted = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._connect()

    # ------------------------------------------------------------------ connection
    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        try:
            busy = min(self.timeout_s, _BUSY_S)
            conn = sqlite3.connect(str(self.path), timeout=busy, check_same_thread=False, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {int(busy * 1000)}")
        except sqlite3.DatabaseError as exc:
            raise _full_or_read_only(exc, self.path) or self._damaged(exc) from None
        self._retry(lambda: conn.execute("PRAGMA journal_mode = WAL"))
        self._retry(lambda: conn.execute("PRAGMA synchronous = NORMAL"))
        self._retry(lambda: conn.execute(_SCHEMA))
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _damaged(self, exc: BaseException) -> CacheDamagedError:
        return CacheDamagedError(
            f"LLM response cache {self.path} is damaged ({exc}): move it aside (`mv {self.path} {self.path}.damaged`) "
            f"and rerun; the replies it held are generated again."
        )

    def _retry(self, fn):
        """Run fn; while another process holds the lock ('database is locked'), wait at most `timeout_s` in all,
        saying so once, then a one-line CacheLockedError naming the file and how to find the holder.

        A file that is not a database, or whose pages are damaged, is a one-line CacheDamagedError; a full or
        read-only cache folder a StorageError naming KGRAG_CACHE_DIR.
        """
        deadline, said, i = time.monotonic() + self.timeout_s, False, 0
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if _is_damage(exc):
                    raise self._damaged(exc) from None
                full = _full_or_read_only(exc, self.path)
                if full is not None:
                    raise full from None
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise CacheLockedError(
                        f"the LLM reply cache {self.path} stayed locked by another process for {self.timeout_s:.0f} s: "
                        f"find it with `fuser {self.path}` and let it finish (or stop it), or set KGRAG_CACHE_DIR to "
                        f"another folder.") from None
                if not said:  # SQLite has waited _BUSY_S already: say so once
                    print(f"kgrag: waiting up to {self.timeout_s:.0f} s for the LLM reply cache {self.path}: another "
                          f"process holds its lock", file=sys.stderr, flush=True)
                    said = True
                time.sleep(min(0.05 * (i + 1), 0.5))
                i += 1
            except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
                raise self._damaged(exc) from None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __getstate__(self):  # picklable for multiprocessing: reconnect on the other side
        state = self.__dict__.copy()
        state["_conn"], state["_lock"], state["_pid"] = None, None, -1
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ reads
    def get_many(self, keys: Iterable[str]) -> dict[str, dict]:
        """Entries found for these keys; corrupted rows are deleted and reported as misses."""
        wanted = list(dict.fromkeys(keys))
        rows: list[tuple[str, str, str]] = []
        with self._lock:
            conn = self._connect()
            for s in range(0, len(wanted), _CHUNK):
                chunk = wanted[s : s + _CHUNK]
                q = f"SELECT key, value, checksum FROM responses WHERE key IN ({','.join('?' * len(chunk))})"
                rows.extend(self._retry(lambda: conn.execute(q, chunk).fetchall()))
        found: dict[str, dict] = {}
        bad: list[str] = []
        for key, value, checksum in rows:
            entry = self._decode(value, checksum)
            if entry is None:
                bad.append(key)
            else:
                found[key] = entry
        if bad:
            self.corrupted += len(bad)
            self.delete(bad)
        self.hits += len(found)
        self.misses += len(wanted) - len(found)
        return found

    def get(self, key: str) -> dict | None:
        return self.get_many([key]).get(key)

    @staticmethod
    def _decode(value: Any, checksum: Any) -> dict | None:
        if not isinstance(value, str) or not isinstance(checksum, str) or _checksum(value) != checksum:
            return None
        try:
            entry = json.loads(value)
        except ValueError:
            return None
        return entry if isinstance(entry, dict) and isinstance(entry.get("text"), str) else None

    # ------------------------------------------------------------------ writes
    def put_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Store entries (replacing existing keys) in one transaction."""
        if not entries:
            return
        now = time.time()
        rows = []
        for key, entry in entries.items():
            value = canonical_json(dict(entry))
            rows.append((key, value, _checksum(value), now))
        with self._lock:
            conn = self._connect()

            def write():
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany(
                        "INSERT OR REPLACE INTO responses (key, value, checksum, created) VALUES (?, ?, ?, ?)", rows
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise

            self._retry(write)

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        self.put_many({key: entry})

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        with self._lock:
            conn = self._connect()
            self._retry(lambda: conn.executemany("DELETE FROM responses WHERE key = ?", [(k,) for k in keys]))

    def clear(self) -> None:
        with self._lock:
            conn = self._connect()
            self._retry(lambda: conn.execute("DELETE FROM responses"))

    def __len__(self) -> int:
        with self._lock:
            conn = self._connect()
            return int(self._retry(lambda: conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]))

    def counters(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "corrupted": self.corrupted}

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"
