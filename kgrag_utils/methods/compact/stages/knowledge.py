"""Relation knowledge behind one interface: something that proposes relation chains for an item.

Three sources implement it (paper: "relation knowledge has two sources", the learned one split in
two by question style):

* `rules.KinshipRuleKnowledge`  - CLUTRR's composition rules over a story graph;
* `lexicon.LiftLexicon`         - a word-to-relation lift lexicon plus question templates
                                   (templated questions: MetaQA, PathQuestion);
* `knn.KNNVote`                 - a vote of the chains of the most similar training questions
                                   (free wording).

Every source answers `propose(item)` with a ranked list of `ChainProposal`s. A chain is a tuple of
(relation, forward) steps, the same form `KG.follow_chain` takes; the derivability check later
walks down the list and keeps the first chain that derives something from the topic entity.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Sequence

from ....errors import ConfigError

__all__ = ["BatchedKnowledge", "Chain", "ChainProposal", "RelationKnowledge", "format_chain", "as_chain"]

#: A relation chain: ((relation, forward), ...); forward=False walks an edge from tail to head.
Chain = tuple[tuple[str, bool], ...]


def as_chain(steps) -> Chain:
    """Any list of (relation, forward) pairs as a hashable Chain."""
    return tuple((str(r), bool(f)) for r, f in steps)


def format_chain(chain: Sequence[tuple[str, bool]] | None) -> str:
    """`directed_by^-1 > in_language` (readable, and the key used in records)."""
    if chain is None:
        return ""
    return " > ".join(f"{r}{'' if f else '^-1'}" for r, f in chain)


@dataclass(frozen=True)
class ChainProposal:
    """One proposed chain with its support.

    score:    the source's support in [0, 1] (share of template counts, of kNN vote weight, of
              training targets) - comparable within one item, not across sources;
    source:   which knowledge and which level produced it (e.g. "lexicon:template");
    relation: for kinship, the relation the chain composes to (None for KG questions, whose
              chain is followed through a KG instead);
    evidence: small JSON-able details for the per-example record.
    """

    chain: Chain
    score: float
    source: str
    relation: str | None = None
    evidence: dict = field(default_factory=dict)

    def to_record(self) -> dict:
        out = {"chain": format_chain(self.chain), "score": round(float(self.score), 4), "source": self.source}
        if self.relation is not None:
            out["relation"] = self.relation
        if self.evidence:
            out["evidence"] = self.evidence
        return out


class RelationKnowledge(ABC):
    """Learns (or reads) relation knowledge once, then proposes ranked chains per item."""

    #: short name used in configs and records: "rules" | "lexicon" | "knn"
    name: str = "base"

    def __init__(self):
        self._fitted = False

    @abstractmethod
    def fit(self, train_items: Sequence, **kwargs) -> "RelationKnowledge":
        """Learn from training items (questions with annotated chains, or kinship stories)."""

    @abstractmethod
    def propose(self, item) -> list[ChainProposal]:
        """Ranked proposals for one item (best first; may be empty)."""

    def propose_many(self, items: Sequence) -> list[list[ChainProposal]]:
        """Proposals for many items (sources that batch, like the kNN vote, override this)."""
        return [self.propose(item) for item in items]

    def training_chains(self) -> set[Chain] | None:
        """The chains learned from training (None where the source composes chains instead, e.g. rules)."""
        return None

    def describe(self) -> dict:
        """JSON-able summary for run records."""
        return {"name": self.name}

    def _require_fitted(self) -> None:
        if not self._fitted:
            raise ConfigError(f"the {self.name} knowledge is not fitted: call .fit(train_items) first.")


class BatchedKnowledge(RelationKnowledge):
    """Relation knowledge that proposes for many items at once (`propose_many`, e.g. one embedding pass of the kNN
    vote); one item's proposals are those of a batch of one."""

    def propose(self, item) -> list[ChainProposal]:
        return self.propose_many([item])[0]

    @abstractmethod
    def propose_many(self, items: Sequence) -> list[list[ChainProposal]]:
        """Proposals for many items, in their order."""
