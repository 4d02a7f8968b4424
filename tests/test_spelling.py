"""Respelling typos towards a pool's vocabulary (kgrag_utils.spelling) and its use by the nearest choice."""

from __future__ import annotations

from test_demos import WordsEmbedder

from kgrag_utils.demos import DemoPool
from kgrag_utils.spelling import Respeller, english_frequency

POOL = ["which movies did X star in", "which movies did X write", "when was X released", "what does X do"]


def test_typos_are_respelt_to_the_nearest_pool_word():
    r = Respeller(POOL)
    assert r("whch moveis did X wrte") == "which movies did X write"  # a swap of two letters is one edit
    assert r("wat X do") == "what X do"  # "wat" is English, but "what" is far commoner: respelt
    assert r("whn was X relesed") == "when was X released"


def test_pool_words_real_words_and_far_words_stay():
    r = Respeller(POOL)
    assert r("which movies did X star in") == "which movies did X star in"
    # "show" is one edit from nothing here, "films" is a real word the pool does not use, "xyzzyq" is near nothing
    assert r("which films did X show") == "which films did X show"
    assert r("xyzzyq did X") == "xyzzyq did X"
    assert Respeller(["how was X"])("show X") == "show X"  # one edit from "how", but English knows "show" well
    assert english_frequency("show") > 0 and english_frequency("wgen") == 0
    assert r("did X, in 1999?") == "did X, in 1999?"  # punctuation and digits untouched


def test_the_nearest_choice_respells_the_question_not_the_pool():
    class Q:
        def __init__(self, qid, question):
            self.qid, self.question, self.topic_entities = qid, question, ()

    items = [Q(f"d{i}", t) for i, t in enumerate(POOL + ["did X go"])]
    typo = Q("t0", "whch moveis did X wrte")
    plain = DemoPool(items, WordsEmbedder(), spelling=False)
    respelt = DemoPool(items, WordsEmbedder(), spelling=True)
    assert plain.query_text(typo) == "whch moveis did X wrte"
    assert respelt.query_text(typo) == "which movies did X write"
    assert respelt.nearest(typo, 1)[0].id == "d1"  # the "write" template
    assert plain.nearest(typo, 1)[0].id == "d4"  # only "did X" is left to match: the shortest text wins
    assert respelt.texts == plain.texts  # the pool's own texts are never respelt
