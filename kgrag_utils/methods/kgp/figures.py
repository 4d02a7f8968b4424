"""KGP's tables and figures: our scores, one question's passage graph with its traversal, the questions lost
at each stage, the two sweeps, recall@k curves."""

from __future__ import annotations

import textwrap
from typing import Mapping, Sequence

import numpy as np

from ...plotting import place_labels
from ..figure_roles import stage_loss_figure
from .stages.docsets import GoldUnits
from .stages.graphs import PassageGraph
from .stages.traversal import TraversalResult
from .summary import summarize

__all__ = ["scores_table", "draw_worked_example", "failure_figure",  # the roles every method names alike
           "example_nodes", "plot_density_sweep", "plot_branching_sweep", "plot_recall_curves"]

ROLE_COLORS = {"seed": "#fdbf6f", "chosen": "#b2df8a", "gold": "#fb9a99", "other": "#d9d9d9"}


def scores_table(summary: Mapping, dataset: str, graph: str, traversal: str, model: str = "-",
                 reader: bool = True):
    """Our run in the published tables' terms (F1 and EM x100 with the reader; recall@30 and SF-EM@30), one
    row; the published tables are `published.published_frame(published.TABLE1_F1)` and its siblings."""
    import pandas as pd

    ours = {"dataset": dataset, "n": summary["n"], "graph": graph, "traversal": traversal, "agent/reader": model,
            "F1 x100": round(100 * summary["f1"], 2) if reader else None,
            "EM x100": round(100 * summary["em"], 2) if reader else None,
            "recall@30": summary.get("recall@30"), "SF-EM@30": summary.get("sf_em@30")}
    return pd.DataFrame([ours]).set_index("dataset")


def failure_figure(records: Sequence[Mapping], title: str = ""):
    """Questions lost at retrieval (no gold passage within the largest k) and, with the reader, at the reader
    (every gold passage retrieved, F1 = 0): the run summary's `stage_errors`."""
    s = summarize(records)
    return stage_loss_figure(s["stage_errors"], s["n_scored"], title or f"Where KGP lost questions ({s['n_scored']} scored)")


def example_nodes(graph: PassageGraph, result: TraversalResult, gold: GoldUnits, max_nodes: int = 40) -> list[int]:
    """The nodes worth drawing: retrieved passages, gold passages, and a few neighbours of the path."""
    keep = list(dict.fromkeys(list(result.ranked) + [int(p) for c in gold.cover for p in c]))
    extra = []
    for node in result.ranked[: max(1, len(result.ranked) // 3)]:
        extra.extend(graph.neighbors(node)[:2].tolist())
    for x in extra:
        if len(keep) >= max_nodes:
            break
        if x not in keep:
            keep.append(x)
    return keep[:max(max_nodes, len(result.ranked))]


def _component_layout(g, seed: int = 0) -> dict:
    """Spring layout per connected component, components side by side (largest first), so that a
    few isolated passages do not squash the drawing."""
    import networkx as nx

    comps = sorted(nx.connected_components(g), key=lambda c: (-len(c), min(c)))
    pos, x = {}, 0.0
    for comp in comps:
        sub = g.subgraph(comp)
        width = max(0.6, float(np.sqrt(len(comp))))
        if len(comp) == 1:
            layout = {next(iter(comp)): np.zeros(2)}
        else:
            layout = nx.spring_layout(sub, seed=seed, k=1.5 / np.sqrt(len(comp)))
        for node, xy in layout.items():
            pos[node] = np.array([x + width / 2 + xy[0] * width / 2, xy[1] * width / 2])
        x += width + 0.3
    return pos


def draw_worked_example(graph: PassageGraph, result: TraversalResult, gold: GoldUnits, labels: Sequence[str],
                        ax=None, max_nodes: int = 40, title: str | None = None, seed: int = 0):
    """Seeds (orange), passages the traversal picked (green), gold passages (red ring), the edges
    the traversal walked (thick), other graph edges among the drawn nodes (thin grey)."""
    import matplotlib.pyplot as plt
    import networkx as nx

    nodes = example_nodes(graph, result, gold, max_nodes)
    g = graph.to_networkx(nodes)
    walked = {(p, c) for c, p in result.parent.items() if p is not None}
    for p, c in walked:
        g.add_edge(p, c)
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 7))
    pos = _component_layout(g, seed)
    seeds = {n for n, p in result.parent.items() if p is None}  # first seeds and reseeds
    chosen = set(result.ranked) - seeds
    gold_nodes = {int(p) for c in gold.cover for p in c}
    colors = [ROLE_COLORS["seed"] if n in seeds else ROLE_COLORS["chosen"] if n in chosen else ROLE_COLORS["other"]
              for n in g.nodes]
    edge_lw = [2.8 if (u, v) in walked or (v, u) in walked else 0.4 for u, v in g.edges]
    edge_c = ["#1f78b4" if (u, v) in walked or (v, u) in walked else "#bbbbbb" for u, v in g.edges]
    nx.draw_networkx_edges(g, pos, ax=ax, width=edge_lw, edge_color=edge_c)
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=260,
                           edgecolors=["#e31a1c" if n in gold_nodes else "#555555" for n in g.nodes],
                           linewidths=[3.0 if n in gold_nodes else 0.6 for n in g.nodes])
    show = set(result.seeds[:4]) | gold_nodes | {c for _, c in sorted(walked)[:6]}
    texts = [ax.text(*pos[n], "\n".join(textwrap.wrap(str(labels[n]), 18)[:2]), fontsize=8, ha="center", va="center",
                     zorder=4, bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8))
             for n in g.nodes if n in show]
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", ls="", markersize=9, markerfacecolor=ROLE_COLORS[k], markeredgecolor="#555")
               for k in ("seed", "chosen", "other")]
    handles.append(Line2D([], [], marker="o", ls="", markersize=9, markerfacecolor="white", markeredgecolor="#e31a1c",
                          markeredgewidth=2.5))
    handles.append(Line2D([], [], color="#1f78b4", lw=2.8))
    # the legend sits below the drawing, so it never hides a node or a label
    ax.legend(handles, ["TF-IDF seed (or reseed)", "picked by traversal", "not retrieved", "supporting (gold)", "traversal step"],
              loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=5, fontsize=8, frameon=False)
    ax.set_title(title or f"passage graph ({graph.kind}): {len(nodes)} of {graph.n} passages drawn")
    ax.set_axis_off()
    xs, ys = zip(*(pos[n] for n in g.nodes))
    pad = 0.08 * max(np.ptp(xs), np.ptp(ys), 1e-9)
    ax.set_xlim(min(xs) - pad, max(xs) + pad)
    ax.set_ylim(min(ys) - pad, max(ys) + pad)
    ax.figure.canvas.draw()
    # labels start on their passage and are moved apart (adjustText), away from every drawn node
    place_labels(ax, texts, xs, ys)
    return ax


def plot_density_sweep(rows: Sequence[Mapping], ax=None, metric: str = "sf_em@30", dataset: str = ""):
    """Supporting-fact recall vs graph density per constructor, with neighbour precision (dashed)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4.2))
    ax2 = ax.twinx()
    by: dict[str, list[Mapping]] = {}
    for r in rows:
        by.setdefault(r["constructor"], []).append(r)
    for i, (name, rs) in enumerate(sorted(by.items())):
        rs = sorted(rs, key=lambda r: r["density"])
        x = [r["density"] for r in rs]
        color = f"C{i}"
        ax.plot(x, [r[metric] for r in rs], "o-", color=color, label=f"{name}: {metric} (traversal)")
        ax.plot(x, [r["sf_pair_recall"] for r in rs], "s:", color=color, alpha=0.7, label=f"{name}: gold pairs linked")
        ax2.plot(x, [r["sf_neighbour_precision"] for r in rs], "^--", color=color, alpha=0.5,
                 label=f"{name}: neighbour precision")
    ax.set_xscale("log")
    ax.set_xlabel("graph density (edges / passage pairs)")
    ax.set_ylabel("supporting-fact recall")
    ax2.set_ylabel("precision of gold passages' neighbours")
    ax2.grid(False)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
    ax.set_title(f"density vs supporting-fact recall {dataset}".strip())
    return ax


def plot_branching_sweep(series: Mapping[str, Sequence[Mapping]], ax=None, metrics: Sequence[str] = ("recall@30", "sf_em@30")):
    """Recall vs branching factor at a fixed budget; one line per (series name, metric)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for i, (name, rows) in enumerate(series.items()):
        rows = sorted(rows, key=lambda r: r["branching"])
        for j, m in enumerate(metrics):
            ax.plot([r["branching"] for r in rows], [r[m] for r in rows], ["o-", "s--", "^:"][j % 3], color=f"C{i}",
                    label=f"{name} {m}")
    ax.set_xlabel("branching factor b (budget fixed; seeds = budget // (b+1))")
    ax.set_ylabel("recall")
    ax.legend(fontsize=8)
    ax.set_title("branching factor vs recall")
    return ax


def plot_recall_curves(summaries: Mapping[str, Mapping], ks: Sequence[int], ax=None, prefix: str = "recall"):
    """recall@k (or sf_em@k with prefix='sf_em') against k, one line per variant."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for name, s in summaries.items():
        ax.plot(list(ks), [s.get(f"{prefix}@{k}", np.nan) for k in ks], "o-", label=name)
    ax.set_xlabel("k (passages)")
    ax.set_ylabel(f"{prefix}@k")
    ax.set_xticks(list(ks))
    ax.legend(fontsize=8)
    ax.set_title(f"{prefix}@k per variant")
    return ax
