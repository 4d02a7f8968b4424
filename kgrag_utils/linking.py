"""Topic entities for a question that names none: find the KG entities a question mentions.

One shared linker for every method (methods call it when a question has no topic entity; a question's
`[X]` marks and a dataset's `topic_entities` always come first). Three steps, each tried only when the one
before found nothing:

1. **exact / normalised**: every word n-gram of the question (up to the longest entity name, at most
   `max_words`) looked up in the entity names, as written and normalised (case-folded, NFKC, underscores
   read as spaces); longer mentions win and mentions do not overlap;
2. **fuzzy**: the n-grams against every name with rapidfuzz's `ratio` in one vectorised `cdist`, the best
   pair at `fuzzy_cutoff` (0-100) or above;
3. **vector**: the n-grams and the names embedded with the configured embedder (names through its on-disk
   cache), cosine similarity in one matrix product, the best pair at `vector_min` or above.

API: `EntityLinker(names, embedder=None)` built once per KG, `linker.link(question, k=1)` and
`linker.link_many(questions)`; `link_entities(question, kg_or_names, embedder=None)` for one question.
Each result is a `Link(name, mention, score, how)`; `how` is "exact", "normalised", "fuzzy" or "vector".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .datasets.answerable import normalize_name
from .datasets.items import unmarked

__all__ = ["Link", "EntityLinker", "forget_topics", "link_entities", "link_outcome", "link_questions",
           "normalise", "STOPWORDS"]

#: words that are never a mention on their own
STOPWORDS = frozenset(
    "a an the of in on at to for by from with and or who whom whose what which where when why how is are was were be "
    "been did do does that this these those it its he she they his her their book books film films person people "
    "written write wrote published born city country than as into about".split())
_WORD = re.compile(r"[\w'’.-]+", re.UNICODE)


def normalise(text: str) -> str:
    """The answer comparison's normal form (case-folded NFKC, whitespace collapsed), underscores read as spaces."""
    return normalize_name(unicodedata.normalize("NFKC", str(text)).replace("_", " "))


@dataclass(frozen=True)
class Link:
    """One linked entity: its KG `name`, the question's words that named it, the score (1.0 exact, fuzzy
    ratio / 100, cosine for vector) and the step that found it."""

    name: str
    mention: str
    score: float
    how: str


def _mentions(question: str, max_words: int) -> tuple[list[str], list[tuple[int, int]], list[bool]]:
    """Word n-grams (longest first) as the question writes them (its own spacing and dots: "Michael J. Pollard"),
    their (start, end) word spans, and whether each is written in lower case (the question's first capital
    aside: it is the sentence's); all-stopword n-grams are skipped."""
    text = question.replace("[", " ").replace("]", " ")
    found = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    bounds = []  # each word's (start, end) with the quotes and dots that only end or open it taken off
    for a, b in found:
        word = text[a:b]
        lead = len(word) - len(word.lstrip(".'’"))
        core = word.strip(".'’")
        if core:
            bounds.append((a + lead, a + lead + len(core)))
    words = [text[a:b] for a, b in bounds]
    grams, spans, lower = [], [], []
    for n in range(min(max_words, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            chunk = words[i:i + n]
            if all(w.casefold() in STOPWORDS for w in chunk) or (n == 1 and len(chunk[0]) < 3):
                continue
            gram = text[bounds[i][0]:bounds[i + n - 1][1]]
            end = bounds[i + n - 1][1]
            if n > 1 and len(words[i + n - 1]) == 1 and text[end:end + 1] == ".":
                gram += "."  # an initial keeps its dot ("Michael J.")
            grams.append(gram)
            spans.append((i, i + n))
            rest = gram[1:] if i == 0 else gram  # a capital on the question's first letter is the sentence's
            lower.append(rest == rest.lower())
    return grams, spans, lower


class EntityLinker:
    """Links questions to the entity names of one KG (see the module docstring for the steps)."""

    def __init__(self, names: Sequence[str] | Any, embedder: Any = None, fuzzy_cutoff: float = 88.0,
                 vector_min: float = 0.75, max_words: int = 8):
        if hasattr(names, "entity_names"):  # a KG
            names = names.entity_names
        self.names = np.asarray([str(n) for n in names], dtype=object)
        self.norm = pd.Index([normalise(n) for n in self.names])
        self.exact = pd.Index(self.names)
        first = pd.Series(np.arange(len(self.norm))).groupby(np.asarray(self.norm, dtype=object), sort=False).first()
        self.norm_unique, self.norm_first = pd.Index(first.index), first.to_numpy()
        self.embedder = embedder
        self.fuzzy_cutoff = float(fuzzy_cutoff)
        self.vector_min = float(vector_min)
        longest = max((len(n.split()) for n in self.norm), default=1)
        self.max_words = max(1, min(int(max_words), longest))
        self._name_vectors = None

    # ------------------------------------------------------------------ the steps
    def _lookup(self, grams: list[str], spans: list[tuple[int, int]], lower: list[bool]) -> list[Link]:
        """Exact, then normalised mentions, longest first, not overlapping. A question that writes some mention
        with capitals names its entities that way: its mentions in lower case ("who is the director of Oliver
        Twist": "director" is a KG tag too) then give way; a question in lower case throughout keeps them all."""
        exact = self.exact.get_indexer(grams)
        norm_idx = self.norm_unique.get_indexer([normalise(g) for g in grams])
        hits = [(g, span, e, n, low) for g, span, e, n, low in zip(grams, spans, exact, norm_idx, lower)
                if e >= 0 or n >= 0]
        if not all(low for *_, low in hits):
            hits = [h for h in hits if not h[4]]
        taken: set[int] = set()
        out = []
        for g, (a, b), e, n, _ in hits:
            if taken & set(range(a, b)):
                continue
            name = self.names[e] if e >= 0 else self.names[self.norm_first[n]]
            out.append(Link(str(name), g, 1.0, "exact" if e >= 0 else "normalised"))
            taken.update(range(a, b))
        return out

    def _fuzzy(self, grams: list[str], k: int) -> list[Link]:
        from rapidfuzz import fuzz, process

        scores = process.cdist([normalise(g) for g in grams], list(self.norm), scorer=fuzz.ratio, workers=1)
        return self._best(np.asarray(scores, dtype=float) / 100.0, grams, self.fuzzy_cutoff / 100.0, k, "fuzzy")

    def _vector(self, grams: list[str], k: int) -> list[Link]:
        emb = self.embedder
        if isinstance(emb, str):
            from .embeddings import load_embedder

            emb = self.embedder = load_embedder(emb)
        if self._name_vectors is None:
            self._name_vectors = _unit(np.asarray(emb.encode([n.replace("_", " ") for n in self.names],
                                                             progress=False), dtype=np.float32))
        q = _unit(np.asarray(emb.encode(grams, progress=False), dtype=np.float32))
        return self._best(q @ self._name_vectors.T, grams, self.vector_min, k, "vector")

    def _best(self, sim: np.ndarray, grams: list[str], floor: float, k: int, how: str) -> list[Link]:
        """The k best distinct names over the (mention x name) similarity matrix, each at `floor` or above."""
        best_gram = sim.argmax(axis=0)
        best = sim[best_gram, np.arange(sim.shape[1])]
        order = np.argsort(-best, kind="stable")[:k]
        return [Link(str(self.names[j]), grams[best_gram[j]], float(best[j]), how) for j in order if best[j] >= floor]

    # ------------------------------------------------------------------ the API
    def link(self, question: str, k: int = 1) -> list[Link]:
        """The entities `question` mentions: every exact / normalised mention (in question order), else the
        `k` best fuzzy matches, else the `k` best vector matches (with an embedder); [] when none passes."""
        if not len(self.names):
            return []
        grams, spans, lower = _mentions(question, self.max_words)
        if not grams:
            return []
        found = self._lookup(grams, spans, lower)
        if found:
            return found
        found = self._fuzzy(grams, k)
        if found or self.embedder is None:
            return found
        return self._vector(grams, k)

    def link_many(self, questions: Sequence[str], k: int = 1) -> list[list[Link]]:
        return [self.link(q, k) for q in questions]


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def link_entities(question: str, kg_or_names: Any, embedder: Any = None, k: int = 1, **options) -> list[Link]:
    """`EntityLinker(kg_or_names, embedder, **options).link(question, k)` for one question."""
    return EntityLinker(kg_or_names, embedder=embedder, **options).link(question, k)


def link_questions(items: Sequence, kg, embedder: Any = None) -> int:
    """Fill `topic_entities` of the KG questions that have none (in place), recording each link in
    `meta["topic_links"]` and `meta["topic_source"] = "linked"`; returns how many questions were linked."""
    todo = [q for q in items if hasattr(q, "topic_entities") and not q.topic_entities]
    if not todo or kg is None:
        return 0
    linker = EntityLinker(kg, embedder=embedder)
    n = 0
    for q, links in zip(todo, linker.link_many([q.question for q in todo])):
        q.meta["topic_links"] = [asdict(x) for x in links]
        if links:
            q.topic_entities = [x.name for x in links]
            q.meta["topic_source"] = "linked"
            n += 1
    return n


def forget_topics(items: Sequence) -> int:
    """Take each KG question's topic entities and [X] marks away (in place; kept in `meta["gold_topics"]`), so the
    method meets it as it would a question of one's own and links it (`topics="linked"`); how many were taken."""
    n = 0
    for q in items:
        if not hasattr(q, "topic_entities") or "gold_topics" in q.meta:
            continue
        q.meta["gold_topics"] = list(q.topic_entities)
        q.question = unmarked(q.question)
        q.topic_entities = []
        n += 1
    return n


def link_outcome(item: Any) -> dict | None:
    """How linking did on a question whose topics were taken away (`forget_topics`): the gold and linked names,
    `found` (every gold topic among the linked) and `exact` (the same set); None for any other question."""
    gold = (getattr(item, "meta", None) or {}).get("gold_topics")
    if gold is None:
        return None
    linked = list(item.topic_entities)
    return {"gold": list(gold), "linked": linked, "found": bool(gold) and set(gold) <= set(linked),
            "exact": set(gold) == set(linked)}

