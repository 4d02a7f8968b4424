"""Generated blocks of the docs: the text between `<!-- KIND:NAME -->` and `<!-- /KIND:NAME -->` (comments, so
they do not show when rendered), written by the generator that owns KIND and checked against it:

- `repro:` a reproduction's table from run records (`repro/table.py`, `kgrag repro TABLE --write`);
- `table:` a measurement's table and `value:` one number inside prose, from the benchmarks' JSON files
  (`repro/bench_tables.py`, `kgrag tables`).

A `value:` block stands inside its line; the others stand on lines of their own between their markers.
"""

from __future__ import annotations

from ..errors import ConfigError

__all__ = ["markers", "content", "splice"]

INLINE = ("value",)


def markers(kind: str, name: str) -> tuple[str, str]:
    return f"<!-- {kind}:{name} -->", f"<!-- /{kind}:{name} -->"


def _span(text: str, kind: str, name: str) -> tuple[int, int] | None:
    """The offsets of what stands between the block's markers (None when the text has no such block)."""
    start, end = markers(kind, name)
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    return (i + len(start), j) if j >= 0 else None


def content(text: str, kind: str, name: str) -> str | None:
    """What the block holds, without the line breaks around it (None when the text has no such block)."""
    span = _span(text, kind, name)
    return None if span is None else text[span[0]:span[1]].strip("\n")


def splice(text: str, kind: str, name: str, body: str, where: str = "the text", append: bool = False) -> str:
    """`text` with the block's content replaced by `body`; a text without the block is an error naming `where`, or
    with `append`, gets the block added at its end."""
    pad = "" if kind in INLINE else "\n"
    body = pad + body.strip("\n") + pad
    span = _span(text, kind, name)
    if span is not None:
        return text[:span[0]] + body + text[span[1]:]
    start, end = markers(kind, name)
    if not append:
        raise ConfigError(f"{where} has no block {start} ... {end}: put the two markers where it belongs.")
    return text + ("\n" if text and not text.endswith("\n") else "") + f"{start}{body}{end}\n"
