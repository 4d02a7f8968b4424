"""Which KG questions can be answered at all from the KG actually loaded.

A question is answerable when every gold answer is reachable from its topic entities along its
gold relation chain (or, without a chain, within `hops` undirected hops). A looser second flag,
"k-hop answerable", ignores the chain: every gold answer lies within `hops` undirected hops of a
topic entity (the criterion of the shared data README; hubs such as years make it generous).
With several topic entities, reachability is from any of them. Names are compared
after normalisation (Unicode NFKC, case-folded, whitespace collapsed), so "the matrix" in a gold
list matches "The Matrix" in the KB.

The computation is vectorised over questions: all questions that share a chain are answered by
one sparse product per step (topic-indicator matrix times relation adjacency), so the ~39k MetaQA
test questions take seconds. Results are cached on disk, keyed by the files they came from.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import unicodedata
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .. import settings
from ..errors import ConfigError, cache_write_skipped
from .items import KGQuestion

__all__ = ["normalize_name", "compute_answerable", "answerable_flags", "cached_answerable", "NameIndex"]

_CACHE_VERSION = 2  # 2: conjunctive questions follow their branches


def normalize_name(name: str) -> str:
    """Canonical form used to compare answer strings with KG names."""
    return " ".join(unicodedata.normalize("NFKC", str(name)).casefold().split())


class NameIndex:
    """Entity ids grouped by normalised name (several KG names may normalise alike)."""

    def __init__(self, kg):
        self.kg = kg
        self.exact = pd.Index(np.asarray(kg.entity_names, dtype=object))
        norms = pd.Series([normalize_name(n) for n in kg.entity_names], dtype=object)
        codes, uniques = pd.factorize(norms)
        self.class_of = np.asarray(codes, dtype=np.int64)  # entity id -> name class
        self.classes = pd.Index(uniques, dtype=object)  # normalised name -> class id
        self.num_classes = len(uniques)
        order = np.argsort(self.class_of, kind="stable")
        self._members_order = order
        self._members_ptr = np.searchsorted(self.class_of[order], np.arange(self.num_classes + 1))

    def class_ids(self, names: Sequence[str]) -> np.ndarray:
        """Name class of each name (-1 when no KG entity has that normalised name)."""
        if not len(names):
            return np.empty(0, dtype=np.int64)
        return self.classes.get_indexer(pd.Index([normalize_name(n) for n in names], dtype=object))

    def entity_ids(self, names: Sequence[str]) -> list[np.ndarray]:
        """KG ids per name: the exact name if present, else every entity with the same normalised name."""
        exact = self.exact.get_indexer(pd.Index(list(names), dtype=object)) if len(names) else np.empty(0, int)
        out = []
        for name, eid in zip(names, exact):
            if eid >= 0:
                out.append(np.array([eid], dtype=np.int64))
                continue
            cls = self.class_ids([name])[0]
            if cls < 0:
                out.append(np.empty(0, dtype=np.int64))
            else:
                lo, hi = self._members_ptr[cls], self._members_ptr[cls + 1]
                out.append(np.sort(self._members_order[lo:hi]).astype(np.int64))
        return out


def _adjacency(kg, cache: dict, relation: str | None, forward: bool) -> sp.csr_matrix | None:
    """Entity x entity 0/1 matrix of one relation in one direction (None: relation not in the KG)."""
    key = (relation, forward)
    if key not in cache:
        n = kg.num_entities
        if relation is None:  # any relation, both directions, plus staying put
            h = np.concatenate([kg.heads, kg.tails, np.arange(n)])
            t = np.concatenate([kg.tails, kg.heads, np.arange(n)])
        else:
            if not kg.has_relation(relation):
                cache[key] = None
                return None
            mask = kg.rels == kg.relation_id(relation)
            h, t = kg.heads[mask], kg.tails[mask]
            if not forward:
                h, t = t, h
        mat = sp.csr_matrix((np.ones(h.size, dtype=np.float32), (h, t)), shape=(n, n))
        mat.data[:] = 1.0
        cache[key] = mat
    return cache[key]


def _binary(mat: sp.csr_matrix) -> sp.csr_matrix:
    mat = mat.tocsr()
    mat.eliminate_zeros()
    mat.data[:] = 1.0
    return mat


def compute_answerable(questions: Sequence[KGQuestion], kg, mode: str = "chain") -> np.ndarray:
    """Boolean flag per question (see the module docstring). Does not modify the questions.

    mode "chain": follow each question's gold chain (questions without one: `hops` undirected
    hops). mode "khop": ignore chains; all answers within `hops` undirected hops of a topic
    entity (the looser criterion; hub entities such as years and languages make it generous).
    """
    if mode not in ("chain", "khop"):
        raise ConfigError(f"mode must be 'chain' or 'khop' (got {mode!r}).")
    if mode == "chain" and any(getattr(q, "conjunctive", False) for q in questions):
        return _conjunctive_answerable(questions, kg)
    n_q = len(questions)
    flags = np.zeros(n_q, dtype=bool)
    if n_q == 0:
        return flags
    index = NameIndex(kg)
    n_ent = kg.num_entities
    project = sp.csr_matrix((np.ones(n_ent, dtype=np.float32), (np.arange(n_ent), index.class_of)),
                            shape=(n_ent, index.num_classes))

    # topic entity ids and gold answer classes, once for all questions
    topic_names = [t for q in questions for t in q.topic_entities]
    topic_ids = index.entity_ids(topic_names)
    answer_names = [a for q in questions for a in q.answers]
    answer_cls = index.class_ids(answer_names)

    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        if q.chain and mode == "chain":
            key = tuple((str(r), bool(f)) for r, f in q.chain)
        else:
            key = ("hops", int(q.hops))
        groups[key].append(i)

    t_off = np.cumsum([0] + [len(q.topic_entities) for q in questions])
    a_off = np.cumsum([0] + [len(q.answers) for q in questions])
    adj_cache: dict = {}
    for key, members in groups.items():
        rows, cols = [], []
        g_rows, g_cols, ok = [], [], np.ones(len(members), dtype=bool)
        for j, qi in enumerate(members):
            ids = topic_ids[t_off[qi]:t_off[qi + 1]]
            ids = np.concatenate(ids) if ids else np.empty(0, dtype=np.int64)
            if ids.size == 0:
                ok[j] = False
            rows.append(np.full(ids.size, j)); cols.append(ids)
            gold = answer_cls[a_off[qi]:a_off[qi + 1]]
            if gold.size == 0 or (gold < 0).any():
                ok[j] = False
            gold = gold[gold >= 0]
            g_rows.append(np.full(gold.size, j)); g_cols.append(gold)
        r = np.concatenate(rows); c = np.concatenate(cols)
        reach = sp.csr_matrix((np.ones(r.size, dtype=np.float32), (r, c)), shape=(len(members), n_ent))
        reach = _binary(reach)
        if key and key[0] == "hops":
            steps = [(None, True)] * int(key[1])
        else:
            steps = list(key)
        for relation, forward in steps:
            adj = _adjacency(kg, adj_cache, relation, forward)
            if adj is None:
                reach = sp.csr_matrix((len(members), n_ent), dtype=np.float32)
                break
            reach = _binary(reach @ adj)
        reached_cls = _binary(reach @ project)
        gr = np.concatenate(g_rows); gc = np.concatenate(g_cols)
        gold = _binary(sp.csr_matrix((np.ones(gr.size, dtype=np.float32), (gr, gc)),
                                     shape=(len(members), index.num_classes)))
        covered = np.asarray(gold.multiply(reached_cls).sum(axis=1)).ravel()
        needed = np.diff(gold.indptr)
        flags[np.asarray(members)] = ok & (covered == needed)
    return flags


def _conjunctive_answerable(questions: Sequence[KGQuestion], kg) -> np.ndarray:
    """Chain flags where conjunctive questions count as answerable when EVERY branch (topic, chain)
    reaches every gold answer, i.e. the gold answers lie in the intersection of what the chains reach."""
    expanded, owner = [], []
    for i, q in enumerate(questions):
        if getattr(q, "conjunctive", False):
            for j, (topic, chain) in enumerate(q.gold_branches()):
                expanded.append(KGQuestion(f"{q.qid}#{j}", "", [topic], list(q.answers), list(chain), len(chain), None))
                owner.append(i)
        else:
            expanded.append(q)
            owner.append(i)
    flags = compute_answerable(expanded, kg, mode="chain")
    out = np.ones(len(questions), dtype=bool)
    np.logical_and.at(out, np.asarray(owner, dtype=np.int64), flags)
    return out


def _fingerprint(files: Sequence[Path]) -> list:
    out = []
    for f in files:
        f = Path(f)
        st = f.stat()
        out.append([str(f.resolve()), st.st_mtime_ns, st.st_size])
    return out


def answerable_flags(questions: Sequence[KGQuestion], kg) -> tuple[np.ndarray, np.ndarray]:
    """(chain flags, k-hop flags). A chain of at most `hops` steps reaches a subset of the k-hop
    neighbourhood, so the k-hop check only runs on the questions the chain check rejects."""
    chain = compute_answerable(questions, kg, mode="chain")
    khop = chain.copy()
    longer = np.array([bool(q.chain) and len(q.chain) > q.hops for q in questions], dtype=bool)
    todo = np.flatnonzero(~chain | longer)
    if todo.size:
        khop[todo] = compute_answerable([questions[i] for i in todo], kg, mode="khop")
    return chain, khop


def cached_answerable(questions: Sequence[KGQuestion], kg, files: Sequence[Path],
                      tag: str = "") -> tuple[np.ndarray, np.ndarray]:
    """`answerable_flags` with an on-disk cache keyed by the source files' path, mtime and size.

    `files` are every file the questions and the KG were read from; `tag` separates variants that
    read the same files differently. Returns (chain flags, k-hop flags).
    """
    qid_digest = hashlib.sha1("\n".join(q.qid for q in questions).encode("utf-8")).hexdigest()
    key_src = json.dumps({"v": _CACHE_VERSION, "files": _fingerprint(files), "tag": tag,
                          "n": len(questions), "qids": qid_digest}, sort_keys=True)
    key = hashlib.sha256(key_src.encode("utf-8")).hexdigest()[:24]
    path = settings.cache_dir("datasets") / f"answerable-{key}.npy"
    if path.is_file():
        try:
            flags = np.load(path, allow_pickle=False)
            if flags.shape == (2, len(questions)) and flags.dtype == bool:
                return flags[0], flags[1]
        except (OSError, ValueError):
            pass  # unreadable cache: recompute and overwrite
    flags = np.stack(answerable_flags(questions, kg))
    try:
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        cache_write_skipped(exc, path, "the answerable flags")
        return flags[0], flags[1]
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, flags, allow_pickle=False)
        os.replace(tmp, path)
    except OSError as exc:  # a full cache disk: the flags are computed, only their copy on disk is skipped
        Path(tmp).unlink(missing_ok=True)
        cache_write_skipped(exc, path, "the answerable flags")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return flags[0], flags[1]
