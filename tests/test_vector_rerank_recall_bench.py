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


def test_the_rerank_ceiling_bounds_every_reranker(tmp_path):
    """The oracle's rerank-filled recall is the candidates' coverage (it picks one candidate per gold passage) and
    never below the similarity order's; questions without a gold candidate are counted."""
    import json

    from stand_ins import benchmark_module

    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.vector_rerank import VectorRerankConfig
    from kgrag_utils.methods.vector_rerank.method import VectorRerank

    bench = benchmark_module("vector_rerank_ceiling")
    ds = load_dataset("sample-passages", split="test", limit=6, seed=0)
    cfg = VectorRerankConfig(dataset="sample-passages", limit=6, entity_extraction="lexical", variants=("naive", "expand"))
    method = VectorRerank.prepare(cfg, ds)
    rows = [bench.oracle_rows(method, q, cap) for q in ds.items for cap in (2, 40)]
    for r in rows:
        assert r["expand@5"] <= r["oracle_filled@5"] <= r["coverage"] + 1e-9
        assert (r["n_gold_candidates"] == 0) == (r["coverage"] == 0)
    assert any(r["oracle_filled@5"] > r["expand@5"] for r in rows)  # the oracle's picks matter somewhere
    out = tmp_path / "ceiling.json"
    assert bench.main(["--dataset", "sample-passages", "--limit", "6", "--caps", "2,40", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    small, large = result["by_cap"]
    assert (small["cap"], large["cap"]) == (2, 40) and result["n_questions"] == 6
    assert large["coverage"] >= small["coverage"]  # more candidates reach more
    wide = {}
    for degree in (1, 2):  # uncapped in effect: a second step can only add reachable passages
        path = tmp_path / f"ceiling_d{degree}.json"
        assert bench.main(["--dataset", "sample-passages", "--limit", "6", "--caps", "100000", "--degree", str(degree),
                           "--out", str(path)]) == 0
        wide[degree] = json.loads(path.read_text())
    assert (wide[1]["degree"], wide[2]["degree"]) == (1, 2)
    assert wide[2]["by_cap"][0]["candidates_mean"] > wide[1]["by_cap"][0]["candidates_mean"]  # the step was taken
    assert wide[2]["by_cap"][0]["coverage"] >= wide[1]["by_cap"][0]["coverage"]
