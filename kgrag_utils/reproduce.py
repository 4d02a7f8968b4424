"""`kgrag reproduce FILE [--limit N]`: re-run a result file's first N questions and compare them one by one.

A result file written through `records.write_result` holds a `provenance` block (the command, its
arguments, commit and environment) and per-question `outcomes` ({label: {question id: outcome}}). This
module re-runs that command on the file's first N question ids (`--only-ids`, a flag of every benchmark
that takes `--dataset`), in a fresh results folder (nothing resumes from earlier records; the LLM reply
cache is kept, so a reply already computed is replayed), and reports for each label how many of the N
outcomes are the same, naming the first that differ.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import settings
from .errors import ConfigError, shown

#: flags of the recorded command that the re-run sets itself
_REPLACED = ("--out", "--only-ids")


@dataclass
class Comparison:
    label: str
    n: int
    same: int
    differ: list[tuple[str, Any, Any]] = field(default_factory=list)

    def line(self) -> str:
        text = f"{self.label}: {self.same}/{self.n} questions give the same outcome"
        if self.differ:
            qid, old, new = self.differ[0]
            text += f"; first difference {qid}: recorded {shown(old, 60)}, now {shown(new, 60)}"
        return text


#: a result file larger than this is refused before it is read (the committed ones are a few MB at most)
MAX_RESULT_BYTES = 256 << 20


def _not_a_result_file(path: Path) -> str | None:
    """Why a path cannot be a result file (checked before reading: a folder, a device, a huge file), or None."""
    if not path.is_file():
        return "is a folder" if path.is_dir() else "does not exist" if not path.exists() else "is not a regular file"
    size = path.stat().st_size
    if size > MAX_RESULT_BYTES:
        return f"has {size:,} bytes, more than a result file's {MAX_RESULT_BYTES:,}"
    return None


def _load(path: Path) -> tuple[dict, dict, dict]:
    where = shown(str(path), 120)
    try:
        problem = _not_a_result_file(path)
        data = None if problem else json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"result file {where} cannot be read ({exc.strerror or exc.__class__.__name__}): give a "
                          f"readable JSON file from benchmarks/results/.") from None
    except ValueError as exc:
        raise ConfigError(f"result file {where} is not JSON ({shown(str(exc), 80)}): restore it from git.") from None
    if problem:
        raise ConfigError(f"result file {where} {problem}: give a JSON file from benchmarks/results/.")
    prov = data.get("provenance") if isinstance(data, dict) else None
    outcomes = data.get("outcomes") if isinstance(data, dict) else None
    if not isinstance(prov, dict) or not prov.get("argv"):
        raise ConfigError(f"{path} records no provenance (command, arguments, commit): it was written before result "
                          f"files recorded them; regenerate it with its script, then reproduce it.")
    argv = prov["argv"]
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ConfigError(f"{path}: its provenance.argv {shown(argv, 60)} is not a list of strings (the file was "
                          f"edited or damaged): restore it from git.")
    if not isinstance(outcomes, dict) or not outcomes or not all(isinstance(v, dict) for v in outcomes.values()):
        raise ConfigError(f"{path} records no per-question outcomes to compare (its script does not write "
                          f"'outcomes'): nothing can be checked question by question.")
    return data, prov, outcomes


def rerun_argv(argv: list[str], out: Path, ids: Path) -> list[str]:
    """The recorded command with its --out and --only-ids replaced by the re-run's own."""
    args, skip = [], False
    for a in argv[1:]:
        if skip:
            skip = False
            continue
        if a in _REPLACED:
            skip = True
            continue
        if any(a.startswith(f"{flag}=") for flag in _REPLACED):
            continue
        args.append(a)
    return [*args, "--out", str(out), "--only-ids", str(ids)]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def compare(recorded: dict, now: dict, ids: list[str]) -> list[Comparison]:
    out = []
    for label, old in recorded.items():
        new = now.get(label) or {}
        mine = [i for i in ids if i in old]
        c = Comparison(label, len(mine), 0)
        for qid in mine:
            if qid in new and _same(old[qid], new[qid]):
                c.same += 1
            else:
                c.differ.append((qid, old[qid], new.get(qid, "(not re-run)")))
        out.append(c)
    return out


def reproduce(path: Path | str, limit: int = 10, workdir: Path | str | None = None,
              timeout: float | None = None) -> tuple[list[Comparison], Path | None]:
    """Re-run the first `limit` questions of a result file; (one comparison per outcome label, the log).

    Without `workdir` the re-run happens in a temporary folder that is removed afterwards; the log is
    kept (and returned) only when an outcome differs, else None. A failed re-run keeps its folder.
    """
    if limit < 1:
        raise ConfigError(f"--limit is the number of questions to re-run and must be at least 1 (got {limit}).")
    path = Path(path)
    try:
        path = path if path.is_absolute() or path.exists() else settings.repo_root() / path
    except OSError:  # a name too long for the file system: _load says so in one line
        pass
    _, prov, outcomes = _load(path)
    argv = list(prov["argv"])
    script = benchmark_script(argv[0], path, prov)
    first = next(iter(outcomes.values()))
    ids = list(first)[:limit]
    if workdir is not None:
        return _rerun(path, script, argv, outcomes, ids, Path(workdir), timeout)
    work = Path(tempfile.mkdtemp(prefix="kgrag-reproduce-"))  # ours: removed when all is the same, else kept
    comparisons, log = _rerun(path, script, argv, outcomes, ids, work, timeout)  # a failure keeps it (log named)
    if all(c.same == c.n for c in comparisons):
        shutil.rmtree(work, ignore_errors=True)
        return comparisons, None
    return comparisons, log


def benchmark_script(name: str, path: Path, prov: dict) -> Path:
    """The recorded command's script, only if it is a `.py` file under this checkout's `benchmarks/`.

    The path is resolved (links followed) before the check, so neither an absolute path, nor `..`, nor a
    link inside `benchmarks/` that points elsewhere lets a result file run a script from outside.
    """
    bench = (settings.repo_root() / "benchmarks").resolve()
    try:
        script = (settings.repo_root() / name).resolve()
        inside = script.is_relative_to(bench) and script.is_file() and script.suffix == ".py"
    except (OSError, ValueError):
        inside = False
    if not inside:
        raise ConfigError(f"{path}: its command's script {shown(name, 80)} is not a Python file under this "
                          f"checkout's benchmarks/ (only those are run): check out the commit it records "
                          f"({str(prov.get('commit') or 'unknown')[:12]}) and reproduce it there.")
    return script


def _rerun(path: Path, script: Path, argv: list[str], outcomes: dict, ids: list[str], work: Path,
           timeout: float | None) -> tuple[list[Comparison], Path]:
    work.mkdir(parents=True, exist_ok=True)
    (work / "ids.txt").write_text("\n".join(ids) + "\n", encoding="utf-8")
    out_path, log_path = work / "rerun.json", work / "rerun.log"
    env = dict(os.environ)
    for var, sub in (("KGRAG_RESULTS_DIR", "results"), ("KGRAG_RUNS_DIR", "runs"), ("KGRAG_FIGURES_DIR", "figures")):
        env[var] = str(work / sub)  # a fresh folder: nothing resumes from the records the file was made from
    env["PYTHONPATH"] = os.pathsep.join([str(settings.repo_root()), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, str(script), *rerun_argv(argv, out_path, work / "ids.txt")]
    with open(log_path, "w", encoding="utf-8") as log:
        log.write(" ".join(command) + "\n\n")
        log.flush()
        try:
            done = subprocess.run(command, cwd=settings.repo_root(), env=env, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ConfigError(f"the re-run of {path.name} did not finish within {timeout} s: see {log_path}, or "
                              f"reproduce fewer questions (--limit).") from None
    if done.returncode != 0 or not out_path.is_file():
        raise ConfigError(f"the re-run of {path.name} failed (exit {done.returncode}): see {log_path} (the recorded "
                          f"command may need data or a model this machine lacks).")
    now = json.loads(out_path.read_text(encoding="utf-8")).get("outcomes") or {}
    return compare(outcomes, now, ids), log_path
