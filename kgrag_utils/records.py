"""Run records: parameters + environment + per-example JSONL + summary, written so nothing is lost.

A run lives in `results/<run_name>/`:
- `run.json`       parameters, environment, status ("running" / "ok" / "failed"), summary, timings, tokens;
                   rewritten atomically (temp file + os.replace) at the start and at the end of a run;
- `examples.jsonl` one line per example, appended and flushed as each example finishes, so a run killed
                   half-way keeps every finished example and `RunRecorder(..., resume=True)` continues from there.

`load_runs()` turns a results folder into a pandas DataFrame (one row per run); `load_examples()` reads one
run's examples.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping

from . import settings
from .fileio import atomic_write_text
from .errors import ConfigError

RUN_FILE = "run.json"
EXAMPLES_FILE = "examples.jsonl"


# ----------------------------------------------------------------------------- JSON helpers
def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, dataclasses, paths, sets and tuples into plain JSON values."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        return [to_jsonable(v) for v in items]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(dataclasses.asdict(obj))
    if isinstance(obj, Path):
        return str(obj)
    # numpy without importing it eagerly
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):
        return to_jsonable(tolist())
    item = getattr(obj, "item", None)
    if callable(item):
        return to_jsonable(item())
    return repr(obj)


def dumps(obj: Any) -> str:
    return json.dumps(to_jsonable(obj), ensure_ascii=False, sort_keys=False)


def atomic_write_json(path: Path | str, obj: Any) -> None:
    atomic_write_text(path, json.dumps(to_jsonable(obj), ensure_ascii=False, indent=2) + "\n")


def write_result(path: Path | str, obj: Any) -> Path:
    """Write a benchmark's JSON result atomically; a relative path resolves from the repository root."""
    out = Path(path)
    out = out if out.is_absolute() else settings.repo_root() / out
    atomic_write_json(out, obj)
    return out


def params_hash(params: Mapping[str, Any]) -> str:
    """A stable short hash of a parameter dict (order-independent)."""
    blob = json.dumps(to_jsonable(dict(params)), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def default_run_name(method: str, params: Mapping[str, Any]) -> str:
    return f"{method}-{params_hash({k: v for k, v in params.items() if k != 'run_name'})}"


# ----------------------------------------------------------------------------- environment
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


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# ----------------------------------------------------------------------------- recorder
class RunRecorder:
    """Collects one run's records on disk as they are produced.

    >>> rec = RunRecorder("simgrag", {"dataset": "sample-movies-1hop", "limit": 5})
    >>> for ex in data:
    ...     if ex.qid in rec.done_ids: continue         # resume after a crash
    ...     rec.add({"id": ex.qid, ...})
    >>> rec.finish(summary={"hits@1": 0.9}, tokens=llm.stats)
    """

    def __init__(
        self,
        method: str,
        params: Mapping[str, Any],
        run_name: str | None = None,
        resume: bool = True,
        root: Path | str | None = None,
        id_key: str = "id",
    ):
        if not method or not isinstance(method, str):
            raise ConfigError("RunRecorder needs a method name such as 'simgrag'.")
        self.method = method
        self.params = dict(params)
        self.params_hash = params_hash({k: v for k, v in self.params.items() if k != "run_name"})
        self.run_name = run_name or self.params.get("run_name") or default_run_name(method, self.params)
        self.id_key = id_key
        self.root = Path(root) if root else settings.results_dir()
        self.run_dir = self.root / self.run_name
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.examples_path = self.run_dir / EXAMPLES_FILE
        self.run_path = self.run_dir / RUN_FILE
        self.started = _now()
        self.examples: list[dict] = []
        previous = read_run(self.run_dir) if self.run_path.exists() else None
        same = previous is not None and previous.get("params_hash") == self.params_hash
        if resume and same and self.examples_path.exists():
            self.examples = list(_read_jsonl(self.examples_path))
        else:
            self.examples_path.write_text("", encoding="utf-8")
        self.done_ids = {ex.get(id_key) for ex in self.examples if ex.get(id_key) is not None}
        self._write_run(status="running", summary=None)

    # -- writing
    def add(self, example: Mapping[str, Any]) -> None:
        """Append one example (flushed at once)."""
        ex = to_jsonable(dict(example))
        line = json.dumps(ex, ensure_ascii=False)
        with open(self.examples_path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
        self.examples.append(ex)
        if ex.get(self.id_key) is not None:
            self.done_ids.add(ex[self.id_key])

    def finish(
        self,
        summary: Mapping[str, Any],
        timings: Mapping[str, Any] | None = None,
        tokens: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Path:
        """Mark the run finished and store its summary; returns the run folder."""
        self._write_run("ok", summary, timings=timings, tokens=tokens, extra=extra)
        return self.run_dir

    def fail(self, error: BaseException | str, extra: Mapping[str, Any] | None = None) -> None:
        self._write_run("failed", None, error=f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error), extra=extra)

    def _write_run(self, status, summary, timings=None, tokens=None, error=None, extra=None) -> None:
        record = {
            "run_name": self.run_name,
            "method": self.method,
            "status": status,
            "params": self.params,
            "params_hash": self.params_hash,
            "started": self.started,
            "updated": _now(),
            "n_examples": len(self.examples),
            "summary": summary,
            "timings": timings,
            "tokens": tokens,
            "error": error,
            "environment": environment_info(),
        }
        if extra:
            clash = sorted(set(extra) & set(record))
            if clash:
                raise ConfigError(f"extra keys {clash} would overwrite the run record's own fields; rename them "
                                  f"(e.g. 'method_details').")
            record.update(extra)
        atomic_write_json(self.run_path, record)


# ----------------------------------------------------------------------------- reading
def _read_jsonl(path: Path) -> Iterable[dict]:
    """Read JSONL, ignoring a torn last line left by a killed process."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def read_run(run_dir: Path | str) -> dict:
    path = Path(run_dir) / RUN_FILE
    if not path.exists():
        raise ConfigError(f"no run record at {path}: run the notebook first, or check the results folder.")
    return json.loads(path.read_text(encoding="utf-8"))


def load_examples(run: str | Path, root: Path | str | None = None):
    """One run's per-example records as a DataFrame."""
    import pandas as pd

    run_dir = Path(run)
    if not run_dir.is_absolute() and not run_dir.exists():
        run_dir = (Path(root) if root else settings.results_dir(create=False)) / run
    path = run_dir / EXAMPLES_FILE
    if not path.exists():
        raise ConfigError(f"no examples at {path}: is '{run}' a run name under the results folder?")
    return pd.DataFrame(list(_read_jsonl(path)))


def load_runs(root: Path | str | None = None):
    """All runs under the results folder as a DataFrame: run_name, method, status, params.*, summary.*."""
    import pandas as pd

    root = Path(root) if root else settings.results_dir(create=False)
    rows = []
    if root.exists():
        for run_file in sorted(root.glob(f"*/{RUN_FILE}")):
            try:
                rec = json.loads(run_file.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, OSError) as exc:
                rows.append({"run_name": run_file.parent.name, "status": "unreadable", "error": str(exc)})
                continue
            row = {k: rec.get(k) for k in ("run_name", "method", "status", "n_examples", "started", "updated", "error")}
            for k, v in (rec.get("params") or {}).items():
                row[f"params.{k}"] = v
            for k, v in (rec.get("summary") or {}).items():
                row[f"summary.{k}"] = v
            for k, v in (rec.get("tokens") or {}).items():
                row[f"tokens.{k}"] = v
            for k, v in (rec.get("timings") or {}).items():
                row[f"timings.{k}"] = v
            row["device"] = (rec.get("environment") or {}).get("device")
            rows.append(row)
    return pd.DataFrame(rows)
