"""kgrag_utils/embedding_eta.py and its use by Embedder: an estimate before (or early in) a large encode."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kgrag_utils import embedding_eta
from kgrag_utils.embedding_eta import EncodeClock, chunk_bounds, first_chunk, human_seconds
from kgrag_utils.embeddings import Embedder


class CountingModel:
    def __init__(self, dim=4):
        self.dim, self.sizes = dim, []

    def encode(self, texts, batch_size=32, **kwargs):
        self.sizes.append(len(texts))
        rng = np.random.default_rng(len(texts))
        return rng.standard_normal((len(texts), self.dim)).astype(np.float32) + 1.0


def test_chunk_bounds_cover_everything_once():
    b = chunk_bounds(2500, 256, 1024)
    assert b == [(0, 256), (256, 1280), (1280, 2304), (2304, 2500)]
    assert chunk_bounds(100, 256, 1024) == [(0, 100)]
    assert chunk_bounds(0, 256, 1024) == []
    assert first_chunk(64, 1024) == 256 and first_chunk(128, 2048) == 512 and first_chunk(64, 200) == 200


def test_human_seconds():
    assert human_seconds(0.2) == "1 s" and human_seconds(58.4) == "58 s"
    assert human_seconds(1200) == "20 min" and human_seconds(7200) == "2.0 h"


def test_first_encode_estimates_after_first_chunk_then_records_rate(tmp_path, capsys):
    model = CountingModel()
    emb = Embedder(model, "counting", cache_root=tmp_path, batch_size=64)
    texts = [f"name {i}" for i in range(3000)]
    emb.encode(texts, progress=True)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("embedding 3,000 texts")]
    assert len(lines) == 1 and "from the first 256" in lines[0]
    assert model.sizes[0] == 256  # the small calibration chunk comes first
    rate_file = emb.cache.folder / embedding_eta.RATE_FILE
    info = json.loads(rate_file.read_text())
    (entry,) = info["by_threads"].values()
    assert entry["texts"] == 3000 and entry["texts_per_s"] > 0

    # a later encode of new texts (another dataset) announces before its first chunk, from the recorded rate
    emb.encode([f"other {i}" for i in range(3000)] + texts[:10], progress=True)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("embedding 3,000 texts")]
    assert len(lines) == 1 and "measured here before" in lines[0]
    assert emb.last_stats["cache_hits"] == 10 and emb.last_stats["encoded"] == 3000


def test_no_estimate_when_quiet_or_small(tmp_path, capsys):
    emb = Embedder(CountingModel(), "counting", cache_root=tmp_path)
    emb.encode([f"n{i}" for i in range(300)])  # below the progress threshold: no bar, no line
    assert "embedding" not in capsys.readouterr().err


def test_unreadable_rate_file_means_no_early_estimate(tmp_path, capsys):
    (tmp_path / embedding_eta.RATE_FILE).write_text("{not json")
    clock = EncodeClock(tmp_path, threads=2, total=5000, label="m", show=True)
    assert clock.recorded_rate() is None
    clock.before()
    assert capsys.readouterr().err == ""
    clock.chunk_done(300)
    clock.record()  # a garbled file is replaced, not fatal
    assert json.loads((tmp_path / embedding_eta.RATE_FILE).read_text())["by_threads"]["2"]["texts"] == 300


def test_rate_is_per_thread_count(tmp_path):
    (tmp_path / embedding_eta.RATE_FILE).write_text(
        json.dumps({"by_threads": {"1": {"texts_per_s": 400.0, "chars_per_s": 8000.0}}}))
    assert EncodeClock(tmp_path, 1, 10, "m", True).recorded_rate() == pytest.approx((400.0, 8000.0))
    assert EncodeClock(tmp_path, 2, 10, "m", True).recorded_rate() is None


def test_estimate_counts_characters_not_texts(tmp_path, capsys, monkeypatch):
    """Longest texts come first: after a first chunk holding half the characters in a tenth of the texts,
    the rest takes as long again (not nine times as long)."""
    ticks = iter([0.0, 10.0])
    monkeypatch.setattr(embedding_eta.time, "perf_counter", lambda: next(ticks))
    clock = EncodeClock(None, threads=1, total=1000, label="m", show=True, total_chars=20_000)
    clock.chunk_done(100, 10_000)
    line = capsys.readouterr().err
    assert "about 10 s at 50 texts/s (from the first 100)" in line  # 1,000 texts in 20 s in all
