"""A learned word-to-relation lexicon for templated questions, and question templates for order.

Two pieces of learned relation knowledge predict a question's chain (relations, order, directions):

1. The lexicon: lift(w, r) = P(r | w) / P(r), kept where lift >= threshold (chosen on validation).
   Counting P(r | w) over whole questions fails for multi-hop chains: a relation that sits in
   almost every chain (PathQuestion's `children`) can never reach a lift above 1 / P(r), however
   good the cue ("kid"). So the counts are *expected alignment counts*: IBM Model 1 (EM) aligns
   every question word to one relation of its chain or to NULL (function words), and lift is
   computed from those counts. A cue word maps to its highest-lift relation.

2. Templates: with the lexicon, a question reduces to its cue words and the topic marker in word
   order ("who directed the films acted by [X]" -> `directed acted <X>`). Training questions give,
   per reduced form, the chain *structures* seen with it - each step is "the relation of cue
   variable k" or a literal relation, plus its direction. Two levels, with backoff:
     - template: the exact cue-word sequence (`directed acted <X>`);
     - skeleton: the cue words replaced by variables in order of first appearance (`0 1 <X>`),
       which carries a structure over to unseen word combinations;
     - fallback: every chain seen in training, ranked by how many of the question's cue
       relations it uses.
   Word order is what fixes the order and the directions of the steps; the derivability check
   (a chain that derives nothing from the topic entity is not the chain) then picks among the
   ranked proposals.

A conjunctive question (several chains meeting at the answer) is learned and read once per branch
(`conjunctive.branch_views`): that branch's topic is <X>, the others are <Y>, so the template
tells the branches apart; its words are aligned with the relations of all its branches.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ....errors import ConfigError
from .knowledge import Chain, ChainProposal, RelationKnowledge, as_chain

__all__ = [
    "TOPIC_MARK", "OTHER_MARK", "question_tokens", "mask_topic", "other_topics", "alignment_relations", "align_counts",
    "LiftLexicon", "TemplateKey",
]

TOPIC_MARK = "<X>"
OTHER_MARK = "<Y>"  # another branch's topic in a conjunctive question
NULL = "<null>"
_TOKEN = re.compile(r"'s\b|[^\W_]+(?:-[^\W_]+)*")
_BRACKETS = re.compile(r"\[[^\]]*\]")


def _slot(i: int) -> str:
    """A placeholder no entity name contains (Unicode private-use characters)."""
    return "\ue000" + chr(0xE100 + i) + "\ue000"


def mask_topic(question: str, topics: Sequence[str] = (), mark: str = TOPIC_MARK, others: Sequence[str] = (),
               other_mark: str = OTHER_MARK) -> str:
    """The question with its topic mention replaced by `mark` (and other topics' by `other_mark`).

    A bracketed span (MetaQA's `[Joel Zwick]`) is the mention; otherwise each topic name is
    searched case-insensitively (PathQuestion writes `princess_louise_charlotte_of_denmark`).
    `others` are the topics of a conjunctive question's other branches: the question is read
    once per branch, with that branch's topic as `mark` and the rest as `other_mark`.
    """
    text = str(question)
    if "[" in text and "]" in text:
        return _BRACKETS.sub(f" {mark} ", text)
    names = [(t, mark) for t in topics if t] + [(o, other_mark) for o in others if o and o not in topics]
    # placeholders first, so a later name cannot match inside an inserted mark
    for i, (name, _) in enumerate(sorted(names, key=lambda nm: len(nm[0]), reverse=True)):
        text = re.sub(re.escape(name), f" {_slot(i)} ", text, flags=re.IGNORECASE)
    for i, (_, m) in enumerate(sorted(names, key=lambda nm: len(nm[0]), reverse=True)):
        text = text.replace(_slot(i), m)
    return text


def question_tokens(question: str, topics: Sequence[str] = (), others: Sequence[str] = ()) -> list[str]:
    """Lower-cased word tokens ("'s" split off) with the topic mention as one TOPIC_MARK token
    (and the other branches' topics, if any, as OTHER_MARK tokens)."""
    masked = mask_topic(question, topics, mark=" qqtopicqq ", others=others, other_mark=" qqotherqq ")
    marks = {"qqtopicqq": TOPIC_MARK, "qqotherqq": OTHER_MARK}
    return [marks.get(t, t) for t in _TOKEN.findall(masked.lower())]


def other_topics(question) -> list[str]:
    """The topics of a conjunctive question's other branches, as a branch view records them."""
    return list((getattr(question, "meta", None) or {}).get("other_topics", ()))


def alignment_relations(question) -> list[str]:
    """The relations a question's words are aligned with: its chain's, or for a branch of a
    conjunctive question, every branch's (its words name all of them)."""
    rels = (getattr(question, "meta", None) or {}).get("align_relations")
    return list(rels) if rels else [r for r, _ in question.chain]


def align_counts(token_lists: Sequence[Sequence[int]], relation_lists: Sequence[Sequence[int]],
                 n_words: int, n_relations: int, iterations: int = 10) -> np.ndarray:
    """Expected word-relation alignment counts of IBM Model 1, vectorised over all pairs.

    Every token occurrence of question i is generated by one relation of relation_lists[i] (which
    should include the NULL relation). Returns an (n_words, n_relations) array of expected counts.
    """
    if iterations < 1:
        raise ConfigError(f"iterations must be >= 1 (got {iterations}).")
    words, rels, occ = [], [], []
    n_occ = 0
    for toks, rs in zip(token_lists, relation_lists):
        toks = np.asarray(toks, dtype=np.int64)
        rs = np.unique(np.asarray(rs, dtype=np.int64))
        if toks.size == 0 or rs.size == 0:
            continue
        words.append(np.repeat(toks, rs.size))
        rels.append(np.tile(rs, toks.size))
        occ.append(np.repeat(np.arange(n_occ, n_occ + toks.size), rs.size))
        n_occ += toks.size
    counts = np.zeros((n_words, n_relations))
    if not words:
        return counts
    w = np.concatenate(words)
    r = np.concatenate(rels)
    o = np.concatenate(occ)
    pair = w * n_relations + r
    t = np.ones(n_words * n_relations)
    for _ in range(iterations):
        p = t[pair]
        z = np.bincount(o, weights=p, minlength=n_occ)
        post = p / z[o]
        counts = np.bincount(pair, weights=post, minlength=n_words * n_relations).reshape(n_words, n_relations)
        totals = counts.sum(axis=0, keepdims=True)
        t = (counts / np.where(totals > 0, totals, 1.0)).ravel()
    return counts


@dataclass(frozen=True)
class TemplateKey:
    """A question reduced by the lexicon: its cue-word template, its skeleton and the bindings."""

    words: tuple[str, ...]      # cue words and the topic mark, in order
    skeleton: tuple[str, ...]   # the same with cue words replaced by variable numbers
    bindings: tuple[str, ...]   # relation of variable k


# a chain structure: each step is (("v", k) | ("r", relation), forward)
Structure = tuple[tuple[tuple[str, object], bool], ...]


def _structure(chain: Chain, bindings: Sequence[str]) -> Structure:
    return tuple(((("v", bindings.index(r)) if r in bindings else ("r", r)), f) for r, f in chain)


def _instantiate(structure: Structure, bindings: Sequence[str]) -> Chain | None:
    steps = []
    for (kind, value), forward in structure:
        if kind == "v":
            if value >= len(bindings):
                return None
            steps.append((bindings[value], forward))
        else:
            steps.append((value, forward))
    return tuple(steps)


class LiftLexicon(RelationKnowledge):
    """Word-to-relation lift lexicon (IBM-1 aligned counts) + template structures.

    >>> lex = LiftLexicon(threshold=2.0).fit(train_questions)
    >>> lex.propose(question)[0].chain
    (('directed_by', False), ('in_language', True))
    """

    name = "lexicon"

    def __init__(self, threshold: float = 2.0, min_count: float = 2.0, iterations: int = 10):
        super().__init__()
        if threshold < 1.0:
            raise ConfigError(f"a lift threshold below 1 keeps negatively associated pairs (got {threshold}); use >= 1.")
        self.threshold = float(threshold)
        self.min_count = float(min_count)
        self.iterations = int(iterations)
        self.words: list[str] = []
        self.relations: list[str] = []
        self.counts = np.zeros((0, 0))
        self.lift = np.zeros((0, 0))
        self.cues: dict[str, str] = {}
        self.cue_lift: dict[str, float] = {}
        self.templates: dict[tuple, Counter] = {}
        self.skeletons: dict[tuple, Counter] = {}
        self.chains: Counter = Counter()
        self.n_train = 0

    # ------------------------------------------------------------------ fitting
    def fit(self, train_items: Sequence, threshold: float | None = None, **_) -> "LiftLexicon":
        """Learn alignment counts, the lexicon and the template tables from questions with chains."""
        from .conjunctive import expand_branches

        items = [q for q in expand_branches(train_items) if getattr(q, "chain", None)]
        if not items:
            raise ConfigError("the lexicon needs training questions with annotated chains (e.g. MetaQA dev with qtypes).")
        if threshold is not None:
            self.threshold = float(threshold)
        tokens = [question_tokens(q.question, q.topic_entities, other_topics(q)) for q in items]
        word_index: dict[str, int] = {}
        rel_index: dict[str, int] = {NULL: 0}
        tok_ids, rel_ids = [], []
        for toks, q in zip(tokens, items):
            tok_ids.append([word_index.setdefault(t, len(word_index)) for t in toks if t != TOPIC_MARK])
            rel_ids.append([0] + [rel_index.setdefault(r, len(rel_index)) for r in alignment_relations(q)])
        self.words = list(word_index)
        self.relations = list(rel_index)
        self.counts = align_counts(tok_ids, rel_ids, len(self.words), len(self.relations), self.iterations)
        total = self.counts.sum()
        p_rel = self.counts.sum(axis=0) / max(total, 1e-12)
        p_rel_given_w = self.counts / np.maximum(self.counts.sum(axis=1, keepdims=True), 1e-12)
        self.lift = p_rel_given_w / np.where(p_rel > 0, p_rel, 1.0)
        self.lift[:, 0] = 0.0  # NULL is never a relation
        self.n_train = len(items)
        self._items_tokens = tokens
        self._items_chains = [as_chain(q.chain) for q in items]
        self._build_tables()
        self._fitted = True
        return self

    def set_threshold(self, threshold: float) -> "LiftLexicon":
        """Re-threshold without re-aligning (the alignment counts do not depend on it)."""
        if threshold < 1.0:
            raise ConfigError(f"a lift threshold below 1 keeps negatively associated pairs (got {threshold}); use >= 1.")
        self._require_fitted()
        self.threshold = float(threshold)
        self._build_tables()
        return self

    def _build_tables(self) -> None:
        keep = (self.lift >= self.threshold) & (self.counts >= self.min_count)
        masked = np.where(keep, self.lift, 0.0)
        best = masked.argmax(axis=1)
        has = masked.max(axis=1) > 0
        self.cues = {self.words[i]: self.relations[best[i]] for i in np.flatnonzero(has)}
        self.cue_lift = {self.words[i]: float(masked[i, best[i]]) for i in np.flatnonzero(has)}
        self.templates, self.skeletons = defaultdict(Counter), defaultdict(Counter)
        self.chains = Counter()
        for toks, chain in zip(self._items_tokens, self._items_chains):
            key = self.reduce(toks)
            structure = _structure(chain, key.bindings)
            self.templates[key.words][structure] += 1
            self.skeletons[key.skeleton][structure] += 1
            self.chains[chain] += 1
        self.templates = dict(self.templates)
        self.skeletons = dict(self.skeletons)

    # ------------------------------------------------------------------ reading questions
    def reduce(self, tokens: Sequence[str]) -> TemplateKey:
        """Cue-word template, skeleton and variable bindings of a tokenised question."""
        words, skeleton, bindings = [], [], []
        for tok in tokens:
            if tok in (TOPIC_MARK, OTHER_MARK):
                words.append(tok)
                skeleton.append(tok)
                continue
            rel = self.cues.get(tok)
            if rel is None:
                continue
            if rel not in bindings:
                bindings.append(rel)
            words.append(tok)
            skeleton.append(str(bindings.index(rel)))
        return TemplateKey(tuple(words), tuple(skeleton), tuple(bindings))

    def key_of(self, question) -> TemplateKey:
        return self.reduce(question_tokens(question.question, question.topic_entities, other_topics(question)))

    def propose(self, item) -> list[ChainProposal]:
        """Template proposals, then skeleton proposals, then every training chain (backoff)."""
        self._require_fitted()
        key = self.key_of(item)
        out: list[ChainProposal] = []
        seen: set[Chain] = set()
        for level, table, k in (("template", self.templates, key.words), ("skeleton", self.skeletons, key.skeleton)):
            found = table.get(k)
            if not found:
                continue
            total = sum(found.values())
            for structure, n in found.most_common():
                chain = _instantiate(structure, key.bindings)
                if chain is None or chain in seen:
                    continue
                seen.add(chain)
                out.append(ChainProposal(chain, n / total, f"lexicon:{level}",
                                         evidence={"key": " ".join(k), "count": int(n)}))
        bound = set(key.bindings)
        total = sum(self.chains.values()) or 1
        fallback = sorted(self.chains.items(), key=lambda kv: (-len(bound & {r for r, _ in kv[0]}), -kv[1]))
        for chain, n in fallback:
            if chain not in seen:
                seen.add(chain)
                out.append(ChainProposal(chain, n / total, "lexicon:fallback",
                                         evidence={"cue_relations_used": len(bound & {r for r, _ in chain})}))
        return out

    # ------------------------------------------------------------------ inspection
    def training_chains(self) -> set[Chain]:
        """Every chain seen in training (the backoff can propose no other)."""
        self._require_fitted()
        return set(self.chains)

    def pairs(self, threshold: float | None = None) -> list[tuple[str, str, float, float]]:
        """(word, relation, lift, expected count) of every kept pair, strongest first."""
        self._require_fitted()
        th = self.threshold if threshold is None else float(threshold)
        keep = (self.lift >= th) & (self.counts >= self.min_count)
        rows = [(self.words[i], self.relations[j], float(self.lift[i, j]), float(self.counts[i, j]))
                for i, j in zip(*np.nonzero(keep))]
        return sorted(rows, key=lambda x: (-x[2], -x[3], x[0], x[1]))

    def strongest_pairs(self, n: int = 20, per_relation: int | None = None):
        """The lexicon's strongest pairs as a DataFrame (optionally the top `per_relation` of each relation)."""
        import pandas as pd

        rows = self.pairs()
        if per_relation is not None:
            taken: Counter = Counter()
            picked = []
            for row in sorted(rows, key=lambda x: (-x[3] * np.log(x[2]), x[0])):
                if taken[row[1]] < per_relation:
                    taken[row[1]] += 1
                    picked.append(row)
            rows = sorted(picked, key=lambda x: (x[1], -x[2]))
        else:
            rows = rows[:n]
        return pd.DataFrame(rows, columns=["word", "relation", "lift", "aligned_count"])

    def describe(self) -> dict:
        return {"name": self.name, "threshold": self.threshold, "min_count": self.min_count,
                "n_train": self.n_train, "n_cue_words": len(self.cues), "n_pairs": len(self.pairs()) if self._fitted else 0,
                "n_templates": len(self.templates), "n_skeletons": len(self.skeletons),
                "n_train_chains": len(self.chains)}
