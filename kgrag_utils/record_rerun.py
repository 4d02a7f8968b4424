"""`kgrag reproduce RECORD [--limit N]`: re-run a run record's notebook on the first N questions of its sample and
compare each question's scores with the recorded ones.

A run record (`results/<run>/` or a published `docs/records/<run>/`) holds the notebook (`runner.notebook`), every
parameter (`params`) and, per question, the scores (`examples.jsonl`, or the published `outcomes.jsonl` that
`kgrag repro TABLE --write` keeps beside `run.json`). The re-run executes the same notebook with the same
parameters and `take=N` (the first N of the same seeded sample) in a fresh results folder, so nothing resumes
from the record; the LLM reply cache is kept, so a reply computed before is replayed and costs nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from . import settings
from .errors import ConfigError
from .records import EXECUTION_PARAMS, RUN_FILE, read_run
from .reproduce import Comparison, _same


def is_run_record(path: Path | str) -> bool:
    """A run folder, or its run.json."""
    p = Path(path)
    try:
        return (p.is_dir() and (p / RUN_FILE).is_file()) or (p.name == RUN_FILE and p.is_file())
    except OSError:  # a name the file system refuses (too long): not a record; the result-file reader says why
        return False


def _record_dir(path: Path | str) -> Path:
    p = Path(path)
    p = p if p.is_absolute() or p.exists() else settings.repo_root() / p
    return p.parent if p.name == RUN_FILE else p


def recorded_scores(run_dir: Path) -> dict[str, Any]:
    """question id -> its recorded `scores` ({variant: {metric: value}}; None for a question that raised)."""
    from .repro.analysis import read_outcomes

    rows = read_outcomes(run_dir)
    if not rows:
        raise ConfigError(f"{run_dir} keeps no per-question outcomes (examples.jsonl or outcomes.jsonl): publish the "
                          f"run with `kgrag repro TABLE --write`, which keeps them, or give its results/ folder.")
    return {str(r["id"]): r.get("scores") for r in rows if "id" in r}


def rerun_parameters(rec: dict, limit: int) -> dict:
    """The record's parameters with the re-run's sample: the first `limit` of the same seeded sample."""
    params = {k: v for k, v in (rec.get("params") or {}).items() if k not in EXECUTION_PARAMS}
    take = int(params.get("take") or 0)
    params["take"] = min(take, limit) if take else limit
    return params


@contextmanager
def _fresh_folders(work: Path) -> Iterator[None]:
    """Results, runs and figures under `work` for this process and the kernels it starts (restored afterwards)."""
    names = {"KGRAG_RESULTS_DIR": "results", "KGRAG_RUNS_DIR": "runs", "KGRAG_FIGURES_DIR": "figures"}
    saved = {k: os.environ.get(k) for k in names}
    try:
        for var, sub in names.items():
            os.environ[var] = str(work / sub)
        yield
    finally:
        for var, old in saved.items():
            if old is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = old


def _recorded_part(old: Any, new: Any) -> Any:
    """`new` cut to the metrics `old` records: a metric added to the method after the record was made is not a
    difference (a metric the record has and the re-run lacks still is)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: new[k] for k in old if k in new}
    return new


def compare_scores(recorded: dict[str, Any], now: dict[str, Any]) -> list[Comparison]:
    """One comparison per score variant over the re-run's questions (a question absent from the record is skipped),
    on the metrics the record holds."""
    ids = [i for i in now if i in recorded]
    variants = sorted({v for i in ids for s in (recorded[i], now[i]) if isinstance(s, dict) for v in s})
    out = []
    for variant in variants or ["scores"]:
        c = Comparison(variant, len(ids), 0)
        for qid in ids:
            old = (recorded[qid] or {}).get(variant) if variants else recorded[qid]
            new = _recorded_part(old, (now[qid] or {}).get(variant) if variants else now[qid])
            if _same(old, new):
                c.same += 1
            else:
                c.differ.append((qid, old, new))
        out.append(c)
    return out


def reproduce_record(path: Path | str, limit: int = 10, workdir: Path | str | None = None,
                     timeout: int | None = None) -> tuple[list[Comparison], Path | None]:
    """Re-run the first `limit` questions of a run record; (one comparison per score variant, the kept folder).

    Without `workdir` the re-run happens in a temporary folder, removed when every score is the same, else kept
    (and returned) with its executed notebook and log."""
    from .runner.execute import DEFAULT_TIMEOUT, run_notebook

    if limit < 1:
        raise ConfigError(f"--limit is the number of questions to re-run and must be at least 1 (got {limit}).")
    run_dir = _record_dir(path)
    rec = read_run(run_dir)
    notebook = (rec.get("runner") or {}).get("notebook")
    if not notebook:
        raise ConfigError(f"{run_dir / RUN_FILE} names no notebook (runner.notebook): it was not made by `kgrag run` "
                          f"or `kgrag repro`; re-run it with its own command.")
    recorded = recorded_scores(run_dir)
    work = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="kgrag-reproduce-"))
    name = f"reproduce-{rec.get('run_name') or run_dir.name}"[:100]
    with _fresh_folders(work):
        outcome = run_notebook(notebook, rerun_parameters(rec, limit), run_name=name, grid="reproduce",
                               timeout=int(timeout or DEFAULT_TIMEOUT), force=True)
        if outcome.status != "ok":
            raise ConfigError(f"the re-run of {run_dir.name} failed ({outcome.error or outcome.status}): see "
                              f"{outcome.log or work} (the record may need data or a model this machine lacks, or "
                              f"the commit it records: {str((rec.get('code') or {}).get('commit') or '?')[:12]}).")
        now = recorded_scores(settings.results_dir(create=False) / name)
    comparisons = compare_scores(recorded, now)
    if workdir is None and all(c.same == c.n for c in comparisons):
        shutil.rmtree(work, ignore_errors=True)
        return comparisons, None
    return comparisons, work
