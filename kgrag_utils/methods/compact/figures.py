"""The notebook's tables and figures, kept here so the notebook stays thin and they are tested.

Figures: a chain drawn on the KG, a kinship story graph with the composed path, facts per context
(compact vs top-k), accuracy against prompt tokens, and the gate's precision-coverage points.
The paper's figures appear beside ours, always labelled as published.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..figure_roles import percent as _pct, stage_loss_figure
from .published import PAPER
from .summary import summarize

__all__ = ["scores_table", "draw_worked_example", "failure_figure",  # the roles every method names alike
           "draw_kinship_derivation", "plot_facts_per_context", "plot_accuracy_vs_tokens", "plot_gate_curve"]


def scores_table(summary: Mapping, kind: str, model: str = ""):
    """Ours beside the published numbers (WebQSP / CWQ, seven 4-bit open LLMs), one row per figure.

    The paper scores the reader by exact match; ours is the same rule on the reply's first answer
    (SQuAD normalisation), i.e. strict Hits@1 (`hits@1` in the records)."""
    import pandas as pd

    s = summary
    rows = [
        ("facts per compact context (mean)", round(s.get("facts_per_context", {}).get("mean", float("nan")), 1),
         f"{PAPER['facts_per_context']['WebQSP']} (WebQSP) / {PAPER['facts_per_context']['CWQ']} (CWQ)"),
        ("derived answer right | derivability check passes (%)", _pct(s.get("derived_precision_when_derivable")),
         f"{PAPER['derived_precision_when_derivable']['WebQSP']} / {PAPER['derived_precision_when_derivable']['CWQ']}"),
        ("... with exactly one derived answer (%)", _pct(s.get("derived_precision_one_answer")),
         f"{PAPER['derived_precision_one_answer']['WebQSP']} / {PAPER['derived_precision_one_answer']['CWQ']}"),
        ("share of questions with exactly one derived answer (%)", _pct(s.get("one_answer_coverage")),
         f"{PAPER['coverage_one_answer']['WebQSP']} / {PAPER['coverage_one_answer']['CWQ']}"),
        ("gate coverage (%)", _pct(s.get("gate_coverage")), "-"),
        ("gate precision (%)", _pct(s.get("gate_precision")), "-"),
    ]
    comp, base = s.get("llm_compact"), s.get("llm_topk")
    for ctx, res in (("compact", comp), ("top-k", base)):
        if res:
            rows.append((f"EM = strict Hits@1, LLM reads the {ctx} context ({model}) (%)", _pct(res.get("hits@1")), "-"))
    if comp and base:
        rows.append((f"EM (= strict Hits@1) gain, compact - top-k ({model}) (points)",
                     round(100 * (comp["hits@1"] - base["hits@1"]), 1),
                     f"+{PAPER['em_gain_over_100_facts']['WebQSP']} EM (WebQSP mean; "
                     f"{PAPER['em_gain_over_100_facts']['per_llm_range'][0]} to {PAPER['em_gain_over_100_facts']['per_llm_range'][1]} per LLM)"))
    if "prompt_token_ratio_topk_over_compact" in s:
        rows.append(("prompt tokens, top-k / compact", round(s["prompt_token_ratio_topk_over_compact"], 2),
                     "about 4 (CWQ: a quarter of the tokens)"))
    if kind == "kgqa" and "gold_chain_seen_rate" in s:
        rows.append(("questions with a gold chain seen in training (%)", _pct(s.get("gold_chain_seen_rate")),
                     f"{PAPER['gold_chain_seen_in_training']['WebQSP']} (WebQSP test)"))
        rows.append(("derivability check passes (%)", _pct(s.get("derivable_rate")),
                     f"{PAPER['derivability_passes']['CWQ']} (CWQ)"))
    if kind == "kgqa" and "chain_accuracy" in s:
        rows.insert(0, ("chain prediction accuracy (%)", _pct(s.get("chain_accuracy")), "-"))
        rows.insert(1, ("derived Hits@1, answerable questions (%)", _pct(s.get("derived_hits@1_answerable")), "-"))
    return pd.DataFrame(rows, columns=["figure", "ours", "published (paper)"])


def draw_worked_example(record: Mapping, ax=None, max_facts: int = 14):
    """The compact facts of one KG record, topic and derived answers highlighted (a kinship story:
    `draw_kinship_derivation`)."""
    from ...plotting import draw_graph

    facts = [tuple(f) for f in record.get("compact_facts", [])][:max_facts]
    hi = list(record.get("topic_entities", [])) + list(record.get("derived_answers", [])[:5])
    title = f"{record.get('chain')}  ({len(record.get('compact_facts', []))} facts)"
    return draw_graph(facts, ax=ax, highlight_nodes=hi, highlight_edges=facts, title=title,
                      roots=list(record.get("topic_entities", [])),
                      legend={"highlight": "topic entity or derived answer", "node": "other entity",
                              "highlight_edge": "compact fact"})


def failure_figure(records: Sequence[Mapping], title: str = ""):
    """Questions lost at each step (the run summary's `stage_errors`): a wrong chain, no derivation, the
    LLM missing although the compact facts hold a gold answer."""
    s = summarize(records)
    return stage_loss_figure(s["stage_errors"], s["n_scored"], title or f"Where compact relation selection lost "
                             f"questions ({s['n_scored']} scored)")


def draw_kinship_derivation(story, derivation, ax=None):
    """The story graph (surface words); the first derivation path highlighted."""
    from ...plotting import draw_graph

    edges = [(story.people[a], w, story.people[b]) for (a, b), w in zip(story.edges, story.edge_types)]
    path = derivation.paths[0] if derivation.paths else []
    used = {idx for _, _, _, idx, _ in path}
    hi_edges = [e for i, e in enumerate(edges) if i in used]
    derived = derivation.ranked[0] if derivation.ranked else "nothing"
    title = f"{story.query[1]} is {story.query[0]}'s ?  rules: {derived}  (gold: {story.target})"
    return draw_graph(edges, ax=ax, highlight_nodes=list(story.query), highlight_edges=hi_edges, title=title,
                      roots=[story.query[0]] if story.query else None,
                      legend={"highlight": "the two people asked about", "node": "other person",
                              "highlight_edge": "first derivation path", "edge": "other story fact"})


def plot_facts_per_context(records: Sequence[Mapping], ax=None):
    """Histogram of facts per context: compact vs the baseline (when present)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    comp = [r["n_facts"] for r in records if r.get("derivable")]
    base = [r["topk_n_facts"] for r in records if "topk_n_facts" in r]
    top = max(comp + base + [1])
    bins = np.linspace(0, top + 1, min(40, top + 2))
    ax.hist(comp, bins=bins, alpha=0.7, label=f"compact (mean {np.mean(comp) if comp else 0:.1f})")
    if base:
        ax.hist(base, bins=bins, alpha=0.6, label=f"baseline (mean {np.mean(base):.1f})")
    ax.set_xlabel("facts in the context")
    ax.set_ylabel("questions")
    ax.legend()
    ax.set_title("Facts per context")
    return ax


def plot_accuracy_vs_tokens(summary: Mapping, ax=None, model: str = ""):
    """Mean prompt tokens (x) against strict Hits@1 (y) for each context, with and without the gate."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.8))
    for ctx, marker in (("compact", "o"), ("topk", "s")):
        res, tok = summary.get(f"llm_{ctx}"), summary.get(f"prompt_tokens_{ctx}")
        if not res or not tok:
            continue
        ax.scatter([tok["mean"]], [res["hits@1"]], marker=marker, s=80, label=f"{ctx}: LLM")
        ax.scatter([tok["mean"]], [res["hits@1_gated"]], marker=marker, s=80, facecolors="none", edgecolors="k",
                   label=f"{ctx}: LLM + gate")
    ax.set_xscale("log")
    ax.set_xlabel("mean prompt tokens (log)")
    ax.set_ylabel("EM (= strict Hits@1)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"Accuracy vs prompt size {('(' + model + ')') if model else ''}")
    ax.legend(fontsize=8)
    return ax


def plot_gate_curve(validation_table: Sequence[Mapping], test_table: Sequence[Mapping] = (), ax=None):
    """Precision vs coverage of every named gate (validation and test), with the paper's points."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4))
    for table, label, marker in ((validation_table, "validation", "o"), (test_table, "test", "x")):
        pts = [(r["coverage"], r["precision"], r["gate"]) for r in table if r.get("passed")]
        if not pts:
            continue
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, label=label)
        if label == "validation":
            for c, p, name in pts:
                ax.annotate(name, (c, p), fontsize=8, xytext=(3, 3), textcoords="offset points")
    ax.scatter([PAPER["coverage_one_answer"]["WebQSP"] / 100], [PAPER["derived_precision_one_answer"]["WebQSP"] / 100],
               marker="*", s=120, c="grey", label="paper, one answer (WebQSP, published)")
    ax.scatter([PAPER["coverage_one_answer"]["CWQ"] / 100], [PAPER["derived_precision_one_answer"]["CWQ"] / 100],
               marker="*", s=120, c="black", label="paper, one answer (CWQ, published)")
    ax.set_xlabel("coverage (share of questions the gate passes)")
    ax.set_ylabel("precision of the derived answer")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title("Gate: precision vs coverage")
    return ax
