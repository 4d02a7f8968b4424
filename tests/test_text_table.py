"""Tables written as text (kgrag_utils/text_table.py)."""

import pytest

from kgrag_utils.text_table import table_rows


def test_rows_cells_and_continuations():
    text = """
    a | b c |  d
      | e
    | f

    g|h
    """
    assert table_rows(text) == (("a", "b c", "d", "e", "f"), ("g", "h"))


def test_a_continuation_without_a_row_is_refused():
    with pytest.raises(ValueError, match="line 2 continues a row"):
        table_rows("\n| x")


def test_other_separator():
    assert table_rows("x # y\n", sep="#") == (("x", "y"),)


def test_cells_are_interned_like_literals():
    """Equal cells are one object, so a pickle of a table writes each once (as for literal tuples)."""
    import pickle

    table = table_rows("New, York | in | United States\nUnited States | has | New, York")
    assert table[0][0] is table[1][2]
    as_literals = (("New, York", "in", "United States"), ("United States", "has", "New, York"))
    assert pickle.dumps(table, protocol=4) == pickle.dumps(as_literals, protocol=4)
