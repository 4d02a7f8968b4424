"""SimGRAG's last stage: the top-k subgraphs as `graph [i]: (h, r, t), ...` lines + a few-shot answer prompt.

The model is asked for the answer entities separated by " | "; `parse_answer` also accepts a
comma- or "and"-separated list when that splits the line into names the evidence contains.
For fact verification (FactKG) the prompt asks for a short reason and a verdict
(`..prompts.build_verify_prompt`, prompts/simgrag_verify.yaml) and `parse_verdict` reads "True" / "False".

Schema-constrained mode (form="json"): the answer is `ANSWER_SCHEMA`, {"answers": [...]}, and the
shots show that form; `parse_answer` reads it (and still reads the free-text forms).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, Sequence

from ....llm.structured import string_list_schema
from ....parsers import json_field_list
from .gsd_search import Subgraph

if TYPE_CHECKING:  # pragma: no cover
    from ....kg import KG

__all__ = ["evidence_lines", "parse_answer", "parse_verdict", "VERDICTS", "ANSWER_SCHEMA"]

#: the answer stage's shape (structured="schema"): the answer entities, best first
ANSWER_SCHEMA = string_list_schema("answers", max_items=10, max_length=120)

VERDICTS = ("True", "False")

_PREFIX = re.compile(r"^\s*\**\s*(?:final\s+)?answers?\s*\**\s*[:：]\s*", re.I)


def evidence_lines(kg: "KG", subgraphs: Sequence[Subgraph]) -> list[str]:
    """One line per subgraph, facts in the KG's own direction, best subgraph first."""
    lines = []
    for i, sg in enumerate(subgraphs, 1):
        facts = ", ".join(f"({h}, {r}, {t})" for h, r, t in sg.triples(kg))
        lines.append(f"graph [{i}]: {facts}")
    return lines


def _clean(part: str, names: set[str] = frozenset()) -> str:
    """Strip quotes, markup and a sentence-final period (kept in 'D.C.' or a name the evidence has)."""
    s = part.strip().strip("\"'`*").strip()
    if s.endswith(".") and s.casefold() not in names and not re.search(r"(?:^|[\s.])[A-Za-z]\.$", s):
        s = s.rstrip(".").strip()
    return s


def parse_answer(text: str, evidence_names: Iterable[str] = ()) -> list[str]:
    """Answers in order from the model's reply (first non-empty line, "Answer:" prefix dropped).

    Split on "|"; without a "|", split on commas / " and " only when every piece is a name from the
    evidence (so "Washington, D.C." stays whole unless the evidence says otherwise).
    """
    if not isinstance(text, str):
        return []
    items = json_field_list(text, "answers")  # the JSON form {"answers": [...]} (possibly cut by the token limit)
    if items is not None:
        names = {n.casefold() for n in evidence_names}
        out, seen = [], set()
        for a in items:
            a = _clean(str(a), names) if isinstance(a, (str, int, float)) else ""
            if a and a.casefold() not in seen:
                seen.add(a.casefold())
                out.append(a)
        return out
    line = next((ln for ln in (l.strip() for l in text.splitlines()) if ln and not ln.startswith("```")), "")
    line = _PREFIX.sub("", line).strip()
    if not line:
        return []
    names = {n.casefold() for n in evidence_names}
    if "|" in line:
        parts = [_clean(p, names) for p in line.split("|")]
    else:
        pieces = [_clean(p, names) for p in re.split(r",|;|\band\b", line)]
        pieces = [p for p in pieces if p]
        whole = _clean(line, names)
        if len(pieces) > 1 and whole.casefold() not in names and all(p.casefold() in names for p in pieces):
            parts = pieces
        else:
            parts = [whole]
    out, seen = [], set()
    for p in parts:
        if p and p.casefold() not in seen:
            seen.add(p.casefold())
            out.append(p)
    return out


# ----------------------------------------------------------------------------- fact verification


_WORD = {"true": "True", "yes": "True", "supported": "True", "supports": "True", "correct": "True",
         "false": "False", "no": "False", "refuted": "False", "refutes": "False", "incorrect": "False",
         "unsupported": "False", "not supported": "False", "not true": "False", "not false": "True"}
_VERDICT_WORDS = (r"(not supported|not true|not false|unsupported|supported|supports|refuted|refutes|incorrect|correct"
                  r"|true|false|yes|no)")
_STATED = re.compile(r"(?:answer|verdict|label|claim is|statement is)\s*(?:is|:|=|-)?\s*[\"'*`\[(]*" + _VERDICT_WORDS + r"\b", re.I)
_LEADING = re.compile(r"^[\s\"'*`\[(]*" + _VERDICT_WORDS + r"[\"'*`\])]*\s*(?:[.,;:!]|$)", re.I)
_BARE = re.compile(r"\b(not true|not false|true|false)\b", re.I)


def parse_verdict(text: str) -> str | None:
    """"True" / "False" from a verification reply, or None when it says neither clearly.

    In order: the last stated verdict ("Answer: True", "the answer is 'False'", "Verdict - supported");
    a reply that starts with a verdict word and a stop ("False. The graphs ...", "Yes"); a reply whose
    mentions of true / false (and "not true" / "not false") all agree. Yes / supported / correct read as
    True, no / refuted / incorrect / not true as False.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    stated = _STATED.findall(text)
    if stated:
        return _WORD[stated[-1].lower()]
    lead = _LEADING.match(text)
    if lead:
        return _WORD[lead.group(1).lower()]
    bare = {_WORD[m.lower()] for m in _BARE.findall(text)}
    if len(bare) == 1:
        return bare.pop()
    return None
