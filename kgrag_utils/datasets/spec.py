"""A registered dataset's spec (what it is, where its files are, the function that reads them) and the error of a
dataset whose files are absent. Below both the loaders (`loaders.py`) and the registry (`registry.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import DatasetMissingError
from .items import Dataset
from .traits import DatasetTraits

__all__ = ["DatasetSpec", "missing"]


@dataclass(frozen=True)
class DatasetSpec:
    """One registered name: what it is, where its files are, and the function that reads them."""

    name: str
    kind: str  # "kgqa" | "kinship" | "passages"
    source: str  # "real" | "sample" (generated) | "fixture" (released format); see GENERATED_SOURCES
    folder: str  # under data_dir() (real) or the sample root (sample)
    required: tuple[tuple[str, ...], ...]  # each entry: alternatives (globs), one must exist
    loader: Callable[..., Dataset]
    splits: tuple[str, ...]
    description: str
    options: tuple[str, ...] = ()
    sample_key: str | None = None
    params: dict = field(default_factory=dict)
    #: what the methods need to know (datasets/traits.py); None: the twin's, else the kind's defaults
    traits: DatasetTraits | None = None
    #: a sample or fixture dataset: the registered real dataset it stands in for (it takes that one's traits)
    twin: str | None = None

def missing(spec: DatasetSpec, root: Path, what: str | None = None) -> DatasetMissingError:
    """The one-line error of a dataset whose files are absent, naming the fetch that brings them."""
    if what is None:
        lacking = [alts for alts in spec.required if not any(next(iter(root.glob(g)), None) for g in alts)]
        what = " / ".join(lacking[0]) if lacking else "its files"
    return DatasetMissingError(
        f"dataset {spec.name!r} is missing: no {what} in {root}; run `kgrag data fetch {spec.name}` "
        "(or set KGRAG_DATA_DIR to the folder that holds it)."
    )
