"""What produced a result: the command, the commit, the arguments and the environment.

Run records (`records.RunRecorder`) store the environment beside their parameters. Every benchmark result
file written through `records.write_result` carries a `provenance` block (`result_provenance`): the
command as typed (script path from the repository root and its arguments), the parsed arguments, the git
commit (and whether the tree had uncommitted changes), the time and the environment. `kgrag reproduce
FILE` re-runs a result from that block and compares its per-question `outcomes` (see `reproduce.py`).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

_PACKAGES = (
    "numpy", "scipy", "pandas", "networkx", "torch", "transformers", "accelerate", "bitsandbytes",
    "sentence-transformers", "faiss-cpu", "faiss-gpu-cu12", "llama_cpp_python", "pymilvus", "papermill",
    "kgrag-utils",
)


def environment_info() -> dict[str, Any]:
    """Python, platform, versions of the packages that change results, and the compute device."""
    from importlib import metadata

    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    device = "cpu"
    gpu = None
    if "torch" in sys.modules or versions.get("torch"):
        try:
            import torch

            if torch.cuda.is_available():
                device = "cuda"
                gpu = torch.cuda.get_device_name(0)
        except Exception:  # pragma: no cover - broken torch installs
            pass
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "device": device,
        "gpu": gpu,
        "packages": versions,
    }




def git_commit(root: Path | str | None = None) -> dict[str, Any]:
    """{"commit": sha or None, "dirty": uncommitted changes to tracked files outside benchmarks/results}."""
    from . import settings

    root = Path(root) if root else settings.repo_root()
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=20, check=True).stdout.strip()
        # the code's state: result files (being rewritten by this very run) do not make the tree dirty
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", ".",
                                 ":(exclude)benchmarks/results"], capture_output=True, text=True, timeout=60,
                                check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": sha or None, "dirty": bool(status.strip())}


def command_argv(argv: Sequence[str] | None = None) -> list[str]:
    """The command line, its script as a path from the repository root where it lies inside it."""
    from . import settings

    argv = list(sys.argv if argv is None else argv)
    if argv:
        script = Path(argv[0])
        try:
            argv[0] = script.resolve().relative_to(settings.repo_root().resolve()).as_posix()
        except (ValueError, OSError):
            argv[0] = str(script)
    return argv


def result_provenance(arguments: Mapping[str, Any] | None = None, argv: Sequence[str] | None = None) -> dict:
    """The provenance block of a result file: command, parsed arguments, commit, time and environment."""
    import shlex

    line = command_argv(argv)
    return {
        "command": " ".join(shlex.quote(a) for a in line), "argv": line,
        "arguments": _plain(dict(arguments)) if arguments is not None else None,
        **git_commit(), "when": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "environment": environment_info(),
    }


def per_question(records: Sequence[Mapping[str, Any]], keys: Sequence[str], id_key: str = "id") -> dict[str, Any]:
    """{question id: its outcome} in record order: the value of `keys[0]` alone, or {key: value} for several.

    A result file stores these beside its summary (`"outcomes": {label: per_question(...)}`), so that a re-run
    can be compared question by question (`kgrag reproduce`).
    """
    out: dict[str, Any] = {}
    for r in records:
        qid = r.get(id_key)
        if qid is None:
            continue
        values = {k: r.get(k) for k in keys}
        out[str(qid)] = _plain(values[keys[0]] if len(keys) == 1 else values)
    return out


def _plain(value: Any) -> Any:
    """A JSON-plain copy (paths, tuples, numpy scalars and other objects as JSON can hold them; NaN as null)."""
    import json
    import math

    def default(obj):
        for attr in ("tolist", "item"):
            if callable(getattr(obj, attr, None)):
                return getattr(obj, attr)()
        return str(obj) if isinstance(obj, Path) else repr(obj)

    def nan_free(v):
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            return None
        if isinstance(v, dict):
            return {k: nan_free(x) for k, x in v.items()}
        if isinstance(v, list):
            return [nan_free(x) for x in v]
        return v

    return nan_free(json.loads(json.dumps(value, default=default)))
