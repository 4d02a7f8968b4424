"""The `kgrag` command as a child process, for tests that need real processes (signals, locks, exit codes): this
checkout's package first on the child's path, the repository root as its folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 900  # a bound on one subprocess, not a measurement


def child_env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def kgrag(*args: str, cwd: Path | None = ROOT, **env) -> subprocess.CompletedProcess:
    """`kgrag ARGS` with `env` added to this process's environment; cwd None: the test's own folder."""
    return subprocess.run([sys.executable, "-m", "kgrag_utils.cli", *args], env=child_env(**env), capture_output=True,
                          text=True, timeout=WAIT_S, cwd=cwd)


def start_kgrag(*args: str, **env) -> subprocess.Popen:
    """A kgrag process in its own session (so a test can signal it and its kernels)."""
    return subprocess.Popen([sys.executable, "-m", "kgrag_utils.cli", *args], env=child_env(**env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True)


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip()]
