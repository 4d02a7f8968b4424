"""A reproduction's table from run records: each row a run, each cell one stored score row of its record
(`results/<run>/run.json`, `summary.rows`, read by `methods.summary.score_rows`), named by variant and metric.

`render` gives Markdown; `write` puts it in `runs/repro-<table>[@...]/table.md` and, with `into`, between the
markers `<!-- repro:<table> -->` and `<!-- /repro:<table> -->` of a published file; `check` says where a published
table differs from what the records give now (`kgrag repro TABLE --check`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import settings
from ..errors import ConfigError, KgragError
from ..methods.summary import score_rows
from ..records import RUN_FILE, read_run
from .plan import Plan
from .spec import Cell

__all__ = ["TableRow", "table_rows", "render", "write", "check", "markers"]


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


def table_rows(p: Plan) -> list[TableRow]:
    """The table's rows as the run records of this plan's runs hold them."""
    out = []
    for row in p.spec.rows:
        name = p.names[row.run]
        run_dir = settings.results_dir(create=False) / name
        if not (run_dir / RUN_FILE).exists():
            out.append(TableRow(row.label, name, "missing"))
            continue
        try:
            rec = read_run(run_dir)
        except KgragError:
            out.append(TableRow(row.label, name, "unreadable"))
            continue
        status = str(rec.get("status"))
        stored = score_rows(rec.get("summary"), rec) if status == "ok" else []
        out.append(TableRow(row.label, name, status, {c: _cell(stored, cell) for c, cell in row.cells.items()}))
    return out


def _shown(value: Any, cell: Cell, p: Plan) -> str:
    if value is None:
        return "—"
    if cell.field in ("n", "prompt_tokens_per_q"):
        return str(int(round(float(value))))
    if cell.field == "seconds_per_q":
        return f"{float(value):.1f}"
    scale = 100.0 if p.spec.percent else 1.0
    return f"{float(value) * scale:.{p.spec.digits}f}"


def render(p: Plan, rows: list[TableRow] | None = None) -> str:
    """The table in Markdown: a row per run, its cells, and the run (linked to its executed notebook)."""
    rows = table_rows(p) if rows is None else rows
    spec = p.spec
    head = ["row", *spec.columns, "run (executed notebook)"]
    changed = ([f"questions per run: the first {p.limit} of each row's sample"] if p.limit else []) + \
        [f"{k}={v} instead of the config's" for k, v in p.overrides.items()]
    lines = [f"**{spec.title}**" + (f" ({'; '.join(changed)})" if changed else ""),
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for tr, row in zip(rows, spec.rows):
        cells = [_shown(tr.cells.get(c), row.cells[c], p) if c in row.cells else "" for c in spec.columns]
        if tr.status != "ok":
            cells = [f"not run ({tr.status})" if c in row.cells else "" for c in spec.columns]
        lines.append("| " + " | ".join([tr.label, *cells, f"[{tr.run_name}]({tr.run_name}.ipynb)"]) + " |")
    lines += ["", f"From the run records `results/<run>/run.json`; regenerate: `{p.command()}`."]
    if spec.notes:
        lines += ["", spec.notes.strip()]
    return "\n".join(lines) + "\n"


def markers(table: str) -> tuple[str, str]:
    return f"<!-- repro:{table} -->", f"<!-- /repro:{table} -->"


def _published(p: Plan, into: str | Path | None) -> Path:
    target = into or p.spec.published_in.split("#")[0]
    if not target:
        raise ConfigError(f"{p.spec.path}: no `published_in` file to check the table against; name one with --into.")
    path = Path(target)
    return path if path.is_absolute() else settings.repo_root() / path


def _block(text: str, table: str, path: Path) -> re.Match:
    start, end = markers(table)
    m = re.search(re.escape(start) + r"\n(.*?)" + re.escape(end), text, re.S)
    if m is None:
        raise ConfigError(f"{path} has no block {start} ... {end} for table {table!r}: `kgrag repro {table} --write` "
                          f"puts one at its end (then move it where it belongs).")
    return m


def write(p: Plan, into: str | Path | None = None, publish: bool = False) -> Path:
    """runs/<grid>/table.md; with `publish`, also the block of the published file (added at its end if absent)."""
    text = render(p)
    p.folder.mkdir(parents=True, exist_ok=True)
    (p.folder / "table.md").write_text(text, encoding="utf-8")
    if not publish:
        return p.folder / "table.md"
    path = _published(p, into)
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    start, end = markers(p.spec.table)
    try:
        m = _block(old, p.spec.table, path)
        new = old[:m.start(1)] + text + old[m.end(1):]
    except ConfigError:
        new = old + ("\n" if old and not old.endswith("\n") else "") + f"{start}\n{text}{end}\n"
    path.write_text(new, encoding="utf-8")
    return path


def check(p: Plan, into: str | Path | None = None) -> list[str]:
    """The lines where the published table differs from the records' ([] when it is what they give)."""
    path = _published(p, into)
    if not path.exists():
        raise ConfigError(f"{path} does not exist: `kgrag repro {p.spec.table} --write` writes the table there.")
    published = _block(path.read_text(encoding="utf-8"), p.spec.table, path).group(1).splitlines()
    now = render(p).splitlines()
    diff = [f"published: {a!r} | records: {b!r}" for a, b in zip(published, now) if a != b]
    if len(published) != len(now):
        diff.append(f"published has {len(published)} lines, the records give {len(now)}")
    return diff
