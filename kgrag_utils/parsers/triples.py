"""Triples from model output: JSON objects or lists, bracketed tuples, pipe tables and bare comma lines."""

from __future__ import annotations

import re
from typing import Any, Iterator

from .budget import _MAX_SCAN, _bounded, _spend
from .json_spans import iter_json_values

_HEAD_KEYS = ("head", "subject", "h", "s", "source")
_REL_KEYS = ("relation", "predicate", "rel", "r", "p", "edge")
_TAIL_KEYS = ("tail", "object", "t", "o", "target")
_HEADER_WORDS = {"head", "relation", "tail", "subject", "predicate", "object", "h", "r", "t", "entity", "source", "target"}
_QUOTES = "\"'`"


def _clean(part: Any) -> str:
    s = str(part).strip()
    while len(s) >= 2 and s[0] == s[-1] and s[0] in _QUOTES:
        s = s[1:-1].strip()
    return s


def _as_triple(parts: Any) -> tuple[str, str, str] | None:
    if isinstance(parts, dict):
        lower = {str(k).lower(): v for k, v in parts.items()}
        picked = [next((lower[k] for k in keys if k in lower), None) for keys in (_HEAD_KEYS, _REL_KEYS, _TAIL_KEYS)]
        parts = picked if all(p is not None for p in picked) else None
    if not isinstance(parts, (list, tuple)) or len(parts) != 3:
        return None
    if any(isinstance(p, (list, tuple, dict)) for p in parts):
        return None
    triple = tuple(_clean(p) for p in parts)
    return triple if all(triple) else None  # type: ignore[return-value]


def _triples_from_json(value: Any) -> list[tuple[str, str, str]]:
    if isinstance(value, dict):
        one = _as_triple(value)
        if one:
            return [one]
        for k in ("triples", "triplets", "edges", "facts", "relations"):
            if isinstance(value.get(k), list):
                return _triples_from_json(value[k])
        return []
    if isinstance(value, list):
        one = _as_triple(value)
        if one and not any(isinstance(v, (list, dict)) for v in value):
            return [one]
        out = []
        for item in value:
            t = _as_triple(item)
            if t:
                out.append(t)
        return out
    return []


def _split_top_level(s: str) -> list[str]:
    """Split on commas that are outside quotes and nested brackets."""
    _spend(len(s))
    parts, buf, depth, quote = [], [], 0, None
    blank = True  # the current part holds only whitespace so far
    for i, c in enumerate(s):
        if quote:
            buf.append(c)
            if c == quote:
                quote = None
            continue
        if c in "\"`" or (c == "'" and blank):
            quote = c  # a quote opens a string only at the start of a part (apostrophes in words are text)
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(buf))
            buf, blank = [], True
        else:
            buf.append(c)
            blank = blank and c.isspace()
    parts.append("".join(buf))
    if depth != 0 or quote:  # a stray bracket or quote inside a name: plain commas are the best guess
        return s.split(",")
    return parts


def _bracket_groups(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, str]]:
    """Top-level (...) and [...] groups with their positions; unbalanced openers are skipped."""
    end = len(text) if end is None else end
    i = start
    while i < end:
        c = text[i]
        if c in "([":
            close = ")" if c == "(" else "]"
            depth, j, quote = 0, i, None
            while j < end:
                d = text[j]
                if quote:
                    if d == quote:
                        quote = None
                elif d == '"':
                    quote = d
                elif d == "\n" and depth >= 1 and c == "(":
                    break
                elif d in "([":
                    depth += 1
                elif d in ")]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            _spend(j - i + 1)
            if j < end and depth == 0 and text[j] == close:
                yield i, text[i + 1 : j]
                i = j + 1
                continue
        i += 1


def _triples_from_brackets(text: str, offset: int = 0, depth: int = 0) -> list[tuple[int, tuple[str, str, str]]]:
    found = []
    for pos, inner in _bracket_groups(text):
        parts = _split_top_level(inner)
        triple = _as_triple(parts) if len(parts) == 3 else None
        if triple:
            found.append((offset + pos, triple))
        elif depth < 4 and any(b in inner for b in "(["):
            found.extend(_triples_from_brackets(inner, offset + pos + 1, depth + 1))
    return found


_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.):]|\(\d+\))\s*")


def _numbered_lines(text: str, skip_lines: set[int]):
    """(offset of its first character, line) of each line of `text` whose number is not in `skip_lines`."""
    pos = 0
    for lineno, line in enumerate(text.split("\n")):
        if lineno not in skip_lines:
            yield pos, line
        pos += len(line) + 1


def _triples_from_pipes(text: str, skip_lines: set[int]) -> list[tuple[int, tuple[str, str, str]]]:
    found = []
    for start, line in _numbered_lines(text, skip_lines):
        if line.count("|") < 2:
            continue
        body = _BULLET.sub("", line).strip().strip("|")
        parts = [_clean(p) for p in body.split("|")]
        if len(parts) != 3 or not all(parts) or all(set(p) <= set("-: ") for p in parts):
            continue
        if all(p.lower() in _HEADER_WORDS for p in parts):
            continue
        found.append((start, tuple(parts)))
    return found


# matched on a line stripped of blanks and of one closing bracket: no two neighbouring parts can trade
# characters, so the match is linear (the older `\s*...+?...\s*$` form backtracked quadratically)
_BARE_LINE = re.compile(r"[(\[]?([^,()\[\]|]+),([^,()\[\]|]+),([^,()\[\]|]+)")


def _bare_comma_lines(text: str, skip_lines: set[int]) -> list[tuple[int, tuple[str, str, str]]]:
    found = []
    for start, line in _numbered_lines(text, skip_lines):
        body = _BULLET.sub("", line).strip()
        if body[-1:] in (")", "]"):
            body = body[:-1].rstrip()
        _spend(len(line))
        m = _BARE_LINE.fullmatch(body)
        triple = _as_triple(list(m.groups())) if m else None
        if triple:
            found.append((start, triple))
    return found


@_bounded(lambda *a, **k: [])
def parse_triples(text: str) -> list[tuple[str, str, str]]:
    """Triples written as JSON, `(h, r, t)`, `[h, r, t]` or `h | r | t` lines, in order of appearance.

    Parts are stripped of whitespace and matching quotes; a part may contain commas when quoted.
    Among bracketed triples, a bare `h, r, t` line (a bracket lost by a small model) counts too.
    """
    if not isinstance(text, str):
        return []
    text = text[:_MAX_SCAN]
    bracketed = _triples_from_brackets(text)
    for value in iter_json_values(text):
        triples = _triples_from_json(value)
        if triples and len(triples) >= len(bracketed):
            return triples
    lines_with = {text.count("\n", 0, p) for p, _ in bracketed}
    found = bracketed + _triples_from_pipes(text, lines_with)
    if bracketed:  # inside a list of (h, r, t) lines, a line that lost its brackets still counts
        found += _bare_comma_lines(text, lines_with)
    found.sort(key=lambda x: x[0])
    return [t for _, t in found]

