"""Grids and run parameters are checked by one schema before anything runs (issue 17 cases 4 and 10, issue 12 item 5).

Every refusal is one line naming the place and the fix; nothing is executed and no record is left behind.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from kgrag_utils import cli, runner, schema, settings
from kgrag_utils.errors import ConfigError

PARAMS = "dataset = 'sample-movies-1hop'\nsplit = 'test'\nlimit = 3\nseed = 0\nllm_preset = 'fake'\nrun_name = ''\n"


def toy(folder: Path, name: str = "toy", params: str = PARAMS) -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(params)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell("raise RuntimeError('this notebook must never run')")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.fixture
def no_kernel(monkeypatch):
    """Fail the test if papermill is ever asked to execute a notebook."""
    import papermill

    def refuse(*a, **k):
        raise AssertionError("a kernel was started")

    monkeypatch.setattr(papermill, "execute_notebook", refuse)


def refused(capsys, argv) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("kgrag: error: ")
    return err


# ----------------------------------------------------------------------------- grid files (case 4)
def grid_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "g.yaml"
    path.write_text(text.replace("NB", str(toy(tmp_path / "nbs"))), encoding="utf-8")
    return path


@pytest.mark.parametrize("text, expected", [
    ("defualts: {limit: 2}\nruns:\n  - notebook: NB\n", "unknown top-level key 'defualts'; did you mean 'defaults'?"),
    ("runs:\n  - notebook: NB\n    parameter: {limit: 2}\n", "run #1 (NB): unknown run key 'parameter'; did you mean 'parameters'?"),
    ("runs:\n  - notebook: NB\n    grdi: {seed: [1, 2]}\n", "unknown run key 'grdi'; did you mean 'grid'?"),
    ("timeuot: 60\nruns:\n  - notebook: NB\n", "unknown top-level key 'timeuot'; did you mean 'timeout'?"),
    ("finall: 05_report.ipynb\nruns:\n  - notebook: NB\n", "unknown top-level key 'finall'; did you mean 'final'?"),
    ("defaults: {limt: 2}\nruns:\n  - notebook: NB\n", "defaults 'limt' is a parameter of none of this grid's notebooks (toy.ipynb); did you mean 'limit'?"),
    ("runs:\n  - notebook: NB\n    parameters: {limt: 2}\n", "toy.ipynb has no parameter 'limt'; did you mean 'limit'?"),
    ("runs:\n  - notebook: NB\n    grid: {sede: [1, 2]}\n", "has no parameter 'sede'; did you mean 'seed'?"),
    ("runs:\n  - notebook: NB\n    grid: {seed: []}\n", "grid axis 'seed' is an empty list, which would drop the run"),
    ("runs:\n  - notebook: NB\n    parameters: {limit: two}\n", "parameter 'limit' of toy.ipynb expects int (default 3), got str 'two'"),
    ("runs:\n  - notebook: NB\n    parameters: [limit, 2]\n", "'parameters' must be a mapping name: value"),
    ("timeout: soon\nruns:\n  - notebook: NB\n", "'timeout' must be a whole number of seconds per cell, e.g. timeout: 1800; got str 'soon'"),
    ("timeout: -5\nruns:\n  - notebook: NB\n", "'timeout' must be positive"),
    ("- notebook: NB\n", "g.yaml must be a mapping with keys name, defaults, timeout, runs, final, final_parameters"),
    ("runs:\n  - notebook: NB\n   parameters: {limit: 2}\n", "g.yaml is not valid YAML (line 3, column"),
    ("runs: []\n", "'runs' is empty"),
    ("name: demo\n", "missing key 'runs'"),
    ("runs:\n  - parameters: {limit: 2}\n", "run #1: missing key 'notebook'"),
    ("runs:\n  - notebook: 01_simgrga.ipynb\n", "notebook '01_simgrga.ipynb' not found; did you mean '01_simgrag.ipynb'?"),
    ("runs:\n  - notebook: NB\nfinal: 05_reprot.ipynb\n", "final: notebook '05_reprot.ipynb' not found; did you mean '05_report.ipynb'?"),
    ("runs:\n  - notebook: NB\n  - notebook: NB\n", "has two runs named"),
    ("runs:\n  - notebook: NB\n    grid: {dataset: [metaqa-2hop, metaqa-2hopp]}\n", "unknown dataset 'metaqa-2hopp'; did you mean 'metaqa-2hop'?"),
])
def test_a_bad_grid_is_refused_in_one_line_before_anything_runs(tmp_path, capsys, no_kernel, text, expected):
    cfg = grid_file(tmp_path, text)
    nb = str(tmp_path / "nbs" / "toy.ipynb")
    before = set(settings.results_dir().iterdir())
    err = refused(capsys, ["grid", str(cfg)])
    assert expected.replace("NB", nb) in err
    assert set(settings.results_dir().iterdir()) == before


def test_grid_defaults_apply_only_where_a_notebook_has_them(tmp_path):
    a = toy(tmp_path / "nbs", "a")
    b = toy(tmp_path / "nbs", "b", "word = 'x'\nrun_name = ''\n")
    runs = runner.expand_grid({"name": "t", "defaults": {"limit": 2, "word": "y"},
                               "runs": [{"notebook": str(a)}, {"notebook": str(b)}]})
    assert [params for _, params in runs] == [{"limit": 2}, {"word": "y"}]


def test_grid_overrides_set_every_run_that_has_the_parameter(tmp_path):
    a = toy(tmp_path / "nbs", "a")
    b = toy(tmp_path / "nbs", "b", "word = 'x'\nrun_name = ''\n")
    cfg = {"name": "t", "runs": [{"notebook": str(a), "parameters": {"limit": 8}, "grid": {"seed": [1, 2]}},
                                 {"notebook": str(b)}]}
    runs = runner.expand_grid(cfg, {"limit": 1, "word": "z"})
    assert [params for _, params in runs] == [{"limit": 1, "seed": 1}, {"limit": 1, "seed": 2}, {"word": "z"}]
    with pytest.raises(ConfigError, match="-p 'limt' is a parameter of none"):
        runner.expand_grid(cfg, {"limt": 1})


def test_the_committed_grids_pass_the_schema():
    for path in sorted(settings.configs_dir().glob("*.yaml")):
        spec, raw = schema.parse_grid(path.read_text(), path.name)
        assert spec.runs and set(raw) <= set(schema.GridSpec.model_fields)


# ----------------------------------------------------------------------------- kgrag run (case 10)
@pytest.mark.parametrize("param, expected", [
    ("dataset=metaqa-4hop", "00_quickstart.ipynb: unknown dataset 'metaqa-4hop'; did you mean 'metaqa-"),
    ("llm_preset=qwen2.5-7", "unknown llm_preset 'qwen2.5-7'; did you mean 'qwen2.5-7b'?"),
    ("limit=-1", "parameter 'limit' of 00_quickstart.ipynb must be at least 0"),
    ("seed=-3", "parameter 'seed' of 00_quickstart.ipynb must be at least 0"),
    ("split=validation", "dataset 'sample-movies-2hop' has no split 'validation'"),
    ("limit=many", "-p limit='many': parameter 'limit' of 00_quickstart.ipynb is a whole number (default 8)"),
    ("limti=3", "00_quickstart.ipynb has no parameter 'limti'; did you mean 'limit'?"),
])
def test_kgrag_run_refuses_bad_parameters_before_a_kernel_starts(capsys, no_kernel, param, expected):
    before = set(settings.results_dir().iterdir())
    err = refused(capsys, ["run", "00_quickstart", "-p", param])
    assert expected in err
    assert set(settings.results_dir().iterdir()) == before  # no "failed" record left behind


def test_kgrag_run_refuses_a_real_dataset_that_is_not_there(capsys, no_kernel, monkeypatch, tmp_path):
    monkeypatch.setenv("KGRAG_DATA_DIR", str(tmp_path / "empty"))
    err = refused(capsys, ["run", "00_quickstart", "-p", "dataset=metaqa-2hop"])
    assert "kgrag data fetch metaqa-2hop" in err


def test_kgrag_run_refuses_an_unknown_notebook_and_a_bad_timeout(capsys, no_kernel):
    assert "did you mean '01_simgrag.ipynb'?" in refused(capsys, ["run", "01_simgrg"])
    assert "--timeout" in refused(capsys, ["run", "00_quickstart", "--timeout", "0"])


def test_parameter_models_come_from_the_parameters_cell():
    model = schema.params_model("t.ipynb", {"limit": 3, "x": 0.5, "ks": [1, 2], "flag": False, "name": "", "any": None})
    ok = model.model_validate({"limit": 4, "x": 1, "ks": (3,), "flag": True, "name": "n", "any": [1]})
    assert ok.limit == 4 and ok.x == 1
    for bad in ({"limit": True}, {"limit": 2.5}, {"flag": 1}, {"x": "1"}, {"ks": "a"}, {"nope": 1}):
        with pytest.raises(Exception):
            model.model_validate(bad)
