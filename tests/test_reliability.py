"""Issue 17: nothing lost, nothing silently wrong under faults.

Run records (one writer per folder, fresh-line appends, torn lines counted, one resume key), kills and
concurrent writers (real subprocesses, bounded by timeouts; no test asserts on a duration), run names.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest

from kgrag_utils import cli, records, runner, settings
from kgrag_utils.errors import ConfigError
from kgrag_utils.records import RunLockedError, RunRecordError

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 120  # upper bound on any wait for another process (a bound, not a measurement)

# A notebook shaped like the method notebooks: its recorder holds a subset of the parameters (no
# batch_size), it skips done ids, and it can be told through files in its folder to fail once or to pause.
TOY_SOURCE = '''
import os, time
from pathlib import Path
from kgrag_utils.records import RunRecorder
PARAMS = dict(limit=limit, word=word)  # batch_size is left out, as 01_simgrag leaves it out
rec = RunRecorder("toy", PARAMS, run_name=run_name or None)
for i in range(limit):
    if str(i) in rec.done_ids:
        continue
    if i == 2 and Path("fail_once").exists():
        Path("fail_once").unlink()
        raise RuntimeError("failing once at example 2")
    if i == 2 and Path("pause").exists():
        Path("paused").write_text(str(os.getpid()))
        deadline = time.monotonic() + 300
        while Path("pause").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    rec.add({"id": str(i), "word": word, "pid": os.getpid(), "batch_size": batch_size})
rec.finish(summary={"n": len(rec.examples)})
'''


def toy_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("limit = 4\nword = 'a'\nbatch_size = 8\nrun_name = ''\n")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell(TOY_SOURCE)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "toy.ipynb"
    nbformat.write(nb, path)
    return path


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _kgrag(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kgrag_utils.cli", *args], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _wait_for(path: Path, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"process ended before {path.name} appeared: rc {proc.returncode}\n{out}\n{err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {WAIT_S} s")
        time.sleep(0.05)


def _lines(run_dir: Path) -> list[str]:
    return (run_dir / records.EXAMPLES_FILE).read_text(encoding="utf-8").splitlines()


# ----------------------------------------------------------------------------- case 3: torn lines
def test_a_torn_last_line_never_swallows_the_next_record(tmp_path):
    rec = records.RunRecorder("m", {"a": 1}, run_name="torn", root=tmp_path)
    for i in range(4):
        rec.add({"id": f"q{i}"})
    rec.close()
    with open(rec.examples_path, "a", encoding="utf-8") as fh:
        fh.write('{"id": "q4", "pred')  # killed mid-write: no newline
    again = records.RunRecorder("m", {"a": 1}, run_name="torn", root=tmp_path)
    assert again.done_ids == {"q0", "q1", "q2", "q3"} and again.torn_lines == 1
    again.add({"id": "q4"})
    again.add({"id": "q5"})
    again.finish(summary={})
    rows, torn = records.read_examples(again.examples_path)
    assert [r["id"] for r in rows] == ["q0", "q1", "q2", "q3", "q4", "q5"] and torn == 1
    run = records.read_run(again.run_dir)
    assert run["status"] == "ok" and run["n_examples"] == 6 and run["torn_lines"] == 1
    assert len(records.load_examples(again.run_dir)) == 6


def test_a_record_added_twice_counts_once(tmp_path):
    rec = records.RunRecorder("m", {"a": 1}, run_name="twice", root=tmp_path)
    rec.add({"id": "q0", "v": 1})
    rec.add({"id": "q0", "v": 2})
    rec.finish(summary={})
    rows, _ = records.read_examples(rec.examples_path)
    assert rows == [{"id": "q0", "v": 2}] and rec.examples == rows
    assert records.read_run(rec.run_dir)["n_examples"] == 1


# ----------------------------------------------------------------------------- case 1: one resume key
def test_runner_and_recorder_share_one_key():
    # the execution knobs never change what a run records, so they are not part of its key
    base = {"dataset": "d", "limit": 8, "seed": 7}
    assert records.run_key({**base, "batch_size": 1, "run_name": "x"}) == records.run_key({**base, "batch_size": 8})
    assert records.run_key(base) != records.run_key({**base, "limit": 9})
    assert runner.run_name_for("01_simgrag.ipynb", {**base, "batch_size": 1}) == f"01_simgrag-{records.run_key(base)}"


@pytest.mark.slow
def test_a_failed_run_keeps_its_finished_examples_on_rerun(tmp_path, monkeypatch):
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path / "results"))
    nb = toy_notebook(tmp_path / "nbs")
    (nb.parent / "fail_once").write_text("")
    first = runner.run_notebook(nb, {"batch_size": 1}, grid="t")
    assert first.status == "failed" and "failing once" in first.error
    run_dir = settings.results_dir() / first.run_name
    kept = _lines(run_dir)
    assert len(kept) == 2 and records.read_run(run_dir)["n_examples"] == 2
    again = runner.run_notebook(nb, {"batch_size": 1}, grid="t")
    assert again.status == "ok", again.error
    lines = _lines(run_dir)
    assert lines[:2] == kept  # the finished examples were resumed, not recomputed
    rows, _ = records.read_examples(run_dir / records.EXAMPLES_FILE)
    assert [r["id"] for r in rows] == ["0", "1", "2", "3"]
    assert rows[0]["pid"] != rows[2]["pid"]  # two kernels: 0-1 from the first, 2-3 from the second
    # a rerun with another batch size is the same run (skipped)
    assert runner.run_notebook(nb, {"batch_size": 4}, grid="t").status == "skipped"


@pytest.mark.slow
def test_simgrag_failed_run_resumes_with_the_runner_key(tmp_path, monkeypatch):
    """The issue's repro on 01_simgrag (batch_size is not in its recorder's parameters), with the fake LLM."""
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path / "results"))
    params = {"llm_preset": "fake", "dataset": "sample-movies-1hop", "seed": 7, "limit": 4, "batch_size": 1}
    first = runner.run_notebook("01_simgrag", params, grid="t")
    assert first.status == "ok", f"{first.error} (log {first.log})"
    run_dir = settings.results_dir() / first.run_name
    lines = _lines(run_dir)
    assert len(lines) == 4
    # make it a run that failed after two examples
    (run_dir / records.EXAMPLES_FILE).write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    rec = json.loads((run_dir / records.RUN_FILE).read_text())
    rec.update(status="failed", error="TimeoutError: cell timed out", n_examples=2)
    (run_dir / records.RUN_FILE).write_text(json.dumps(rec))
    again = runner.run_notebook("01_simgrag", params, grid="t")
    assert again.status == "ok", f"{again.error} (log {again.log})"
    assert "(2 examples already done)" in Path(again.log).read_text()
    now = _lines(run_dir)
    assert now[:2] == lines[:2] and len(now) == 4
    assert records.read_run(run_dir)["n_examples"] == 4


# ----------------------------------------------------------------------------- case 2: one writer per folder
def test_a_second_recorder_process_is_refused_naming_the_first(tmp_path):
    holder = tmp_path / "holder.py"
    holder.write_text(textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from kgrag_utils.records import RunRecorder
        rec = RunRecorder("m", {{"a": 1}}, run_name="busy", root={str(tmp_path)!r})
        rec.add({{"id": "q0"}})
        Path({str(tmp_path / "held")!r}).write_text("")
        deadline = time.monotonic() + 300
        while not Path({str(tmp_path / "go")!r}).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        rec.add({{"id": "q1"}})
        rec.finish(summary={{}})
    """))
    proc = subprocess.Popen([sys.executable, str(holder)], env=_env())
    try:
        _wait_for(tmp_path / "held", proc)
        with pytest.raises(RunLockedError) as err:
            records.RunRecorder("m", {"a": 1}, run_name="busy", root=tmp_path)
        message = str(err.value)
        assert f"pid {proc.pid}" in message and "holder.py" in message and "\n" not in message
        (tmp_path / "go").write_text("")
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        proc.kill()
    # once the first writer is gone, the folder can be taken (and is resumed: same key)
    after = records.RunRecorder("m", {"a": 1}, run_name="busy", root=tmp_path)
    assert after.done_ids == {"q0", "q1"}
    after.close()


def test_the_lock_dies_with_its_process(tmp_path):
    holder = tmp_path / "holder.py"
    holder.write_text(textwrap.dedent(f"""
        import time
        from pathlib import Path
        from kgrag_utils.records import RunRecorder
        rec = RunRecorder("m", {{"a": 1}}, run_name="killed", root={str(tmp_path)!r})
        rec.add({{"id": "q0"}})
        Path({str(tmp_path / "held")!r}).write_text("")
        time.sleep(300)
    """))
    proc = subprocess.Popen([sys.executable, str(holder)], env=_env())
    try:
        _wait_for(tmp_path / "held", proc)
        assert records.read_run(tmp_path / "killed")["status"] == "running"
    finally:
        proc.kill()
        proc.wait(timeout=WAIT_S)
    # SIGKILL: no cleanup ran, yet the OS released the lock and the record reads as interrupted
    assert records.read_run(tmp_path / "killed")["status"] == "interrupted"
    rec = records.RunRecorder("m", {"a": 1}, run_name="killed", root=tmp_path)
    assert rec.done_ids == {"q0"}
    rec.close()


def test_same_process_recorders_share_the_folder(tmp_path):
    # a notebook cell re-run in the same kernel builds a second recorder for the same folder
    first = records.RunRecorder("m", {"a": 1}, run_name="cell", root=tmp_path)
    first.add({"id": "q0"})
    second = records.RunRecorder("m", {"a": 1}, run_name="cell", root=tmp_path)
    assert second.done_ids == {"q0"}
    second.finish(summary={})


@pytest.mark.slow
def test_two_kgrag_runs_of_one_run_never_write_it_together(tmp_path):
    nb = toy_notebook(tmp_path / "nbs")
    (nb.parent / "pause").write_text("")
    results = Path(os.environ["KGRAG_RESULTS_DIR"])
    first = _kgrag("run", str(nb), "-p", "word=par", "--run-name", "par-run")
    try:
        _wait_for(nb.parent / "paused", first)  # the first run is inside its notebook, holding the folder
        second = _kgrag("run", str(nb), "-p", "word=par", "--run-name", "par-run")
        out, err = second.communicate(timeout=WAIT_S)
        assert second.returncode == 2, (out, err)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and "being written by pid" in lines[0] and f"pid {first.pid}" in lines[0]
        (nb.parent / "pause").unlink()
        out, err = first.communicate(timeout=WAIT_S)
        assert first.returncode == 0, (out, err)
    finally:
        first.kill()
    rows, torn = records.read_examples(results / "par-run" / records.EXAMPLES_FILE)
    assert [r["id"] for r in rows] == ["0", "1", "2", "3"] and torn == 0
    assert len(_lines(results / "par-run")) == 4  # 4 lines for 4 ids: nothing written twice


@pytest.mark.slow
def test_a_killed_run_resumes_without_loss_or_duplicates(tmp_path):
    nb = toy_notebook(tmp_path / "nbs")
    (nb.parent / "pause").write_text("")
    results = Path(os.environ["KGRAG_RESULTS_DIR"])
    proc = _kgrag("run", str(nb), "-p", "word=kill", "--run-name", "kill-run", start_new_session=True)
    try:
        _wait_for(nb.parent / "paused", proc)
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and its kernel, with no chance to clean up
        proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert records.read_run(results / "kill-run")["status"] == "interrupted"
    # the kernel runs in a session of its own and outlives its runner; once unpaused it must write nothing
    orphan = int((nb.parent / "paused").read_text())
    (nb.parent / "paused").unlink()
    (nb.parent / "pause").unlink()
    try:
        again = _kgrag("run", str(nb), "-p", "word=kill", "--run-name", "kill-run")
        out, err = again.communicate(timeout=WAIT_S)
        assert again.returncode == 0, (out, err)
    finally:
        try:
            os.kill(orphan, signal.SIGKILL)
        except ProcessLookupError:
            pass
    rows, _ = records.read_examples(results / "kill-run" / records.EXAMPLES_FILE)
    assert [r["id"] for r in rows] == ["0", "1", "2", "3"]
    assert len(_lines(results / "kill-run")) == 4
    assert rows[0]["pid"] == rows[1]["pid"] == orphan  # 0-1 survived the kill
    assert rows[2]["pid"] == rows[3]["pid"] != orphan  # 2-3 came from the rerun's kernel, none from the orphan


def test_a_kernel_whose_runner_died_stops_writing(tmp_path, monkeypatch):
    lock = records.RunLock(tmp_path / "orphan").acquire()  # the "runner" holds the folder for our "kernel"
    monkeypatch.setenv(records.ENV_RUN_DIR, str(tmp_path / "orphan"))
    monkeypatch.setenv(records.ENV_RUN_TOKEN, lock.token)
    monkeypatch.setenv(records.ENV_RUN_KEY, "k1")
    rec = records.RunRecorder("m", {"a": 1}, run_name="orphan", root=tmp_path)
    assert rec.params_hash == "k1"  # the runner's key
    rec.add({"id": "q0"})
    monkeypatch.setattr(os, "getppid", lambda: 1)  # reparented: the runner is gone
    with pytest.raises(RunLockedError, match="has ended"):
        rec.add({"id": "q1"})
    assert [r["id"] for r in records.read_examples(rec.examples_path)[0]] == ["q0"]
    lock.release()


def test_a_grid_refuses_duplicate_run_names(tmp_path):
    nb = toy_notebook(tmp_path / "nbs")
    cfg = {"name": "dups", "runs": [{"notebook": str(nb), "parameters": {"limit": 2}},
                                    {"notebook": str(nb), "parameters": {"limit": 2}}]}
    with pytest.raises(ConfigError, match="two runs named") as err:
        runner.expand_grid(cfg)
    assert "\n" not in str(err.value)
    named = {"name": "dups", "runs": [{"notebook": str(nb), "parameters": {"limit": 2, "run_name": "same"}},
                                     {"notebook": str(nb), "parameters": {"limit": 3, "run_name": "same"}}]}
    with pytest.raises(ConfigError, match="'same'"):
        runner.expand_grid(named)


# ----------------------------------------------------------------------------- case 9 (run.json), case 12
def test_a_truncated_run_json_is_one_line_naming_the_file(tmp_path, capsys):
    rec = records.RunRecorder("m", {"a": 1}, run_name="trunc", root=tmp_path)
    rec.add({"id": "q0"})
    rec.finish(summary={"x": 1})
    text = rec.run_path.read_text()
    rec.run_path.write_text(text[: len(text) // 2])
    with pytest.raises(RunRecordError) as err:
        records.read_run(rec.run_dir)
    message = str(err.value)
    assert str(rec.run_path) in message and "--force" in message and "\n" not in message
    with pytest.raises(RunRecordError):  # the recorder does not start over silently either
        records.RunRecorder("m", {"a": 1}, run_name="trunc", root=tmp_path)
    df = records.load_runs(tmp_path)
    assert list(df["status"]) == ["unreadable"] and str(rec.run_path) in df["error"][0]


def test_kgrag_run_refuses_a_damaged_record_before_a_kernel_starts(tmp_path, capsys):
    nb = toy_notebook(tmp_path / "nbs")
    run_dir = settings.results_dir() / "damaged"
    run_dir.mkdir(parents=True)
    (run_dir / records.RUN_FILE).write_text('{"run_name": "damaged", "stat')
    assert cli.main(["run", str(nb), "--run-name", "damaged"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(run_dir / records.RUN_FILE) in err
    assert (run_dir / records.RUN_FILE).read_text() == '{"run_name": "damaged", "stat'  # untouched


@pytest.mark.parametrize("name", ["../../X", "/tmp/abs", "a/b", "..", ".hidden", "a\\b", "x" * 300, ""])
def test_run_names_are_names(name):
    with pytest.raises(ConfigError, match="run_name|non-empty"):
        records.check_run_name(name)


@pytest.mark.parametrize("argv", [
    ["run", "00_quickstart", "-p", "run_name=../../X"],
    ["run", "00_quickstart", "--run-name", "/tmp/abs"],
    ["run", "00_quickstart", "--run-name", "a/../../b"],
])
def test_kgrag_run_refuses_paths_as_run_names(argv, capsys):
    results = settings.results_dir()
    before = set(results.parent.iterdir())
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a plain name" in err
    assert set(results.parent.iterdir()) == before and not Path("/tmp/abs").exists()


def test_a_grid_name_is_a_name(tmp_path, capsys):
    cfg = tmp_path / "g.yaml"
    cfg.write_text("name: ../../G\nruns:\n  - notebook: 00_quickstart.ipynb\n")
    assert cli.main(["grid", str(cfg), "--validate-only"]) == 2
    assert "grid name '../../G' is not a plain name" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="not a plain name"):
        records.RunRecorder("m", {}, run_name="../escape", root=tmp_path)


# ----------------------------------------------------------------------------- case 7: limit=0 means all
LIMIT_DATASETS = [("sample-movies-1hop", "test"), ("sample-movies-2hop", "test"), ("sample-kinship", "test"),
                  ("sample-passages", "all"), ("fixture-factkg", "test"), ("fixture-iirc", "dev")]


@pytest.mark.parametrize("name,split", LIMIT_DATASETS)
def test_limit_zero_is_every_item_of_a_dataset(name, split):
    from kgrag_utils.datasets import load_dataset

    def ids(ds):
        return [getattr(q, "qid", None) or q.sid for q in ds.items]  # questions have qids, kinship stories sids

    every = ids(load_dataset(name, split=split))
    assert len(every) > 1
    for seed in (0, 7):
        assert ids(load_dataset(name, split=split, limit=0, seed=seed)) == every
    assert len(load_dataset(name, split=split, limit=1).items) == 1  # a positive limit still samples
    with pytest.raises(ConfigError, match="non-negative"):
        load_dataset(name, split=split, limit=-1)


def test_limit_zero_is_every_item_in_every_method_config():
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods import registry

    for spec in registry.methods():
        cfg = spec.config_class(limit=0)
        every = load_dataset(cfg.dataset, split=cfg.split)
        assert len(cfg.load_dataset()) == len(every) > 1, spec.name


def test_limit_zero_is_accepted_by_every_notebook_before_a_kernel_starts():
    for path in sorted((ROOT / "notebooks").glob("0[0-4]_*.ipynb")):
        params = runner.notebook_parameters(path)
        assert "limit" in params, path.name
        runner.validate_parameters(path, {"limit": 0})  # raises ConfigError when refused


@pytest.mark.slow
@pytest.mark.parametrize("notebook,params", [
    # the two notebooks that raised IndexError with limit=0 (it used to select no question)
    ("00_quickstart", {"dataset": "sample-movies-1hop", "llm_preset": "fake", "embedder": "minilm"}),
    ("04_kgp", {"dataset": "fixture-iirc", "split": "dev", "llm_preset": "fake", "sweep_limit": 2,
                "variants": ["tfidf", "nollm"], "set_passages": 40}),
])
def test_notebooks_run_every_question_with_limit_zero(notebook, params):
    from kgrag_utils.datasets import load_dataset

    out = runner.run_notebook(notebook, {**params, "limit": 0}, run_name=f"limit0-{notebook}", grid="test",
                              timeout=900)
    assert out.status == "ok", f"{out.error} (log: {out.log})"
    every = load_dataset(params["dataset"], split=params.get("split", "test"))
    assert out.summary["n"] == len(every) > 1
    assert len(records.load_examples(out.run_name)) == len(every)
