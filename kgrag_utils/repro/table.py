"""A reproduction's table from run records: each row a run, each cell one stored score row of its record
(`results/<run>/run.json`, `summary.rows`, read by `methods.summary.score_rows`), named by variant and metric.

A paper's number is a row of its method's `published.rows()` (shown in italics). A row whose run has no finished
record says so, with the command that regenerates it. A table of kind paired or by_group is an analysis of its
runs' questions (`repro.analysis`); publishing it also copies each run's per-question outcomes beside its record.

`render` gives Markdown; `write` puts it in `runs/repro-<table>[@...]/table.md` and, with `publish`, between the
markers `<!-- repro:<table> -->` and `<!-- /repro:<table> -->` of a published file, and copies each row's
`run.json` into `docs/records/<run>/` (committed: the records a published table is read from); `check` says where
a published table differs from what those records give (`kgrag repro TABLE --check`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import settings
from ..errors import ConfigError, KgragError
from ..methods.summary import score_rows
from ..records import RUN_FILE, read_run
from . import analysis, blocks
from .plan import Plan
from .spec import Cell, Published

__all__ = ["TableRow", "table_rows", "render", "write", "check", "markers", "published_records"]


def published_records() -> Path:
    """docs/records/: the run records of the published tables (`run.json` per run), committed."""
    return settings.repo_root() / "docs" / "records"


@dataclass
class TableRow:
    label: str
    run_name: str
    status: str  # ok | missing | failed | running | unreadable ...
    cells: dict[str, Any] = field(default_factory=dict)  # column -> value (None: the record has no such row)


def _cell(rows: list[dict], cell: Cell) -> Any:
    for row in rows:
        if row.get("variant") == cell.variant and row.get("metric") == cell.metric:
            return row.get(cell.field)
    return None


def _paper(cell: Published) -> float:
    from ..methods.registry import methods

    names = {spec.name: spec for spec in methods("method")}
    if cell.published not in names:
        raise ConfigError(f"published: no method {cell.published!r}; methods: {', '.join(names)}.")
    for row in names[cell.published].published.rows():
        if (row["system"], row["dataset"], row["metric"]) == (cell.system, cell.dataset, cell.metric):
            return float(row["value"])
    raise ConfigError(f"published: {cell.published}'s paper has no number for system {cell.system!r}, dataset "
                      f"{cell.dataset!r}, metric {cell.metric!r} (its published.rows()).")


def table_rows(p: Plan, records: Path | None = None) -> list[TableRow]:
    """The table's rows as the run records of this plan's runs hold them (in `records`, default results/)."""
    out = []
    for row in p.spec.rows:
        name = p.names[row.run]
        papers = {c: _paper(cell) for c, cell in row.cells.items() if isinstance(cell, Published)}
        run_dir = (records or settings.results_dir(create=False)) / name
        if not (run_dir / RUN_FILE).exists():
            out.append(TableRow(row.label, name, "missing", papers))
            continue
        try:
            rec = read_run(run_dir)
        except KgragError:
            out.append(TableRow(row.label, name, "unreadable", papers))
            continue
        status = str(rec.get("status"))
        stored = score_rows(rec.get("summary"), rec) if status == "ok" else []
        out.append(TableRow(row.label, name, status, {c: papers[c] if c in papers else _cell(stored, cell)
                                                      for c, cell in row.cells.items()}))
    return out


def _shown(value: Any, cell: Cell | Published, p: Plan) -> str:
    if value is None:
        return "—"
    if isinstance(cell, Published):
        return f"*{float(value) * (100.0 if p.spec.percent else 1.0):.{p.spec.digits}f}*"
    if cell.field in ("n", "prompt_tokens_per_q"):
        return str(int(round(float(value))))
    if cell.field == "seconds_per_q":
        return f"{float(value):.1f}"
    scale = 100.0 if p.spec.percent else 1.0
    return f"{float(value) * scale:.{p.spec.digits}f}"


def _where(runs: list[tuple[str, str]], p: Plan, base: Path | None) -> str:
    """A row's last cell from its runs' (name, status): each run linked to its executed notebook (or, published in a
    file of folder `base`, to its committed record), or the command that regenerates the first one not finished."""
    for name, status in runs:
        if status != "ok":
            return f"not regenerated here ({status}): `{p.command(rows=name.split('@')[0])}`"
    if base is not None:  # published: the committed records
        return ", ".join(f"[{n}]({os.path.relpath(published_records() / n / RUN_FILE, base)})" for n, _ in runs)
    return ", ".join(f"[{n}]({n}.ipynb)" for n, _ in runs)


def _score_lines(p: Plan, rows: list[TableRow], base: Path | None) -> tuple[list[str], list[list[str]]]:
    spec = p.spec
    body = []
    for tr, row in zip(rows, spec.rows):
        ok = {c for c, cell in row.cells.items() if tr.status == "ok" or isinstance(cell, Published)}
        cells = [(_shown(tr.cells.get(c), row.cells[c], p) if c in ok else "not run") if c in row.cells else ""
                 for c in spec.columns]
        body.append([tr.label, *cells, _where([(tr.run_name, tr.status)], p, base)])
    return ["row", *spec.columns], body


def render(p: Plan, rows: list[TableRow] | None = None, records: Path | None = None, base: Path | None = None) -> str:
    """The table in Markdown: a row per run (or pair of runs, or group of a run's questions), its cells, and the run
    (linked to its executed notebook, or, published in a file of folder `base`, to its committed record), or the
    command that regenerates a row without a record."""
    spec = p.spec
    if spec.kind == "scores":
        head, body = _score_lines(p, table_rows(p, records) if rows is None else rows, base)
    else:
        head, body = analysis.table(spec, p.names, records or settings.results_dir(create=False),
                                    lambda runs: _where(runs, p, base))
    head = [*head, ("runs (records)" if base else "runs (executed notebooks)") if spec.kind == "paired"
            else "run (record)" if base else "run (executed notebook)"]
    changed = ([f"questions per run: the first {p.limit} of each row's sample"] if p.limit else []) + \
        [f"{k}={v} instead of the config's" for k, v in p.overrides.items()]
    lines = [f"**{spec.title}**" + (f" ({'; '.join(changed)})" if changed else ""),
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    outcomes = "" if spec.kind == "scores" else " and their questions' outcomes (`examples.jsonl`" + \
        (", copied into docs/records/<run>/outcomes.jsonl)" if base else ")")
    lines += ["", f"From the run records `results/<run>/run.json`{' (copied into docs/records/)' if base else ''}"
                  f"{outcomes}; regenerate: `{p.command()}`."]
    if spec.notes:
        lines += ["", spec.notes.strip()]
    return "\n".join(lines) + "\n"


def markers(table: str) -> tuple[str, str]:
    return blocks.markers("repro", table)


def _published(p: Plan, into: str | Path | None) -> Path:
    target = into or p.spec.published_in.split("#")[0]
    if not target:
        raise ConfigError(f"{p.spec.path}: no `published_in` file to check the table against; name one with --into.")
    path = Path(target)
    return path if path.is_absolute() else settings.repo_root() / path


def write(p: Plan, into: str | Path | None = None, publish: bool = False) -> Path:
    """runs/<grid>/table.md; with `publish`, also the rows' finished records copied into `published_records()` and
    the table they give in the block of the published file (added at its end if absent)."""
    text = render(p)
    p.folder.mkdir(parents=True, exist_ok=True)
    (p.folder / "table.md").write_text(text, encoding="utf-8")
    if not publish:
        return p.folder / "table.md"
    path = _published(p, into)
    results = settings.results_dir(create=False)
    for name in dict.fromkeys(p.names[r] for _, runs in p.spec.entries() for r in runs):
        if analysis.run_status(results / name) == "ok":
            (published_records() / name).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(results / name / RUN_FILE, published_records() / name / RUN_FILE)
            # per question: what analysis tables read and what `kgrag reproduce docs/records/RUN` compares with
            analysis.write_outcomes(results / name, published_records() / name)
    text = render(p, records=published_records(), base=path.parent)  # what `check` reads back
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    path.write_text(blocks.splice(old, "repro", p.spec.table, text, append=True), encoding="utf-8")
    return path


def check(p: Plan, into: str | Path | None = None) -> list[str]:
    """The lines where the published table differs from what its published records give ([] when none)."""
    path = _published(p, into)
    if not path.exists():
        raise ConfigError(f"{path} does not exist: `kgrag repro {p.spec.table} --write` writes the table there.")
    published = blocks.content(path.read_text(encoding="utf-8"), "repro", p.spec.table)
    if published is None:
        start, end = markers(p.spec.table)
        raise ConfigError(f"{path} has no block {start} ... {end} for table {p.spec.table!r}: `kgrag repro "
                          f"{p.spec.table} --write` puts one at its end (then move it where it belongs).")
    published = published.splitlines()
    now = render(p, records=published_records(), base=path.parent).splitlines()
    diff = [f"published: {a!r} | records: {b!r}" for a, b in zip(published, now) if a != b]
    if len(published) != len(now):
        diff.append(f"published has {len(published)} lines, the records give {len(now)}")
    return diff
