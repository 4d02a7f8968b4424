"""Batch execution of the notebooks with papermill: one run, or a grid from a YAML config.

Each run gets a fresh `python3` kernel whose working directory is the notebook's folder, a run name
(derived from the notebook and its parameters unless given), an executed copy and a log under
`runs/<grid>/`, and a run record under `results/<run_name>/` (written by the notebook itself through
`kgrag_utils.records.RunRecorder`). A run whose record says "ok" with the same parameters is skipped
(resume); a failed run is recorded with its error and the grid goes on. The grid ends with a summary
table, printed and saved as CSV and Markdown.

Grid config (YAML):

    name: demo
    defaults: {limit: 10}           # merged into every run's parameters (only where the notebook has them)
    timeout: 1800                   # seconds per cell
    runs:
      - notebook: 00_quickstart.ipynb
      - notebook: 01_simgrag.ipynb
        parameters: {top_k: 3}
        grid: {dataset: [sample-movies-1hop, sample-movies-2hop]}   # cartesian product
    final: 05_report.ipynb          # optional, executed last (always re-run)
"""

from __future__ import annotations

import ast
import copy
import itertools
import json
import os
import queue
import sys
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import schema, settings
from .errors import ConfigError, MissingDependencyError
from .progress import progress_bar, text_progress_in_children
from .records import (ENV_RUN_DIR, ENV_RUN_KEY, ENV_RUN_TOKEN, EXAMPLES_FILE, RUN_FILE, RunLock, RunLockedError, RunRecordError,
                      atomic_write_json, atomic_write_text, check_run_name, read_examples, read_run, run_key,
                      to_jsonable)

DEFAULT_TIMEOUT = schema.DEFAULT_TIMEOUT  # seconds per cell
KERNEL_START_TIMEOUT = 300  # seconds a kernel may take to start (papermill's 60 s fail on a loaded machine)


# ----------------------------------------------------------------------------- notebook parameters
def _load_nb(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"notebook {path} does not exist: see `ls {settings.notebooks_dir()}`.") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"notebook {path} is not valid JSON ({exc}): restore it from git.") from None


def notebook_parameters(path: Path | str) -> dict[str, Any]:
    """The literal defaults of the cell tagged `parameters` (raises if it holds anything but literals)."""
    path = resolve_notebook(path)
    st = path.stat()
    return copy.deepcopy(_notebook_parameters(str(path), st.st_mtime_ns, st.st_size))


@lru_cache(maxsize=32)
def _notebook_parameters(name: str, mtime_ns: int, size: int) -> dict[str, Any]:
    path = Path(name)
    nb = _load_nb(path)
    cells = [c for c in nb.get("cells", []) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ConfigError(f"{path.name} must have exactly one cell tagged 'parameters' (found {len(cells)}).")
    src = "".join(cells[0].get("source", []))
    _check_papermill_reads(path, src)
    try:
        tree = ast.parse(src)
    except SyntaxError as exc:
        raise ConfigError(f"{path.name}: the parameters cell is not valid Python ({exc.msg}, line {exc.lineno}).") from None
    params: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring-like comment string
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        else:
            raise ConfigError(f"{path.name}: the parameters cell may hold only `name = literal` lines (line {node.lineno}).")
        try:
            params[target] = ast.literal_eval(value)
        except ValueError:
            raise ConfigError(
                f"{path.name}: parameter '{target}' is not a literal (line {node.lineno}); compute derived values in the next cell."
            ) from None
    return params


def _check_papermill_reads(path: Path, src: str) -> None:
    """papermill must read the same parameter names as the runner, or it warns falsely on every run.

    papermill's parser skips any line with more than one '=' (a comment such as `# 0 = all`), then reports
    that parameter as unknown ("Unable to parse line" / "Passed unknown parameter"). Such a line is refused
    here, naming it, so that every warning a run log shows is a real one.
    """
    import logging

    from papermill.translators import PythonTranslator

    try:
        tree = ast.parse(src)
    except SyntaxError:
        return  # reported by the caller
    ours = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign) and node.targets else None)
        if isinstance(target, ast.Name):
            ours[target.id] = node.lineno
    log = logging.getLogger("papermill.translators")
    level, log.level = log.level, logging.ERROR  # this probe's own warnings are the false alarms themselves
    try:
        theirs = {p.name for p in PythonTranslator.inspect({"source": src})}
    finally:
        log.level = level
    missing = [name for name in ours if name not in theirs]
    if missing:
        lineno = ours[missing[0]]
        line = src.splitlines()[lineno - 1].strip()
        raise ConfigError(
            f"{path.name}: papermill cannot read line {lineno} of the parameters cell ({line[:80]!r}), so it would "
            f"warn 'Passed unknown parameter: {missing[0]}' on every run: keep '=' out of its comment "
            f"(write '0: all', not '0 = all')."
        )


def validate_parameters(notebook: Path | str, overrides: Mapping[str, Any], strict: bool = True) -> dict[str, Any]:
    """Check overrides against the notebook's parameters (`schema.check_parameters`); the merged parameters.

    `strict=False` drops names the notebook does not have instead of refusing them.
    """
    path = resolve_notebook(notebook)
    defaults = notebook_parameters(path)
    if not strict:
        overrides = {k: v for k, v in overrides.items() if k in defaults}
    return schema.check_parameters(path.name, defaults, overrides)


def check_run_parameters(notebook: Path | str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Everything a run is checked for before a kernel starts (runs and grids alike); the merged parameters."""
    path = resolve_notebook(notebook)
    params = validate_parameters(path, overrides)
    if params.get("run_name"):
        check_run_name(params["run_name"])
    check_method_config(path, params)
    return params


def check_method_config(path: Path, params: Mapping[str, Any]) -> None:
    """A registered method notebook's parameters must also build its config (choices, ranges, combinations)."""
    from pydantic import ValidationError

    from .methods.registry import method_for_notebook

    spec = method_for_notebook(path.name)
    config_class = spec.config_class if spec is not None else None
    if config_class is None:
        return
    try:
        config_class.from_params(params)
    except ConfigError as exc:
        raise ConfigError(f"{path.name}: {exc}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{path.name}: {'.'.join(map(str, err['loc']))}: {err['msg']} (got {err.get('input')!r}).") from None


def check_data_present(params: Mapping[str, Any]) -> None:
    """The datasets a run names are on disk (real copies; samples are generated): else one line naming the fetch."""
    from .datasets.registry import require_present

    for key in schema.dataset_parameters(params):
        if isinstance(params[key], str) and params[key]:
            require_present(params[key])


def resolve_notebook(notebook: Path | str) -> Path:
    p = Path(notebook)
    candidates = [p] if p.is_absolute() else [settings.notebooks_dir() / p, settings.repo_root() / p, Path.cwd() / p]
    for c in candidates:
        if c.suffix != ".ipynb":
            c = c.with_suffix(".ipynb")
        if c.exists():
            return c.resolve()
    names = sorted(x.name for x in settings.notebooks_dir().glob("*.ipynb"))
    hint = schema.closest(Path(str(notebook)).name, names) or schema.closest(Path(str(notebook)).stem, [Path(n).stem for n in names])
    raise ConfigError(f"notebook '{notebook}' not found;{hint} available: {', '.join(names)}.")


# ----------------------------------------------------------------------------- one run
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
    rec["runner"] = {"notebook": notebook, "params_hash": key, "seconds": round(seconds, 2)}
    atomic_write_json(run_dir / RUN_FILE, rec)


def _set_aside(run_dir: Path) -> None:
    """Move a damaged record out of the way (kept beside it, never deleted) so the run starts over."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for name in (RUN_FILE, EXAMPLES_FILE):
        if (run_dir / name).exists():
            os.replace(run_dir / name, run_dir / f"{name}.damaged-{stamp}")


def _prefer_project_kernel() -> None:
    """Make the `python3` kernel resolve to this interpreter's environment (a venv's sys-prefix kernelspec)."""
    share = Path(sys.prefix) / "share" / "jupyter"
    if (share / "kernels" / "python3").exists():
        paths = os.environ.get("JUPYTER_PATH", "")
        if str(share) not in paths.split(os.pathsep):
            os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(share), paths) if p)


def _ipc_prefix() -> str | None:
    """A fresh IPC socket prefix in Jupyter's runtime folder, or None where IPC cannot serve (not POSIX,
    or a path too long for a UNIX socket)."""
    if os.name != "posix":
        return None
    from jupyter_core.paths import jupyter_runtime_dir

    runtime = Path(jupyter_runtime_dir())
    prefix = str(runtime / f"kgrag-{os.getpid()}-{uuid.uuid4().hex[:12]}-ipc")
    if len(prefix) + 4 > 100:  # sockets are "<prefix>-<n>"; UNIX socket paths hold about 104-108 bytes
        return None
    runtime.mkdir(parents=True, exist_ok=True)
    return prefix


def _kernel_manager_class(extra_env: Mapping[str, str]):
    """A kernel manager that starts its kernel with these environment variables added (per run, thread-safe)."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    extra = {str(k): str(v) for k, v in extra_env.items()}

    class RunKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_default(self):
            # local sockets, not TCP on 127.0.0.1: the kernel need not warn that TCP is unencrypted
            return "ipc" if _ipc_prefix() else "tcp"

        @default("ip")
        def _ip_default(self):
            # one socket prefix per kernel (jupyter's default, "kernel-ipc" in the cwd, is shared by
            # kernels started at the same time, which then collide)
            return _ipc_prefix() or super()._ip_default()

        async def start_kernel(self, **kw):
            env = dict(kw.pop("env", None) or os.environ)
            env.update(extra)
            return await super().start_kernel(env=env, **kw)

    return RunKernelManager


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
    try:
        import papermill as pm
    except ImportError as exc:  # pragma: no cover
        raise MissingDependencyError("the batch runner needs papermill: run `pip install -e .`.") from exc
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
    out_dir = settings.runs_dir() / grid
    out_nb, log_path = out_dir / f"{name}.ipynb", out_dir / f"{name}.log"
    with RunLock(run_dir) as lock:
        try:
            rec = _finished_ok(run_dir, key)
        except RunRecordError:
            if not force:
                raise
            _set_aside(run_dir)
            rec = None
        # a report reads other runs' records, so its own finished record never makes it current
        if not force and not always and rec is not None and rec.get("method") != REPORT_METHOD:
            return RunOutcome(path.name, name, "skipped", 0.0, params, str(out_nb), str(log_path), summary=rec.get("summary") or {})
        out_dir.mkdir(parents=True, exist_ok=True)
        _prefer_project_kernel()
        kernel_env = {**(env or {}), ENV_RUN_DIR: str(run_dir.resolve()), ENV_RUN_KEY: key, ENV_RUN_TOKEN: lock.token}
        t0 = time.perf_counter()
        error = None
        with open(log_path, "w", encoding="utf-8") as log:
            log.write(f"notebook: {path}\nparameters: {json.dumps(to_jsonable(params))}\n\n")
            log.flush()
            try:
                with text_progress_in_children():  # nobody watches this kernel's widgets: its bars print plain lines
                    pm.execute_notebook(
                        str(path), str(out_nb), parameters=params, kernel_name="python3", cwd=str(path.parent),
                        execution_timeout=timeout, start_timeout=KERNEL_START_TIMEOUT, progress_bar=False,
                        log_output=True, stdout_file=log,
                        stderr_file=log, kernel_manager_class=_kernel_manager_class(kernel_env),
                    )
            except Exception as exc:  # papermill raises PapermillExecutionError with the cell's traceback
                error = _short_error(exc)
                log.write("\n" + "".join(traceback.format_exception(exc)))
            except KeyboardInterrupt:
                _record_failure(run_dir, path.name, name, params, key, "KeyboardInterrupt: interrupted by the user",
                                str(log_path))
                raise
        seconds = time.perf_counter() - t0
        summary: dict = {}
        if error is None:
            try:
                rec = read_run(run_dir)
                summary = rec.get("summary") or {}
                if rec.get("status") != "ok":
                    error = f"the notebook finished but its run record says status={rec.get('status')!r}"
                else:
                    _stamp_runner(run_dir, path.name, key, seconds)
            except RunRecordError as exc:
                error = str(exc)
            except ConfigError:
                error = "the notebook finished without writing a run record (missing RunRecorder.finish)"
        if error is not None:
            _record_failure(run_dir, path.name, name, params, key, error, str(log_path))
    return RunOutcome(path.name, name, "failed" if error else "ok", seconds, params, str(out_nb), str(log_path), error, summary)


def _short_error(exc: BaseException) -> str:
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


# ----------------------------------------------------------------------------- grids
def grid_path(config: Path | str) -> Path:
    p = Path(config)
    if not p.exists() and not p.is_absolute():
        for cand in (settings.configs_dir() / p, settings.configs_dir() / f"{p}.yaml"):
            if cand.exists():
                return cand
    if not p.exists():
        names = sorted(x.stem for x in settings.configs_dir().glob("*.yaml"))
        raise ConfigError(f"grid config '{config}' not found;{schema.closest(p.stem, names)} available in configs/: "
                          f"{', '.join(names)}.")
    return p


def load_grid(config: Path | str) -> dict:
    """A grid config, checked against `schema.GridSpec` (unknown keys, wrong types, empty lists refused)."""
    p = grid_path(config)
    spec, _ = schema.parse_grid(p.read_text(encoding="utf-8"), p.name)
    cfg = spec.model_dump()
    cfg["name"] = cfg.get("name") or p.stem
    cfg["source"] = p.name
    check_run_name(cfg["name"], "grid name")
    return cfg


def expand_grid(cfg: Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> list[tuple[Path, dict]]:
    """All (notebook, parameters) pairs of a grid, each checked as `kgrag run` checks one, names unique.

    `overrides` (`kgrag grid NAME -p k=v`) set a parameter in every run whose notebook has it, replacing the
    run's own value and grid axis; like `defaults`, each must be a parameter of at least one of the notebooks.
    """
    source = str(cfg.get("source") or f"grid '{cfg.get('name')}'")
    spec = schema.validate_grid({k: v for k, v in cfg.items() if k != "source"}, source)
    overrides = dict(overrides or {})
    paths = []
    for i, run in enumerate(spec.runs):
        try:
            paths.append(resolve_notebook(run.notebook))
        except ConfigError as exc:
            raise ConfigError(f"{source}, run #{i + 1}: {exc}") from None
    known = {path: notebook_parameters(path) for path in paths}
    everything = sorted(set().union(*known.values()))
    for what, values in (("defaults", spec.defaults), ("-p", overrides)):
        for key in values:
            if key not in everything:
                raise ConfigError(
                    f"{source}: {what} {key!r} is a parameter of none of this grid's notebooks "
                    f"({', '.join(sorted({p.name for p in paths}))});{schema.closest(key, everything)} "
                    f"their parameters: {', '.join(everything)}."
                )
    runs = []
    for i, (run, path) in enumerate(zip(spec.runs, paths)):
        mine = {k: v for k, v in overrides.items() if k in known[path]}
        base = {k: v for k, v in spec.defaults.items() if k in known[path]}
        base.update(run.parameters)
        axes = {k: v for k, v in run.grid.items() if k not in mine}
        keys = list(axes)
        for combo in itertools.product(*(axes[k] if isinstance(axes[k], list) else [axes[k]] for k in keys)):
            params = {**base, **dict(zip(keys, combo)), **mine}
            try:
                check_run_parameters(path, params)
            except ConfigError as exc:
                raise ConfigError(f"{source}, run #{i + 1}: {exc}") from None
            runs.append((path, params))
    seen: dict[str, int] = {}
    for j, (path, params) in enumerate(runs):
        name = run_name_for(path, check_run_parameters(path, params))
        if name in seen:
            raise ConfigError(
                f"{source} has two runs named {name!r} ({path.name}, runs {seen[name] + 1} and {j + 1} "
                f"of the expanded grid): give them different parameters or run_names, or drop one."
            )
        seen[name] = j
    if spec.final:
        try:
            check_run_parameters(resolve_notebook(spec.final), spec.final_parameters)
        except ConfigError as exc:
            raise ConfigError(f"{source}, final: {exc}") from None
    return runs


def check_known_names(path: Path | str, params: Mapping[str, Any]) -> None:
    """Dataset names (and splits) and LLM presets must exist (see `schema.check_known_names`)."""
    schema.check_known_names(Path(path).name, params)


def parse_shard(text: str) -> tuple[int, int]:
    """'i/n' -> (i, n) with 0 <= i < n."""
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise ConfigError(f"--shard takes i/n, e.g. --shard 0/4 (got {text!r}).") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"--shard {text}: need 0 <= i < n, e.g. 0/{max(n, 2)} ... {max(n, 2) - 1}/{max(n, 2)}.")
    return i, n


def shard_runs(runs: Sequence[Any], shard: tuple[int, int] | None) -> list[Any]:
    """Shard i of n: every n-th run of the expanded grid from the i-th (deterministic; shards cover the grid once)."""
    if shard is None:
        return list(runs)
    i, n = shard
    return list(runs[i::n])


def visible_gpus() -> list[str]:
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES when set, else what `nvidia-smi` lists, else none."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        ids = [x.strip() for x in env.split(",") if x.strip()]
        return [] if ids[:1] == ["-1"] else ids
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [x.strip() for x in out.splitlines() if x.strip()]


def worker_gpus(workers: int, gpus: Sequence[str] | None = None) -> list[str] | None:
    """One GPU per worker slot when several are visible and several workers run (round-robin beyond that)."""
    gpus = visible_gpus() if gpus is None else list(gpus)
    if workers <= 1 or len(gpus) < 2:
        return None
    return [gpus[k % len(gpus)] for k in range(workers)]


def run_grid(
    config: Path | str,
    workers: int = 1,
    force: bool = False,
    validate_only: bool = False,
    progress: bool = True,
    overrides: Mapping[str, Any] | None = None,
    shard: tuple[int, int] | None = None,
) -> list[RunOutcome]:
    """Run every notebook of a grid (or one shard of it); failures are recorded and do not stop the others.

    Everything is validated first. A sharded grid (`shard=(i, n)`, n > 1) runs its share of the runs and no
    final notebook; `report_grid` (`kgrag report NAME`) runs that once every shard is done.
    """
    cfg = load_grid(config)
    runs = shard_runs(expand_grid(cfg, overrides), shard)
    sharded = shard is not None and shard[1] > 1
    final = None if sharded else cfg.get("final")
    if validate_only:
        return [RunOutcome(p.name, run_name_for(p, check_run_parameters(p, prm)), "validated", 0.0, prm)
                for p, prm in runs]
    timeout = int(cfg.get("timeout") or DEFAULT_TIMEOUT)
    grid = str(cfg["name"])
    outcomes: list[RunOutcome] = []
    bar = _progress(len(runs) + (1 if final else 0), f"grid {grid}" + (f" shard {shard[0]}/{shard[1]}" if sharded else ""),
                    progress)
    slots = worker_gpus(workers)
    free: "queue.Queue[str]" = queue.Queue()
    for gpu in slots or []:
        free.put(gpu)

    def _one(item):
        path, prm = item
        gpu = free.get() if slots else None
        try:
            env = {"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else None
            return run_notebook(path, prm, grid=grid, timeout=timeout, force=force, env=env)
        except RunLockedError as exc:  # another process is writing this run: leave its record alone
            return RunOutcome(path.name, run_name_for(path, check_run_parameters(path, prm)), "locked", 0.0, prm,
                              error=str(exc))
        except RunRecordError as exc:
            return RunOutcome(path.name, run_name_for(path, check_run_parameters(path, prm)), "failed", 0.0, prm,
                              error=str(exc))
        finally:
            if gpu is not None:
                free.put(gpu)

    if workers <= 1:
        for item in runs:
            outcome = _one(item)
            outcomes.append(outcome)
            _tick(bar, outcome)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_one, item) for item in runs]
            for fut in as_completed(futures):
                outcome = fut.result()
                outcomes.append(outcome)
                _tick(bar, outcome)
        order = {run_name_for(p, check_run_parameters(p, prm)): i for i, (p, prm) in enumerate(runs)}
        outcomes.sort(key=lambda o: order.get(o.run_name, 0))
    if final:
        outcome = run_notebook(final, dict(cfg.get("final_parameters") or {}), grid=grid, timeout=timeout, always=True)
        outcomes.append(outcome)
        _tick(bar, outcome)
    if bar is not None:
        bar.close()
    stem = f"summary-shard-{shard[0]}-of-{shard[1]}" if sharded else "summary"
    write_summary(outcomes, settings.runs_dir() / grid, stem=stem)
    return outcomes


def outcomes_from_records(cfg: Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> list[RunOutcome]:
    """Every run of a grid as its record on disk says (status `missing` where there is none): all shards at once."""
    grid = str(cfg["name"])
    out = []
    for path, prm in expand_grid(cfg, overrides):
        params = check_run_parameters(path, prm)
        name = run_name_for(path, params)
        params["run_name"] = name
        run_dir = settings.results_dir() / name
        nb, log = settings.runs_dir() / grid / f"{name}.ipynb", settings.runs_dir() / grid / f"{name}.log"
        try:
            rec = read_run(run_dir) if (run_dir / RUN_FILE).exists() else None
        except RunRecordError as exc:
            out.append(RunOutcome(path.name, name, "unreadable", 0.0, params, str(nb), str(log), str(exc)))
            continue
        if rec is None:
            out.append(RunOutcome(path.name, name, "missing", 0.0, params, str(nb), str(log), "no run record yet"))
            continue
        current = rec.get("params_hash") == run_key(params) or (rec.get("runner") or {}).get("params_hash") == run_key(params)
        status = rec.get("status") if current else "stale"
        seconds = float((rec.get("runner") or {}).get("seconds") or 0.0)
        out.append(RunOutcome(path.name, name, status, seconds, params, str(nb), str(log),
                              rec.get("error") if status != "ok" else None, rec.get("summary") or {}))
    return out


def report_grid(config: Path | str, overrides: Mapping[str, Any] | None = None, timeout: int | None = None) -> list[RunOutcome]:
    """After the shards of a grid: its final notebook once, and the summary of every run from the records."""
    cfg = load_grid(config)
    outcomes = outcomes_from_records(cfg, overrides)
    grid = str(cfg["name"])
    if cfg.get("final"):
        outcomes.append(run_notebook(cfg["final"], dict(cfg.get("final_parameters") or {}), grid=grid,
                                     timeout=int(timeout or cfg.get("timeout") or DEFAULT_TIMEOUT), always=True))
    write_summary(outcomes, settings.runs_dir() / grid)
    return outcomes


def _progress(total: int, desc: str, enabled: bool):
    return progress_bar(total=total, desc=desc, unit="run", enabled=enabled) if enabled else None


def _tick(bar, outcome: RunOutcome) -> None:
    if bar is None:
        return
    bar.set_postfix_str(f"{outcome.run_name}: {outcome.status}")
    bar.update(1)


#: the grid summary's columns: one tidy row per run; the full detail stays in the run records
SUMMARY_COLUMNS = ["notebook", "run_name", "method", "dataset", "n", "llm", "metric", "strict", "lenient", "failures",
                   "seconds", "prompt_tokens_per_q", "status", "error"]


def _run_record(run_name: str) -> dict:
    try:
        return read_run(settings.results_dir() / run_name)
    except Exception:  # noqa: BLE001 - no record (validated only, failed before writing, damaged): the row says so
        return {}


def summary_row(outcome: RunOutcome) -> dict:
    """One run's line: its method's headline metric, strict and lenient (the registry names it), read from
    its summary through the method's own `scores` - never a summary key that one method happens to share."""
    from .methods.registry import method_for_notebook
    from .methods.scoring import headline

    o = outcome
    params = dict(o.parameters or {})
    run = _run_record(o.run_name) if o.status in ("ok", "skipped", "failed") else {}
    summary = o.summary or run.get("summary") or {}
    spec = method_for_notebook(o.notebook)
    row = {"notebook": o.notebook, "run_name": o.run_name, "method": spec.name if spec else str(run.get("method") or ""),
           "dataset": params.get("dataset", (run.get("params") or {}).get("dataset", "")), "n": summary.get("n"),
           "llm": params.get("llm_preset", ""), "metric": "", "strict": None, "lenient": None,
           "failures": summary.get("n_failed"), "seconds": round(o.seconds, 1), "prompt_tokens_per_q": None,
           "status": o.status, "error": o.error or ""}
    if spec is not None and spec.kind != "report" and summary:
        try:
            scored = spec.scores(summary, run={**run, "params": {**(run.get("params") or {}), **params}})
        except Exception as exc:  # noqa: BLE001 - an unreadable summary is named, the table goes on
            row["error"] = row["error"] or f"summary not scored: {type(exc).__name__}: {exc}"
            scored = []
        h = headline(scored, spec.headline.pairs, spec.headline.variant)
        row.update(metric=h["metric"], strict=h["strict"], lenient=h["lenient"],
                   prompt_tokens_per_q=h["prompt_tokens_per_q"])
        if h["n"] is not None:
            row["n"] = h["n"]
        if h.get("llm"):
            row["llm"] = h["llm"]
    return row


def summary_table(outcomes: Sequence[RunOutcome]):
    """The grid summary: one tidy row per run (`SUMMARY_COLUMNS`)."""
    import pandas as pd

    return pd.DataFrame([summary_row(o) for o in outcomes], columns=SUMMARY_COLUMNS)


def write_summary(outcomes: Sequence[RunOutcome], out_dir: Path, stem: str = "summary") -> Path:
    df = summary_table(outcomes)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / f"{stem}.csv", df.to_csv(index=False))
    atomic_write_text(out_dir / f"{stem}.md", _markdown(df))
    return out_dir / f"{stem}.csv"


def _markdown(df) -> str:
    """A GitHub Markdown table (pandas + tabulate); cell text keeps no '|' or line break that would split a row."""
    clean = df.astype(object).map(lambda v: v.replace("|", "\\|").replace("\n", " ") if isinstance(v, str) else v)
    return clean.to_markdown(index=False, floatfmt=".4g") + "\n"
