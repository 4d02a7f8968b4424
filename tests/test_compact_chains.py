"""Compact's chain evaluation (config evaluation="chains", methods/compact/stages/chain_eval.py): relation knowledge's
proposed chains against the gold chains, without a KG or an LLM; on the released-format WebQSP / CWQ fixture.

The embedder is a hashed bag of words (tests/stand_ins.py; no model).
"""

from __future__ import annotations

import pytest
from stand_ins import HashBOW

from kgrag_utils.datasets import load_dataset
from kgrag_utils.datasets.items import KGQuestion
from kgrag_utils.errors import ConfigError
from kgrag_utils.kg import KG
from kgrag_utils.methods.compact import CompactConfig
from kgrag_utils.methods.compact.stages.chain_eval import (CHAIN_VARIANT, chain_records, chain_summary, evaluate_chains,
                                                    fit_chain_knowledge, reach_undirected, training_items)
from kgrag_utils.methods.compact.stages.knowledge import ChainProposal, RelationKnowledge
from kgrag_utils.records import RunRecorder


class Canned(RelationKnowledge):
    """Proposes a fixed list of relation paths per question id; learnt the chains in `known`."""

    name = "canned"

    def __init__(self, by_id, known):
        super().__init__()
        self.by_id, self.known, self._fitted = by_id, known, True

    def fit(self, train_items, **_):
        return self

    def propose(self, item):
        return [ChainProposal(tuple((r, True) for r in path), 1.0 / (i + 1), "canned")
                for i, path in enumerate(self.by_id.get(item.qid, []))]

    def training_chains(self):
        return {tuple((r, True) for r in p) for p in self.known}


def _q(qid, paths, topics=(), answers=()):
    chains = [[(r, True) for r in p] for p in paths]
    return KGQuestion(qid=qid, question=f"question {qid}", topic_entities=list(topics), answers=list(answers),
                      chain=chains[0] if chains else None, hops=len(paths[0]) if paths else 0, qtype=None,
                      meta={"shortest_chains": chains})


def test_each_metric_reads_the_proposals_against_the_gold_chains():
    items = [_q("exact", [("a", "b"), ("c",)]), _q("other-gold", [("a", "b"), ("c",)]),
             _q("in-candidates", [("c",)]), _q("nothing", [("d",)]), _q("no-gold", [])]
    knowledge = Canned({"exact": [("a", "b")], "other-gold": [("c",), ("a", "b")], "in-candidates": [("x",), ("c",)],
                        "no-gold": [("a", "b")]}, known=[("a", "b"), ("c",)])
    recs = {r["id"]: r for r in chain_records(knowledge, items, max_candidates=2)}
    got = {k: recs[k]["scores"][CHAIN_VARIANT] for k in recs}
    assert got["exact"] == {"exact_chain": 1.0, "any_gold_hit": 1.0, "hit_in_candidates": 1.0, "coverage": 1.0,
                            "gold_chain_seen": 1.0}
    assert got["other-gold"]["exact_chain"] == 0.0 and got["other-gold"]["any_gold_hit"] == 1.0
    assert got["in-candidates"]["any_gold_hit"] == 0.0 and got["in-candidates"]["hit_in_candidates"] == 1.0
    assert got["nothing"] == {"exact_chain": 0.0, "any_gold_hit": 0.0, "hit_in_candidates": 0.0, "coverage": 0.0,
                              "gold_chain_seen": 0.0}
    assert set(got["no-gold"].values()) == {None}  # no gold chain: left out of every rate
    s = chain_summary(list(recs.values()))
    assert s["n_with_gold"] == 4 and s["n_without_gold"] == 1 and s["exact_chain"] == 0.25
    assert s["any_gold_hit"] == 0.5 and s["hit_in_candidates"] == 0.75 and s["coverage"] == 0.75
    assert s["n_unseen_only"] == 1 and s["any_gold_hit_unseen_only"] == 0.0
    # a direction never matters: the relation sequence decides
    flipped = _q("flip", [("a", "b")])
    flipped.meta["shortest_chains"] = [[("a", False), ("b", True)]]
    [rec] = chain_records(Canned({"flip": [("a", "b")]}, []), [flipped], 1)
    assert rec["scores"][CHAIN_VARIANT]["any_gold_hit"] == 1.0


def test_reach_undirected_walks_each_step_both_ways():
    kg = KG.from_triples([("Jamaica", "languages", "English"), ("Kingston", "capital_of", "Jamaica"),
                          ("English", "spoken_in", "UK")])
    names = lambda ids: sorted(str(kg.entity_names[i]) for i in ids)  # noqa: E731
    assert names(reach_undirected(kg, ["Jamaica"], ["languages"])) == ["English"]
    assert names(reach_undirected(kg, ["Jamaica"], ["capital_of"])) == ["Kingston"]  # walked tail -> head
    assert names(reach_undirected(kg, ["Kingston"], ["capital_of", "languages", "spoken_in"])) == ["UK"]
    assert reach_undirected(kg, ["Jamaica"], ["unknown"]).size == 0
    assert reach_undirected(kg, ["Nowhere"], ["languages"]).size == 0


def test_chain_evaluation_on_the_fixture_records_resumes_and_checks_where_a_kg_exists(tmp_path):
    cfg = CompactConfig(dataset="fixture-webqsp-paths", evaluation="chains", knowledge="knn", reader=False, limit=0)
    assert not cfg.needs_llm
    test = load_dataset("fixture-webqsp-paths", split="test")
    rec = RunRecorder("compact", {"case": "chains"}, run_name="chains-fixture", root=tmp_path)
    records, summary, knowledge = evaluate_chains(cfg, test, recorder=rec, embedder=HashBOW())
    assert [r["id"] for r in records] == [q.qid for q in test.items] and knowledge.name == "knn"
    assert summary["trained_on"] == "fixture-webqsp-paths train" and summary["n"] == 3
    assert {r["metric"] for r in summary["rows"]} >= {"exact_chain", "any_gold_hit", "coverage", "gold_chain_seen"}
    assert all(r["variant"] == CHAIN_VARIANT and r["uses_llm"] is False for r in summary["rows"])
    assert "check_passes" not in summary  # no subgraphs: no check
    rec.close()
    again = RunRecorder("compact", {"case": "chains"}, run_name="chains-fixture", root=tmp_path)
    assert again.done_ids == {q.qid for q in test.items}
    records2, summary2, _ = evaluate_chains(cfg, test, recorder=again, embedder=HashBOW())
    assert len(records2) == 3 and summary2["any_gold_hit"] == summary["any_gold_hit"]
    again.close()
    # whole subgraphs: the check runs (WebQTest-1, "capital city of jamaica", reaches Kingston either way round)
    whole = load_dataset("fixture-webqsp-test18", split="test")
    cfg18 = cfg.replace(dataset="fixture-webqsp-test18", train_dataset="fixture-webqsp-paths")
    records18, summary18, _ = evaluate_chains(cfg18, whole, embedder=HashBOW())
    assert "check_passes" in summary18 and all("check_passes" in r for r in records18)
    assert all(r["check_right"] <= r["check_passes"] for r in records18)


def test_the_lexicon_threshold_is_chosen_on_validation_and_the_refusals():
    train = load_dataset("fixture-webqsp-paths", split="train")
    cfg = CompactConfig(evaluation="chains", validation_fraction=0.5, threshold_grid=(1.5, 3.0))
    knowledge, tuning = fit_chain_knowledge(cfg, "hybrid", [q for q in train.items if q.chain], HashBOW())
    assert tuning["threshold_source"] == "validation" and [r["threshold"] for r in tuning["threshold_table"]] == [1.5, 3.0]
    assert knowledge.threshold == tuning["threshold"]
    with pytest.raises(ConfigError, match="knowledge must be lexicon, knn or hybrid"):
        fit_chain_knowledge(cfg, "rules", train.items, None)
    with pytest.raises(ConfigError, match="its own training split"):
        training_items(cfg.replace(train_dataset="fixture-webqsp-paths"), train)
    with pytest.raises(ConfigError, match="unknown dataset"):
        CompactConfig(evaluation="chains", train_dataset="fixture-webqsp-pathz")
    items, source = training_items(cfg.replace(train_dataset="fixture-webqsp-paths"),
                                   load_dataset("fixture-cwq-paths", split="test"))
    assert source == "fixture-webqsp-paths train" and len(items) == 4
