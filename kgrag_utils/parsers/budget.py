"""The work budget and size limits every parser runs under (see the package docstring).

Each public parser runs under one `_Work` budget of `_WORK_PER_CHAR` character steps per input
character, shared with the parsers it calls (a context variable); over it, `_bounded` counts the
reply in `STATS["over_budget"]` and returns the parser's empty result.
"""

from __future__ import annotations

import contextvars
import functools
import re
from typing import Any, Callable

_MAX_SCAN = 200_000  # characters of a model output considered
_MAX_STARTS = 64  # bracket positions tried per text
_MAX_REPAIR = 20_000  # longest span handed to json-repair
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\s*\(|\)\s*\(|\blambda\b")  # `f(`, `)(`, lambda: code, not data
_PAIRS = {"}": "{", "]": "["}
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

