"""KGP sweep data (density vs recall, branching vs recall) and the benchmark script on the sample."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

from kgrag_utils import settings
from kgrag_utils.datasets import load_dataset
from kgrag_utils.methods.kgp import KGP, KGPConfig
from kgrag_utils.methods.kgp.stages.graphs import PassageGraph
from kgrag_utils.methods.kgp.stages.docsets import GoldUnits
from kgrag_utils.methods.kgp.stages.sweeps import branching_sweep, density_sweep, graph_gold_stats
from stand_ins import benchmark_module


@pytest.fixture(scope="module")
def sample():
    return load_dataset("sample-passages", split="all", limit=4, seed=1)


def test_graph_gold_stats_on_a_known_graph():
    # passages 0,1 = gold doc A; 2 = gold doc B; 3 = other. Edges 1-2 and 2-3.
    adj = sp.csr_matrix(np.array([[0, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]], dtype=np.int8))
    gold = GoldUnits(["A", "B"], [], ["A", "B"], [np.array([0, 1]), np.array([2])], "document")
    st = graph_gold_stats(PassageGraph(kind="x", adj=adj), gold)
    assert st["sf_pair_recall"] == 1.0
    assert st["sf_neighbour_precision"] == pytest.approx(2 / 3)  # neighbours of 0,1,2: {2}, {1, 3}
    one = GoldUnits(["A"], [], ["A"], [np.array([0])], "document")
    assert math.isnan(graph_gold_stats(PassageGraph(kind="x", adj=adj), one)["sf_pair_recall"])


def test_density_grows_with_keywords_and_rows_are_complete(sample):
    kgp = KGP.prepare(KGPConfig(traversal="nollm", reader=False, set_passages=40, keyword_max_df=0.5), sample)
    rows = density_sweep(kgp, sample.items, "tfidf", values=[1, 3, 10])
    assert [r["value"] for r in rows] == [1, 3, 10] and all(r["n"] == 4 for r in rows)
    dens = [r["density"] for r in rows]
    assert dens[0] <= dens[1] <= dens[2] and dens[2] > dens[0]
    for r in rows:
        assert {"avg_degree", "sf_pair_recall", "sf_neighbour_precision", "recall@30", "sf_em@30"} <= set(r)


def test_branching_sweep_trades_seeds_for_branches(sample):
    kgp = KGP.prepare(KGPConfig(traversal="nollm", graph="tfidf", reader=False, budget=12), sample)
    rows = branching_sweep(kgp, sample.items, values=[1, 2, 5])
    assert [r["n_seeds"] for r in rows] == [6, 4, 2]
    assert kgp.config.branching == 3  # the sweep restores the config
    assert all(0 <= r["recall@10"] <= 1 for r in rows)


def _bench():
    return benchmark_module("kgp_retrieval", "kgp_retrieval_bench")


def test_benchmark_writes_variants_and_sweeps(tmp_path):
    bench = _bench()
    out = tmp_path / "kgp.json"
    data = bench.main(["--dataset", "sample-passages", "--graph", "tfidf,entity", "--traversal", "nollm,tfidf",
                       "--limit", "3", "--budget", "10", "--out", str(out), "--no-progress"])
    saved = json.loads(out.read_text())
    assert saved["n_questions"] == 3 and len(saved["results"]) == 3
    assert [(r["graph"], r["traversal"]) for r in saved["results"]] == [("tfidf", "nollm"), ("entity", "nollm"),
                                                                          (None, "tfidf")]
    assert saved["results"][0]["summary"]["n"] == 3 and "mean_graph_density" in saved["results"][0]["summary"]
    assert data["config"]["budget"] == 10
    sweep = tmp_path / "sweep.json"
    bench.main(["--dataset", "sample-passages", "--sweep", "branching", "--graph", "tfidf", "--limit", "2",
                "--out", str(sweep), "--no-progress"])
    rows = json.loads(sweep.read_text())["branching_sweep"]
    assert [r["branching"] for r in rows] == [1, 2, 3, 4, 5, 6, 8, 10]
    written = bench.plot_files([str(sweep)])
    assert written["branching"] and all(p.endswith((".png", ".svg")) for p in written["branching"])


def test_merge_pools_shard_records_into_the_unsharded_summary(tmp_path):
    bench = _bench()
    common = ["--dataset", "sample-passages", "--graph", "entity", "--traversal", "nollm", "--limit", "5",
              "--budget", "10", "--no-progress"]
    whole = bench.main(common + ["--out", str(tmp_path / "whole.json")])["results"][0]["summary"]
    shard_files = []
    for i in range(2):
        shard_files.append(str(tmp_path / f"s{i}.json"))
        bench.main(common + ["--shard", f"{i}/2", "--run-name", "merge-test", "--out", shard_files[-1]])
    sizes = [json.loads(open(p).read())["n_questions"] for p in shard_files]
    assert sizes == [3, 2]  # unequal shards: an average of the two averages would be wrong
    merged = bench.main(["--merge", ",".join(shard_files), "--out", str(tmp_path / "merged.json")])
    entry = merged["results"][0]
    assert merged["n_questions"] == 5 and entry["n_done"] == 5 and entry["complete"]
    assert entry["check_vs_shard_means"] < 1e-12
    for key, value in whole.items():
        if isinstance(value, float) and "@" in key:
            assert entry["summary"][key] == pytest.approx(value), key
    assert [s["run_name"] for s in entry["shards"]] == ["merge-test-shard0of2", "merge-test-shard1of2"]


def test_merge_refuses_a_missing_shard(tmp_path):
    from kgrag_utils.errors import IntegrityError

    bench = _bench()
    out = str(tmp_path / "s0.json")
    bench.main(["--dataset", "sample-passages", "--graph", "entity", "--traversal", "nollm", "--limit", "4",
                "--shard", "0/2", "--run-name", "merge-missing", "--out", out, "--no-progress"])
    with pytest.raises(IntegrityError, match="once each"):
        bench.main(["--merge", out, "--out", str(tmp_path / "merged.json")])


def test_reread_reruns_only_the_reader_on_the_recorded_passages(tmp_path):
    bench = _bench()
    common = ["--dataset", "sample-passages", "--graph", "entity", "--traversal", "llm", "--reader", "--llm", "fake",
              "--limit", "3", "--budget", "8", "--no-progress", "--run-name", "reread-test"]
    shards = [str(tmp_path / f"s{i}.json") for i in range(2)]
    for i, path in enumerate(shards):
        bench.main(common + ["--shard", f"{i}/2", "--out", path])
    merged = str(tmp_path / "merged.json")
    bench.main(["--merge", ",".join(shards), "--out", merged])
    out = bench.main(["--reread", merged, "--run-name", "reread-test-v2", "--out", str(tmp_path / "reread.json"),
                      "--no-progress"])
    s = out["summary"]
    assert out["n_questions"] == 3 and s["n"] == 3 and out["traversal_runs"] == ["reread-test-shard0of2",
                                                                                   "reread-test-shard1of2"]
    assert s["n_failed"] == 0 and s["em"] == 0.0  # the fake reader writes nothing: every answer is wrong, none dropped
    rows = [json.loads(line) for line in (settings.results_dir() / "reread-test-v2" / "examples.jsonl").read_text().splitlines()]
    traversal = {}
    for name in out["traversal_runs"]:
        for line in (settings.results_dir() / name / "examples.jsonl").read_text().splitlines():
            r = json.loads(line)
            traversal[r["id"]] = r
    assert len(rows) == 3
    for r in rows:  # the same passages in the same order as the traversal's reader saw; the current instruction
        assert r["reader_prompt"].startswith(r["instruction"])
        old_passages = traversal[r["id"]]["reader_prompt"].split("Passages:")[1].split("Question:")[0]
        assert r["reader_prompt"].split("Passages:")[1].split("Question:")[0] == old_passages and "[1] " in old_passages
    again = bench.main(["--reread", merged, "--run-name", "reread-test-v2", "--out", str(tmp_path / "again.json"),
                        "--no-progress"])
    assert again["summary"]["n"] == 3  # resumed: nothing added twice


def test_relative_paths_resolve_from_the_repo_root(tmp_path, monkeypatch):
    bench = _bench()
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    monkeypatch.setenv("KGRAG_ROOT", str(root))
    monkeypatch.chdir(elsewhere)
    common = ["--dataset", "sample-passages", "--graph", "entity", "--traversal", "nollm", "--limit", "3",
              "--budget", "8", "--no-progress", "--run-name", "relative-test"]
    bench.main(common + ["--shard", "0/1", "--out", "benchmarks/results/s0.json"])
    assert (root / "benchmarks/results/s0.json").exists() and not (elsewhere / "benchmarks").exists()
    merged = bench.main(["--merge", "benchmarks/results/s0.json", "--out", "benchmarks/results/merged.json"])
    assert merged["n_questions"] == 3 and (root / "benchmarks/results/merged.json").exists()
