"""Compact relation selection's view: the relation chain proposals, the selected (compact) facts as a graph
with the derivation from the topic entity to the derived answers, the consistency checks, and what the
LLM read and answered from each context."""

from __future__ import annotations

from typing import Any, Mapping

from ...explore.panels import Panel, graph_from_triples
from ...explore.views.common import error_panel, frame, keep, outline_of, summary_panel, text_panel

STAGES = ("chain", "derivation", "compact facts", "reading")
_CONTEXTS = ("compact", "topk")
_FIELDS = ("question", "query", "answers", "target", "gold_chain", "chain", "chain_source", "derived_answers",
           "answer_compact", "answer_topk", "derivable", "consistent", "gate", "knowledge", "hops", "qtype")


def _score(rec: Mapping) -> tuple[Any, bool]:
    if "hits@1_compact" in rec:
        return rec.get("hits@1_compact"), bool(rec.get("failed_compact"))
    return rec.get("derived_hits@1"), rec.get("derivable") is False


def outline(rec: Mapping) -> dict:
    score, failed = _score(rec)
    if rec.get("chain_correct") is False:
        stage = "chain"
    elif rec.get("derivable") is False:
        stage = "derivation"
    elif rec.get("compact_has_gold") is False:
        stage = "compact facts"
    else:
        stage = "reading"
    pred = rec.get("answer_compact") if "answer_compact" in rec else rec.get("derived_answers")
    return outline_of(rec, score, failed, stage, pred or "")


def signature(rec: Mapping) -> list[tuple[str, Any]]:
    return [("chain", rec.get("chain")), ("derivation", rec.get("derived_answers")),
            ("compact facts", rec.get("compact_facts")), ("reading", rec.get("answer_compact"))]


def proposals_table(rec: Mapping):
    chosen = rec.get("chain")
    rows = [{"chain": p.get("chain"), "chosen": p.get("chain") == chosen, "source": p.get("source"),
             "score": p.get("score"), "derivable": p.get("derivable"), "answers": p.get("n_answers"),
             "gold": p.get("chain") == rec.get("gold_chain") if rec.get("gold_chain") else None}
            for p in rec.get("proposals") or []]
    return frame(rows, ["chain", "chosen", "source", "score", "derivable", "answers", "gold"])


def checks_table(rec: Mapping):
    cons = rec.get("consistency") or {}
    rows = [{"check": name, "applied": bool(applied), "conflicts": str((cons.get("conflicts") or {}).get(name, "-"))}
            for name, applied in (cons.get("applicable") or {}).items()]
    rows.append({"check": "consistent (all checks)", "applied": True, "conflicts": str(cons.get("consistent"))})
    rows.append({"check": "gate (derived answer replaces the LLM's)", "applied": True, "conflicts": str(rec.get("gate"))})
    return frame(rows, ["check", "applied", "conflicts"])


def contexts_table(rec: Mapping):
    rows = []
    for ctx in _CONTEXTS:
        if f"prompt_{ctx}" not in rec and f"answer_{ctx}" not in rec:
            continue
        rows.append({"context": ctx, "facts": rec.get("n_facts" if ctx == "compact" else "topk_n_facts"),
                     "holds gold": rec.get(f"{ctx}_has_gold"), "answer": rec.get(f"answer_{ctx}"),
                     "hits@1": rec.get(f"hits@1_{ctx}"), "with gate": rec.get(f"hits@1_{ctx}_gated"),
                     "containment": rec.get(f"containment_{ctx}"), "no answer": rec.get(f"failed_{ctx}"),
                     "prompt tokens": rec.get(f"prompt_tokens_{ctx}"), "seconds": rec.get(f"seconds_{ctx}")})
    return frame(rows)


def derivation_graph(rec: Mapping):
    gold = {str(a) for a in (rec.get("answers") or ([rec["target"]] if rec.get("target") else []))}
    derived = {str(a) for a in rec.get("derived_answers") or []}
    roles = {a: "gold" for a in gold - derived}
    roles.update({a: "answer" for a in derived})
    roles.update({str(t): "topic" for t in rec.get("topic_entities") or []})
    g = graph_from_triples(f"compact facts · chain {rec.get('chain') or '-'}", rec.get("compact_facts") or [], roles)
    return g


def panels(rec: Mapping) -> list[Panel]:
    row = outline(rec)
    facts = rec.get("compact_facts") or []
    return keep([
        summary_panel(rec, row, _FIELDS),
        error_panel(rec),
        Panel("Selected facts and the derivation", "graphs", graphs=[derivation_graph(rec)], pinned=1,
              note=f"{len(facts)} compact facts: topic entity orange, derived answers green, gold answers not "
                   f"derived red; hover a fact") if facts else None,
        Panel("Relation chain proposals", "table", table=proposals_table(rec)) if rec.get("proposals") else None,
        Panel("Consistency checks", "table", table=checks_table(rec)) if rec.get("consistency") else None,
        Panel("What the LLM read and answered", "table", table=contexts_table(rec)),
        text_panel("The compact context's prompt and reply", [("prompt", rec.get("prompt_compact")),
                                                              ("raw reply", rec.get("llm_compact"))]),
    ])
