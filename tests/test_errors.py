"""The one "did you mean" helper every refusal of an unknown name uses."""

from __future__ import annotations

import numpy as np

from kgrag_utils.errors import close_matches, did_you_mean


def test_did_you_mean_names_the_closest_or_says_nothing():
    assert did_you_mean("limt", ["limit", "seed", "dataset"]) == "did you mean 'limit'?"
    assert did_you_mean("zzzz", ["limit", "seed"]) == ""
    assert did_you_mean("metaqa-1hopp", ["metaqa-1hop", "metaqa-2hop", "metaqa-3hop"], n=3, cutoff=0.5) == \
        "did you mean 'metaqa-1hop', 'metaqa-3hop', 'metaqa-2hop'?"  # difflib's order
    assert did_you_mean("x", []) == ""


def test_a_name_that_differs_only_in_case_comes_first():
    assert close_matches("DIRECTED_BY", ["written_by", "directed_by"], n=2) == ["directed_by"]
    assert close_matches("Dune", {"dune": 1, "dunes": 2}) == ["dune"]  # any iterable of names (dict keys)


def test_large_vocabularies_compare_only_names_with_the_same_first_letters():
    names = np.array([f"entity_{i}" for i in range(60_000)] + ["Zebra crossing"], dtype=object)
    assert close_matches("zebra crossing", names) == ["Zebra crossing"]
    assert close_matches("Zebra crosing", names) == ["Zebra crossing"]
    assert close_matches("Qqqq", names) == []


def test_renamed_names_suggest_their_new_name():
    assert did_you_mean("nod_topk", ["entity_topk", "seed"], renamed={"node_topk": "entity_topk"}) == \
        "did you mean 'entity_topk'?"
    assert did_you_mean("entity_topkk", ["entity_topk"], renamed={"node_topk": "entity_topk"}) == \
        "did you mean 'entity_topk'?"
