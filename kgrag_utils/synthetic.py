"""Synthetic knowledge graphs with power-law degrees, for scale tests and benchmarks.

Entity popularity follows a power law: the entity of popularity rank i (ranks are shuffled over
ids) is drawn as a head or a tail with probability about proportional to (i + 1) ** -alpha, which gives
a heavy-tailed degree distribution (P(degree = d) ~ d ** -(1 + 1/alpha)). Relation types follow
their own Zipf law, so a few relations are common and most are rare, as in real KGs. Sampling is
vectorised; duplicates and self-loops are removed and topped up until the requested size.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import ConfigError
from .kg import KG

__all__ = ["synthetic_ids", "synthetic_kg", "synthetic_fact_chunks", "default_num_entities"]


def default_num_entities(num_edges: int) -> int:
    """About ten facts per entity, as in large encyclopaedic KGs."""
    return max(10, num_edges // 10)


def _zipf_probabilities(n: int, exponent: float, rng: np.random.Generator) -> np.ndarray:
    weights = np.arange(1, n + 1, dtype=np.float64) ** (-float(exponent))
    weights /= weights.sum()
    probs = np.empty(n, dtype=np.float64)
    probs[rng.permutation(n)] = weights  # popularity rank is unrelated to the id
    return probs


def _power_law_ranks(n: int, exponent: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """Ranks in [0, n) with P(rank ~ x) proportional to (x + 1) ** -exponent (continuous inverse CDF).

    O(1) per sample, unlike a categorical draw over n weights (a binary search per sample).
    """
    u = rng.random(size)
    if abs(exponent - 1.0) < 1e-9:
        x = np.power(float(n + 1), u)
    else:
        g = 1.0 - exponent
        x = np.power(1.0 + u * (float(n + 1) ** g - 1.0), 1.0 / g)
    return np.minimum(x.astype(np.int64) - 1, n - 1).clip(0)


def synthetic_ids(num_edges: int, num_entities: int | None = None, num_relations: int = 300, seed: int = 0,
                  alpha: float = 0.75, relation_alpha: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """(heads, rels, tails, num_entities, num_relations): exactly `num_edges` distinct facts, no self-loops."""
    if num_edges < 0:
        raise ConfigError(f"num_edges must be >= 0 (got {num_edges}).")
    n_ent = default_num_entities(num_edges) if num_entities is None else int(num_entities)
    n_rel = int(num_relations)
    if n_ent < 2 or n_rel < 1:
        raise ConfigError(f"need at least 2 entities and 1 relation (got {n_ent} and {n_rel}).")
    capacity = n_ent * (n_ent - 1) * n_rel
    if num_edges > capacity // 2:
        raise ConfigError(
            f"{num_edges} distinct facts do not fit comfortably in {n_ent} entities x {n_rel} relations; "
            "raise num_entities or num_relations."
        )
    if alpha < 0 or relation_alpha < 0:
        raise ConfigError("alpha and relation_alpha must be >= 0 (0 gives uniform sampling).")
    rng = np.random.default_rng(seed)
    entity_of_rank = rng.permutation(n_ent)  # popularity rank is unrelated to the id
    rel_p = _zipf_probabilities(n_rel, relation_alpha, rng)
    id_dtype = np.int32 if max(n_ent, n_rel) < 2**31 - 1 else np.int64

    heads = np.empty(0, dtype=id_dtype)
    rels = np.empty(0, dtype=id_dtype)
    tails = np.empty(0, dtype=id_dtype)
    seen = np.empty(0, dtype=np.int64)  # sorted composite keys of the facts kept so far
    for _ in range(64):
        missing = num_edges - heads.size
        if missing <= 0:
            break
        batch = int(missing * 1.05) + 64
        h = entity_of_rank[_power_law_ranks(n_ent, alpha, batch, rng)].astype(id_dtype)
        t = entity_of_rank[_power_law_ranks(n_ent, alpha, batch, rng)].astype(id_dtype)
        r = rng.choice(n_rel, size=batch, p=rel_p).astype(id_dtype)
        ok = h != t
        h, r, t = h[ok], r[ok], t[ok]
        key = (h.astype(np.int64) * n_rel + r) * n_ent + t
        keep = ~pd.Series(key, copy=False).duplicated(keep="first").to_numpy()  # first in sampling order
        if seen.size:
            pos = np.searchsorted(seen, key)
            pos[pos == seen.size] = 0
            keep &= seen[pos] != key
        first = np.flatnonzero(keep)[:missing]  # stop at the target
        heads = np.concatenate([heads, h[first]])
        rels = np.concatenate([rels, r[first]])
        tails = np.concatenate([tails, t[first]])
        seen = np.sort(np.concatenate([seen, key[first]]))
    if heads.size < num_edges:  # pragma: no cover - needs an absurdly dense request
        raise ConfigError(f"could only sample {heads.size} distinct facts; lower alpha or raise num_entities.")
    return heads, rels, tails, n_ent, n_rel


def synthetic_kg(num_edges: int, num_entities: int | None = None, num_relations: int = 300, seed: int = 0,
                 alpha: float = 0.75, relation_alpha: float = 1.0, name: str | None = None) -> KG:
    """A KG of exactly `num_edges` distinct facts with names "e<id>" and "r<id>".

    num_entities defaults to num_edges // 10 (at least 10). Entities that no fact uses are kept
    (isolated), so ids stay 0..num_entities-1.
    """
    heads, rels, tails, n_ent, n_rel = synthetic_ids(num_edges, num_entities, num_relations, seed,
                                                     alpha, relation_alpha)
    entity_names = np.array([f"e{i}" for i in range(n_ent)], dtype=object)
    relation_names = np.array([f"r{i}" for i in range(n_rel)], dtype=object)
    label = name if name is not None else f"synthetic-{num_edges}"
    return KG._build(heads, rels, tails, entity_names, relation_names, label, check=False)


def synthetic_fact_chunks(num_entities: int, num_relations: int = 300, seed: int = 0, alpha: float = 0.75,
                          relation_alpha: float = 1.0, chunk: int = 2_000_000):
    """An endless stream of (heads, rels, tails) chunks drawn as `synthetic_ids` draws them (self-loops
    dropped, duplicates kept): the input of the out-of-core build, `kg_disk.write_facts`, which keeps the
    first N distinct facts. Memory is one chunk, whatever the size of the KG."""
    n_ent, n_rel = int(num_entities), int(num_relations)
    if n_ent < 2 or n_rel < 1:
        raise ConfigError(f"need at least 2 entities and 1 relation (got {n_ent} and {n_rel}).")
    if alpha < 0 or relation_alpha < 0:
        raise ConfigError("alpha and relation_alpha must be >= 0 (0 gives uniform sampling).")
    rng = np.random.default_rng(seed)
    entity_of_rank = rng.permutation(n_ent)
    rel_p = _zipf_probabilities(n_rel, relation_alpha, rng)
    id_dtype = np.int32 if max(n_ent, n_rel) < 2**31 - 1 else np.int64
    while True:
        h = entity_of_rank[_power_law_ranks(n_ent, alpha, chunk, rng)].astype(id_dtype)
        t = entity_of_rank[_power_law_ranks(n_ent, alpha, chunk, rng)].astype(id_dtype)
        r = rng.choice(n_rel, size=chunk, p=rel_p).astype(id_dtype)
        ok = h != t
        yield h[ok], r[ok], t[ok]
