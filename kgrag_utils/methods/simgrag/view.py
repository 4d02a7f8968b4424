"""SimGRAG's view: the pattern graph beside each top-k subgraph (with its GSD terms), the candidates the
filtering step found, the evidence and the answer."""

from __future__ import annotations

from typing import Any, Mapping

from ...explore.panels import Edge, Graph, Panel, graph_from_triples, short
from ...explore.views.common import chat_text, dict_table, error_panel, frame, keep, outline_of, summary_panel, text_panel

STAGES = ("pattern", "retrieval", "generation")
_FIELDS = ("question", "answers_gold", "answers", "answer_raw", "hits@1", "containment", "failure", "qtype", "hops",
           "pattern_source", "pattern_ok", "pattern_error")


def outline(rec: Mapping) -> dict:
    score = rec.get("hits@1", rec.get("accuracy"))
    stage = rec.get("failed_stage") or rec.get("failure") or ""
    return outline_of(rec, score, bool(rec.get("failed")), str(stage), rec.get("answers") or rec.get("prediction") or "")


def signature(rec: Mapping) -> list[tuple[str, Any]]:
    pattern = (rec.get("pattern") or {}).get("triples") or rec.get("pattern_triples")
    subs = rec.get("subgraphs") or []
    return [("pattern", pattern), ("retrieval", subs[0].get("triples") if subs else None),
            ("generation", rec.get("answers") or rec.get("prediction"))]


def pattern_graph(pattern: Mapping | None, title: str = "pattern") -> Graph:
    """The pattern: named entities (topic), UNKNOWN nodes, the node the question asks for (answer)."""
    pattern = pattern or {}
    roles = {n: "topic" for n in pattern.get("known") or []}
    roles.update({n: "unknown" for n in pattern.get("unknown") or []})
    if pattern.get("answer"):
        roles[pattern["answer"]] = "answer"
    g = graph_from_triples(title, pattern.get("triples") or [], roles)
    return g


def subgraph_graph(sub: Mapping, rank: int, gold: set[str], pos: Mapping[str, tuple] | None) -> Graph:
    """One matched subgraph, its nodes placed where the pattern nodes they matched are drawn."""
    node_of = {str(v): str(k) for k, v in (sub.get("nodes") or {}).items()}   # entity -> pattern node
    node_terms = sub.get("node_terms") or {}
    edge_terms = sub.get("edge_terms") or []
    reversed_ = sub.get("reversed") or []
    g = Graph(f"top-{rank} subgraph · GSD {_num(sub.get('gsd'))}")
    for ent, pnode in node_of.items():
        term = node_terms.get(pnode)
        hover = f"{ent}<br>matches pattern node {pnode}" + (f"<br>node term {_num(term)}" if term is not None else "")
        g.add_node(ent, role="answer" if ent in gold else ("topic" if term is not None else "default"), hover=hover)
    for i, t in enumerate(sub.get("triples") or []):
        h, r, tl = (str(x) for x in t[:3])
        for n in (h, tl):
            g.add_node(n, role="answer" if n in gold else "default")
        term = edge_terms[i] if i < len(edge_terms) else None
        flip = " (matched reversed)" if i < len(reversed_) and reversed_[i] else ""
        g.edges.append(Edge(h, tl, r, "edge", f"({h}, {r}, {tl})<br>edge term {_num(term)}{flip}"))
    if pos:
        g.pos = {n.id: pos[node_of[n.id]] for n in g.nodes if node_of.get(n.id) in pos}
        g.pos = g.pos if len(g.pos) == len(g.nodes) else None
    return g


def _num(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) and not isinstance(x, bool) else "-"


def gsd_table(subs: list[Mapping]):
    rows = []
    for i, s in enumerate(subs, 1):
        rows.append({"rank": i, "gsd": s.get("gsd"), "node terms": round(sum((s.get("node_terms") or {}).values()), 4),
                     "edge terms": " + ".join(_num(x) for x in s.get("edge_terms") or []),
                     "facts": "; ".join("(%s, %s, %s)" % tuple(t[:3]) for t in s.get("triples") or [])})
    return frame(rows, ["rank", "gsd", "node terms", "edge terms", "facts"])


def candidates_table(cands: Mapping | None):
    rows = []
    for node, top in ((cands or {}).get("nodes") or {}).items():
        rows.append({"pattern item": node, "kind": "entity",
                     "top candidates (distance)": ", ".join(f"{n} ({_num(d)})" for n, d in top[:5])})
    for rel in (cands or {}).get("relations") or []:
        rows.append({"pattern item": rel.get("relation"), "kind": "relation",
                     "top candidates (distance)": ", ".join(f"{n} ({_num(d)})" for n, d in (rel.get("top") or [])[:5])})
    return frame(rows, ["pattern item", "kind", "top candidates (distance)"])


def panels(rec: Mapping) -> list[Panel]:
    row = outline(rec)
    gold = {str(a) for a in rec.get("answers_gold") or []}
    pattern = rec.get("pattern") or rec.get("gold_pattern")
    pg = pattern_graph(pattern, "pattern" if rec.get("pattern") else "gold pattern (the LLM's was unusable)")
    from ...explore.graphs import layout_positions

    pos = layout_positions(pg)
    pg.pos = pos
    subs = list(rec.get("subgraphs") or [])
    graphs = [pg] + [subgraph_graph(s, i, gold, pos) for i, s in enumerate(subs, 1)]
    return keep([
        summary_panel(rec, row, _FIELDS, labels={"answers": "predicted answers"}),
        error_panel(rec),
        Panel("Pattern beside the top-k subgraphs", "graphs", graphs=graphs, pinned=1, select_label="subgraph",
              static_pick=list(range(1, min(len(graphs), 3))),
              note=f"{len(subs)} subgraphs; hover a fact for its GSD edge term, a node for the pattern node it matched"),
        Panel("GSD terms of the top-k subgraphs", "table", table=gsd_table(subs)) if subs else None,
        text_panel("Pattern stage", [("prompt (last turn)", chat_text(rec.get("pattern_prompt"))),
                                     ("raw reply", rec.get("pattern_raw")),
                                     ("warnings", "; ".join(rec.get("pattern_warnings") or []))]),
        Panel("Candidates per pattern node and relation", "table", table=candidates_table(rec.get("candidates")))
        if rec.get("candidates") else None,
        text_panel("Evidence and answer", [("evidence", "\n".join(rec.get("evidence") or [])),
                                           ("raw answer", rec.get("answer_raw")),
                                           ("parsed", short(rec.get("answers"), 300))]),
        dict_table("Timings", rec.get("timings"), "stage", "value"),
        dict_table("Tokens", rec.get("tokens"), "call", "tokens"),
    ])
