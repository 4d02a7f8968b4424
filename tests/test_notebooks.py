"""Every committed notebook is clean and parameterised; the quickstart runs through the batch runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_course import assert_solutions_ran

from kgrag_utils import records, runner, settings
from kgrag_utils.methods import figure_name

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_clean_and_parameterised(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert not any(c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), "strip outputs"
    params = runner.notebook_parameters(path)  # raises unless the cell holds only literals
    assert "run_name" in params and params["run_name"] == ""


@pytest.mark.parametrize("grid", sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "configs").glob("*.yaml")))
def test_every_grid_validates(grid):
    outcomes = runner.run_grid(grid, validate_only=True, progress=False)
    assert outcomes and all(o.status == "validated" for o in outcomes)


def test_demo_grid_runs_every_notebook_and_ends_with_the_report():
    cfg = runner.load_grid("demo")
    listed = {Path(r["notebook"]).stem for r in cfg["runs"]} | {Path(cfg["final"]).stem}
    assert listed == {p.stem for p in NOTEBOOKS}


@pytest.mark.slow
def test_quickstart_runs_through_the_batch_runner():
    out = runner.run_notebook("00_quickstart", {"limit": 2, "max_new_tokens": 12}, grid="test")
    assert out.status == "ok", f"{out.error} (log: {out.log})"
    assert_solutions_ran(out.output)  # the exercises at the end ran too
    rec = records.read_run(settings.results_dir() / out.run_name)
    assert rec["summary"]["n"] == 2 and rec["tokens"]["calls"] >= 2
    assert len(records.load_examples(out.run_name)) == 2
    chain = figure_name("quickstart", "sample-movies-2hop", "chain", run=out.run_name)
    assert (settings.figures_dir() / f"{chain}.png").exists()
    log = Path(out.log).read_text(encoding="utf-8")
    # the runner's kernels print progress as plain lines (kgrag_utils.progress), never widget reprs
    assert "IProgress" not in log and "HBox(" not in log and "\r" not in log
    assert any(line.startswith("questions:") and "2/2" in line for line in log.splitlines()), log[-2000:]
