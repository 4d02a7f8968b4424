"""One look for every figure, and deterministic saving (the same data gives the same bytes).

`set_theme()` once per notebook; `save_figure(fig, "simgrag_latency")` writes PNG + SVG to `figures/`
with no timestamps or random ids in the files, so re-running a notebook does not churn the figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from . import graph_drawing, settings
from .labels import LABEL_ITERATIONS, data_boxes, label_overlaps, place_labels, separate_boxes

__all__ = ["set_theme", "save_figure", "draw_graph", "empty_state", "strip_by_group", "place_labels", "label_overlaps", "data_boxes", "separate_boxes",
           "LABEL_ITERATIONS", "PALETTE"]

PALETTE = "colorblind"
_DPI = 130


def set_theme(context: str = "notebook") -> None:
    """Seaborn theme + matplotlib settings that make saved files reproducible."""
    import matplotlib

    matplotlib.use(matplotlib.get_backend())  # keep inline backends in notebooks
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(context=context, style="whitegrid", palette=PALETTE)
    plt.rcParams.update({
        "figure.dpi": 100,
        "savefig.dpi": _DPI,
        "savefig.bbox": "tight",
        "svg.hashsalt": "kgrag",  # stable element ids in SVG output
        "svg.fonttype": "none",
        "axes.titleweight": "bold",
        "figure.autolayout": False,
    })


def save_figure(fig, name: str, formats: Sequence[str] = ("png", "svg"), folder: Path | str | None = None) -> list[Path]:
    """Save `fig` as figures/<name>.<fmt> without metadata that changes between runs."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"figure name {name!r} must be a plain file stem such as 'simgrag_latency'.")
    out = Path(folder) if folder else settings.figures_dir()
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = out / f"{name}.{fmt}"
        meta = {"Date": None, "Creator": None} if fmt == "svg" else {"Software": None} if fmt == "png" else None
        if fmt == "pdf":
            meta = {"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None}
        fig.savefig(path, format=fmt, metadata=meta)
        paths.append(path)
    return paths


def draw_graph(edges, ax=None, **options):
    """Draw (head, relation, tail) triples: `graph_drawing.draw_graph` (layered or force layout, labels in
    their nodes, a colour legend); kept here so that notebooks need only `plotting`."""
    return graph_drawing.draw_graph(edges, ax=ax, **options)


def empty_state(ax, message: str) -> None:
    """An axes with nothing to plot says so in words instead of drawing empty axes ("no errors", "no data")."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, fontsize=10, wrap=True,
            bbox=dict(boxstyle="round,pad=0.5", fc="#f2f2f2", ec="#bbbbbb"))


def strip_by_group(ax, groups: dict[str, Sequence[float]], ylabel: str, log: bool = False) -> None:
    """One column of points per group (every value drawn, spread sideways by rank: deterministic, no random
    jitter), a short line at each median, and n under each group's name: honest for groups of one value,
    where a box plot would draw a flat line."""
    import numpy as np

    names = [g for g, v in groups.items() if len(v)]
    for i, name in enumerate(names):
        vals = np.sort(np.asarray(groups[name], dtype=float))
        offsets = np.linspace(-0.18, 0.18, len(vals)) if len(vals) > 1 else np.zeros(1)
        ax.scatter(i + offsets, vals, s=22, color=f"C{i}", alpha=0.8, edgecolors="white", linewidths=0.4, zorder=3)
        ax.plot([i - 0.28, i + 0.28], [np.median(vals)] * 2, color="#333333", lw=1.6, zorder=4)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([f"{name}\n(n={len(groups[name])})" for name in names])
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylabel(ylabel)
    if log and all(v > 0 for name in names for v in groups[name]):
        ax.set_yscale("log")
