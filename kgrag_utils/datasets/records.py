"""Deprecated: the dataset item types moved to `kgrag_utils.datasets.items` (run records are
`kgrag_utils.records`; see docs/MIGRATION.md)."""

from .items import *  # noqa: F401,F403
from .items import __all__  # noqa: F401
