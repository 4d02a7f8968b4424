"""The SQLite response cache on its own: round trips, corruption handling, concurrent processes."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import sqlite3

import pytest

from kgrag_utils.llm.cache import ResponseCache, canonical_json, make_cache_key


def _entry(i: int, writer: int) -> dict:
    return {"text": f"answer {i}", "prompt_tokens": i, "completion_tokens": 2 * i, "writer": writer}


def _writer(path: str, writer: int, n: int, barrier) -> int:
    """Child process: wait for the others, then write n entries one transaction each and read them back."""
    cache = ResponseCache(path, timeout_s=60)
    barrier.wait()
    for i in range(n):
        # keys 0..n-1 are shared by all writers (same content), the rest are private
        cache.put(f"shared-{i}", _entry(i, 0))
        cache.put(f"w{writer}-{i}", _entry(i, writer))
        cache.get_many([f"shared-{i}", f"w{writer}-{i}"])
    cache.close()
    return writer


def test_round_trip_counters_and_key_stability(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.get_many(["a", "b"]) == {}
    cache.put_many({"a": {"text": "x", "prompt_tokens": 1, "completion_tokens": 2}})
    assert cache.get("a") == {"text": "x", "prompt_tokens": 1, "completion_tokens": 2}
    assert cache.counters() == {"hits": 1, "misses": 2, "corrupted": 0}
    assert make_cache_key({"b": 1, "a": [1, 2]}) == make_cache_key({"a": [1, 2], "b": 1})
    assert make_cache_key({"a": 1}) != make_cache_key({"a": 2})
    with sqlite3.connect(cache.path) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize(
    "garble",
    [
        lambda v, c: (v[:-5], c),  # truncated value, stale checksum
        lambda v, c: ("not json", hashlib.sha256(b"not json").hexdigest()),  # checksum fine, JSON not
        lambda v, c: ('{"no_text": 1}', hashlib.sha256(b'{"no_text": 1}').hexdigest()),  # JSON without text
        lambda v, c: (v, "0" * 64),  # bad checksum
    ],
)
def test_corrupted_rows_are_detected_and_deleted(tmp_path, garble):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", {"text": "fine", "prompt_tokens": 1, "completion_tokens": 1})
    cache.put("ok", {"text": "other", "prompt_tokens": 1, "completion_tokens": 1})
    with sqlite3.connect(cache.path) as con:
        value, checksum = con.execute("SELECT value, checksum FROM responses WHERE key='k'").fetchone()
        con.execute("UPDATE responses SET value=?, checksum=? WHERE key='k'", garble(value, checksum))
    found = cache.get_many(["k", "ok"])
    assert list(found) == ["ok"]
    assert cache.corrupted == 1 and len(cache) == 1


def test_concurrent_writers_in_separate_processes(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    n, writers = 40, 4
    ctx = mp.get_context("spawn")
    barrier = ctx.Manager().Barrier(writers)
    with ctx.Pool(writers) as pool:
        done = pool.starmap(_writer, [(path, w, n, barrier) for w in range(1, writers + 1)])
    assert sorted(done) == list(range(1, writers + 1))
    cache = ResponseCache(path)
    assert len(cache) == n + writers * n
    keys = [f"shared-{i}" for i in range(n)] + [f"w{w}-{i}" for w in range(1, writers + 1) for i in range(n)]
    found = cache.get_many(keys)
    assert len(found) == len(keys) and cache.corrupted == 0
    assert found["w3-7"] == _entry(7, 3) and found["shared-5"] == _entry(5, 0)


def test_canonical_json_is_order_independent():
    assert canonical_json({"b": [1, {"y": 1, "x": 2}], "a": "é"}) == '{"a":"é","b":[1,{"x":2,"y":1}]}'
