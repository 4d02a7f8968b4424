"""A reproduction config (`configs/reproduce/<table>.yaml`): one result table as notebook runs and table cells.

    table: headline                      # the file's stem; runs/repro-<table>/ holds the executed notebooks
    title: "..."                         # what the table shows
    published_in: README.md#...          # where the table is published
    sample: {limit: 100, take: 50, seed: 0}   # the sample, defined ONCE: the first `take` of the seeded `limit`
    llm_calls_per_question: 2            # for the cost estimate (`kgrag repro --list`); a run may say otherwise
    defaults: {llm_preset: ...}          # parameters of every run (only where its notebook has them)
    timeout: 3600                        # seconds per cell
    final: 05_report.ipynb               # optional: the report, executed after the runs
    runs:                                # one notebook run each, named (results/<name>/ is its record)
      - {name: simgrag-metaqa-1hop, notebook: 01_simgrag.ipynb, parameters: {dataset: metaqa-1hop}}
      - {name: gold-metaqa-1hop, notebook: 01_simgrag.ipynb, sample: {limit: 1000}, parameters: {...}}
    columns: [strict Hits@1, lenient Hits@1]
    rows:                                # one table row each: a run and its stored score rows
      - label: SimGRAG, MetaQA 1-hop
        run: simgrag-metaqa-1hop
        cells: {strict Hits@1: {variant: pattern=llm, metric: hits@1}, ...,
                paper: {published: simgrag, system: SimGRAG, dataset: metaqa-1hop, metric: hits@1 (lenient)}}

A cell names a stored score row of the run's record (`kgrag_utils.methods.summary.score_rows`: its variant and
metric) and which of its fields to show (`value`, or `n`); or a paper's number, one row of its method's
`published.rows()` (shown in italics); the table has no metric names of its own.
`limit`, `take` and `seed` are refused in `defaults` and `parameters`: the sample is `sample:`'s (the table's, or
a run's own `sample:` where a table's rows differ in size).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from .. import settings
from ..errors import ConfigError, shown
from ..records import check_run_name
from ..schema import DEFAULT_TIMEOUT, check_yaml_size, closest

__all__ = ["Sample", "ReproRun", "Cell", "Published", "Row", "ReproSpec", "SAMPLE_KEYS", "repro_dir", "list_tables", "load_spec"]

#: the parameters that define a sample: set in `sample:` only
SAMPLE_KEYS = ("limit", "take", "seed")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Sample(_Strict):
    """The questions of every run: the first `take` (0 = all) of the `limit` questions drawn with `seed`."""

    limit: int = Field(ge=0)
    take: int = Field(0, ge=0)
    seed: int = Field(0, ge=0)

    @property
    def size(self) -> int:
        """Questions per run (0: the whole split)."""
        return min(x for x in (self.limit, self.take) if x) if (self.limit or self.take) else 0

    def parameters(self) -> dict[str, int]:
        return {"limit": self.limit, "take": self.take, "seed": self.seed}


class ReproRun(_Strict):
    name: StrictStr
    notebook: StrictStr
    parameters: dict[str, Any] = Field(default_factory=dict)
    llm_calls_per_question: float | None = Field(None, ge=0)
    sample: Sample | None = None  # this run's own sample; None: the table's


class Cell(_Strict):
    variant: StrictStr
    metric: StrictStr
    field: Literal["value", "n", "prompt_tokens_per_q", "seconds_per_q"] = "value"  # a score row's field


class Published(_Strict):
    """A paper's number: the row of `published.rows()` of method `published` with this system, dataset, metric."""

    published: StrictStr
    system: StrictStr
    dataset: StrictStr
    metric: StrictStr


class Row(_Strict):
    label: StrictStr
    run: StrictStr
    cells: dict[str, Cell | Published]


class ReproSpec(_Strict):
    table: StrictStr
    title: StrictStr
    published_in: StrictStr = ""
    sample: Sample
    llm_calls_per_question: float = Field(0, ge=0)
    defaults: dict[str, Any] = Field(default_factory=dict)
    timeout: int = Field(DEFAULT_TIMEOUT, gt=0)
    final: StrictStr | None = None
    runs: list[ReproRun] = Field(min_length=1)
    columns: list[StrictStr] = Field(min_length=1)
    rows: list[Row] = Field(min_length=1)
    percent: bool = True  # values are shares, shown x 100
    digits: int = Field(1, ge=0, le=6)
    notes: StrictStr = ""
    path: str = ""  # the file it was read from (set by load_spec)

    def run(self, name: str) -> ReproRun:
        for r in self.runs:
            if r.name == name:
                return r
        raise ConfigError(f"{self.table}: no run named {name!r};{closest(name, [r.name for r in self.runs])} runs: "
                          f"{', '.join(r.name for r in self.runs)}.")

    def sample_of(self, run: ReproRun) -> Sample:
        return run.sample or self.sample

    def calls_per_question(self, run: ReproRun) -> float:
        return self.llm_calls_per_question if run.llm_calls_per_question is None else run.llm_calls_per_question

    def check(self) -> "ReproSpec":
        """The rules a schema cannot say: names, the sample defined once, rows that name runs and columns."""
        where = self.path or self.table
        check_run_name(self.table, f"{where}: table")
        names = [r.name for r in self.runs]
        for name in names:
            check_run_name(name, f"{where}: run name")
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ConfigError(f"{where}: two runs are named {dup[0]!r}: give each run its own name.")
        for what, params in [("defaults", self.defaults)] + [(f"run {r.name!r}", r.parameters) for r in self.runs]:
            bad = [k for k in SAMPLE_KEYS if k in params] + (["run_name"] if "run_name" in params else [])
            if bad:
                raise ConfigError(f"{where}, {what}: {bad[0]!r} is set by the reproduction ("
                                  f"{'its `sample:`' if bad[0] != 'run_name' else 'the run name'}), not per run: "
                                  f"remove it here.")
        for s in [self.sample] + [r.sample for r in self.runs if r.sample]:
            if s.take and s.limit and s.take > s.limit:
                raise ConfigError(f"{where}: sample take={s.take} is more than its limit={s.limit}: the cut keeps the "
                                  f"first `take` of the seeded `limit`.")
        for row in self.rows:
            self.run(row.run)
            for column in row.cells:
                if column not in self.columns:
                    raise ConfigError(f"{where}, row {row.label!r}: cell {column!r} is not a column;"
                                      f"{closest(column, self.columns)} columns: {', '.join(self.columns)}.")
        return self


def repro_dir() -> Path:
    """configs/reproduce/: one file per result table."""
    return settings.configs_dir() / "reproduce"


def list_tables() -> list[str]:
    return sorted(p.stem for p in repro_dir().glob("*.yaml"))


def load_spec(table: str | Path) -> ReproSpec:
    """The reproduction config of `table` (its name in configs/reproduce/, or a path), checked."""
    import yaml

    path = Path(table)
    if not (path.suffix in (".yaml", ".yml") and path.exists()):
        path = repro_dir() / f"{table}.yaml"
    if not path.exists():
        names = list_tables()
        raise ConfigError(f"no reproduction config {str(table)!r};{closest(str(table), names)} tables in "
                          f"{repro_dir()}: {', '.join(names) or 'none'} (`kgrag repro --list`).")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path.name} is not valid YAML ({str(exc).splitlines()[0]}): fix that line.") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path.name} must be a mapping with keys {', '.join(ReproSpec.model_fields)}.")
    check_yaml_size(raw, path.name)
    try:
        spec = ReproSpec.model_validate({**raw, "path": path.name})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(map(str, err["loc"]))
        if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
            raise ConfigError(f"{path.name}: unknown key {loc!r};{closest(loc, ReproSpec.model_fields)} valid top-level "
                              f"keys: {', '.join(k for k in ReproSpec.model_fields if k != 'path')}.") from None
        if err["type"] == "extra_forbidden":
            raise ConfigError(f"{path.name}: unknown key at {loc!r} (a label holding ', ' needs quotes in a "
                              f"{{...}} mapping).") from None
        raise ConfigError(f"{path.name}: {loc}: {err['msg']} (got {shown(err.get('input'))}).") from None
    if spec.table != path.stem:
        raise ConfigError(f"{path.name}: table {spec.table!r} differs from the file's name: name the file "
                          f"{spec.table}.yaml, or set table: {path.stem}.")
    return spec.check()
