"""Per-question document sets split into passages, and which passages cover each gold fact.

KGP built one graph per question over 12 Wikipedia documents (294 to 1,121 passages). Our samples
give a question only 10 (HotpotQA) or 20 (MuSiQue) short paragraphs, so a set here is the
question's own documents plus distractor documents drawn (seeded by the question id) from the
dataset's corpus until the set holds `target` passages; a 30-passage budget would otherwise
retrieve everything. Documents are split into paragraphs, or into windows of sentences.

A *page* is what a distractor document and a structural document node stand for. By default a page
is one corpus document (HotpotQA and MuSiQue store a document as one paragraph or one list of
sentences). IIRC stores each linked Wikipedia article as many paragraphs sharing a title, so there
pages are titles (`page_key="title"`): distractors are whole articles, and the structural option
links the paragraphs of one article through its page node.

Gold is a list of units, each covered by one or more passages: HotpotQA's supporting facts
(title, sentence index) are covered by the window(s) holding that sentence; elsewhere a unit is a
supporting document, covered by any of its passages (with paragraph passages: exactly one).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

from ....datasets.items import Passage, PassageQuestion
from ....errors import ConfigError

__all__ = ["split_sentences", "split_document", "PassageCorpus", "DocumentSet", "GoldUnits", "gold_units",
           "question_seed", "PAGE_KEYS"]

#: what a page is: one corpus document ("passage") or every corpus document with one title ("title")
PAGE_KEYS = ("passage", "title")

_SENT_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9\"'(\[])")


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph, split after . ! ? before an upper-case letter or digit (no NLP model)."""
    text = " ".join(str(text).split())
    if not text:
        return []
    parts, start = [], 0
    for m in _SENT_BOUNDARY.finditer(text):
        parts.append(text[start:m.end()].strip())
        start = m.end()
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def split_document(doc: Passage, rule: str, window: int = 2, stride: int = 2) -> list[tuple[str, tuple[int, int]]]:
    """A document's passages as (text, (first sentence, end sentence)); (-1, -1) for a whole paragraph."""
    if rule == "paragraph":
        return [(" ".join(doc.text.split()), (-1, -1))]
    if rule != "sentences":
        raise ConfigError(f"split rule {rule!r} is not valid: use 'paragraph' or 'sentences'.")
    sentences = [" ".join(str(s).split()) for s in doc.sentences] if doc.sentences else split_sentences(doc.text)
    n = len(sentences)
    if n == 0:
        return [("", (0, 0))]
    out, start = [], 0
    while True:
        end = min(start + window, n)
        out.append((" ".join(s for s in sentences[start:end] if s), (start, end)))
        if end >= n:
            break
        start += stride
    return out


def question_seed(seed: int, qid: str) -> list[int]:
    """A stable RNG seed for one question (the same set on every machine and run)."""
    return [int(seed), int(hashlib.sha1(str(qid).encode("utf-8")).hexdigest()[:8], 16)]


@dataclass
class DocumentSet:
    """The passages one graph is built over. Passage i belongs to document `doc_index[i]`."""

    qid: str | None
    rule: str
    pids: list[str]
    titles: list[str]
    texts: list[str]
    spans: list[tuple[int, int]]
    doc_index: np.ndarray
    doc_ids: list[str]
    doc_titles: list[str]
    n_own_docs: int
    title_in_text: bool = True
    info: dict = field(default_factory=dict)
    page_index: np.ndarray | None = None  # passage -> page (None: every document is its own page)

    def __len__(self) -> int:
        return len(self.pids)

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    @property
    def pages(self) -> np.ndarray:
        """Page of each passage (the document index unless pages group documents, e.g. by title)."""
        return self.doc_index if self.page_index is None else self.page_index

    @property
    def n_pages(self) -> int:
        return int(self.pages.max()) + 1 if len(self.pids) else 0

    def retrieval_text(self, i: int) -> str:
        """What retrieval and the LLM see for passage i: the title (when enabled) and the text."""
        return f"{self.titles[i]}: {self.texts[i]}" if self.title_in_text else self.texts[i]

    def retrieval_texts(self) -> list[str]:
        return [self.retrieval_text(i) for i in range(len(self))]

    def passages_of(self, doc_id: str) -> np.ndarray:
        try:
            d = self.doc_ids.index(doc_id)
        except ValueError:
            return np.empty(0, dtype=np.int64)
        return np.flatnonzero(self.doc_index == d)

    def summary(self) -> dict:
        out = {"passages": len(self), "documents": self.n_docs, "own_documents": self.n_own_docs,
               "distractor_documents": self.n_docs - self.n_own_docs, "rule": self.rule, **self.info}
        if self.page_index is not None:
            out["pages"] = self.n_pages
        return out


class PassageCorpus:
    """A dataset's corpus split once by a rule, from which per-question sets are drawn."""

    def __init__(self, corpus: list[Passage], rule: str = "auto", window: int = 2, stride: int = 2,
                 title_in_text: bool = True, page_key: str = "passage"):
        if rule == "auto":
            rule = "sentences" if corpus and all(p.sentences for p in corpus[: min(50, len(corpus))]) else "paragraph"
        if rule not in ("paragraph", "sentences"):
            raise ConfigError(f"split rule {rule!r} is not valid: use 'auto', 'paragraph' or 'sentences'.")
        if window < 1 or stride < 1:
            raise ConfigError(f"window and stride must be >= 1 (got {window}, {stride}).")
        if page_key not in PAGE_KEYS:
            raise ConfigError(f"page_key {page_key!r} is not valid: use one of {list(PAGE_KEYS)}.")
        self.rule, self.window, self.stride, self.title_in_text = rule, int(window), int(stride), bool(title_in_text)
        self.page_key = page_key
        self.docs: list[Passage] = list(corpus)
        self.position = {d.pid: i for i, d in enumerate(self.docs)}
        self.pages: dict[str, list[int]] = {}
        if page_key == "title":  # title -> its documents in corpus order
            for i, d in enumerate(self.docs):
                self.pages.setdefault(d.title, []).append(i)
        self._split: dict[str, list[tuple[str, tuple[int, int]]]] = {}

    def split(self, doc: Passage) -> list[tuple[str, tuple[int, int]]]:
        if doc.pid not in self._split:
            self._split[doc.pid] = split_document(doc, self.rule, self.window, self.stride)
        return self._split[doc.pid]

    def _make(self, qid, docs: list[Passage], n_own: int, rng: np.random.Generator | None, info: dict) -> DocumentSet:
        pids, titles, texts, spans, doc_index = [], [], [], [], []
        for d, doc in enumerate(docs):
            parts = self.split(doc)
            for text, span in parts:
                pids.append(doc.pid if self.rule == "paragraph" else f"{doc.pid}#s{span[0]}")
                titles.append(doc.title)
                texts.append(text)
                spans.append(span)
                doc_index.append(d)
        order = np.arange(len(pids)) if rng is None else rng.permutation(len(pids))  # no position bias for own docs
        page_index = None
        if self.page_key == "title" and pids:
            _, page_of_doc = np.unique(np.asarray([d.title for d in docs], dtype=object).astype(str), return_inverse=True)
            page_index = page_of_doc.astype(np.int64)[np.asarray(doc_index, dtype=np.int64)][order]
        return DocumentSet(
            qid=qid, rule=self.rule, pids=[pids[i] for i in order], titles=[titles[i] for i in order],
            texts=[texts[i] for i in order], spans=[spans[i] for i in order],
            doc_index=np.asarray(doc_index, dtype=np.int64)[order] if pids else np.empty(0, dtype=np.int64),
            doc_ids=[d.pid for d in docs], doc_titles=[d.title for d in docs], n_own_docs=n_own,
            title_in_text=self.title_in_text, info=info, page_index=page_index)

    def question_set(self, question: PassageQuestion, target: int, seed: int = 0) -> DocumentSet:
        """The question's own documents plus seeded distractor documents up to `target` passages.

        Distractors are corpus documents that are not the question's own, in a seeded random order,
        added whole until the set reaches `target` passages (target 0 = own documents only).
        Documents named as supporting but absent from the question's paragraphs are added from the
        corpus, so gold is always in the set.
        """
        own: list[Passage] = []
        seen: set[str] = set()
        for p in question.paragraphs:
            if p.pid not in seen:
                seen.add(p.pid)
                own.append(self.docs[self.position[p.pid]] if p.pid in self.position else p)
        for pid in question.supporting:
            if pid not in seen and pid in self.position:
                seen.add(pid)
                own.append(self.docs[self.position[pid]])
        rng = np.random.default_rng(question_seed(seed, question.qid))
        docs = list(own)
        n = sum(len(self.split(d)) for d in docs)
        added = 0
        if target > n:
            if self.page_key == "title":  # whole articles of other titles, in a seeded order
                own_titles = {d.title for d in docs}
                titles = [t for t in self.pages if t not in own_titles]
                groups = [self.pages[titles[i]] for i in rng.permutation(len(titles))]
            else:  # single documents, in a seeded order
                groups = [[i] for i in rng.permutation(len(self.docs))]
            for group in groups:
                for j in group:
                    doc = self.docs[j]
                    if doc.pid in seen:
                        continue
                    seen.add(doc.pid)
                    docs.append(doc)
                    added += 1
                    n += len(self.split(doc))
                if n >= target:
                    break
        info = {"target_passages": int(target), "whole_corpus": False, "reached_target": bool(n >= target)}
        if self.page_key == "title":
            info["page_key"] = "title"
        return self._make(question.qid, docs, len(own), rng, info)

    def whole_set(self) -> DocumentSet:
        """Every corpus document in one set (one graph shared by all questions)."""
        return self._make(None, self.docs, 0, None, {"target_passages": None, "whole_corpus": True})


@dataclass
class GoldUnits:
    """Gold units of one question and, for each, the passage indices of a set that cover it."""

    units: list[str]
    cover: list[np.ndarray]
    doc_units: list[str]
    doc_cover: list[np.ndarray]
    kind: str  # "sentence" | "document"
    n_fallback: int = 0  # supporting facts whose sentence index was out of range (covered by any passage of the doc)

    @property
    def supporting_passages(self) -> np.ndarray:
        """All passages that cover some unit (for drawing)."""
        if not self.cover:
            return np.empty(0, dtype=np.int64)
        return np.unique(np.concatenate(self.cover))


def gold_units(question: PassageQuestion, dset: DocumentSet) -> GoldUnits:
    """Supporting units of a question and the passages of `dset` that cover each one."""
    doc_units = list(dict.fromkeys(question.supporting))
    doc_cover = [dset.passages_of(pid) for pid in doc_units]
    facts = question.meta.get("supporting_facts") if question.meta else None
    if not facts:
        return GoldUnits(doc_units, [c.copy() for c in doc_cover], doc_units, doc_cover, "document")
    units, cover, fallback = [], [], 0
    spans = np.asarray(dset.spans, dtype=np.int64).reshape(-1, 2)
    for title, sent in dict.fromkeys((str(t), int(s)) for t, s in facts):
        members = dset.passages_of(title)
        units.append(f"{title}#{sent}")
        if dset.rule == "paragraph" or members.size == 0:
            cover.append(members)
            continue
        starts, ends = spans[members, 0], spans[members, 1]
        hit = members[(starts <= sent) & (sent < ends)]
        if hit.size == 0:  # the fact's sentence index is past the document's end: accept any passage of it
            fallback += 1
            hit = members
        cover.append(hit)
    return GoldUnits(units, cover, doc_units, doc_cover, "sentence", fallback)
