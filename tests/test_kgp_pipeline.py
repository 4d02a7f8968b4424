"""KGP end to end on the sample passages with the fake LLM; metrics, prompts and answer cleaning."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrag_utils import metrics
from kgrag_utils.datasets import load_dataset
from kgrag_utils.errors import ConfigError
from kgrag_utils.llm import load_llm
from kgrag_utils.methods.kgp import KGP, KGPConfig, summarize
from kgrag_utils.methods.kgp.stages.evaluation import coverage_metrics
from kgrag_utils.methods.kgp.prompts import clean_answer, clean_evidence, evidence_prompt, reader_prompt


@given(st.lists(st.integers(0, 15), max_size=20), st.sets(st.integers(0, 15), min_size=1, max_size=4),
       st.sampled_from([1, 3, 5, 10]))
@settings(max_examples=60, deadline=None)
def test_single_passage_units_match_the_shared_metrics(ranked, gold, k):
    cover = [np.array([g]) for g in sorted(gold)]
    m = coverage_metrics(ranked, cover, [k])
    assert m[f"recall@{k}"] == pytest.approx(metrics.recall_at_k(ranked, gold, k))
    assert m[f"sf_em@{k}"] == metrics.sf_em_at_k(ranked, gold, k)


def test_a_unit_covered_by_several_passages_counts_once():
    cover = [np.array([4, 5]), np.array([9])]
    m = coverage_metrics([5, 4, 1, 9], cover, [1, 2, 3, 4])
    assert [m[f"recall@{k}"] for k in (1, 2, 3, 4)] == [0.5, 0.5, 0.5, 1.0]
    assert [m[f"sf_em@{k}"] for k in (1, 2, 3, 4)] == [0.0, 0.0, 0.0, 1.0]
    assert math.isnan(coverage_metrics([1], [], [1])["recall@1"])


def test_summary_keeps_failed_rows_in_the_denominator():
    rows = [{"recall@1": 1.0, "sf_em@1": 1.0, "doc_recall@1": 1.0, "doc_sf_em@1": 1.0},
            {"failed": True, "error": "boom"}]
    s = summarize(rows)
    assert s["n"] == 2 and s["n_failed"] == 1 and s["recall@1"] == 0.5


@pytest.mark.parametrize("raw, expected", [
    ("Next evidence: Alf Clausen was born in 1941.", "Alf Clausen was born in 1941."),
    ("\n\n**Evidence:** \"Find the birth year of Alf Clausen\"\nmore", "Find the birth year of Alf Clausen"),
    ("```\nSouth Korea hosted\n```", "South Korea hosted"),
    ("   ", ""),
])
def test_clean_evidence(raw, expected):
    assert clean_evidence(raw) == expected


@pytest.mark.parametrize("raw, expected", [
    ("Answer: 1988.", "1988"), ("G. Stanley Hall\nbecause ...", "G. Stanley Hall"), ("- Cape Agulhas", "Cape Agulhas"),
    ("Washington D.C.", "Washington D.C."), ("", ""), ("\"Paris\"", "Paris"),
])
def test_clean_answer(raw, expected):
    assert clean_answer(raw) == expected


def test_prompts_hold_the_question_and_the_clipped_passages():
    p = evidence_prompt("Q?", [("T1", "a " * 400), ("T2", "short")], chars=50)
    assert "Question: Q?" in p and "[1] T1:" in p and "[2] T2: short" in p and " ..." in p and len(p) < 900
    r = reader_prompt("Q?", [("T", "text")])
    assert r.rstrip().endswith("Answer:") and "[1] T: text" in r


@pytest.fixture(scope="module")
def sample():
    return load_dataset("sample-passages", split="all", limit=6, seed=0)


def _fake(gold_by_question: dict[str, str]):
    """Evidence names nothing useful; the reader answers the gold for the questions it knows."""

    def respond(prompt: str) -> str:
        if prompt.rstrip().endswith("Answer:"):
            return next((f"Answer: {a}." for q, a in gold_by_question.items() if q in prompt), "no idea")
        return "Next evidence: the founding year of the birthplace."

    return load_llm("fake", responses=respond, cache=False)


def test_kgp_record_holds_every_stage(sample):
    q = sample.items[0]
    llm = _fake({q.question: q.answers[0]})
    kgp = KGP.prepare(KGPConfig(traversal="llm", graph="tfidf", keyword_max_df=0.2, budget=8, branching=2,
                                set_passages=30), sample, llm=llm)
    rec = kgp.run_one(q)
    assert not rec["failed"], rec.get("traceback")
    assert rec["set_passages"] >= min(30, len(sample.corpus)) and rec["set"]["own_documents"] == len(q.paragraphs)
    assert len(rec["retrieved"]) == 8 and len(set(rec["retrieved"])) == 8
    assert rec["seeds"] and all("pid" in s and "score" in s for s in rec["seeds"])
    asked = [h for h in rec["hops"] if h["agent_called"]]
    assert asked and all(h["query"] == "the founding year of the birthplace." for h in asked)
    assert rec["n_agent_calls"] == len(asked)
    assert rec["answer"] == q.answers[0] and rec["em"] == 1.0 and rec["f1"] == 1.0
    assert rec["reader_prompt"].count("\n[") == min(8, kgp.config.reader_passages)
    for k in kgp.config.ks:
        assert 0.0 <= rec[f"recall@{k}"] <= 1.0
    assert set(rec["timings"]) >= {"set_seconds", "graph_seconds", "traversal_seconds", "reader_seconds"}
    assert rec["tokens"]["agent_prompt"] > 0 and rec["tokens"]["reader_prompt"] > 0
    assert "graph" in rec and rec["graph"]["nodes"] == rec["set_passages"]


def test_no_llm_variants_never_load_a_model(sample):
    class Boom:
        def __getattr__(self, name):
            raise AssertionError("the LLM must not be used")

    for traversal, graph in (("nollm", "tfidf"), ("tfidf", "entity")):
        kgp = KGP.prepare(KGPConfig(traversal=traversal, graph=graph, reader=False), sample, llm=Boom(), embedder=Boom())
        rec = kgp.run_one(sample.items[1])
        assert not rec["failed"], rec.get("traceback")
        assert "answer" not in rec and rec["tokens"]["agent_prompt"] == 0


def test_whole_corpus_shares_one_graph(sample):
    kgp = KGP.prepare(KGPConfig(traversal="nollm", graph="tfidf", whole_corpus=True, reader=False), sample)
    a, b = kgp.prepare_question(sample.items[0]), kgp.prepare_question(sample.items[1])
    assert a.graph is b.graph and len(a.dset) == len(sample.corpus)
    assert a.gold.units != b.gold.units


def test_an_exception_becomes_a_failed_record(sample):
    def broken(prompt: str) -> str:
        raise RuntimeError("model crashed")

    kgp = KGP.prepare(KGPConfig(traversal="llm", graph="entity", budget=10), sample, llm=load_llm("fake", responses=broken, cache=False))
    rec = kgp.run_one(sample.items[0])
    assert rec["failed"] and "model crashed" in rec["error"] and rec["id"] == sample.items[0].qid
    s = summarize([rec])
    assert s["n_failed"] == 1 and s["recall@30"] == 0.0


def test_kgp_refuses_a_kg_dataset():
    ds = load_dataset("sample-movies-1hop", limit=2)
    with pytest.raises(ConfigError):
        KGP(ds)


@pytest.mark.parametrize("question, polar", [
    ("Are Random House Tower and 888 7th Avenue both used for real estate?", True),
    ("The director Armando Iannucci has an OBE. Does the director Puneet Sira also have one?", True),
    ("Was Angus Wagner or Juan Carlos Falcón born first?", False),
    ("Who was the first president of the association which published Journal of Psychotherapy Integration?", False),
    ("What country was the author of Brand a citizen of?", False),
])
def test_reader_instruction_mentions_yes_no_only_for_polar_questions(question, polar):
    from kgrag_utils.methods.kgp.prompts import is_yes_no_question

    assert is_yes_no_question(question) is polar
    first_line = reader_prompt(question, [("T", "text")]).splitlines()[0]
    assert ("yes or no" in first_line) is polar and "yes" not in first_line.lower().replace("yes or no", "")
