"""The three vector collections of the method and the graph they stand for, built from (triple, passage) data.

* entities: unique entity names (deduplicated case- and space-insensitively; the first surface form
  is kept for display);
* relations: unique triples rendered as the sentence "subject predicate object", each carrying the
  ids of the passages it was extracted from (a relation x passage CSR matrix);
* passages: "title\\ntext" per passage, for the naive baseline (this rendering reproduces the
  measured MiniLM baseline on MuSiQue: Recall@2 47.2, Recall@5 62.2).

The graph itself is only the sparse entity x relation incidence matrix (an entity is incident to
the relations it is the subject or object of); it is never built dense. The vectors live behind
`kgrag_utils.vector_index` (FAISS or Milvus); relation and passage vectors are also kept in memory
so candidates can be ranked by query similarity without another search.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from ....errors import ConfigError
from ....vector_index import make_index

if TYPE_CHECKING:  # pragma: no cover
    from ....datasets.items import Passage
    from ....embeddings import Embedder
    from ....vector_index import VectorIndex

__all__ = ["GraphIndex", "entity_key", "relation_sentence", "passage_text"]


def entity_key(name: str) -> str:
    """The form under which two entity names count as the same entity (case- and space-insensitive)."""
    return " ".join(str(name).split()).casefold()


def relation_sentence(head: str, predicate: str, tail: str) -> str:
    """A triple as the sentence that is embedded and shown to the LLM: "subject predicate object"."""
    return " ".join(" ".join(str(x).split()) for x in (head, predicate, tail))


def passage_text(title: str, text: str) -> str:
    """What the passage collection embeds: the title, a newline, the text."""
    return f"{title}\n{text}" if title else text


@dataclass
class _Vocab:
    """Names by id with a key -> id map (first surface form wins)."""

    names: list[str] = field(default_factory=list)
    ids: dict[str, int] = field(default_factory=dict)

    def add(self, name: str) -> int:
        key = entity_key(name)
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.names)
            self.names.append(" ".join(str(name).split()))
        return found


class GraphIndex:
    """Entity, relation and passage collections over one corpus, plus the sparse incidence.

    Build with `GraphIndex.build(corpus, triples, embedder, backend="faiss")`; `triples` maps a
    passage id to its (subject, predicate, object) triples. Ids are positions: entity i is
    `entity_names[i]`, relation j is `relation_sentences[j]`, passage p is `passages[p]`.
    """

    def __init__(self, passages: Sequence["Passage"], entity_names: list[str], entity_ids: dict[str, int],
                 heads: np.ndarray, tails: np.ndarray, predicates: list[str], sentences: list[str],
                 rel_passages: sp.csr_matrix, info: dict):
        self.passages = list(passages)
        self.passage_pids = [p.pid for p in self.passages]
        self.passage_titles = [p.title for p in self.passages]
        self.entity_names = entity_names
        self.entity_ids = entity_ids
        self.heads, self.tails = heads, tails
        self.predicates = predicates
        self.relation_sentences = sentences
        self.rel_passages = rel_passages  # (n_relations x n_passages), 1 where a relation came from a passage
        n_e, n_r = len(entity_names), len(sentences)
        rows = np.concatenate([heads, tails])
        cols = np.concatenate([np.arange(n_r), np.arange(n_r)])
        inc = sp.csr_matrix((np.ones(rows.size, dtype=np.float32), (rows, cols)), shape=(n_e, n_r))
        inc.data[:] = 1.0  # a self-loop triple (head == tail) counts once
        self.incidence = inc  # entity x relation
        self.incidence_t = inc.T.tocsr()  # relation x entity
        self.info = dict(info)
        self.embedder: "Embedder | None" = None
        self.backend: str | None = None
        self.entity_index: "VectorIndex | None" = None
        self.relation_index: "VectorIndex | None" = None
        self.passage_index: "VectorIndex | None" = None
        self.relation_vecs: np.ndarray | None = None
        self.passage_vecs: np.ndarray | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_triples(cls, corpus: Sequence["Passage"], triples: Mapping[str, Iterable[Sequence[str]]]) -> "GraphIndex":
        """The graph and vocabularies only (no vectors): what `build` embeds."""
        if not corpus:
            raise ConfigError("the corpus is empty: load a dataset of kind 'passages' (`kgrag data list`).")
        pid_pos = {p.pid: i for i, p in enumerate(corpus)}
        ents = _Vocab()
        rel_ids: dict[tuple[str, str, str], int] = {}
        heads: list[int] = []
        tails: list[int] = []
        preds: list[str] = []
        sents: list[str] = []
        rp_rows: list[int] = []
        rp_cols: list[int] = []
        skipped_pid = skipped_bad = raw = 0
        for pid, rows in (triples or {}).items():
            pos = pid_pos.get(pid)
            for t in rows:
                raw += 1
                if pos is None:
                    skipped_pid += 1
                    continue
                if len(t) != 3 or not all(isinstance(x, str) and x.strip() for x in t):
                    skipped_bad += 1
                    continue
                h, r, o = (" ".join(x.split()) for x in t)
                key = (entity_key(h), entity_key(r), entity_key(o))
                j = rel_ids.get(key)
                if j is None:
                    j = rel_ids[key] = len(sents)
                    heads.append(ents.add(h))
                    tails.append(ents.add(o))
                    preds.append(r)
                    sents.append(relation_sentence(h, r, o))
                rp_rows.append(j)
                rp_cols.append(pos)
        n_r = len(sents)
        rel_passages = sp.csr_matrix((np.ones(len(rp_rows), dtype=np.float32), (rp_rows, rp_cols)),
                                     shape=(n_r, len(corpus)))
        rel_passages.sum_duplicates()
        rel_passages.data[:] = 1.0
        info = {"passages": len(corpus), "triples_raw": raw, "entities": len(ents.names), "relations": n_r,
                "triples_skipped_unknown_passage": skipped_pid, "triples_skipped_malformed": skipped_bad,
                "passages_with_triples": int(np.count_nonzero(np.diff(rel_passages.tocsc().indptr)))}
        return cls(corpus, ents.names, ents.ids, np.asarray(heads, dtype=np.int64), np.asarray(tails, dtype=np.int64),
                   preds, sents, rel_passages, info)

    @classmethod
    def from_kg(cls, kg) -> "GraphIndex":
        """The graph of a KG question dataset (no passages: the unit of retrieval is the fact).

        Entities are the KG's entity names (ids kept: entity i is `kg.entity_names[i]`); relations
        are its edges verbalised "head relation tail" (underscores in relation names read as
        spaces), in edge order, so relation j is KG edge j. Built with array operations only.
        """
        if len(kg) == 0:
            raise ConfigError("the KG has no facts: load a dataset of kind 'kgqa' (`kgrag data list`).")
        names = [str(n) for n in kg.entity_names]
        ids: dict[str, int] = {}
        for i, n in enumerate(names):  # first surface form wins for the lexical lookup; every entity keeps its id
            ids.setdefault(entity_key(n), i)
        rel_text = np.asarray([str(r).replace("_", " ") for r in kg.relation_names], dtype=object)
        heads = np.asarray(kg.heads, dtype=np.int64)
        tails = np.asarray(kg.tails, dtype=np.int64)
        ent = np.asarray(names, dtype=object)
        preds = rel_text[np.asarray(kg.rels, dtype=np.int64)]
        sents = (ent[heads] + " " + preds + " " + ent[tails]).tolist()
        n_r = len(sents)
        info = {"passages": 0, "kg": getattr(kg, "name", ""), "entities": len(names), "relations": n_r,
                "unit": "fact (KG edge)"}
        return cls([], names, ids, heads, tails, preds.tolist(), sents, sp.csr_matrix((n_r, 0), dtype=np.float32), info)

    @classmethod
    def build(cls, corpus: Sequence["Passage"], triples: Mapping[str, Iterable[Sequence[str]]], embedder: "Embedder",
              backend: str = "faiss", milvus_uri: str | None = None, collection_prefix: str | None = None,
              progress: bool | None = None) -> "GraphIndex":
        """Graph + the three vector collections on `backend` ("faiss" or "milvus")."""
        index = cls.from_triples(corpus, triples)
        index.attach_vectors(embedder, backend=backend, milvus_uri=milvus_uri, collection_prefix=collection_prefix,
                             progress=progress)
        return index

    def fingerprint(self) -> str:
        """A short id of the corpus and its triples (names Milvus collections, keys caches)."""
        h = hashlib.sha1()
        for part in (self.passage_pids, self.relation_sentences):
            h.update(str(len(part)).encode())
            for s in part:
                h.update(s.encode("utf-8"))
                h.update(b"\x00")
        return h.hexdigest()[:12]

    def attach_vectors(self, embedder: "Embedder", backend: str = "faiss", milvus_uri: str | None = None,
                       collection_prefix: str | None = None, progress: bool | None = None) -> None:
        """Embed entities, relations and passages and load them into three indexes of one backend."""
        if backend not in ("faiss", "milvus"):
            raise ConfigError(f"backend must be 'faiss' or 'milvus', got {backend!r}.")
        t0 = time.perf_counter()
        ent_vecs = embedder.encode(self.entity_names, progress=progress) if self.entity_names else None
        self.relation_vecs = embedder.encode(self.relation_sentences, progress=progress) if self.relation_sentences else None
        if self.passages:
            self.passage_vecs = embedder.encode([passage_text(p.title, p.text) for p in self.passages], progress=progress)
        t_embed = time.perf_counter() - t0
        dims = [v.shape[1] for v in (self.passage_vecs, self.relation_vecs, ent_vecs) if v is not None]
        if not dims:
            raise ConfigError("nothing to index: the corpus has no passages and no triples.")
        dim = int(dims[0])
        if not self.passages:
            self.passage_vecs = np.zeros((0, dim), dtype=np.float32)
        prefix = collection_prefix or f"vr_{self.fingerprint()}"

        def new(kind: str, vecs: np.ndarray | None, names: list[str]):
            if vecs is None:
                return None
            opts = {}
            if backend == "milvus":
                opts = {"uri": milvus_uri or None, "collection": f"{prefix}_{kind}", "overwrite": True}
            idx = make_index(backend, dim=dim, metric="ip", kind="flat", **opts)
            idx.add(vecs, names)
            return idx

        t1 = time.perf_counter()
        self.close()
        self.entity_index = new("entities", ent_vecs, self.entity_names)
        self.relation_index = new("relations", self.relation_vecs, self.relation_sentences)
        self.passage_index = new("passages", self.passage_vecs, self.passage_pids) if self.passages else None
        self.embedder, self.backend = embedder, backend
        self.info.update({"backend": backend, "embedder": embedder.model_id, "dim": dim,
                          "embed_seconds": round(t_embed, 3), "index_seconds": round(time.perf_counter() - t1, 3)})

    def close(self) -> None:
        """Release Milvus connections (FAISS needs nothing)."""
        for idx in (self.entity_index, self.relation_index, self.passage_index):
            closer = getattr(idx, "close", None)
            if callable(closer):
                closer()

    # ------------------------------------------------------------------ sizes
    @property
    def num_entities(self) -> int:
        return len(self.entity_names)

    @property
    def num_relations(self) -> int:
        return len(self.relation_sentences)

    @property
    def num_passages(self) -> int:
        return len(self.passages)

    def __repr__(self) -> str:
        return (f"GraphIndex(passages={self.num_passages:,}, entities={self.num_entities:,}, "
                f"relations={self.num_relations:,}, backend={self.backend!r})")

    # ------------------------------------------------------------------ search
    def _require_vectors(self) -> None:
        if self.embedder is None:
            raise ConfigError("this GraphIndex has no vectors: build it with GraphIndex.build(...) or attach_vectors(embedder).")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self._require_vectors()
        return self.embedder.encode(list(texts), progress=False)

    @staticmethod
    def _hits(index, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        if index is None or len(index) == 0 or queries.shape[0] == 0:
            return [[] for _ in range(queries.shape[0])]
        scores, ids = index.search(queries, min(int(k), len(index)))
        return [[(int(i), float(s)) for i, s in zip(row_i, row_s) if i >= 0] for row_i, row_s in zip(ids, scores)]

    def search_entities(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """Top-k (entity id, cosine) per query vector."""
        self._require_vectors()
        return self._hits(self.entity_index, vectors, k)

    def search_relations(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        self._require_vectors()
        return self._hits(self.relation_index, vectors, k)

    def search_passages(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        self._require_vectors()
        return self._hits(self.passage_index, vectors, k)

    def relation_similarity(self, rel_ids: np.ndarray, qvec: np.ndarray) -> np.ndarray:
        """Cosine of each relation with the query (vectors are L2-normalised)."""
        self._require_vectors()
        rel_ids = np.asarray(rel_ids, dtype=np.int64)
        if rel_ids.size == 0:
            return np.empty(0, dtype=np.float32)
        return self.relation_vecs[rel_ids] @ np.asarray(qvec, dtype=np.float32).ravel()

    # ------------------------------------------------------------------ graph lookups
    def relation_passages(self, rel_id: int) -> np.ndarray:
        """Positions of the passages relation `rel_id` was extracted from."""
        rp = self.rel_passages
        return rp.indices[rp.indptr[rel_id]:rp.indptr[rel_id + 1]]

    def triples(self, rel_ids: Iterable[int]) -> list[tuple[str, str, str]]:
        names = self.entity_names
        return [(names[self.heads[j]], self.predicates[j], names[self.tails[j]]) for j in rel_ids]
