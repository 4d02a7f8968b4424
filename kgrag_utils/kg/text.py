"""Reading fact files (`head|relation|tail` or tab-separated text) into id arrays and vocabularies.

pyarrow's multi-threaded C++ CSV reader does the parsing and the dictionary encoding, so a
10M-line file never becomes Python strings one line at a time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ConfigError

__all__ = ["first_fact_line", "detect_separator", "read_columns", "encode_columns", "read_fact_file"]


def first_fact_line(path: Path) -> str | None:
    """The first non-blank line of a text file, or None when it holds no fact at all."""
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.strip():
                return line
    return None


def detect_separator(line: str, path: Path) -> str:
    if "\t" in line:
        return "\t"
    if "|" in line:
        return "|"
    raise ConfigError(
        f"cannot detect the separator of {path}: the first fact line has neither a tab nor '|'; pass sep= explicitly."
    )


def read_columns(path: Path, sep: str):
    """Three stripped string columns as pyarrow arrays (pyarrow's multi-threaded C++ CSV reader; pyarrow is a
    core dependency)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    bad: list[str] = []

    def on_bad_row(row) -> str:
        if not row.text.replace(sep, "").strip():
            return "skip"  # a line of blanks and separators only counts as blank
        bad.append(row.text)
        return "error"

    try:
        table = pacsv.read_csv(
            str(path),
            read_options=pacsv.ReadOptions(column_names=["h", "r", "t"], block_size=1 << 24),
            parse_options=pacsv.ParseOptions(
                delimiter=sep, quote_char=False, escape_char=False, newlines_in_values=False,
                ignore_empty_lines=True, invalid_row_handler=on_bad_row,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.large_string() for c in "hrt"}, strings_can_be_null=False,
                quoted_strings_can_be_null=False, null_values=[],
            ),
        )
    except pa.ArrowInvalid as exc:
        detail = f"bad line {bad[0][:80]!r}" if bad else str(exc).splitlines()[0][:120]
        raise ConfigError(
            f"{path} is not a 3-column fact file with separator {sep!r} ({detail}); fix the line or pass sep=."
        ) from exc
    return [pc.utf8_trim_whitespace(table.column(c).combine_chunks()) for c in "hrt"]


def encode_columns(cols, path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Drop blank rows, check for empty fields, and factorise names to ids (first-appearance order).

    `cols` are the three pyarrow string arrays of `read_columns`."""
    if len(cols[0]) == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty, np.empty(0, dtype=object), np.empty(0, dtype=object)
    import pyarrow as pa
    import pyarrow.compute as pc

    lens = [pc.utf8_length(c) for c in cols]
    nonempty = [pc.greater(n, 0) for n in lens]
    any_field = pc.or_(pc.or_(nonempty[0], nonempty[1]), nonempty[2])
    all_fields = pc.and_(pc.and_(nonempty[0], nonempty[1]), nonempty[2])
    if not pc.all(pc.equal(any_field, all_fields)).as_py():
        row = int(pc.index(pc.not_equal(any_field, all_fields), True).as_py())
        shown = " | ".join(str(c[row].as_py()) for c in cols)
        raise ConfigError(f"{path}: a fact has an empty head, relation or tail ({shown!r}); fix or remove that line.")
    if not pc.all(any_field).as_py():
        cols = [c.filter(any_field) for c in cols]
    ents = pa.concat_arrays([cols[0], cols[2]]).dictionary_encode()
    codes = ents.indices.to_numpy(zero_copy_only=False)
    entity_names = np.asarray(ents.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    rel_enc = cols[1].dictionary_encode()
    rels = rel_enc.indices.to_numpy(zero_copy_only=False)
    relation_names = np.asarray(rel_enc.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    n = codes.size // 2
    return codes[:n], np.asarray(rels), codes[n:], entity_names, relation_names



def read_fact_file(path: Path, sep: str | None = None):
    """(heads, rels, tails, entity names, relation names) of a fact file; ids follow first appearance.

    The separator is detected from the first fact line when `sep` is None; an empty or blank-only
    file gives empty arrays.
    """
    first = first_fact_line(path)
    if first is None:  # empty or blank-only file
        empty = np.empty(0, dtype=np.int32)
        return empty, empty, empty, [], []
    sep = detect_separator(first, path) if sep is None else sep
    if len(sep) != 1:
        raise ConfigError(f"sep must be a single character such as '|' or '\\t' (got {sep!r}).")
    cols = read_columns(path, sep)
    return encode_columns(cols, path)
