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
