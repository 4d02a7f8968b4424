"""Each knob documented once: the comment after a config field is the comment its notebook's parameters cell shows.

A method's config (`<M>Config`, on `base.MethodConfig`) says every knob's default and, in the `# comment` after
the field (or a pydantic `Field(description=...)`), what it does. The notebook's parameters cell repeats the
defaults as literals (tests/test_protocol.py checks they agree) and, beside each config field, that same comment:
`sync_parameters_cell` writes it there, and a test checks the committed notebooks are in sync. A parameter that
is no config field (run_name, llm_threads, a notebook's display switches) keeps the comment written in its
notebook, its one place.

    kgrag params [--check]   # rewrite (or check) every method notebook's parameters cell
"""

from __future__ import annotations

import ast
import inspect
import io
import json
import textwrap
import tokenize
from pathlib import Path

from ..errors import ConfigError

__all__ = ["field_comments", "synced_parameters_source", "sync_parameters_cell"]


def _comments(source: str) -> dict[int, tuple[int, str]]:
    """line -> (column, text) of each `#` comment in `source`."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = (tok.start[1], tok.string[1:].strip())
    return out


def _trailing(lines: list[str], comments: dict[int, tuple[int, str]], end_line: int) -> tuple[int | None, list[str]]:
    """(column, lines) of the comment after a statement ending on `end_line` (1-based): the comment on that line
    and the comment-only lines right below it that start at the same column (its continuation)."""
    if end_line not in comments:
        return None, []
    column, text = comments[end_line]
    out, line = [text], end_line + 1
    while line in comments and comments[line][0] == column and not lines[line - 1][:column].strip():
        out.append(comments[line][1])
        line += 1
    return column, out


def field_comments(config_class: type) -> dict[str, list[str]]:
    """field name -> its one comment, as lines: the `# comment` after the field (with its continuation lines) or
    its `Field(description=...)`; the subclass's where it redeclares a field of its base."""
    from pydantic import BaseModel

    out: dict[str, list[str]] = {}
    for klass in reversed(config_class.__mro__):
        if not issubclass(klass, BaseModel) or klass.__module__.startswith("pydantic"):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        lines, comments = source.split("\n"), _comments(source)
        for node in ast.parse(source).body[0].body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                text = _trailing(lines, comments, node.end_lineno)[1]
                field = config_class.model_fields.get(node.target.id)
                text = text or ([field.description] if field is not None and field.description else [])
                if text:
                    out[node.target.id] = text
    return out


def synced_parameters_source(source: str, comments: dict[str, list[str]], where: str = "the parameters cell") -> str:
    """`source` (a parameters cell) with the comment of each line that sets a config field (and its continuation
    lines) replaced by the field's comment, at the same column (the cell's usual one where the line has none). Other lines are kept."""
    lines = source.split("\n")
    found = _comments(source)
    columns = [c for c, _ in found.values() if c]
    usual = max(set(columns), key=columns.count) if columns else 35  # the cell's comment column
    out: list[str] = []
    done = 0  # lines of `lines` already copied to `out`
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if not isinstance(target, ast.Name) or target.id not in comments:
            continue
        text = comments[target.id]
        if any("=" in t for t in text):
            raise ConfigError(f"the comment of {target.id!r} holds '=' ({' '.join(text)!r}): papermill skips such a "
                              f"line in {where}; write it with ':' in its config.")
        column, old = _trailing(lines, found, node.end_lineno)
        i = node.end_lineno - 1
        code = lines[i][:column].rstrip() if column is not None else lines[i].rstrip()
        pad = column if column is not None and column > len(code) else max(usual, len(code) + 2)
        out += lines[done:i]
        out += [f"{code.ljust(pad)}# {text[0]}", *(f"{'':{pad}}# {t}" for t in text[1:])]
        done = i + max(1, len(old))
    return "\n".join(out + lines[done:])


def _cell(nb: dict, path: Path) -> dict:
    cells = [c for c in nb.get("cells", []) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ConfigError(f"{path.name} must have exactly one cell tagged 'parameters' (found {len(cells)}).")
    return cells[0]


def sync_parameters_cell(notebook: str | Path, config_class: type, write: bool = False) -> bool:
    """Whether the notebook's parameters cell already shows its config fields' comments; with `write`, rewrite
    it so that it does (the notebook's other cells and outputs untouched)."""
    from ..notebook_params import resolve_notebook

    path = resolve_notebook(notebook)
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    cell = _cell(nb, path)
    source = "".join(cell.get("source", []))
    synced = synced_parameters_source(source, field_comments(config_class), where=path.name)
    if synced == source:
        return True
    if write:
        cell["source"] = synced.splitlines(keepends=True)
        indent = 1 if text.startswith("{\n \"") else 2
        path.write_text(json.dumps(nb, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    return False
