"""The quickstart's view: the facts of the gold chain the reader was given (drawn), its prompt and reply."""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..explore.panels import Panel, graph_from_triples
from ..explore.views.common import error_panel, keep, outline_of, summary_panel, text_panel

STAGES = ("context", "reading")
_FIELDS = ("question", "answers", "prediction", "raw_output", "hits@1", "containment", "n_facts", "cached")
_FACT = re.compile(r"^\((.+?), ([^,]+?), (.+)\)$")


def outline(rec: Mapping) -> dict:
    return outline_of(rec, rec.get("hits@1"), bool(rec.get("failed")), "generation" if rec.get("failed") else "reading",
                      rec.get("prediction") or "")


def signature(rec: Mapping) -> list[tuple[str, Any]]:
    return [("context", rec.get("prompt")), ("reading", rec.get("prediction"))]


def prompt_facts(prompt: str | None) -> list[tuple[str, str, str]]:
    """The "(head, relation, tail)" lines of the reader's prompt."""
    out = []
    for line in (prompt or "").splitlines():
        m = _FACT.match(line.strip())
        if m:
            out.append(m.groups())
    return out


def panels(rec: Mapping) -> list[Panel]:
    facts = prompt_facts(rec.get("prompt"))
    roles = {str(a): "gold" for a in rec.get("answers") or []}
    roles.update({str(p): "answer" for p in rec.get("prediction") or [] if str(p) in roles})
    return keep([
        summary_panel(rec, outline(rec), _FIELDS),
        error_panel(rec),
        Panel("The facts the reader was given", "graphs", graphs=[graph_from_triples("gold-chain facts", facts, roles)],
              pinned=1, note="gold answers red, predicted gold answers green") if facts else None,
        text_panel("Prompt and reply", [("prompt", rec.get("prompt")), ("raw reply", rec.get("raw_output"))]),
    ])
