"""benchmarks/vector_rerank_recall.py writes its JSON where every benchmark does: a relative --out resolves
from the repository root (KGRAG_ROOT), not from the current directory."""

from __future__ import annotations

import json
from pathlib import Path

from stand_ins import HashBOW, benchmark_module

from kgrag_utils.embeddings import Embedder

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    return benchmark_module("vector_rerank_recall")


def test_relative_out_resolves_from_repo_root(tmp_path, monkeypatch):
    bench = _bench()
    monkeypatch.setattr(bench, "load_embedder", lambda name: Embedder(model=HashBOW(dim=64), model_id="hash", cache=False))
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    monkeypatch.setenv("KGRAG_ROOT", str(root))
    monkeypatch.chdir(elsewhere)
    rel = Path("benchmarks/results/vr.json")
    argv = ["--dataset", "sample-passages", "--variants", "naive", "--limit", "3", "--no-progress", "--out", str(rel)]
    assert bench.main(argv) == 0
    assert not (elsewhere / rel).exists()
    out = json.loads((root / rel).read_text(encoding="utf-8"))
    assert out["dataset"] == "sample-passages" and out["runs"][0]["status"] == "ok"
    assert out["runs"][0]["summary"]["variants"]["naive"]["n"] == 3
    # a second run merges into the same file (read back from the root, not the cwd)
    assert bench.main(argv[:-1] + [str(rel)]) == 0
    assert len(json.loads((root / rel).read_text(encoding="utf-8"))["runs"]) == 1
