"""What a printed figure must not have, checked on the matplotlib figure itself (the renderer's boxes):

* two labels that overlap in a graph drawing (an axes drawn without its axis: node names, relation names);
* text smaller than `MIN_POINTS` at the saved size (titles, labels, ticks, legends, notes);
* empty axes: a framed axes that draws nothing visible (no line with points, no bar with a height, no
  marker) and holds no note saying why ("no errors", "no data").

`figure_problems(fig)` lists them, one line each; the figure tests assert the list is empty.
"""

from __future__ import annotations

from .labels import label_overlaps

__all__ = ["MIN_POINTS", "figure_problems", "small_texts", "empty_axes", "graph_label_overlaps"]

MIN_POINTS = 8.0


def _shown(t) -> bool:
    return bool(t.get_visible() and str(t.get_text()).strip())


def _texts_of(fig) -> list:
    """Every text the figure draws: figure texts, and per axes its texts, titles, legend, and (when its
    axis is drawn) axis labels and tick labels."""
    out = list(fig.texts) + [t for leg in fig.legends for t in leg.get_texts()]
    for sup in (getattr(fig, "_suptitle", None), getattr(fig, "_supxlabel", None), getattr(fig, "_supylabel", None)):
        if sup is not None:
            out.append(sup)
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        out += list(ax.texts) + [ax.title, ax._left_title, ax._right_title]
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            out += list(legend.get_texts()) + [legend.get_title()]
        if ax.axison:
            for axis in (ax.xaxis, ax.yaxis):
                if axis.get_visible():
                    out.append(axis.label)
                    out += [t for t in axis.get_ticklabels(which="both")]
    return [t for t in out if _shown(t)]


def small_texts(fig, min_points: float = MIN_POINTS) -> list[str]:
    fig.canvas.draw()
    return [f"text {t.get_text()[:40]!r} is {t.get_fontsize():.1f} pt (< {min_points:g})"
            for t in _texts_of(fig) if t.get_fontsize() < min_points - 1e-6]


def _finite_points(line) -> int:
    """Points of a line with both coordinates finite (seaborn's error bars of single values are all NaN)."""
    import numpy as np

    try:
        x = np.asarray(line.get_xdata(), dtype=float)
        y = np.asarray(line.get_ydata(), dtype=float)
    except (TypeError, ValueError):  # categorical or date data: there are points
        return len(line.get_xdata())
    return int(np.isfinite(x * y).sum()) if x.shape == y.shape else len(x)


def _draws_something(ax) -> bool:
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    for a in ax.get_children():
        if not a.get_visible() or a is ax.patch or a in ax.spines.values():
            continue
        if isinstance(a, Line2D) and _finite_points(a):
            return True
        if isinstance(a, Rectangle) and a.get_width() and a.get_height():
            return True
        if isinstance(a, Collection):
            if len(a.get_offsets()):  # markers (scatter, strip plots)
                return True
            if not a.__class__.__name__ == "PathCollection" and any(len(p.vertices) for p in a.get_paths()):
                return True  # lines, filled areas
        if a.__class__.__name__ in ("FancyArrowPatch", "PathPatch", "Polygon", "Wedge", "AxesImage", "Circle",
                                    "FancyBboxPatch", "Ellipse"):
            return True
    return any(_shown(t) for t in ax.texts)  # a note ("no errors", "no data") explains an empty plot


def empty_axes(fig) -> list[str]:
    return [f"axes {ax.get_title() or i!r} draws nothing and says why nowhere"
            for i, ax in enumerate(fig.axes) if ax.get_visible() and ax.axison and not _draws_something(ax)]


def graph_label_overlaps(fig) -> list[str]:
    """Overlapping labels in every axes drawn without its axis (graph drawings)."""
    fig.canvas.draw()
    out = []
    for ax in fig.axes:
        if ax.get_visible() and not ax.axison:
            texts = [t for t in ax.texts if _shown(t) and t.get_transform() is not ax.transAxes]
            out += [f"labels overlap in {ax.get_title()!r}: {a!r} / {b!r}" for a, b in label_overlaps(texts)]
    return out


def figure_problems(fig) -> list[str]:
    """Every problem of the three kinds above, one line each (empty: the figure passes)."""
    return graph_label_overlaps(fig) + small_texts(fig) + empty_axes(fig)
