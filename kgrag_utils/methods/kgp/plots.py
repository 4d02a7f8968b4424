"""Deprecated: KGP's figures are in `figures` (see docs/MIGRATION.md)."""

from .figures import *  # noqa: F401,F403
from .figures import __all__  # noqa: F401
