"""Batch runner and run records: parameters, resume, failures, summaries (real papermill kernels)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from kgrag_utils import records, runner, settings
from kgrag_utils.errors import ConfigError

NB_SOURCE = '''
import json, os, sys
from kgrag_utils.records import RunRecorder
rec = RunRecorder("toy", {"limit": limit, "word": word, "fail": fail}, run_name=run_name)
for i in range(limit):
    if str(i) in rec.done_ids:
        continue
    if fail and i == 2:
        raise RuntimeError("toy failure at example 2")
    rec.add({"id": str(i), "word": word * (i + 1), "cwd": os.getcwd()})
rec.finish(summary={"n": len(rec.examples), "acc": 0.5})
'''


def make_notebook(folder: Path, params_src: str = "limit = 3\nword = 'a'\nfail = False\nrun_name = ''\n") -> Path:
    nb = nbformat.v4.new_notebook()
    p = nbformat.v4.new_code_cell(params_src)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# toy"), p, nbformat.v4.new_code_cell(NB_SOURCE)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "toy.ipynb"
    nbformat.write(nb, path)
    return path


def test_notebook_parameters_reads_literals(tmp_path):
    nb = make_notebook(tmp_path)
    assert runner.notebook_parameters(nb) == {"limit": 3, "word": "a", "fail": False, "run_name": ""}


def test_parameters_cell_must_hold_only_literals(tmp_path):
    nb = make_notebook(tmp_path, "limit = 3\nword = str(limit)\nrun_name = ''\n")
    with pytest.raises(ConfigError, match="not a literal"):
        runner.notebook_parameters(nb)


@pytest.mark.parametrize("overrides, message", [
    ({"limit": "three"}, "expects int"),
    ({"fail": 1}, "expects bool"),
    ({"nope": 1}, "has no parameter 'nope'"),
])
def test_bad_parameters_give_one_line_errors(tmp_path, overrides, message):
    nb = make_notebook(tmp_path)
    with pytest.raises(ConfigError, match=message) as err:
        runner.validate_parameters(nb, overrides)
    assert "\n" not in str(err.value)


def test_int_accepted_for_float_and_list_for_tuple(tmp_path):
    nb = make_notebook(tmp_path, "x = 0.5\nks = [1, 2]\nrun_name = ''\n")
    merged = runner.validate_parameters(nb, {"x": 1, "ks": (3,)})
    assert merged == {"x": 1, "ks": [3], "run_name": ""}


def test_unknown_notebook_lists_available():
    with pytest.raises(ConfigError, match="not found"):
        runner.resolve_notebook("no_such_notebook")


@pytest.mark.slow
def test_run_resume_and_failure(tmp_path, monkeypatch):
    # a results folder of its own: load_runs() below must see only this test's runs
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path / "results"))
    nb = make_notebook(tmp_path / "nbs")
    out = runner.run_notebook(nb, {"limit": 4, "word": "b"}, grid="t")
    assert out.status == "ok", out.error
    rec = records.read_run(settings.results_dir() / out.run_name)
    assert rec["status"] == "ok" and rec["summary"]["n"] == 4
    ex = records.load_examples(out.run_name)
    assert list(ex["id"]) == ["0", "1", "2", "3"]
    # cwd of the kernel is the notebook's folder, not the caller's
    assert Path(ex["cwd"][0]).resolve() == (tmp_path / "nbs").resolve()
    assert Path(out.output).exists() and Path(out.log).exists()

    again = runner.run_notebook(nb, {"limit": 4, "word": "b"}, grid="t")
    assert again.status == "skipped" and again.run_name == out.run_name

    bad = runner.run_notebook(nb, {"limit": 4, "fail": True}, grid="t")
    assert bad.status == "failed" and "toy failure" in bad.error
    rec = records.read_run(settings.results_dir() / bad.run_name)
    assert rec["status"] == "failed" and "toy failure" in rec["error"]
    # the examples finished before the crash are kept
    assert len(records.load_examples(bad.run_name)) == 2

    df = records.load_runs()
    assert set(df["status"]) == {"ok", "failed"}


@pytest.mark.slow
def test_grid_runs_all_and_continues_after_failure(tmp_path, monkeypatch):
    nbdir = tmp_path / "nbs"
    nb = make_notebook(nbdir)
    cfg = tmp_path / "g.yaml"
    cfg.write_text(
        "name: toygrid\ndefaults: {limit: 3}\nruns:\n"
        f"  - notebook: {nb}\n    grid: {{fail: [true, false], word: [x]}}\n"
    )
    outs = runner.run_grid(cfg, progress=False)
    assert [o.status for o in outs] == ["failed", "ok"]
    summary = settings.runs_dir() / "toygrid" / "summary.csv"
    assert summary.exists() and "failed" in summary.read_text()
    validated = runner.run_grid(cfg, validate_only=True, progress=False)
    assert all(o.status == "validated" for o in validated)


def test_grid_with_bad_parameter_fails_validation(tmp_path):
    nb = make_notebook(tmp_path / "nbs")
    cfg = tmp_path / "g.yaml"
    cfg.write_text(f"runs:\n  - notebook: {nb}\n    parameters: {{limit: many}}\n")
    with pytest.raises(ConfigError, match="expects int"):
        runner.run_grid(cfg, validate_only=True, progress=False)


def test_recorder_resume_and_torn_line(tmp_path):
    rec = records.RunRecorder("m", {"a": 1}, root=tmp_path)
    rec.add({"id": "q1", "score": 1.0})
    rec.add({"id": "q2", "score": float("nan")})
    with open(rec.examples_path, "a") as fh:
        fh.write('{"id": "q3", "sco')  # a process killed mid-write
    again = records.RunRecorder("m", {"a": 1}, root=tmp_path)
    assert again.done_ids == {"q1", "q2"}
    assert again.examples[1]["score"] is None  # NaN is stored as null, never as invalid JSON
    fresh = records.RunRecorder("m", {"a": 2}, run_name=rec.run_name, root=tmp_path)
    assert fresh.done_ids == set()  # other parameters: start over
    fresh.finish(summary={"acc": 1.0})
    data = json.loads((tmp_path / rec.run_name / "run.json").read_text())
    assert data["status"] == "ok" and data["environment"]["python"]


def test_to_jsonable_handles_numpy_and_dataclasses():
    import dataclasses

    import numpy as np

    @dataclasses.dataclass
    class D:
        x: int
        y: tuple

    out = records.to_jsonable({"a": np.int64(3), "b": np.arange(3), "c": D(1, (2, 3)), "d": {1, 2}, "e": np.float32(0.5)})
    assert out == {"a": 3, "b": [0, 1, 2], "c": {"x": 1, "y": [2, 3]}, "d": [1, 2], "e": 0.5}
    json.dumps(out)


def test_params_hash_is_order_independent():
    assert records.params_hash({"a": 1, "b": 2}) == records.params_hash({"b": 2, "a": 1})
    assert records.params_hash({"a": 1}) != records.params_hash({"a": 2})


def test_extra_fields_cannot_overwrite_the_record(tmp_path, monkeypatch):
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path / "results"))
    rec = records.RunRecorder("toy", {"limit": 1}, run_name="clash")
    rec.add({"id": "0"})
    with pytest.raises(ConfigError, match="method_details"):
        rec.finish(summary={"n": 1}, extra={"method": {"kind": "x"}})
    rec.finish(summary={"n": 1}, extra={"method_details": {"kind": "x"}})
    run = records.read_run(settings.results_dir() / "clash")
    assert run["method"] == "toy" and run["method_details"] == {"kind": "x"} and run["status"] == "ok"


@pytest.mark.slow
def test_rerun_is_skipped_when_the_notebook_records_only_some_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path / "results"))
    # `shots` is a parameter the toy notebook does not put in its own record
    nb = make_notebook(tmp_path / "nbs", "limit = 2\nword = 'a'\nfail = False\nshots = 4\nrun_name = ''\n")
    first = runner.run_notebook(nb, {"shots": 8}, grid="t")
    assert first.status == "ok", first.error
    rec = records.read_run(settings.results_dir() / first.run_name)
    # one key: the runner's (all parameters that change results), taken over by the notebook's recorder
    assert rec["runner"]["params_hash"] == rec["params_hash"] == records.run_key(first.parameters)
    assert runner.run_notebook(nb, {"shots": 8}, grid="t").status == "skipped"
    other = runner.run_notebook(nb, {"shots": 12}, grid="t")
    assert other.status == "ok" and other.run_name != first.run_name


@pytest.mark.parametrize("bad, message", [({"dataset": "metaqa-4hop"}, "unknown dataset"),
                                          ({"llm_preset": "gpt-17"}, "unknown llm_preset")])
def test_grid_validation_catches_unknown_datasets_and_presets(tmp_path, monkeypatch, bad, message):
    nb = make_notebook(tmp_path / "nbs", "dataset = 'sample-movies-1hop'\nllm_preset = 'qwen2.5-coder-0.5b'\nrun_name = ''\n")
    cfg = {"name": "t", "runs": [{"notebook": str(nb), "parameters": bad}]}
    with pytest.raises(ConfigError, match=message):
        runner.expand_grid(cfg)
    ok = runner.expand_grid({"name": "t", "runs": [{"notebook": str(nb), "grid": {"dataset": ["metaqa-1hop", "pq-2hop"]}}]})
    assert [p["dataset"] for _, p in ok] == ["metaqa-1hop", "pq-2hop"]
    (tmp_path / "my-model").mkdir()  # a local model folder is a preset load_llm accepts
    runner.check_known_names(nb, {"llm_preset": str(tmp_path / "my-model")})
    with pytest.raises(ConfigError, match="unknown llm_preset"):
        runner.check_known_names(nb, {"llm_preset": str(tmp_path / "no-such-folder")})


@pytest.mark.slow
def test_a_report_notebook_is_never_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path / "results"))
    nb = make_notebook(tmp_path / "nbs")
    src = nb.read_text().replace('RunRecorder(\\"toy\\"', 'RunRecorder(\\"report\\"')
    assert 'RunRecorder(\\"report\\"' in src
    nb.write_text(src)
    assert runner.run_notebook(nb, {"limit": 1}, grid="t").status == "ok"
    assert runner.run_notebook(nb, {"limit": 1}, grid="t").status == "ok"  # re-read, not skipped


def test_grid_summary_markdown_is_one_row_per_run(tmp_path):
    outs = [runner.RunOutcome("a.ipynb", "a-1", "ok", 1.23456, {}, summary={"acc": 0.5}),
            runner.RunOutcome("b.ipynb", "b-1", "failed", 2.0, {}, error="ValueError: x | y\nmore")]
    runner.write_summary(outs, tmp_path)
    lines = (tmp_path / "summary.md").read_text().splitlines()
    assert len(lines) == 2 + len(outs) and lines[0].startswith("| notebook")
    assert "x \\| y more" in lines[3] and all(line.count(" | ") == lines[0].count(" | ") for line in lines[2:])
