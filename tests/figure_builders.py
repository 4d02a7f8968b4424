"""The demo's figures, drawn by the same calls as the notebooks on inputs like `make demo`'s (the generated
sample data; the LLM's parts, which a test cannot run, as records of the shape the methods write, several
copied from a demo run's figures). Used by tests/test_figure_quality.py.

Each builder returns a matplotlib figure; `BUILDERS` maps a name to it.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from kgrag_utils import plotting, report  # noqa: E402


@pytest.fixture
def figure_theme():
    """The notebooks' theme for a figure test; every figure closed after it (a test module uses it with
    `pytestmark = pytest.mark.usefixtures("figure_theme")` after importing it)."""
    plotting.set_theme()
    yield
    plt.close("all")


def _movies(limit: int = 8):
    from kgrag_utils.datasets import load_dataset

    return load_dataset("sample-movies-2hop", split="test", limit=limit, seed=0)


def quickstart_chain():
    """notebooks/00_quickstart.ipynb: the facts on the first question's gold chain."""
    ds = _movies()
    kg, q = ds.kg, ds.items[0]
    res = kg.follow_chain(kg.entity_id(q.topic_entities[0]), q.chain)
    fig, ax = plt.subplots(figsize=(7, 5))
    plotting.draw_graph(kg.triples(res.edge_ids[:12]), ax=ax, highlight_nodes=[q.topic_entities[0]],
                        title="Facts on the gold chain", legend={"highlight": "topic entity", "node": "other entity"})
    return fig


def neighbourhood(n_edges: int):
    """A crowded subgraph of the sample KG around the first question's topic (n_edges facts)."""
    ds = _movies(2)
    kg, q = ds.kg, ds.items[0]
    triples = kg.triples(range(kg.num_edges))
    topic = q.topic_entities[0]
    near = [t for t in triples if topic in (t[0], t[2])][:5]
    nodes = {x for t in near for x in (t[0], t[2])}
    more = [t for t in triples if (t[0] in nodes or t[2] in nodes) and t not in near]
    return near + more[: n_edges - len(near)], topic


#: a demo run's vector-rerank worked example (sample-passages, the README's figure): seeds Harbor Signal and
#: Seventh Boats, the chosen relations first
_RERANK_EDGES = [
    ("Harbor Signal", "genre", "thriller"), ("Harbor Signal", "released in", "1939"),
    ("Harbor Signal", "filmed in", "Ashwick"), ("Harbor Signal", "directed by", "Hallam Fairweather-Lund"),
    ("Seventh Boats", "directed by", "Hallam Fairweather-Lund"), ("Seventh Boats", "filmed in", "Wendbridge"),
    ("Seventh Boats", "released in", "1930"), ("Seventh Boats", "genre", "mystery film"),
    ("Scarlet Tides", "filmed in", "Ashwick"), ("Scarlet Tides", "directed by", "Sebastian Loxley-Brand"),
    ("Northbound Crossing", "genre", "mystery film"), ("Drifting Orchard", "filmed in", "Ashwick"),
    ("Scarlet Tides", "released in", "1935"), ("Scarlet Tides", "genre", "comedy"),
]


class _RerankIndex:
    """The one part of a vector-rerank `GraphIndex` the worked example reads: the triples of relation ids."""

    def __init__(self, edges):
        self.edges = list(edges)

    def triples(self, ids):
        return [tuple(self.edges[i]) for i in ids]


def vector_rerank_worked_example(edges=None, seeds=("Harbor Signal", "Seventh Boats")):
    """notebooks/03_vector_rerank.ipynb: seeds, chosen relations (the first ten) and the best other candidates."""
    from kgrag_utils.methods.vector_rerank import figures

    edges = list(edges or _RERANK_EDGES)
    chosen = list(range(min(10, len(edges))))
    record = {"graph": {"rerank": {"seed_entities": [[i, s] for i, s in enumerate(seeds)], "seed_relations": [],
                                   "candidates": [[i] for i in range(len(chosen), len(edges))]}},
              "rerank": {"chosen": [[i] for i in chosen]}}
    return figures.draw_worked_example(_RerankIndex(edges), record, max_edges=len(edges)).figure


def crowded_graph():
    """A graph drawing at 20+ nodes (the vector-rerank call on 30 facts of the sample KG)."""
    edges, topic = neighbourhood(30)
    return vector_rerank_worked_example(edges, seeds=(topic,))


def _simgrag_record(two_hop: bool) -> dict:
    if not two_hop:  # a demo run's worked example (the README's figure before this change)
        return {"question": "which writers shared a screenplay credit with [Quentin Yarborough]", "pattern_source": "llm",
                "pattern": {"triples": [["Quentin Yarborough", "shared screenplay credit with", "UNKNOWN writer 1"]],
                            "unknown": ["UNKNOWN writer 1"]},
                "subgraphs": [{"gsd": 1.202, "nodes": {"Quentin Yarborough": "Quentin Yarborough",
                                                       "UNKNOWN writer 1": "A Carousel for Fiora"},
                               "triples": [["A Carousel for Fiora", "written_by", "Quentin Yarborough"]]}]}
    return {"question": "which writers shared a screenplay credit with [Quentin Yarborough]", "pattern_source": "llm",
            "pattern": {"triples": [["UNKNOWN film 1", "written by", "Quentin Yarborough"],
                                    ["UNKNOWN film 1", "written by", "UNKNOWN writer 2"]],
                        "unknown": ["UNKNOWN film 1", "UNKNOWN writer 2"]},
            "subgraphs": [{"gsd": 0.41, "nodes": {"Quentin Yarborough": "Quentin Yarborough",
                                                  "UNKNOWN film 1": "A Carousel for Fiora",
                                                  "UNKNOWN writer 2": "Quentin Vantreight"},
                           "triples": [["A Carousel for Fiora", "written_by", "Quentin Yarborough"],
                                       ["A Carousel for Fiora", "written_by", "Quentin Vantreight"]]}]}


def simgrag_worked_example(two_hop: bool = False):
    from kgrag_utils.methods.simgrag import figures

    return figures.draw_worked_example(_simgrag_record(two_hop))


def _simgrag_outcomes(wrong: int, n: int = 8) -> list[dict]:
    stages = ("pattern", "generation", "retrieval")
    return [{"id": f"q{i}", "failed_stage": stages[i % 3] if i < wrong else None,
             "failed_stage_lenient": stages[i % 3] if i < wrong // 2 else None,
             "timings": {"node_search_ms": 2.0 + i, "relation_ms": 1.0 + i / 4, "enumerate_ms": 0.5 + i,
                         "pattern_s": 1.5 + i / 3, "answer_s": 0.8},
             "tokens": {"answer_cached": i > 0}} for i in range(n)]


def simgrag_stage_errors(wrong: int = 0):
    """The demo's case: no question wrong (an explicit "no errors" figure), or `wrong` of 8."""
    from kgrag_utils.methods.simgrag import figures

    return figures.failure_figure(_simgrag_outcomes(wrong), title="SimGRAG on sample-movies-2hop: wrong answers by failing stage")


def simgrag_latency():
    """8 questions; the answer call cached on all but one (one value in its group)."""
    from kgrag_utils.methods.simgrag import figures

    return figures.latency_figure(_simgrag_outcomes(0), title="SimGRAG on sample-movies-2hop: time per question by stage")


def compact_worked_example():
    """notebooks/02_compact_relations.ipynb: the compact facts of one question, topic and answers highlighted."""
    from kgrag_utils.methods.compact import figures

    ds = _movies()
    kg, q = ds.kg, ds.items[0]
    res = kg.follow_chain(kg.entity_id(q.topic_entities[0]), q.chain)
    record = {"compact_facts": [list(t) for t in kg.triples(res.edge_ids)], "topic_entities": list(q.topic_entities),
              "derived_answers": list(q.answers), "chain": " -> ".join(r for r, _ in q.chain)}
    fig, ax = plt.subplots(figsize=(8, 5.5))
    figures.draw_worked_example(record, ax=ax)
    return fig


def kgp_traversal():
    """notebooks/04_kgp.ipynb: one question's passage graph (TF-IDF graph, the no-LLM traversal)."""
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.kgp import KGP, KGPConfig, figures

    ds = load_dataset("sample-passages", split="test", limit=2, seed=0)
    kgp = KGP.prepare(KGPConfig(graph="tfidf", traversal="nollm"), ds)
    q = ds.items[0]
    prep = kgp.prepare_question(q)
    res = kgp.retrieve(q, prep)
    labels = [f"{t} {s[0]}" if s[0] > 0 else t for t, s in zip(prep.dset.titles, prep.dset.spans)]
    fig, ax = plt.subplots(figsize=(10, 7.5))
    figures.draw_worked_example(prep.graph, res, prep.gold, labels, ax=ax, max_nodes=45)
    return fig


def _scores():
    import pandas as pd

    rows = []
    for method, variant, dataset, metric, value, tokens, seconds in (
            ("compact", "derived (no LLM)", "sample-movies-2hop", "hits@1", 1.0, 0, 0.001),
            ("compact", "LLM reads compact facts", "sample-movies-2hop", "hits@1", 0.625, 230, 6.8),
            ("compact", "LLM reads top-100 facts", "sample-movies-2hop", "hits@1", 0.625, 850, 7.4),
            ("simgrag", "pattern=llm", "sample-movies-2hop", "hits@1", 0.625, 1350, 1.9),
            ("quickstart", "oracle-chain reader", "sample-movies-2hop", "hits@1", 0.875, 240, 0.75),
            ("vector_rerank", "naive", "sample-passages", "recall@5", 0.917, 0, 0.011),
            ("vector_rerank", "rerank", "sample-passages", "recall@5", 0.58, 1050, 4.5),
            ("vector_rerank", "rerank-filled", "sample-passages", "recall@5", 0.667, 1060, 4.5),
            ("kgp", "traversal=llm, graph=entity", "sample-passages", "recall@5", 0.75, 2300, 6.2),
            ("kgp", "traversal=llm, graph=entity", "sample-passages", "f1", 0.333, 2300, 6.2)):
        rows.append({"method": method, "variant": variant, "dataset": dataset, "metric": metric, "value": value,
                     "prompt_tokens_per_q": tokens, "seconds_per_q": seconds})
    return pd.DataFrame(rows)


def report_cost():
    """notebooks/05_report.ipynb: accuracy against prompt tokens and seconds per question."""
    return report.cost_figure(_scores())


def report_stage_errors(losses: bool = True):
    """notebooks/05_report.ipynb: the share of questions lost at each stage; a run group that lost nothing
    (SimGRAG, like the demo's) beside vector rerank's losses at the rerank (or, `losses=False`, none at all)."""
    import pandas as pd

    rows = [("simgrag", "sample-movies-2hop", "pattern", 0.0), ("simgrag", "sample-movies-2hop", "generation", 0.0),
            ("vector_rerank", "sample-passages", "failed: rerank reply unusable", 0.0),
            ("vector_rerank", "sample-passages", "rerank: its pick scores below plain retrieval's", 4.0 if losses else 0.0),
            ("kgp", "sample-passages", "reader (all gold retrieved, F1 = 0)", 2.0 if losses else 0.0)]
    df = pd.DataFrame([{"method": m, "dataset": d, "group": m, "stage": s, "n": 6, "count": c} for m, d, s, c in rows])
    df["share"] = df["count"] / df["n"]
    return report.stage_error_figure(df)


def explorer_static():
    """notebooks/06_explore.ipynb under papermill: a view's graphs as one static figure (pattern beside a
    20-fact subgraph)."""
    from kgrag_utils.explore.graphs import static_figure
    from kgrag_utils.explore.panels import graph_from_triples

    edges, topic = neighbourhood(22)
    record = _simgrag_record(True)
    pattern = graph_from_triples("pattern", record["pattern"]["triples"],
                                 roles={u: "unknown" for u in record["pattern"]["unknown"]})
    sub = graph_from_triples("subgraph 1: GSD 0.410, answer Quentin Vantreight", edges,
                             roles={topic: "topic", edges[-1][2]: "answer"},
                             edge_roles=["chosen"] * 3 + ["edge"] * (len(edges) - 3))
    return static_figure([pattern, sub])


BUILDERS = {
    "quickstart_chain": quickstart_chain,
    "simgrag_worked_example": simgrag_worked_example,
    "simgrag_worked_example_2hop": lambda: simgrag_worked_example(True),
    "simgrag_stage_errors_none": simgrag_stage_errors,
    "simgrag_stage_errors_some": lambda: simgrag_stage_errors(5),
    "simgrag_latency": simgrag_latency,
    "vector_rerank_worked_example": vector_rerank_worked_example,
    "graph_30_facts": crowded_graph,
    "compact_worked_example": compact_worked_example,
    "kgp_traversal": kgp_traversal,
    "report_accuracy_vs_cost": report_cost,
    "report_stage_errors": report_stage_errors,
    "report_stage_errors_none": lambda: report_stage_errors(False),
    "explorer_static": explorer_static,
}
