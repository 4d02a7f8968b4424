"""KGP on IIRC (the fixture in the released format): a question's paragraphs are its main passage plus
the paragraphs of the documents it links to; pages are articles (titles); the set -> graph ->
traversal -> reader path runs end to end with the fake LLM."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from kgrag_utils.datasets import load_dataset
from kgrag_utils.llm import load_llm
from kgrag_utils.methods.kgp import KGP, KGPConfig
from kgrag_utils.methods.kgp.stages.sweeps import evaluate
from kgrag_utils.datasets.registry import get_spec
from kgrag_utils.methods.kgp.prompts import READER_INSTRUCTION_YES_NO


@pytest.fixture(scope="module")
def train():
    return load_dataset("fixture-iirc", split="train")


def _titles_by_page(dset) -> dict[int, set[str]]:
    out = defaultdict(set)
    for page, title in zip(dset.pages.tolist(), dset.titles):
        out[page].add(title)
    return out


def test_iirc_pages_are_articles_elsewhere_documents():
    assert get_spec("iirc").traits.page_key == get_spec("fixture-iirc").traits.page_key == "title"
    assert get_spec("musique").traits.page_key == get_spec("sample-passages").traits.page_key == "passage"
    sample = load_dataset("sample-passages", split="all", limit=1)
    dset = KGP.prepare(KGPConfig(set_passages=0), sample).prepare_question(sample.items[0]).dset
    assert dset.page_index is None and np.array_equal(dset.pages, dset.doc_index)  # unchanged elsewhere


def test_a_question_set_is_its_linked_documents_plus_whole_distractor_articles(train):
    q = next(x for x in train.items if x.qid == "q-train-0")
    own_only = KGP.prepare(KGPConfig(set_passages=0), train).prepare_question(q).dset
    assert sorted(own_only.pids) == sorted(p.pid for p in q.paragraphs)
    assert len(own_only) == len(q.paragraphs) == 7 and own_only.summary()["pages"] == 3
    dset = KGP.prepare(KGPConfig(set_passages=len(q.paragraphs) + 1), train).prepare_question(q).dset
    own_titles = {p.title for p in q.paragraphs}
    added = {t for t in dset.titles if t not in own_titles}
    assert added, "the target asks for distractors"
    corpus_count = defaultdict(int)
    for p in train.corpus:
        corpus_count[p.title] += 1
    for title in added:  # a distractor article comes whole, never a single paragraph of it
        assert sum(t == title for t in dset.titles) == corpus_count[title]
    pages = _titles_by_page(dset)
    assert all(len(ts) == 1 for ts in pages.values()) and len(pages) == len(set(dset.titles))


def test_structural_page_nodes_join_the_paragraphs_of_one_article(train):
    q = train.items[0]
    prep = KGP.prepare(KGPConfig(set_passages=0, graph="tfidf", structural=True, traversal="nollm"), train).prepare_question(q)
    dset, graph = prep.dset, prep.graph
    assert graph.n_doc_nodes == dset.n_pages < dset.n_docs
    for i in range(len(dset)):
        same = {j for j in range(len(dset)) if j != i and dset.pages[j] == dset.pages[i]}
        assert same <= set(graph.neighbors(i).tolist())


def test_gold_units_are_the_supporting_paragraphs(train):
    kgp = KGP.prepare(KGPConfig(set_passages=0), train)
    for q in train.items:
        prep = kgp.prepare_question(q)
        assert prep.gold.kind == "document" and prep.gold.units == q.supporting
        for unit, cover in zip(prep.gold.units, prep.gold.cover):
            assert [prep.dset.pids[i] for i in cover] == [unit]


def _fake(responses: dict[str, str]):
    """Reader: the gold answer of the question in the prompt; agent: a fixed evidence request."""
    def reply(prompt: str) -> str:
        if "Answer:" in prompt.splitlines()[-1]:
            question = next(line for line in prompt.splitlines() if line.startswith("Question: "))[10:]
            return responses.get(question, "unknown")
        return "the founding year of the school"
    return reply


@pytest.mark.parametrize("traversal", ["llm", "nollm", "nograph", "tfidf"])
def test_iirc_runs_set_graph_traversal_reader_end_to_end(train, traversal):
    llm = load_llm("fake", responses=_fake({q.question: q.answers[0] for q in train.items}))
    cfg = KGPConfig(traversal=traversal, set_passages=9, budget=5, branching=2, reader_passages=5)
    rows, summary = evaluate(train, cfg, llm=llm)
    assert summary["n"] == len(train.items) and summary["n_failed"] == 0
    for row, q in zip(rows, train.items):
        assert not row["failed"], row.get("error")
        assert row["set"]["page_key"] == "title" and row["set_passages"] >= 9
        assert len(row["retrieved"]) == len(set(row["retrieved"])) <= 5
        assert row["gold_units"] == len(q.supporting)  # the metrics count the units (the supporting paragraphs)
        assert row["answer"] == q.answers[0] and row["em"] == 1.0 and row["f1"] == 1.0
        if traversal == "llm":
            assert row["n_agent_calls"] >= 1
    assert 0.0 <= summary["recall@5"] <= 1.0 and summary["em"] == 1.0
    binary = next(r for r, q in zip(rows, train.items) if q.qtype == "binary")
    assert binary["reader_prompt"].startswith(READER_INSTRUCTION_YES_NO)


def test_iirc_reader_scores_a_wrong_answer_as_wrong(train):
    llm = load_llm("fake", responses=lambda prompt: "Bergen")
    rows, summary = evaluate(train, KGPConfig(traversal="tfidf", set_passages=0, budget=3), llm=llm)
    assert summary["em"] == 0.0 and all(r["answer"] == "Bergen" for r in rows)
