"""A reproduction as a grid: its runs named and parameterised, checked before anything starts, executed by the
grid runner (`kgrag_utils.runner.grid.run_grid`: fresh kernels, resume, shards, workers).

Names. A run is `results/<name>/` at the config's own sample and settings. `--limit N` (the first N of each
run's sample: `take=N`, so the questions are a subset of the row's) and `-p k=v` overrides name another run,
`<name>@take=N,k=v`, and another folder, `runs/repro-<table>@take=N,k=v/`: nothing overwrites the record or the
executed notebooks of a run with other parameters. A run name that already holds a finished run with other
parameters is refused before anything starts (as `kgrag run` refuses it; `--force` keeps the old record aside).

Before anything starts: every run's parameters (the notebook's and its method config's rules), the data on disk,
the models (a preset whose packaged model is not installed names the command that installs it), run names.
"""

from __future__ import annotations

import importlib.util
import shlex
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .. import settings
from ..errors import ConfigError
from ..records import RUN_FILE, check_run_name, params_hash, read_run, run_key
from ..runner.checks import check_data_present, check_run_parameters
from ..runner.execute import RunReuseError, _differences
from ..runner.grid import expand_grid, load_grid, run_grid, shard_runs
from .spec import SAMPLE_KEYS, ReproRun, ReproSpec

__all__ = ["Plan", "plan", "only_rows", "preflight", "missing_model", "execute", "cell_timeout"]

#: the command that installs each packaged model's extra
INSTALL = {"cpu": "make setup", "cpu-large": "make setup-large"}


@dataclass
class Plan:
    """What `kgrag repro TABLE [--limit N] [-p k=v]` runs: the grid config and each table run's name."""

    spec: ReproSpec
    limit: int = 0
    overrides: dict[str, Any] = field(default_factory=dict)
    rows: str = ""  # only the rows whose label or run name holds this
    suffix: str = ""
    names: dict[str, str] = field(default_factory=dict)  # the config's run name -> this plan's run name

    @property
    def grid_name(self) -> str:
        return f"repro-{self.spec.table}{self.suffix}"

    @property
    def folder(self):
        """runs/<grid name>/: the executed notebooks, their logs, the grid summary, the table."""
        return settings.runs_dir() / self.grid_name

    def questions(self, run: ReproRun | None = None) -> int:
        """Questions of a run (of the table's sample without one; 0: the whole split)."""
        return self.limit or (self.spec.sample_of(run) if run else self.spec.sample).size

    def changes(self) -> dict[str, Any]:
        return {**({"take": self.limit} if self.limit else {}), **self.overrides}

    def grid_config(self) -> dict:
        """The grid `run_grid` executes: the sample and defaults in `defaults`, each run named."""
        cfg = {"name": self.grid_name, "source": self.spec.path or self.spec.table, "timeout": self.spec.timeout,
               "defaults": {**self.spec.defaults, **self.spec.sample.parameters()},
               "runs": [{"notebook": r.notebook, "parameters": {**r.parameters, **(r.sample.parameters() if r.sample else {}),
                                                                "run_name": self.names[r.name]}}
                        for r in self.spec.runs]}
        if self.spec.final:
            cfg["final"] = self.spec.final
        return cfg

    def expanded(self) -> list[tuple[Any, dict]]:
        """(notebook path, parameters) of every run, each checked as `kgrag run` checks one."""
        return expand_grid(load_grid(self.grid_config()), self.changes())

    def command(self, rows: str = "") -> str:
        rows = rows or self.rows
        opts = ([f"--rows {shlex.quote(rows)}"] if rows else []) + ([f"--limit {self.limit}"] if self.limit else []) \
            + [f"-p {k}={v}" for k, v in self.overrides.items()]
        return " ".join(["kgrag repro", self.spec.table, *opts])


def _suffix(changes: Mapping[str, Any]) -> str:
    if not changes:
        return ""
    text = "@" + ",".join(f"{k}={v}" for k, v in changes.items())
    try:
        check_run_name(f"x{text}")
        return text
    except ConfigError:  # a value a folder name cannot hold: its hash
        return f"@{params_hash(dict(changes))[:8]}"


def only_rows(spec: ReproSpec, text: str) -> ReproSpec:
    """The table cut to the rows (and pairs) of run `text`, else those whose label or run name holds it (any case),
    and their runs."""
    def holds(label: str, runs: list[str], exact: bool) -> bool:
        if exact:
            return text in runs
        return text.lower() in label.lower() or any(text.lower() in r.lower() for r in runs)

    exact = any(text in runs for _, runs in spec.entries())
    rows = [r for r in spec.rows if holds(r.label, [r.run], exact)]
    pairs = [p for p in spec.pairs if holds(p.label, [p.a, p.b], exact)]
    if not rows and not pairs:
        raise ConfigError(f"{spec.table}: no row's label or run name holds {text!r}; rows: "
                          f"{'; '.join(label for label, _ in spec.entries())}.")
    keep = {r.run for r in rows} | {n for p in pairs for n in (p.a, p.b)}
    return spec.model_copy(update={"rows": rows, "pairs": pairs, "runs": [r for r in spec.runs if r.name in keep]})


def plan(spec: ReproSpec, limit: int = 0, overrides: Mapping[str, Any] | None = None, rows: str = "") -> Plan:
    """The runs of one reproduction (its rows holding `rows`, or all), at its own sample or the first `limit`
    questions of it, with `overrides`. The run names do not depend on `rows`: a row is the same run either way."""
    overrides = dict(overrides or {})
    spec = only_rows(spec, rows) if rows else spec
    if limit < 0:
        raise ConfigError(f"--limit is a number of questions, at least 1 (got {limit}).")
    sizes = {spec.sample_of(r).size for r in spec.runs}
    size = min(sizes - {0}, default=0)
    if limit and size and limit > size:
        raise ConfigError(f"{spec.table}: --limit {limit} is more than the {size} questions of its rows; a larger "
                          f"sample is another table: change `sample:` in {spec.path or spec.table}.")
    if sizes == {limit}:
        limit = 0  # the rows themselves
    bad = [k for k in SAMPLE_KEYS if k in overrides] + (["run_name"] if "run_name" in overrides else [])
    if bad:
        raise ConfigError(f"-p {bad[0]}=... : the sample and the run names are the reproduction's; ask fewer questions "
                          f"with --limit N (the first N of each row's sample).")
    p = Plan(spec, limit, overrides, rows)
    p.suffix = _suffix(p.changes())
    p.names = {r.name: f"{r.name}{p.suffix}" for r in spec.runs}
    for name in p.names.values():
        check_run_name(name)
    check_run_name(p.grid_name, "grid name")
    return p


def missing_model(preset_name: str) -> str | None:
    """Why the packaged model of a preset cannot load here (not installed), with the command that installs it."""
    from ..llm import get_preset

    if not preset_name or preset_name == "fake":
        return None
    preset = get_preset(preset_name)
    if preset.gguf is None:
        return None  # a hub model (GPU presets): the loader names what is missing
    if all(importlib.util.find_spec(m) is not None for m in preset.gguf.modules):
        return None
    how = INSTALL.get(preset.gguf.extra, f"pip install -e '.[{preset.gguf.extra}]'")
    return (f"the model of preset {preset_name!r} ({preset.gguf.filename}) is not installed: run `{how}` first "
            f"(the {preset.gguf.extra} extra)")


def _reuse_conflict(name: str, params: Mapping[str, Any]) -> str | None:
    run_dir = settings.results_dir(create=False) / name
    if not (run_dir / RUN_FILE).exists():
        return None
    old = read_run(run_dir)
    key = run_key(params)
    if key in (old.get("params_hash"), (old.get("runner") or {}).get("params_hash")) or old.get("status") != "ok":
        return None  # this run (it resumes or is skipped), or an unfinished one the runner keeps aside
    diff = _differences(old.get("params") or {}, params)
    return "; ".join(diff[:3]) + ("; ..." if len(diff) > 3 else "") if diff else None


def preflight(p: Plan, force: bool = False, shard: tuple[int, int] | None = None) -> list[tuple[Any, dict]]:
    """Every check before a kernel starts (see the module docstring); the runs of this shard."""
    runs = shard_runs(p.expanded(), shard)
    for path, prm in runs:
        params = check_run_parameters(path, prm)
        why = missing_model(str(params.get("llm_preset") or ""))
        if why:
            raise ConfigError(f"{p.spec.table}: run {params['run_name']!r} needs an LLM this setup lacks: {why}; or try "
                              f"the table on the installed default: {p.command()} -p llm_preset=qwen2.5-coder-0.5b.")
        check_data_present(params)
        diff = None if force else _reuse_conflict(params["run_name"], params)
        if diff:
            raise RunReuseError(
                f"run {params['run_name']!r} already holds a finished run with other parameters ({diff}): nothing "
                f"was started. Rerun with --force, which keeps the old record beside it as run.json.replaced-<time>, "
                f"or rename the run in {p.spec.path or p.spec.table}.")
    return runs


def execute(p: Plan, workers: int = 1, force: bool = False, shard: tuple[int, int] | None = None,
            progress: bool = True) -> Sequence[Any]:
    """Check everything, then run the plan's runs (this shard of them) with the grid runner; the outcomes."""
    preflight(p, force=force, shard=shard)
    return run_grid({**p.grid_config(), "timeout": cell_timeout(p)}, workers=workers, force=force,
                    overrides=p.changes(), shard=shard, progress=progress)


#: a run's cell may take this many times its estimated LLM time (measured seconds per call on this machine x its
#: calls) before it is stopped as hung: a shared machine ran 3x slower than the idle measurement (2026-12-07)
TIMEOUT_OVER_ESTIMATE = 10


def cell_timeout(p: Plan) -> int:
    """The config's `timeout`, or longer where a run's estimated LLM time needs it: a method notebook runs all its
    questions in one cell, and 200 questions of the 1.5B on a CPU take hours (a stopped run resumes, but each
    `kgrag repro` would stop again after the config's hour)."""
    from .cost import method_of, seconds_per_call

    longest = 0.0
    for path, params in p.expanded():
        run = next(r for r in p.spec.runs if p.names[r.name] == params["run_name"])
        preset = str(params.get("llm_preset") or "")
        if preset and preset != "fake":
            per_call = seconds_per_call(preset, method_of(path)).per_call or 0.0  # never measured: the config's timeout
            longest = max(longest, p.spec.calls_per_question(run) * p.questions(run) * per_call)
    return max(int(p.spec.timeout), int(TIMEOUT_OVER_ESTIMATE * longest))
