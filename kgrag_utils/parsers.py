"""Tolerant parsers for LLM output: JSON inside prose or code fences, triples, id lists and answer lists.

Small models wrap JSON in prose and ``` fences, leave trailing commas, use single quotes or Python
literals, and stop mid-list when they hit the token limit. These parsers recover what is there and
return an empty result (or `default`) when nothing is, never raising on arbitrary text. Nothing is
ever evaluated (no eval, no ast.literal_eval): a bracketed span is read by json.loads, then by a small
token-level repair (single quotes, Python literals, bare keys, trailing commas), then by the
json-repair library (unescaped quotes, missing commas or quotes, Python tuples), which is not handed
spans that contain call syntax such as `f(`.

Work is bounded on any input (adversarial text included): each public parser gets a budget of
`_WORK_PER_CHAR` character steps per input character (`_Work`); a text that would need more, such as
thousands of unclosed brackets, is counted as unparseable (`STATS["over_budget"]`) and gives the empty
result. Spans nested deeper than `_MAX_DEPTH` are not parsed, ids longer than `_MAX_ID_DIGITS` digits
are not ids, and the line regexes are written so that they cannot backtrack quadratically.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import json
import re
from typing import Any, Callable, Collection, Iterable, Iterator

_MAX_SCAN = 200_000  # characters of a model output considered
_MAX_STARTS = 64  # bracket positions tried per text
_MAX_REPAIR = 20_000  # longest span handed to json-repair
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\s*\(|\)\s*\(|\blambda\b")  # `f(`, `)(`, lambda: code, not data
_PAIRS = {"}": "{", "]": "["}
_FENCE = re.compile(r"```(?:[\w+.-]*[ \t]*\n)?(.*?)(?:```|\Z)", re.S)
_WORK_PER_CHAR = 24  # character steps a parser may take per input character (normal replies take a few)
_WORK_BASE = 20_000  # and a floor, for short texts
_MAX_DEPTH = 64  # deepest bracket nesting parsed (model output is a few levels deep)
_MAX_ID_DIGITS = 18  # a longer run of digits is not an id (and int() of 4,300+ digits raises)

STATS = {"over_budget": 0}  # replies given up as unparseable because they needed more work than allowed


class _OutOfWork(Exception):
    pass


class _Work:
    """A budget of character steps for one parse of a text of n characters."""

    __slots__ = ("limit", "used")

    def __init__(self, n: int):
        self.limit = _WORK_PER_CHAR * n + _WORK_BASE
        self.used = 0

    def spend(self, steps: int) -> None:
        self.used += steps
        if self.used > self.limit:
            raise _OutOfWork


_WORK: contextvars.ContextVar[_Work | None] = contextvars.ContextVar("kgrag_parse_work", default=None)


def _spend(steps: int) -> None:
    work = _WORK.get()
    if work is not None:
        work.spend(steps)


def _bounded(empty: Callable[..., Any]):
    """Run a public parser under one work budget (shared with the parsers it calls); over it: `empty(...)`."""

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(text, *args, **kwargs):
            if _WORK.get() is not None:
                return fn(text, *args, **kwargs)
            n = min(len(text), _MAX_SCAN) if isinstance(text, str) else 0
            token = _WORK.set(_Work(n))
            try:
                return fn(text, *args, **kwargs)
            except _OutOfWork:
                STATS["over_budget"] += 1
                return empty(text, *args, **kwargs)
            finally:
                _WORK.reset(token)

        return wrapper

    return deco


def _too_deep(span: str) -> bool:
    """Nesting deeper than _MAX_DEPTH (brackets outside quoted strings), found in linear time."""
    brackets = re.sub(r"[^\[\]{}]+", "", _outside_strings(span))
    if len(brackets) <= 2 * _MAX_DEPTH:
        return False
    steps = (1 if c in "[{" else -1 for c in brackets)
    return max(itertools.accumulate(steps), default=0) > _MAX_DEPTH


def strip_code_fences(text: str) -> str:
    """The contents of the first ``` fenced block (language tag dropped), else the stripped text.

    An unclosed fence (output cut by the token limit) runs to the end of the text.
    """
    if not isinstance(text, str):
        return ""
    m = _FENCE.search(text)
    return (m.group(1) if m else text).strip()


# ----------------------------------------------------------------------------- JSON
def _balanced_span(s: str, start: int, quotes: str, close_truncated: bool = True) -> str | None:
    """The bracketed span starting at s[start] ({ or [), or a truncated one closed at its last complete element."""
    stack: list[str] = []
    in_str: str | None = None
    esc = False
    last_cut: tuple[int, int] | None = None
    for i in range(start, len(s)):
        c = s[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == in_str:
                in_str = None
            continue
        if c in quotes:
            in_str = c
        elif c in "{[":
            stack.append(c)
        elif c in "}]":
            if not stack or _PAIRS[c] != stack[-1]:
                _spend(i + 1 - start)
                return None
            stack.pop()
            if not stack:
                _spend(i + 1 - start)
                return s[start : i + 1]
            last_cut = (i + 1, len(stack))  # later events are pushes only (a pop moves the cut): stack[:depth] stays
    _spend(len(s) - start)
    if last_cut is None or not close_truncated:
        return None
    cut, depth = last_cut  # output ended mid-structure: keep the complete elements and close
    open_ = stack[:depth]
    closers = "".join("}" if b == "{" else "]" for b in reversed(open_))
    return s[start:cut] + closers


def _repair_json(span: str) -> str:
    """Rewrite JSON-ish text outside strings: single-quoted strings, Python literals, bare keys, trailing commas."""
    _spend(2 * len(span))  # one pass; look-aheads read each blank once more
    out: list[str] = []
    i, n = 0, len(span)
    while i < n:
        c = span[i]
        if c == '"':  # copy a JSON string verbatim
            j = i + 1
            while j < n and span[j] != '"':
                j += 2 if span[j] == "\\" else 1
            out.append(span[i : j + 1])
            i = j + 1
        elif c == "'":  # a single-quoted string becomes a JSON string
            j, buf = i + 1, []
            while j < n and span[j] != "'":
                if span[j] == "\\" and j + 1 < n:
                    buf.append(span[j + 1] if span[j + 1] in "'\\" else span[j : j + 2])
                    j += 2
                else:
                    buf.append(span[j])
                    j += 1
            out.append(json.dumps("".join(buf)))
            i = j + 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (span[j].isalnum() or span[j] == "_"):
                j += 1
            word = span[i:j]
            k = j
            while k < n and span[k] in " \t\r\n":
                k += 1
            if word in ("True", "False", "None"):
                out.append({"True": "true", "False": "false", "None": "null"}[word])
            elif word in ("true", "false", "null"):
                out.append(word)
            elif k < n and span[k] == ":":
                out.append(json.dumps(word))  # a bare key
            else:
                out.append(word)
            i = j
        elif c == ",":
            k = i + 1
            while k < n and span[k] in " \t\r\n":
                k += 1
            if k < n and span[k] in "}]":
                i += 1  # drop a trailing comma
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _tuples_to_lists(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_tuples_to_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _tuples_to_lists(v) for k, v in value.items()}
    return value


def _outside_strings(span: str) -> str:
    """The span with the contents of its quoted strings blanked (to look for syntax outside them)."""
    return re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', '""', span)


def _loads_lenient(span: str) -> tuple[bool, Any]:
    _spend(len(span))
    if _too_deep(span):
        return False, None
    try:
        return True, json.loads(span)
    except (ValueError, RecursionError):
        pass
    try:
        return True, json.loads(_repair_json(span))
    except (ValueError, RecursionError):
        pass
    bare = _outside_strings(span)
    # json-repair turns anything into some value; give it only data-like spans: quoted strings present
    # (bare words in brackets are prose or triples for the other parsers) and no call syntax
    if len(span) <= _MAX_REPAIR and ('"' in span or "'" in span) and not _CALL.search(bare):
        import json_repair

        _spend(4 * len(span))
        try:
            value = json_repair.loads(span, skip_json_loads=True)
        except (ValueError, RecursionError, TypeError):
            return False, None
        if isinstance(value, (list, dict)) and value:
            return True, _tuples_to_lists(value)
    return False, None


def iter_json_values(text: str) -> Iterator[Any]:
    """Every top-level JSON object/array found, in order.

    A fenced block that holds exactly one JSON value comes first; then the whole text is scanned
    from each { or [ (a fence is not trusted further: a JSON string may itself contain ```).
    Only the whole text may be repaired as truncated (cut by the token limit at its end).
    The search stops (counted in STATS) once it has used its work budget.
    """
    if not isinstance(text, str):
        return
    work = _WORK.get()
    own = work is None
    if own:
        work = _Work(min(len(text), _MAX_SCAN))
    values = _json_values(text)
    while True:
        token = _WORK.set(work)
        try:
            value = next(values)
        except StopIteration:
            return
        except _OutOfWork:
            if not own:
                raise  # the calling parser gives up as a whole
            STATS["over_budget"] += 1
            return
        finally:
            _WORK.reset(token)
        yield value


def _json_values(text: str) -> Iterator[Any]:
    text = text[:_MAX_SCAN]
    if "```" in text:
        for m in _FENCE.finditer(text):
            block = m.group(1).strip()
            if block[:1] in ("{", "["):
                for quotes in ('"', "\"'"):
                    span = _balanced_span(block, 0, quotes, close_truncated=False)
                    if span is not None and len(span) == len(block):
                        ok, value = _loads_lenient(span)
                        if ok:
                            yield value
                            break
    pos, tried = 0, 0
    while tried < _MAX_STARTS:
        starts = [p for p in (text.find("{", pos), text.find("[", pos)) if p >= 0]
        if not starts:
            break
        start = min(starts)
        tried += 1
        parsed = False
        for quotes in ('"', "\"'"):
            span = _balanced_span(text, start, quotes, close_truncated=True)
            if span is None:
                continue
            ok, value = _loads_lenient(span)
            if ok:
                yield value
                pos, parsed = start + len(span), True
                break
        if not parsed:
            pos = start + 1


@_bounded(lambda text, default=None: default)
def extract_json(text: str, default: Any = None) -> Any:
    """The first JSON object or array in `text` (inside prose or a ``` fence), or `default`."""
    for value in iter_json_values(text):
        return value
    return default


@_bounded(lambda *a, **k: None)
def json_field_list(text: str, key: str) -> list | None:
    """The list under `key` of a reply that is one JSON object ({"answers": [...]}), else None.

    A reply cut by the token limit inside its list keeps its complete items: the last, unfinished
    one is dropped (json-repair closes the strings and brackets first).
    """
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    value = extract_json(text)
    if isinstance(value, dict) and isinstance(value.get(key), list):
        return value[key]
    if len(text) > _MAX_REPAIR or _CALL.search(_outside_strings(text)) or _too_deep(text):
        return None
    import json_repair

    _spend(4 * len(text))
    try:
        value = json_repair.loads(text, skip_json_loads=True)
    except (ValueError, RecursionError, TypeError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get(key), list):
        return None
    items = list(value[key])
    if items and not text.rstrip().endswith(("]", "}")):  # cut inside the list: its last item is unfinished
        items = items[:-1]
    return items


@_bounded(lambda *a, **k: [])
def extract_json_list(text: str, key: str | None = None) -> list:
    """The first JSON list in `text`; a dict counts when `key` (or its only list field) holds a list. [] if none."""
    for value in iter_json_values(text):
        if isinstance(value, list):
            return value
        if isinstance(value, dict):
            if key is not None and isinstance(value.get(key), list):
                return value[key]
            lists = [v for v in value.values() if isinstance(v, list)]
            if key is None and len(lists) == 1:
                return lists[0]
    return []


# ----------------------------------------------------------------------------- triples
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


def _triples_from_pipes(text: str, skip_lines: set[int]) -> list[tuple[int, tuple[str, str, str]]]:
    found, pos = [], 0
    for lineno, line in enumerate(text.split("\n")):
        start = pos
        pos += len(line) + 1
        if lineno in skip_lines or line.count("|") < 2:
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
    found, pos = [], 0
    for lineno, line in enumerate(text.split("\n")):
        start = pos
        pos += len(line) + 1
        if lineno in skip_lines:
            continue
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


# ----------------------------------------------------------------------------- ids
_BRACKET_ID = re.compile(r"\[\s*(\d+)\s*\]")
_BARE_INT = re.compile(r"(?<![\w.\-])(\d+)(?![\w.]\w)")


def _ints(values: Any) -> list[int]:
    out = []
    for v in values:
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            out.append(v)
        elif isinstance(v, float) and v.is_integer():
            out.append(int(v))
        elif isinstance(v, str) and len(v) <= _MAX_ID_DIGITS + 8:
            m = re.fullmatch(r"\s*\[?\s*(\d+)\s*\]?\s*", v)
            if m and len(m.group(1)) <= _MAX_ID_DIGITS:
                out.append(int(m.group(1)))
    return [i for i in out if abs(i) < 10 ** _MAX_ID_DIGITS]


def _ids_from_json(value: Any, key: str | None) -> list[int] | None:
    if isinstance(value, list):
        ids = _ints(value)
        return ids if ids and len(ids) == len(value) else None
    if isinstance(value, dict):
        if key is not None and isinstance(value.get(key), list):
            return _ints(value[key])
        for k, v in value.items():
            if isinstance(v, list) and v and ("id" in str(k).lower() or len(_ints(v)) == len(v)):
                ids = _ints(v)
                if ids:
                    return ids
    return None


@_bounded(lambda *a, **k: [])
def parse_ids(text: str, valid: Collection[int] | None = None, key: str | None = None) -> list[int]:
    """Integer ids in order, without repeats: a JSON list (or a dict's id list), else `[12]` marks, else bare numbers.

    With `valid`, ids outside it are dropped (models invent ids).
    """
    if not isinstance(text, str):
        return []
    text = text[:_MAX_SCAN]
    ids: list[int] = []
    for value in iter_json_values(text):  # a dict's id field wins; int lists ([3, 5] or [12] ... [7]) add up
        found = _ids_from_json(value, key)
        if found and isinstance(value, dict):
            ids = found
            break
        ids.extend(found or [])
    if not ids:
        ids = [int(m) for m in _BRACKET_ID.findall(text) if len(m) <= _MAX_ID_DIGITS]
    if not ids:
        ids = [int(m) for m in _BARE_INT.findall(text) if len(m) <= _MAX_ID_DIGITS]
    allowed = set(valid) if valid is not None else None
    seen: dict[int, None] = {}
    for i in ids:
        if (allowed is None or i in allowed) and i not in seen:
            seen[i] = None
    return list(seen)


# --- answer lists -----------------------------------------------------------------------------

# possessive blanks (`\s*+`): two neighbouring optional blank runs cannot trade characters, so a long
# blank run after "answer" is read once (with plain `\s*` the failing match was quadratic in its length)
_ANSWER_LABEL = re.compile(r"^\s*+(?:\*\*)?\s*+(?:final\s++)?answers?\s*+(?:\*\*)?\s*+[:\-]\s*(?:\*\*)?\s*", re.IGNORECASE)
_INITIAL_END = re.compile(r"(?:^|[\s.])(?:[A-Za-z]|Jr|Sr|St)\.$")
_LIST_MARK = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")


def _drop_label(line: str) -> str:
    """The line without a leading "Answer:" label (one linear match: `_ANSWER_LABEL`)."""
    _spend(len(line))
    m = _ANSWER_LABEL.match(line)
    return line[m.end():] if m else line


def _answer_piece(piece: str) -> str:
    piece = _LIST_MARK.sub("", piece.strip()).strip().strip("`*\"'").strip()
    if piece.endswith(".") and not _INITIAL_END.search(piece):  # keep the period of "D.C." / "Jr."
        piece = piece.rstrip(".").strip().strip("`*\"'").strip()
    return piece


@_bounded(lambda *a, **k: [])
def parse_answer_list(text: str | None, known: Iterable[str] = (), first_line: bool = False) -> list[str]:
    """Answer names, in order, from a model's reply.

    Small models separate answers with '|', new lines, bullets or commas. Pieces are split on '|'
    and new lines ("Answer:" labels, list marks, quotes and a final period dropped); a piece that is
    not itself a ``known`` name (normalised) is split further on commas and semicolons, so
    "Crouching Tiger, Hidden Dragon" stays whole when it is a KG name. Without ``known`` commas are
    never split. ``first_line`` keeps only the first non-empty line (for replies that explain after
    the answer). Duplicates are dropped. A reply in the JSON form of the schema-constrained mode,
    {"answers": [...]} (possibly cut by the token limit), gives its list's strings as they are.
    """
    if not text:
        return []
    from .metrics import normalize_answer  # metrics imports nothing from here; keeps the import light

    items = json_field_list(str(text), "answers")
    if items is not None:
        names: dict[str, None] = {}
        for item in items:
            piece = _answer_piece(str(item)) if isinstance(item, (str, int, float)) and not isinstance(item, bool) else ""
            if piece:
                names.setdefault(piece)
        return list(names)

    body = strip_code_fences(str(text)) if "```" in str(text) else str(text)
    lines = [ln for ln in (_drop_label(ln).strip() for ln in body.strip().splitlines()) if ln]
    if first_line:
        lines = lines[:1]
    known_norm = {normalize_answer(k) for k in known}
    out: list[str] = []
    seen: set[str] = set()
    for line in lines:
        for raw in line.split("|"):
            piece = _answer_piece(_drop_label(raw))
            if not piece:
                continue
            if known_norm and normalize_answer(piece) not in known_norm and re.search(r"[,;]", piece):
                parts = [_answer_piece(p) for p in re.split(r"[,;]", piece)]
            else:
                parts = [piece]
            for part in parts:
                if part and part not in seen:
                    seen.add(part)
                    out.append(part)
    return out
