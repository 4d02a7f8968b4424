"""Scoring passages of one document set against a text: TF-IDF cosine and embedding cosine.

TF-IDF is fitted on the set's passages (as KGP fits it per document collection); the same
vectoriser seeds the traversal, ranks neighbours against generated evidence and runs the flat
TF-IDF baseline. Embedding scores use L2-normalised vectors, so the inner product is the cosine.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from ....errors import ConfigError

__all__ = ["SetIndex", "top_k"]


def top_k(scores: np.ndarray, k: int, candidates: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The k best (index, score) pairs, highest first; ties go to the lower index (deterministic)."""
    scores = np.asarray(scores, dtype=np.float64)
    idx = np.arange(scores.size) if candidates is None else np.asarray(candidates, dtype=np.int64)
    if idx.size == 0 or k <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0)
    order = np.lexsort((idx, -scores))[:k]
    return idx[order], scores[order]


class SetIndex:
    """TF-IDF (always) and sentence embeddings (on demand) over one set's passage texts."""

    def __init__(self, texts: Sequence[str], encode: Callable[[list[str]], np.ndarray] | None = None):
        self.texts = list(texts)
        self._encode = encode
        self.vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True)
        try:
            self.matrix = self.vectorizer.fit_transform(self.texts).tocsr()
        except ValueError:  # an empty vocabulary (only stop words or empty passages)
            self.vectorizer = TfidfVectorizer(token_pattern=r"(?u)\b\w+\b")
            self.matrix = self.vectorizer.fit_transform([t or "empty" for t in self.texts]).tocsr()
        self._emb: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def embeddings(self) -> np.ndarray:
        if self._emb is None:
            if self._encode is None:
                raise ConfigError("embedding similarity needs an embedder: pass encode= (e.g. load_embedder().encode).")
            self._emb = np.asarray(self._encode(self.texts), dtype=np.float32)
        return self._emb

    def tfidf_scores(self, queries: Sequence[str], candidates: np.ndarray | None = None) -> np.ndarray:
        """(len(queries), n or len(candidates)) cosine similarities of the TF-IDF vectors."""
        q = self.vectorizer.transform(list(queries))
        m = self.matrix if candidates is None else self.matrix[np.asarray(candidates, dtype=np.int64)]
        return np.asarray((q @ m.T).toarray(), dtype=np.float64)

    def embedding_scores(self, queries: Sequence[str], candidates: np.ndarray | None = None) -> np.ndarray:
        if self._encode is None:
            raise ConfigError("embedding similarity needs an embedder: pass encode= (e.g. load_embedder().encode).")
        q = np.asarray(self._encode(list(queries)), dtype=np.float32)
        e = self.embeddings if candidates is None else self.embeddings[np.asarray(candidates, dtype=np.int64)]
        return (q @ e.T).astype(np.float64)

    def scores(self, kind: str, queries: Sequence[str], candidates: np.ndarray | None = None) -> np.ndarray:
        if kind == "tfidf":
            return self.tfidf_scores(queries, candidates)
        if kind == "embedding":
            return self.embedding_scores(queries, candidates)
        raise ConfigError(f"similarity {kind!r} is not valid: use 'tfidf' or 'embedding'.")
