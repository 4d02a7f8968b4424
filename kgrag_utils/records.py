"""Run records: parameters + environment + per-example JSONL + summary, written so nothing is lost.

A run lives in `results/<run_name>/`:
- `run.json`       parameters, environment, status ("running" / "ok" / "failed"), summary, timings, tokens;
                   rewritten atomically (temp file + os.replace) at the start and at the end of a run; a
                   finished record's `n_examples` is counted from the examples on disk;
- `examples.jsonl` one line per example, appended and flushed as each example finishes, so a run killed
                   half-way keeps every finished example and `RunRecorder(..., resume=True)` continues from there;
                   every append starts on a fresh line, and a line torn by a crash is skipped and counted;
- `.lock`          one writer per run folder: an OS file lock (`fcntl.flock`) held by the writing process
                   (the runner, or the recorder itself outside the runner) and released by the OS when that
                   process ends, however it ends; it names its holder, so a second writer is refused in
                   one line that names the first.

Resume is keyed by `run_key(params)`: the hash of the parameters that change results (all of them but
`EXECUTION_PARAMS`), and by the example ids. The batch runner computes that key from the notebook's full
parameters and hands it to the notebook's recorder (environment of the kernel), so both use one hash.

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
import re
import sys
import uuid
from pathlib import Path
from typing import Any, Iterable, Mapping

from . import settings
from .fileio import UnsafeFileError, atomic_write_text, open_in_folder, refuse_link, remove_stale_temps
from .provenance import environment_info, git_commit  # noqa: F401 - environment_info re-exported (benchmarks)
from .errors import ConfigError, KgragError, shown

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
    if callable(getattr(obj, "to_dict", None)) and callable(getattr(obj, "model_dump", None)):  # a method config
        return to_jsonable(obj.to_dict())
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


def write_result(path: Path | str, obj: Any, arguments: Any = None) -> Path:
    """Write a benchmark's JSON result atomically; a relative path resolves from the repository root.

    The file gets a `provenance` block (`provenance.result_provenance`: command, parsed `arguments` (an
    argparse Namespace or a mapping), commit, environment) unless `obj` brings its own.
    """
    from .provenance import result_provenance

    out = Path(path)
    out = out if out.is_absolute() else settings.repo_root() / out
    if isinstance(obj, dict) and "provenance" not in obj:
        given = vars(arguments) if hasattr(arguments, "__dict__") and not isinstance(arguments, Mapping) else arguments
        obj = {**obj, "provenance": result_provenance(given)}
    atomic_write_json(out, obj)
    return out


def params_hash(params: Mapping[str, Any]) -> str:
    """A stable short hash of a parameter dict (order-independent)."""
    blob = json.dumps(to_jsonable(dict(params)), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


# Parameters that change how a run executes, never what it records: they are left out of the run key, so a
# run resumed with another batch size (after running out of memory) or thread count keeps its examples.
EXECUTION_PARAMS = frozenset({"run_name", "batch_size", "llm_threads"})


# Parameters added after runs were recorded, at the value that changes nothing: left out of the run key at that
# value, so the runs recorded before them keep their keys (and resume).
NEUTRAL_PARAMS = {"take": 0, "topics": "given", "question_noise": "", "demo_pool_noise": "", "relation_aliases": ""}


def run_key(params: Mapping[str, Any]) -> str:
    """The resume key of a run: the hash of the parameters that change results (runner and recorder alike)."""
    return params_hash({k: v for k, v in params.items()
                        if k not in EXECUTION_PARAMS and not (k in NEUTRAL_PARAMS and v == NEUTRAL_PARAMS[k])})


def default_run_name(method: str, params: Mapping[str, Any]) -> str:
    return f"{method}-{run_key(params)}"


_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=@,-]*")
MAX_NAME = 200


def check_run_name(name: Any, what: str = "run_name") -> str:
    """A run or grid name is a folder name: letters, digits and `_.+=@,-`; no separators, no `..`."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{what} must be a non-empty name such as 'simgrag-2hop', got {shown(name, 60)}.")
    if len(name) > MAX_NAME or not _NAME.fullmatch(name) or ".." in name:
        raise ConfigError(
            f"{what} {shown(name, 60)} is not a plain name: use letters, digits and _.+=@,- only (no '/', '\\', "
            f"'..' or leading '.'), at most {MAX_NAME} characters, e.g. {shown(_suggest_name(name), 60)}."
        )
    return name


def _suggest_name(name: Any) -> str:
    text = re.sub(r"[^A-Za-z0-9_.+=@,-]+", "-", str(name)[: 4 * MAX_NAME]).replace("..", "")
    return text.strip("-.")[:60] or "my-run"


# ----------------------------------------------------------------------------- one writer per run folder
LOCK_FILE = ".lock"
# The batch runner holds a run folder's lock while the notebook's kernel (its child) writes the record; it
# tells the kernel's recorder through these variables, so that the recorder knows the lock is held for it.
ENV_RUN_DIR, ENV_RUN_KEY, ENV_RUN_TOKEN = "KGRAG_RUN_DIR", "KGRAG_RUN_KEY", "KGRAG_RUN_TOKEN"


class RunLockedError(KgragError):
    """Another process is writing this run folder."""


class RunRecordError(KgragError):
    """A run record on disk is damaged."""


def make_run_dir(run_dir: Path) -> None:
    """Create a run folder (and its parents); a run folder that is a link is refused, never followed."""
    refuse_link(run_dir, "folder")
    run_dir.mkdir(parents=True, exist_ok=True)
    refuse_link(run_dir, "folder")


def _lock_info_text(token: str) -> str:
    import socket

    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": _now(), "token": token,
                       "command": " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))[:160]})


def read_lock_info(run_dir: Path | str) -> dict:
    """What the lock file says about its (last) holder; {} when empty or unreadable."""
    try:
        fd = open_in_folder(run_dir, LOCK_FILE, os.O_RDONLY)
        with os.fdopen(fd, "rb") as fh:
            text = fh.read(64 << 10).decode("utf-8")
        info = json.loads(text) if text.strip() else {}
        return info if isinstance(info, dict) else {}
    except (OSError, ValueError, UnsafeFileError):
        return {}


def _holder_alive(info: Mapping[str, Any]) -> bool:
    """Whether the process a lock file names still runs (on this host; another host's counts as alive)."""
    import socket

    pid = info.get("pid")
    if not isinstance(pid, int):
        return False
    if info.get("host") not in (None, socket.gethostname()):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    """An exclusive, non-blocking OS lock on `<run_dir>/.lock`, released by the OS when the process dies."""

    def __init__(self, run_dir: Path | str):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        self.token = uuid.uuid4().hex
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> "RunLock":
        make_run_dir(self.run_dir)
        fd = open_in_folder(self.run_dir, LOCK_FILE, os.O_RDWR | os.O_CREAT)
        try:
            _lock_fd(fd)
        except BlockingIOError:
            os.close(fd)
            raise RunLockedError(_locked_message(self.run_dir)) from None
        except BaseException:
            os.close(fd)
            raise
        data = _lock_info_text(self.token).encode("utf-8")
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        self._fd = fd
        remove_stale_temps(self.run_dir)  # what writers killed mid-write left here
        return self

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)  # a lock file that names nobody: its holder finished
        finally:
            _unlock_fd(fd)
            os.close(fd)

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _lock_fd(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            raise BlockingIOError from None
        return
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _unlock_fd(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    fcntl.flock(fd, fcntl.LOCK_UN)


def _locked_message(run_dir: Path) -> str:
    info = read_lock_info(run_dir)
    who = (f"pid {info.get('pid')} on {info.get('host')} ({info.get('command')}), since {info.get('since')}"
           if info.get("pid") else "another process (it has not written its name yet)")
    return (f"run folder {run_dir} is being written by {who}: wait for it to finish, or give this run "
            f"another run_name.")


# A recorder process holds each run folder's lock once, whichever of its recorders took it (a notebook cell
# re-run in the same kernel builds a new recorder for the same folder).
_HELD: dict[str, RunLock] = {}


def _claim(run_dir: Path) -> RunLock | None:
    """Take the run folder for this process; None when the batch runner holds it for this kernel."""
    key = str(run_dir.resolve())
    if os.environ.get(ENV_RUN_DIR) and os.environ.get(ENV_RUN_TOKEN):
        if str(Path(os.environ[ENV_RUN_DIR]).resolve()) == key:
            if read_lock_info(run_dir).get("token") == os.environ[ENV_RUN_TOKEN]:
                return None  # held for us by the runner that started this kernel
    held = _HELD.get(key)
    if held is not None and held.held:
        return held
    lock = RunLock(run_dir).acquire()
    _HELD[key] = lock
    return lock


def _runner_key(run_dir: Path) -> str | None:
    """The run key the batch runner computed for this folder (from the notebook's full parameters)."""
    if os.environ.get(ENV_RUN_DIR) and os.environ.get(ENV_RUN_KEY):
        if str(Path(os.environ[ENV_RUN_DIR]).resolve()) == str(run_dir.resolve()):
            return os.environ[ENV_RUN_KEY]
    return None


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

    The recorder is the only writer of its folder (a second process is refused with `RunLockedError`);
    it resumes when the folder holds a record with the same run key, and starts over otherwise.
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
        self.run_name = check_run_name(run_name or self.params.get("run_name") or default_run_name(method, self.params))
        self.id_key = id_key
        self.root = Path(root) if root else settings.results_dir()
        self.run_dir = self.root / self.run_name
        make_run_dir(self.run_dir)
        self._lock = _claim(self.run_dir)
        # held for this kernel by the runner, its parent: if that parent dies, the OS frees the lock, so this
        # kernel must stop writing (it checks before every append)
        self._runner_parent = os.getppid() if self._lock is None else None
        self.params_hash = _runner_key(self.run_dir) or run_key(self.params)
        self.examples_path = self.run_dir / EXAMPLES_FILE
        self.run_path = self.run_dir / RUN_FILE
        self.started = _now()
        self.examples: list[dict] = []
        self._index: dict[Any, int] = {}
        self.torn_lines = 0
        self._environment = environment_info()
        self._code = git_commit()  # the commit (and whether the code had uncommitted changes) that ran
        previous = read_run(self.run_dir) if self.run_path.exists() else None
        same = previous is not None and previous.get("params_hash") == self.params_hash
        if resume and same and self.examples_path.exists():
            rows, self.torn_lines = read_examples(self.examples_path)
            for ex in rows:
                self._remember(ex)
            _end_with_newline(self.examples_path)
        else:
            atomic_write_text(self.examples_path, "")
        self.done_ids = set(self._index)
        self._write_run(status="running", summary=None)

    # -- writing
    def _remember(self, ex: dict) -> None:
        key = ex.get(self.id_key)
        if key is None:
            self.examples.append(ex)
        elif key in self._index:  # the same example recorded again: the last one counts
            self.examples[self._index[key]] = ex
        else:
            self._index[key] = len(self.examples)
            self.examples.append(ex)

    def add(self, example: Mapping[str, Any]) -> None:
        """Append one example as one whole line (flushed at once)."""
        self._check_owner()
        ex = to_jsonable(dict(example))
        data = (json.dumps(ex, ensure_ascii=False) + "\n").encode("utf-8")
        fd = open_in_folder(self.run_dir, EXAMPLES_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        self._remember(ex)
        if ex.get(self.id_key) is not None:
            self.done_ids.add(ex[self.id_key])

    def _check_owner(self) -> None:
        if self._runner_parent is not None and os.getppid() != self._runner_parent:
            raise RunLockedError(
                f"the batch runner (pid {self._runner_parent}) that holds {self.run_dir} for this kernel has ended, "
                f"so this kernel no longer owns the run: nothing more is written; rerun it with `kgrag run`."
            )

    def finish(
        self,
        summary: Mapping[str, Any],
        timings: Mapping[str, Any] | None = None,
        tokens: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Path:
        """Mark the run finished and store its summary; returns the run folder."""
        self._write_run("ok", summary, timings=timings, tokens=tokens, extra=extra, final=True)
        self.close()
        return self.run_dir

    def fail(self, error: BaseException | str, extra: Mapping[str, Any] | None = None) -> None:
        message = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
        self._write_run("failed", None, error=message, extra=extra, final=True)
        self.close()

    def close(self) -> None:
        """Give the run folder back (finish and fail do; the OS does when the process ends)."""
        lock, self._lock = self._lock, None
        if lock is not None:
            _HELD.pop(str(self.run_dir.resolve()), None)
            lock.release()

    def _write_run(self, status, summary, timings=None, tokens=None, error=None, extra=None, final=False) -> None:
        self._check_owner()
        n, torn = len(self.examples), self.torn_lines
        if final:  # the count a finished record states is the count on disk
            rows, torn = read_examples(self.examples_path)
            n = len(rows)
        record = {
            "run_name": self.run_name,
            "method": self.method,
            "status": status,
            "params": self.params,
            "params_hash": self.params_hash,
            "started": self.started,
            "updated": _now(),
            "n_examples": n,
            "torn_lines": torn,
            "summary": summary,
            "timings": timings,
            "tokens": tokens,
            "error": error,
            "environment": self._environment,
            "code": self._code,
        }
        if extra:
            clash = sorted(set(extra) & set(record))
            if clash:
                raise ConfigError(f"extra keys {clash} would overwrite the run record's own fields; rename them "
                                  f"(e.g. 'method_details').")
            record.update(extra)
        atomic_write_json(self.run_path, record)


# ----------------------------------------------------------------------------- reading
def _end_with_newline(path: Path) -> None:
    """Make the next append start on a fresh line (a torn last line stays a line of its own, skipped)."""
    with os.fdopen(open_in_folder(path.parent, path.name, os.O_RDWR), "rb+") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() == 0:
            return
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) != b"\n":
            fh.write(b"\n")
            fh.flush()
            os.fsync(fh.fileno())


#: the types an example's id may have (a list or a mapping cannot key an index: such a line counts as torn)
ID_TYPES = (str, int, float, bool)


def parse_example_line(line: str | bytes, id_key: str = "id") -> dict | None:
    """One examples.jsonl line as its record; None for a line torn by a crash (or holding no record, or an
    id that is not a str, number or bool). Blank lines are the caller's to skip. Lazy readers
    (`kgrag_utils.explore`) parse with this too."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", errors="replace")
    try:
        ex = json.loads(line)
    except ValueError:
        return None
    if not isinstance(ex, dict) or not isinstance(ex.get(id_key, ""), ID_TYPES):
        return None
    return ex


def read_examples(path: Path | str, id_key: str = "id") -> tuple[list[dict], int]:
    """(examples, torn lines): every JSON line once per id (the last wins), lines that do not parse counted."""
    rows: list[dict] = []
    index: dict[Any, int] = {}
    torn = 0
    path = Path(path)
    with os.fdopen(open_in_folder(path.parent, path.name, os.O_RDONLY), encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                continue
            ex = parse_example_line(line, id_key)
            if ex is None:
                torn += 1
                continue
            key = ex.get(id_key)
            if key is not None and key in index:
                rows[index[key]] = ex
                continue
            if key is not None:
                index[key] = len(rows)
            rows.append(ex)
    return rows, torn


def _read_jsonl(path: Path) -> Iterable[dict]:
    """Read JSONL, skipping lines torn by a killed process (see `read_examples` for the count)."""
    return read_examples(path)[0]


def read_run(run_dir: Path | str) -> dict:
    """A run's run.json; a damaged one is a one-line `RunRecordError` naming the file and the fix."""
    path = Path(run_dir) / RUN_FILE
    if not path.exists():
        raise ConfigError(f"no run record at {path}: run the notebook first, or check the results folder.")
    try:
        with os.fdopen(open_in_folder(path.parent, path.name, os.O_RDONLY), "rb") as fh:
            rec = json.loads(fh.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunRecordError(
            f"run record {path} is damaged ({type(exc).__name__} at {_where(exc)}): move the folder "
            f"{path.parent} aside to keep it, or rerun with --force to start the run over."
        ) from None
    if not isinstance(rec, dict):
        raise RunRecordError(f"run record {path} holds a {type(rec).__name__}, not a record: move the folder "
                             f"{path.parent} aside, or rerun with --force to start the run over.")
    if rec.get("status") == "running" and not _holder_alive(read_lock_info(path.parent)):
        rec["status"] = "interrupted"  # its writer ended without finishing (killed, or the machine stopped)
        try:  # its count is the examples on disk, not the 0 it wrote when it started
            rows, rec["torn_lines"] = read_examples(path.parent / EXAMPLES_FILE)
            rec["n_examples"] = len(rows)
        except (OSError, UnsafeFileError):
            pass
    return rec


def _where(exc: BaseException) -> str:
    pos = getattr(exc, "pos", None)
    return f"character {pos}" if pos is not None else "decoding"


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
                rows.append(_run_row(read_run(run_file.parent)))
            except Exception as exc:  # one odd record is that run's row, never the end of every reader
                error = str(exc) if isinstance(exc, (KgragError, OSError)) else f"{type(exc).__name__}: {exc}"
                rows.append({"run_name": run_file.parent.name, "status": "unreadable", "error": error})
    return pd.DataFrame(rows)


def _run_row(rec: dict) -> dict:
    row = {k: rec.get(k) for k in ("run_name", "method", "status", "n_examples", "torn_lines", "started",
                                   "updated", "error")}
    for part in ("params", "summary", "tokens", "timings"):
        for k, v in (rec.get(part) or {}).items():
            row[f"{part}.{k}"] = v
    row["device"] = (rec.get("environment") or {}).get("device")
    return row
