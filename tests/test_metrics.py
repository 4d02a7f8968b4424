"""Known values for every metric, and the conventions for failures and missing gold."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrag_utils import metrics
from kgrag_utils.errors import ConfigError


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("The  Cat, sat!", "cat sat"),
        ("An apple a day", "apple day"),
        ("  Hello,\tworld.\n", "hello world"),
        ("theater", "theater"),  # articles only as whole words
        ("A", ""),
        (None, ""),
        ("Rock 'n' Roll", "rock n roll"),
    ],
)
def test_normalize_answer_squad(raw, expected):
    assert metrics.normalize_answer(raw) == expected


def test_exact_match_uses_normalisation_and_max_over_golds():
    assert metrics.exact_match("the Eiffel Tower.", ["Eiffel tower"]) == 1.0
    assert metrics.exact_match("Eiffel", ["Eiffel tower"]) == 0.0
    assert metrics.exact_match("Paris", ["London", "paris"]) == 1.0
    assert metrics.exact_match("Paris", "paris") == 1.0  # a string is one gold answer


@pytest.mark.parametrize("pred", [None, "", "  ", "the", "..."])
def test_empty_prediction_is_wrong(pred):
    assert metrics.exact_match(pred, ["x"]) == 0.0
    assert metrics.f1(pred, ["x"]) == 0.0
    assert metrics.containment(pred, ["x"]) == 0.0
    assert metrics.hits_at_1(pred, ["x"]) == 0.0


def test_f1_partial_overlap():
    # pred tokens: cat sat on mat (articles dropped); gold: cat on mat -> P=3/4, R=1, F1=6/7
    assert metrics.f1("the cat sat on the mat", ["cat on mat"]) == pytest.approx(6 / 7)
    # max over golds
    assert metrics.f1("cat on mat", ["dog", "cat on mat"]) == 1.0
    assert metrics.f1("blue whale", ["whale shark"]) == pytest.approx(0.5)
    # repeated tokens are counted with multiplicity
    assert metrics.f1("a a a", ["a"]) == 0.0  # all articles -> empty prediction
    assert metrics.f1("x x y", ["x y"]) == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))


def test_hits_at_1_is_strict_first_answer():
    assert metrics.hits_at_1(["London", "Paris"], ["paris"]) == 0.0
    assert metrics.hits_at_1(["Paris", "London"], ["paris"]) == 1.0
    assert metrics.hits_at_1("The Paris", ["paris"]) == 1.0
    assert metrics.hits_at_1("Paris, France", ["paris"]) == 0.0  # strict: no substring credit
    assert metrics.hits_at_1([], ["paris"]) == 0.0
    assert metrics.hits_at_1(None, ["paris"]) == 0.0


def test_containment_is_lenient_substring():
    assert metrics.containment("The answer is Paris, France.", ["paris"]) == 1.0
    assert metrics.containment("I think it's London", ["Paris", "london"]) == 1.0
    assert metrics.containment("Par is", ["paris"]) == 0.0
    # a gold that normalises to "" would match everything; it is ignored
    assert metrics.containment("anything at all", ["The"]) == 0.0


def test_recall_precision_sf_em_known_values():
    ranked = [1, 1, 2, 3, 4]  # duplicates are removed first: [1, 2, 3, 4]
    gold = [2, 3]
    assert metrics.recall_at_k(ranked, gold, 1) == 0.0
    assert metrics.recall_at_k(ranked, gold, 2) == 0.5
    assert metrics.recall_at_k(ranked, gold, 3) == 1.0
    assert metrics.precision_at_k(ranked, gold, 2) == 0.5
    assert metrics.precision_at_k(ranked, gold, 4) == 0.5
    assert metrics.precision_at_k([2], gold, 5) == pytest.approx(1 / 5)  # denominator is k
    assert metrics.sf_em_at_k(ranked, gold, 2) == 0.0
    assert metrics.sf_em_at_k(ranked, gold, 3) == 1.0
    # gold as a set, duplicates in gold do not count twice; titles work as ids
    assert metrics.recall_at_k(["a", "b"], ["b", "b", "c"], 2) == 0.5
    # numpy ids compare with python ids
    assert metrics.recall_at_k(np.array([5, 7]), [7], 2) == 1.0
    assert metrics.recall_at_k(None, [7], 2) == 0.0
    assert metrics.recall_at_k([], [7], 2) == 0.0


def test_empty_gold_is_nan_everywhere():
    for value in (
        metrics.recall_at_k([1, 2], [], 2),
        metrics.precision_at_k([1, 2], [], 2),
        metrics.sf_em_at_k([1, 2], [], 2),
        metrics.exact_match("x", []),
        metrics.f1("x", None),
        metrics.hits_at_1("x", []),
        metrics.containment("x", []),
    ):
        assert math.isnan(value)


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_bad_k_raises(k):
    with pytest.raises(ConfigError):
        metrics.recall_at_k([1], [1], k)


def test_summarize_counts_failures_as_zero_and_skips_no_gold():
    rows = [
        {"em": 1.0, "f1": 1.0},
        {"em": 0.0, "f1": 0.5},
        {"em": 1.0, "f1": 1.0, "failed": True},  # failed: counts as 0 whatever it holds
        {"em": None, "f1": None},  # no prediction: 0
        {"f1": 0.5},  # missing key: 0
        {"em": float("nan"), "f1": np.float64("nan")},  # no gold: left out
    ]
    out = metrics.summarize(rows, ["em", "f1"])
    assert out["n"] == 6
    assert out["n_failed"] == 1
    assert out["n_no_gold"] == 1
    assert out["em"] == pytest.approx(1.0 / 5)
    assert out["f1"] == pytest.approx(2.0 / 5)


def test_summarize_custom_failed_key_and_empty():
    out = metrics.summarize([{"r": 1.0, "err": "timeout"}, {"r": 1.0}], ["r"], failed_key="err")
    assert out["r"] == 0.5 and out["n_failed"] == 1
    empty = metrics.summarize([], ["r"])
    assert empty["n"] == 0 and math.isnan(empty["r"])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30), st.lists(st.text(max_size=30), min_size=1, max_size=3))
def test_answer_metric_invariants(pred, golds):
    em = metrics.exact_match(pred, golds)
    f = metrics.f1(pred, golds)
    assert 0.0 <= f <= 1.0
    assert em in (0.0, 1.0)
    assert em <= f  # an exact match is a perfect F1
    if em == 1.0:
        assert metrics.containment(pred, golds) == 1.0
        assert metrics.hits_at_1([pred], golds) == 1.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 20), max_size=15), st.lists(st.integers(0, 20), min_size=1, max_size=5), st.integers(1, 25))
def test_retrieval_metric_invariants(ranked, gold, k):
    r = metrics.recall_at_k(ranked, gold, k)
    assert 0.0 <= r <= 1.0
    assert metrics.recall_at_k(ranked, gold, k + 1) >= r  # monotone in k
    assert metrics.sf_em_at_k(ranked, gold, k) == float(r == 1.0)
    assert 0.0 <= metrics.precision_at_k(ranked, gold, k) <= 1.0
