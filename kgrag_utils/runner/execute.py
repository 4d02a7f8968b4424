"""One run: execute a notebook in a fresh kernel under its run folder's lock, skip it when an identical
run finished, and record a failure with its error (the notebook itself writes the run record)."""

from __future__ import annotations

import ast
import json
import os
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .. import schema, settings
from ..errors import ConfigError, StorageError, shown, storage_errno, storage_message
from ..fileio import open_in_folder, refuse_link
from ..notebook_params import resolve_notebook
from ..provenance import command_argv
from ..records import (ENV_RUN_DIR, ENV_RUN_KEY, ENV_RUN_TOKEN, EXAMPLES_FILE, RUN_FILE, RunLock, RunRecordError,
                       atomic_write_json, check_run_name, read_examples, read_run, run_key, to_jsonable)
from .checks import check_data_present, check_run_parameters
from .kernel import execute, require_papermill, stop_kernels

__all__ = ["DEFAULT_TIMEOUT", "REPORT_METHOD", "RunOutcome", "run_name_for", "run_notebook"]

DEFAULT_TIMEOUT = schema.DEFAULT_TIMEOUT  # seconds per cell
INTERRUPTED_ERROR = "KeyboardInterrupt: interrupted by the user (Ctrl-C or SIGTERM); a rerun resumes"
#: set when the runner is interrupted (Ctrl-C, SIGTERM): a run whose kernel fails from now on was interrupted
STOPPING = threading.Event()


@dataclass
class RunOutcome:
    notebook: str
    run_name: str
    status: str  # ok | failed | skipped
    seconds: float
    parameters: dict
    output: str | None = None
    log: str | None = None
    error: str | None = None
    summary: dict = field(default_factory=dict)


REPORT_METHOD = "report"  # the RunRecorder method name of notebooks that summarise other runs (never skipped)


def run_name_for(notebook: Path | str, params: Mapping[str, Any]) -> str:
    """The run's name: its `run_name` parameter when given, else the notebook's stem and the run key."""
    given = params.get("run_name")
    return given if given else f"{Path(notebook).stem}-{run_key(params)}"


def _finished_ok(run_dir: Path, key: str) -> dict | None:
    """The run's record when it finished ok with this run key (read under the run folder's lock)."""
    if not (run_dir / RUN_FILE).exists():
        return None
    rec = read_run(run_dir)  # a damaged record stops here with a one-line RunRecordError
    # records written before the recorder took the runner's key carry the runner's hash in `runner`
    runner_hash = (rec.get("runner") or {}).get("params_hash")
    if rec.get("status") == "ok" and key in (runner_hash, rec.get("params_hash")):
        return rec
    return None


def _stamp_runner(run_dir: Path, notebook: str, key: str, seconds: float) -> None:
    """Mark a finished record as produced by this notebook with these exact parameters (for skip/resume)."""
    rec = read_run(run_dir)
    rec["runner"] = {"notebook": notebook, "params_hash": key, "seconds": round(seconds, 2),
                     "command": " ".join(command_argv())}  # with params, environment and code: what ran
    atomic_write_json(run_dir / RUN_FILE, rec)


def _set_aside(run_dir: Path, why: str = "damaged") -> str:
    """Move a record out of the way (kept beside it as `<file>.<why>-<time>`, never deleted) so the run starts
    over; the suffix it got."""
    stamp = f"{why}-{time.strftime('%Y%m%d-%H%M%S')}"
    for name in (RUN_FILE, EXAMPLES_FILE):
        if (run_dir / name).exists():
            os.replace(run_dir / name, run_dir / f"{name}.{stamp}")
    return stamp


class RunReuseError(ConfigError):
    """A run name that holds a finished run of other parameters (refused unless --force)."""


def _differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    keys = sorted(k for k in set(old) & set(new) if k != "run_name" and to_jsonable(old[k]) != to_jsonable(new[k]))
    return [f"{k}: {shown(old[k], 30)} -> {shown(new[k], 30)}" for k in keys]


def _guard_other_run(run_dir: Path, name: str, params: Mapping[str, Any], key: str, force: bool) -> None:
    """A record in the folder from other parameters: a finished one is refused (`--force` keeps it aside and
    starts over); an unfinished one, or one of the same parameters recorded outside the runner, is kept aside."""
    if not (run_dir / RUN_FILE).exists():
        return
    old = read_run(run_dir)
    if key in (old.get("params_hash"), (old.get("runner") or {}).get("params_hash")):
        return  # this run itself: it resumes
    diff = _differences(old.get("params") or {}, params)
    if old.get("status") == "ok" and diff and not force:
        raise RunReuseError(
            f"run {name!r} ({run_dir}) already holds a finished run with other parameters ({'; '.join(diff[:3])}"
            f"{'; ...' if len(diff) > 3 else ''}): give this run another --run-name, or rerun with --force, which "
            f"keeps the old record beside it as run.json.replaced-<time>.")
    _set_aside(run_dir, "replaced")


def run_notebook(
    notebook: Path | str,
    parameters: Mapping[str, Any] | None = None,
    run_name: str | None = None,
    grid: str = "adhoc",
    timeout: int = DEFAULT_TIMEOUT,
    force: bool = False,
    always: bool = False,
    env: Mapping[str, str] | None = None,
) -> RunOutcome:
    """Execute one notebook with papermill in a fresh kernel; skip it when an identical run finished.

    Everything is checked before a kernel starts (parameters, names, the record on disk); the run folder
    is locked for this process until the record is complete (`RunLockedError` when another process has it).
    `env` adds environment variables to the kernel (e.g. CUDA_VISIBLE_DEVICES).
    """
    require_papermill()
    settings.check_folders()
    path = resolve_notebook(notebook)
    params = check_run_parameters(path, dict(parameters or {}))
    check_data_present(params)
    if "run_name" not in params:
        raise ConfigError(f"{path.name} has no 'run_name' parameter; every method notebook must accept one.")
    given = run_name or (parameters or {}).get("run_name") or ""
    name = check_run_name(given) if given else run_name_for(path, {**params, "run_name": ""})
    check_run_name(grid, "grid name")
    params["run_name"] = name
    key = run_key(params)
    run_dir = settings.results_dir() / name
    try:
        return _run_in_folder(path, name, params, key, run_dir, grid, timeout, force, always, env)
    except OSError as exc:  # a full, read-only or forbidden folder: one line naming it, not a traceback
        if not storage_errno(exc):
            raise
        runs = str(exc.filename or "").startswith(str(settings.runs_dir()))
        raise StorageError(storage_message(exc, run_dir, "KGRAG_RUNS_DIR" if runs else "KGRAG_RESULTS_DIR")) from None


def _skip_outcome(path: Path, name: str, params: dict, rec: dict | None, force: bool, always: bool,
                  out_nb: Path, log_path: Path) -> RunOutcome | None:
    """The outcome of a run that finished with these parameters (nothing to do), else None."""
    # a report reads other runs' records, so its own finished record never makes it current
    if not force and not always and rec is not None and rec.get("method") != REPORT_METHOD:
        return RunOutcome(path.name, name, "skipped", 0.0, params, str(out_nb), str(log_path), summary=rec.get("summary") or {})
    return None


def _run_in_folder(path: Path, name: str, params: dict, key: str, run_dir: Path, grid: str, timeout: int,
                   force: bool, always: bool, env: Mapping[str, str] | None) -> RunOutcome:
    """The run under its folder's lock: skipped when finished, else executed and its record completed."""
    out_dir = settings.runs_dir() / grid
    out_nb, log_path = out_dir / f"{name}.ipynb", out_dir / f"{name}.log"
    try:
        lock = RunLock(run_dir).acquire()
    except OSError as exc:  # a folder we cannot write may still say that the run is done
        skipped = _skip_outcome(path, name, params, _finished_ok(run_dir, key), force, always, out_nb, log_path) \
            if storage_errno(exc) else None
        if skipped is None:
            raise
        return skipped
    try:
        try:
            rec = _finished_ok(run_dir, key)
        except RunRecordError:
            if not force:
                raise
            _set_aside(run_dir)
            rec = None
        skipped = _skip_outcome(path, name, params, rec, force, always, out_nb, log_path)
        if skipped is not None:
            return skipped
        _guard_other_run(run_dir, name, params, key, force)
        out_dir.mkdir(parents=True, exist_ok=True)
        kernel_env = {**(env or {}), ENV_RUN_DIR: str(run_dir.resolve()), ENV_RUN_KEY: key, ENV_RUN_TOKEN: lock.token}
        t0 = time.perf_counter()
        error = _execute_logged(path, out_nb, log_path, params, timeout, kernel_env,
                                on_interrupt=lambda: _record_failure(run_dir, path.name, name, params, key,
                                                                     INTERRUPTED_ERROR,
                                                                     str(log_path)))
        seconds = time.perf_counter() - t0
        summary: dict = {}
        if error is None:
            summary, error = _finished_record(run_dir, path.name, key, seconds)
        if error is not None:
            _record_failure(run_dir, path.name, name, params, key, error, str(log_path))
    finally:
        lock.release()
    return RunOutcome(path.name, name, "failed" if error else "ok", seconds, params, str(out_nb), str(log_path), error, summary)


def _execute_logged(path: Path, out_nb: Path, log_path: Path, params: Mapping[str, Any], timeout: int,
                    kernel_env: Mapping[str, str], on_interrupt) -> str | None:
    """Run the notebook with its log at `log_path`: None when it finished, else its short error
    (`on_interrupt` records a Ctrl-C before it propagates)."""
    try:
        return _execute_with_log(path, out_nb, log_path, params, timeout, kernel_env, on_interrupt)
    except OSError as exc:  # the log's writes fail without a file name: this is the runs folder's, named here
        if not storage_errno(exc) or exc.filename:
            raise
        raise StorageError(storage_message(exc, log_path, "KGRAG_RUNS_DIR")) from None


def _execute_with_log(path: Path, out_nb: Path, log_path: Path, params: Mapping[str, Any], timeout: int,
                      kernel_env: Mapping[str, str], on_interrupt) -> str | None:
    refuse_link(out_nb, "notebook")  # papermill writes it: a link there (a shared runs folder) is refused
    log_fd = open_in_folder(log_path.parent, log_path.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(log_fd, "w", encoding="utf-8") as log:
        log.write(f"notebook: {path}\nparameters: {json.dumps(to_jsonable(params))}\n\n")
        log.flush()
        try:
            execute(path, out_nb, params, timeout, kernel_env, log)
        except Exception as exc:  # papermill raises PapermillExecutionError with the cell's traceback
            if STOPPING.is_set() or getattr(exc, "ename", None) == "KeyboardInterrupt":  # Ctrl-C reached the kernel
                on_interrupt()
                raise KeyboardInterrupt from None
            log.write("\n" + "".join(traceback.format_exception(exc)))
            return _short_error(exc, path, timeout)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (`kgrag_utils.cli`): the kernel goes too, the record says so
            stop_kernels()
            on_interrupt()
            raise
    return None


def _finished_record(run_dir: Path, notebook: str, key: str, seconds: float) -> tuple[dict, str | None]:
    """(summary, error) of the record a notebook that finished wrote; a record that is not ok is an error."""
    try:
        rec = read_run(run_dir)
    except RunRecordError as exc:
        return {}, str(exc)
    except ConfigError:
        return {}, "the notebook finished without writing a run record (missing RunRecorder.finish)"
    summary = rec.get("summary") or {}
    if rec.get("status") != "ok":
        return summary, f"the notebook finished but its run record says status={rec.get('status')!r}"
    _stamp_runner(run_dir, notebook, key, seconds)
    return summary, None


def _preview_lines(preview: str) -> list[str]:
    """The first lines of the cell a CellTimeoutError previews: nbclient shows a cell of 11 lines or more as the
    list repr of its first five (then "..." and the last five), a shorter one as it is."""
    top = preview.split("\n", 1)[0].strip()
    if top.startswith("["):
        try:
            lines = ast.literal_eval(top)
        except (ValueError, SyntaxError):
            lines = None
        if isinstance(lines, list) and all(isinstance(x, str) for x in lines):
            return lines
    return preview.strip().split("\n") if preview.strip() else []


def _source(cell: Mapping[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _timeout_message(exc: BaseException, path: Path, timeout: int) -> str:
    """A cell timeout as one line: which cell (its number and first line), the limit and how to raise it."""
    text = str(exc)
    preview = text.split("-------------------\n", 1)[1].split("\n-------------------")[0] if "----\n" in text else ""
    head = _preview_lines(preview)
    first = next((ln.strip() for ln in head if ln.strip()), "")
    number = ""
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        hits = [i for i, c in enumerate(cells) if first and c.get("cell_type") == "code"
                and _source(c).strip().split("\n")[:len(head)] == head]
        number = f"cell {hits[0] + 1} " if hits else ""
    except (OSError, ValueError, TypeError):
        pass
    return (f"{number or 'a cell '}of {path.name} ({shown(first, 60)}) ran past the limit of {timeout} s per cell "
            f"(CellTimeoutError): raise it with `kgrag run ... --timeout SECONDS` or `timeout:` in the grid YAML, or "
            f"give the run fewer items (-p limit=N).")


def _short_error(exc: BaseException, path: Path | None = None, timeout: int | None = None) -> str:
    if type(exc).__name__ == "CellTimeoutError" or getattr(exc, "ename", None) == "CellTimeoutError":
        return _timeout_message(exc, path, timeout) if path is not None else "CellTimeoutError: a cell ran too long"
    ename = getattr(exc, "ename", None)
    evalue = getattr(exc, "evalue", None)
    if ename:
        return f"{ename}: {evalue}"
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"


def _record_failure(run_dir: Path, notebook: str, name: str, params: dict, key: str, error: str, log: str) -> None:
    """Mark the record failed, keeping what the notebook wrote and counting the examples on disk."""
    rec: dict[str, Any] = {}
    if (run_dir / RUN_FILE).exists():
        try:
            rec = read_run(run_dir)
        except RunRecordError:
            _set_aside(run_dir)  # keep the damaged file beside the new record
    examples = run_dir / EXAMPLES_FILE
    n, torn = read_examples(examples) if examples.exists() else ([], 0)
    rec.update({
        "run_name": name, "notebook": notebook, "status": "failed", "params": rec.get("params") or params,
        "params_hash": key, "error": error, "log": log, "method": rec.get("method") or Path(notebook).stem,
        "n_examples": len(n), "torn_lines": torn,
    })
    atomic_write_json(run_dir / RUN_FILE, rec)
