"""The long-form score row and its pieces, shared by the protocol's summary (`methods/summary.py`) and the report.

`SCORE_COLUMNS`: one row per (run, variant, metric): method, variant, dataset, split, n, llm, metric, the
metric's definition (`kgrag_utils.metrics.DEFINITIONS`), value, prompt tokens and seconds per question,
cached share, run name, group (the shards of one job) and update time. `score_row` builds one, `run_fields`
the run's own fields, `cost` the per-question cost from per-example values, `headline` the (strict,
lenient) pair a grid summary shows (`Headline`, a method's class attribute).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..metrics import definition

__all__ = ["SCORE_COLUMNS", "Headline", "score_row", "run_fields", "mean", "num", "cost", "headline", "group_of"]

SCORE_COLUMNS = ["method", "variant", "dataset", "split", "n", "llm", "metric", "definition", "value",
                 "prompt_tokens_per_q", "seconds_per_q", "cached_share", "run_name", "group", "updated"]

_SHARD = re.compile(r"-shard\d+of\d+$")


def num(x: Any) -> float | None:
    """A finite number as float, else None (bools, None, nan, strings)."""
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)) and math.isfinite(float(x)):
        return float(x)
    return None


def mean(values: Iterable[Any], empty: float | None = None) -> float | None:
    """Mean of the finite numbers among values (`empty` when there are none: None, or e.g. nan for a table)."""
    vals = [v for v in (num(x) for x in values) if v is not None]
    return sum(vals) / len(vals) if vals else empty


def cost(tokens: Iterable[Any] = (), seconds: Iterable[Any] = (), cached: Iterable[Any] = ()) -> dict:
    """{prompt_tokens_per_q, seconds_per_q, cached_share} from per-example values."""
    cached = [float(bool(c)) for c in cached if c is not None]
    return {"prompt_tokens_per_q": mean(tokens), "seconds_per_q": mean(seconds),
            "cached_share": (sum(cached) / len(cached)) if cached else None}


def group_of(run_name: str) -> str:
    """The job a shard belongs to: the run name without `-shard<i>of<n>`."""
    return _SHARD.sub("", str(run_name or ""))


def run_fields(run: Mapping | None, uses_llm: bool = True) -> dict:
    """dataset, split, llm, run_name, group, updated of a run record (empty strings without one)."""
    run = run or {}
    params = run.get("params") or {}
    llm = run.get("llm") if isinstance(run.get("llm"), Mapping) else {}
    preset = str(llm.get("preset") or params.get("llm_preset") or "")
    name = str(run.get("run_name") or "")
    return {"dataset": params.get("dataset", "?" if run else ""), "split": params.get("split", ""),
            "llm": preset if uses_llm else "none", "run_name": name, "group": group_of(name),
            "updated": str(run.get("updated") or "")}


def score_row(method: str, variant: str, n: Any, metric: str, value: Any, cost_: Mapping | None = None,
              run: Mapping | None = None, uses_llm: bool = True, definition_: str | None = None) -> dict | None:
    """One long-form row (None when the value is not a finite number)."""
    v = num(value)
    if v is None:
        return None
    cost_ = cost_ or {}
    return {"method": method, "variant": variant, **run_fields(run, uses_llm), "n": int(num(n) or 0),
            "metric": metric, "definition": definition_ or definition(metric), "value": v,
            "prompt_tokens_per_q": num(cost_.get("prompt_tokens_per_q")),
            "seconds_per_q": num(cost_.get("seconds_per_q")), "cached_share": num(cost_.get("cached_share"))}


def rows(items: Iterable[dict | None]) -> list[dict]:
    """The rows that exist, with every column (missing ones None), in SCORE_COLUMNS order."""
    return [{c: r.get(c) for c in SCORE_COLUMNS} for r in items if r is not None]


@dataclass(frozen=True)
class Headline:
    """What the grid summary shows for a run: the first (strict, lenient) metric pair present in its
    scores, read from the row of `variant` (or, when the run has no such row, its first row)."""

    pairs: tuple[tuple[str, str | None], ...]
    variant: str | None = None


def headline(score_rows: Sequence[Mapping], pairs: Sequence[tuple[str, str | None]],
             variant: str | None = None) -> dict:
    """The (strict, lenient) pair a grid summary shows: the first pair whose strict metric has a row;
    rows of `variant` first (else the run's first rows). Returns metric, strict, lenient, n, prompt tokens/q."""
    for strict, lenient in pairs:
        cands = [r for r in score_rows if r.get("metric") == strict]
        if not cands:
            continue
        preferred = [r for r in cands if r.get("variant") == variant] if variant else []
        row = (preferred or cands)[0]
        lenient_row = next((r for r in score_rows if r.get("metric") == lenient and r.get("variant") == row.get("variant")),
                           None) if lenient else None
        return {"metric": f"{strict} / {lenient}" if lenient else strict, "variant": row.get("variant"),
                "strict": row.get("value"), "lenient": lenient_row.get("value") if lenient_row else None,
                "n": row.get("n"), "prompt_tokens_per_q": row.get("prompt_tokens_per_q"), "llm": row.get("llm")}
    return {"metric": "", "variant": None, "strict": None, "lenient": None, "n": None, "prompt_tokens_per_q": None,
            "llm": None}
