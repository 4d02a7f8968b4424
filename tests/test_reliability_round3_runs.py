"""Issue 49, the runner's items: interrupts, concurrent grids, storage variables and full disks, careless input.

Real processes (`kgrag` as a subprocess, real kernels running small notebooks), real signals, real tmpfs mounts
(a test that needs one skips, saying so, only where mounting is not permitted).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from kgrag_utils import records, settings
from kgrag_utils.errors import ConfigError, DatasetMissingError

from test_reliability import toy_notebook


from cli_process import ROOT, kgrag, start_kgrag

WAIT_S = 600  # a bound on one subprocess or one wait, not a measurement





def kgrag_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("kgrag:")]


def wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"ended before {path.name} appeared: rc {proc.returncode}\n{out}\n{err[-3000:]}")
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.1)


def toy_grid(tmp_path: Path, name: str, paused: bool) -> tuple[Path, Path]:
    """A grid of two toy runs: `a` in a folder where the toy pauses at its third example (while `pause` exists),
    `b` in one where it does not. Returns (grid file, the pausing folder)."""
    a, b = toy_notebook(tmp_path / "a"), toy_notebook(tmp_path / "b")
    if paused:
        (a.parent / "pause").write_text("")
    grid = tmp_path / f"{name}.yaml"
    grid.write_text(textwrap.dedent(f"""
        name: {name}
        runs:
          - notebook: {a}
            parameters: {{word: a, run_name: {name}-a}}
          - notebook: {b}
            parameters: {{word: b, run_name: {name}-b}}
    """), encoding="utf-8")
    return grid, a.parent


def summary_rows(grid: str) -> dict[str, str]:
    text = (settings.runs_dir() / grid / "summary.csv").read_text(encoding="utf-8")
    return {line.split(",")[1]: line for line in text.splitlines()[1:] if line.count(",") > 3}


# ----------------------------------------------------------------------------- N8: Ctrl-C and SIGTERM mid-grid
@pytest.mark.slow
@pytest.mark.parametrize("sig", ["TERM", "INT"])
def test_an_interrupted_grid_prints_one_line_writes_its_summary_and_resumes(tmp_path, sig):
    grid, folder = toy_grid(tmp_path, f"sig{sig.lower()}", paused=True)
    proc = start_kgrag("grid", str(grid))
    wait_for(folder / "paused", proc)
    kernel = int((folder / "paused").read_text())
    if sig == "INT":  # a terminal's Ctrl-C: the whole process group, the kernel included
        os.killpg(proc.pid, signal.SIGINT)
    else:  # `timeout`, scancel, `docker stop`: the runner only
        proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == (143 if sig == "TERM" else 130), err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    lines = kgrag_lines(err)
    assert len(lines) == 1 and lines[0].startswith(f"kgrag: interrupted: rerun kgrag grid {grid} to resume"), err
    rows = summary_rows(grid.stem)
    assert ",interrupted," in rows[f"{grid.stem}-a"] and ",not run," in rows[f"{grid.stem}-b"]
    deadline = time.monotonic() + 30
    while Path(f"/proc/{kernel}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{kernel}").exists(), "the kernel outlived its interrupted runner"
    run_a = settings.results_dir() / f"{grid.stem}-a"
    before, _ = records.read_examples(run_a / records.EXAMPLES_FILE)
    assert [r["id"] for r in before] == ["0", "1"] and records.read_run(run_a)["status"] == "failed"
    (folder / "pause").unlink()
    again = kgrag("grid", str(grid))
    assert again.returncode == 0, again.stderr[-3000:]
    rows_after, _ = records.read_examples(run_a / records.EXAMPLES_FILE)
    assert [r["id"] for r in rows_after] == ["0", "1", "2", "3"]
    assert rows_after[:2] == before  # resumed: the finished examples kept, not recomputed


# ----------------------------------------------------------------------------- N9: two grids on one grid
@pytest.mark.slow
def test_a_second_grid_waits_for_the_firsts_runs_and_neither_calls_them_failed(tmp_path):
    grid, folder = toy_grid(tmp_path, "twice", paused=True)
    first = start_kgrag("grid", str(grid))
    wait_for(folder / "paused", first)  # the first grid holds run a, paused
    second = start_kgrag("grid", str(grid))  # runs b, then waits for a
    b_done = settings.results_dir() / "twice-b" / records.RUN_FILE
    deadline = time.monotonic() + WAIT_S
    while not (b_done.exists() and records.read_run(b_done.parent).get("status") == "ok"):
        assert second.poll() is None and time.monotonic() < deadline, second.communicate()[1][-3000:]
        time.sleep(0.2)
    (folder / "pause").unlink()  # the first grid finishes a, then finds b finished
    out1, err1 = first.communicate(timeout=WAIT_S)
    out2, err2 = second.communicate(timeout=WAIT_S)
    assert first.returncode == 0 and second.returncode == 0, err1[-2000:] + err2[-2000:]
    assert any("waiting up to" in ln and "twice-a" in ln for ln in kgrag_lines(err2)), err2[-2000:]
    rows = summary_rows("twice")
    assert ",ok," in rows["twice-a"] and (",ok," in rows["twice-b"] or ",skipped," in rows["twice-b"]), rows
    assert not any(",locked," in r or ",failed," in r for r in rows.values())


# ----------------------------------------------------------------------------- N15: --workers has a ceiling
def test_workers_are_capped_at_the_runs_and_warned_above_the_cpus(monkeypatch, capsys):
    from kgrag_utils.runner import grid

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(grid, "visible_gpus", lambda: [])
    assert grid.capped_workers(10_000, 6) == 6
    assert "6 workers start 6 kernels at once on 2 CPU(s)" in capsys.readouterr().err
    assert grid.capped_workers(10_000, 2) == 2 and capsys.readouterr().err == ""
    assert grid.capped_workers(3, 0) == 1


# ----------------------------------------------------------------------------- N5: storage variables
@pytest.mark.parametrize("var, where", [
    *[(v, "proc") for v in ("KGRAG_RESULTS_DIR", "KGRAG_RUNS_DIR", "KGRAG_CACHE_DIR", "KGRAG_SAMPLE_DIR",
                             "KGRAG_FIGURES_DIR")],
    ("KGRAG_RESULTS_DIR", "file"), ("KGRAG_CACHE_DIR", "file_child")])
def test_a_storage_variable_where_no_folder_can_be_is_one_line_before_a_kernel(tmp_path, var, where):
    (tmp_path / "f").write_text("x")
    value = {"proc": "/proc/kgrag-nowhere", "file": tmp_path / "f", "file_child": tmp_path / "f" / "sub"}[where]
    done = kgrag("run", str(toy_notebook(tmp_path / "nb")), **{var: value})
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert var in lines[0] and str(value) in lines[0] and "set " + var in lines[0]
    assert not (tmp_path / "nb" / "paused").exists()


# ----------------------------------------------------------------------------- N6, N11: full disks
def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mounting is not permitted here (mount {' '.join(args)}: {done.stderr.strip()})")


@pytest.fixture
def full_tmpfs(tmp_path):
    folder = tmp_path / "full"
    folder.mkdir()
    _mount("-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder))
    try:
        (folder / "cache").mkdir()
        (folder / "runs").mkdir()
        with open(folder / "fill", "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * 4096)
            except OSError:
                pass
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


def test_a_full_cache_disk_skips_derived_caches_with_a_warning(full_tmpfs, monkeypatch, tmp_path):
    import numpy as np

    from kgrag_utils import integrity
    from kgrag_utils.datasets.answerable import cached_answerable
    from kgrag_utils.datasets import registry

    monkeypatch.setenv("KGRAG_CACHE_DIR", str(full_tmpfs / "cache"))
    ds = registry.load_dataset("sample-movies-1hop", limit=3)
    src = tmp_path / "src.txt"
    src.write_text("a\n")
    with pytest.warns(RuntimeWarning, match="not cached: cannot write .* no space left .* KGRAG_CACHE_DIR"):
        chain, khop = cached_answerable(ds.items, ds.kg, [src], tag="full-disk")
    assert isinstance(chain, np.ndarray) and len(chain) == 3
    with pytest.warns(RuntimeWarning, match="digest not cached"):
        digest = integrity.file_digest(src)["sha256"]
    # a digest store that cannot be written is not "the sample changed"
    assert integrity.files_match(tmp_path, {"src.txt": {"size": 2, "sha256": digest}})


@pytest.mark.slow
def test_a_full_cache_disk_is_one_line_naming_kgrag_cache_dir(full_tmpfs, tmp_path):
    done = kgrag("run", "00_quickstart", "-p", "llm_preset=fake", "-p", "limit=2", "--run-name", "full-cache",
                 KGRAG_CACHE_DIR=full_tmpfs / "cache")
    assert done.returncode == 1 and "Traceback" not in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    rec = records.read_run(settings.results_dir() / "full-cache")
    assert rec["status"] == "failed" and rec["error"].startswith("StorageError: cannot write")
    assert "no space left" in rec["error"] and "KGRAG_CACHE_DIR" in rec["error"]


def test_a_full_runs_folder_is_named_as_the_runs_folder(full_tmpfs, tmp_path):
    done = kgrag("run", str(toy_notebook(tmp_path / "nb")), "--run-name", "full-runs", KGRAG_RUNS_DIR=full_tmpfs / "runs")
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert str(full_tmpfs / "runs") in lines[0] and "KGRAG_RUNS_DIR" in lines[0] and "KGRAG_RESULTS_DIR" not in lines[0]


# ----------------------------------------------------------------------------- N12: the timed-out cell is named
def test_a_long_cells_timeout_names_its_number():
    from nbclient.exceptions import CellTimeoutError
    from nbformat import NotebookNode

    from kgrag_utils.runner.execute import _timeout_message

    path = ROOT / "notebooks" / "00_quickstart.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    long = next(i for i, c in enumerate(cells)
                if c["cell_type"] == "code" and len("".join(c["source"]).strip().split("\n")) >= 11)
    exc = CellTimeoutError.error_from_timeout_and_cell("timed out", 5, NotebookNode(source="".join(cells[long]["source"])))
    message = _timeout_message(exc, path, 5)
    first = "".join(cells[long]["source"]).split("\n")[0].strip()
    assert message.startswith(f"cell {long + 1} of 00_quickstart.ipynb (") and first[:20] in message
    assert "[" not in message.split("(")[1][:2]  # the cell's first line, not a list repr


# ----------------------------------------------------------------------------- N13, N14, N18: careless input
def _one_short_line(done: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert len(lines[0]) < 500 and "\x1b" not in lines[0]
    return lines[0]


@pytest.mark.parametrize("argv", [
    ["run", "00_quickstart", "-p", "run_name=" + "x" * 100_000],
    ["run", "00_quickstart", "--run-name", "x" * 100_000],
    ["grid", "demo", "--shard", "x" * 100_000],
    ["grid", "demo", "--shard", "1/" + "9" * 5000],
    ["run", "a" * 300],
    ["grid", "g" * 300],
    ["run", "00_quick\x1b[31mstart"],
    ["grid", "de\x1b[31mmo"],
    ["run", "00_quickstart", "-p", "max_new_tokens=-5"],
    ["run", "00_quickstart", "-p", "llm_backend=bogus"],
])
def test_careless_input_is_one_short_line_before_a_kernel(argv):
    _one_short_line(kgrag(*argv))


@pytest.mark.parametrize("yaml_text, expected", [
    ("name: big\nruns:\n  - notebook: 00_quickstart.ipynb\n    parameters: {limit: " + "9" * 5000 + "}\n",
     "YAML cannot read"),
    ("name: dup\nruns:\n  - notebook: 00_quickstart.ipynb\n    parameters: {limit: 2, limit: 3}\n", "appears twice"),
    ("name: dup\nname: dup2\nruns:\n  - notebook: 00_quickstart.ipynb\n", "appears twice"),
])
def test_a_grid_yaml_with_a_huge_integer_or_a_duplicate_key_is_refused(tmp_path, yaml_text, expected):
    grid = tmp_path / "g.yaml"
    grid.write_text(yaml_text)
    assert expected in _one_short_line(kgrag("grid", str(grid), "--validate-only"))


# ----------------------------------------------------------------------------- N17: a dataset file that is not a file
@pytest.mark.parametrize("what", ["folder", "fifo", "dev_zero"])
def test_a_dataset_file_that_is_not_a_regular_file_is_refused_up_front(tmp_path, monkeypatch, what):
    from kgrag_utils.datasets.registry import load_dataset, require_present

    root = tmp_path / "d" / "MetaQA"
    qa = root / "qa" / "2-hop" / "vanilla" / "qa_test.txt"
    qa.parent.mkdir(parents=True)
    qa.write_text("who directed [Heat]\tMichael Mann\n")
    kb = root / "kb_reconstructed.txt"
    {"folder": lambda: kb.mkdir(), "fifo": lambda: os.mkfifo(kb), "dev_zero": lambda: kb.symlink_to("/dev/zero")}[what]()
    monkeypatch.setenv("KGRAG_DATA_DIR", str(tmp_path / "d"))
    for attempt in (lambda: require_present("metaqa-2hop"), lambda: load_dataset("metaqa-2hop", limit=1)):
        with pytest.raises(DatasetMissingError, match="kb_reconstructed.txt is (a folder|not a regular file)"):
            attempt()


# ----------------------------------------------------------------------------- N20: temp files of killed writers
def test_stale_temporary_files_are_removed_when_a_run_folder_is_locked(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    stale, fresh = run / ".run.json.0123456789ab.tmp", run / ".run.json.ba9876543210.tmp"
    for path in (stale, fresh):
        path.write_bytes(b"{" * 1000)
    old = time.time() - 3600
    os.utime(stale, (old, old))
    (run / "keep.tmp").write_text("not ours")  # only hidden atomic-write temporaries are touched
    with records.RunLock(run):
        pass
    assert not stale.exists() and fresh.exists() and (run / "keep.tmp").exists()
    with pytest.raises(ConfigError):
        records.check_run_name("x" * 100_000)
