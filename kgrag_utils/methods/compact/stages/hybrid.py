"""Relation knowledge for templated AND paraphrased questions: the lift lexicon where a question
matches a training template, the kNN vote of similar training questions elsewhere.

Both read the question after spelling correction against the training vocabulary (`spelling.py`).
Proposals, best first:

1. the lexicon's *template* and *skeleton* proposals (the question's cue words, in order, form a
   template seen in training, or its pattern of cue variables does): wording the lexicon knows,
   where it is right (MetaQA: 98-100% of chains; PathQuestion's word-order skeletons);
2. the kNN vote (k most similar training questions, MiniLM, topic masked), then its chains with
   the steps reversed, for neighbours that ask the other way round;
3. every training chain (the lexicon's backoff).

Nothing is tuned on paraphrases: the order is fixed, the lexicon's lift threshold is tuned as for
the lexicon alone (on a held-out part of the templated training split), k is the kNN's. A
paraphrase that keeps cue words the lexicon knows stays with it; one without any (a synonym, a
misspelling the correction cannot place) falls to the vote, which compares whole sentences and so
tolerates wordings the lexicon never saw. The derivability check then walks the list as for any knowledge.
"""

from __future__ import annotations

from typing import Sequence

from .knn import KNNVote
from .knowledge import BatchedKnowledge, Chain, ChainProposal
from .lexicon import LiftLexicon
from .spelling import SpellingCorrector

__all__ = ["HybridKnowledge"]


class HybridKnowledge(BatchedKnowledge):
    """Spelling correction + lexicon templates + kNN vote (see the module docstring)."""

    name = "hybrid"

    def __init__(self, embedder, threshold: float = 2.0, min_count: float = 2.0, iterations: int = 10, k: int = 10):
        super().__init__()
        self.lexicon = LiftLexicon(threshold=threshold, min_count=min_count, iterations=iterations)
        self.knn = KNNVote(embedder, k=k, backoff=True)
        self.speller = SpellingCorrector()

    # the lexicon's threshold, so the pipeline tunes it as for the lexicon alone
    @property
    def threshold(self) -> float:
        return self.lexicon.threshold

    def set_threshold(self, threshold: float) -> "HybridKnowledge":
        self.lexicon.set_threshold(threshold)
        return self

    def pairs(self, threshold: float | None = None):
        return self.lexicon.pairs(threshold)

    @property
    def n_train(self) -> int:
        return self.lexicon.n_train

    def fit(self, train_items: Sequence, threshold: float | None = None, **_) -> "HybridKnowledge":
        from .conjunctive import expand_branches

        items = expand_branches(train_items)
        self.speller.fit(items)
        self.lexicon.fit(items, threshold=threshold)
        self.knn.fit(items)
        self._fitted = True
        return self

    def propose_many(self, items: Sequence) -> list[list[ChainProposal]]:
        self._require_fitted()
        fixed = [self.speller.correct(q) for q in items]
        voted = self.knn.propose_many(fixed)
        out = []
        for q, votes in zip(fixed, voted):
            lex = self.lexicon.propose(q)
            first = [p for p in lex if p.source in ("lexicon:template", "lexicon:skeleton")]
            later = [p for p in lex if p.source not in ("lexicon:template", "lexicon:skeleton")]
            seen: set[Chain] = set()
            merged = []
            for group in (first, [v for v in votes if not v.source.endswith("fallback")], later,
                          [v for v in votes if v.source.endswith("fallback")]):
                for p in group:
                    if p.chain not in seen:
                        seen.add(p.chain)
                        merged.append(ChainProposal(p.chain, p.score, f"hybrid:{p.source}", p.relation,
                                                    {**p.evidence, **({"corrected": q.question}
                                                                      if "written_question" in q.meta else {})}))
            out.append(merged)
        return out

    def training_chains(self) -> set[Chain]:
        self._require_fitted()
        return self.lexicon.training_chains() | self.knn.training_chains()

    def describe(self) -> dict:
        return {"name": self.name, "lexicon": self.lexicon.describe() if self._fitted else {},
                "knn": self.knn.describe() if self._fitted else {},
                "spelling_vocabulary": len(self.speller.vocabulary)}
