"""SimGRAG's last stage: the top-k subgraphs as `graph [i]: (h, r, t), ...` lines + a few-shot answer prompt.

The model is asked for the answer entities separated by " | "; `parse_answer` also accepts a
comma- or "and"-separated list when that splits the line into names the evidence contains.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, Sequence

from ...errors import ConfigError
from .gsd_search import Subgraph
from .pattern import load_prompt_file

if TYPE_CHECKING:  # pragma: no cover
    from ...kg import KG

__all__ = ["evidence_lines", "build_answer_prompt", "parse_answer", "NO_EVIDENCE"]

NO_EVIDENCE = "(no matching subgraph was found)"
_PREFIX = re.compile(r"^\s*\**\s*(?:final\s+)?answers?\s*\**\s*[:：]\s*", re.I)


def evidence_lines(kg: "KG", subgraphs: Sequence[Subgraph]) -> list[str]:
    """One line per subgraph, facts in the KG's own direction, best subgraph first."""
    lines = []
    for i, sg in enumerate(subgraphs, 1):
        facts = ", ".join(f"({h}, {r}, {t})" for h, r, t in sg.triples(kg))
        lines.append(f"graph [{i}]: {facts}")
    return lines


def _user_turn(question: str, lines: Sequence[str]) -> str:
    body = "\n".join(lines) if lines else NO_EVIDENCE
    return f"Evidence:\n{body}\nQuestion: {question}"


def build_answer_prompt(question: str, lines: Sequence[str], family: str = "movies", shots: int = 3) -> list[dict]:
    """A chat: instructions, `shots` worked examples, then the evidence and the question."""
    spec = load_prompt_file("simgrag_answer.yaml")
    families = spec["families"]
    if family not in families:
        raise ConfigError(f"unknown answer family {family!r}: use one of {sorted(families)}.")
    examples = families[family]
    if not isinstance(shots, int) or isinstance(shots, bool) or not 0 <= shots <= len(examples):
        raise ConfigError(f"answer shots must be an integer in 0..{len(examples)}, got {shots!r}.")
    chat = [{"role": "system", "content": spec["instructions"].strip()}]
    for ex in examples[:shots]:
        chat.append({"role": "user", "content": _user_turn(ex["question"], ex["evidence"])})
        chat.append({"role": "assistant", "content": str(ex["answer"])})
    chat.append({"role": "user", "content": _user_turn(question, lines)})
    return chat


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
