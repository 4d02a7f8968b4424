"""Embedder and vector cache: what reaches the model, what is stored, and the real packaged MiniLM."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kgrag_utils.embeddings import DEFAULT_EMBEDDER, Embedder, VectorCache, load_embedder, text_keys
from kgrag_utils.errors import ConfigError, IntegrityError

DIM = 8


def fake_vector(text: str, dim: int = DIM) -> np.ndarray:
    """Deterministic, unnormalised vector for a text (same in every process)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32) * 3.0


class SpyModel:
    """Stands in for a sentence-transformers model and records every call."""

    def __init__(self, dim: int = DIM):
        self.dim = dim
        self.calls: list[list[str]] = []

    def encode(self, texts, batch_size=32, **kwargs):
        self.calls.append(list(texts))
        return np.stack([fake_vector(t, self.dim) for t in texts])

    @property
    def encoded(self) -> list[str]:
        return [t for call in self.calls for t in call]


@pytest.fixture
def cache_root(tmp_path) -> Path:
    return tmp_path / "emb-cache"


def expected(texts):
    v = np.stack([fake_vector(t) for t in texts])
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_second_encode_hits_cache_and_returns_same_vectors(cache_root):
    spy = SpyModel()
    emb = Embedder(spy, "spy-a", cache_root=cache_root)
    texts = ["alpha", "beta", "gamma"]
    first = emb.encode(texts)
    assert spy.encoded == ["alpha", "beta", "gamma"] or sorted(spy.encoded) == sorted(texts)
    assert emb.last_stats["encoded"] == 3 and emb.last_stats["cache_hits"] == 0
    second = emb.encode(texts)
    assert len(spy.calls) == 1  # nothing new reached the model
    assert emb.last_stats["cache_hits"] == 3 and emb.last_stats["encoded"] == 0
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, expected(texts), rtol=1e-6)


def test_output_is_float32_normalised_and_in_input_order(cache_root):
    spy = SpyModel()
    emb = Embedder(spy, "spy-a", cache_root=cache_root)
    texts = ["b", "a", "b", "c", "a"]
    out = emb.encode(texts)
    assert out.dtype == np.float32 and out.shape == (5, DIM)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(out, expected(texts), rtol=1e-6)
    assert sorted(spy.encoded) == ["a", "b", "c"]  # duplicates encoded once
    assert out[0] @ out[2] == pytest.approx(1.0, abs=1e-6)  # cosine of the same text


def test_only_missing_texts_reach_the_model(cache_root):
    spy = SpyModel()
    emb = Embedder(spy, "spy-a", cache_root=cache_root)
    emb.encode(["a", "b"])
    out = emb.encode(["b", "c", "a", "d"])
    assert sorted(spy.calls[-1]) == ["c", "d"]
    assert emb.last_stats["cache_hits"] == 2
    np.testing.assert_allclose(out, expected(["b", "c", "a", "d"]), rtol=1e-6)


def test_model_id_is_part_of_the_key(cache_root):
    spy_a, spy_b = SpyModel(), SpyModel()
    Embedder(spy_a, "spy-a", cache_root=cache_root).encode(["same text"])
    Embedder(spy_b, "spy-b", cache_root=cache_root).encode(["same text"])
    assert spy_b.encoded == ["same text"]  # a different model id does not see model a's vectors
    assert VectorCache.for_model("spy-a", cache_root).folder != VectorCache.for_model("spy-b", cache_root).folder


def test_cache_survives_new_objects_and_skips_model_load(cache_root):
    Embedder(SpyModel(), "spy-a", cache_root=cache_root).encode(["x", "y"])
    loads = []

    def loader():
        loads.append(1)
        return SpyModel()

    emb = Embedder(model_id="spy-a", loader=loader, cache_root=cache_root)
    assert emb.dim == DIM  # known from the cache
    out = emb.encode(["y", "x"])
    assert loads == [] and not emb.model_loaded  # fully cached: the model is never loaded
    np.testing.assert_allclose(out, expected(["y", "x"]), rtol=1e-6)
    emb.encode(["z"])
    assert loads == [1]


def test_cache_off_always_calls_model(cache_root):
    spy = SpyModel()
    emb = Embedder(spy, "spy-a", cache=False, cache_root=cache_root)
    emb.encode(["a"])
    emb.encode(["a"])
    assert len(spy.calls) == 2
    assert not cache_root.exists()


def test_bad_inputs(cache_root):
    emb = Embedder(SpyModel(), "spy-a", cache_root=cache_root)
    with pytest.raises(ConfigError):
        emb.encode("a single string")
    with pytest.raises(ConfigError):
        emb.encode(["ok", None])
    assert emb.encode([]).shape == (0, DIM)
    with pytest.raises(ConfigError):
        Embedder(None, "x")
    with pytest.raises(ConfigError):
        Embedder(SpyModel(), "")


def test_dim_change_under_same_id_is_refused(cache_root):
    Embedder(SpyModel(DIM), "spy-a", cache_root=cache_root).encode(["a"])
    emb = Embedder(SpyModel(DIM * 2), "spy-a", cache_root=cache_root)
    with pytest.raises((ConfigError, IntegrityError)):
        emb.encode(["new text"])


def test_compaction_keeps_every_vector(cache_root, monkeypatch):
    monkeypatch.setattr(VectorCache, "max_shards", 3)
    spy = SpyModel()
    emb = Embedder(spy, "spy-a", cache_root=cache_root)
    texts = [f"t{i}" for i in range(40)]
    for i in range(0, 40, 4):
        emb.encode(texts[i : i + 4])  # ten shards written; compaction keeps their number small
    shards = list((emb.cache.folder / "shards").iterdir())
    assert len(shards) <= 4
    assert len(emb.cache) == 40
    before = len(spy.calls)
    fresh = Embedder(SpyModel(), "spy-a", cache_root=cache_root)
    np.testing.assert_allclose(fresh.encode(texts), expected(texts), rtol=1e-6)
    assert fresh.last_stats["cache_hits"] == 40 and len(spy.calls) == before


def test_text_keys_are_stable_and_distinct():
    k = text_keys(["a", "b", "a", ""])
    assert k.dtype == np.int64 and k[0] == k[2] and k[0] != k[1]
    # stable across runs/processes: blake2b, not Python's salted hash()
    assert int(text_keys(["movie"])[0]) == int.from_bytes(hashlib.blake2b(b"movie", digest_size=8).digest(), "little", signed=True)


WRITER = textwrap.dedent(
    """
    import hashlib, sys
    import numpy as np
    from kgrag_utils.embeddings import Embedder, VectorCache
    VectorCache.max_shards = 4  # force compactions while the other process writes

    class Fake:
        def encode(self, texts, **kw):
            out = []
            for t in texts:
                seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
                out.append(np.random.default_rng(seed).standard_normal(8).astype(np.float32) * 3.0)
            return np.stack(out)

    root, start = sys.argv[1], int(sys.argv[2])
    emb = Embedder(Fake(), "spy-a", cache_root=root)
    texts = [f"t{i}" for i in range(start, start + 200)]
    for i in range(0, 200, 5):
        emb.encode(texts[i : i + 5])
    """
)


def test_two_processes_write_at_once(cache_root):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(cache_root), str(start)], env=env, stderr=subprocess.PIPE)
        for start in (0, 100)  # overlapping ranges: t100..t199 written by both
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-2000:]
    spy = SpyModel()
    emb = Embedder(spy, "spy-a", cache_root=cache_root)
    texts = [f"t{i}" for i in range(300)]
    out = emb.encode(texts)
    assert spy.calls == []  # every text was cached by one of the writers
    np.testing.assert_allclose(out, expected(texts), rtol=1e-6)


def test_unknown_model_name_fails_with_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = load_embedder("no-such-org/no-such-model-xyz", device="cpu")
    with pytest.raises(ConfigError) as info:
        emb.encode(["x"])
    assert "\n" not in str(info.value)


@pytest.mark.slow
def test_packaged_minilm_loads_and_ranks_sensibly():
    emb = load_embedder(DEFAULT_EMBEDDER, device="cpu")
    assert emb.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    v = emb.encode(["movie", "film", "banana", "movie"])
    assert v.shape == (4, 384) and emb.dim == 384
    sims = v @ v.T
    assert sims[0, 1] > sims[0, 2] + 0.2  # "movie" is much closer to "film" than to "banana"
    assert sims[0, 3] == pytest.approx(1.0, abs=1e-5)
    again = load_embedder(DEFAULT_EMBEDDER, device="cpu").encode(["film", "movie"])
    np.testing.assert_array_equal(again, v[[1, 0]])  # served from the cache, bit for bit


def test_length_suffix_parses_and_refuses_nonsense():
    from kgrag_utils.embeddings import parse_spec

    assert parse_spec("minilm@512") == ("minilm", 512)
    assert parse_spec("minilm") == ("minilm", None)
    assert parse_spec("org/model@v2") == ("org/model@v2", None)  # only a number after '@' is a length
    with pytest.raises(ConfigError, match="must be >= 1"):
        parse_spec("minilm@0")


def test_length_suffix_cuts_texts_and_keys_its_own_cache(tmp_path, monkeypatch):
    from kgrag_utils import random_models as rm

    monkeypatch.setenv("KGRAG_CACHE_DIR", str(tmp_path / "cache"))
    folder = rm.save_tiny_bert_embedder(tmp_path / "tiny", seed=0)
    same_start = ["abcdefghijklmnop" + "q" * 20, "abcdefghijklmnop" + "z" * 20]  # one word, one piece per character
    full = load_embedder(str(folder), device="cpu")
    cut = load_embedder(f"{folder}@8", device="cpu")  # [CLS] + 6 pieces + [SEP]
    assert cut.model_id == f"{full.model_id}@8"
    assert cut.cache.folder != full.cache.folder
    a, b = cut.encode(same_start)
    np.testing.assert_allclose(a, b, atol=1e-6)  # the tails differ only after the cut
    a, b = full.encode(same_start)
    assert float(a @ b) < 1 - 1e-4  # uncut, the tails are read
    with pytest.raises(ConfigError, match="at most 256 word pieces"):
        load_embedder(f"{folder}@1000", device="cpu").encode(["x"])
