"""The run explorer: look at any example of any run, filter and step through a run, compare two runs.

    from kgrag_utils.explore import explore
    explore()                                   # the newest run with examples under results/
    explore("01_simgrag-05c2...", status="wrong", stage="pattern")
    explore(run_a, compare=run_b)               # the questions whose outcome changed, and at which stage
    explore(rec.run_name, compare="previous")   # beside the newest other run of the same method and dataset

In JupyterLab (a live kernel) it is a widget: a run picker, filters (status, failing stage, correctness,
free text), the example list with previous / next, and each example's stages in its method's own terms
(`views/`), with graphs you can pan, zoom and hover (plotly `FigureWidget`; why plotly: `graphs.py`).
Without a live kernel (papermill, `make demo`, the batch runner's kernels) it prints the same panels as
static tables and matplotlib figures (`static.py`). `KGRAG_EXPLORE` = auto | widget | static overrides.

Records are read lazily (`store.RunView`): opening a run indexes the byte offsets of `examples.jsonl`
once, and each step reads one line, so a 1,000-question run stays interactive
(`benchmarks/explore_speed.py` measures it).
"""

from __future__ import annotations

import os
from typing import Mapping

from ..errors import ConfigError
from .compare import compare_runs, diverged_at
from .store import RunView, list_runs, open_run

__all__ = ["explore", "compare_runs", "diverged_at", "open_run", "list_runs", "RunView", "display_mode",
           "previous_run", "pick_comparison", "COMPARE_CHOICES", "MODE_ENV", "MODES"]

MODE_ENV = "KGRAG_EXPLORE"
MODES = ("auto", "widget", "static")


def display_mode(mode: str | None = None) -> str:
    """'widget' or 'static'. `auto` (the default; also from `KGRAG_EXPLORE`) is the widget in a Jupyter
    kernel that a person watches, and static where nobody does: outside a kernel, in the batch runner's
    kernels (they hold a run folder, `KGRAG_RUN_DIR`) and wherever progress bars were told to print text."""
    raw = (mode or os.environ.get(MODE_ENV, "") or "auto").strip().lower()
    if raw not in MODES:
        raise ConfigError(f"explorer mode {raw!r} is not one of {', '.join(MODES)} (argument mode= or {MODE_ENV}).")
    if raw != "auto":
        return raw
    from .. import progress, records

    batch = bool(os.environ.get(records.ENV_RUN_DIR)) or os.environ.get(progress.PROGRESS_ENV, "").lower() in ("text", "off")
    return "widget" if progress._in_jupyter_kernel() and progress._have_ipywidgets() and not batch else "static"


def previous_run(run: str | RunView, root=None, same_method: bool = True) -> str | None:
    """The newest other run on the same dataset that holds examples: of the same method (the default), or
    of any method whose examples share ids with this run's (`same_method=False`: the same questions).
    None when there is none."""
    view = run if isinstance(run, RunView) else open_run(run, root)
    runs = list_runs(root, methods=[view.method] if same_method else None)
    dataset = (view.run.get("params") or {}).get("dataset")
    if "params.dataset" in runs:
        runs = runs[runs["params.dataset"] == dataset]
    for name in runs["run_name"]:
        if name == view.name:
            continue
        if same_method or set(open_run(name, root).ids) & set(view.ids):
            return str(name)
    return None


#: how `explore(compare=...)` picks the second run, besides a run name
COMPARE_CHOICES = ("previous", "same-questions", "auto")


def pick_comparison(view: RunView, how: str | None, root=None) -> str | None:
    """The run to compare with: a run name as given; "previous": the newest other run of the same method
    and dataset; "same-questions": the newest other run of any method on the same questions; "auto":
    "previous", else "same-questions"; ""/None: none."""
    if not how:
        return None
    if how == "previous":
        return previous_run(view, root)
    if how == "same-questions":
        return previous_run(view, root, same_method=False)
    if how == "auto":
        return previous_run(view, root) or previous_run(view, root, same_method=False)
    return how


def explore(run=None, *, compare: str | None = None, root=None,
            passages: Mapping[str, str] | None = None, mode: str | None = None, status: str = "any",
            stage: str = "any", correct: str = "any", text: str = "", position: int | None = None):
    """Show the explorer on `run` (a run name or a run folder, e.g. a recorder's `run_dir`; None: the newest
    run with examples) and, with `compare` (another run's name, or "previous" / "same-questions" / "auto":
    `pick_comparison`), the two runs side by side. Returns the `Explorer` widget (live mode) or the
    `RunView` (static mode); `passages` ({passage id: text}) adds passage texts to the passage tables."""
    from IPython.display import HTML, display

    if run is None:
        runs = list_runs(root)
        if runs.empty:
            display(HTML("<p>No run with examples under the results folder yet: run a method notebook first "
                         "(e.g. <code>kgrag run 00_quickstart</code>).</p>"))
            return None
        run = str(runs["run_name"].iloc[0])
    view = open_run(run, root)
    if root is None and os.path.isdir(str(run)):
        root = view.run_dir.parent  # a run folder given by its path: its siblings are the runs to compare with
    other = pick_comparison(view, compare, root)
    # a chosen run is the earlier one (a), this run b: "lost" means this run lost it; a named run is b
    pair = None if not other else (open_run(other, root), view) if compare in COMPARE_CHOICES else (view, open_run(other, root))
    filters = dict(status=status, stage=stage, correct=correct, text=text)
    if compare and not pair:
        display(HTML(f"<p><i>compare={compare!r}: no other run of {'this method on ' if compare == 'previous' else ''}"
                     f"{(view.run.get('params') or {}).get('dataset')} to compare {view.name} with yet.</i></p>"))
    if display_mode(mode) == "static":
        from .static import show_comparison, show_run

        show_run(view, position, filters, passages)
        if pair:
            display(HTML(f"<h3>{pair[0].name} (a) vs {pair[1].name} (b)</h3>"))
            show_comparison(*pair)
        return view
    from .widget import CompareView, Explorer

    ex = Explorer(view.name, root=root, passages=passages, position=position, **filters)
    display(ex.widget)
    ex.compare = CompareView(*pair, root=root, passages=passages) if pair else None
    if ex.compare is not None:
        display(ex.compare.widget)
    return ex
