"""KGP's view: the TF-IDF seeds, the traversal step by step (the path, the LLM's next-evidence text, the
candidates and the passages it picked), the retrieved list against the supporting passages, the reader."""

from __future__ import annotations

from typing import Any, Mapping

from ...explore.panels import Edge, Graph, Panel, short
from ...explore.views.common import dict_table, error_panel, frame, keep, outline_of, summary_panel, text_panel

STAGES = ("seeds", "traversal", "reader")
_FIELDS = ("question", "answers", "answer", "em", "f1", "containment", "recall@5", "variant", "qtype", "n_agent_calls",
           "n_reseeds")


def _k_max(rec: Mapping) -> int:
    return max((int(k.split("@")[1]) for k in rec if k.startswith("recall@")), default=30)


def outline(rec: Mapping) -> dict:
    reader = bool(rec.get("reader"))
    recall = rec.get(f"recall@{_k_max(rec)}")
    if recall == 0:
        stage = "retrieval (no gold passage in budget)"
    elif isinstance(recall, (int, float)) and recall < 1:
        stage = "retrieval (some gold passages missed)"
    else:
        stage = "reader" if reader else ""
    score = rec.get("em") if reader else rec.get("recall@5")
    failed = bool(rec.get("failed") or (reader and rec.get("reader_failed")))
    return outline_of(rec, score, failed, stage, rec.get("answer") if reader else (rec.get("retrieved") or [])[:2])


def signature(rec: Mapping) -> list[tuple[str, Any]]:
    return [("seeds", [s.get("pid") for s in rec.get("seeds") or []]), ("traversal", rec.get("retrieved")),
            ("reader", rec.get("answer"))]


def traversal_graphs(rec: Mapping) -> list[Graph]:
    """The walk after each step: seeds orange, picked passages green, supporting passages red (a ring of
    red where the walk never reached them), the steps as edges whose hover is the agent's evidence text."""
    gold = set(map(str, rec.get("supporting") or []))
    hops = list(rec.get("hops") or [])
    seeds = [str(s.get("pid")) for s in rec.get("seeds") or []]
    out: list[Graph] = []
    g = Graph("seeds")
    for s in seeds:
        g.add_node(s, role="gold" if s in gold else "seed", hover=f"seed {s}" + (" · supporting" if s in gold else ""))
    for i, h in enumerate(hops, 1):
        g = _copy(g, f"after step {i} of {len(hops)}")
        src = str((h.get("path") or ["?"])[-1])
        g.add_node(src, role="gold" if src in gold else "visited")
        evidence = short(h.get("query"), 200)
        for c in h.get("chosen") or []:
            g.add_node(str(c), role="gold" if str(c) in gold else "visited", hover=str(c))
            g.edges.append(Edge(src, str(c), f"{i}", "path", f"step {i}: {src} → {c}<br>evidence: {evidence}"))
        out.append(g)
    missed = sorted(p for p in gold if p not in {n.id for n in g.nodes})
    final = _copy(g, f"the walk ({len(hops)} steps); supporting passages never reached: {len(missed)}")
    for p in missed:
        final.add_node(p, role="missed", hover=f"supporting passage {p}: not reached")
    pos = layered_positions(seeds, hops, [n.id for n in final.nodes])  # every step drawn in the same places
    for step in out + [final]:
        step.pos = {n.id: pos[n.id] for n in step.nodes}
        for n in step.nodes:
            n.label = n.id.split("#")[0]  # the title; the hover holds the whole id
    return out + [final]


def layered_positions(seeds: list[str], hops: list[Mapping], nodes: list[str]) -> dict[str, tuple[float, float]]:
    """A column per depth: the seeds left, a passage picked from a path of length L in column L, passages
    never reached in the last column; rows spread evenly in each column."""
    depth = {s: 0 for s in seeds}
    for h in hops:
        d = len(h.get("path") or [])
        for c in h.get("chosen") or []:
            depth.setdefault(str(c), d)
    last = max(depth.values(), default=0) + 1
    columns: dict[int, list[str]] = {}
    for n in nodes:
        columns.setdefault(depth.get(n, last), []).append(n)
    width = max(columns) or 1
    pos = {}
    for d, col in columns.items():
        for i, n in enumerate(col):
            pos[n] = (-1 + 2 * d / width, 1 - 2 * (i + 0.5) / len(col))
    return pos


def _copy(g: Graph, title: str) -> Graph:
    from copy import deepcopy

    c = deepcopy(g)
    c.title = title
    return c


def hops_table(rec: Mapping):
    rows = [{"step": i, "path": " → ".join(map(str, h.get("path") or [])), "agent called": h.get("agent_called"),
             "next evidence (LLM)": h.get("query") if h.get("agent_called") else "(the question)",
             "evidence failed": h.get("evidence_failed"), "candidates": h.get("n_candidates"),
             "picked": ", ".join(map(str, h.get("chosen") or []))}
            for i, h in enumerate(rec.get("hops") or [], 1)]
    return frame(rows, ["step", "path", "agent called", "next evidence (LLM)", "evidence failed", "candidates", "picked"])


def retrieved_table(rec: Mapping, passages: Mapping[str, str] | None):
    gold = set(map(str, rec.get("supporting") or []))
    ranked = list(rec.get("retrieved") or [])
    rows = [{"rank": k, "passage": p, "supporting": str(p) in gold,
             "text": short((passages or {}).get(p, ""), 200) if passages else ""} for k, p in enumerate(ranked, 1)]
    rows += [{"rank": "-", "passage": p, "supporting": True, "text": ""} for p in gold if p not in ranked]
    return frame(rows, ["rank", "passage", "supporting", "text"])


def panels(rec: Mapping, passages: Mapping[str, str] | None = None) -> list[Panel]:
    graphs = traversal_graphs(rec)
    seeds = frame([{"seed": s.get("pid"), "tf-idf score": s.get("score")} for s in rec.get("seeds") or []])
    return keep([
        summary_panel(rec, outline(rec), _FIELDS),
        error_panel(rec),
        Panel("The traversal, step by step", "graphs", graphs=graphs, select_label="step",
              static_pick=[len(graphs) - 1],
              note="seeds orange, picked passages green, supporting passages red; hover a step for the evidence "
                   "the agent wrote"),
        Panel("Steps", "table", table=hops_table(rec)) if rec.get("hops") else None,
        Panel("Seeds", "table", table=seeds) if len(seeds) else None,
        Panel("Retrieved passages against the supporting ones", "table", table=retrieved_table(rec, passages)),
        text_panel("Reader", [("prompt", rec.get("reader_prompt")), ("raw reply", rec.get("reader_raw")),
                              ("answer", rec.get("answer"))]),
        dict_table("Graph", rec.get("graph"), "statistic", "value"),
        dict_table("Timings (s)", rec.get("timings"), "stage", "seconds"),
    ])
