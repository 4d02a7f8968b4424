"""A reproduction's analyses of its runs question by question (`kind: paired` and `kind: by_group`, `spec`).

They read each run's per-question outcomes: `results/<run>/examples.jsonl`, or the copy a published table keeps
beside the run's record (`docs/records/<run>/outcomes.jsonl`: each question's `OUTCOME_FIELDS`). A question's score
is the value its record carries for the table's `measure` (a stored score row's variant and metric: `scores`, as
`methods.summary` averages it); a question that raised counts 0, one without gold (None) is left out.

- paired: runs A and B on the questions both recorded: each side's mean, B - A, the discordant questions (right only
  with B / only with A), the exact two-sided sign test of those (McNemar's exact test: binomial, p = 1/2), and the
  questions wrong at each of `stages` (the records' `failed_stage`) on each side;
- by_group: one run's questions by a per-question field (`spec.GROUP_FIELDS`, e.g. MetaQA's `qtype`), most
  frequent first: n, right, the mean, wrong at each of `stages`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..errors import KgragError
from ..records import EXAMPLES_FILE, RUN_FILE, read_examples, read_run
from .spec import GROUP_FIELDS, Cell, ReproSpec

__all__ = ["OUTCOMES_FILE", "OUTCOME_FIELDS", "run_status", "read_outcomes", "write_outcomes", "score",
           "sign_test_p", "Paired", "paired", "by_group", "table"]

#: the per-question outcomes a published record keeps beside its run.json
OUTCOMES_FILE = "outcomes.jsonl"
OUTCOME_FIELDS = ("id", "scores", "failed_stage", *GROUP_FIELDS)


def run_status(run_dir: Path) -> str:
    """A run folder's status: its record's (ok, failed, running, ...), missing without one, unreadable if damaged."""
    if not (run_dir / RUN_FILE).exists():
        return "missing"
    try:
        return str(read_run(run_dir).get("status"))
    except KgragError:
        return "unreadable"


def read_outcomes(run_dir: Path) -> list[dict] | None:
    """Each question's `OUTCOME_FIELDS`, from the run's examples.jsonl, else its published outcomes.jsonl; None
    without either."""
    for name in (EXAMPLES_FILE, OUTCOMES_FILE):
        if (run_dir / name).exists():
            rows, _ = read_examples(run_dir / name)
            return [{k: r[k] for k in OUTCOME_FIELDS if k in r} for r in rows]
    return None


def write_outcomes(run_dir: Path, into: Path) -> Path:
    """`into`/outcomes.jsonl: the run's per-question outcomes (what a published analysis is read from)."""
    rows = read_outcomes(run_dir) or []
    into.mkdir(parents=True, exist_ok=True)
    (into / OUTCOMES_FILE).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    return into / OUTCOMES_FILE


def score(outcome: Mapping, measure: Cell) -> float | None:
    """A question's value of the measure: its record's `scores[variant][metric]`; 0 for a question that raised (no
    scores) or lacks the metric; None (no gold) stays None."""
    scores = outcome.get("scores")
    if not isinstance(scores, Mapping):
        return 0.0
    value = (scores.get(measure.variant) or {}).get(measure.metric, 0.0)
    return None if value is None else float(value)


def sign_test_p(b: int, c: int) -> float:
    """The exact two-sided sign test of `b` against `c` discordant questions (1.0 when there are none)."""
    from scipy.stats import binomtest

    return 1.0 if b + c == 0 else float(binomtest(b, b + c, 0.5).pvalue)


@dataclass
class Paired:
    n: int
    mean_a: float
    mean_b: float
    only_a: int  # right only with A
    only_b: int
    p: float
    wrong_at: dict[str, tuple[int, int]]  # stage -> (A, B)


def _right(value: float | None) -> bool:
    return value is not None and value >= 1.0


def paired(a: Sequence[Mapping], b: Sequence[Mapping], measure: Cell, stages: Sequence[str] = ()) -> Paired | None:
    """Runs A and B on the questions both recorded with a score (None when they share none)."""
    by_id = {o.get("id"): o for o in a}
    both = [(by_id[o.get("id")], o) for o in b if o.get("id") in by_id]
    both = [(x, y) for x, y in both if score(x, measure) is not None and score(y, measure) is not None]
    if not both:
        return None
    va = [score(x, measure) for x, _ in both]
    vb = [score(y, measure) for _, y in both]
    only_a = sum(_right(x) and not _right(y) for x, y in zip(va, vb))
    only_b = sum(_right(y) and not _right(x) for x, y in zip(va, vb))
    wrong = {s: (sum(x.get("failed_stage") == s for x, _ in both), sum(y.get("failed_stage") == s for _, y in both))
             for s in stages}
    n = len(both)
    return Paired(n, sum(va) / n, sum(vb) / n, only_a, only_b, sign_test_p(only_b, only_a), wrong)


def by_group(outcomes: Sequence[Mapping], measure: Cell, group: str, stages: Sequence[str] = ()) -> list[dict]:
    """One row per value of `group` (most questions first, then by name): n, right, mean, wrong at each stage."""
    groups: dict[str, list[Mapping]] = {}
    for o in outcomes:
        if score(o, measure) is not None:
            groups.setdefault(str(o.get(group)), []).append(o)
    rows = []
    for value, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        scores = [score(o, measure) for o in members]
        rows.append({"group": value, "n": len(members), "right": sum(_right(v) for v in scores),
                     "mean": sum(scores) / len(members),
                     "wrong_at": {s: sum(o.get("failed_stage") == s for o in members) for s in stages}})
    return rows


def _pct(value: float, spec: ReproSpec, signed: bool = False) -> str:
    scaled = value * (100.0 if spec.percent else 1.0)
    return f"{scaled:+.{spec.digits}f}" if signed else f"{scaled:.{spec.digits}f}"


def _head(spec: ReproSpec) -> list[str]:
    m, (a, b) = spec.measure_name, spec.sides
    if spec.kind == "paired":
        return ["row", "same questions", f"{a}: {m}", f"{b}: {m}", f"{b} - {a}", f"right only with {b} / only with {a}",
                "exact sign test p", *(f"wrong at {s}: {a} / {b}" for s in spec.stages)]
    return ["row", spec.group, "n", "right", m] + ([f"wrong at {' / '.join(spec.stages)}"] if spec.stages else [])


def table(spec: ReproSpec, names: Mapping[str, str], records: Path,
          where: Callable[[list[tuple[str, str]]], str]) -> tuple[list[str], list[list[str]]]:
    """(head, body rows) of an analysis table; `names`: the config's run name -> the plan's; `where(runs)`: the last
    cell of a row from its runs' (name, status)."""
    body = []
    for label, runs in spec.entries():
        folders = [records / names[r] for r in runs]
        status = [(names[r], run_status(f)) for r, f in zip(runs, folders)]
        outs = [read_outcomes(f) if s == "ok" else None for f, (_, s) in zip(folders, status)]
        status = [(n, s if s != "ok" or o is not None else "no outcomes") for (n, s), o in zip(status, outs)]
        width = len(_head(spec)) - 1
        if any(s != "ok" for _, s in status):
            body.append([label, *(["not run"] * width), where(status)])
            continue
        if spec.kind == "paired":
            r = paired(outs[0], outs[1], spec.measure, spec.stages)
            cells = ["0", *(["—"] * (width - 1))] if r is None else [
                str(r.n), _pct(r.mean_a, spec), _pct(r.mean_b, spec), _pct(r.mean_b - r.mean_a, spec, signed=True),
                f"{r.only_b} / {r.only_a}", f"{r.p:.2g}", *(f"{r.wrong_at[s][0]} / {r.wrong_at[s][1]}" for s in spec.stages)]
            body.append([label, *cells, where(status)])
            continue
        for g in by_group(outs[0], spec.measure, spec.group, spec.stages):
            body.append([label, g["group"].replace("_", " "), str(g["n"]), str(g["right"]), _pct(g["mean"], spec),
                         *([" / ".join(str(g["wrong_at"][s]) for s in spec.stages)] if spec.stages else []),
                         where(status)])
    return _head(spec), body
