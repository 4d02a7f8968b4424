"""Deprecated: SimGRAG's tables and figures are in `figures`, its published numbers in `published`
(see docs/MIGRATION.md)."""

from .figures import *  # noqa: F401,F403
from .figures import __all__ as _figures_all
from .published import PAPER, PAPER_NOTE, PAPER_NOTE_VERIFY, paper_table  # noqa: F401

__all__ = [*_figures_all, "PAPER", "PAPER_NOTE", "PAPER_NOTE_VERIFY", "paper_table"]
