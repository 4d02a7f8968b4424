"""Issue 15: one grid spread over machines (`--shard i/n`, `kgrag report`) and over GPUs (one per worker)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from kgrag_utils import records, runner
from kgrag_utils.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 1500  # upper bound for one grid subprocess (a bound, not a measurement)
SMALL = ["-p", "llm_preset=fake", "-p", "limit=2"]  # the demo grid on sample data, fake LLM, 2 questions per run


def test_shards_partition_the_runs_deterministically():
    runs = list(range(11))
    parts = [runner.shard_runs(runs, (i, 3)) for i in range(3)]
    assert sorted(x for p in parts for x in p) == runs
    assert parts == [runner.shard_runs(runs, (i, 3)) for i in range(3)]  # same answer every time
    assert runner.shard_runs(runs, None) == runner.shard_runs(runs, (0, 1)) == runs
    assert runner.parse_shard("1/4") == (1, 4)
    for bad in ("4/4", "-1/2", "1/0", "a/b", "1"):
        with pytest.raises(ConfigError, match="--shard"):
            runner.parse_shard(bad)


def test_one_gpu_per_worker_where_several_are_visible(monkeypatch):
    assert runner.worker_gpus(3, ["0", "1", "2", "3"]) == ["0", "1", "2"]
    assert runner.worker_gpus(4, ["0", "1"]) == ["0", "1", "0", "1"]  # more workers than GPUs: shared in turn
    assert runner.worker_gpus(1, ["0", "1"]) is None  # one worker keeps every GPU
    assert runner.worker_gpus(2, ["0"]) is None  # one GPU: nothing to spread
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    assert runner.visible_gpus() == ["2", "5"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert runner.visible_gpus() == []


ENV_NB = '''
import os
from kgrag_utils.records import RunRecorder
rec = RunRecorder("toy", {"i": i}, run_name=run_name or None)
rec.add({"id": "0", "cuda": os.environ.get("CUDA_VISIBLE_DEVICES")})
rec.finish(summary={"cuda": os.environ.get("CUDA_VISIBLE_DEVICES")})
'''


@pytest.mark.slow
def test_each_worker_kernel_gets_its_own_gpu(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("i = 0\nrun_name = ''\n")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell(ENV_NB)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "envnb.ipynb"
    nbformat.write(nb, path)
    cfg = tmp_path / "g.yaml"
    cfg.write_text(f"name: gpus\nruns:\n  - notebook: {path}\n    grid: {{i: [1, 2, 3, 4]}}\n")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    outs = runner.run_grid(cfg, workers=2, progress=False)
    assert [o.status for o in outs] == ["ok"] * 4, [o.error for o in outs]
    seen = [o.summary["cuda"] for o in outs]
    assert set(seen) == {"3", "5"}  # every kernel saw exactly one GPU of the two
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3,5"  # the runner's own environment is untouched


def _env(base: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for var, sub in (("KGRAG_RESULTS_DIR", "results"), ("KGRAG_RUNS_DIR", "runs"), ("KGRAG_FIGURES_DIR", "figures"),
                     ("KGRAG_CACHE_DIR", "cache")):
        env[var] = str(base / sub)
    return env


def _kgrag(base: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kgrag_utils.cli", *args], env=_env(base), cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _done(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, out[-4000:]
    return out


def _comparable(df: pd.DataFrame) -> pd.DataFrame:
    """Drop what differs between two executions of the same runs: wall-clock times and timestamps."""
    drop = [c for c in df.columns if "seconds" in c or c in ("updated", "started")]
    keys = [c for c in ("run_name", "method", "variant", "metric", "group") if c in df.columns]
    return df.drop(columns=drop).sort_values(keys).reset_index(drop=True)


@pytest.mark.slow
def test_two_shards_run_exactly_the_demo_grid_and_report_as_one(tmp_path):
    """The shards run together; then the unsharded grid in the same folders finds nothing left to run (every
    record is there with the grid's own parameters) and its report equals the one `kgrag report` made."""
    split = tmp_path / "split"
    shards = [_kgrag(split, "grid", "demo", *SMALL, "--shard", f"{i}/2") for i in range(2)]  # together
    logs = [_done(p) for p in shards]
    assert all("kgrag report demo" in log for log in logs)
    for log in logs:  # a `make demo`-style log holds no papermill false alarm (issue 15)
        assert "Unable to parse line" not in log and "Passed unknown parameter" not in log
        assert "running over TCP without encryption" not in log  # local kernels talk over IPC sockets
    # the shards ran no report: it waits for every shard
    assert not any((split / "results").glob("05_report-*"))
    _done(_kgrag(split, "report", "demo", *SMALL))

    def runs_of(base: Path) -> set[str]:
        return {p.parent.name for p in (base / "results").glob(f"*/{records.RUN_FILE}")}

    expected = {runner.run_name_for(p, runner.check_run_parameters(p, prm))
                for p, prm in runner.expand_grid(runner.load_grid("demo"), {"llm_preset": "fake", "limit": 2})}
    report_runs = {n for n in runs_of(split) if n.startswith("05_report-")}
    assert runs_of(split) - report_runs == expected  # together the shards ran exactly the grid's runs
    shard_names = [set(pd.read_csv(split / "runs" / "demo" / f"summary-shard-{i}-of-2.csv")["run_name"]) for i in range(2)]
    assert shard_names[0].isdisjoint(shard_names[1]) and shard_names[0] | shard_names[1] == expected
    reported = {
        "scores": pd.read_csv(split / "results" / "report_scores.csv"),
        "summary": pd.read_csv(split / "runs" / "demo" / "summary.csv"),
        "report": json.loads(next((split / "results").glob("05_report-*/run.json")).read_text())["summary"],
    }
    assert len(reported["scores"]) > 0
    # the whole grid over the shards' records: every run skipped, the report (always re-run) the same
    _done(_kgrag(split, "grid", "demo", *SMALL))
    summary = pd.read_csv(split / "runs" / "demo" / "summary.csv")
    runs = summary[summary["run_name"].isin(expected)]
    assert set(runs["run_name"]) == expected and set(runs["status"]) == {"skipped"}, runs[["run_name", "status"]]
    pd.testing.assert_frame_equal(_comparable(reported["scores"]),
                                  _comparable(pd.read_csv(split / "results" / "report_scores.csv")))
    assert json.loads(next((split / "results").glob("05_report-*/run.json")).read_text())["summary"] == reported["report"]
    pd.testing.assert_frame_equal(_comparable(reported["summary"].drop(columns=["status"], errors="ignore")),
                                  _comparable(summary.drop(columns=["status"], errors="ignore")))

