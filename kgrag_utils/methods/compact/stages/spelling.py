"""Spelling correction against the training questions' vocabulary (no outside word list).

A question word of at least `min_length` letters that no training question uses is replaced by the
training word at Damerau-Levenshtein distance 1 (one swap of neighbours, deletion, insertion or
substitution) that training uses most often; ties go to the alphabetically first. Words with no such
neighbour, short words and the topic mention (MetaQA's `[...]`, or a topic name) stay as written.
Relation knowledge then reads "who dirrcted [X]" as "who directed [X]".
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Sequence

from ....spelling import Respeller
from .lexicon import TOPIC_MARK, OTHER_MARK, other_topics, question_tokens

__all__ = ["SpellingCorrector", "within_one_edit"]

_WORD = re.compile(r"[^\W\d_]+")


def within_one_edit(a: str, b: str) -> bool:
    """Damerau-Levenshtein distance of a and b <= 1 (adjacent transposition counts as one edit)."""
    from rapidfuzz.distance import OSA

    return OSA.distance(a, b) <= 1


class SpellingCorrector:
    """Learns a vocabulary from training questions; corrects words outside it (see the module docstring) with the
    project's one corrector (`kgrag_utils.spelling.Respeller`) under this rule."""

    def __init__(self, min_length: int = 4, min_count: int = 2):
        self.min_length = int(min_length)
        self.min_count = int(min_count)
        self.vocabulary: Counter = Counter()
        self._respeller = Respeller(vocabulary={}, prior_ratio=None, min_length=self.min_length, max_edits=1)

    def fit(self, questions: Sequence) -> "SpellingCorrector":
        counts = Counter(t for q in questions
                         for t in question_tokens(q.question, q.topic_entities, other_topics(q))
                         if t not in (TOPIC_MARK, OTHER_MARK))
        self.vocabulary = Counter({w: n for w, n in counts.items() if n >= self.min_count and _WORD.fullmatch(w)})
        self._respeller = Respeller(vocabulary=self.vocabulary, prior_ratio=None, min_length=self.min_length,
                                    max_edits=1)
        return self

    def correct_word(self, word: str) -> str:
        """The training word for `word` (lower case), or `word` itself."""
        if not _WORD.fullmatch(word.lower()):
            return word
        return self._respeller.word(word) or word

    def correct_text(self, text: str, protect: Sequence[str] = ()) -> str:
        """The text with every word corrected, except bracketed mentions and the `protect` names."""
        names = sorted((p for p in protect if p), key=len, reverse=True)
        pattern = re.compile("(" + "|".join([r"\[[^\]]*\]"] + [re.escape(n) for n in names]) + ")", re.IGNORECASE)
        parts = pattern.split(str(text))
        return "".join(p if i % 2 else _WORD.sub(lambda m: self.correct_word(m.group(0)), p)
                       for i, p in enumerate(parts))

    def correct(self, question):
        """A copy of a question with its text corrected (the written text kept in meta['written_question'])."""
        text = self.correct_text(question.question, list(question.topic_entities) + other_topics(question))
        if text == question.question:
            return question
        return dataclasses.replace(question, question=text, meta={**question.meta, "written_question": question.question})
