"""JSON inside prose or code fences: balanced spans, lenient loading (token repair, then json-repair).

Nothing is evaluated: a span is read by json.loads, then by a small token-level repair (single
quotes, Python literals, bare keys, trailing commas), then by the json-repair library, which is not
handed spans that contain call syntax such as `f(`.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any, Iterator

from .budget import (_CALL, _MAX_DEPTH, _MAX_REPAIR, _MAX_SCAN, _MAX_STARTS, _PAIRS, _WORK, STATS, _bounded,
                     _OutOfWork, _spend, _Work)

_FENCE = re.compile(r"```(?:[\w+.-]*[ \t]*\n)?(.*?)(?:```|\Z)", re.S)


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

