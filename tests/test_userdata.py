"""Your own KG, no code: a dataset folder (data/example-kg) is loaded, validated before a kernel starts (one line
naming the file, the line and the fix), listed, and questions without gold answers are "not scored"."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from kgrag_utils import cli
from kgrag_utils.datasets import load_dataset
from kgrag_utils.datasets.registry import get_spec, training_dataset
from kgrag_utils.datasets.userdata import find_folders, is_folder_name, validate_folder
from kgrag_utils.errors import ConfigError, DatasetMissingError, KgragError
from kgrag_utils.methods.summary import SummaryHooks, summarize
from kgrag_utils.runner import check_data_present, check_run_parameters

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example-kg"


def test_the_example_folder_loads_with_its_splits():
    ds = load_dataset("data/example-kg")
    assert ds.kind == "kgqa" and ds.source == "user" and ds.kg.num_edges == 30
    assert [q.qid for q in ds.items] == ["q1", "q2", "q3", "q4", "q5"]
    assert sum(1 for q in ds.items if q.answers) == 3 and not any(q.chain for q in ds.items)
    by_id = {q.qid: q for q in ds.items}
    assert by_id["q1"].topic_entities == ["Marla Quist"] and by_id["q1"].meta["topic_source"] == "marked"
    assert by_id["q2"].topic_entities == ["Nine Lighthouses"] and by_id["q2"].meta["topic_source"] == "given"
    assert by_id["q3"].topic_entities == []  # linked by the method (MethodConfig.load_dataset)
    assert ds.info["relation_descriptions"]["wrote"].startswith("the author")
    assert len(load_dataset("data/example-kg", split="train")) == 8
    assert len(load_dataset(str(EXAMPLE), split="all")) == 13  # an absolute path works too
    assert get_spec("data/example-kg").kind == "kgqa" and is_folder_name("./x") and not is_folder_name("metaqa-1hop")


def test_a_method_config_links_questions_without_a_topic():
    from kgrag_utils.methods.simgrag import SimGRAGConfig

    ds = SimGRAGConfig(dataset="data/example-kg", limit=0).load_dataset()
    q3, q5 = ds.items[2], ds.items[4]
    assert q3.topic_entities == ["Edda Voss"] and q3.meta["topic_source"] == "linked"
    assert q5.topic_entities == ["Greyhill Press"] and ds.info["n_linked"] == 2


def test_training_questions_get_shortest_path_chains():
    train = training_dataset(load_dataset("data/example-kg"))
    chains = {q.qid: q.chain for q in train.items}
    assert chains["t1"] == [("wrote", True), ("published_by", True)]
    assert chains["t4"] == [("wrote", False), ("born_in", True)]
    assert all(q.meta["chain_source"] == "shortest path" for q in train.items)


def test_the_folder_is_listed_and_passes_the_pre_check(capsys):
    assert EXAMPLE in find_folders()
    assert cli.main(["data", "list"]) == 0
    assert "data/example-kg" in capsys.readouterr().out
    params = check_run_parameters("01_simgrag", {"dataset": "data/example-kg", "llm_preset": "fake"})
    check_data_present(params)  # reads and checks every file


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "mykg"
    shutil.copytree(EXAMPLE, folder)
    return folder


def _append(path: Path, line: str) -> int:
    """Append one line; its line number."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text + line + "\n", encoding="utf-8")
    return text.count("\n") + 1


BAD = [  # (file, bad line, words the one-line error must hold besides the file and the line)
    ("facts.tsv", "Edda Voss\twrote", ["2 field(s)", "expected 3"]),
    ("facts.tsv", "Edda Voss\twrote\t", ["tail is empty"]),
    ("questions.jsonl", '{"id": "q9", "question": "Who?"', ["not JSON"]),
    ("questions.jsonl", '{"id": "q9"}', ["no \"question\""]),
    ("questions.jsonl", '{"id": "q9", "question": "Who?", "answer": ["x"]}', ["unknown key 'answer'", "answers"]),
    ("questions.jsonl", '{"id": "q9", "question": "Who?", "topic_entities": ["Eda Voss"]}',
     ["'Eda Voss' is not in the facts", "Edda Voss"]),
    ("questions.jsonl", '{"id": "q9", "question": "Who?", "chain": ["wrote", "publishd_by"]}',
     ["'publishd_by' is not in the facts", "published_by"]),
    ("questions.jsonl", '{"id": "q9", "question": "Who?", "split": "training"}', ["not one of train, dev, test"]),
    ("questions.jsonl", '{"id": "q1", "question": "Who again?"}', ["'q1' was used on line 1"]),
    ("questions.jsonl", '{"id": "q9", "question": "Who?", "answers": [3]}', ["list of non-empty strings"]),
]


@pytest.mark.parametrize("file,line,words", BAD, ids=[f"{f}:{w[0]}" for f, _, w in BAD])
def test_a_bad_file_gives_one_line_naming_the_file_the_line_and_the_fix(tmp_path, file, line, words):
    folder = _copy(tmp_path)
    n = _append(folder / file, line)
    with pytest.raises(ConfigError) as err:
        check_data_present({"dataset": str(folder)})
    msg = str(err.value)
    assert "\n" not in msg and f"{folder / file} line {n}" in msg, msg
    for w in words:
        assert w in msg, msg


def test_kgrag_run_refuses_a_bad_folder_before_a_kernel_starts(tmp_path, capsys):
    folder = _copy(tmp_path)
    n = _append(folder / "facts.tsv", "only one field")
    assert cli.main(["run", "01_simgrag", "-p", f"dataset={folder}", "-p", "llm_preset=fake"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"facts.tsv line {n}" in err and "expected 3" in err
    assert cli.main(["run", "01_simgrag", "-p", f"dataset={folder}/missing"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_missing_files_and_empty_splits_say_what_to_add(tmp_path):
    folder = _copy(tmp_path)
    (folder / "questions.jsonl").unlink()
    with pytest.raises(DatasetMissingError, match="has no questions.jsonl"):
        validate_folder(folder)
    (folder / "questions.jsonl").write_text(json.dumps({"question": "Who wrote [Ash and Amber]?"}) + "\n")
    with pytest.raises(ConfigError, match='add lines with "split": "train"'):
        load_dataset(str(folder), split="train")
    for f in ("facts.tsv", "relations.tsv"):
        (folder / f).unlink()
    with pytest.raises(DatasetMissingError, match="neither facts.tsv nor facts.csv nor passages.jsonl"):
        validate_folder(folder)


def test_a_csv_facts_file_with_quoted_commas_and_a_passage_folder(tmp_path):
    folder = tmp_path / "csvkg"
    folder.mkdir()
    (folder / "facts.csv").write_text('head,relation,tail\n"Smith, Anna",wrote,Blue Hours\n', encoding="utf-8")
    (folder / "questions.jsonl").write_text('{"question": "What did Smith, Anna write?", "answers": ["Blue Hours"]}\n')
    ds = load_dataset(str(folder))
    assert ds.kg.num_edges == 1 and ds.kg.has_entity("Smith, Anna")
    pas = tmp_path / "pas"
    pas.mkdir()
    (pas / "passages.jsonl").write_text('{"id": "p1", "title": "Blue Hours", "text": "Blue Hours is a novel."}\n')
    (pas / "questions.jsonl").write_text('{"question": "What is Blue Hours?", "answers": ["a novel"], '
                                         '"supporting": ["p1"]}\n{"question": "Who?", "supporting": ["p2"]}\n')
    with pytest.raises(ConfigError, match=r"questions.jsonl line 2: supporting passage 'p2'"):
        load_dataset(str(pas))
    (pas / "questions.jsonl").write_text('{"question": "What is Blue Hours?", "supporting": ["p1"]}\n')
    ds = load_dataset(str(pas))
    assert ds.kind == "passages" and ds.items[0].supporting_titles == ["Blue Hours"] and len(ds.corpus) == 1


def test_records_without_gold_are_not_scored_nor_blamed():
    hooks = SummaryHooks(record_scores=lambda r: {"v": {"hits@1": r.get("hits@1")}},
                         stage_errors=lambda rs: {"pattern": sum(1 for r in rs if r.get("failed_stage") == "pattern")})
    records = [{"id": "a", "hits@1": 1.0}, {"id": "b", "hits@1": 0.0, "failed_stage": "pattern"},
               {"id": "c", "hits@1": math.nan, "scored": False, "failed_stage": None}]
    s = summarize(records, "m", hooks)
    assert s["n"] == 3 and s["n_scored"] == 2 and s["scores"]["v"]["hits@1"] == 0.5
    assert s["stage_errors"] == {"pattern": 1.0} and s["rows"][0]["n"] == 2


def test_unknown_dataset_names_still_refused_with_the_folder_hint():
    with pytest.raises(KgragError, match="or give a dataset folder"):
        check_run_parameters("01_simgrag", {"dataset": "example-kgg"})


def test_compact_refuses_a_folder_without_training_questions_in_one_line(tmp_path):
    from kgrag_utils.methods.compact import Compact, CompactConfig

    folder = _copy(tmp_path)
    lines = (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / "questions.jsonl").write_text("\n".join(ln for ln in lines if '"train"' not in ln) + "\n")
    config = CompactConfig(dataset=str(folder), llm_preset="fake", limit=0)
    with pytest.raises(ConfigError) as err:
        Compact.prepare(config, config.load_dataset())
    assert "\n" not in str(err.value) and 'add lines with "split": "train"' in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize("notebook", ["01_simgrag", "02_compact_relations", "03_vector_rerank"])
def test_the_example_folder_runs_from_kgrag_run_parameters_alone(notebook):
    from kgrag_utils import records, runner, settings

    out = runner.run_notebook(notebook, {"dataset": "data/example-kg", "llm_preset": "fake", "limit": 0},
                              grid="test")
    assert out.status == "ok", f"{out.error} (log: {out.log})"
    rec = records.read_run(settings.results_dir() / out.run_name)
    summary = rec["summary"]
    assert summary["n"] == 5 and summary["n_scored"] == 3  # two questions have no answers: not scored
    run_dir = settings.results_dir() / out.run_name
    examples = [json.loads(line) for line in (run_dir / "examples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(e["id"] for e in examples) == ["q1", "q2", "q3", "q4", "q5"]
    assert {e["id"] for e in examples if e.get("scored") is False} == {"q4", "q5"}
    executed = json.loads(Path(out.output).read_text(encoding="utf-8"))
    ask_cell = next(c for c in executed["cells"] if "ask_here(" in "".join(c["source"]))
    shown = "".join("".join(o.get("data", {}).get("text/plain", "")) for o in ask_cell["outputs"])
    assert "=> answer:" in shown and "topic entities:" in shown  # the stages, as static text under papermill


def test_the_explorer_shows_a_record_without_gold_as_not_scored():
    from kgrag_utils.explore.outcome import base_outline

    assert base_outline({"id": "q4", "scored": False}, None, False)["status"] == "not scored"
    assert base_outline({"id": "q4", "scored": False}, None, True, "pattern")["status"] == "failed"
    assert base_outline({"id": "q1"}, 0.0, False, "retrieval")["status"] == "wrong"
