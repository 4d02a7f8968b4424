"""Passage graphs over one document set: the four KGP constructors, their union, and statistics.

- tfidf: every passage contributes its own top `n_keywords` TF-IDF terms (row by row - the
  reference code kept only the first passage's keywords, an indexing bug not copied here) plus,
  optionally, the set's document titles it carries or mentions; two passages are linked when both
  contain a shared keyword. Keywords found in more than max(2, keyword_max_df * n) passages are
  dropped (they would link unrelated passages wholesale).
- knn: each passage is linked to its `knn_k` nearest passages by sentence-embedding cosine
  (KNN-ST); edges are made symmetric.
- entity: passages that mention the same entity (offline TAGME stand-in, see `entities`).
- structural: document (page) nodes, each linked to its passages; for traversal a page node is
  passed through, so passages of one page become neighbours (a page is a document, or for IIRC
  an article's paragraphs: `DocumentSet.pages`).

A graph stores the passage-to-passage adjacency as a symmetric CSR matrix without self loops.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ....errors import ConfigError
from .docsets import DocumentSet
from .entities import entity_matrix, title_matrix

__all__ = ["PassageGraph", "keyword_matrix", "tfidf_graph", "knn_graph", "entity_graph", "structural_edges",
           "build_graph", "adjacency_from_incidence"]


@dataclass
class PassageGraph:
    """A passage graph: `adj[i, j] != 0` links passages i and j (symmetric, no self loops)."""

    kind: str
    adj: sp.csr_matrix
    n_doc_nodes: int = 0
    params: dict = field(default_factory=dict)
    build_seconds: float = 0.0
    labels: dict = field(default_factory=dict)  # (i, j) -> why they are linked, for drawing (small graphs)

    @property
    def n(self) -> int:
        return int(self.adj.shape[0])

    def neighbors(self, i: int) -> np.ndarray:
        a = self.adj
        return a.indices[a.indptr[i]:a.indptr[i + 1]].astype(np.int64)

    def degrees(self) -> np.ndarray:
        return np.diff(self.adj.indptr)

    @property
    def n_edges(self) -> int:
        return int(self.adj.nnz // 2)

    def stats(self) -> dict:
        """Nodes, undirected edges, density (edges / possible pairs), average and max degree."""
        n = self.n
        deg = self.degrees()
        pairs = n * (n - 1) / 2
        return {"graph": self.kind, "nodes": n, "edges": self.n_edges,
                "density": float(self.n_edges / pairs) if pairs else 0.0,
                "avg_degree": float(deg.mean()) if n else 0.0, "max_degree": int(deg.max()) if n else 0,
                "isolated": int((deg == 0).sum()), "doc_nodes": int(self.n_doc_nodes),
                "build_seconds": float(self.build_seconds)}

    def to_networkx(self, nodes=None):
        """The graph (or the subgraph on `nodes`) as an undirected networkx graph."""
        import networkx as nx

        g = nx.Graph()
        keep = np.arange(self.n) if nodes is None else np.asarray(sorted(set(int(x) for x in nodes)), dtype=np.int64)
        g.add_nodes_from(keep.tolist())
        sub = self.adj[keep][:, keep].tocoo()
        for a, b in zip(sub.row.tolist(), sub.col.tolist()):
            if a < b:
                g.add_edge(int(keep[a]), int(keep[b]))
        return g


def adjacency_from_incidence(b: sp.spmatrix) -> sp.csr_matrix:
    """Passages sharing any column of a (passages x features) incidence matrix, as 0/1 CSR."""
    b = sp.csr_matrix(b, dtype=np.float32)
    b.data[:] = 1.0
    a = (b @ b.T).tocsr()
    a.setdiag(0)
    a.eliminate_zeros()
    a.data[:] = 1
    return a.astype(np.int8)


def _symmetric(a: sp.spmatrix) -> sp.csr_matrix:
    a = sp.csr_matrix(a, dtype=np.float32)
    s = (a + a.T).tocsr()
    s.setdiag(0)
    s.eliminate_zeros()
    s.data[:] = 1
    return s.astype(np.int8)


def keyword_matrix(tfidf: sp.csr_matrix, n_keywords: int, max_df: float) -> tuple[sp.csr_matrix, np.ndarray]:
    """(passages x kept keywords) occurrence matrix and the kept term columns.

    Each row's own `n_keywords` highest-weighted terms join the keyword vocabulary (per passage,
    never only the first row's); a passage then holds every vocabulary keyword its text contains.
    """
    x = tfidf.tocsr()
    chosen = []
    for i in range(x.shape[0]):
        lo, hi = x.indptr[i], x.indptr[i + 1]
        if hi == lo:
            continue
        w, cols = x.data[lo:hi], x.indices[lo:hi]
        k = min(n_keywords, hi - lo)
        best = np.argpartition(-w, k - 1)[:k] if k < hi - lo else np.arange(hi - lo)
        chosen.append(cols[best])
    vocab = np.unique(np.concatenate(chosen)) if chosen else np.empty(0, dtype=np.int64)
    occ = x[:, vocab]
    occ.data[:] = 1.0
    df = np.asarray(occ.sum(axis=0)).ravel()
    cap = max(2.0, max_df * x.shape[0])
    keep = np.flatnonzero(df <= cap)
    return occ[:, keep].tocsr(), vocab[keep]


def tfidf_graph(dset: DocumentSet, tfidf: sp.csr_matrix, n_keywords: int = 10, max_df: float = 0.05,
                titles: bool = True) -> sp.csr_matrix:
    """TF-IDF keyword-overlap adjacency (see the module docstring)."""
    occ, _ = keyword_matrix(tfidf, n_keywords, max_df)
    if titles and dset.n_docs:
        t = title_matrix(dset.texts, dset.doc_index, dset.doc_titles)
        df = np.asarray(t.sum(axis=0)).ravel()
        t = t[:, np.flatnonzero(df <= max(2.0, max_df * len(dset)))]
        occ = sp.hstack([occ, t], format="csr")
    return adjacency_from_incidence(occ)


def knn_graph(embeddings: np.ndarray, k: int = 10, symmetric: bool = True) -> sp.csr_matrix:
    """Each passage linked to its k most cosine-similar passages (rows are L2-normalised)."""
    e = np.asarray(embeddings, dtype=np.float32)
    n = e.shape[0]
    if n <= 1:
        return sp.csr_matrix((n, n), dtype=np.int8)
    k = min(k, n - 1)
    rows, cols = [], []
    step = max(1, 4_000_000 // max(n, 1))  # bound the similarity block to about 16 MB
    for start in range(0, n, step):
        block = e[start:start + step] @ e.T
        block[np.arange(block.shape[0]), np.arange(start, start + block.shape[0])] = -np.inf
        nn = np.argpartition(-block, k - 1, axis=1)[:, :k]
        rows.append(np.repeat(np.arange(start, start + block.shape[0]), k))
        cols.append(nn.ravel())
    r, c = np.concatenate(rows), np.concatenate(cols)
    a = sp.csr_matrix((np.ones(r.size, dtype=np.float32), (r, c)), shape=(n, n))
    return _symmetric(a) if symmetric else a.astype(np.int8)


def entity_graph(dset: DocumentSet, max_df: float = 0.05) -> sp.csr_matrix:
    """Shared-entity adjacency (offline TAGME stand-in)."""
    m, _ = entity_matrix(dset.texts, dset.doc_index, dset.doc_titles, max_df=max_df)
    return adjacency_from_incidence(m)


def structural_edges(dset: DocumentSet) -> sp.csr_matrix:
    """Passage pairs joined through their page node (page -> its passages; a page is a document unless
    the set groups documents into pages)."""
    n = len(dset)
    inc = sp.csr_matrix((np.ones(n, dtype=np.float32), (np.arange(n), dset.pages)), shape=(n, max(dset.n_pages, 1)))
    return adjacency_from_incidence(inc)


def build_graph(dset: DocumentSet, kind: str, tfidf: sp.csr_matrix | None = None,
                embeddings: Callable[[], np.ndarray] | np.ndarray | None = None, n_keywords: int = 10,
                keyword_max_df: float = 0.05, keyword_titles: bool = True, knn_k: int = 10,
                entity_max_df: float = 0.05, structural: bool = False) -> PassageGraph:
    """One constructor by name ("tfidf", "knn", "entity", "union" of the three, or "none")."""
    t0 = time.perf_counter()
    n = len(dset)
    parts = {"tfidf": ("tfidf",), "knn": ("knn",), "entity": ("entity",), "union": ("tfidf", "knn", "entity"),
             "none": ()}
    if kind not in parts:
        raise ConfigError(f"graph {kind!r} is not valid: use one of {list(parts)}.")
    adj = sp.csr_matrix((n, n), dtype=np.int8)
    for p in parts[kind]:
        if p == "tfidf":
            if tfidf is None:
                raise ConfigError("the tfidf graph needs the set's TF-IDF matrix (SetIndex.matrix).")
            a = tfidf_graph(dset, tfidf, n_keywords, keyword_max_df, keyword_titles)
        elif p == "knn":
            if embeddings is None:
                raise ConfigError("the knn graph needs passage embeddings: pass embeddings= (an array or a callable).")
            emb = embeddings() if callable(embeddings) else embeddings
            a = knn_graph(emb, knn_k)
        else:
            a = entity_graph(dset, entity_max_df)
        adj = adj + a
    if structural:
        adj = adj + structural_edges(dset)
    adj = sp.csr_matrix(adj)
    adj.data[:] = 1
    adj = adj.astype(np.int8)
    adj.sort_indices()
    params = {"n_keywords": n_keywords, "keyword_max_df": keyword_max_df, "keyword_titles": keyword_titles,
              "knn_k": knn_k, "entity_max_df": entity_max_df, "structural": structural}
    name = kind + ("+struct" if structural else "")
    return PassageGraph(kind=name, adj=adj, n_doc_nodes=dset.n_pages if structural else 0, params=params,
                        build_seconds=time.perf_counter() - t0)
