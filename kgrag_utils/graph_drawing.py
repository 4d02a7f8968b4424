"""Graph drawings a book could print: nodes are their own labels (a coloured box holding the name), laid
out so that no two boxes overlap at any size, edge labels moved clear of nodes and of each other, and a
legend for every colour that means something.

Layouts (pure Python: networkx, numpy; graphviz is not needed):

* ``layered``: nodes in columns by their distance from the roots (the topic, the seeds), each column
  ordered by its neighbours in the previous one (barycentre sweeps) - chains and paths read left to right;
* ``force`` (also ``spring``; ``kk`` starts from Kamada-Kawai): a seeded spring layout, then the label boxes
  pushed apart until none overlap (`labels.separate_boxes`);
* ``auto``: layered when every edge joins neighbouring columns (a chain, a path, a tree from the roots),
  else force.

Everything is laid out in inches at the text's real rendered size, and the axes then get one data unit per
inch (the figure grows when the drawing needs more room than the axes have), so a box never shrinks under
its text and text is never scaled below its font size. Deterministic: the same graph gives the same bytes.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np


__all__ = ["GNode", "GEdge", "draw_network", "draw_graph", "short_label", "NODE_FONT", "EDGE_FONT",
           "NODE_COLOR", "HIGHLIGHT_COLOR", "HIGHLIGHT_EDGE_COLOR"]

NODE_FONT = 9.0  # points, at the saved size
EDGE_FONT = 8.0
NODE_COLOR = "#a6cee3"  # light blue
HIGHLIGHT_COLOR = "#fb9a99"  # pink
EDGE_COLOR = "#666666"
HIGHLIGHT_EDGE_COLOR = "#e31a1c"  # red
_GAP = 0.22  # inches between two node boxes
_MARGIN = 0.35  # inches around the drawing (room for edge labels on the rim)
_WRAP, _LINES = 16, 3  # a node label: lines of at most 16 characters, at most 3 lines


@dataclass(frozen=True)
class GNode:
    id: str
    label: str
    color: str = NODE_COLOR


@dataclass(frozen=True)
class GEdge:
    source: str
    target: str
    label: str = ""
    color: str = EDGE_COLOR
    width: float = 1.1


def short_label(text: str, width: int = _WRAP, lines: int = _LINES) -> tuple[str, bool]:
    """The label wrapped to `width` characters a line; cut to `lines` lines with "…" (and True) when longer."""
    wrapped = textwrap.wrap(str(text), width, break_long_words=True) or [str(text)]
    if len(wrapped) <= lines:
        return "\n".join(wrapped), False
    last = wrapped[lines - 1]
    return "\n".join(wrapped[: lines - 1] + [last[: width - 1] + "…"]), True


def draw_network(ax, nodes: Sequence[GNode], edges: Sequence[GEdge], layout: str = "auto",
                 roots: Sequence[str] = (), legend: Sequence[tuple] = (), seed: int = 0, title: str | None = None):
    """Draw nodes (boxes holding their labels) and directed, labelled edges on `ax`.

    `legend`: (label, face colour, kind) entries, kind "node" (a box) or "edge" (a line); labels that had to
    be cut are added to it as "[k] full label" and their boxes end with "[k]". Returns the layout actually
    used ("layered" or "force")."""
    ax.set_axis_off()
    if title:
        ax.set_title(title)
    if not nodes:
        ax.text(0.5, 0.5, "(empty graph)", ha="center", va="center", transform=ax.transAxes, fontsize=NODE_FONT)
        return "empty"
    ids = [n.id for n in nodes]
    texts, cut = _node_texts(ax, nodes)
    half = _half_sizes(ax, texts)
    pairs = [(ids.index(e.source), ids.index(e.target)) for e in edges if e.source in ids and e.target in ids]
    layers = _layers(len(ids), pairs, [ids.index(r) for r in roots if r in ids])
    used = "layered" if layout in ("auto", "layered") and (layout == "layered" or _proper(layers, pairs)) else "force"
    if used == "layered":
        xy = _layered(layers, pairs, half, _widest_edge_label(ax, edges) + 0.5)
    else:
        xy = _force(len(ids), pairs, half, layout, seed)
    centre = xy.mean(axis=0)
    for attempt in range(8):  # spread the nodes until every edge label finds a free place on its arrow
        if _draw_edges(ax, edges, ids, xy, half, final=attempt == 7):
            break
        xy = centre + (xy - centre) * 1.2
    _fit(ax, xy, half)
    for t, (x, y) in zip(texts, xy):
        t.set_position((x, y))
    _legend(ax, list(legend), cut)
    return used


def _node_texts(ax, nodes: Sequence[GNode]):
    texts, cut = [], []
    for n in nodes:
        label, was_cut = short_label(n.label)
        if was_cut:
            cut.append(n.label)
            label += f" [{len(cut)}]"
        texts.append(ax.text(0, 0, label, fontsize=NODE_FONT, ha="center", va="center", zorder=4, gid="graph-node",
                             bbox=dict(boxstyle="round,pad=0.3", fc=n.color, ec="#333333", lw=0.8)))
    return texts, cut


def _half_sizes(ax, texts) -> np.ndarray:
    """Half width and height of each node's box (text and its padded frame), in inches."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    out = []
    for t in texts:
        t.update_bbox_position_size(renderer)
        box = t.get_bbox_patch().get_window_extent(renderer)
        out.append((box.width / 2 / fig.dpi, box.height / 2 / fig.dpi))
    return np.array(out, dtype=float)


def _layers(n: int, pairs, roots: list[int]) -> list[int]:
    """Each node's breadth-first distance (edges undirected) from the roots; each further component from
    its first node (or its nodes with no incoming edge)."""
    adj: list[set[int]] = [set() for _ in range(n)]
    indeg = [0] * n
    for a, b in pairs:
        if a != b:
            adj[a].add(b)
            adj[b].add(a)
            indeg[b] += 1
    layer = [-1] * n
    starts = list(dict.fromkeys(roots))
    while True:
        frontier = [s for s in starts if layer[s] < 0]
        for s in frontier:
            layer[s] = 0
        while frontier:
            nxt = []
            for a in frontier:
                for b in sorted(adj[a]):
                    if layer[b] < 0:
                        layer[b] = layer[a] + 1
                        nxt.append(b)
            frontier = nxt
        left = [i for i in range(n) if layer[i] < 0]
        if not left:
            return layer
        sources = [i for i in left if indeg[i] == 0]
        starts = sources or left[:1]


def _proper(layers: list[int], pairs) -> bool:
    """Every edge joins two neighbouring columns, and no column is much taller than the drawing is wide."""
    if any(abs(layers[a] - layers[b]) != 1 for a, b in pairs if a != b):
        return False
    sizes = np.bincount(layers)
    return len(sizes) >= 2 and sizes.max() <= max(8, 4 * len(sizes))


def _widest_edge_label(ax, edges: Sequence[GEdge]) -> float:
    """Width in inches of the widest relation label (one line of it), so that columns leave room for it."""
    names = list(dict.fromkeys(line for e in edges if e.label for line in short_label(e.label, 20, 2)[0].split("\n")))
    if not names:
        return 0.0
    t = ax.text(0, 0, max(names, key=len), fontsize=EDGE_FONT)
    width = t.get_window_extent(ax.figure.canvas.get_renderer()).width / ax.figure.dpi
    t.remove()
    return width


def _layered(layers: list[int], pairs, half: np.ndarray, column_gap: float) -> np.ndarray:
    """Columns left to right; in each, nodes ordered by the mean row of their neighbours in the previous
    column (three sweeps, both ways), stacked with `_GAP` between boxes and centred."""
    n = len(layers)
    cols = [[i for i in range(n) if layers[i] == c] for c in range(max(layers) + 1)]
    nbrs: list[set[int]] = [set() for _ in range(n)]
    for a, b in pairs:
        nbrs[a].add(b)
        nbrs[b].add(a)
    rank = {i: k for col in cols for k, i in enumerate(col)}
    for sweep in range(6):
        order = range(1, len(cols)) if sweep % 2 == 0 else range(len(cols) - 2, -1, -1)
        for c in order:
            ref = c - 1 if sweep % 2 == 0 else c + 1
            def key(i, ref=ref):
                near = [rank[j] for j in nbrs[i] if layers[j] == ref]
                return (np.mean(near) if near else rank[i], rank[i])
            cols[c] = sorted(cols[c], key=key)
            rank.update({i: k for k, i in enumerate(cols[c])})
    xy = np.zeros((n, 2))
    x = 0.0
    for c, col in enumerate(cols):
        width = max(half[i, 0] for i in col)
        if c:
            x += width + max(1.0, column_gap) + max(half[i, 0] for i in cols[c - 1])  # room for an edge label
        heights = [2 * half[i, 1] for i in col]
        y = (sum(heights) + _GAP * (len(col) - 1)) / 2
        for i, h in zip(col, heights):
            xy[i] = (x, y - h / 2)
            y -= h + _GAP
    return xy


def _force(n: int, pairs, half: np.ndarray, layout: str, seed: int) -> np.ndarray:
    """A seeded spring (or Kamada-Kawai) layout scaled to the boxes' size, then boxes pushed apart."""
    import networkx as nx

    from .labels import separate_boxes

    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from((a, b) for a, b in pairs if a != b)
    if n == 1:
        return np.zeros((1, 2))
    if layout == "kk" and n > 2:
        pos = nx.kamada_kawai_layout(g)
    else:
        pos = nx.spring_layout(g, seed=seed, k=2.0 / max(1.0, n ** 0.5), iterations=200)
    xy = np.array([pos[i] for i in range(n)], dtype=float)
    xy -= xy.mean(axis=0)
    spread = np.abs(xy).max() or 1.0
    # room for the boxes: about as much area as they need, times three for the edges and their labels
    side = max(2.5, float(np.sqrt(3.0 * (4 * half[:, 0] * half[:, 1]).sum() + 1e-9)) + 2 * half.max())
    xy *= side / 2 / spread
    return separate_boxes(xy, half, None, gap=_GAP, iterations=600, nudge=0.01)


def _fit(ax, xy: np.ndarray, half: np.ndarray) -> None:
    """One data unit per inch: grow the figure where the axes are smaller than the drawing (other axes of the
    figure grow with it, so theirs only gain room), then centre the drawing in the axes."""
    fig = ax.figure
    lo = (xy - half).min(axis=0) - _MARGIN
    hi = (xy + half).max(axis=0) + _MARGIN
    need = hi - lo
    pos = ax.get_position()
    have = np.array([pos.width * fig.get_figwidth(), pos.height * fig.get_figheight()])
    grow = np.maximum(1.0, need / have)  # each direction on its own: a long chain does not make the figure tall
    if (grow > 1.0).any():
        fig.set_size_inches(fig.get_figwidth() * grow[0], fig.get_figheight() * grow[1], forward=False)
    ax._graph_centre = (lo + hi) / 2
    for other in fig.axes:  # every drawing of the figure (those drawn before grew too) at one unit per inch
        centre = getattr(other, "_graph_centre", None)
        if centre is not None:
            box = other.get_position()
            half_w, half_h = box.width * fig.get_figwidth() / 2, box.height * fig.get_figheight() / 2
            other.set_xlim(centre[0] - half_w, centre[0] + half_w)
            other.set_ylim(centre[1] - half_h, centre[1] + half_h)


def _border(center, half, toward) -> np.ndarray:
    """Where the ray from `center` toward `toward` leaves the box of half size `half` (plus a hair)."""
    d = np.asarray(toward, float) - center
    if not d.any():
        return np.asarray(center, float)
    scale = min(half[0] / abs(d[0]) if d[0] else np.inf, half[1] / abs(d[1]) if d[1] else np.inf)
    return center + d * min(1.0, scale * 1.02 + 0.03 / np.hypot(*d))


@dataclass
class _Arrow:
    start: np.ndarray
    end: np.ndarray
    rad: float
    edge: GEdge

    def at(self, t: float) -> np.ndarray:
        """The point at `t` on the drawn curve (arc3: a quadratic Bezier through the control point)."""
        d = self.end - self.start
        ctrl = (self.start + self.end) / 2 + self.rad * np.array([d[1], -d[0]])
        return (1 - t) ** 2 * self.start + 2 * t * (1 - t) * ctrl + t ** 2 * self.end


def _arrows(edges: Sequence[GEdge], index: Mapping[str, int], xy: np.ndarray, half: np.ndarray) -> list[_Arrow]:
    both = {(e.source, e.target) for e in edges} & {(e.target, e.source) for e in edges}
    out = []
    for e in edges:
        if e.source in index and e.target in index and e.source != e.target:
            a, b = xy[index[e.source]], xy[index[e.target]]
            rad = 0.18 if (e.source, e.target) in both else 0.0
            out.append(_Arrow(_border(a, half[index[e.source]], b), _border(b, half[index[e.target]], a), rad, e))
    return out


_SPOTS = (0.5, 0.38, 0.62, 0.27, 0.73, 0.18, 0.82)  # where along its arrow a label may sit, best first
_ARROW_SHOWN = 0.35  # inches of an arrow left visible beside its label


def _label_spots(arrows: list[_Arrow], lhalf: Mapping[tuple, np.ndarray], xy: np.ndarray, half: np.ndarray):
    """A place for each pair's label on its arrow, clear of every node box and every label placed before
    (greedy, in inches); None for a label with no free place."""
    boxes = [(c - h - 0.04, c + h + 0.04) for c, h in zip(xy, half)]
    placed, spots = [], {}
    first = {}
    for arr in arrows:
        first.setdefault((arr.edge.source, arr.edge.target), arr)
    for key, arr in first.items():
        if key not in lhalf:
            continue
        h = lhalf[key]
        spots[key] = None
        d = arr.end - arr.start
        length = float(np.hypot(*d)) or 1e-9
        covered = min(2 * h[0] / (abs(d[0]) / length or 1e-9), 2 * h[1] / (abs(d[1]) / length or 1e-9))
        if length < covered + _ARROW_SHOWN:  # the label would hide its arrow: spread the nodes
            continue
        normal = np.array([-d[1], d[0]]) / length
        for t in _SPOTS:
            for shift in (0.0, 1.0, -1.0):
                c = arr.at(t) + shift * normal * (h[1] + 0.02)
                lo, hi = c - h, c + h
                if any((lo < bh).all() and (hi > bl).all() for bl, bh in boxes + placed):
                    continue
                spots[key] = c
                placed.append((lo - 0.02, hi + 0.02))
                break
            if spots[key] is not None:
                break
    return spots


def _draw_edges(ax, edges: Sequence[GEdge], ids: list[str], xy: np.ndarray, half: np.ndarray,
                final: bool = False) -> bool:
    """Arrows from box border to box border (curved when both directions are drawn) and one label per
    node pair on its arrow, clear of the boxes and of each other. False (and nothing drawn) when a label
    finds no free place: the caller spreads the nodes and tries again (`final`: draw anyway, such a label
    at its arrow's middle)."""
    from matplotlib.patches import FancyArrowPatch

    index = {n: i for i, n in enumerate(ids)}
    arrows = _arrows(edges, index, xy, half)
    names: dict[tuple[str, str], list[str]] = {}
    for arr in arrows:
        rels = names.setdefault((arr.edge.source, arr.edge.target), [])
        if arr.edge.label and arr.edge.label not in rels:
            rels.append(arr.edge.label)
    texts = {k: ax.text(0, 0, "\n".join(short_label(r, 20, 2)[0] for r in rels), fontsize=EDGE_FONT, ha="center",
                        va="center", color="#333333", zorder=3, gid="graph-edge-label",
                        bbox=dict(boxstyle="round,pad=0.12", fc="white", ec="none", alpha=0.9))
             for k, rels in names.items() if rels}
    keys = list(texts)
    lhalf = dict(zip(keys, _half_sizes(ax, [texts[k] for k in keys]))) if keys else {}
    spots = _label_spots(arrows, lhalf, xy, half)
    if any(v is None for v in spots.values()) and not final:
        for t in texts.values():
            t.remove()
        return False
    first = {(a.edge.source, a.edge.target): a for a in reversed(arrows)}
    spots = {k: first[k].at(0.5) if v is None else v for k, v in spots.items()}
    for k, t in texts.items():
        t.set_position(tuple(spots[k]))
    for arr in arrows:
        ax.add_patch(FancyArrowPatch(tuple(arr.start), tuple(arr.end), arrowstyle="-|>", mutation_scale=11,
                                     lw=arr.edge.width, color=arr.edge.color, connectionstyle=f"arc3,rad={arr.rad}",
                                     shrinkA=0, shrinkB=0, zorder=2.5 if arr.edge.color == HIGHLIGHT_EDGE_COLOR else 2))
    return True


def _legend(ax, entries: list[tuple], cut: list[str]) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles, names = [], []
    for label, color, kind in entries:
        handles.append(Line2D([], [], color=color, lw=2) if kind == "edge"
                       else Patch(facecolor=color, edgecolor="#333333", lw=0.8))
        names.append(label)
    for k, full in enumerate(cut, 1):
        handles.append(Line2D([], [], ls=""))
        names.append(f"[{k}] {full}")
    if handles:
        pos = ax.get_position()
        ncol = 1 if cut else min(len(handles), max(1, int(pos.width * ax.figure.get_figwidth() // 2.6)))
        ax.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol, fontsize=9,
                  frameon=False, handlelength=1.6)


def draw_graph(edges: Sequence[tuple[str, str, str]], ax=None, highlight_nodes: Sequence[str] = (),
               highlight_edges: Sequence[tuple[str, str, str]] = (), title: str | None = None, seed: int = 0,
               node_color: str = NODE_COLOR, highlight_color: str = HIGHLIGHT_COLOR, layout: str = "auto",
               roots: Sequence[str] | None = None, legend: Mapping[str, str] | None = None):
    """Draw (head, relation, tail) triples; `highlight_nodes` in `highlight_color`, `highlight_edges` in red.

    `legend` names what the colours mean: keys "node", "highlight" (nodes), "edge", "highlight_edge"; an
    entry appears only for a colour that is drawn. `roots` (default: the highlighted nodes) start the
    layered layout. Returns the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4.5))
    hi, hi_edges = set(highlight_nodes), {tuple(e) for e in highlight_edges}
    names = list(dict.fromkeys(x for h, _, t in edges for x in (h, t)))
    nodes = [GNode(n, n, highlight_color if n in hi else node_color) for n in names]
    gedges = [GEdge(h, t, r, HIGHLIGHT_EDGE_COLOR if (h, r, t) in hi_edges else EDGE_COLOR,
                    2.0 if (h, r, t) in hi_edges else 1.1) for h, r, t in edges]
    legend = dict(legend or {})
    shown = {"node": any(n not in hi for n in names), "highlight": any(n in hi for n in names),
             "edge": any(tuple(e) not in hi_edges for e in edges), "highlight_edge": any(tuple(e) in hi_edges for e in edges)}
    colors = {"node": (node_color, "node"), "highlight": (highlight_color, "node"), "edge": (EDGE_COLOR, "edge"),
              "highlight_edge": (HIGHLIGHT_EDGE_COLOR, "edge")}
    entries = [(legend[k], *colors[k]) for k in colors if legend.get(k) and shown[k]]
    draw_network(ax, nodes, gedges, layout=layout, roots=list(highlight_nodes if roots is None else roots),
                 legend=entries, seed=seed, title=title)
    return ax
