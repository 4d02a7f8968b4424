"""Drawing a view's `Graph`: plotly (pan, zoom, and every fact on hover) with a live kernel, matplotlib
without one (papermill, `make demo`, a static HTML export).

Why plotly: its `FigureWidget` is an ipywidget (through anywidget) that JupyterLab 4 renders offline from
the JavaScript inside the Python package, with pan, zoom and hover built in, and it updates in place when
another example is picked. ipycytoscape has had no release since 2022 and targets the JupyterLab 3 widget
stack; pyvis writes standalone HTML pages (an iframe, no kernel round trip). The positions come from
networkx (already a dependency), seeded, so a view draws the same way twice.
"""

from __future__ import annotations

import gc

from typing import Sequence

from .panels import ROLE_COLORS, Graph

__all__ = ["layout_positions", "to_plotly", "draw_static", "static_figure"]

_EMPTY = "(nothing to draw)"


def layout_positions(g: Graph, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Node positions in [-1, 1]^2: the graph's own `pos` where it covers every node, else a seeded
    networkx spring layout (kept for the next call with the same nodes and edges: stepping back is free)."""
    if g.pos and all(n.id in g.pos for n in g.nodes):
        return dict(g.pos)
    key = (seed, tuple(g.node_ids()), tuple((e.source, e.target) for e in g.edges))
    hit = _LAYOUTS.get(key)
    if hit is None:
        hit = _LAYOUTS[key] = _spring(g, seed)
        if len(_LAYOUTS) > 256:
            _LAYOUTS.pop(next(iter(_LAYOUTS)))
    return dict(hit)


_LAYOUTS: dict[tuple, dict] = {}


def _spring(g: Graph, seed: int) -> dict[str, tuple[float, float]]:
    import networkx as nx

    nxg = nx.Graph()
    nxg.add_nodes_from(g.node_ids())
    nxg.add_edges_from((e.source, e.target) for e in g.edges if e.source != e.target)
    n = nxg.number_of_nodes()
    if n == 0:
        return {}
    if n == 1:
        return {g.nodes[0].id: (0.0, 0.0)}
    pos = nx.spring_layout(nxg, seed=seed, k=2.5 / n ** 0.5, iterations=60)
    return {k: (float(x), float(y)) for k, (x, y) in pos.items()}


def _edge_traces(g: Graph, pos) -> list:
    import plotly.graph_objects as go

    traces = []
    for role in dict.fromkeys(e.role for e in g.edges):
        xs, ys = [], []
        for e in g.edges:
            if e.role == role and e.source in pos and e.target in pos:
                (x0, y0), (x1, y1) = pos[e.source], pos[e.target]
                xs += [x0, x1, None]
                ys += [y0, y1, None]
        width = 3 if role in ("chosen", "path") else 1.5
        traces.append(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False, name=f"edges:{role}",
                                 line=dict(color=ROLE_COLORS.get(role, "#888888"), width=width)))
    # one invisible marker at each edge's middle carries the fact's hover text and the relation label
    mids = [e for e in g.edges if e.source in pos and e.target in pos]
    traces.append(go.Scatter(
        x=[_mid(pos, e, 0) for e in mids], y=[_mid(pos, e, 1) for e in mids], mode="markers+text",
        text=[e.label for e in mids], textfont=dict(size=9, color="#555555"), hovertext=[e.hover or e.label for e in mids],
        hoverinfo="text", marker=dict(size=10, color="rgba(0,0,0,0)"), showlegend=False, name="facts"))
    return traces


def _arrow_trace(g: Graph, pos):
    """Arrow heads three quarters along each edge, pointing head → tail (one trace: cheap to build)."""
    import math

    import plotly.graph_objects as go

    xs, ys, angles, colors = [], [], [], []
    for e in g.edges:
        if e.source in pos and e.target in pos and e.source != e.target:
            (x0, y0), (x1, y1) = pos[e.source], pos[e.target]
            xs.append(x0 + 0.75 * (x1 - x0))
            ys.append(y0 + 0.75 * (y1 - y0))
            angles.append(math.degrees(math.atan2(x1 - x0, y1 - y0)))
            colors.append(ROLE_COLORS.get(e.role, "#888888"))
    return go.Scatter(x=xs, y=ys, mode="markers", hoverinfo="skip", showlegend=False, name="arrows",
                      marker=dict(symbol="arrow", size=11, angle=angles, color=colors))


def _mid(pos, e, axis: int) -> float:
    a, b = pos[e.source][axis], pos[e.target][axis]
    return (a + b) / 2 if e.source != e.target else a + 0.08


def to_plotly(g: Graph, widget: bool = False, height: int = 380, width: int = 560):
    """The graph as a plotly figure (a `FigureWidget` with `widget=True`): nodes coloured by role,
    relation names on the edges, arrows head → tail, the fact or the node's details on hover. The size is
    fixed: a widget drawn while its cell is scrolled out of view has no container size to follow."""
    import plotly.graph_objects as go

    pos = layout_positions(g)
    nodes = [n for n in g.nodes if n.id in pos]
    node_trace = go.Scatter(
        x=[pos[n.id][0] for n in nodes], y=[pos[n.id][1] for n in nodes], mode="markers+text",
        text=[_wrap(n.label) for n in nodes], textposition="top center", textfont=dict(size=10),
        hovertext=[n.hover or n.label for n in nodes], hoverinfo="text", name="nodes", showlegend=False,
        marker=dict(size=18, color=[ROLE_COLORS.get(n.role, ROLE_COLORS["default"]) for n in nodes],
                    line=dict(width=1, color="#333333")))
    layout = go.Layout(title=dict(text=g.title or _EMPTY, font=dict(size=13)), height=height, width=width,
                       showlegend=False, margin=dict(l=10, r=10, t=40, b=10), hovermode="closest", dragmode="pan",
                       xaxis=dict(visible=False, range=_padded(pos, 0)),
                       yaxis=dict(visible=False, range=_padded(pos, 1)),
                       plot_bgcolor="white")
    data = _edge_traces(g, pos) + [_arrow_trace(g, pos), node_trace]
    figure = go.FigureWidget(data=data, layout=layout) if widget else go.Figure(data=data, layout=layout)
    _freeze_long_lived()
    return figure


_FROZEN = False


def _freeze_long_lived() -> None:
    """Once per process, after plotly's first figure: move every object alive then (plotly's validators and
    the widget stack, ~170,000 long-lived objects) into the permanent generation (`gc.freeze`), so that a
    full collection during a later click does not walk them (it took ~1 s on a loaded machine: docs/EXPLORE.md)."""
    global _FROZEN
    if not _FROZEN:
        _FROZEN = True
        gc.collect()
        gc.freeze()


def _padded(pos, axis: int, pad: float = 0.3) -> list[float] | None:
    """The axis range around the nodes, with room for their labels."""
    values = [xy[axis] for xy in pos.values()]
    return [min(values) - pad, max(values) + pad] if values else None


def _wrap(text: str, width: int = 22) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def draw_static(g: Graph, ax) -> None:
    """The graph on a matplotlib axis for a static page: nodes as boxes holding their names, coloured by
    role, relation names on the edges, laid out without overlaps (`graph_drawing`: the graph's own
    positions are not used, they leave no room for readable labels) and a legend naming each role drawn."""
    from ..graph_drawing import GEdge, GNode, draw_network

    nodes = [GNode(n.id, n.label or n.id, ROLE_COLORS.get(n.role, ROLE_COLORS["default"])) for n in g.nodes]
    ids = {n.id for n in nodes}
    edges = [GEdge(e.source, e.target, e.label, ROLE_COLORS.get(e.role, "#888888"), 2.0 if e.role in ("chosen", "path") else 1.0)
             for e in g.edges[:_STATIC_EDGES] if e.source in ids and e.target in ids]
    roles = list(dict.fromkeys(n.role for n in g.nodes))
    legend = [("other" if role == "default" else role, ROLE_COLORS.get(role, ROLE_COLORS["default"]), "node")
              for role in roles if len(roles) > 1]
    legend += [(f"{role} fact", ROLE_COLORS[role], "edge") for role in dict.fromkeys(e.role for e in g.edges)
               if role in ("chosen", "path")]
    roots = [n.id for n in g.nodes if n.role in ("topic", "seed")]
    draw_network(ax, nodes, edges, layout="auto", roots=roots, legend=legend, title=_wrap(g.title or _EMPTY, 70))
    if len(g.edges) > _STATIC_EDGES:
        ax.set_title(f"{ax.get_title()}\n(first {_STATIC_EDGES} of {len(g.edges)} facts drawn)", fontsize=10)


_STATIC_EDGES = 40


def static_figure(graphs: Sequence[Graph], width: float = 5.0, height: float = 3.6):
    """Graphs side by side in one matplotlib figure (at most three a row); each panel grows to what its
    graph needs, so labels stay at their font size."""
    import matplotlib.pyplot as plt

    n = max(len(graphs), 1)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    fig.subplots_adjust(left=0.02, right=0.98, top=1 - 0.5 / (height * rows), bottom=0.6 / (height * rows),
                        wspace=0.1, hspace=0.35)  # before drawing: the drawings fix their scale to the axes
    for ax, g in zip(axes.flat, graphs):
        draw_static(g, ax)
    for ax in list(axes.flat)[len(graphs):]:
        ax.set_axis_off()
    return fig
