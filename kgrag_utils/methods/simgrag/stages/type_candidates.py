"""SimGRAG's type-candidate rule: entity candidates for UNKNOWN nodes from their written type.

A claim such as "A city lies 214 metres above sea level" can give a pattern whose nodes are all
UNKNOWN (or whose only names are literals the KG spells differently), so nothing anchors it in the
KG. SimGRAG's FactKG retriever (reference code, `Retriever.retrieve` with `type_to_nodes`) then
embeds each UNKNOWN node's type ("UNKNOWN city 1" -> "city"), finds the `type_topk` most similar
entity types of the KG (DBpedia's `22-rdf-syntax-ns#type`; reference: 16) and lets the node map only
to entities of those types, at node cost 0 (an UNKNOWN node costs nothing in the GSD either way).
The search's root is then the node with the fewest such candidates.

We apply the rule per pattern component, only to components without a known (named) node, exactly
as the reference (it recurses per component and checks for known nodes there). One deviation: we
embed the type alone ("city"), where the reference embeds the label minus "UNKNOWN" (" city 1");
UNKNOWN nodes without a type get no candidates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ....errors import ConfigError

__all__ = ["TypeIndex", "type_text"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def type_text(name: str) -> str:
    """The text embedded for a type name: CamelCase and underscores split ('SoccerClub' -> 'Soccer Club')."""
    return " ".join(_CAMEL.sub(" ", str(name).replace("_", " ")).split())


@dataclass
class TypeIndex:
    """Entity types of a KG (CSR: type -> sorted entity ids) with one unit vector per type name."""

    names: np.ndarray  # type names
    indptr: np.ndarray  # len(names) + 1
    entity_ids: np.ndarray  # entity ids grouped by type
    vectors: np.ndarray  # (types, dim) L2-normalised

    def __post_init__(self):
        self.names = np.asarray(self.names, dtype=object)
        self.indptr = np.asarray(self.indptr, dtype=np.int64)
        self.entity_ids = np.asarray(self.entity_ids, dtype=np.int64)
        self.vectors = np.asarray(self.vectors, dtype=np.float64)
        if self.indptr.size != self.names.size + 1 or self.vectors.shape[0] != self.names.size:
            raise ConfigError(f"entity types need one indptr entry per type plus one and one vector per type "
                              f"({self.names.size} types, {self.indptr.size} indptr, {self.vectors.shape[0]} vectors).")

    @classmethod
    def from_types(cls, types, encode: Callable[[list[str]], np.ndarray]) -> "TypeIndex":
        """From an object with `names`, `indptr`, `entity_ids` (the FactKG loader's EntityTypes)."""
        names = np.asarray(types.names, dtype=object)
        vectors = encode([type_text(n) for n in names]) if names.size else np.zeros((0, 1))
        return cls(names, types.indptr, types.entity_ids, vectors)

    @classmethod
    def from_mapping(cls, mapping: dict, encode: Callable[[list[str]], np.ndarray] | None = None,
                     vectors: np.ndarray | None = None) -> "TypeIndex":
        """From {type name: entity ids} (tests, small KGs); vectors given or made by `encode`."""
        names = np.asarray(list(mapping), dtype=object)
        groups = [np.unique(np.asarray(mapping[n], dtype=np.int64)) for n in names]
        indptr = np.zeros(len(groups) + 1, dtype=np.int64)
        np.cumsum([g.size for g in groups], out=indptr[1:])
        ids = np.concatenate(groups) if groups else np.empty(0, dtype=np.int64)
        if vectors is None:
            if encode is None:
                raise ConfigError("TypeIndex.from_mapping needs vectors= or encode=.")
            vectors = encode([type_text(n) for n in names])
        return cls(names, indptr, ids, vectors)

    def __len__(self) -> int:
        return int(self.names.size)

    def nearest_types(self, query_vectors: np.ndarray, topk: int) -> list[np.ndarray]:
        """Per query vector, the ids of the `topk` types nearest in L2 (ties by id), nearest first."""
        q = np.atleast_2d(np.asarray(query_vectors, dtype=np.float64))
        if len(self) == 0:
            return [np.empty(0, dtype=np.int64) for _ in range(q.shape[0])]
        d = np.sqrt(np.maximum(((q[:, None, :] - self.vectors[None, :, :]) ** 2).sum(axis=2), 0.0))
        k = min(int(topk), len(self))
        out = []
        for row in d:
            part = np.argpartition(row, k - 1)[:k] if k < row.size else np.arange(row.size)
            out.append(part[np.lexsort((part, row[part]))].astype(np.int64))
        return out

    def entities_of(self, type_ids: Sequence[int]) -> np.ndarray:
        """Sorted unique entity ids of the given types."""
        parts = [self.entity_ids[self.indptr[t]:self.indptr[t + 1]] for t in type_ids]
        return np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)
