"""Compact relation selection on the real benchmark copies (skipped where they are absent), and the
no-LLM benchmark script on the sample data."""

from __future__ import annotations

import json


from kgrag_utils.datasets import load_dataset
from kgrag_utils.methods.compact import CompactConfig, Compact, KinshipRuleKnowledge, summarize
from stand_ins import benchmark_module


def test_clutrr_rules_match_the_data_and_derive_short_test_chains(real_data):
    train = load_dataset("clutrr", split="train")
    test = load_dataset("clutrr", split="test", chain_lengths=[2, 3, 4])
    knowledge = KinshipRuleKnowledge(test.rules).fit(train.items)
    check = knowledge.rule_check
    assert check["two_edge_stories"] > 1000 and check["disagree"] == 0 and check["no_rule"] == 0
    m = Compact.prepare(CompactConfig(), test, train=train)
    s = summarize(m.derive_many(test.items))
    assert s["derivable_rate"] == 1.0
    assert s["derived_hits@1"] >= 0.97
    assert s["by_chain_length"][2]["derived_accuracy"] == 1.0


def test_pathquestion_lexicon_predicts_chains(real_data):
    ds = load_dataset("pq-2hop", split="test")
    m = Compact.prepare(CompactConfig(), ds)
    s = summarize(m.derive_many(ds.items))
    assert s["chain_accuracy"] >= 0.97 and s["derived_hits@1"] >= 0.97
    assert m.topic_policy == "walk"  # PathQuestion's paths may come back to the topic


def test_metaqa_1hop_derived_answers(real_data):
    ds = load_dataset("metaqa-1hop", split="test", limit=300)
    m = Compact.prepare(CompactConfig(max_validation=500), ds)
    s = summarize(m.derive_many(ds.items))
    assert s["derived_hits@1_answerable"] >= 0.97
    assert s["facts_per_context"]["mean"] <= 15


def _benchmark_module():
    return benchmark_module("compact_derived")


def test_benchmark_script_on_the_sample(tmp_path):
    out = tmp_path / "bench.json"
    _benchmark_module().main(["--dataset", "sample-movies-2hop", "--baseline-limit", "0", "--out", str(out),
                              "--no-progress"])
    res = json.loads(out.read_text())
    assert res["n"] == len(load_dataset("sample-movies-2hop", split="test"))
    s = res["summary"]
    assert {"chain_accuracy", "derived_hits@1", "derived_hits@1_answerable", "derivable_rate", "gate_coverage",
            "gate_precision", "facts_per_context", "prompt_tokens_compact"} <= set(s)
    assert {"mean", "median", "p95"} <= set(s["facts_per_context"])
    assert res["token_comparison"] is None and res["goals"] == {}  # the goals are stated for the real copies
    assert all("question" not in row for row in res["error_patterns"])  # no benchmark text is written


def test_benchmark_script_takes_any_registered_dataset_and_its_options(tmp_path):
    """--dataset fixture-wc2014-conj (conjunctive), and a pq-file given by --option path=..."""
    from kgrag_utils.datasets.fixtures import ensure_fixture

    out = tmp_path / "conj.json"
    _benchmark_module().main(["--dataset", "fixture-wc2014-conj", "--knowledge", "lexicon", "--baseline-limit", "0",
                              "--out", str(out), "--no-progress"])
    res = json.loads(out.read_text())
    assert res["summary"]["derived_hits@1"] == 1.0 and res["dataset_options"] == {}
    wc = ensure_fixture("wc2014") / "WC2014"
    out = tmp_path / "file.json"
    _benchmark_module().main(["--dataset", "pq-file", "--option", f"path={wc / 'WC-P2.txt'}", "--knowledge", "lexicon",
                              "--baseline-limit", "0", "--out", str(out), "--no-progress"])
    res = json.loads(out.read_text())
    assert res["dataset_options"]["path"].endswith("WC-P2.txt")
    assert res["n"] == len(load_dataset("pq-file", split="test", path=str(wc / "WC-P2.txt")))  # its seeded test cut
