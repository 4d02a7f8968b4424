"""Issue 27, cases 2, 6 and 9: full disks, read-only folders, cell timeouts and reused run names.

Real processes (`kgrag run`, `kgrag grid` as subprocesses, real kernels) and real mounts: a 64 KB tmpfs
as the results folder, a read-only bind mount over a run folder. A test that needs a mount skips, saying
so, only where mounting is not permitted.
"""

from __future__ import annotations

import json
import functools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from kgrag_utils import records, runner

from test_reliability import toy_notebook

from cli_process import WAIT_S
from cli_process import child_env as _env
from cli_process import error_lines as _error_lines
from cli_process import kgrag

_kgrag = functools.partial(kgrag, cwd=None)  # these runs start in the test's own folder, as before


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mounting is not permitted here (mount {' '.join(args)}: {done.stderr.strip()})")


def _umount(path: Path) -> None:
    subprocess.run(["umount", str(path)], capture_output=True)


@pytest.fixture
def tiny_tmpfs(tmp_path):
    folder = tmp_path / "full"
    folder.mkdir()
    _mount("-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder))
    yield folder
    _umount(folder)


def _read_only(folder: Path) -> None:
    """A read-only bind mount of the folder over itself (root ignores chmod; it does not ignore this)."""
    _mount("--bind", str(folder), str(folder))
    _mount("-o", "remount,ro,bind", str(folder))


# ----------------------------------------------------------------------------- case 2: full disk
@pytest.mark.slow
def test_a_full_results_folder_is_one_line_and_the_rerun_resumes(tiny_tmpfs):
    args = ("run", "00_quickstart", "-p", "llm_preset=fake", "-p", "limit=0", "--run-name", "full-disk")
    done = _kgrag(*args, KGRAG_RESULTS_DIR=tiny_tmpfs)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    [line] = _error_lines(done.stderr)
    assert str(tiny_tmpfs) in line and "no space left" in line and "ENOSPC" in line and "KGRAG_RESULTS_DIR" in line
    before, torn = records.read_examples(tiny_tmpfs / "full-disk" / records.EXAMPLES_FILE)
    assert before  # what fitted is kept
    _mount("-o", "remount,size=16m", str(tiny_tmpfs))
    again = _kgrag(*args, KGRAG_RESULTS_DIR=tiny_tmpfs)
    assert again.returncode == 0, again.stderr[-2000:]
    rows, _ = records.read_examples(tiny_tmpfs / "full-disk" / records.EXAMPLES_FILE)
    rec = records.read_run(tiny_tmpfs / "full-disk")
    assert rec["status"] == "ok" and rec["n_examples"] == len(rows) == len({r["id"] for r in rows})
    assert {r["id"] for r in before} <= {r["id"] for r in rows}


# ----------------------------------------------------------------------------- case 2: read-only run folders
@pytest.mark.slow
def test_a_read_only_run_folder_fails_that_run_only_and_the_grid_goes_on(tmp_path):
    grid = tmp_path / "ro-grid.yaml"
    grid.write_text(textwrap.dedent("""
        name: ro-grid
        defaults: {limit: 1, llm_preset: fake}
        runs:
          - notebook: 00_quickstart.ipynb
            grid: {seed: [0, 1, 2]}
    """), encoding="utf-8")
    first = _kgrag("grid", str(grid))
    assert first.returncode == 0, first.stderr[-2000:]
    bigger = tmp_path / "ro-grid-4.yaml"
    bigger.write_text(grid.read_text().replace("[0, 1, 2]", "[0, 1, 2, 3]").replace("ro-grid", "ro-grid-4"))
    runs = runner.expand_grid(runner.load_grid(bigger))
    names = [runner.run_name_for(p, runner.check_run_parameters(p, prm)) for p, prm in runs]
    results = Path(os.environ["KGRAG_RESULTS_DIR"])
    (results / names[3]).mkdir(parents=True)
    mounted = [results / names[1], results / names[3]]  # a finished run, and one that has not run yet
    try:
        for folder in mounted:
            _read_only(folder)
        done = _kgrag("grid", str(bigger))
    finally:
        for folder in mounted:
            _umount(folder)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    summary = (Path(os.environ["KGRAG_RUNS_DIR"]) / "ro-grid-4" / "summary.csv").read_text(encoding="utf-8")
    rows = {line.split(",")[1]: line for line in summary.splitlines()[1:] if line.count(",") > 3}
    assert set(names) <= set(rows), summary
    assert ",skipped," in rows[names[0]] and ",skipped," in rows[names[1]] and ",skipped," in rows[names[2]]
    assert ",failed," in rows[names[3]] and "read-only" in rows[names[3]] and "EROFS" in rows[names[3]]


# ----------------------------------------------------------------------------- case 6: cell timeouts
def _slow_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("run_name = ''\n")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("import time\ntime.sleep(600)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / "slow.ipynb")
    return folder / "slow.ipynb"


@pytest.mark.slow
def test_a_cell_timeout_names_the_cell_the_limit_and_the_fix(tmp_path):
    nb = _slow_notebook(tmp_path / "nbs")
    done = _kgrag("run", str(nb), "--timeout", "3", "--run-name", "slow-run")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]  # the kernel's go to the log
    error = records.read_run(Path(os.environ["KGRAG_RESULTS_DIR"]) / "slow-run")["error"]
    assert "cell 3 of slow.ipynb" in error and "'import time'" in error and "3 s" in error, error
    assert "--timeout" in error and "CellTimeoutError" in error and "-----" not in error
    assert error in done.stdout  # the summary row says it too


# ----------------------------------------------------------------------------- case 9: a reused run name
@pytest.mark.slow
def test_reusing_a_run_name_with_other_parameters_is_refused_and_force_keeps_the_old_run(tmp_path):
    nb = toy_notebook(tmp_path / "nbs")
    results = Path(os.environ["KGRAG_RESULTS_DIR"])
    first = _kgrag("run", str(nb), "-p", "word=first", "--run-name", "reused")
    assert first.returncode == 0, first.stderr[-2000:]
    old = (results / "reused" / records.EXAMPLES_FILE).read_text()
    ran = records.read_run(results / "reused")
    assert "run" in ran["runner"]["command"] and "word=first" in ran["runner"]["command"]  # what ran: the command
    assert ran["code"]["commit"] and ran["params"]["word"] == "first"
    second = _kgrag("run", str(nb), "-p", "word=second", "--run-name", "reused")
    assert second.returncode == 2, second.stderr[-2000:]
    [line] = _error_lines(second.stderr)
    assert "'reused'" in line and "word: 'first' -> 'second'" in line and "--force" in line, line
    assert (results / "reused" / records.EXAMPLES_FILE).read_text() == old  # untouched
    forced = _kgrag("run", str(nb), "-p", "word=second", "--run-name", "reused", "--force")
    assert forced.returncode == 0, forced.stderr[-2000:]
    kept = sorted((results / "reused").glob(f"{records.EXAMPLES_FILE}.replaced-*"))
    assert len(kept) == 1 and kept[0].read_text() == old
    rows, _ = records.read_examples(results / "reused" / records.EXAMPLES_FILE)
    assert {r["word"] for r in rows} == {"second"}
    assert json.loads(sorted((results / "reused").glob("run.json.replaced-*"))[0].read_text())["status"] == "ok"


# ----------------------------------------------------------------------------- case 2: a permission error
def _without_dac_override() -> list[str]:
    """A prefix under which a folder's permission bits bind (root ignores them: drop CAP_DAC_OVERRIDE), or skip."""
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []


@pytest.mark.slow
def test_a_forbidden_run_folder_is_one_line_and_the_grid_goes_on(tmp_path):
    nb = toy_notebook(tmp_path / "nbs")
    grid = tmp_path / "forbidden.yaml"
    grid.write_text(f"name: forbidden\nruns:\n  - notebook: {nb}\n    parameters: {{limit: 1}}\n"
                    f"    grid: {{word: [a, b]}}\n", encoding="utf-8")
    runs = runner.expand_grid(runner.load_grid(grid))
    names = [runner.run_name_for(p, runner.check_run_parameters(p, prm)) for p, prm in runs]
    results = Path(os.environ["KGRAG_RESULTS_DIR"])
    forbidden = results / names[0]
    forbidden.mkdir(parents=True)
    forbidden.chmod(0o555)  # someone else's run folder in a shared results folder: not writable for us
    prefix = _without_dac_override()
    probe = subprocess.run([*prefix, "sh", "-c", f"touch '{forbidden}/probe'"], capture_output=True, text=True)
    if probe.returncode == 0 or (prefix and "setpriv" in probe.stderr):
        pytest.skip(f"a permission error cannot be made here (root keeps CAP_DAC_OVERRIDE: {probe.stderr.strip()})")
    cmd = [*prefix, sys.executable, "-m", "kgrag_utils.cli"]
    try:
        one = subprocess.run([*cmd, "run", str(nb), "-p", "limit=1", "-p", "word=a", "--run-name", names[0]],
                             env=_env(), capture_output=True, text=True, timeout=WAIT_S)
        done = subprocess.run([*cmd, "grid", str(grid)], env=_env(), capture_output=True, text=True, timeout=WAIT_S)
    finally:
        forbidden.chmod(0o755)
    assert one.returncode == 2 and "Traceback" not in one.stderr, one.stderr[-3000:]
    [line] = _error_lines(one.stderr)
    assert str(forbidden) in line and "permission denied" in line and "EACCES" in line, line
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    summary = (Path(os.environ["KGRAG_RUNS_DIR"]) / "forbidden" / "summary.csv").read_text(encoding="utf-8")
    rows = {line.split(",")[1]: line for line in summary.splitlines()[1:] if line.count(",") > 3}
    assert ",failed," in rows[names[0]] and "EACCES" in rows[names[0]], summary
    assert ",ok," in rows[names[1]], summary  # the grid went on past the forbidden folder
    assert records.read_run(results / names[1])["status"] == "ok"
