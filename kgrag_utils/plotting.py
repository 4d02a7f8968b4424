"""One look for every figure, and deterministic saving (the same data gives the same bytes).

`set_theme()` once per notebook; `save_figure(fig, "simgrag_latency")` writes PNG + SVG to `figures/`
with no timestamps or random ids in the files, so re-running a notebook does not churn the figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from . import settings

PALETTE = "colorblind"
_DPI = 130
LABEL_ITERATIONS = 800  # adjustText's budget per call: a fixed number of steps, never a time limit (reproducible)


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


def place_labels(ax, texts, x: Sequence[float] = (), y: Sequence[float] = (), objects=None,
                 connector: bool = True) -> int:
    """Move text labels apart (adjustText), away from the points (x, y) and `objects`; returns how many
    label pairs still overlap (0 when adjustText converged). Call it once the figure's layout is final
    (after `tight_layout`): adjustText works in display coordinates. A thin grey line joins a label that
    moved to its anchor. Deterministic: a fixed iteration budget, no time limit."""
    from adjustText import adjust_text

    texts = [t for t in texts if t.get_visible() and t.get_text()]
    if not texts:
        return 0
    extra = {"arrowprops": dict(arrowstyle="-", color="#8c8c8c", lw=0.6, shrinkA=1, shrinkB=2)} if connector else {}
    x, y = list(x), list(y)
    _stagger_coincident(ax, texts)
    adjust_text(texts, x=x or None, y=y or None, objects=objects, ax=ax, iter_lim=LABEL_ITERATIONS, time_lim=None,
                expand=(1.2, 1.5), force_text=(0.5, 1.0), ensure_inside_axes=True, **extra)
    return len(label_overlaps(texts))


def _stagger_coincident(ax, texts, tol_px: float = 3.0) -> None:
    """Labels that start at (almost) the same point - runs with equal cost and score - get no direction from
    adjustText's repulsion and stay piled up: start the k-th of such a pile k text heights above the first."""
    renderer = ax.figure.canvas.get_renderer()
    to_data = ax.transData.inverted()
    seen: list[tuple[float, float, int]] = []  # display x, y of each pile's first label, how many so far
    for t in texts:
        px, py = ax.transData.transform(t.get_position())
        for i, (sx, sy, k) in enumerate(seen):
            if abs(px - sx) <= tol_px and abs(py - sy) <= tol_px:
                h = t.get_window_extent(renderer).height * 1.2
                t.set_position(to_data.transform((px, py + (k + 1) * h)))
                seen[i] = (sx, sy, k + 1)
                break
        else:
            seen.append((px, py, 0))


def label_overlaps(texts, pad_px: float = 0.0) -> list[tuple[str, str]]:
    """Pairs of visible, non-empty texts whose rendered bounding boxes overlap (by more than `pad_px`)."""
    texts = [t for t in texts if t.get_visible() and t.get_text()]
    if not texts:
        return []
    fig = texts[0].figure
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in texts]
    out = []
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            a, b = boxes[i], boxes[j]
            w = min(a.x1, b.x1) - max(a.x0, b.x0)
            h = min(a.y1, b.y1) - max(a.y0, b.y0)
            if w > pad_px and h > pad_px:
                out.append((texts[i].get_text(), texts[j].get_text()))
    return out


def draw_graph(
    edges: Sequence[tuple[str, str, str]],
    ax=None,
    highlight_nodes: Sequence[str] = (),
    highlight_edges: Sequence[tuple[str, str, str]] = (),
    title: str | None = None,
    seed: int = 0,
    node_color: str = "#a6cee3",
    highlight_color: str = "#fb9a99",
    layout: str = "spring",
):
    """Draw a small labelled directed graph given as (head, relation, tail) triples.

    Node names sit in their nodes; after the layout (spring or Kamada-Kawai) nodes are pushed apart until
    no two node boxes (circle or name, whichever is larger) overlap (`separate_boxes`). Relation labels
    start at their edge's middle and are moved apart (`place_labels`), clear of the nodes, a thin line
    joining a moved label to its edge.
    """
    import matplotlib.pyplot as plt
    import networkx as nx
    import numpy as np
    from matplotlib.transforms import Bbox

    g = nx.MultiDiGraph()
    for h, r, t in edges:
        g.add_edge(h, t, relation=r)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4.5))
    if g.number_of_nodes() == 0:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "(empty graph)", ha="center", va="center")
        return ax
    if title:
        ax.set_title(title)
    ax.set_axis_off()
    order = list(g.nodes)
    xy = np.array([_layout(g, layout, seed)[n] for n in order], dtype=float)
    ax.set_xlim(-1.15, 1.15)
    ax.set_ylim(-1.15, 1.15)
    node_texts = [ax.text(x, y, _wrap(n), fontsize=8, ha="center", va="center", zorder=4) for n, (x, y) in zip(order, xy)]
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    radius = 0.5 * (_NODE_SIZE ** 0.5) * fig.dpi / 72  # node_size is an area in points^2
    half = np.array([[max(e.width / 2, radius), max(e.height / 2, radius)]
                     for e in (t.get_window_extent(renderer) for t in node_texts)])
    disp = separate_boxes(ax.transData.transform(xy), half, ax.get_window_extent(renderer))
    xy = ax.transData.inverted().transform(disp)
    pos = {n: xy[i] for i, n in enumerate(order)}
    for t, (x, y) in zip(node_texts, xy):
        t.set_position((x, y))
    hi = set(highlight_nodes)
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=[highlight_color if n in hi else node_color for n in order],
                           node_size=_NODE_SIZE, edgecolors="#333333")
    hi_edges = {(h, t) for h, _, t in highlight_edges}
    edge_colors = [highlight_color if (u, v) in hi_edges else "#555555" for u, v in g.edges()]
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True, arrowsize=15, node_size=_NODE_SIZE, edge_color=edge_colors,
                           connectionstyle="arc3,rad=0.08")
    labels: dict[tuple, list[str]] = {}
    for u, v, data in g.edges(data=True):
        labels.setdefault((u, v), []).append(data["relation"])
    edge_texts = []
    for (u, v), rels in labels.items():
        (x0, y0), (x1, y1) = pos[u], pos[v]
        edge_texts.append(ax.text((x0 + x1) / 2, (y0 + y1) / 2, "\n".join(rels), fontsize=7, ha="center", va="center",
                                  zorder=3, bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85)))
    obstacles = [Bbox.from_extents(x - w, y - h, x + w, y + h) for (x, y), (w, h) in zip(disp, half)]
    place_labels(ax, edge_texts, xy[:, 0], xy[:, 1], objects=data_boxes(ax, obstacles))
    return ax


_NODE_SIZE = 900


def data_boxes(ax, display_boxes) -> list:
    """Display-coordinate boxes as data-coordinate `Bbox`es (what adjustText's `objects` expects)."""
    from matplotlib.transforms import Bbox

    inv = ax.transData.inverted()
    return [Bbox(inv.transform(b.get_points())) for b in display_boxes]


def separate_boxes(centers, half_sizes, bounds, gap: float = 6.0, iterations: int = 400):
    """Push axis-aligned boxes (centres and half sizes in display pixels) apart until none overlap, each
    kept inside `bounds` (a Bbox). A pair that overlaps moves apart along the axis where it overlaps
    less, both boxes by half the overlap. Deterministic; returns the new centres."""
    import numpy as np

    c = np.array(centers, dtype=float)
    hw = np.asarray(half_sizes, dtype=float) + gap / 2
    lo = np.array([bounds.x0, bounds.y0]) + hw
    hi = np.maximum(np.array([bounds.x1, bounds.y1]) - hw, lo)
    n = len(c)
    rank = np.arange(n)
    for _ in range(iterations):
        d = c[None, :, :] - c[:, None, :]  # d[i, j] = c[j] - c[i]
        need = hw[None, :, :] + hw[:, None, :]
        over = need - np.abs(d)
        hit = (over[..., 0] > 0) & (over[..., 1] > 0) & (rank[None, :] > rank[:, None])
        if not hit.any():
            break
        shift = np.zeros_like(c)
        for i, j in zip(*np.nonzero(hit)):
            axis = 0 if over[i, j, 0] < over[i, j, 1] else 1
            sign = 1.0 if d[i, j, axis] > 0 or (d[i, j, axis] == 0 and axis == 0) else -1.0
            if d[i, j, axis] == 0 and axis == 1:
                sign = 1.0
            step = 0.5 * over[i, j, axis] + 0.5
            shift[j, axis] += sign * step
            shift[i, axis] -= sign * step
        c = np.clip(c + shift, lo, hi)
    return c


def _layout(g, layout: str, seed: int) -> dict:
    """Kamada-Kawai (layout='kk') or a seeded spring layout, scaled into [-1, 1]."""
    import networkx as nx

    n = g.number_of_nodes()
    if n == 1:
        return {next(iter(g.nodes)): (0.0, 0.0)}
    if layout == "kk" and n > 2:
        return nx.kamada_kawai_layout(g)
    return nx.spring_layout(g, seed=seed, k=2.0 / max(1.0, n ** 0.5), iterations=200)


def _wrap(text: str, width: int = 14) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(str(text), width)) or str(text)
