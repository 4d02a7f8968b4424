"""Issue 27, case 11: a benchmark never resumes another question file's records as its own.

Every dataset option (and a non-default split) enters the run's parameters, so its run name and resume
key; an option that names a file enters by the file's content (`evaluation_params`, the resume key of the
benchmarks that take --dataset and resume; the method-quality scripts that took them went in issue 44).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest


from kgrag_utils import records
from kgrag_utils.datasets.arguments import add_dataset_arguments, evaluation_params, evaluation_params_from_args
from kgrag_utils.datasets.registry import _SPECS, get_spec

#: one value per option name that is not its loader's default
OPTION_VALUES = {"variant": "ntm", "answerable": False, "path": "PQL-2H.txt", "kb": "PQL2-KB.txt",
                 "chain_lengths": [4, 5], "questions": "other_questions.json", "openie": False, "graph": "full",
                 "relation_filter": False, "kg": "dbpedia_2015_undirected.pickle", "paths": False,
                 "unanswerable": False}


@pytest.mark.parametrize("name, option", [(s.name, o) for s in _SPECS.values() for o in s.options])
def test_every_dataset_option_enters_the_resume_key(name, option):
    assert option in OPTION_VALUES, f"new dataset option {option!r}: give it a value in OPTION_VALUES"
    split = get_spec(name).splits[0]
    plain = {"method": "m", **evaluation_params(name, split, {}, default_split=split)}
    with_option = {"method": "m", **evaluation_params(name, split, {option: OPTION_VALUES[option]},
                                                      default_split=split)}
    assert records.run_key(plain) != records.run_key(with_option)


def test_a_split_other_than_the_default_enters_the_key():
    assert evaluation_params("musique", "all", {}, default_split="all") == {}
    assert evaluation_params("metaqa-1hop", "dev", {}, default_split="test") == {"split": "dev"}


def test_a_question_file_enters_by_its_content(tmp_path):
    path = tmp_path / "q.json"
    path.write_text("[1]")
    first = evaluation_params("2wiki", "all", {"questions": str(path)})
    path.write_text("[2]")
    second = evaluation_params("2wiki", "all", {"questions": str(path)})
    assert first["dataset_options"]["questions"]["file"] == str(path)
    assert records.run_key(first) != records.run_key(second)

def test_the_scripts_key_comes_from_their_arguments():
    ap = argparse.ArgumentParser()
    add_dataset_arguments(ap, kinds=("passages",), default="musique")
    args = ap.parse_args(["--option", "openie=false"])
    assert evaluation_params_from_args(args) == {"dataset_options": {"openie": False}}


# ----------------------------------------------------------------------------- case 12: training options
from kgrag_utils.datasets import load_dataset  # noqa: E402
from kgrag_utils.datasets.registry import training_dataset  # noqa: E402
from kgrag_utils.errors import ConfigError  # noqa: E402

from dataset_files import QA_2HOP, data_root  # noqa: E402,F401 - fixtures
from dataset_files import write_lines as _write  # noqa: E402
from test_datasets import metaqa_root  # noqa: E402,F401 - fixtures


@pytest.fixture
def ntm_test_only(metaqa_root):
    """A MetaQA copy with paraphrased (ntm) test questions and no ntm dev split, as users have it."""
    _write(metaqa_root / "qa" / "2-hop" / "ntm" / "qa_test.txt", [q.replace("which person", "who") for q in QA_2HOP])
    return metaqa_root


def test_an_evaluation_option_stays_with_the_evaluated_split(ntm_test_only):
    ds = load_dataset("metaqa-2hop", split="test", variant="ntm")
    train = training_dataset(ds)
    assert train.split == "dev" and (train.info["options"].get("variant") or "vanilla") == "vanilla"
    assert all("-vanilla-dev-" in q.qid for q in train.items)
    with pytest.raises(ConfigError, match="training option"):
        training_dataset(ds, options={"varient": "ntm"})
    with pytest.raises(ConfigError, match="no training split 'validation'"):
        training_dataset(ds, split="validation")

def test_a_file_dataset_still_trains_on_its_own_file(tmp_path):
    lines = [f"where is the club of P{i} ?\tItaly\tP{i}#plays_in_club#C#is_in_country#Italy" for i in range(30)]
    _write(tmp_path / "WC-P2.txt", lines)
    _write(tmp_path / "WC2014.txt", [f"P{i}\tplays_in_club\tC" for i in range(30)] + ["C\tis_in_country\tItaly"])
    ds = load_dataset("pq-file", split="test", path=str(tmp_path / "WC-P2.txt"))
    train = training_dataset(ds)
    assert train.split == "train" and train.info["options"]["path"] == str(tmp_path / "WC-P2.txt")


# ----------------------------------------------------------------------------- case 11: the other scripts
def test_every_resuming_benchmark_keys_its_runs_by_the_evaluated_data():
    """A script that takes --dataset/--option and resumes through RunRecorder puts evaluation_params into the key."""
    import re

    root = Path(__file__).resolve().parents[1] / "benchmarks"
    missing = [p.name for p in sorted(root.glob("*.py"))
               if "add_dataset_arguments(" in (text := p.read_text(encoding="utf-8")) and "RunRecorder(" in text
               and not re.search(r"\bevaluation_params(_from_args)?\(", text)]
    assert not missing, missing
