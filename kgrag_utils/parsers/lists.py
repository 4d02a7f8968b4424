"""Id lists (JSON lists, `[12]` marks, bare numbers) and answer lists (one answer a line or a list)."""

from __future__ import annotations

import re
from typing import Any, Collection, Iterable

from .budget import _MAX_ID_DIGITS, _MAX_SCAN, _bounded, _spend
from .json_spans import iter_json_values, json_field_list, strip_code_fences

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
    from ..metrics import normalize_answer  # metrics imports nothing from here; keeps the import light

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
