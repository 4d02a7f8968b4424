"""The tables of docs/ that are not a method's run records, generated from the benchmarks' JSON files.

Speed, scale, build and setup measurements, the peers' comparisons (benchmarks/peers/) and the papers' own numbers
are read from the files the benchmark scripts write (benchmarks/results/); a method's quality table is not (it
comes from run records: `kgrag repro TABLE --write`, `repro/table.py`). The tables are declared in
configs/tables.py (`TABLES`); this module reads, renders, writes and checks them:

    kgrag tables                 # rewrite every table between its markers
    kgrag tables --check         # exit 1, naming the tables, when a committed table differs from its JSON
    kgrag tables --show NAME     # print one table

Why: numbers typed by hand beside the JSON they come from drift; here each cell is read from its JSON (or, for the
papers' numbers, from the method's `published.py`, and labelled published). tests/test_results_tables.py fails
when a committed table disagrees with its JSON.

Where a table lives: in a markdown file, between two marker comments (`repro/blocks.py`):

    <!-- table:simgrag-oracle -->
    | ... written by `kgrag tables` ... |
    <!-- /table:simgrag-oracle -->

How to add a table (a few declarative lines in configs/tables.py):

    Table("my-table", "docs/RESULTS.md",
          header=("dataset", "Recall@5", "n"),
          rows=[Row("my_bench_musique.json", "MuSiQue", "{recall@5:%.1f}", "{n_questions}"),
                Row("my_bench_2wiki.json", "2Wiki", "{recall@5:%.1f}", "{n_questions}")])

then put the two markers where the table goes and run `kgrag tables`. A `Row` is one JSON file (relative to
benchmarks/results/) and one cell template per column; `Rows(file, "rows", ...)` makes one row per item of
a list inside the JSON (optionally `where=` a predicate). A template is text with `{path:format}` fields:

* path: a '/'-separated key path into the row's JSON (list items by index: `runs/0/recall@5`, or by a field:
  `runs/[kind=cold]/wall_s`); `other.json#a/b` reads another file of benchmarks/results/; a path starting with
  `@` reads a published number instead: `@simgrag.PAPER/SimGRAG/metaqa-1hop` is
  `kgrag_utils.methods.simgrag.published.PAPER["SimGRAG"]["metaqa-1hop"]`;
* format: a Python format spec (`.1f`, `,`, `.3f`), optionally led by `%` (the value times 100: fractions
  shown as percentages) and ended by `~` (trailing zeros and a bare point dropped: 100.0 -> 100); fixed
  decimals round the number as the JSON writes it, half up (0.8255 with `%.1f` -> 82.6);
  no format: the value as JSON writes it;
* `{path|default}` gives `default` when the path is absent (for files that lack a field).

A number inside prose is a `Value(name, doc, file, template)` between `<!-- value:NAME -->` and
`<!-- /value:NAME -->` on one line.

Cells may also be plain text, or a function of the row's JSON (for a ratio or a unit change: `scaled(...)`; parts
of both: `joined(...)`). A missing file or path is an error naming both (never a silent blank).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import settings
from ..errors import ConfigError
from . import blocks

__all__ = ["Row", "Rows", "Table", "Value", "TableError", "lookup", "published", "fmt", "fill", "load", "scaled",
           "joined", "results_dir", "tables", "rendered", "stale", "add_arguments", "main"]

SPEC = "configs/tables.py"  # the declarations (TABLES), from the repository root
_FIELD = re.compile(r"\{([^{}:|]+)(?:\|([^{}:]*))?(?::([^{}]*))?\}")
_CACHE: dict[tuple[Path, str], Any] = {}


class TableError(ConfigError):
    """A table names a file, path or marker that does not exist."""


def results_dir() -> Path:
    """benchmarks/results/: the JSON files the tables are read from."""
    return settings.repo_root() / "benchmarks" / "results"


# ----------------------------------------------------------------------------- reading values
def lookup(data: Any, path: str, where: str) -> Any:
    """The value at a '/'-separated key path (list items by index, or `[key=value]`: the one item whose key is so)."""
    value = data
    for part in path.split("/"):
        if isinstance(value, list) and part.startswith("[") and part.endswith("]") and "=" in part:
            key, _, want = part[1:-1].partition("=")
            hits = [v for v in value if isinstance(v, dict) and str(v.get(key)) == want]
            if len(hits) != 1:
                raise TableError(f"{where}: {len(hits)} items with {key} = {want!r} in {path!r} (need exactly one)")
            value = hits[0]
            continue
        if isinstance(value, (list, tuple)) and part.lstrip("-").isdigit():
            try:
                value = value[int(part)]
                continue
            except IndexError:
                raise TableError(f"{where}: no item {part} in {path!r}") from None
        if not isinstance(value, dict) or part not in value:
            raise TableError(f"{where}: no key {part!r} in {path!r}")
        value = value[part]
    return value


def published(ref: str) -> Any:
    """`simgrag.PAPER/SimGRAG/metaqa-1hop` -> kgrag_utils.methods.simgrag.published.PAPER[...][...]."""
    method, _, path = ref.partition(".")
    module = importlib.import_module(f"kgrag_utils.methods.{method}.published")
    name, _, rest = path.partition("/")
    value = getattr(module, name)
    return lookup(value, rest, f"{method}/published.py") if rest else value


def fmt(value: Any, spec: str | None) -> str:
    """One cell value under a format spec (see the module docstring)."""
    if spec is None or spec == "":
        return value if isinstance(value, str) else json.dumps(value)
    if value is None:
        return "-"
    trim = spec.endswith("~")
    spec = spec[:-1] if trim else spec
    scale = spec.startswith("%")
    spec = spec[1:] if scale else spec
    digits = re.fullmatch(r",?\.(\d+)f", spec)
    if digits and isinstance(value, (int, float)) and not isinstance(value, bool):
        # round the number as the JSON writes it, half up (0.8255 -> 82.6, as a reader rounds it)
        d = Decimal(repr(value)) * (100 if scale else 1)
        out = format(d.quantize(Decimal(1).scaleb(-int(digits.group(1))), rounding=ROUND_HALF_UP), spec)
    else:
        out = format(value * 100 if scale else value, spec)
    if trim and "." in out:
        out = out.rstrip("0").rstrip(".")
    return out


def fill(template: str, data: Any, where: str, results: Path | None = None) -> str:
    """The template with each `{path|default:format}` field replaced by its value."""
    def one(m: re.Match) -> str:
        path, default, spec = m.group(1), m.group(2), m.group(3)
        try:
            if path.startswith("@"):
                value = published(path[1:])
            elif ".json#" in path:
                file, _, inner = path.partition("#")
                value = lookup(load(results or results_dir(), file), inner, file)
            else:
                value = lookup(data, path, where)
        except TableError:
            if default is None:
                raise
            return default
        return fmt(value, spec)

    return _FIELD.sub(one, template)


def load(results: Path, file: str | None) -> Any:
    """A JSON file of `results` (read once per rendering; None: no file, an empty mapping)."""
    if file is None:
        return {}
    path = results / file
    if not path.is_file():
        root = settings.repo_root()
        raise TableError(f"{path.relative_to(root) if path.is_relative_to(root) else path} not found")
    key = (results, file)
    if key not in _CACHE:
        _CACHE[key] = json.loads(path.read_text(encoding="utf-8"))
    return _CACHE[key]


def scaled(path: str, factor: float, spec: str) -> Callable[[Any], str]:
    """A cell: the value at `path` times `factor` (units: MB -> GB, s -> ms), under `spec`."""
    return lambda data: fmt(lookup(data, path, path) * factor, spec)


def joined(*parts: str | Callable[[Any], str]) -> Callable[[Any], str]:
    """A cell made of templates and callables, in order."""
    return lambda data: "".join(p(data) if callable(p) else fill(p, data, "a joined cell") for p in parts)


# ----------------------------------------------------------------------------- declarations
class Row:
    """One table row from one JSON file (None: cells from published numbers or text only)."""

    def __init__(self, file: str | None, *cells: str | Callable[[Any], str]):
        self.file, self.cells = file, cells

    def render(self, results: Path) -> list[list[str]]:
        data = load(results, self.file)
        return [[c(data) if callable(c) else fill(c, data, f"{self.file}", results) for c in self.cells]]


class Rows:
    """One row per item of the list at `items` in one JSON file, in the file's order."""

    def __init__(self, file: str, items: str, *cells: str | Callable[[Any], str],
                 where: Callable[[dict], bool] | None = None):
        self.file, self.items, self.cells, self.where = file, items, cells, where

    def render(self, results: Path) -> list[list[str]]:
        data = lookup(load(results, self.file), self.items, self.file)
        return [[c(item) if callable(c) else fill(c, item, f"{self.file}:{self.items}", results) for c in self.cells]
                for item in data if self.where is None or self.where(item)]


class Table:
    """One generated table: its marker name, the markdown file that holds it, the header and the rows."""

    kind = "table"

    def __init__(self, name: str, doc: str, header: Sequence[str], rows: Sequence[Row | Rows]):
        self.name, self.doc, self.header, self.rows = name, doc, tuple(header), list(rows)

    def render(self, results: Path | None = None) -> str:
        results = results or results_dir()
        lines = [("| " + " | ".join(self.header) + " |").replace("|  |", "| |"), "|" + "---|" * len(self.header)]
        for row in self.rows:
            for cells in row.render(results):
                if len(cells) != len(self.header):
                    raise TableError(f"table {self.name}: a row has {len(cells)} cells for {len(self.header)} columns")
                lines.append(("| " + " | ".join(cells) + " |").replace("|  |", "| |").replace("|  |", "| |"))
        return "\n".join(lines)


class Value:
    """One number inside prose: `<!-- value:NAME -->97.7<!-- /value:NAME -->` on one line, from one template."""

    kind = "value"

    def __init__(self, name: str, doc: str, file: str | None, template: str | Callable[[Any], str]):
        self.name, self.doc, self.file, self.template = name, doc, file, template

    def render(self, results: Path | None = None) -> str:
        results = results or results_dir()
        data = load(results, self.file)
        return self.template(data) if callable(self.template) else fill(self.template, data, str(self.file), results)


# ----------------------------------------------------------------------------- writing and checking
def tables() -> list[Table | Value]:
    """The declared tables: `TABLES` of configs/tables.py."""
    path = settings.repo_root() / SPEC
    spec = importlib.util.spec_from_file_location("results_tables", path)
    if spec is None or not path.is_file():
        raise ConfigError(f"{path} not found: the tables are declared there (a checkout of the repository has it).")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TABLES


def rendered(declared: Sequence[Table | Value] | None = None, root: Path | None = None,
             results: Path | None = None) -> dict[str, str]:
    """Every document that holds a table (default: every declared one), as it should read (doc path relative to
    root -> text)."""
    _CACHE.clear()
    root = root or settings.repo_root()
    out: dict[str, str] = {}
    for t in tables() if declared is None else declared:
        text = out.get(t.doc)
        if text is None:
            text = (root / t.doc).read_text(encoding="utf-8")
        out[t.doc] = blocks.splice(text, t.kind, t.name, t.render(results), where=t.doc)
    return out


def stale(declared: Sequence[Table | Value] | None = None, root: Path | None = None,
          results: Path | None = None) -> list[str]:
    """Names of the tables (default: every declared one) whose committed text differs from what their JSON gives."""
    _CACHE.clear()
    root = root or settings.repo_root()
    bad = []
    for t in tables() if declared is None else declared:
        now = blocks.content((root / t.doc).read_text(encoding="utf-8"), t.kind, t.name)
        if now is None:
            bad.append(f"{t.name} (no markers in {t.doc})")
        elif now != t.render(results):
            bad.append(f"{t.name} ({t.doc})")
    return bad


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed table differs from its JSON")
    parser.add_argument("--show", metavar="NAME", help="print one table")


def main(args: argparse.Namespace, declared: Sequence[Table | Value] | None = None) -> int:
    """`kgrag tables [--check | --show NAME]` over the declared tables (default: configs/tables.py)."""
    declared = tables() if declared is None else declared
    if args.show:
        named = [t for t in declared if t.name == args.show]
        if not named:
            raise ConfigError(f"no table {args.show!r}; tables: {', '.join(t.name for t in declared)}.")
        print(named[0].render())
        return 0
    if args.check:
        bad = stale(declared)
        for name in bad:
            print(f"stale table: {name}; run `kgrag tables`", file=sys.stderr)
        return 1 if bad else 0
    for doc, text in rendered(declared).items():
        path = settings.repo_root() / doc
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"rewrote {doc}")
    return 0
