"""Relation knowledge for freely worded questions: a vote of the k most similar training questions.

Questions are embedded with their topic mention masked ("... directed by [X]"), so neighbours are
found by how the question asks, not by which entity it names. Each of the k nearest training
questions votes for its annotated chain with its cosine similarity; chains are ranked by vote
weight (ties: more voters, then the chain's training frequency).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Sequence

import numpy as np

from ...errors import ConfigError
from .knowledge import Chain, ChainProposal, RelationKnowledge, as_chain
from .lexicon import mask_topic

__all__ = ["KNNVote", "masked_text"]


def masked_text(question) -> str:
    """The text that is embedded: the question with its topic mention replaced by [X]."""
    return " ".join(mask_topic(question.question, question.topic_entities, mark="[X]").split())


class KNNVote(RelationKnowledge):
    """kNN chain vote over sentence embeddings (any object with `.encode(texts) -> (n, d)` L2-normalised)."""

    name = "knn"

    def __init__(self, embedder, k: int = 10, batch: int = 4096):
        super().__init__()
        if k < 1:
            raise ConfigError(f"k for the vote must be >= 1 (got {k}).")
        if embedder is None:
            raise ConfigError("the kNN vote needs an embedder: pass load_embedder('minilm').")
        self.embedder = embedder
        self.k = int(k)
        self.batch = int(batch)
        self.vectors = np.zeros((0, 0), dtype=np.float32)
        self.chains: list[Chain] = []
        self.chain_ids = np.zeros(0, dtype=np.int64)
        self.frequency: Counter = Counter()

    def fit(self, train_items: Sequence, **_) -> "KNNVote":
        items = [q for q in train_items if getattr(q, "chain", None)]
        if not items:
            raise ConfigError("the kNN vote needs training questions with annotated chains.")
        chains = [as_chain(q.chain) for q in items]
        index: dict[Chain, int] = {}
        self.chain_ids = np.array([index.setdefault(c, len(index)) for c in chains], dtype=np.int64)
        self.chains = list(index)
        self.frequency = Counter(chains)
        self.vectors = np.asarray(self.embedder.encode([masked_text(q) for q in items]), dtype=np.float32)
        self._fitted = True
        return self

    def propose(self, item) -> list[ChainProposal]:
        return self.propose_many([item])[0]

    def propose_many(self, items: Sequence) -> list[list[ChainProposal]]:
        """Embed all questions at once, then vote per question."""
        self._require_fitted()
        if not items:
            return []
        queries = np.asarray(self.embedder.encode([masked_text(q) for q in items]), dtype=np.float32)
        k = min(self.k, self.vectors.shape[0])
        out: list[list[ChainProposal]] = []
        for start in range(0, len(items), self.batch):
            sims = queries[start:start + self.batch] @ self.vectors.T
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            for row, idx in zip(sims, top):
                weights: dict[int, float] = defaultdict(float)
                voters: Counter = Counter()
                for j in idx:
                    cid = int(self.chain_ids[j])
                    weights[cid] += float(max(row[j], 0.0))
                    voters[cid] += 1
                total = sum(weights.values()) or 1.0
                ranked = sorted(weights, key=lambda c: (-weights[c], -voters[c], -self.frequency[self.chains[c]]))
                out.append([ChainProposal(self.chains[c], weights[c] / total, "knn",
                                          evidence={"voters": int(voters[c]), "max_sim": round(float(row[idx].max()), 4)})
                            for c in ranked])
        return out

    def describe(self) -> dict:
        return {"name": self.name, "k": self.k, "n_train": int(self.chain_ids.size), "n_chains": len(self.chains),
                "embedder": getattr(self.embedder, "model_id", type(self.embedder).__name__)}
