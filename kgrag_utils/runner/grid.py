"""Grids: a YAML config from `configs/` expanded into runs (defaults, a cartesian `grid:` per run, `-p`
overrides), run one after another or by several workers (one GPU each where several are visible), or
one shard of them; the final notebook (the report) last; then the grid summary (`grid_summary`).

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

import itertools
import os
import queue
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import schema, settings
from ..errors import ConfigError, KgragError, StorageError, shown, storage_errno, storage_message
from ..notebook_params import notebook_parameters, resolve_notebook
from ..progress import progress_bar
from ..records import RUN_FILE, RunLock, RunLockedError, RunRecordError, check_run_name, read_run, run_key
from .checks import check_run_parameters
from .execute import DEFAULT_TIMEOUT, INTERRUPTED_ERROR, STOPPING, RunOutcome, run_name_for, run_notebook
from .kernel import stop_kernels
from .grid_summary import write_summary

__all__ = ["grid_path", "load_grid", "expand_grid", "parse_shard", "shard_runs", "visible_gpus", "worker_gpus",
           "run_grid", "outcomes_from_records", "report_grid"]


def grid_path(config: Path | str) -> Path:
    p = Path(config)
    if not _exists(p) and not p.is_absolute():
        for cand in (settings.configs_dir() / p, settings.configs_dir() / f"{p}.yaml"):
            if _exists(cand):
                return cand
    if not _exists(p):
        names = sorted(x.stem for x in settings.configs_dir().glob("*.yaml"))
        raise ConfigError(f"grid config {shown(str(config), 80)} not found;{schema.closest(p.stem[:200], names)} "
                          f"available in configs/: {', '.join(names)}.")
    if not p.is_file():
        raise ConfigError(f"grid config {shown(str(config), 80)} is not a file: give a YAML file, or a name from "
                          f"configs/.")
    return p


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long for the file system
        return False


def load_grid(config: Path | str | Mapping[str, Any]) -> dict:
    """A grid config, checked against `schema.GridSpec` (unknown keys, wrong types, empty lists refused): a file
    of `configs/`, or a mapping built in Python (a reproduction's runs, `kgrag_utils.repro`; `source` names it)."""
    if isinstance(config, Mapping):
        source = str(config.get("source") or config.get("name") or "grid")
        cfg = schema.validate_grid({k: v for k, v in config.items() if k != "source"}, source).model_dump()
        cfg["name"], cfg["source"] = cfg.get("name") or "grid", source
        check_run_name(cfg["name"], "grid name")
        return cfg
    p = grid_path(config)
    spec, _ = schema.parse_grid(p.read_text(encoding="utf-8"), p.name)
    cfg = spec.model_dump()
    cfg["name"] = cfg.get("name") or p.stem
    cfg["source"] = p.name
    check_run_name(cfg["name"], "grid name")
    return cfg


def grid_notebook_parameters(config: Path | str) -> list[tuple[str, dict]]:
    """(notebook name, its parameters cell) of every run notebook of a grid, in the grid's order."""
    cfg = load_grid(config)
    source = str(cfg.get("source") or config)
    spec = schema.validate_grid({k: v for k, v in cfg.items() if k != "source"}, source)
    out, seen = [], set()
    for i, run in enumerate(spec.runs):
        try:
            path = resolve_notebook(run.notebook)
        except ConfigError as exc:
            raise ConfigError(f"{source}, run #{i + 1}: {exc}") from None
        if path not in seen:
            seen.add(path)
            out.append((path.name, notebook_parameters(path)))
    return out


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


def parse_shard(text: str) -> tuple[int, int]:
    """'i/n' -> (i, n) with 0 <= i < n."""
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise ConfigError(f"--shard takes i/n, e.g. --shard 0/4 (got {shown(text, 40)}).") from None
    if n < 1 or not 0 <= i < n:
        m = max(n, 2) if n < 10_000 else 4
        raise ConfigError(f"--shard {shown(text, 40)}: need 0 <= i < n, e.g. 0/{m} ... {m - 1}/{m}.")
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
    config: Path | str | Mapping[str, Any],
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
    settings.check_folders()  # a storage variable naming an impossible folder: refused before any kernel
    timeout = int(cfg.get("timeout") or DEFAULT_TIMEOUT)
    grid = str(cfg["name"])
    outcomes: list[RunOutcome] = []
    bar = _progress(len(runs) + (1 if final else 0), f"grid {grid}" + (f" shard {shard[0]}/{shard[1]}" if sharded else ""),
                    progress)
    workers = capped_workers(workers, len(runs))
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
        except KgragError as exc:  # one line naming the problem (a damaged record, a full or read-only folder, ...)
            return RunOutcome(path.name, run_name_for(path, check_run_parameters(path, prm)), "failed", 0.0, prm,
                              error=str(exc))
        except Exception as exc:  # noqa: BLE001 - one bad run never ends a grid: it is the summary's failed row
            return RunOutcome(path.name, run_name_for(path, check_run_parameters(path, prm)), "failed", 0.0, prm,
                              error=f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}")
        finally:
            if gpu is not None:
                free.put(gpu)

    stem = f"summary-shard-{shard[0]}-of-{shard[1]}" if sharded else "summary"
    pending = list(runs)
    try:
        _run_all(runs, workers, _one, outcomes, pending, bar)
        if final:
            pending.append((resolve_notebook(final), {}))
            outcome = _final(final, cfg, grid, timeout)
            pending.pop()
            outcomes.append(outcome)
            _tick(bar, outcome)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the kernels end, the summary says what ran, then one line
        interrupted(outcomes, pending, settings.runs_dir() / grid, stem)
        raise
    finally:
        if bar is not None:
            bar.close()
    outcomes[:] = settle_locked(outcomes, timeout)
    _write_summary_or_say(outcomes, settings.runs_dir() / grid, stem)
    return outcomes


def capped_workers(workers: int, runs: int) -> int:
    """At most one worker per run; above the machine's CPUs (or visible GPUs) a warning, as each is a kernel."""
    workers = max(1, min(int(workers), max(runs, 1)))
    room = max(os.cpu_count() or 1, len(visible_gpus()))
    if workers > room:
        print(f"kgrag: warning: {workers} workers start {workers} kernels at once on {room} CPU(s)/GPU(s); "
              f"they will compete for them (use --workers {room} or fewer)", file=sys.stderr, flush=True)
    return workers


def _run_all(runs, workers: int, one, outcomes: list, pending: list, bar) -> None:
    """Every run by `one`, in order (one worker) or as workers free up; `pending` keeps what has not ended."""
    if workers <= 1:
        for item in runs:
            outcome = one(item)
            pending.remove(item)
            outcomes.append(outcome)
            _tick(bar, outcome)
        return
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = {pool.submit(one, item): item for item in runs}
        for fut in as_completed(futures):
            outcome = fut.result()
            pending.remove(futures[fut])
            outcomes.append(outcome)
            _tick(bar, outcome)
    except KeyboardInterrupt:
        STOPPING.set()  # the workers' runs end as interrupted once their kernels are stopped
        stop_kernels()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    order = {run_name_for(p, check_run_parameters(p, prm)): i for i, (p, prm) in enumerate(runs)}
    outcomes.sort(key=lambda o: order.get(o.run_name, 0))


def _final(final: str, cfg: Mapping[str, Any], grid: str, timeout: int) -> RunOutcome:
    try:
        return run_notebook(final, dict(cfg.get("final_parameters") or {}), grid=grid, timeout=timeout, always=True)
    except RunLockedError as exc:  # another process runs this grid's final notebook now
        path = resolve_notebook(final)
        prm = dict(cfg.get("final_parameters") or {})
        return RunOutcome(path.name, run_name_for(path, check_run_parameters(path, prm)), "locked", 0.0, prm,
                          error=str(exc))
    except KgragError as exc:
        return RunOutcome(Path(final).name, Path(final).stem, "failed", 0.0, {}, error=str(exc))


def interrupted(outcomes: list[RunOutcome], pending: Sequence[tuple[Path, dict]], folder: Path, stem: str) -> None:
    """After Ctrl-C / SIGTERM: the runs cut short are `interrupted` rows, those never started `not run`, and the
    summary of what ran is written."""
    signal_quiet()
    for path, prm in pending:
        try:
            name = run_name_for(path, check_run_parameters(path, prm)) if prm else path.stem
        except KgragError:
            name = path.stem
        try:
            cut = read_run(settings.results_dir() / name).get("error") == INTERRUPTED_ERROR
        except (KgragError, OSError):  # no record yet: the run never started
            cut = False
        outcomes.append(RunOutcome(path.name, name, "interrupted" if cut else "not run", 0.0, prm,
                                   error=INTERRUPTED_ERROR if cut else "not started before the interrupt"))
    try:
        _write_summary_or_say(outcomes, folder, stem)
    except KgragError as exc:
        print(f"kgrag: {exc}", file=sys.stderr)


def signal_quiet() -> None:
    """A second Ctrl-C while the summary is written is ignored (it would only cut the summary short)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def settle_locked(outcomes: Sequence[RunOutcome], wait_s: float) -> list[RunOutcome]:
    """Rows of runs another process was writing (`locked`) become what their records say once that process lets
    go (waiting up to `wait_s` for each): a concurrent grid's finished runs are `ok`, never failed."""
    out = []
    for o in outcomes:
        if o.status != "locked":
            out.append(o)
            continue
        run_dir = settings.results_dir() / o.run_name
        print(f"kgrag: waiting up to {wait_s:.0f} s for run {o.run_name}, which another process is writing",
              file=sys.stderr, flush=True)
        if not _wait_unlocked(run_dir, wait_s):
            out.append(o)
            continue
        try:
            rec = read_run(run_dir)
        except KgragError as exc:
            out.append(RunOutcome(o.notebook, o.run_name, "failed", 0.0, o.parameters, error=str(exc)))
            continue
        status = "ok" if rec.get("status") == "ok" else "failed"
        error = None if status == "ok" else (rec.get("error") or f"its record says status={rec.get('status')!r}")
        out.append(RunOutcome(o.notebook, o.run_name, status, float((rec.get("runner") or {}).get("seconds") or 0.0),
                              o.parameters, o.output, o.log, error, rec.get("summary") or {}))
    return out


def _wait_unlocked(run_dir: Path, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with RunLock(run_dir):
                return True
        except RunLockedError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(1.0)


def _write_summary_or_say(outcomes: Sequence[RunOutcome], folder: Path, stem: str = "summary") -> None:
    """The grid summary, or one line naming the folder that cannot take it (after every run has run)."""
    try:
        write_summary(outcomes, folder, stem=stem)
    except OSError as exc:
        if not storage_errno(exc):
            raise
        raise StorageError(storage_message(exc, folder, "KGRAG_RUNS_DIR")) from None


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
    _write_summary_or_say(outcomes, settings.runs_dir() / grid)
    return outcomes


def _progress(total: int, desc: str, enabled: bool):
    return progress_bar(total=total, desc=desc, unit="run", enabled=enabled) if enabled else None


def _tick(bar, outcome: RunOutcome) -> None:
    if bar is None:
        return
    bar.set_postfix_str(f"{outcome.run_name}: {outcome.status}")
    bar.update(1)
