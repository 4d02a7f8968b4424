"""Structured synthetic "name embeddings" for KGs too large to embed, for scale tests of the vector
index and the search (not of an embedder).

MiniLM cannot encode 20 million entity names on two CPU cores in reasonable time, so a scale run
gives each entity a unit vector computed from its id, with the structure name embeddings have:

    v(x) = normalise( a * T[type(x)] + b * sum over the name's words w of W[w] / sqrt(#words)
                      + c * (N1[h1(x)] + N2[h2(x)]) / sqrt(2) )

T holds one direction per entity type (a cluster per type), W one per word of a shared vocabulary
(names of 2-3 words drawn with a Zipf law: entities that share words share directions), and the last
term is the entity's own part from two small tables indexed by hashes of the id. Everything is a pure
function of the id (splitmix64 hashes), so any rows can be recomputed exactly at any time: the "exact
vectors" that re-score a compressed index's candidates, at no memory cost. Relations get the same
construction with their own types and words.

A query for entity x (a pattern node naming it, written slightly differently) is v(x) plus Gaussian
noise of norm about `noise`, renormalised: `query_rows`.
"""

from __future__ import annotations

import numpy as np

from .errors import ConfigError

__all__ = ["StructuredVectors"]

_M1, _M2, _GOLD = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)


def _splitmix(x: np.ndarray, salt: int) -> np.ndarray:
    """A 64-bit hash of each id (splitmix64 of id + salt)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(salt) * _GOLD
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


class StructuredVectors:
    """Unit vectors of `count` ids (entities or relations) as described in the module docstring."""

    def __init__(self, count: int, dim: int = 384, n_types: int = 200, n_words: int = 50_000,
                 weights: tuple[float, float, float] = (0.45, 0.55, 0.70), table: int = 1 << 14, seed: int = 0,
                 word_alpha: float = 1.0):
        if count < 1 or dim < 2 or n_types < 1 or n_words < 1 or table < 2:
            raise ConfigError("StructuredVectors needs count >= 1, dim >= 2, n_types, n_words >= 1 and table >= 2.")
        self.count, self.dim, self.n_types, self.n_words, self.seed = int(count), int(dim), n_types, n_words, seed
        self.weights = tuple(float(w) for w in weights)
        rng = np.random.default_rng(seed)
        unit = lambda n: (lambda x: x / np.linalg.norm(x, axis=1, keepdims=True))(  # noqa: E731
            rng.standard_normal((n, dim), dtype=np.float32))
        self.types, self.words = unit(n_types), unit(n_words)
        self.own1, self.own2 = unit(table), unit(table)
        p = np.arange(1, n_words + 1, dtype=np.float64) ** -float(word_alpha)
        self._word_cdf = np.cumsum(p / p.sum())

    @property
    def nbytes(self) -> int:
        return int(self.types.nbytes + self.words.nbytes + self.own1.nbytes + self.own2.nbytes + self._word_cdf.nbytes)

    def _ids(self, ids) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.count):
            raise ConfigError(f"ids must lie in [0, {self.count}).")
        return ids

    def type_of(self, ids) -> np.ndarray:
        return (_splitmix(self._ids(ids), self.seed * 7 + 1) % np.uint64(self.n_types)).astype(np.int64)

    def words_of(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """(words (n, 3), how many of them count (2 or 3)) per id."""
        ids = self._ids(ids)
        u = [(_splitmix(ids, self.seed * 7 + 2 + k) >> np.uint64(11)).astype(np.float64) / float(1 << 53)
             for k in range(4)]
        words = np.stack([np.minimum(np.searchsorted(self._word_cdf, x), self.n_words - 1) for x in u[:3]], axis=1)
        return words, 2 + (u[3] < 0.5)

    def rows(self, ids) -> np.ndarray:
        """The unit vectors of `ids` (float32, one row per id)."""
        ids = self._ids(ids)
        a, b, c = (np.float32(w) for w in self.weights)  # float32 scalars: no float64 temporaries
        words, n_words = self.words_of(ids)
        v = self.types[self.type_of(ids)]
        v *= a
        w = self.words[words[:, 0]]
        w += self.words[words[:, 1]]
        third = self.words[words[:, 2]]
        third *= (n_words == 3).astype(np.float32)[:, None]
        w += third
        w *= (b / np.sqrt(n_words.astype(np.float32)))[:, None]
        v += w
        t = self.own1.shape[0]
        own = self.own1[(_splitmix(ids, self.seed * 7 + 6) % np.uint64(t)).astype(np.int64)]
        own += self.own2[(_splitmix(ids, self.seed * 7 + 7) % np.uint64(t)).astype(np.int64)]
        own *= c / np.float32(np.sqrt(2.0))
        v += own
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return v

    def query_rows(self, ids, noise: float, rng: np.random.Generator) -> np.ndarray:
        """Noisy queries for `ids`: each row v(x) + Gaussian noise of norm about `noise`, renormalised."""
        v = self.rows(ids).astype(np.float64)
        v += noise * rng.standard_normal(v.shape) / np.sqrt(self.dim)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return v.astype(np.float32)

    def name(self, x: int) -> str:
        """A readable name for id x: its words and type (for examples and records)."""
        words, n = self.words_of([x])
        return " ".join(f"w{int(w)}" for w in words[0, : int(n[0])]) + f" (type {int(self.type_of([x])[0])})"
