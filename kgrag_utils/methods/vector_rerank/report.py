"""Deprecated: the vector-rerank tables and figure data are in `figures` (see docs/MIGRATION.md)."""

from .figures import *  # noqa: F401,F403
from .figures import __all__  # noqa: F401
