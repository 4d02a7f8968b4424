"""Compact relation selection on the real benchmark copies (skipped where they are absent), and the
no-LLM benchmark script on the sample data."""

from __future__ import annotations



from kgrag_utils.datasets import load_dataset
from kgrag_utils.methods.compact import CompactConfig, Compact, KinshipRuleKnowledge, summarize


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
