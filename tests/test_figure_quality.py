"""Figures a book could print: on every demo figure (tests/figure_builders.py), no two labels of a graph
drawing overlap (boxes from the renderer), no text is under 8 pt at the saved size, no axes is empty
without saying why. The checker itself is shown to catch each defect."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from figure_builders import BUILDERS, figure_theme  # noqa: F401 (the fixture)
from kgrag_utils import plotting
from kgrag_utils.figure_quality import empty_axes, figure_problems, graph_label_overlaps, small_texts

pytestmark = pytest.mark.usefixtures("figure_theme")


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_demo_figure_has_no_overlap_no_small_text_no_empty_axes(name):
    fig = BUILDERS[name]()
    assert figure_problems(fig) == []


def test_the_checker_sees_overlapping_labels_small_text_and_empty_axes():
    fig, axes = plt.subplots(1, 3, figsize=(9, 3))
    axes[0].set_axis_off()
    axes[0].text(0.5, 0.5, "Quentin Yarborough", fontsize=9)
    axes[0].text(0.52, 0.5, "Hollow Signals", fontsize=9)
    axes[1].plot([0, 1], [0, 1])
    axes[1].set_title("tiny", fontsize=6)
    axes[2].bar(["pattern", "retrieval"], [0.0, 0.0])  # all-zero bars: empty axes from -0.04 to 0.04
    assert graph_label_overlaps(fig) == ["labels overlap in '': 'Quentin Yarborough' / 'Hollow Signals'"]
    assert small_texts(fig) == ["text 'tiny' is 6.0 pt (< 8)"]
    assert len(empty_axes(fig)) == 1 and len(figure_problems(fig)) == 3


def test_an_empty_plot_that_says_why_passes():
    fig, ax = plt.subplots(figsize=(4, 2))
    plotting.empty_state(ax, "no errors: no stage failed on any of the 8 questions")
    assert figure_problems(fig) == []


def test_graph_drawing_at_twenty_nodes_grows_the_figure_instead_of_shrinking_text():
    fig = BUILDERS["graph_30_facts"]()
    ax = fig.axes[0]
    nodes = [t for t in ax.texts if t.get_gid() == "graph-node"]
    assert len(nodes) >= 20 and min(t.get_fontsize() for t in nodes) >= 8
    assert fig.get_figwidth() > 10  # the (10, 7.5) figure was too small for 20+ readable boxes


def test_a_chain_is_drawn_in_columns_from_the_topic():
    fig = BUILDERS["quickstart_chain"]()
    ax = fig.axes[0]
    x = {t.get_text().replace("\n", " "): t.get_position()[0] for t in ax.texts if t.get_gid() == "graph-node"}
    topic = min(x, key=x.get)
    assert topic == "Quentin Yarborough"  # the topic leads the first column, the answers are in the last
    assert len({round(v, 3) for v in x.values()}) == 3  # topic, films, co-writers


def test_graph_drawings_are_deterministic(tmp_path):
    sizes = []
    for i in range(2):
        fig = BUILDERS["vector_rerank_worked_example"]()
        sizes.append(plotting.save_figure(fig, f"g{i}", formats=("png",), folder=tmp_path)[0].read_bytes())
        plt.close(fig)
    assert sizes[0] == sizes[1]


def test_legend_names_every_colour_drawn():
    fig = BUILDERS["vector_rerank_worked_example"]()
    names = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert names == ["other entity", "seed entity", "other candidate", "chosen by the rerank"]


def test_figure_names_carry_the_dataset_the_variant_and_the_run():
    from kgrag_utils.methods import figure_name

    assert figure_name("simgrag", "sample-movies-2hop", "worked_example") == "simgrag_sample-movies-2hop_worked_example"
    a = figure_name("simgrag", "metaqa-2hop", "latency", "oracle", run="01_simgrag-1a2b")
    b = figure_name("simgrag", "metaqa-2hop", "latency", "oracle", run="01_simgrag-3c4d")
    assert a == "simgrag_metaqa-2hop_latency_oracle__01_simgrag-1a2b" and a != b  # two runs, two files
    assert figure_name("report", "", "accuracy_vs_cost", run="r=1/x") == "report_accuracy_vs_cost__r-1-x"


def test_a_notebook_names_its_figures_by_the_run_its_recorder_writes(tmp_path, monkeypatch):
    from kgrag_utils.methods import get_method
    from kgrag_utils.records import RunRecorder

    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path))
    spec = get_method("quickstart")
    namespace = {"dataset": "sample-movies-2hop", "split": "test", "limit": 3, "seed": 0, "run_name": ""}
    recorder = RunRecorder("quickstart", spec.run_parameters(namespace), run_name=None)
    assert spec.run_name(namespace) == recorder.run_name
    assert spec.run_name({**namespace, "run_name": "00_quickstart-given"}) == "00_quickstart-given"


def test_static_pages_drop_the_notes_that_ask_to_hover():
    from kgrag_utils.explore.static import static_note

    assert static_note("12 compact facts: topic entity orange, derived answers green; hover a fact") == \
        "12 compact facts: topic entity orange, derived answers green"
    assert static_note("seeds orange; hover a step for the evidence the agent wrote") == "seeds orange"
    assert static_note("3 subgraphs") == "3 subgraphs"


def test_a_long_name_is_cut_in_its_box_and_given_in_full_in_the_legend():
    long = "The Extraordinarily Long Title of a Film That Nobody Could Fit in a Node Box"
    ax = plotting.draw_graph([(long, "directed_by", "Ann")], legend={"node": "entity"})
    box = next(t.get_text() for t in ax.texts if t.get_gid() == "graph-node" and t.get_text().endswith("[1]"))
    assert "…" in box and max(len(line) for line in box.split("\n")) <= 20
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["entity", f"[1] {long}"]
    assert figure_problems(ax.figure) == []
