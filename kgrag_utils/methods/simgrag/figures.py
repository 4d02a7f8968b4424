"""Tables and figures for the SimGRAG notebook: our scores beside the paper's, a worked example drawn
as pattern graph vs matched subgraph, the GSD terms, stage-wise errors and stage latencies."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .record import STAGES
from .published import PAPER, PAPER_NOTE, PAPER_NOTE_VERIFY, paper_table

__all__ = ["comparison_table", "gsd_terms_table", "draw_worked_example",
           "stage_error_figure", "latency_figure"]

def comparison_table(dataset: str, summary: dict, task: str = "qa"):
    """Our strict and lenient scores (all questions and the answerable subset) beside the paper's figure.

    For fact verification (task "verify"): accuracy (the parsed verdict equals the label) and the
    reference code's lenient check (the label's text appears in the reply), on all claims."""
    import pandas as pd

    paper = PAPER["SimGRAG"].get(dataset)
    if task == "verify":
        part = summary.get("all") or {}
        rows = [{"run": "ours, all claims", "n": part.get("n"), "accuracy (%)": _pct(part.get("hits@1")),
                 "label in reply, lenient (%)": _pct(part.get("containment")), "n_failed": part.get("n_failed")},
                {"run": PAPER_NOTE_VERIFY, "n": None,
                 "accuracy (%)": paper if paper is not None else "n/a for this dataset",
                 "label in reply, lenient (%)": None, "n_failed": None}]
        return pd.DataFrame(rows).set_index("run")
    rows = []
    for subset in ("all", "answerable"):
        part = summary.get(subset) or {}
        rows.append({"run": f"ours, {subset} questions", "n": part.get("n"),
                     "Hits@1 strict (%)": _pct(part.get("hits@1")), "containment lenient (%)": _pct(part.get("containment")),
                     "n_failed": part.get("n_failed")})
    rows.append({"run": PAPER_NOTE, "n": None, "Hits@1 strict (%)": None,
                 "containment lenient (%)": paper if paper is not None else "n/a for this dataset", "n_failed": None})
    return pd.DataFrame(rows).set_index("run")


def _pct(x):
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else round(100 * float(x), 1)


def gsd_terms_table(record: dict):
    """One row per retrieved subgraph: GSD, its node and relation terms, and the facts in KG direction."""
    import pandas as pd

    rows = []
    for i, sg in enumerate(record.get("subgraphs") or [], 1):
        rows.append({"graph": i, "GSD": sg["gsd"],
                     "node terms": ", ".join(f"{k}: {v:.3f}" for k, v in sg["node_terms"].items()),
                     "relation terms": ", ".join(f"{v:.3f}" for v in sg["edge_terms"]),
                     "reversed edges": sum(sg["reversed"]), "injective": sg["injective"],
                     "facts (KG direction)": "; ".join(f"({h}, {r}, {t})" for h, r, t in sg["triples"])})
    return pd.DataFrame(rows).set_index("graph") if rows else pd.DataFrame()


def draw_worked_example(record: dict, figsize=(13, 4.8)):
    """Pattern graph (UNKNOWN nodes highlighted) beside the best matched subgraph (its answer-side nodes highlighted)."""
    import matplotlib.pyplot as plt

    from ...plotting import draw_graph

    fig, axes = plt.subplots(1, 2, figsize=figsize)
    pattern = record.get("pattern") or {}
    triples = [tuple(t) for t in pattern.get("triples") or record.get("pattern_triples") or []]
    draw_graph(triples, ax=axes[0], highlight_nodes=pattern.get("unknown") or [],
               title=f"pattern graph ({record.get('pattern_source')})")
    best = (record.get("subgraphs") or [None])[0]
    if best is None:
        axes[1].set_axis_off()
        axes[1].text(0.5, 0.5, "no subgraph retrieved", ha="center", va="center")
    else:
        unknown = set(pattern.get("unknown") or [])
        mapped = [name for label, name in best["nodes"].items() if label in unknown]
        draw_graph([tuple(t) for t in best["triples"]], ax=axes[1], highlight_nodes=mapped,
                   title=f"best subgraph, GSD = {best['gsd']:.3f}")
    fig.suptitle(record.get("question", ""), fontsize=10)
    fig.tight_layout()
    return fig


def stage_error_figure(records: Sequence[dict], title: str = ""):
    """Wrong answers by the stage that failed, strict (Hits@1) and lenient (containment)."""
    import matplotlib.pyplot as plt
    import pandas as pd

    n = len(records)
    data = []
    verify = bool(records) and all(r.get("task") == "verify" for r in records)
    labels = ("accuracy", "label in reply (lenient)") if verify else ("strict Hits@1", "lenient containment")
    for key, label in zip(("failed_stage", "failed_stage_lenient"), labels):
        for stage in STAGES:
            count = sum(1 for r in records if r.get(key) == stage)
            data.append({"metric": label, "stage": stage, "share of questions (%)": 100 * count / n if n else 0.0})
    df = pd.DataFrame(data)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    import seaborn as sns

    sns.barplot(df, x="stage", y="share of questions (%)", hue="metric", ax=ax)
    ax.set_title(title or f"Where SimGRAG went wrong ({n} {'claims' if verify else 'questions'})")
    ax.set_xlabel("stage that failed")
    fig.tight_layout()
    return fig


def latency_figure(records: Sequence[dict], title: str = ""):
    """Per-question time of each stage: LLM stages in seconds, retrieval stages in milliseconds."""
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    ms_keys = {"node_search_ms": "vector search", "relation_ms": "relation distances", "enumerate_ms": "enumeration"}
    s_keys = {"pattern_s": "LLM: pattern", "answer_s": "LLM: answer"}
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    for ax, keys, unit in ((axes[0], ms_keys, "ms"), (axes[1], s_keys, "s")):
        rows = [{"stage": label, unit: r["timings"][k]} for r in records for k, label in keys.items()
                if k in (r.get("timings") or {}) and not (k.endswith("_s") and r.get("tokens", {}).get(k[:-2] + "_cached"))]
        if rows:
            df = pd.DataFrame(rows)
            sns.boxplot(df, x="stage", y=unit, ax=ax, showfliers=True)
            if unit == "ms" and (df[unit] > 0).all():
                ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "no timings (cached or skipped)", ha="center", va="center")
        ax.set_xlabel("")
    axes[0].set_title("retrieval (per question)")
    axes[1].set_title("LLM calls (per question, cache misses only)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
