"""Issue 17 cases 5, 6, 9: damaged data files, samples and caches are found at load.

Real data (not derived): a one-line error naming the file and how to refetch it. Derived files (samples,
fixtures, embedding shards): recomputed. The LLM reply cache (costly to recompute): a one-line error
naming the file and the fix.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from kgrag_utils import cli, embeddings, integrity, settings
from kgrag_utils.datasets import get_spec, load_dataset
from kgrag_utils.datasets.verify import verify_dataset
from kgrag_utils.datasets.samples import ensure_sample, sample_is_current
from kgrag_utils.embeddings import Embedder
from kgrag_utils.errors import IntegrityError
from kgrag_utils.llm.cache import CacheDamagedError, ResponseCache
from stand_ins import HashBOW


def _cut_at_line(path: Path, keep: float = 0.5) -> int:
    lines = path.read_bytes().splitlines(keepends=True)
    n = int(len(lines) * keep)
    path.write_bytes(b"".join(lines[:n]))
    return n


# ----------------------------------------------------------------------------- real data (case 5)
def test_a_pinned_file_cut_at_a_line_boundary_is_refused(tmp_path):
    root = tmp_path / "PathQuestion"
    root.mkdir(parents=True)
    (root / "2H-kb.txt").write_text("a\tr\tb\n" * 10)
    integrity.verify_file(root / "2H-kb.txt", integrity.Pin(size=60, lines=10))
    _cut_at_line(root / "2H-kb.txt")
    with pytest.raises(IntegrityError) as err:
        integrity.verify_file(root / "2H-kb.txt", integrity.Pin(size=60, lines=10), "refetch it")
    assert "2H-kb.txt has 30 bytes, not the 60 of the released file" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_file_without_a_pin_is_checked_against_what_it_first_was(tmp_path):
    path = tmp_path / "kb_reconstructed.txt"
    path.write_text("".join(f"e{i}|r|e{i + 1}\n" for i in range(100)))
    integrity.verify_file(path)  # first use: recorded
    integrity.verify_file(path)  # unchanged: a stat
    _cut_at_line(path)
    with pytest.raises(IntegrityError, match="changed since it was first verified here") as err:
        integrity.verify_file(path, fix="refetch it with `kgrag data fetch metaqa --force`",
                              accept_hint="`kgrag data verify metaqa-2hop --accept`")
    assert "kgrag data fetch metaqa --force" in str(err.value) and "--accept" in str(err.value)
    integrity.accept(path)  # a change made on purpose
    integrity.verify_file(path)


def test_a_file_edited_at_the_same_size_is_found(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("alpha|r|beta\n")
    integrity.verify_file(path)
    path.write_text("alpha|r|gamm\n")  # same size, another content (and mtime)
    with pytest.raises(IntegrityError, match="changed since"):
        integrity.verify_file(path)


def test_digests_are_cached_by_size_and_mtime(tmp_path, monkeypatch):
    path = tmp_path / "big.txt"
    path.write_text("x\n" * 1000)
    calls = []
    real = integrity._hash
    monkeypatch.setattr(integrity, "_hash", lambda p: calls.append(p) or real(p))
    first = integrity.file_digest(path)
    for _ in range(3):
        assert integrity.file_digest(path)["sha256"] == first["sha256"]
    assert len(calls) == 1  # hashed once; later checks are a stat
    path.write_text("y\n" * 1000)
    assert integrity.file_digest(path)["sha256"] != first["sha256"] and len(calls) == 2


@pytest.mark.realdata
def test_a_cut_metaqa_kb_is_refused_at_load(real_data, tmp_path, monkeypatch, capsys):
    copy = tmp_path / "data" / "MetaQA"
    shutil.copytree(real_data / "MetaQA", copy)
    for p in copy.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    monkeypatch.setenv("KGRAG_DATA_DIR", str(tmp_path / "data"))
    kb = next(p for p in (copy / "kb.txt", copy / "kb_reconstructed.txt") if p.exists())
    full = load_dataset("metaqa-2hop", limit=5)
    _cut_at_line(kb)
    with pytest.raises(IntegrityError) as err:
        load_dataset("metaqa-2hop", limit=5)
    message = str(err.value)
    assert str(kb) in message and "kgrag data fetch metaqa --force" in message and "\n" not in message
    # refused before a kernel starts, too
    assert cli.main(["run", "01_simgrag", "-p", "dataset=metaqa-2hop", "-p", "llm_preset=fake"]) == 2
    assert str(kb) in capsys.readouterr().err
    assert full.kg.num_edges > 0


@pytest.mark.realdata
def test_every_real_copy_matches_its_pins(real_data):
    # the copies this project measured with are the released files (sizes, sha256 and line counts)
    checked = [p for name in ("pq-2hop", "pq-3hop", "hotpotqa", "musique", "2wiki", "clutrr", "metaqa-1hop")
               for p in verify_dataset(get_spec(name))]
    assert checked


# ----------------------------------------------------------------------------- samples (case 6)
def test_a_sample_edited_at_the_same_size_is_regenerated(capsys):
    root = ensure_sample("movies")
    kb = root / "MetaQA" / "kb.txt"
    original = kb.read_bytes()
    text = original.decode()
    i = text.index("|")  # change one letter of the first head entity: same size
    edited = text[: i - 1] + ("X" if text[i - 1] != "X" else "Y") + text[i:]
    kb.write_text(edited)
    assert kb.stat().st_size == len(original)
    assert not sample_is_current("movies", root)
    load_dataset("sample-movies-1hop", limit=2)
    assert kb.read_bytes() == original
    assert "regenerating it" in capsys.readouterr().err


# ----------------------------------------------------------------------------- embedding cache (case 6)
def _embedder(tmp_path) -> Embedder:
    return Embedder(model=HashBOW(64), model_id="hashbow-test", cache_root=tmp_path / "emb")


def _shard(tmp_path) -> Path:
    [shard] = [p for p in (tmp_path / "emb").rglob("vecs.npy")]
    return shard.parent


@pytest.mark.parametrize("check", ["hashed directly", "through the digest store"])
@pytest.mark.parametrize("damage", ["valid floats", "truncated", "garbage"])
def test_a_damaged_embedding_shard_is_recomputed_never_used(tmp_path, capsys, monkeypatch, damage, check):
    if check == "through the digest store":  # the path a large shard takes
        monkeypatch.setattr(embeddings, "_STORE_MIN_BYTES", 0)
    texts = [f"entity number {i}" for i in range(20)]
    truth = _embedder(tmp_path).encode(texts)
    shard = _shard(tmp_path)
    vecs = shard / "vecs.npy"
    if damage == "valid floats":  # the same shape and dtype, vectors unrelated to their texts
        np.save(vecs, np.random.default_rng(0).standard_normal(truth.shape).astype(np.float32))
    elif damage == "truncated":
        vecs.write_bytes(vecs.read_bytes()[: vecs.stat().st_size // 2])
    else:
        vecs.write_bytes(b"\x00garbage" * 10)
    again = _embedder(tmp_path).encode(texts)
    np.testing.assert_allclose(again, truth, rtol=1e-6)
    assert "set aside" in capsys.readouterr().err
    assert (shard.parent / f".damaged-{shard.name}").exists()


def test_small_embedding_shards_never_enter_the_digest_store(tmp_path):
    emb = _embedder(tmp_path)
    for i in range(3):  # three batches, three small shards, each read back by a fresh cache
        emb.encode([f"batch {i} text {j}" for j in range(4)])
        _embedder(tmp_path).encode([f"batch {i} text {j}" for j in range(4)])
    store = integrity._read_store(integrity._store_path())
    assert not [k for k in store if str(tmp_path / "emb") in k]


def test_the_digest_store_forgets_vanished_files_under_the_cache_only(tmp_path):
    cached = settings.cache_dir("scratch") / f"{tmp_path.name}.npy"
    outside = tmp_path / "outside.txt"
    for path in (cached, outside):
        path.write_text("x\n")
        integrity.file_digest(path)
        path.unlink()
    kept = tmp_path / "kept.txt"
    kept.write_text("y\n")
    integrity.file_digest(kept)  # the next write of the store
    store = integrity._read_store(integrity._store_path())
    assert str(cached.resolve()) not in store
    assert str(outside.resolve()) in store and str(kept.resolve()) in store


def test_a_damaged_embedding_meta_file_is_rebuilt(tmp_path):
    texts = ["a b", "c d"]
    truth = _embedder(tmp_path).encode(texts)
    meta = next((tmp_path / "emb").rglob("meta.json"))
    meta.write_text('{"model_id": "hashbow-te')
    np.testing.assert_allclose(_embedder(tmp_path).encode(texts), truth, rtol=1e-6)


# ----------------------------------------------------------------------------- LLM cache (case 9)
@pytest.mark.parametrize("content", [b"this is not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_damaged_llm_cache_is_one_line_naming_the_file_and_the_fix(tmp_path, content):
    path = tmp_path / "responses.sqlite"
    good = ResponseCache(path)
    good.put("k", {"text": "hello"})
    good.close()
    path.write_bytes(content)
    with pytest.raises(CacheDamagedError) as err:
        cache = ResponseCache(path)
        cache.get("k")
    message = str(err.value)
    assert str(path) in message and f"mv {path} {path}.damaged" in message and "\n" not in message


def test_kgrag_data_verify_reports_each_dataset(tmp_path, monkeypatch, capsys):
    root = tmp_path / "data" / "PathQuestion"
    root.mkdir(parents=True)
    for name in ("PQ-2H.txt", "2H-kb.txt"):
        (root / name).write_text("x\n")
    monkeypatch.setenv("KGRAG_DATA_DIR", str(tmp_path / "data"))
    assert cli.main(["data", "verify", "pq-2hop"]) == 2  # not the released files: refused in one line
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "kgrag data fetch pathquestion --force" in err
