"""Tables and figures for the SimGRAG notebook: our scores beside the paper's, a worked example drawn
as pattern graph vs matched subgraph, the GSD terms, stage-wise errors and stage latencies."""

from __future__ import annotations

from typing import Sequence

from ..figure_roles import percent as _pct
from .record import STAGES
from .published import PAPER, PAPER_NOTE, PAPER_NOTE_VERIFY

__all__ = ["scores_table", "draw_worked_example", "failure_figure",  # the roles every method names alike
           "gsd_terms_table", "latency_figure"]


def scores_table(summary: dict, dataset: str, task: str = "qa"):
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


def draw_worked_example(record: dict, figsize=None):
    """Pattern graph (its UNKNOWN nodes highlighted) beside the best matched subgraph (the entities matched
    to them highlighted), each panel as large as its graph needs and a colour legend under each. Both read
    from the named entities (left) to the unknowns."""
    import matplotlib.pyplot as plt

    from ...plotting import draw_graph

    pattern = record.get("pattern") or {}
    triples = [tuple(t) for t in pattern.get("triples") or record.get("pattern_triples") or []]
    unknown = set(pattern.get("unknown") or [])
    best = (record.get("subgraphs") or [None])[0]
    fig, axes = plt.subplots(1, 2, figsize=figsize or (7.0, 2.6))
    height = fig.get_figheight()  # room for the question and the titles above, set before drawing (the
    fig.subplots_adjust(left=0.02, right=0.98, wspace=0.12, top=1 - 0.75 / height, bottom=0.05)  # scale is final)
    named = [x for h, _, t in triples for x in (h, t) if x not in unknown]
    draw_graph(triples, ax=axes[0], highlight_nodes=sorted(unknown), roots=named,
               title=f"pattern graph ({record.get('pattern_source')})",
               legend={"node": "named in the question", "highlight": "UNKNOWN: what the question asks"})
    if best is None:
        axes[1].set_axis_off()
        axes[1].text(0.5, 0.5, "no subgraph retrieved", ha="center", va="center", transform=axes[1].transAxes)
    else:
        mapped = [name for label, name in best["nodes"].items() if label in unknown]
        anchors = [name for label, name in best["nodes"].items() if label not in unknown]
        draw_graph([tuple(t) for t in best["triples"]], ax=axes[1], highlight_nodes=mapped, roots=anchors,
                   title=f"best subgraph, GSD = {best['gsd']:.3f}",
                   legend={"node": "matched to a named node", "highlight": "matched to an UNKNOWN: the answer"})
    fig.suptitle(record.get("question", ""), fontsize=10)
    return fig


def failure_figure(records: Sequence[dict], title: str = ""):
    """Wrong answers by the stage that failed, strict (Hits@1) and lenient (containment); with no wrong
    answer at all, a figure that says so (never empty axes)."""
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    from ...plotting import empty_state

    n = len(records)
    data = []
    verify = bool(records) and all(r.get("task") == "verify" for r in records)
    what = "claims" if verify else "questions"
    labels = ("accuracy", "label in reply (lenient)") if verify else ("strict Hits@1", "lenient containment")
    for key, label in zip(("failed_stage", "failed_stage_lenient"), labels):
        for stage in STAGES:
            count = sum(1 for r in records if r.get(key) == stage)
            data.append({"metric": label, "stage": stage, "share of questions (%)": 100 * count / n if n else 0.0})
    df = pd.DataFrame(data)
    heading = title or f"Where SimGRAG went wrong ({n} {what})"
    if not (df["share of questions (%)"] > 0).any():
        fig, ax = plt.subplots(figsize=(7, 1.8))
        empty_state(ax, f"no errors: no stage failed on any of the {n} {what}" if n else f"no {what} yet")
        ax.set_title(heading)
        return fig
    fig, ax = plt.subplots(figsize=(7, 3.6))
    sns.barplot(df, x="stage", y="share of questions (%)", hue="metric", ax=ax)
    ax.set_title(heading)
    ax.set_xlabel("stage that failed")
    fig.tight_layout()
    return fig


def latency_figure(records: Sequence[dict], title: str = ""):
    """Per-question time of each stage, every question a point (n under each stage): retrieval stages in
    milliseconds, LLM stages in seconds (cache misses only)."""
    import matplotlib.pyplot as plt

    from ...plotting import empty_state, strip_by_group

    ms_keys = {"node_search_ms": "vector search", "relation_ms": "relation distances", "enumerate_ms": "enumeration"}
    s_keys = {"pattern_s": "LLM: pattern", "answer_s": "LLM: answer"}
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    for ax, keys, unit in ((axes[0], ms_keys, "ms"), (axes[1], s_keys, "s")):
        groups = {label: [r["timings"][k] for r in records if k in (r.get("timings") or {})
                          and not (k.endswith("_s") and r.get("tokens", {}).get(k[:-2] + "_cached"))]
                  for k, label in keys.items()}
        if any(groups.values()):
            strip_by_group(ax, groups, unit, log=unit == "ms")
        else:
            empty_state(ax, "no timings (every call cached or skipped)")
    axes[0].set_title("retrieval (per question)")
    axes[1].set_title("LLM calls (per question, cache misses only)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
