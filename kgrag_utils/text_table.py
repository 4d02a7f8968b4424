"""Data tables written as text in the source: one row a line, cells split on "|".

Used where a module's data is a table of short strings (generated samples and fixtures, prompt
examples): the table reads as a table, and its rows are parsed once, at import.
"""

from __future__ import annotations

import sys

__all__ = ["table_rows"]


def table_rows(text: str, sep: str = "|") -> tuple[tuple[str, ...], ...]:
    """The rows of `text`: one row a line, cells split on `sep` and stripped; a line that starts
    with `sep` continues the row above (for long rows); blank lines are skipped. Cells are interned, as
    Python interns name-like string literals: equal cells are one object, so a pickle of them writes
    each once (the same bytes as the literal tuple the table replaces)."""
    rows: list[list[str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        cells = [sys.intern(cell.strip()) for cell in line.split(sep)]
        if line.startswith(sep):
            if not rows:
                raise ValueError(f"table line {number} continues a row, but no row came before it")
            rows[-1].extend(cells[1:])
        else:
            rows.append(cells)
    return tuple(tuple(row) for row in rows)
