"""KG files of the registered datasets: read once per process (a small cache keyed by path, mtime and size), with
each question's answerable flags and the KG's counts for Dataset.info. Used by `registry`'s loaders."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np

from .answerable import cached_answerable
from .items import KGQuestion

__all__ = ["load_kg_file", "attach_answerable", "kg_info"]

_KG_CACHE: "OrderedDict[tuple, object]" = OrderedDict()
_KG_CACHE_SIZE = 6


def load_kg_file(path: Path, sep: str | None = None, name: str | None = None):
    """KG.load with an in-process cache keyed by the file's path, mtime and size."""
    from ..kg import KG

    path = Path(path).resolve()
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size, sep)
    if key in _KG_CACHE:
        _KG_CACHE.move_to_end(key)
        return _KG_CACHE[key]
    kg = KG.load(path, sep=sep, name=name)
    _KG_CACHE[key] = kg
    while len(_KG_CACHE) > _KG_CACHE_SIZE:
        _KG_CACHE.popitem(last=False)
    return kg


def attach_answerable(questions: list[KGQuestion], kg, files: list[Path], tag: str) -> None:
    chain, khop = cached_answerable(questions, kg, files, tag=tag)
    for q, a, k in zip(questions, chain.tolist(), khop.tolist()):
        q.answerable = bool(a)
        q.meta["answerable_khop"] = bool(k)


def kg_info(questions: list[KGQuestion], kg) -> dict:
    info = {"kg_entities": kg.num_entities, "kg_facts": kg.num_edges, "kg_relations": kg.num_relations}
    flags = [q.answerable for q in questions if q.answerable is not None]
    if flags:
        info["answerable_rate"] = float(np.mean(flags))
        info["answerable_khop_rate"] = float(np.mean([q.meta.get("answerable_khop", False) for q in questions]))
    return info
