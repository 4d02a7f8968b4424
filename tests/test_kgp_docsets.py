"""KGP document sets: passage splitting, seeded distractor sets, and gold units per passage."""

from __future__ import annotations

import numpy as np
import pytest

from kgrag_utils.datasets.items import Passage, PassageQuestion
from kgrag_utils.errors import ConfigError
from kgrag_utils.methods.kgp.stages.docsets import PassageCorpus, gold_units, split_document, split_sentences


def _doc(title: str, n_sent: int) -> Passage:
    sents = [f"{title} sentence number {i} is here." for i in range(n_sent)]
    return Passage(pid=title, title=title, text=" ".join(sents), sentences=sents)


def _corpus(n_docs: int = 40, n_sent: int = 4) -> list[Passage]:
    return [_doc(f"Doc{i:02d}", n_sent) for i in range(n_docs)]


def _question(qid: str, own: list[Passage], supporting: list[str], facts=None) -> PassageQuestion:
    meta = {"supporting_facts": facts} if facts else {}
    return PassageQuestion(qid=qid, question="q?", answers=["a"], paragraphs=own, supporting=supporting,
                           supporting_titles=supporting, qtype=None, meta=meta)


def test_split_sentences_on_terminal_punctuation():
    assert split_sentences("Alf was born in 1941. He wrote music! Did he? yes.") == [
        "Alf was born in 1941.", "He wrote music!", "Did he? yes."]
    assert split_sentences("  ") == []
    assert split_sentences("No. 5 is a perfume.")[0] == "No."  # the rule is simple and says so


def test_sentence_windows_cover_every_sentence_once_without_overlap():
    parts = split_document(_doc("A", 5), "sentences", window=2, stride=2)
    assert [span for _, span in parts] == [(0, 2), (2, 4), (4, 5)]
    assert parts[2][0] == "A sentence number 4 is here."
    overlapping = split_document(_doc("A", 4), "sentences", window=2, stride=1)
    assert [span for _, span in overlapping] == [(0, 2), (1, 3), (2, 4)]
    assert split_document(_doc("A", 3), "paragraph") == [(_doc("A", 3).text, (-1, -1))]
    with pytest.raises(ConfigError):
        split_document(_doc("A", 3), "words")


def test_paragraph_corpus_is_split_into_sentences_when_asked():
    doc = Passage(pid="p", title="P", text="One thing. Two things. Three.")
    assert [t for t, _ in split_document(doc, "sentences", window=1, stride=1)] == ["One thing.", "Two things.", "Three."]


def test_question_set_holds_own_documents_and_reaches_the_target():
    corpus = _corpus(40, 4)  # 2 windows per document
    pc = PassageCorpus(corpus, rule="sentences", window=2, stride=2)
    q = _question("q1", corpus[:3], ["Doc00", "Doc01"])
    s = pc.question_set(q, target=30, seed=0)
    assert len(s) >= 30 and len(s) - 30 < 2  # whole documents are added until the target is reached
    assert s.n_own_docs == 3 and set(s.doc_ids[:3]) == {"Doc00", "Doc01", "Doc02"}
    assert len(set(s.pids)) == len(s.pids)
    assert len(set(s.doc_ids)) == len(s.doc_ids)
    # seeded: same question -> same set; another question -> other distractors
    again = pc.question_set(q, target=30, seed=0)
    assert again.pids == s.pids
    other = pc.question_set(_question("q2", corpus[:3], ["Doc00"]), target=30, seed=0)
    assert set(other.doc_ids) != set(s.doc_ids)
    # passages are shuffled, so own documents do not sit first
    assert set(np.flatnonzero(s.doc_index < 3).tolist()) != set(range(6))
    own_only = pc.question_set(q, target=0)
    assert own_only.n_docs == 3 and len(own_only) == 6 and own_only.summary()["distractor_documents"] == 0


def test_supporting_document_missing_from_paragraphs_is_added_from_the_corpus():
    corpus = _corpus(10, 2)
    pc = PassageCorpus(corpus, rule="paragraph")
    q = _question("q", [], ["Doc07"])
    s = pc.question_set(q, target=0)
    assert s.doc_ids == ["Doc07"] and s.pids == ["Doc07"]


def test_whole_corpus_set_has_every_passage():
    pc = PassageCorpus(_corpus(5, 3), rule="sentences", window=2, stride=2)
    s = pc.whole_set()
    assert len(s) == 10 and s.n_docs == 5 and s.info["whole_corpus"]


def test_auto_rule_uses_sentences_only_when_the_corpus_stores_them():
    assert PassageCorpus(_corpus(3, 3)).rule == "sentences"
    assert PassageCorpus([Passage(pid="x", title="X", text="a. b.")]).rule == "paragraph"


def test_gold_units_for_supporting_sentences_point_at_the_right_window():
    corpus = _corpus(6, 5)
    pc = PassageCorpus(corpus, rule="sentences", window=2, stride=2)
    q = _question("q", corpus[:2], ["Doc00", "Doc01"], facts=[["Doc00", 3], ["Doc01", 0], ["Doc01", 9]])
    s = pc.question_set(q, target=0)
    g = gold_units(q, s)
    assert g.kind == "sentence" and g.units == ["Doc00#3", "Doc01#0", "Doc01#9"]
    (i,) = g.cover[0]
    assert s.pids[i] == "Doc00#s2" and s.spans[i] == (2, 4)
    (j,) = g.cover[1]
    assert s.pids[j] == "Doc01#s0"
    # index 9 is past Doc01's 5 sentences: any of its passages covers it, and that is counted
    assert sorted(s.pids[k] for k in g.cover[2]) == ["Doc01#s0", "Doc01#s2", "Doc01#s4"]
    assert g.n_fallback == 1
    assert [sorted(s.pids[k] for k in c) for c in g.doc_cover] == [["Doc00#s0", "Doc00#s2", "Doc00#s4"],
                                                                   ["Doc01#s0", "Doc01#s2", "Doc01#s4"]]


def test_gold_units_are_documents_without_supporting_facts():
    corpus = _corpus(6, 2)
    pc = PassageCorpus(corpus, rule="paragraph")
    q = _question("q", corpus[:3], ["Doc02", "Doc00"])
    s = pc.question_set(q, target=0)
    g = gold_units(q, s)
    assert g.kind == "document" and g.units == ["Doc02", "Doc00"]
    assert [s.pids[int(c[0])] for c in g.cover] == ["Doc02", "Doc00"]
    assert all(c.size == 1 for c in g.cover)
    assert np.array_equal(np.sort(g.supporting_passages), np.sort(np.concatenate(g.cover)))
