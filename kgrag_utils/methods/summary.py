"""One road from records to scores, the same for every method (the protocol owns scoring).

A method describes its records once, in its own `summary.py` of pure functions, gathered in a
`SummaryHooks`; everything else is defined here, once:

* `record_scores(record) -> {variant: {metric: value}}`: the method's hook for one record's metric
  values (a record carries them: `Method.run` stores them under `scores`). A value of nan means the
  example has no gold for that metric and is left out of its mean;
* `summarize(records, method, hooks)`: the run's summary. Shared keys, one definition each:
  `n` (records), `n_failed` (records whose `failed` is true: an example that raised, or a stage that
  gave no usable output), `n_errors` (records of examples that raised, `base.is_error_record`),
  `n_answerable` (records whose `answerable` is true), `scores` (per variant and metric, the mean over
  ALL records: a record without the value, e.g. one that raised, counts as 0), `scores_answerable`
  (the same over the answerable records, for methods whose hooks ask for it), `stage_errors` (the
  method's `{stage: examples lost there}`, plus "raised an error"), `cost` (per variant: prompt
  tokens and seconds per question, share served from the cache; `scoring.cost`) and `rows` (the
  score rows below), `topic_linking` (with `topics="linked"`: n and the shares found / exact). The
  method's `extras(records)` adds its own keys (parse rates, timings, ...);
* `RunSummary`: the typed summary (pydantic) that a run stores in its record when it finishes;
* `score_rows(summary, run)`: the long-form rows (`scoring.SCORE_COLUMNS`) of a stored summary and its
  run record, read by the report and the grid summary without calling any method's code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from ..errors import ConfigError
from .isolation import is_error_record
from .scoring import SCORE_COLUMNS, mean, num, run_fields, score_row

__all__ = ["has_gold", "is_scored", "mark_unscored", "SummaryHooks", "RunSummary", "ScoreRow", "Cost", "summarize", "score_rows", "record_scores", "record_value",
           "answerable", "is_answerable", "count_failed", "count_errors", "SHARED_KEYS"]

Scores = dict[str, dict[str, float]]


# ----------------------------------------------------------------------------- what a method describes
@dataclass(frozen=True)
class SummaryHooks:
    """A method's side of summarizing: pure functions of its records (see the module docstring).

    `uses_llm(variant, records)`: whether a variant's answer came from an LLM (its rows say llm=none
    otherwise). `answerable_rows`: whether the score rows repeat each variant on the answerable subset
    (variant "<v>, answerable"). `definitions`: a metric definition that differs from
    `metrics.DEFINITIONS`, by (variant, metric).
    """

    record_scores: Callable[[Mapping], Mapping[str, Mapping[str, float]]]
    cost: Callable[[Sequence[Mapping]], dict] = lambda records: {}
    stage_errors: Callable[[Sequence[Mapping]], dict] = lambda records: {}
    extras: Callable[[Sequence[Mapping]], dict] = lambda records: {}
    uses_llm: Callable[[str, Sequence[Mapping]], bool] = lambda variant, records: True
    answerable_rows: bool = False
    definitions: Mapping[tuple[str, str], str] = field(default_factory=dict)


# ----------------------------------------------------------------------------- the typed summary
class Cost(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt_tokens_per_q: float | None = None
    seconds_per_q: float | None = None
    cached_share: float | None = None


class ScoreRow(BaseModel):
    """One stored score row: a (variant, metric) of one run; the run's own fields are added when read."""

    model_config = ConfigDict(extra="forbid")
    method: str
    variant: str
    n: int
    metric: str
    definition: str
    value: float
    prompt_tokens_per_q: float | None = None
    seconds_per_q: float | None = None
    cached_share: float | None = None
    uses_llm: bool = True


class RunSummary(BaseModel):
    """The shared part of every run summary; a method's extras ride along as further keys."""

    model_config = ConfigDict(extra="allow")
    method: str
    n: int
    n_failed: int
    n_errors: int
    n_answerable: int
    n_scored: int = 0  # records with gold (the rest are "not scored": questions of your own without answers)
    scores: dict[str, dict[str, float | None]]
    scores_answerable: dict[str, dict[str, float | None]] = {}
    stage_errors: dict[str, float]
    cost: dict[str, Cost]
    rows: list[ScoreRow]
    topic_linking: dict[str, float] | None = None  # topics="linked": n questions, shares found / exact


SHARED_KEYS = tuple(RunSummary.model_fields)


# ----------------------------------------------------------------------------- one definition each
LINKING_VARIANT = "topic linking"  # the score row of topics="linked" runs


def topic_linking(records: Sequence[Mapping]) -> dict | None:
    """Over the records with a `topic_link` (topics="linked"): how many, and the shares whose gold topics the linker
    `found` (all among the linked) and got `exact` (the same set); None when no record has one."""
    links = [r["topic_link"] for r in records if isinstance(r.get("topic_link"), Mapping)]
    if not links:
        return None
    return {"n": len(links), "found": mean([float(bool(x.get("found"))) for x in links]),
            "exact": mean([float(bool(x.get("exact"))) for x in links])}


def record_value(record: Mapping, key: str, failed_key: str | None = "failed") -> float:
    """A record's value of one metric as it enters a mean over all records: nan (no gold) stays nan and is
    left out; a failed record (`record[failed_key]`), a missing key or None counts as 0 (`metrics.summarize`)."""
    value = record.get(key)
    if _is_nan(value):
        return math.nan
    if (failed_key and record.get(failed_key)) or value is None:
        return 0.0
    return float(value)


def is_answerable(record: Mapping) -> bool:
    """An answerable example: its `answerable` is true (the KG holds a gold answer on its chain)."""
    return bool(record.get("answerable"))


def answerable(records: Sequence[Mapping]) -> list[Mapping]:
    """The answerable subset of records (`is_answerable`)."""
    return [r for r in records if is_answerable(r)]


def count_failed(records: Sequence[Mapping]) -> int:
    """Examples that failed in any way (an example that raised is failed too)."""
    return sum(1 for r in records if r.get("failed"))


def count_errors(records: Sequence[Mapping]) -> int:
    """Examples that raised (their record holds only the error)."""
    return sum(1 for r in records if is_error_record(r))


def _is_nan(value: Any) -> bool:
    try:
        return value is not None and not isinstance(value, bool) and math.isnan(value)
    except TypeError:
        return False


def has_gold(item: Any) -> bool:
    """Whether an item can be scored: a question with gold answers (or gold passages); items of other kinds
    (stories) always are. A question of your own without answers runs, and is "not scored"."""
    if hasattr(item, "answers") and not list(getattr(item, "answers") or []):
        return bool(getattr(item, "supporting", None))
    return True


def is_scored(record: Mapping) -> bool:
    """False for the record of an item without gold (`mark_unscored`): left out of every mean and stage count."""
    return record.get("scored", True) is not False


def mark_unscored(record: dict) -> None:
    """An item without gold: `scored` False, and no stage blamed (nothing to be wrong against)."""
    record["scored"] = False
    for key in ("failed_stage", "failed_stage_lenient"):
        if key in record:
            record[key] = None


def record_scores(record: Mapping, hooks: SummaryHooks) -> dict[str, dict[str, float | None]]:
    """One record's per-variant metric values as a record carries them: the method's `record_scores`, a
    record that raised has none (it counts 0 everywhere), "no gold" (nan) is written None, as JSON has it, and a
    record not scored (no gold at all) has every value None."""
    if is_error_record(record):
        return {}
    if not is_scored(record):
        return {str(v): {str(m): None for m in metrics} for v, metrics in hooks.record_scores(record).items()}
    return {str(v): {str(m): (None if _is_nan(x) or x is None else float(x)) for m, x in metrics.items()}
            for v, metrics in hooks.record_scores(record).items()}


def _per_record(records: Sequence[Mapping], hooks: SummaryHooks) -> list[Mapping]:
    """The values each record carries (`scores`), or, for a record written without them, its hook's."""
    return [r["scores"] if isinstance(r.get("scores"), Mapping) else record_scores(r, hooks) for r in records]


def _means(per_record: Sequence[Mapping]) -> Scores:
    """Per variant and metric (first-seen order): the mean over ALL these records; a record without the
    value counts 0, a None value (no gold) is left out; nan when nothing is left."""
    layout: dict[str, list[str]] = {}
    for scores in per_record:
        for variant, metrics in scores.items():
            names = layout.setdefault(variant, [])
            names.extend(m for m in metrics if m not in names)
    out: Scores = {}
    for variant, names in layout.items():
        out[variant] = {}
        for m in names:
            vals = [(s.get(variant) or {}).get(m, 0.0) for s in per_record]
            out[variant][m] = mean((float(v) for v in vals if v is not None), empty=math.nan)  # bools count
    return out


def summarize(records: Sequence[Mapping], method: str, hooks: SummaryHooks) -> dict:
    """The run summary (see the module docstring): the shared keys, the method's extras, the score rows."""
    records = list(records)
    scored = [r for r in records if is_scored(r)]  # items without gold: run, shown, never counted wrong
    per_record = _per_record(scored, hooks)
    n_errors = count_errors(records)
    ans = [s for s, r in zip(per_record, scored) if is_answerable(r)]
    stages = {str(k): float(v) for k, v in (hooks.stage_errors(scored) or {}).items()}
    if count_errors(scored):
        stages["raised an error"] = float(count_errors(scored))
    out: dict = {"method": method, "n": len(records), "n_failed": count_failed(records), "n_errors": n_errors,
                 "n_answerable": len(ans), "n_scored": len(scored), "scores": _means(per_record),
                 "scores_answerable": _means(ans) if hooks.answerable_rows and ans else {},
                 "stage_errors": stages, "cost": hooks.cost(records) if records else {},
                 "topic_linking": topic_linking(records)}
    extras = dict(hooks.extras(records) or {}) if records else {}
    clash = sorted(set(extras) & set(SHARED_KEYS))
    if clash:
        raise ConfigError(f"{method}'s summary extras {clash} would replace the protocol's shared keys; rename them.")
    out["rows"] = _rows(out, method, hooks, records)
    out.update(extras)
    RunSummary.model_validate(out)  # the shared keys have their types (a method's extras are its own)
    return out


def _rows(s: Mapping, method: str, hooks: SummaryHooks, records: Sequence[Mapping]) -> list[dict]:
    rows = []
    for variant, metrics in s["scores"].items():
        uses_llm = bool(hooks.uses_llm(variant, records))
        cost = (s["cost"] or {}).get(variant)
        subsets = [(variant, s["n_scored"], metrics)]
        if variant in s["scores_answerable"]:
            subsets.append((f"{variant}, answerable", s["n_answerable"], s["scores_answerable"][variant]))
        for name, n, values in subsets:
            for metric, value in values.items():
                row = score_row(method, name, n, metric, value, cost, None, uses_llm,
                                hooks.definitions.get((variant, metric)))
                if row is not None:
                    rows.append({k: row[k] for k in ScoreRow.model_fields if k in row} | {"uses_llm": uses_llm})
    link = s.get("topic_linking")
    if link:  # topics="linked": the linker's share, a row like any other (no LLM)
        row = score_row(method, LINKING_VARIANT, link["n"], "accuracy", link["found"], None, None, False,
                        "topic linking: share of questions whose gold topic entities the linker found")
        rows.append({k: row[k] for k in ScoreRow.model_fields if k in row} | {"uses_llm": False})
    return rows


# ----------------------------------------------------------------------------- reading stored rows
def score_rows(summary: Mapping | None, run: Mapping | None = None) -> list[dict]:
    """The long-form score rows (`SCORE_COLUMNS`) of a stored summary, with its run's dataset, split, LLM,
    run name, group and update time (`scoring.run_fields`); [] for a summary without stored rows."""
    out = []
    for stored in (summary or {}).get("rows") or []:
        row = {**stored, **run_fields(run, bool(stored.get("uses_llm", True)))}
        row["n"] = int(num(row.get("n")) or 0)
        out.append({c: row.get(c) for c in SCORE_COLUMNS})
    return out
