"""Reading the LLM's rerank answer back into candidate positions, robustly.

The prompt lists candidates as `[1] sentence` ... `[n] sentence` and asks for
{"reasoning": ..., "ids": [...]}. Small models also answer with "[3] text" strings, bare
sentences, triples, ids out of range, or repeats, or break the JSON. The mapping, per item in order:
an integer (or "[3]", "3", "[3] text") inside 1..n is that candidate; an id outside 1..n whose
text matches a candidate is mapped by the text; an item with no id is mapped by its text (exact
after normalisation, then containment, then word overlap >= 0.6); anything else is a bad id.
Repeats are dropped and counted. Answers cut by the token limit are read as far as they go: a list
under an ids key whose JSON never closed gives its complete items (status "partial"; the last item
is dropped when it may be cut, "2" of "25"). Without any list, `[k]` marks in the raw text are used
(status "marks"); without marks, the clauses of the text (split at ; . and newlines) that match a
candidate sentence by text (status "text": a 0.5B model that loops in its reasoning often restates
the facts it means without their ids). With nothing usable the status is "failed" (an empty list
gives "empty").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from ....parsers import iter_json_values

__all__ = ["RerankChoice", "map_rerank_answer"]

_LIST_KEYS = ("ids", "useful_relations", "useful_relationships", "relations", "facts", "selected", "selected_ids",
              "answer")
_REASON_KEYS = ("reasoning", "thought_process", "reason", "thoughts", "explanation")
_LEADING_ID = re.compile(r"^\s*[\[(]?\s*#?(\d+)\s*[\])]?[\s.:,-]*(.*)$", re.S)
_MARK = re.compile(r"\[(\d+)\]")
_WORD = re.compile(r"\w+")
_PARTIAL_LIST = re.compile(r'"(?:%s)"\s*:\s*\[([^\[\]]*)(\]?)' % "|".join(_LIST_KEYS), re.S)
_LEADING_KEY = re.compile(r'^\s*\{?\s*"\w+"\s*:\s*"')
_CLAUSE = re.compile(r"[;\n]+|(?<=[.!?])\s+")


@dataclass
class RerankChoice:
    """Positions (0-based, into the candidate list) in the LLM's order, plus what went wrong on the way."""

    positions: list[int]
    status: str  # "json" | "partial" | "marks" | "text" | "empty" | "failed"
    reasoning: str | None = None
    n_items: int = 0
    bad_ids: list[Any] = field(default_factory=list)
    duplicates: int = 0
    by_text: int = 0

    @property
    def failed(self) -> bool:
        return not self.positions


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(str(text).casefold()))


class _Matcher:
    def __init__(self, sentences: Sequence[str]):
        self.keys = [_norm(s) for s in sentences]
        self.exact = {}
        for i, k in enumerate(self.keys):
            self.exact.setdefault(k, i)
        self.words = [set(k.split()) for k in self.keys]

    def match(self, text: str) -> int | None:
        key = _norm(text)
        if not key:
            return None
        if key in self.exact:
            return self.exact[key]
        if len(key) >= 8:
            contained = [i for i, k in enumerate(self.keys) if k and (k in key or key in k)]
            if len(contained) == 1:
                return contained[0]
        words = set(key.split())
        best, best_score = None, 0.0
        for i, w in enumerate(self.words):
            if not w:
                continue
            score = len(words & w) / len(words | w)
            if score > best_score:
                best, best_score = i, score
        return best if best_score >= 0.6 else None


def _items_of(value: Any) -> tuple[list | None, str | None]:
    if isinstance(value, list):
        return value, None
    if not isinstance(value, dict):
        return None, None
    reasoning = next((str(value[k]) for k in _REASON_KEYS if isinstance(value.get(k), str)), None)
    for k in _LIST_KEYS:
        if isinstance(value.get(k), list):
            return value[k], reasoning
    for v in value.values():
        if isinstance(v, list):
            return v, reasoning
    return None, reasoning


def _partial_items(text: str) -> list | None:
    """The complete items of a list under an ids key that the JSON parser could not read (cut or broken)."""
    m = _PARTIAL_LIST.search(text)
    if m is None:
        return None
    body, closed = m.group(1), bool(m.group(2))
    parts = [x.strip() for x in body.split(",")]
    if not closed and not body.rstrip().endswith(","):
        parts = parts[:-1]  # the last item may be cut by the token limit
    items: list = []
    for part in parts:
        if not part:
            continue
        items.append(int(part) if part.isdigit() else part.strip("\"' "))
    return items or None


def _text_positions(text: str, matcher: "_Matcher") -> list[int]:
    """Candidates restated by text, clause by clause, in order (repeats dropped)."""
    out: list[int] = []
    for clause in _CLAUSE.split(_LEADING_KEY.sub("", text)):
        pos = matcher.match(clause.strip(" \"'{}[],"))
        if pos is not None and pos not in out:
            out.append(pos)
    return out


def map_rerank_answer(text: str | None, sentences: Sequence[str]) -> RerankChoice:
    """Map an LLM rerank answer to candidate positions (see the module docstring)."""
    n = len(sentences)
    if not text or n == 0:
        return RerankChoice([], "failed")
    items, reasoning, from_dict = None, None, False
    for value in iter_json_values(text):
        found, more = _items_of(value)
        reasoning = reasoning or more
        if found is not None:
            items, from_dict = found, isinstance(value, dict)
            break
    marks = [int(m) for m in _MARK.findall(text)]
    if items is not None and not from_dict and len(marks) > len(items):
        items = None  # "[3] text" lines: the first "[3]" parses as a JSON list, the marks hold them all
    partial = False
    if items is None:
        items = _partial_items(text)
        partial = items is not None
    matcher = _Matcher(sentences)
    if items is None and not marks:
        positions = _text_positions(text, matcher)
        return RerankChoice(positions, "text" if positions else "failed", reasoning, len(positions),
                            by_text=len(positions))
    if items is None:
        positions, seen, bad, dup = [], set(), [], 0
        for k in marks:
            if not 1 <= k <= n:
                bad.append(k)
            elif k - 1 in seen:
                dup += 1
            else:
                seen.add(k - 1)
                positions.append(k - 1)
        return RerankChoice(positions, "marks" if positions else "failed", reasoning, len(marks), bad, dup)

    positions: list[int] = []
    seen: set[int] = set()
    bad: list[Any] = []
    dup = by_text = 0
    for item in items:
        pos: int | None = None
        text_part: str | None = None
        number: int | None = None
        if isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, int) or (isinstance(item, float) and item.is_integer()):
            number = int(item)
        elif isinstance(item, str):
            m = _LEADING_ID.match(item)
            if m:
                number, text_part = int(m.group(1)), m.group(2)
            else:
                text_part = item
        elif isinstance(item, dict):
            raw_id = next((item[k] for k in ("id", "fact", "index", "number") if k in item), None)
            if isinstance(raw_id, (int, str)) and str(raw_id).strip("[] ").isdigit():
                number = int(str(raw_id).strip("[] "))
            text_part = next((str(item[k]) for k in ("text", "relation", "fact", "sentence") if isinstance(item.get(k), str)), None)
        elif isinstance(item, (list, tuple)):
            text_part = " ".join(str(x) for x in item)
        if number is not None and 1 <= number <= n:
            pos = number - 1
        elif text_part:
            pos = matcher.match(text_part)
            if pos is not None:
                by_text += 1
        if pos is None:
            bad.append(item if isinstance(item, (int, str)) else str(item)[:80])
        elif pos in seen:
            dup += 1
        else:
            seen.add(pos)
            positions.append(pos)
    status = ("partial" if partial else "json") if positions else ("empty" if not items else "failed")
    return RerankChoice(positions, status, reasoning, len(items), bad, dup, by_text)
