"""The grid summary: one tidy row per run (`SUMMARY_COLUMNS`), printed and saved as CSV and Markdown
in `runs/<grid>/summary.{csv,md}`; the full detail stays in the run records."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .. import settings
from ..records import atomic_write_text, read_run
from .execute import RunOutcome

__all__ = ["SUMMARY_COLUMNS", "summary_row", "summary_table", "write_summary"]

#: the grid summary's columns: one tidy row per run; the full detail stays in the run records
SUMMARY_COLUMNS = ["notebook", "run_name", "method", "dataset", "n", "llm", "metric", "strict", "lenient", "failures",
                   "seconds", "prompt_tokens_per_q", "status", "error"]


def _run_record(run_name: str) -> dict:
    try:
        return read_run(settings.results_dir() / run_name)
    except Exception:  # noqa: BLE001 - no record (validated only, failed before writing, damaged): the row says so
        return {}


def summary_row(outcome: RunOutcome) -> dict:
    """One run's line: its method's headline metric, strict and lenient (the registry names the pair), read
    from the score rows its summary stores (`methods.summary`) - never a summary key one method happens to share."""
    from ..methods.registry import method_for_notebook
    from ..methods.scoring import headline
    from ..methods.summary import score_rows

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
        if not summary.get("rows"):
            row["error"] = row["error"] or "summary holds no score rows (written before release 0.2.0): `kgrag rescore`"
        scored = score_rows(summary, run={**run, "params": {**(run.get("params") or {}), **params}})
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
