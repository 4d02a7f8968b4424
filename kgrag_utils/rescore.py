"""Score rows for finished runs whose summaries were written before they held them (release 0.2.0).

The report and the grid summary read the score rows a run's summary stores and call no method's code.
A run recorded by an older release has none; `kgrag rescore` gives it its rows once, from its own
per-example records (`<method>.summarize(examples)`), under the run folder's lock:

* the keys the stored summary already has keep their values; the protocol's new keys are added
  (`method`, `n_answerable`, `scores`, `scores_answerable`, `rows`, and "raised an error" in `stage_errors`);
* a run whose records do not give back the values its summary stores (a record edited or cut, or a
  summary the notebook changed) is left alone and named, never half-rewritten.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from . import settings
from .errors import KgragError
from .records import EXAMPLES_FILE, RUN_FILE, RunLock, atomic_write_json, read_examples, read_run, to_jsonable

__all__ = ["rescore", "rescore_run"]

#: the keys the protocol's summary gained in 0.2.0 (added to an older summary)
ADDED = ("method", "n_answerable", "scores", "scores_answerable", "rows")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b or (a is None and isinstance(b, float) and math.isnan(b))


def rescore_run(run_dir: Path | str, write: bool = True) -> str:
    """One run: "rescored", "has rows", "skipped: <why>" or "differs: <keys>" (nothing written then)."""
    from .methods.registry import entries

    run_dir = Path(run_dir)
    rec = read_run(run_dir)
    spec = entries().get(str(rec.get("method")))
    if rec.get("status") != "ok" or spec is None or spec.kind == "report":
        return f"skipped: status {rec.get('status')!r}, method {rec.get('method')!r}"
    summary = dict(rec.get("summary") or {})
    if summary.get("rows"):
        return "has rows"
    examples = read_examples(run_dir / EXAMPLES_FILE)[0] if (run_dir / EXAMPLES_FILE).exists() else []
    if not examples:
        return "skipped: no examples on disk"
    fresh = to_jsonable(spec.summarize(examples))
    stale = sorted(k for k in summary if k in fresh and k != "stage_errors" and not _same(summary[k], fresh[k]))
    if stale:
        return f"differs: {', '.join(stale)}"
    new = {**summary, **{k: fresh[k] for k in ADDED}, "stage_errors": fresh["stage_errors"]}
    if write:
        with RunLock(run_dir):
            atomic_write_json(run_dir / RUN_FILE, {**read_run(run_dir), "summary": new})
    return "rescored"


def rescore(root: Path | str | None = None, write: bool = True) -> dict[str, str]:
    """Every run under the results folder (`rescore_run`); run name -> what happened."""
    root = Path(root) if root is not None else settings.results_dir()
    out = {}
    for run_file in sorted(root.glob(f"*/{RUN_FILE}")):
        try:
            out[run_file.parent.name] = rescore_run(run_file.parent, write=write)
        except KgragError as exc:
            out[run_file.parent.name] = f"skipped: {exc}"
    return out
