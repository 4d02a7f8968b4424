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
    """Draw a small labelled directed graph given as (head, relation, tail) triples."""
    import matplotlib.pyplot as plt
    import networkx as nx

    g = nx.MultiDiGraph()
    for h, r, t in edges:
        g.add_edge(h, t, relation=r)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4.5))
    if g.number_of_nodes() == 0:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "(empty graph)", ha="center", va="center")
        return ax
    pos = (nx.kamada_kawai_layout(g) if layout == "kk" and g.number_of_nodes() > 2 else nx.spring_layout(g, seed=seed, k=1.2))
    hi = set(highlight_nodes)
    colors = [highlight_color if n in hi else node_color for n in g.nodes]
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=900, edgecolors="#333333")
    nx.draw_networkx_labels(g, pos, ax=ax, labels={n: _wrap(n) for n in g.nodes}, font_size=8)
    hi_edges = {(h, t) for h, _, t in highlight_edges}
    edge_colors = [highlight_color if (u, v) in hi_edges else "#555555" for u, v in g.edges()]
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True, arrowsize=15, node_size=900, edge_color=edge_colors,
                           connectionstyle="arc3,rad=0.08")
    labels = {}
    for u, v, data in g.edges(data=True):
        labels.setdefault((u, v), []).append(data["relation"])
    nx.draw_networkx_edge_labels(g, pos, ax=ax, edge_labels={k: "\n".join(v) for k, v in labels.items()}, font_size=7)
    if title:
        ax.set_title(title)
    ax.set_axis_off()
    return ax


def _wrap(text: str, width: int = 14) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(str(text), width)) or str(text)
