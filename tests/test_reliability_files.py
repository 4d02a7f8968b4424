"""Issue 27, cases 1 and 13: run folders in a shared results folder follow no links, and stay readable.

Real files, real links and real processes: a kgrag run against a symlinked `.lock`, a recorder
resuming a record whose `examples.jsonl` links outside, a process killed without finishing.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kgrag_utils import records
from kgrag_utils.fileio import UnsafeFileError, atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 600  # a bound on a subprocess, not a measurement


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def _kgrag(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgrag_utils.cli", *args], env=_env(), capture_output=True,
                          text=True, timeout=WAIT_S)


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


# ----------------------------------------------------------------------------- case 1: links
def _run_against_a_link(tmp_path, link: Path, run_name: str) -> str:
    """`kgrag run` of the quickstart while `link` points at another user's file: the file is kept; the error."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim)
    done = _kgrag("run", "00_quickstart", "-p", "llm_preset=fake", "-p", "limit=1", "--run-name", run_name)
    assert victim.read_text() == "precious\n"
    assert done.returncode == 2, (done.stdout, done.stderr)
    return _one_line(done.stderr)


def test_a_symlinked_lock_is_refused_and_its_target_kept(tmp_path):
    run_dir = Path(os.environ["KGRAG_RESULTS_DIR"]) / "vic"
    line = _run_against_a_link(tmp_path, run_dir / ".lock", "vic")
    assert ".lock" in line and "symbolic link" in line and "rm " in line, line
    assert not (run_dir / records.RUN_FILE).exists()  # nothing ran


def _failed_record(root: Path, name: str, params: dict) -> Path:
    rec = records.RunRecorder("m", params, run_name=name, root=root)
    rec.add({"id": "q0"})
    rec.fail("RuntimeError: boom")
    return root / name


def test_a_rerun_never_appends_to_an_examples_file_linked_outside(tmp_path):
    outside = tmp_path / "someone-elses.jsonl"
    outside.write_text('{"id": "theirs"}')  # no trailing newline: a follower would add one
    run_dir = _failed_record(tmp_path / "results", "shared", {"a": 1})
    (run_dir / records.EXAMPLES_FILE).unlink()
    (run_dir / records.EXAMPLES_FILE).symlink_to(outside)
    with pytest.raises(UnsafeFileError, match="examples.jsonl is a symbolic link"):
        rec = records.RunRecorder("m", {"a": 1}, run_name="shared", root=tmp_path / "results")
        rec.add({"id": "q1"})
    assert outside.read_text() == '{"id": "theirs"}'


def test_a_hard_linked_examples_file_is_not_written(tmp_path):
    outside = tmp_path / "other.jsonl"
    outside.write_text('{"id": "theirs"}\n')
    run_dir = _failed_record(tmp_path / "results", "hard", {"a": 1})
    (run_dir / records.EXAMPLES_FILE).unlink()
    os.link(outside, run_dir / records.EXAMPLES_FILE)
    with pytest.raises(UnsafeFileError, match="hard links"):
        rec = records.RunRecorder("m", {"a": 1}, run_name="hard", root=tmp_path / "results")
        rec.add({"id": "q1"})
    assert outside.read_text() == '{"id": "theirs"}\n'


def test_a_run_folder_that_is_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "moved").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UnsafeFileError, match="moved is a symbolic link, not a folder"):
        records.RunRecorder("m", {"a": 1}, run_name="moved", root=tmp_path / "results")
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        records.RunLock(tmp_path / "results" / "moved").acquire()
    assert list(elsewhere.iterdir()) == []


def test_a_results_root_that_is_a_link_is_fine(tmp_path):
    real = tmp_path / "real-results"
    real.mkdir()
    (tmp_path / "results").symlink_to(real, target_is_directory=True)  # the user's own choice of folder
    rec = records.RunRecorder("m", {"a": 1}, run_name="ok-run", root=tmp_path / "results")
    rec.add({"id": "q0"})
    rec.finish(summary={})
    assert records.read_run(real / "ok-run")["n_examples"] == 1


def test_a_linked_run_json_is_replaced_not_followed(tmp_path):
    outside = tmp_path / "keep.json"
    outside.write_text("{}")
    run_dir = tmp_path / "results" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / records.RUN_FILE).symlink_to(outside)
    with pytest.raises(UnsafeFileError):
        records.read_run(run_dir)
    atomic_write_text(run_dir / records.RUN_FILE, '{"status": "ok"}')
    assert outside.read_text() == "{}" and not (run_dir / records.RUN_FILE).is_symlink()


# ----------------------------------------------------------------------------- case 13: permissions
_WRITE_A_RUN = textwrap.dedent("""
    import os, sys
    os.umask(int(sys.argv[2], 8))
    from kgrag_utils.records import RunRecorder
    rec = RunRecorder("m", {"a": 1}, run_name="grp", root=sys.argv[1])
    rec.add({"id": "q0"})
    if sys.argv[3] == "finish":
        rec.finish(summary={"n": 1})
    else:
        os._exit(0)   # ends without finishing: no finish, no close, no cleanup
""")


def _write_a_run(root: Path, umask: str, how: str = "finish") -> None:
    subprocess.run([sys.executable, "-c", _WRITE_A_RUN, str(root), umask, how], env=_env(), check=True,
                   timeout=WAIT_S)


def test_record_files_follow_the_umask_so_a_group_can_read_them(tmp_path):
    _write_a_run(tmp_path, "002")
    for name in (records.RUN_FILE, records.EXAMPLES_FILE, records.LOCK_FILE):
        mode = stat.S_IMODE((tmp_path / "grp" / name).stat().st_mode)
        assert mode == 0o664, (name, oct(mode))
    _write_a_run(tmp_path / "strict", "077")
    assert stat.S_IMODE((tmp_path / "strict" / "grp" / records.RUN_FILE).stat().st_mode) == 0o600


def test_a_rewritten_file_keeps_its_permissions(tmp_path):
    target = tmp_path / "run.json"
    target.write_text("{}")
    target.chmod(0o640)
    atomic_write_text(target, '{"a": 1}')
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and json.loads(target.read_text()) == {"a": 1}


def test_an_interrupted_record_counts_its_examples_on_disk(tmp_path):
    _write_a_run(tmp_path, "022", how="exit")
    rec = records.read_run(tmp_path / "grp")
    assert rec["status"] == "interrupted"
    assert rec["n_examples"] == 1
    frame = records.load_runs(tmp_path)
    assert frame.loc[0, "n_examples"] == 1 and frame.loc[0, "status"] == "interrupted"


# ----------------------------------------------------------------------------- case 13: prompt_too_long
def test_a_question_too_long_for_the_context_is_labelled_in_its_own_record():
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.llm import load_llm
    from kgrag_utils.methods import tour

    q = load_dataset("sample-movies-1hop", limit=1).items[0]
    llm = load_llm("fake", responses={}, cache=False, n_ctx=50)
    prompt = "Facts: " + "a fact " * 200 + f"Question: {q.question}"
    [r] = llm.generate([prompt], max_new_tokens=8)
    rec = tour.reader_record(q, prompt, r, [], 3, 0.1)
    assert rec["finish"] == "prompt_too_long" and rec["failure"] == "prompt_too_long"
    assert "context window of 50" in rec["error"] and rec["failed"]
    assert tour.summarize([rec])["n_errors"] == 1
    nb = json.loads((ROOT / "notebooks" / "00_quickstart.ipynb").read_text(encoding="utf-8"))
    assert any("tour.reader_record(" in "".join(c["source"]) for c in nb["cells"])  # the notebook records so


def test_kgrag_report_names_the_grids_own_summary(tmp_path, capsys):
    from kgrag_utils import cli, settings

    grid = tmp_path / "named.yaml"
    grid.write_text("name: named\nruns:\n  - notebook: 00_quickstart.ipynb\n", encoding="utf-8")
    cli.main(["report", str(grid), "-p", "llm_preset=fake"])
    out = capsys.readouterr().out
    summary = settings.runs_dir() / "named" / "summary.md"
    assert f"summary in {summary}" in out and summary.is_file()


def test_a_symlinked_run_log_is_refused_and_its_target_kept(tmp_path):
    log = Path(os.environ["KGRAG_RUNS_DIR"]) / "adhoc" / "vic-log.log"
    assert "vic-log.log is a symbolic link" in _run_against_a_link(tmp_path, log, "vic-log")


def test_a_run_record_names_the_commit_that_ran(tmp_path):
    rec = records.RunRecorder("m", {"a": 1}, run_name="code", root=tmp_path)
    rec.finish(summary={})
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    code = records.read_run(tmp_path / "code")["code"]
    assert code["commit"] == head and isinstance(code["dirty"], bool)


def test_a_hard_linked_file_is_refused_before_it_is_truncated(tmp_path):
    from kgrag_utils.fileio import open_in_folder

    other = tmp_path / "other.log"
    other.write_text("keep me\n")
    (tmp_path / "runs").mkdir()
    os.link(other, tmp_path / "runs" / "x.log")
    with pytest.raises(UnsafeFileError, match="hard links"):
        open_in_folder(tmp_path / "runs", "x.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    assert other.read_text() == "keep me\n"
