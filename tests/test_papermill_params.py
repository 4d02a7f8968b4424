"""papermill reads every notebook's parameters as the runner does, so its logs hold no false alarms (issue 15, issue 17 case 14)."""

from __future__ import annotations

import logging
from pathlib import Path

import nbformat
import papermill
import pytest

from kgrag_utils import runner
from kgrag_utils.errors import ConfigError

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_papermill_reads_the_parameters_the_runner_reads(path, caplog):
    with caplog.at_level(logging.WARNING, logger="papermill"):
        theirs = papermill.inspect_notebook(str(path))
    ours = runner.notebook_parameters(path)
    assert list(theirs) == list(ours)  # the same names, in the same order
    assert not [r for r in caplog.records if "Unable to parse line" in r.getMessage()]


def test_a_parameters_line_papermill_cannot_read_is_refused_naming_it(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("seed = 0\nlimit = 3  # questions; 0 = all\nrun_name = ''\n")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "eq.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(ConfigError) as err:
        runner.notebook_parameters(path)
    message = str(err.value)
    assert "line 2" in message and "Passed unknown parameter: limit" in message and "'0: all'" in message
    assert "\n" not in message
    # the same cell with the comment reworded is read alike by both
    path.write_text(path.read_text().replace("0 = all", "0: all"))
    assert list(papermill.inspect_notebook(str(path))) == list(runner.notebook_parameters(path))


def test_method_notebooks_are_also_checked_by_their_config(capsys):
    from kgrag_utils import cli

    assert cli.main(["run", "01_simgrag", "-p", "pattern_source=oracel"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pattern_source" in err and "'oracle'" in err
