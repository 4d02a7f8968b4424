"""Compact relation selection on conjunctive questions: one chain per branch, derived and intersected.

The data is the generated WC2014 world (`fixture-wc2014-conj`, the released WC-C line format:
two paths joined by '*', each ending at the answer)."""

from __future__ import annotations

import pytest
from stand_ins import HashBOW

from kgrag_utils.datasets import KGQuestion, load_dataset
from kgrag_utils.embeddings import Embedder
from kgrag_utils.kg import KG
from kgrag_utils.methods.compact import CompactConfig, Compact, summarize
from kgrag_utils.methods.compact.stages.conjunctive import (branch_views, conjunctive_context, expand_branches,
                                                      select_conjunctive)
from kgrag_utils.methods.compact.stages.knowledge import ChainProposal
from kgrag_utils.methods.compact.stages.knn import masked_text
from kgrag_utils.methods.compact.stages.lexicon import OTHER_MARK, TOPIC_MARK, other_topics, question_tokens


@pytest.fixture(scope="module")
def embedder():
    return Embedder(model=HashBOW(), model_id="hash-bow-compact-conj", cache=False)


def test_a_conjunctive_question_is_read_once_per_branch_with_the_other_topic_marked():
    ds = load_dataset("fixture-wc2014-conj", split="all")
    q = next(x for x in ds if x.question.startswith("name a player who plays at"))
    views = branch_views(q)
    (t1, c1), (t2, c2) = q.gold_branches()
    assert [v.topic_entities for v in views] == [[t1], [t2]] and [v.chain for v in views] == [c1, c2]
    assert not any(v.conjunctive for v in views) and views[0].answers == q.answers
    toks = [question_tokens(v.question, v.topic_entities, other_topics(v)) for v in views]
    assert toks[0].index(TOPIC_MARK) == toks[1].index(OTHER_MARK) and toks[0].index(OTHER_MARK) == toks[1].index(TOPIC_MARK)
    assert "[X]" in masked_text(views[0]) and "[Y]" in masked_text(views[0])
    single = load_dataset("fixture-wc2014-1hop", split="all")[0]
    assert branch_views(single) == [single] and expand_branches([single, q]) == [single, *views]


@pytest.mark.parametrize("knowledge", ["lexicon", "knn"])
def test_compact_derives_each_branch_and_intersects_on_the_fixture_world(knowledge, embedder):
    ds = load_dataset("fixture-wc2014-conj", split="test")
    method = Compact.prepare(CompactConfig(knowledge=knowledge), ds, embedder=embedder)
    records = method.derive_many(ds.items)
    summary = summarize(records)
    assert summary["n"] == len(ds) >= 10
    assert summary["chain_accuracy"] == 1.0 and summary["derived_hits@1"] == 1.0 and summary["derivable_rate"] == 1.0
    for rec, q in zip(records, ds):
        assert rec["conjunctive"] and len(rec["branches"]) == 2 and rec["chain_correct"]
        assert sorted(rec["derived_answers"]) == sorted(q.answers)  # exactly the intersection, WC-C's answer set
        # one branch alone reaches more than the answers, so the intersection did the work somewhere
        assert all(b["n_reached"] >= len(q.answers) for b in rec["branches"])
        if not rec["capped"]:  # one fact per branch and answer (1-hop branches)
            assert rec["n_facts"] == 2 * rec["n_derived"]
    assert any(b["n_reached"] > len(q.answers) for rec, q in zip(records, ds) for b in rec["branches"])
    method.add_baselines(records, ds.items, progress=False)
    assert all(rec["topk_derivable"] for rec in records)


def _kg():
    return KG.from_triples([("Forward", "pos", "p1"), ("Forward", "pos", "p2"), ("Club", "club", "p2"),
                            ("Club", "club", "p3"), ("Club", "other", "p1"), ("Club", "loan", "p1")])


def test_the_derivability_check_takes_the_best_combination_whose_chains_meet():
    kg = _kg()
    ids = [[kg.entity_id("Forward")], [kg.entity_id("Club")]]
    props = [[ChainProposal((("pos", True),), 0.9, "t")],
             [ChainProposal((("other", True),), 0.6, "t"), ChainProposal((("missing", True),), 0.3, "t"),
              ChainProposal((("club", True),), 0.1, "t")]]
    sels, meet = select_conjunctive(kg, ids, props, max_candidates=5, policy="walk")
    assert [s.index for s in sels] == [0, 0] and kg.entity_names[meet].tolist() == ["p1"]  # rank sum 0 meets at p1
    props[1] = props[1][1:]  # without "other": the club chain is the first that meets
    sels, meet = select_conjunctive(kg, ids, props, max_candidates=5, policy="walk")
    assert [s.index for s in sels] == [0, 1] and kg.entity_names[meet].tolist() == ["p2"]
    sels, meet = select_conjunctive(kg, ids, props, max_candidates=1, policy="walk")
    assert not meet.size and all(not s.derivable for s in sels)


def test_the_conjunctive_context_keeps_only_paths_to_the_intersection_and_caps_whole_trees():
    kg = KG.from_triples([("F", "pos", f"p{i}") for i in range(6)] + [("C", "club", f"p{i}") for i in range(0, 6, 2)]
                         + [("C", "club", "q9")])
    ids = [[kg.entity_id("F")], [kg.entity_id("C")]]
    ctx = conjunctive_context(kg, ids, [(("pos", True),), (("club", True),)], max_facts=None, policy="walk")
    assert sorted(kg.entity_names[ctx.answers].tolist()) == ["p0", "p2", "p4"] and ctx.n_facts == 6
    assert "q9" not in {t for h, r, t in kg.triples(ctx.edge_ids)}
    capped = conjunctive_context(kg, ids, [(("pos", True),), (("club", True),)], max_facts=5, policy="walk")
    assert capped.capped and capped.n_facts == 4 and len(capped.answers_in_context) == 2  # two whole trees
    none = conjunctive_context(kg, ids, [(("pos", True),), (("nope", True),)], max_facts=5, policy="walk")
    assert not none.derivable and none.n_facts == 0


def test_single_chain_questions_are_untouched_by_the_branch_machinery():
    q = KGQuestion("q", "who directed [X]", ["X"], ["d"], [("directed_by", True)], 1, None)
    assert branch_views(q) == [q] and q.gold_branches() == [("X", [("directed_by", True)])]


def test_a_file_dataset_trains_on_its_own_training_cut(embedder):
    """pq-file (any file in the PathQuestion/WC2014 line format): compact finds the training split itself."""
    from kgrag_utils.datasets.fixtures import ensure_fixture

    path = ensure_fixture("wc2014") / "WC2014" / "WC-C.txt"
    ds = load_dataset("pq-file", split="test", path=str(path))
    method = Compact.prepare(dataset=ds, config=CompactConfig(knowledge="lexicon"), embedder=embedder)
    assert method.tuning["n_train"] == len(load_dataset("pq-file", split="train", path=str(path)))
    summary = summarize(method.derive_many(ds.items))
    assert summary["derived_hits@1"] == 1.0
