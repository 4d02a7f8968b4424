"""Respelling a question's misspelt words towards a vocabulary, so a typo does not move its nearest neighbours.

Nearest demonstrations (kgrag_utils.demos) are chosen by the embedder's cosine between entity-blanked
questions. A misspelt word ("wat flicks", "whhich pictures") is out of the sentence embedder's
vocabulary, gets split into sub-word pieces, and moves the question away from its own template: on the
seeded 200 MetaQA 1-hop test questions with one misspelling each, 85.4% of the chosen demonstrations are
of the question's own type, against 100% unmisspelt (docs/DEMONSTRATIONS.md).

`Respeller(texts)` learns the vocabulary of the pool's texts. A query word outside it is replaced by the
nearest vocabulary word (optimal-string-alignment edit distance, so one swap of two letters is one edit: at
most 1 edit for words of up to 4 letters, 2 for longer ones; ties go to the commoner English word), unless
English knows the query word about as well as that vocabulary word: a real word the pool never uses
("show", "flicks") is kept, because its English frequency (pyspellchecker's word list) is at least
1 / `prior_ratio` of the candidate's. It is a noisy-channel rule: the channel is the edit distance, the
prior English word frequency. Only the similarity text is respelt; the question the LLM reads is not.

The one corrector of the project: compact relation selection's `SpellingCorrector` (methods/compact/stages/spelling.py)
is this class under another rule (`Respeller(vocabulary=counts, prior_ratio=None, min_length=4, max_edits=1)`:
words of at least 4 letters, one edit, no English prior, the training vocabulary's commonest word first).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Iterable, Mapping

__all__ = ["PRIOR_RATIO", "Respeller", "english_frequency"]

#: a query word is respelt only when the vocabulary word is at least this many times commoner in English
PRIOR_RATIO = 100.0

_TOKENS = re.compile(r"[A-Za-z]+|[^A-Za-z]+")
_WORD = re.compile(r"[A-Za-z]+")


@lru_cache(maxsize=1)
def _english():
    from spellchecker import SpellChecker  # pyspellchecker: its English word-frequency list, loaded once

    return SpellChecker(language="en").word_frequency


def english_frequency(word: str) -> int:
    """The word's count in pyspellchecker's English frequency list (0: unknown)."""
    return int(_english()[word.lower()])


class Respeller:
    """Maps the out-of-vocabulary words of a text to the vocabulary of `texts` (see the module docstring).

    vocabulary: word counts to use instead of the words of `texts`; prior_ratio=None: no English prior (the
    nearest vocabulary word, the commonest among equally near ones, always wins); min_length: shorter words
    stay; max_edits: the edit limit for every word (None: 1 up to 4 letters, 2 beyond).
    """

    def __init__(self, texts: Iterable[str] = (), prior_ratio: float | None = PRIOR_RATIO, *,
                 vocabulary: Mapping[str, int] | None = None, min_length: int = 3, max_edits: int | None = None):
        self.vocab = Counter(vocabulary) if vocabulary is not None else Counter(w.lower() for t in texts
                                                                                for w in _WORD.findall(t))
        self._words = list(self.vocab)
        self.prior_ratio = None if prior_ratio is None else float(prior_ratio)
        self.min_length = int(min_length)
        self.max_edits = max_edits
        self._fixed: dict[str, str | None] = {}

    def word(self, word: str) -> str | None:
        """The vocabulary word `word` is respelt to, or None when it stays (known, real, or no close word)."""
        low = word.lower()
        if low in self.vocab or len(low) < self.min_length:  # short words (and the entity blank "X") stay
            return None
        if low not in self._fixed:
            self._fixed[low] = self._nearest(low)
        return self._fixed[low]

    def _nearest(self, low: str) -> str | None:
        from rapidfuzz import process
        from rapidfuzz.distance import OSA

        limit = self.max_edits if self.max_edits is not None else (1 if len(low) <= 4 else 2)
        hits = process.extract(low, self._words, scorer=OSA.distance, score_cutoff=limit, limit=None)
        if not hits:
            return None
        if self.prior_ratio is None:
            return min(hits, key=lambda h: (h[1], -self.vocab[h[0]], h[0]))[0]
        best = min(hits, key=lambda h: (h[1], -english_frequency(h[0]), -self.vocab[h[0]], h[0]))[0]
        own = english_frequency(low)
        return best if own == 0 or english_frequency(best) >= self.prior_ratio * own else None

    def __call__(self, text: str) -> str:
        """`text` with its out-of-vocabulary words respelt (everything else as it was)."""
        return "".join((self.word(tok) or tok) if tok.isalpha() else tok for tok in _TOKENS.findall(text or ""))
