"""Compact relation selection - the pipeline end to end on the sample data with the fake LLM:
preparation on the training split, records, the reader on both contexts, the gate, resume."""

from __future__ import annotations

import re

import pytest

from kgrag_utils.datasets import load_dataset
from kgrag_utils.embeddings import Embedder
from kgrag_utils.errors import ConfigError
from kgrag_utils.llm import load_llm
from kgrag_utils.methods.compact import Compact, CompactConfig, summarize
from kgrag_utils.methods.compact.stages.splits import split_validation, training_split
from kgrag_utils.records import RunRecorder
from stand_ins import HashBOW




def hash_embedder():
    return Embedder(model=HashBOW(), model_id="hash-bow-compact-pipeline", cache=False)


def first_object(prompt: str) -> str:
    """A fake reader: the object of the first fact in the prompt."""
    m = re.search(r"^\((.+?), ([^,]+?), (.+)\)$", prompt, re.M)
    return m.group(3) if m else "nothing"


@pytest.fixture(scope="module")
def movies():
    return load_dataset("sample-movies-2hop", split="test")


@pytest.fixture(scope="module")
def method(movies):
    return Compact.prepare(CompactConfig(), movies, embedder=hash_embedder())


def test_prepare_learns_on_the_training_split_and_tunes_on_its_validation_part(movies, method):
    assert training_split("sample-movies-2hop") == "dev" and training_split("pq-2hop") == "train"
    t = method.tuning
    assert t["n_fit"] + t["n_validation"] == t["n_train"] and t["n_validation"] > 0
    assert t["threshold_source"] == "validation" and t["threshold"] in CompactConfig().threshold_grid
    assert {row["threshold"] for row in t["threshold_table"]} == set(CompactConfig().threshold_grid)
    assert method.topic_policy in ("walk", "exclude_end", "avoid")
    assert method.gate is not None and method.gate.n_validation == t["n_validation"]
    assert method.knowledge.n_train == t["n_train"]  # refit on the whole training split
    assert t["validation_derived"]["gate_coverage"] == pytest.approx(method.gate.coverage)
    with pytest.raises(ConfigError):
        Compact.prepare(CompactConfig(), load_dataset("sample-movies-2hop", split="dev"))
    with pytest.raises(ConfigError):
        Compact.prepare(CompactConfig(knowledge="rules"), movies)


def test_a_named_gate_and_a_given_threshold_are_kept(movies):
    m = Compact.prepare(CompactConfig(gate="consistent+unique", lift_threshold=2.0), movies, embedder=hash_embedder())
    assert m.gate.name == "consistent+unique" and m.tuning["threshold_source"] == "given"
    assert m.knowledge.threshold == 2.0 and "threshold_table" not in m.tuning
    row = next(r for r in m.gate.table if r["gate"] == "consistent+unique")
    assert m.gate.coverage == row["coverage"]
    recs = m.derive_many(movies.items[:30])
    assert all(r["gate"] == (r["derivable"] and r["consistent"] and r["n_derived"] == 1) for r in recs)


def test_split_validation_is_seeded_disjoint_and_ordered():
    items = list(range(100))
    fit, val = split_validation(items, 0.2, seed=3)
    assert len(val) == 20 and sorted(fit + val) == items and fit == sorted(fit) and val == sorted(val)
    assert split_validation(items, 0.2, seed=3) == (fit, val)
    assert len(split_validation(items, 0.5, max_validation=7)[1]) == 7


def test_derive_records_hold_every_stage(movies, method):
    recs = method.derive_many(movies.items[:20])
    for r, q in zip(recs, movies.items[:20]):
        assert r["id"] == q.qid and r["answers"] == q.answers
        for key in ("proposals", "chain", "chain_source", "chain_correct", "derivable", "derived_answers",
                    "compact_facts", "n_facts", "consistency", "consistent", "gate"):
            assert key in r
        assert r["n_facts"] <= CompactConfig().max_facts
        if r["derivable"]:
            assert r["derived_answers"] and r["n_facts"] >= q.hops
    s = summarize(recs)
    assert s["n"] == 20 and 0.8 <= s["chain_accuracy"] <= 1.0 and s["derived_hits@1"] > 0.8


def test_run_reads_both_contexts_applies_the_gate_and_resumes(movies, method):
    llm = load_llm("fake", responses=first_object, cache=False)
    items = movies.items[:6]
    rec = RunRecorder("compact", {"dataset": "sample-movies-2hop", "limit": 6}, run_name="compact-pipeline-test")
    method.llm = llm
    out = method.run(items, recorder=rec, progress=False)
    assert len(out) == 6 and len(llm.prompts_seen) == 12  # one prompt per item and context
    for r in out:
        assert len(r["topk_facts"]) <= 100 and r["prompt_compact"] != r["prompt_topk"]
        assert r["prompt_tokens_compact"] <= r["prompt_tokens_topk"]
        expected = first_object(r["prompt_compact"])
        assert r["llm_compact"] == expected and r["answer_compact"] == [expected]
        final = r["derived_answers"][:1] if r["gate"] else r["answer_compact"]
        assert r["hits@1_compact_gated"] == float(bool(final) and final[0] in r["answers"])
    # resume: a second run with the same recorder parameters generates nothing new
    llm2 = load_llm("fake", responses=first_object, cache=False)
    rec2 = RunRecorder("compact", {"dataset": "sample-movies-2hop", "limit": 6}, run_name="compact-pipeline-test")
    method.llm = llm2
    again = method.run(items, recorder=rec2, progress=False)
    assert len(again) == 6 and llm2.prompts_seen == []
    s = summarize(again)
    assert set(s["llm_compact"]) >= {"hits@1", "containment", "hits@1_gated", "n_failed"}
    assert s["prompt_token_ratio_topk_over_compact"] >= 1.0


def test_kinship_pipeline_with_rules():
    ds = load_dataset("sample-kinship", split="test", limit=12)
    m = Compact.prepare(CompactConfig(), ds)
    assert m.knowledge.name == "rules"
    llm = load_llm("fake", responses=lambda p: "mother", cache=False)
    m.llm = llm
    recs = m.run(ds.items, progress=False)
    assert len(recs) == 12
    for r, s in zip(recs, ds.items):
        assert r["n_facts"] == len(r["path_relations"]) >= 2
        assert r["answer_compact"] == "mother" and r["hits@1_compact"] == float(s.target == "mother")
        assert "Facts:" in r["prompt_topk"] and "[" not in r["prompt_topk"].split("Facts:")[1]
    s = summarize(recs)
    assert s["derived_hits@1"] >= 0.9 and set(s["by_chain_length"]) <= {2, 3, 4, 5, 6}
    with pytest.raises(ConfigError):
        Compact.prepare(CompactConfig(knowledge="lexicon"), ds)


def test_baseline_radius_is_at_least_two_hops():
    ds = load_dataset("sample-movies-1hop", split="test", limit=5)
    m = Compact.prepare(CompactConfig(), ds, embedder=hash_embedder())
    recs = m.add_baselines(m.derive_many(ds.items), ds.items)
    for r, q in zip(recs, ds.items):
        topic = [ds.kg.entity_id(t) for t in q.topic_entities]
        assert r["topk_pool"] == ds.kg.khop_edges(topic, 2, max_edges=CompactConfig().baseline_pool).size
        assert r["topk_pool"] > ds.kg.khop_edges(topic, 1).size  # a 1-hop question still gets a 2-hop pool
        assert r["topk_n_facts"] == min(100, r["topk_pool"])


def test_knn_knowledge_through_the_pipeline():
    ds = load_dataset("sample-movies-1hop", split="test", limit=20)
    m = Compact.prepare(CompactConfig(knowledge="knn", knn_k=5), ds, embedder=hash_embedder())
    recs = m.derive_many(ds.items)
    assert all(r["chain_source"] == "knn" for r in recs if r["chain"])
    assert summarize(recs)["chain_accuracy"] >= 0.7


def test_prepare_picks_the_class_of_the_dataset_kind(method):
    from kgrag_utils.methods.compact.stages.kinship import KinshipCompact

    assert type(method) is Compact and method.kind == "kgqa" and method.describe()["topic_policy"] == method.topic_policy
    kin = Compact.prepare(CompactConfig(), load_dataset("sample-kinship", split="test", limit=4))
    assert type(kin) is KinshipCompact and kin.kind == "kinship" and kin.describe()["topic_policy"] is None
    assert kin.vocabulary and "mother" in kin.vocabulary
    with pytest.raises(ConfigError, match="set knowledge='rules'"):
        Compact.prepare(CompactConfig(knowledge="lexicon"), load_dataset("sample-kinship", split="test", limit=4))
    with pytest.raises(ConfigError, match="reads kgqa or kinship datasets"):
        Compact.prepare(CompactConfig(), load_dataset("sample-passages", split="test", limit=2))
