"""The labelled figures keep their labels apart: no two rendered label boxes overlap.

Covers the report's accuracy-against-cost scatter, KGP's passage-graph drawing and the shared graph
drawing (vector rerank's and SimGRAG's worked examples), on crowded inputs like the demo's.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from figure_builders import figure_theme, kgp_traversal, neighbourhood  # noqa: F401 (the fixture)
from kgrag_utils import plotting, report

pytestmark = pytest.mark.usefixtures("figure_theme")


def _boxes_apart(ax):
    texts = [t for t in ax.texts if t.get_visible() and t.get_text()]
    assert texts, "nothing labelled"
    assert plotting.label_overlaps(texts) == []
    return texts


def test_label_overlaps_sees_overlapping_and_separate_boxes():
    fig, ax = plt.subplots(figsize=(4, 3))
    a = ax.text(0.5, 0.5, "first label")
    b = ax.text(0.52, 0.51, "second label")
    c = ax.text(0.05, 0.05, "far away")
    assert plotting.label_overlaps([a, b, c]) == [("first label", "second label")]
    assert plotting.label_overlaps([a, c]) == []


def test_place_labels_separates_a_pile_of_labels_and_is_deterministic():
    positions = []
    for _ in range(2):
        fig, ax = plt.subplots(figsize=(6, 4))
        xs, ys = [0.5 + 0.01 * i for i in range(8)], [0.5] * 8
        ax.scatter(xs, ys)
        texts = [ax.text(x, y, f"label number {i}") for i, (x, y) in enumerate(zip(xs, ys))]
        assert len(plotting.label_overlaps(texts)) > 10
        assert plotting.place_labels(ax, texts, xs, ys) == 0
        positions.append([t.get_position() for t in texts])
        plt.close(fig)
    assert positions[0] == positions[1]


def _crowded_scores() -> pd.DataFrame:
    """Points like the demo report's: clusters at the same cost and score, long variant names."""
    rows = []

    def add(method, variant, dataset, metric, value, tokens, seconds):
        rows.append({"method": method, "variant": variant, "dataset": dataset, "metric": metric, "value": value,
                     "prompt_tokens_per_q": tokens, "seconds_per_q": seconds})

    add("compact", "derived (no LLM)", "sample-movies-2hop", "hits@1", 1.0, 0, 0.001)
    add("compact", "LLM reads compact facts", "sample-movies-2hop", "hits@1", 0.625, 230, 6.8)
    add("compact", "LLM reads top-100 facts", "sample-movies-2hop", "hits@1", 0.625, 850, 7.4)
    add("simgrag", "pattern=llm", "sample-movies-2hop", "hits@1", 0.625, 1350, 1.9)
    add("simgrag", "pattern=oracle", "sample-movies-2hop", "hits@1", 0.625, 1300, 2.0)
    add("quickstart", "oracle-chain reader", "sample-movies-2hop", "hits@1", 0.875, 240, 0.75)
    for v, val, tok in (("naive", 0.917, 0), ("expand", 0.75, 0), ("rerank", 0.58, 1050),
                        ("rerank-filled", 0.667, 1060), ("rerank-padded", 0.833, 1070)):
        add("vector_rerank", v, "sample-passages", "recall@5", val, tok, 4.5 if tok else 0.011)
    add("kgp", "traversal=llm, graph=entity", "sample-passages", "recall@5", 0.75, 2300, 6.2)
    add("kgp", "traversal=llm, graph=entity", "sample-passages", "f1", 0.333, 2300, 6.2)
    add("kgp", "traversal=nollm, graph=entity", "sample-passages", "recall@5", 0.667, 0, 0.05)
    return pd.DataFrame(rows)


def test_cost_figure_labels_do_not_overlap():
    fig = report.cost_figure(_crowded_scores())
    for ax in fig.axes[:2]:
        assert len(_boxes_apart(ax)) == 14
        legend = ax.get_legend()
        if legend is not None:  # the legend is outside the plotting area
            r = fig.canvas.get_renderer()
            assert legend.get_window_extent(r).x0 >= ax.get_window_extent(r).x1


def test_cost_figure_separates_runs_with_the_same_cost_and_score():
    # the demo on main gave four runs at one point (prompt tokens ~1k, score 0.75) and two at another: adjustText
    # alone left those labels piled up (no direction to repel in), place_labels staggers them first
    df = _crowded_scores()
    same = {"prompt_tokens_per_q": 1050, "seconds_per_q": 4.5, "value": 0.75}
    for i in range(5):
        df.loc[i + 6, list(same)] = list(same.values())
    df.loc[3, ["prompt_tokens_per_q", "seconds_per_q"]] = df.loc[4, ["prompt_tokens_per_q", "seconds_per_q"]].values
    fig = report.cost_figure(df)
    for ax in fig.axes[:2]:
        assert len(_boxes_apart(ax)) == 14


@pytest.mark.parametrize("layout", ["kk", "spring"])
def test_graph_drawing_labels_do_not_overlap(layout):
    edges, topic = neighbourhood(14)
    # two relations between the same pair, as vector rerank's candidates often have
    edges.append((edges[0][0], "written_by", edges[0][2]))
    fig, ax = plt.subplots(figsize=(10, 7.5))
    plotting.draw_graph(edges, ax=ax, highlight_nodes=[topic], highlight_edges=edges[:3], layout=layout,
                        title="Seeds (red nodes), chosen relations (red edges) and top candidates")
    texts = _boxes_apart(ax)
    names = {t.get_text().replace("\n", " ") for t in texts}
    assert topic in names or any(topic.startswith(n) for n in names)


def test_worked_example_pattern_and_subgraph_labels_do_not_overlap():
    # SimGRAG draws a small pattern graph beside its match: two axes, few nodes, long names
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    plotting.draw_graph([("?film", "written_by", "Quentin Thistlewood"), ("?film", "written_by", "?writer"),
                         ("?film", "release_year", "?year")], ax=axes[0], layout="kk")
    plotting.draw_graph([("A Ferry for Hester", "written_by", "Quentin Thistlewood"),
                         ("A Ferry for Hester", "written_by", "Cassius Ingleby"),
                         ("A Ferry for Hester", "release_year", "1982")], ax=axes[1], layout="kk")
    for ax in axes:
        _boxes_apart(ax)


def test_kgp_passage_graph_labels_do_not_overlap():
    texts = _boxes_apart(kgp_traversal().axes[0])  # one question's passage graph (tests/figure_builders.py)
    assert len(texts) >= 4
