"""An offline stand-in for TAGME entity linking: title mentions and capitalised name strings.

KGP's main graphs linked passages that mention the same Wikipedia entity (TAGME, a web service).
Offline we approximate an entity by (a) a document title of the set - a passage "mentions" the
document whose title (without a trailing parenthesis such as "(mythology)") appears in its text,
and every passage carries its own document's title - and (b) a capitalised multi-word or proper
name string (a run of capitalised words, lower-cased; sentence-initial function words dropped).
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["title_stem", "capitalised_names", "entity_matrix", "title_matrix"]

_PAREN = re.compile(r"\s*\([^)]*\)\s*$")
_TOKEN = re.compile(r"\w+|[^\w\s]")
_NAME = re.compile(
    r"(?<![\w'])[A-Z][\w'\u2019\-]*"
    r"(?:(?:\s+(?:of|de|la|le|du|des|von|van|der|den|da|di|&)(?:\s+the)?)?\s+[A-Z][\w'\u2019\-]*)*")
_LEADING = {
    "the", "a", "an", "in", "on", "at", "of", "for", "by", "from", "to", "with", "as", "after", "before", "during",
    "he", "she", "it", "his", "her", "its", "they", "their", "this", "that", "these", "those", "there", "then",
    "when", "while", "although", "however", "but", "and", "or", "since", "following", "born", "according",
    "i", "we", "you", "one", "also", "both", "each", "some", "many", "most", "other", "such", "who", "what",
    "which", "where", "why", "how", "if", "is", "was", "are", "were", "be", "not", "no", "all", "any",
}


def title_stem(title: str) -> str:
    """A title as it is mentioned in text: 'Lilu (mythology)' -> 'Lilu'."""
    return _PAREN.sub("", str(title)).strip()


def capitalised_names(text: str) -> list[str]:
    """Lower-cased capitalised name strings of a text (leading function words stripped)."""
    out = []
    for m in _NAME.finditer(text):
        words = m.group(0).split()
        while words and words[0].lower() in _LEADING:
            words = words[1:]
        while words and words[-1].lower() in _LEADING:
            words = words[:-1]
        if not words:
            continue
        name = " ".join(words).strip("-'\u2019").lower()
        if len(name) >= 3 and not name.isdigit():
            out.append(name)
    return out


def _binary_matrix(rows: list[set[int]], n_cols: int) -> sp.csr_matrix:
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    indices = np.fromiter((c for r in rows for c in sorted(r)), dtype=np.int64, count=int(indptr[-1]))
    data = np.ones(indices.size, dtype=np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(len(rows), n_cols))


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def title_matrix(texts: Sequence[str], doc_index: np.ndarray, doc_titles: Sequence[str]) -> sp.csr_matrix:
    """(passages x documents) 1 where the passage is in the document or mentions its title.

    A mention is the title stem's token sequence (case-sensitive, whole tokens) anywhere in the text;
    only positions whose token starts some stem are tried, so this is linear in the text length.
    """
    rows: list[set[int]] = [{int(d)} for d in doc_index]
    by_stem: dict[tuple[str, ...], list[int]] = {}
    lengths: dict[str, set[int]] = {}
    for d, title in enumerate(doc_titles):
        stem = title_stem(title)
        toks = tuple(_tokens(stem))
        if len(stem) >= 3 and toks:
            by_stem.setdefault(toks, []).append(d)
            lengths.setdefault(toks[0], set()).add(len(toks))
    if by_stem:
        for i, text in enumerate(texts):
            toks = _tokens(text)
            for pos, tok in enumerate(toks):
                for n in lengths.get(tok, ()):
                    hit = by_stem.get(tuple(toks[pos:pos + n]))
                    if hit:
                        rows[i].update(hit)
    return _binary_matrix(rows, len(doc_titles))


def entity_matrix(texts: Sequence[str], doc_index: np.ndarray, doc_titles: Sequence[str],
                  max_df: float = 0.05) -> tuple[sp.csr_matrix, list[str]]:
    """(passages x entities) mention matrix and the entity names; entities in fewer than two
    passages (they link nothing) or in more than max(2, max_df * passages) are dropped."""
    titles = title_matrix(texts, doc_index, doc_titles).tocsr()
    vocab: dict[str, int] = {}
    rows: list[set[int]] = []
    for text in texts:
        rows.append({vocab.setdefault(name, len(vocab)) for name in capitalised_names(text)})
    names = _binary_matrix(rows, len(vocab))
    # a capitalised string equal to a title stem is the same entity as the title: fold its column into the title's
    pairs = [(vocab[title_stem(t).lower()], d) for d, t in enumerate(doc_titles) if title_stem(t).lower() in vocab]
    fold = sp.csr_matrix((np.ones(len(pairs), dtype=np.float32), ([j for j, _ in pairs], [d for _, d in pairs])),
                         shape=(len(vocab), len(doc_titles)))
    merged = titles + names @ fold
    merged.data[:] = 1.0
    folded = {j for j, _ in pairs}
    keep_names = np.array([j for j in range(len(vocab)) if j not in folded], dtype=np.int64)
    cols = sp.hstack([merged, names[:, keep_names]], format="csc")
    by_id = sorted(vocab, key=vocab.get)
    labels = [f"title:{t}" for t in doc_titles] + [by_id[j] for j in keep_names]
    df = np.asarray(cols.sum(axis=0)).ravel()
    cap = max(2.0, max_df * len(texts))
    keep = np.flatnonzero((df >= 2) & (df <= cap))
    return cols[:, keep].tocsr(), [labels[j] for j in keep]
