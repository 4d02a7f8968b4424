"""The live explorer: ipywidgets controls (run, filters, the example list, previous / next) over one run's
lazy view, each example's panels as widgets (plotly `FigureWidget` graphs you can pan, zoom and hover;
tables as HTML), and two runs side by side as a table whose rows open both records.

Every widget the browser test looks for carries a CSS class (`kgrag-explorer`, `kgrag-example-list`,
`kgrag-graph`, `kgrag-table`, `kgrag-compare`, ...).
"""

from __future__ import annotations

import html
from typing import Any, Mapping

from .compare import comparison_counts, compare_runs, mark
from .panels import Panel
from .static import table_html, text_html
from .store import FILTER_STATUSES, RunView, list_runs, open_run
from .views import panels_of

__all__ = ["Explorer", "ExampleView", "CompareView", "example_label"]

LIST_ROWS = 10        # rows of the example list
MAX_COMPARE_ROWS = 60  # clickable rows of the comparison table (the rest: filter or use compare_runs)


def example_label(row: Mapping) -> str:
    q = str(row.get("question") or "")
    return f"{mark(row['status'])} #{row['position']} {row['id']} · {q[:70]}"


def _widgets():
    from ..errors import require

    require("plotly", "explore", "the live explorer's graphs")
    require("anywidget", "explore", "the live explorer's graphs")
    return require("ipywidgets", "explore", "the live explorer")


def _classed(widget, *classes: str):
    for c in classes:
        widget.add_class(c)
    return widget


def close_tree(widget) -> None:
    """Close a widget and everything inside it: a widget replaced without `close()` stays registered with the
    kernel for good, and thousands of them make each garbage collection slower."""
    for child in getattr(widget, "children", ()) or ():
        close_tree(child)
    for part in ("layout", "style"):  # widgets of their own, which closing the owner leaves open
        sub = getattr(widget, part, None)
        if hasattr(sub, "close") and hasattr(sub, "comm"):
            sub.close()
    widget.close()


class ExampleView:
    """One example's panels as widgets in a VBox, rebuilt by `show(record)`."""

    def __init__(self, method: str, passages: Mapping[str, str] | None = None, graph_height: int = 380):
        from .views import view_for

        w = _widgets()
        self.method = method
        self.view = view_for(method)
        self.passages = passages
        self.graph_height = graph_height
        self.box = _classed(w.VBox([]), "kgrag-example")
        self.panels: list[Panel] = []

    def show(self, rec: Mapping) -> None:
        self.panels = panels_of(self.view, rec, self.passages)
        old, self.box.children = self.box.children, tuple(self._panel(p) for p in self.panels)
        for w in old:
            close_tree(w)

    def _panel(self, p: Panel):
        w = _widgets()
        note = f"<br><small>{html.escape(p.note)}</small>" if p.note else ""
        head = w.HTML(f"<b>{html.escape(p.title)}</b>{note}")
        if p.kind == "graphs":
            body = self._graphs(p)
        elif p.kind == "table":
            body = _classed(w.HTML(f"<div style='max-height:22em;overflow:auto'>{table_html(p.table)}</div>"),
                            "kgrag-table")
        else:
            body = _classed(w.HTML(text_html(p.text)), "kgrag-text")
        return _classed(w.VBox([head, body]), "kgrag-panel")

    def _figure(self, g):
        from .graphs import to_plotly

        return _classed(to_plotly(g, widget=True, height=self.graph_height), "kgrag-graph")

    def _graphs(self, p: Panel):
        w = _widgets()
        pinned = [self._figure(g) for g in p.graphs[: p.pinned]]
        rest = p.graphs[p.pinned:]
        if not rest:
            return w.HBox(pinned)
        first = next((i - p.pinned for i in p.static_pick if p.pinned <= i < len(p.graphs)), 0)
        holder = w.Box([self._figure(rest[first])])
        slider = _classed(w.IntSlider(value=first + 1, min=1, max=len(rest), description=p.select_label,
                                      continuous_update=False), "kgrag-graph-slider")

        def pick(change):
            old, holder.children = holder.children, (self._figure(rest[change["new"] - 1]),)
            for w in old:
                close_tree(w)

        slider.observe(pick, names="value")
        return w.VBox([w.HBox(pinned + [holder]), slider] if len(rest) > 1 else [w.HBox(pinned + [holder])])


class Explorer:
    """Pick a run, filter its examples by status, failing stage, correctness or free text, step through them."""

    def __init__(self, run: str | None = None, root=None, passages: Mapping[str, str] | None = None,
                 status: str = "any", stage: str = "any", correct: str = "any", text: str = "",
                 position: int | None = None):
        w = _widgets()
        self.root, self.passages = root, passages
        names = list(list_runs(root)["run_name"])
        if run is not None and run not in names:
            names.insert(0, str(run))
        self.run_dd = w.Dropdown(options=names, value=str(run) if run is not None else (names[0] if names else None),
                                 description="run", layout=w.Layout(width="46em"))
        self.status_dd = w.Dropdown(options=list(FILTER_STATUSES), value=status, description="status")
        self.stage_dd = w.Dropdown(options=["any"], value="any", description="stage")
        self.correct_dd = w.Dropdown(options=["any", "yes", "no"], value=correct, description="correct")
        self.text_box = w.Text(value=text, placeholder="free text: id, question, prediction", description="find",
                               continuous_update=False)
        self.examples = _classed(w.Select(options=[], rows=LIST_ROWS, layout=w.Layout(width="60em")),
                                 "kgrag-example-list")
        self.prev_btn = _classed(w.Button(description="◀ previous"), "kgrag-prev")
        self.next_btn = _classed(w.Button(description="next ▶"), "kgrag-next")
        self.reload_btn = w.Button(description="↻ reload", tooltip="index examples appended since the run was opened")
        self.count = _classed(w.HTML(), "kgrag-count")
        self.view: RunView | None = None
        self.detail: ExampleView | None = None
        self.detail_box = w.VBox([])
        self.widget = _classed(w.VBox([
            self.run_dd, w.HBox([self.status_dd, self.stage_dd, self.correct_dd]), self.text_box,
            self.examples, w.HBox([self.prev_btn, self.next_btn, self.reload_btn, self.count]), self.detail_box,
        ]), "kgrag-explorer")
        self._wire()
        self._stage0 = stage
        if self.run_dd.value:
            self.open(self.run_dd.value, position)

    def _wire(self) -> None:
        self.run_dd.observe(lambda ch: self.open(ch["new"]), names="value")
        for dd in (self.status_dd, self.stage_dd, self.correct_dd, self.text_box):
            dd.observe(lambda ch: self.apply_filters(), names="value")
        self.examples.observe(self._on_select, names="value")
        self.prev_btn.on_click(lambda _: self.step(-1))
        self.next_btn.on_click(lambda _: self.step(+1))
        self.reload_btn.on_click(lambda _: self.reload())

    # ------------------------------------------------------------------ actions
    def open(self, run: str, position: int | None = None) -> None:
        """Open another run (keeps the filters that still apply)."""
        self.view = open_run(run, self.root)
        self.detail = ExampleView(self.view.method, self.passages)
        self.detail_box.children = (self.detail.box,)
        stage = self._stage0 if self._stage0 in self.view.stages() else "any"
        self._stage0 = "any"
        with self.examples.hold_trait_notifications():
            self.stage_dd.options = ["any", *self.view.stages()]
            self.stage_dd.value = stage
        self.apply_filters(position)

    def apply_filters(self, position: int | None = None) -> None:
        rows = self.view.filter(self.status_dd.value, self.stage_dd.value, self.correct_dd.value, self.text_box.value)
        options = [(example_label(r), int(r["position"])) for r in rows.to_dict("records")]
        keep = position if position is not None else self.examples.value
        self.examples.options = options
        positions = [p for _, p in options]
        self.count.value = f"{len(options)} of {len(self.view)} examples"
        if not positions:
            self.detail.box.children = ()
            return
        self.select(keep if keep in positions else positions[0])

    def _on_select(self, change) -> None:
        if change["new"] is not None and change["new"] != change["old"]:
            self.select(change["new"])

    def select(self, position: int) -> None:
        """Show one example (by its position in the run)."""
        self.position = int(position)
        if self.examples.value != self.position:
            self.examples.value = self.position  # fires _on_select, which lands here again once
            return
        self.detail.show(self.view.record(self.position))
        row = self.view.outline.iloc[self.position]
        self.count.value = (f"{len(self.examples.options)} of {len(self.view)} examples · showing #{self.position} "
                            f"{html.escape(str(row['id']))} ({mark(row['status'])} {row['status']})")

    def step(self, delta: int) -> None:
        positions = [p for _, p in self.examples.options]
        if not positions:
            return
        at = positions.index(self.position) if getattr(self, "position", None) in positions else -1
        self.select(positions[max(0, min(len(positions) - 1, at + delta))])

    def reload(self) -> None:
        if self.view is not None and self.view.refresh():
            self.apply_filters()


class CompareView:
    """Two runs side by side: the changed questions as a table; a row's id opens both records below."""

    def __init__(self, a: str | RunView, b: str | RunView, root=None, passages: Mapping[str, str] | None = None):
        w = _widgets()
        self.a = a if isinstance(a, RunView) else open_run(a, root)
        self.b = b if isinstance(b, RunView) else open_run(b, root)
        self.table = compare_runs(self.a, self.b)
        self.left, self.right = ExampleView(self.a.method, passages), ExampleView(self.b.method, passages)
        counts = comparison_counts(self.a, self.b, self.table)
        self.title = w.HTML(f"<b>{html.escape(self.a.name)}</b> (a) vs <b>{html.escape(self.b.name)}</b> (b): "
                            + ", ".join(f"{k} {v}" for k, v in counts.items() if k not in ("a", "b")))
        self.rows_box = _classed(self._grid(), "kgrag-compare-table")
        self.shown = _classed(w.HTML(), "kgrag-compare-shown")
        col = w.Layout(width="50%")
        self.widget = _classed(w.VBox([self.title, self.rows_box, self.shown,
                                       w.HBox([w.VBox([self.left.box], layout=col), w.VBox([self.right.box], layout=col)])]),
                               "kgrag-compare")
        if len(self.table):
            self.open_row(0)

    def _grid(self):
        w = _widgets()
        cols = ["id", "change", "a", "b", "stage a", "stage b", "diverged at", "question"]
        cells: list[Any] = [w.HTML(f"<b>{c}</b>") for c in cols]
        for i, row in enumerate(self.table.head(MAX_COMPARE_ROWS).to_dict("records")):
            btn = _classed(w.Button(description=str(row["id"])[:40], tooltip="open both records",
                                    layout=w.Layout(width="auto")), "kgrag-compare-open")
            btn.on_click(lambda _, i=i: self.open_row(i))
            cells += [btn] + [w.HTML(html.escape(str(row[c]))) for c in cols[1:]]
        if not len(self.table):
            return w.HTML("<i>no question changed its outcome between the two runs</i>")
        more = len(self.table) - MAX_COMPARE_ROWS
        grid = w.GridBox(cells, layout=w.Layout(grid_template_columns="repeat(7, auto) 1fr", grid_gap="2px 10px"))
        return w.VBox([grid, w.HTML(f"<i>… {more} more (compare_runs gives them all)</i>")]) if more > 0 else grid

    def open_row(self, i: int) -> None:
        row = self.table.iloc[i]
        self.left.show(self.a.record(int(row["position a"])))
        self.right.show(self.b.record(int(row["position b"])))
        self.shown.value = (f"showing {html.escape(str(row['id']))}: a {html.escape(row['a'])} (left) · "
                            f"b {html.escape(row['b'])} (right) · diverged at {html.escape(str(row['diverged at']))}")
