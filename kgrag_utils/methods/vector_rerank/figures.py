"""Tables and figures for the notebook: ours beside the published numbers, the worked example's subgraph,
the questions lost at each stage, recall@k curves and expansion size against degree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..figure_roles import stage_loss_figure
from .config import VARIANT_LABELS
from .published import PAPER, PUBLISHED_SETUP
from .stages.kgqa import KGQA_VARIANT_LABELS
from .stages.expansion import expand
from .summary import summarize

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .stages.graph_index import GraphIndex

__all__ = ["scores_table", "draw_worked_example", "failure_figure",  # the roles every method names alike
           "recall_curve_frame", "expansion_sizes", "worked_example_edges"]

_PUBLISHED_SETUP = PUBLISHED_SETUP


def scores_table(summary: dict, dataset: str, setup: str, kgqa: bool = False) -> "pd.DataFrame":
    """Ours beside the published numbers: passage recall per variant, then the published rows; on KG
    questions (`kgqa`) Hits@1, containment and fact hit per variant (nothing was published for them)."""
    return _kgqa_table(summary, setup) if kgqa else _passage_table(summary, dataset, setup)


def _passage_table(summary: dict, dataset: str, setup: str) -> "pd.DataFrame":
    """One row per variant of ours (Recall@2/@5 in %, n, failed), then the published Recall@5 rows."""
    import pandas as pd

    rows = []
    for v, s in summary["variants"].items():
        rows.append({"source": f"ours ({setup})", "variant": v, "Recall@2": round(100 * s["recall@2"], 1),
                     "Recall@5": round(100 * s["recall@5"], 1), "n": s["n"], "n_failed": s["n_failed"],
                     "passages/question": round(s["mean_passages"], 2), "what": VARIANT_LABELS[v]})
    for name, r5 in (PAPER.get(dataset) or {}).items():
        rows.append({"source": _PUBLISHED_SETUP, "variant": name, "Recall@2": np.nan, "Recall@5": r5, "n": np.nan,
                     "n_failed": np.nan, "passages/question": np.nan, "what": "as published"})
    return pd.DataFrame(rows)


def _kgqa_table(summary: dict, setup: str) -> "pd.DataFrame":
    """KG questions: one row per variant (Hits@1 strict, containment lenient, fact hit; %, n, failed).

    The vector-rerank authors published passage recall only, so there is no published row here;
    the other methods' MetaQA numbers are in their own notebooks and in the report notebook.
    """
    import pandas as pd

    rows = []
    for v, s in summary["variants"].items():
        pct = {k: (round(100 * s[k], 1) if k in s else np.nan) for k in ("hits@1", "containment", "fact_hit")}
        rows.append({"source": f"ours ({setup})", "variant": v, "Hits@1 (strict)": pct["hits@1"],
                     "containment (lenient)": pct["containment"], "fact hit": pct["fact_hit"], "n": s["n"],
                     "n_failed": s["n_failed"], "facts/question": round(s.get("mean_facts", 0.0), 2),
                     "what": KGQA_VARIANT_LABELS[v]})
    return pd.DataFrame(rows)


def recall_curve_frame(summary: dict) -> "pd.DataFrame":
    """Long table (variant, k, recall %) of the mean recall@k curves."""
    import pandas as pd

    rows = [{"variant": v, "k": k, "recall": 100 * r}
            for v, s in summary["variants"].items() for k, r in enumerate(s.get("recall_curve", []), start=1)]
    return pd.DataFrame(rows, columns=["variant", "k", "recall"])


def expansion_sizes(index: "GraphIndex", records: Sequence[dict], degrees: Sequence[int] = (0, 1, 2),
                    role: str = "expand") -> "pd.DataFrame":
    """Relations reached from each record's seeds at each degree (no LLM: the seeds are in the records)."""
    import pandas as pd

    rows = []
    for r in records:
        g = r.get("graph", {}).get(role)
        if g is None:
            continue
        ents = [e[0] for e in g["seed_entities"]]
        rels = [s[0] for s in g["seed_relations"]]
        for d in degrees:
            exp = expand(index.incidence, index.incidence_t, ents, rels, d)
            rows.append({"id": r["id"], "degree": d, "relations": len(exp)})
    return pd.DataFrame(rows, columns=["id", "degree", "relations"])


def worked_example_edges(index: "GraphIndex", record: dict, role: str = "rerank", max_edges: int = 24) -> dict:
    """Triples to draw for one record: the chosen relations (highlighted), seed relations, then the best
    other candidates, up to `max_edges`; plus the seed entity names to highlight."""
    g = record["graph"].get(role) or record["graph"].get("expand")
    chosen = [c[0] for c in record.get("rerank", {}).get("chosen", [])] if role == "rerank" else []
    order: list[int] = []
    for rid in chosen + [s[0] for s in g["seed_relations"]] + [c[0] for c in g["candidates"]]:
        if rid not in order:
            order.append(rid)
    order = order[:max_edges]
    return {"edges": index.triples(order), "highlight_edges": index.triples(chosen),
            "highlight_nodes": [e[1] for e in g["seed_entities"]]}


def draw_worked_example(index: "GraphIndex", record: dict, role: str = "rerank", max_edges: int = 24, ax=None):
    """The worked example's subgraph (`worked_example_edges`): seed entities, the relations the rerank chose,
    and other candidates."""
    import matplotlib.pyplot as plt

    from ...plotting import draw_graph

    edges = worked_example_edges(index, record, role=role, max_edges=max_edges)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 7.5))
    draw_graph(edges["edges"], ax=ax, highlight_nodes=edges["highlight_nodes"],
               highlight_edges=edges["highlight_edges"], layout="kk",
               title="Seeds, the relations the rerank chose, and other candidates",
               legend={"highlight": "seed entity", "node": "other entity", "highlight_edge": "chosen by the rerank",
                       "edge": "other candidate"})
    return ax


def failure_figure(records: Sequence[dict], title: str = ""):
    """Questions whose rerank reply was unusable, and those lost at the rerank (the run summary's
    `stage_errors`; runs without the rerank variant attribute nothing)."""
    s = summarize(records)
    return stage_loss_figure(s["stage_errors"], s["n_scored"],
                             title or f"Where vector rerank lost questions ({s['n_scored']} scored)")
