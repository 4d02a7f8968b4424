"""Vector retrieval + LLM rerank's view: the seed entities and relations, the expanded subgraph with the
rerank candidates (the chosen ones highlighted), the rerank reply, and the passages (or facts) of every
variant beside the gold."""

from __future__ import annotations

from typing import Any, Mapping

from ...explore.panels import Edge, Graph, Panel, short
from ...explore.views.common import chat_text, dict_table, error_panel, frame, keep, outline_of, summary_panel, text_panel

STAGES = ("entities", "expansion", "rerank", "passages")
HEADLINE = ("rerank", "rerank-filled", "rerank-padded", "expand", "naive")  # the variant an example is judged by
_FIELDS = ("question", "qtype", "gold", "answers", "task")
#: rerank reply statuses with a usable pick (vector_rerank/rerank.py: parsed JSON, a partial list, marks, matched
#: text); the others ("failed", "empty", "no-candidates") lose the question at the rerank reply
_USABLE = (None, "ok", "json", "partial", "marks", "text")
_MAX_EDGES = 80  # a drawn subgraph keeps the best candidates (and every chosen one)


def headline_variant(rec: Mapping) -> str | None:
    variants = rec.get("variants") or {}
    return next((v for v in HEADLINE if v in variants), next(iter(variants), None))


def _metric(rec: Mapping) -> str:
    return "hits@1" if rec.get("task") == "kgqa" or rec.get("gold_key") == "answer" else "recall@5"


def outline(rec: Mapping) -> dict:
    v = headline_variant(rec)
    row = (rec.get("variants") or {}).get(v) or {}
    metric = _metric(rec)
    status = (rec.get("rerank") or {}).get("status")
    if status not in _USABLE:
        stage = f"rerank reply ({status})"
    elif metric == "hits@1":
        stage = "answer" if row.get("fact_hit") else "rerank (chosen facts miss the answer)"
    else:
        others = [((rec.get("variants") or {}).get(o) or {}).get(metric) for o in ("naive", "expand")]
        stage = "rerank" if any(isinstance(x, (int, float)) and x > (row.get(metric) or 0) for x in others) else "retrieval"
    pred = row.get("predictions") if metric == "hits@1" else row.get("passages", [])[:2]
    return outline_of(rec, row.get(metric), bool(rec.get("failed") or row.get("failed")), stage, pred or "")


def signature(rec: Mapping) -> list[tuple[str, Any]]:
    g = (rec.get("graph") or {}).get("rerank") or {}
    v = headline_variant(rec)
    row = (rec.get("variants") or {}).get(v) or {}
    return [("entities", g.get("query_entities")), ("expansion", [c[0] for c in g.get("candidates") or []]),
            ("rerank", [c[0] for c in (rec.get("rerank") or {}).get("chosen") or []]),
            ("passages", row.get("passages") or row.get("facts"))]


def _triple(triple, rid: int, sentence: str, seeds: list[str]) -> tuple[str, str, str]:
    """A candidate as (head, predicate, tail): the record's triple; for records written before triples were
    recorded, the sentence hangs off the seed entity it starts with (or stands alone)."""
    if triple and len(triple) >= 3:
        return str(triple[0]), str(triple[1]), str(triple[2])
    for n in sorted(seeds, key=len, reverse=True):
        if sentence.startswith(n + " "):
            return n, "", f"[{rid}] {sentence[len(n) + 1:]}"
    return f"[{rid}]", "", sentence


def subgraph(rec: Mapping, role: str = "rerank") -> Graph:
    """Seed entities (orange), the candidate relations as facts, the rerank's chosen facts (green)."""
    g_rec = (rec.get("graph") or {}).get(role) or {}
    chosen = {int(c[0]) for c in (rec.get("rerank") or {}).get("chosen") or []} if role == "rerank" else set()
    seeds = [str(s[1]) for s in g_rec.get("seed_entities") or []]
    gold = {str(a) for a in rec.get("answers") or []}
    cands = list(g_rec.get("candidates") or [])
    triples = g_rec.get("candidate_triples") or [None] * len(cands)
    order = sorted(range(len(cands)), key=lambda i: (cands[i][0] not in chosen, -float(cands[i][2] or 0)))
    g = Graph(f"{role}: {len(seeds)} seeds, {len(cands)} candidates, {len(chosen)} chosen")
    for s in seeds:
        g.add_node(s, role="seed", hover=f"seed entity {s}")
    for i in order[:_MAX_EDGES]:
        rid, sentence, score = cands[i][0], str(cands[i][1]), cands[i][2]
        h, p, tl = _triple(triples[i] if i < len(triples) else None, rid, sentence, seeds)
        for n in (h, tl):
            g.add_node(n, role="gold" if n in gold else "default")
        mark = " · CHOSEN by the rerank" if rid in chosen else ""
        g.edges.append(Edge(h, tl, p, "chosen" if rid in chosen else "edge",
                            f"[{rid}] {sentence}<br>similarity {score}{mark}"))
    return g


def candidates_table(rec: Mapping):
    g_rec = (rec.get("graph") or {}).get("rerank") or {}
    pos = {int(c[0]): k for k, c in enumerate((rec.get("rerank") or {}).get("chosen") or [], 1)}
    rows = [{"#": k, "relation": c[1], "similarity": c[2], "chosen (rank)": pos.get(int(c[0]), "")}
            for k, c in enumerate(g_rec.get("candidates") or [], 1)]
    return frame(rows, ["#", "relation", "similarity", "chosen (rank)"])


def variants_table(rec: Mapping):
    gold = set(map(str, rec.get("gold") or []))
    rows = []
    for name, row in (rec.get("variants") or {}).items():
        items = row.get("passages") or [f[1] if isinstance(f, list) else f for f in row.get("facts") or []]
        rows.append({"variant": name, **{k: row.get(k) for k in ("recall@2", "recall@5", "fact_hit", "hits@1",
                                                                  "containment", "failed") if k in row},
                     "retrieved (gold marked *)": ", ".join(f"{p}*" if str(p) in gold else str(p) for p in items[:8])})
    return frame(rows)


def passages_panel(rec: Mapping, passages: Mapping[str, str] | None) -> Panel | None:
    v = headline_variant(rec)
    ids = ((rec.get("variants") or {}).get(v) or {}).get("passages") or []
    if not ids:
        return None
    gold = set(map(str, rec.get("gold") or []))
    rows = [{"rank": k, "passage": p, "gold": str(p) in gold,
             "text": short((passages or {}).get(p, ""), 300) if passages else ""} for k, p in enumerate(ids, 1)]
    rows += [{"rank": "-", "passage": p, "gold": True, "text": short((passages or {}).get(p, ""), 300) if passages else "",
              } for p in rec.get("gold") or [] if p not in ids]
    note = "" if passages else "pass passages={pid: text} to explore() to see their texts"
    return Panel(f"Passages of the {v} variant, and gold passages it missed", "table", table=frame(rows), note=note)


def panels(rec: Mapping, passages: Mapping[str, str] | None = None) -> list[Panel]:
    g_rec = (rec.get("graph") or {}).get("rerank") or (rec.get("graph") or {}).get("expand") or {}
    rr = rec.get("rerank") or {}
    roles = [r for r in ("rerank", "expand") if r in (rec.get("graph") or {})]
    seeds = frame([{"seed entity": s[1], "score": s[2]} for s in g_rec.get("seed_entities") or []])
    return keep([
        summary_panel(rec, outline(rec), _FIELDS),
        error_panel(rec),
        Panel("Seeds, expanded subgraph and rerank candidates", "graphs", graphs=[subgraph(rec, r) for r in roles],
              pinned=1, note="seed entities orange, chosen facts green, gold answers red; hover a fact") if roles else None,
        Panel("Seed entities", "table", table=seeds, note=f"query entities: {g_rec.get('query_entities')} "
              f"({g_rec.get('entity_source')}); expansion {g_rec.get('expansion_size')} relations by hop "
              f"{g_rec.get('expansion_by_hop')}") if len(seeds) else None,
        Panel("Rerank candidates (chosen ids highlighted)", "table", table=candidates_table(rec)) if g_rec else None,
        text_panel("Rerank reply", [("prompt (last turn)", chat_text(rr.get("prompt"))), ("raw reply", rr.get("raw")),
                                    ("status", rr.get("status")), ("reasoning", rr.get("reasoning"))]),
        Panel("Variants", "table", table=variants_table(rec)) if rec.get("variants") else None,
        passages_panel(rec, passages),
        dict_table("Timings (s)", rec.get("timings"), "stage", "seconds"),
    ])
