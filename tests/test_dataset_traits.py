"""Datasets carry their facts (kgrag_utils/datasets/traits.py): each registered spec has traits, a sample or
fixture takes its real twin's, a dataset nobody registered gets its kind's defaults, and a loaded Dataset
carries its spec's."""

from __future__ import annotations

import pytest

from kgrag_utils.datasets import Dataset, load_dataset
from kgrag_utils.datasets.registry import _SPECS, dataset_names, dataset_traits, get_spec
from kgrag_utils.datasets.traits import KIND_DEFAULTS, DatasetTraits, for_kind
from kgrag_utils.errors import ConfigError


def test_every_sample_and_fixture_names_a_real_twin_of_its_kind_and_has_its_traits():
    generated = [s for s in _SPECS.values() if s.source in ("sample", "fixture")]
    assert generated
    for spec in generated:
        twin = get_spec(spec.twin)
        assert twin.source == "real" and twin.kind == spec.kind, spec.name
        assert spec.traits == twin.traits, spec.name


def test_the_facts_the_methods_used_to_read_from_names():
    assert get_spec("factkg").traits.task == "verify" and get_spec("fixture-factkg").traits.task == "verify"
    assert {n for n in dataset_names() if get_spec(n).traits.task == "verify"} == {"factkg", "fixture-factkg"}
    assert {n for n in dataset_names() if get_spec(n).traits.question_style == "human"} == \
        {"webqsp", "cwq", "fixture-webqsp", "fixture-cwq", "webqsp-paths", "cwq-paths", "webqsp-test18",
         "fixture-webqsp-paths", "fixture-cwq-paths", "fixture-webqsp-test18", "webqsp-test18-kg", "fixture-webqsp-test18-kg"}
    assert {n for n in dataset_names() if get_spec(n).traits.gold_unit == "title"} == {"hotpotqa", "2wiki", "ircot-hotpotqa", "ircot-2wiki"}
    assert {n for n in dataset_names() if get_spec(n).traits.page_key == "title"} == {"iirc", "fixture-iirc"}
    families = {n: get_spec(n).traits.shot_family for n in dataset_names()}
    assert families["metaqa-2hop"] == families["sample-movies-3hop"] == "movies"
    assert families["pq-2hop"] == families["wc2014-conj"] == families["fixture-wc2014-1hop"] == "people"
    assert families["pq-file"] == ""  # a user's file in PathQuestion's format: the family comes from its KG


def test_a_dataset_nobody_registered_gets_the_defaults_of_its_kind():
    assert dataset_traits("my-own-kg") == for_kind("kgqa") == DatasetTraits()
    assert dataset_traits("my-own-passages", kind="passages") == KIND_DEFAULTS["passages"]
    assert dataset_traits("factkg", kind="passages").task == "verify"  # a registered name: its spec's
    own = Dataset(name="factkg-like-but-mine", kind="kgqa", split="test", items=[])
    assert own.traits == for_kind("kgqa")  # a name never decides: the spec (or the kind) does
    with pytest.raises(ConfigError, match="unknown dataset kind"):
        Dataset(name="x", kind="graphs", split="test", items=[])
    with pytest.raises(ConfigError, match="task='classify'"):
        DatasetTraits(task="classify")


def test_a_loaded_dataset_carries_its_specs_traits():
    ds = load_dataset("fixture-iirc", split="dev", limit=2)
    assert ds.traits is get_spec("fixture-iirc").traits and ds.traits.page_key == "title"
    assert load_dataset("sample-movies-1hop", limit=1).traits.shot_family == "movies"
