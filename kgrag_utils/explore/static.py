"""The explorer without a live kernel (papermill, `make demo`, an exported notebook): the same panels as
static tables, text blocks and matplotlib figures, so a batch run shows what the widget would."""

from __future__ import annotations

import html
from typing import Mapping, Sequence

from .compare import comparison_counts, compare_runs
from .panels import Panel
from .store import RunView

__all__ = ["show_panels", "show_run", "show_comparison", "table_html", "text_html"]

MAX_ROWS = 40  # table rows shown per panel (the full table stays in the record)
_STYLE = ("<style>table.kgrag-table{border-collapse:collapse;font-size:12px}table.kgrag-table th,"
          "table.kgrag-table td{padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #ddd}"
          "</style>")


def table_html(table, max_rows: int = MAX_ROWS) -> str:
    """A DataFrame as an HTML table (escaped, at most `max_rows` rows, a note when cut)."""
    if table is None or not len(table):
        return "<p><i>(empty)</i></p>"
    body = table.head(max_rows).to_html(index=False, escape=True, na_rep="", classes="kgrag-table", border=0)
    more = f"<p><i>… {len(table) - max_rows} more rows</i></p>" if len(table) > max_rows else ""
    return _STYLE + body + more


def text_html(text: str) -> str:
    return f"<pre class='kgrag-text' style='white-space:pre-wrap;max-height:24em;overflow:auto'>{html.escape(text)}</pre>"


def static_note(note: str) -> str:
    """A panel's note for a page that cannot be hovered: the clauses that ask to hover are left out."""
    import re

    parts = [p for p in re.split(r"(?<=[;.])\s+", note) if "hover" not in p.lower()]
    return re.sub(r"[;,]\s*$", "", " ".join(parts).strip())


def _header(panel: Panel) -> str:
    note = static_note(panel.note) if panel.note else ""
    note = f"<br><small>{html.escape(note)}</small>" if note else ""
    return f"<h4 style='margin:0.6em 0 0.2em'>{html.escape(panel.title)}</h4>{note}"


def show_panels(panels: Sequence[Panel], display=None) -> None:
    """Display each panel: graphs as one matplotlib figure (pinned + `static_pick`), tables, texts."""
    import matplotlib.pyplot as plt
    from IPython.display import HTML

    from .graphs import static_figure

    display = display or _display()
    for p in panels:
        display(HTML(_header(p)))
        if p.kind == "graphs":
            picks = list(range(p.pinned)) + [i for i in p.static_pick if p.pinned <= i < len(p.graphs)]
            if not picks and p.graphs:
                picks = [p.pinned if p.pinned < len(p.graphs) else 0]
            fig = static_figure([p.graphs[i] for i in picks])
            display(fig)
            plt.close(fig)
        elif p.kind == "table":
            display(HTML(table_html(p.table)))
        else:
            display(HTML(text_html(p.text)))


def _display():
    from IPython.display import display

    return display


def show_run(view: RunView, position: int | None = None, filters: Mapping | None = None,
             passages: Mapping[str, str] | None = None, display=None) -> int | None:
    """A run's counts, its filtered outline and one example's panels (the first that matches by default);
    returns the position shown."""
    from IPython.display import HTML

    from .views import panels_of, view_for

    display = display or _display()
    import pandas as pd

    display(HTML(f"<h3>{html.escape(view.name)}</h3>"))
    display(HTML(table_html(pd.DataFrame([view.describe()]))))
    rows = view.filter(**(filters or {}))
    display(HTML(f"<p>{len(rows)} of {len(view)} examples match {dict(filters or {}) or 'no filter'}</p>"))
    display(HTML(table_html(rows.drop(columns=["prediction"]), max_rows=15)))
    if position is None:
        position = int(rows["position"].iloc[0]) if len(rows) else (0 if len(view) else None)
    if position is None:
        return None
    display(HTML(f"<h3>Example {position}: {html.escape(str(view.outline.iloc[position]['id']))}</h3>"))
    show_panels(panels_of(view_for(view.method), view.record(position), passages), display)
    return position


def show_comparison(a: RunView, b: RunView, display=None):
    """The changed examples of two runs as a table, and the first one's two records side by side."""
    from IPython.display import HTML

    from .views import panels_of, view_for
    import pandas as pd

    display = display or _display()
    table = compare_runs(a, b)
    display(HTML(table_html(pd.DataFrame([comparison_counts(a, b, table)]))))
    display(HTML(table_html(table)))
    if len(table):
        row = table.iloc[0]
        for name, view, pos in (("a", a, row["position a"]), ("b", b, row["position b"])):
            display(HTML(f"<h3>{name}: {html.escape(view.name)} · {html.escape(str(row['id']))}</h3>"))
            show_panels(panels_of(view_for(view.method), view.record(int(pos)))[:3], display)
    return table
