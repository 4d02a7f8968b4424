"""Issue 27, case 10: result files say what ran, and `kgrag reproduce` refuses a file it cannot check.

The end-to-end check of `kgrag reproduce` (a SimGRAG result re-run question by question) went with
benchmarks/simgrag_e2e.py, the last script that wrote per-question `outcomes` (removed in issue 44: the notebook
runs' records are compared by `kgrag repro TABLE --check` and the paired tables, tests/test_repro.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from kgrag_utils import records

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 900  # a bound on one subprocess, not a measurement


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], env=_env(), capture_output=True, text=True, timeout=WAIT_S,
                          cwd=ROOT)


def test_write_result_records_the_command_arguments_commit_and_environment(tmp_path):
    path = records.write_result(tmp_path / "r.json", {"a": 1}, argparse.Namespace(limit=3, dataset="x"))
    prov = json.loads(path.read_text())["provenance"]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert prov["arguments"] == {"limit": 3, "dataset": "x"} and prov["commit"] == head
    assert isinstance(prov["dirty"], bool) and prov["argv"] and prov["command"]
    assert prov["environment"]["python"] and "packages" in prov["environment"]


def test_every_benchmark_writes_its_result_file_through_write_result():
    """write_result is the one writer that adds the provenance block: no script writes its --out another way
    (benchmarks/bench_common.py's `write` and `write_rows` are write_result with a printed line)."""
    assert "write_result(out, record, args)" in (ROOT / "benchmarks" / "bench_common.py").read_text(encoding="utf-8")
    offenders = []
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        text = script.read_text(encoding="utf-8")
        if '"--out"' not in text:
            continue
        if "write_result(" not in text and not re.search(r"^from bench_common import .*\bwrite(_rows)?\b", text, re.M):
            offenders.append(f"{script.name}: no write_result")
        for pattern in (r"\b(out|args\.out|tmp_out|tmp)\.write_text\(", r"json\.dump\(.*(out|fh)",
                        r"atomic_write_json\((out|args\.out)"):
            if re.search(pattern, text):
                offenders.append(f"{script.name}: {pattern}")
    assert not offenders, offenders

def test_kgrag_reproduce_refuses_a_file_without_provenance(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"benchmark": "x", "summary": {}}))
    done = _run("-m", "kgrag_utils.cli", "reproduce", str(old))
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "records no provenance" in lines[0]


def test_committed_results_agree_with_what_ran():
    """The committed result files' configuration blocks name the dataset, model and traversal that ran."""
    wrong = []
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            continue
        settings = data.get("settings") if isinstance(data.get("settings"), dict) else {}
        llm = data.get("llm") if isinstance(data.get("llm"), dict) else {}
        if "dataset" in settings and settings["dataset"] != data.get("dataset"):
            wrong.append(f"{path.name}: settings.dataset {settings['dataset']} for {data.get('dataset')}")
        if "llm_preset" in settings and llm.get("preset") and settings["llm_preset"] != llm["preset"]:
            wrong.append(f"{path.name}: settings.llm_preset {settings['llm_preset']} for {llm['preset']}")
        config = data.get("config") if isinstance(data.get("config"), dict) else {}
        if data.get("benchmark") == "kgp_retrieval":
            if config.get("dataset") not in (None, data.get("dataset")):
                wrong.append(f"{path.name}: config.dataset {config.get('dataset')} for {data.get('dataset')}")
            for entry in data.get("results") or []:
                if (entry.get("config") or {}).get("traversal") != entry.get("traversal"):
                    wrong.append(f"{path.name}: a {entry.get('traversal')} entry without its own config")
    assert not wrong, wrong
