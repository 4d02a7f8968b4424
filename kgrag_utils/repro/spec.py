"""A reproduction config (`configs/reproduce/<table>.yaml`): one result table as notebook runs and table cells.

    table: headline                      # the file's stem; runs/repro-<table>/ holds the executed notebooks
    title: "..."                         # what the table shows
    published_in: README.md#...          # where the table is published
    sample: {limit: 100, take: 50, seed: 0}   # the sample, defined ONCE: the first `take` of the seeded `limit`
    llm_calls_per_question: 2            # for the cost estimate (`kgrag repro --list`); a run may say otherwise
    defaults: {llm_preset: ...}          # parameters of every run (only where its notebook has them)
    timeout: 3600                        # seconds per cell, at least (longer where a run needs it: repro.plan.cell_timeout)
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

An analysis of the runs' questions (`kind`, read from each run's per-question outcomes, `repro.analysis`):

    runs_from: demos-simgrag              # the runs (and sample, defaults) of another config, by name: the same runs
    kind: paired                          # two runs on the same questions, a row per pair
    measure: {variant: pattern=llm, metric: hits@1}   # the per-question score compared (a stored score row's)
    measure_name: strict Hits@1
    sides: [fixed 8, nearest 8]           # what A and B are, for the column names
    stages: [pattern]                     # wrong at these stages (the records' failed_stage), each side
    pairs: [{label: 1-hop, a: repro-demos-1hop-1.5b-fixed, b: repro-demos-1hop-1.5b-nearest}]

    kind: by_group                        # one run's questions by a per-question field, a row per value
    group: qtype                          # one of analysis.GROUP_FIELDS
    rows: [{label: 1-hop, run: ...}]      # (no cells)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from .. import settings
from ..errors import ConfigError, shown
from ..records import check_run_name
from ..schema import DEFAULT_TIMEOUT, check_yaml_size, closest

__all__ = ["Sample", "ReproRun", "Cell", "Published", "Row", "Pair", "ReproSpec", "KINDS", "GROUP_FIELDS", "SAMPLE_KEYS", "repro_dir", "list_tables", "load_spec"]

#: the parameters that define a sample: set in `sample:` only
SAMPLE_KEYS = ("limit", "take", "seed")
#: scores: a row per run, cells from stored score rows; paired, by_group: analyses of the runs' questions
KINDS = ("scores", "paired", "by_group")
#: the per-question fields a table may group by (a published record keeps them: `analysis.OUTCOME_FIELDS`)
GROUP_FIELDS = ("qtype", "hops", "answerable", "demo_own_type")


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
    cells: dict[str, Cell | Published] = Field(default_factory=dict)  # kind by_group: none


class Pair(_Strict):
    """kind paired: runs `a` and `b` compared on the questions both recorded."""

    label: StrictStr
    a: StrictStr
    b: StrictStr


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
    runs_from: StrictStr = ""  # another config whose runs, sample and defaults this table reads (set by load_spec)
    kind: Literal["scores", "paired", "by_group"] = "scores"
    columns: list[StrictStr] = Field(default_factory=list)
    rows: list[Row] = Field(default_factory=list)
    pairs: list[Pair] = Field(default_factory=list)
    measure: Cell | None = None  # paired, by_group: the per-question score
    measure_name: StrictStr = "score"
    sides: list[StrictStr] = Field(default_factory=lambda: ["A", "B"], min_length=2, max_length=2)
    stages: list[StrictStr] = Field(default_factory=list)  # paired, by_group: wrong at these stages (failed_stage)
    group: StrictStr = ""  # by_group: the per-question field
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

    def entries(self) -> list[tuple[str, list[str]]]:
        """(label, the config's run names) of each table row: a row's run, or a pair's two."""
        return [(r.label, [r.run]) for r in self.rows] + [(p.label, [p.a, p.b]) for p in self.pairs]

    def _check_kind(self, where: str) -> None:
        need = {"scores": ("columns", "rows"), "paired": ("pairs", "measure"),
                "by_group": ("rows", "measure", "group")}[self.kind]
        missing = [k for k in need if not getattr(self, k)]
        if missing:
            raise ConfigError(f"{where}: kind {self.kind} needs {', '.join(missing)}: add {missing[0]}: (the module "
                              f"docstring of kgrag_utils/repro/spec.py shows each kind).")
        if self.pairs and self.kind != "paired":
            raise ConfigError(f"{where}: pairs are rows of kind paired (this table is kind {self.kind}): set kind: paired.")
        if self.kind == "by_group" and self.group not in GROUP_FIELDS:
            raise ConfigError(f"{where}: group {self.group!r} is not a per-question field a record keeps;"
                              f"{closest(self.group, GROUP_FIELDS)} fields: {', '.join(GROUP_FIELDS)}.")
        if self.kind != "scores" and any(r.cells for r in self.rows):
            raise ConfigError(f"{where}: rows of kind {self.kind} have no cells (the analysis makes the columns): "
                              f"remove them.")

    def check(self) -> "ReproSpec":
        """The rules a schema cannot say: names, the sample defined once, rows that name runs and columns."""
        where = self.path or self.table
        self._check_kind(where)
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
        for _, names in self.entries():
            for name in names:
                self.run(name)
        for row in self.rows:
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
    raw = _with_runs_from(raw, path)
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
    if spec.runs_from:  # only the runs this table's rows name
        used = {name for _, names in spec.entries() for name in names}
        spec = spec.model_copy(update={"runs": [r for r in spec.runs if r.name in used] or spec.runs})
    return spec.check()


#: what a table with `runs_from` reads from the other config (and so does not set itself)
_FROM = ("sample", "defaults", "runs", "llm_calls_per_question", "timeout")


def _with_runs_from(raw: dict, path: Path) -> dict:
    """The config with the runs, sample and defaults of the config it names in `runs_from` (one level)."""
    name = raw.get("runs_from")
    if not name:
        return raw
    own = [k for k in _FROM if k in raw]
    if own:
        raise ConfigError(f"{path.name}: {own[0]!r} comes from runs_from ({name}): remove it here, or drop runs_from.")
    base = load_spec(str(name))
    if base.runs_from:
        raise ConfigError(f"{path.name}: runs_from {name!r} itself reads its runs from {base.runs_from!r}: name "
                          f"{base.runs_from!r} instead.")
    return {**raw, **base.model_dump(include=set(_FROM))}
