"""Relation knowledge for freely worded questions: a vote of the k most similar training questions.

Questions are embedded with their topic mention masked ("... directed by [X]"), so neighbours are
found by how the question asks, not by which entity it names. Each of the k nearest training
questions votes for its annotated chain with its cosine similarity; chains are ranked by vote
weight (ties: more voters, then the chain's training frequency).

A training question may carry several chains: WebQSP and CWQ (RoG) are annotated weakly, with
every shortest topic-to-answer relation chain of the question's subgraph
(`meta["shortest_chains"]`, RoG's own supervision). Such a neighbour splits its vote equally
among its chains (it says "one of these"); a question with one chain (MetaQA, PathQuestion)
votes with its whole similarity, as before.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Sequence

import numpy as np

from ....errors import ConfigError
from .knowledge import BatchedKnowledge, Chain, ChainProposal, as_chain
from .lexicon import mask_topic, other_topics

__all__ = ["KNNVote", "masked_text"]


def masked_text(question) -> str:
    """The text that is embedded: the question with its topic mention replaced by [X] (and, for one
    branch of a conjunctive question, the other branches' topics by [Y])."""
    return " ".join(mask_topic(question.question, question.topic_entities, mark="[X]", others=other_topics(question),
                               other_mark="[Y]").split())


class KNNVote(BatchedKnowledge):
    """kNN chain vote over sentence embeddings (any object with `.encode(texts) -> (n, d)` L2-normalised)."""

    name = "knn"

    def __init__(self, embedder, k: int = 10, batch: int = 4096, backoff: bool = False):
        super().__init__()
        self.backoff = bool(backoff)  # after the voted chains: their reversed directions, then every other chain
        if k < 1:
            raise ConfigError(f"k for the vote must be >= 1 (got {k}).")
        if embedder is None:
            raise ConfigError("the kNN vote needs an embedder: pass load_embedder('minilm').")
        self.embedder = embedder
        self.k = int(k)
        self.batch = int(batch)
        self.vectors = np.zeros((0, 0), dtype=np.float32)
        self.chains: list[Chain] = []
        self.chain_ids = np.zeros(0, dtype=np.int64)   # the first chain of each training question
        self.frequency: Counter = Counter()
        # every (question, chain) vote: question i votes for vote_chain[vote_start[i]:vote_start[i+1]]
        self.vote_start = np.zeros(1, dtype=np.int64)
        self.vote_chain = np.zeros(0, dtype=np.int64)
        self.vote_share = np.zeros(0, dtype=np.float64)

    @staticmethod
    def item_chains(item) -> list[Chain]:
        """The chains a training question votes for: all its shortest chains (RoG), else its chain."""
        many = (getattr(item, "meta", None) or {}).get("shortest_chains")
        chains = [as_chain(c) for c in many] if many else [as_chain(item.chain)]
        return list(dict.fromkeys(c for c in chains if c))

    def fit(self, train_items: Sequence, **_) -> "KNNVote":
        from .conjunctive import expand_branches

        items = [q for q in expand_branches(train_items) if getattr(q, "chain", None)]
        if not items:
            raise ConfigError("the kNN vote needs training questions with annotated chains.")
        per_item = [self.item_chains(q) or [as_chain(q.chain)] for q in items]
        index: dict[Chain, int] = {}
        ids = [[index.setdefault(c, len(index)) for c in chains] for chains in per_item]
        self.chain_ids = np.array([i[0] for i in ids], dtype=np.int64)
        self.vote_start = np.concatenate([[0], np.cumsum([len(i) for i in ids])]).astype(np.int64)
        self.vote_chain = np.fromiter((c for i in ids for c in i), dtype=np.int64, count=int(self.vote_start[-1]))
        self.vote_share = np.repeat(1.0 / np.array([len(i) for i in ids], dtype=np.float64), [len(i) for i in ids])
        self.chains = list(index)
        self.frequency = Counter(c for chains in per_item for c in chains)
        self.vectors = np.asarray(self.embedder.encode([masked_text(q) for q in items]), dtype=np.float32)
        self._fitted = True
        return self

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
                    sim = float(max(row[j], 0.0))
                    for v in range(self.vote_start[j], self.vote_start[j + 1]):
                        cid = int(self.vote_chain[v])
                        weights[cid] += sim * float(self.vote_share[v])
                        voters[cid] += 1
                total = sum(weights.values()) or 1.0
                ranked = sorted(weights, key=lambda c: (-weights[c], -voters[c], -self.frequency[self.chains[c]]))
                props = [ChainProposal(self.chains[c], weights[c] / total, "knn",
                                       evidence={"voters": int(voters[c]), "max_sim": round(float(row[idx].max()), 4)})
                         for c in ranked]
                out.append(self._back_off(props) if self.backoff else props)
        return out

    def _back_off(self, props: list[ChainProposal]) -> list[ChainProposal]:
        """The voted chains, then each with every step reversed (neighbours that ask the other way round:
        "who directed [X]" beside "what did [X] direct"), then every other training chain by frequency."""
        seen = {p.chain for p in props}
        out = list(props)
        for p in props:
            flipped = tuple((r, not f) for r, f in reversed(p.chain))
            if flipped not in seen:
                seen.add(flipped)
                out.append(ChainProposal(flipped, 0.0, "knn:reversed", evidence={"of": "voted chain"}))
        total = sum(self.frequency.values()) or 1
        for chain, n in self.frequency.most_common():
            if chain not in seen:
                seen.add(chain)
                out.append(ChainProposal(chain, n / total, "knn:fallback"))
        return out

    def training_chains(self) -> set[Chain]:
        """Every chain some training question votes for (a test chain outside it cannot be proposed)."""
        self._require_fitted()
        return set(self.chains)

    def describe(self) -> dict:
        return {"name": self.name, "k": self.k, "backoff": self.backoff, "n_train": int(self.chain_ids.size),
                "n_chains": len(self.chains),
                "votes_per_question": round(float(self.vote_chain.size / max(self.chain_ids.size, 1)), 3),
                "embedder": getattr(self.embedder, "model_id", type(self.embedder).__name__)}
