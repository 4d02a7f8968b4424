"""The few typed records every benchmark is loaded into, so methods never see file formats.

A KG question (MetaQA, PathQuestion), a kinship story (CLUTRR) and a passage question (HotpotQA,
MuSiQue, 2Wiki) cover all four methods; `Dataset` bundles the items of one split with what they are
answered from (a KG, a passage corpus with optional OpenIE triples, or kinship rules).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from .traits import DatasetTraits, for_kind

if TYPE_CHECKING:  # pragma: no cover
    from ..kg import KG

__all__ = ["marked_names", 
    "ChainStep", "KGQuestion", "KinshipStory", "KinshipRules", "Passage", "PassageQuestion", "Dataset",
]

#: One step of a relation path: (relation name in the KG, forward?). forward=False walks tail -> head.
ChainStep = tuple[str, bool]


@dataclass
class KGQuestion:
    """A question answered from a KG: topic entities (KG names), gold answers, gold relation path.

    `answerable` is True when every gold answer is reachable from the topic entities along the
    gold chain (or within `hops` hops when there is no chain) in the KG actually loaded; it is
    computed from the KB and the gold answers only, never from a model's output.

    The gold relation structure is one or more chains meeting at the answer. A single-chain
    question (MetaQA, PathQuestion) has `chain` and no `branches`. A conjunctive question (WC2014's
    "a player at position P in club C") has `chain=None` and `branches`: one (topic, chain) per
    path, every chain ending at the answer, so the answers are the intersection of what the
    chains reach. `gold_branches()` gives the structure of either kind in one form.
    """

    qid: str
    question: str
    topic_entities: list[str]
    answers: list[str]
    chain: list[ChainStep] | None
    hops: int
    qtype: str | None
    answerable: bool | None = None
    meta: dict = field(default_factory=dict)
    branches: list[tuple[str, list[ChainStep]]] | None = None

    @property
    def conjunctive(self) -> bool:
        """True when the answer is where several chains (from several topics) meet."""
        return bool(self.branches) and len(self.branches) > 1

    def gold_branches(self) -> list[tuple[str, list[ChainStep]]]:
        """[(topic, chain), ...] of the gold structure: the branches, or [(first topic, chain)], or []."""
        if self.branches:
            return [(str(t), list(c)) for t, c in self.branches]
        if self.chain and self.topic_entities:
            return [(self.topic_entities[0], list(self.chain))]
        return []


@dataclass
class KinshipStory:
    """A CLUTRR story: the gold relation graph behind it and the queried pair.

    Edge i goes from people[edges[i][0]] to people[edges[i][1]] with surface type edge_types[i],
    read as "people[b] is the edge_types[i] of people[a]". The target reads the same way for the
    query (x, y): "y is the target of x".
    """

    sid: str
    story: str
    query: tuple[str, str]
    target: str
    people: list[str]
    genders: dict[str, str]
    edges: list[tuple[int, int]]
    edge_types: list[str]
    chain_length: int
    meta: dict = field(default_factory=dict)


@dataclass
class KinshipRules:
    """CLUTRR's kinship world: gender-neutral relations, their compositions and inverses.

    compositions[(r1, r2)] = r means: (A r1 B) and (B r2 C) give (A r C), where (A r B) reads
    "B is the r of A" (e.g. (A child B): B is A's son or daughter). `surface_to_relation` maps the
    gendered words of the stories (son, aunt, ...) to these relations; `relation_to_surface`
    maps (relation, gender of the second person) back to the word.
    """

    compositions: dict[tuple[str, str], str]
    inverse: dict[str, str]
    symmetric: set[str]
    relations: list[str]
    surface_to_relation: dict[str, str]
    relation_to_surface: dict[tuple[str, str], str] = field(default_factory=dict)

    def compose(self, r1: str, r2: str) -> str | None:
        """The relation of (A, C) given (A r1 B) and (B r2 C), or None when no rule applies."""
        return self.compositions.get((r1, r2))

    def relation_of(self, surface: str) -> str | None:
        """Gender-neutral relation of a surface word such as 'grandmother' (None if unknown)."""
        return self.surface_to_relation.get(surface.strip().lower())

    def surface(self, relation: str, gender: str) -> str | None:
        """The gendered word for a relation, given the gender ('male'/'female') of the relative."""
        return self.relation_to_surface.get((relation, gender.strip().lower()))


@dataclass
class Passage:
    """One retrievable passage. `pid` is stable across runs (a title, or title + '#' + text hash)."""

    pid: str
    title: str
    text: str
    sentences: list[str] | None = None


@dataclass
class PassageQuestion:
    """A multi-hop question over passages: answers[0] is the main answer, the rest aliases.

    `paragraphs` are the question's own candidate passages (empty when the dataset has none);
    `supporting` holds the pids of the gold passages and `supporting_titles` their titles.
    """

    qid: str
    question: str
    answers: list[str]
    paragraphs: list[Passage]
    supporting: list[str]
    supporting_titles: list[str]
    qtype: str | None
    meta: dict = field(default_factory=dict)


@dataclass
class Dataset:
    """The items of one split plus what answers them: a KG, a passage corpus or kinship rules."""

    name: str
    kind: str  # "kgqa" | "kinship" | "passages"
    split: str
    items: list
    kg: "KG | None" = None
    corpus: list[Passage] | None = None
    triples: dict[str, list[tuple[str, str, str]]] | None = None  # OpenIE triples per passage id
    rules: KinshipRules | None = None
    source: str = "real"  # "real" | "sample" (generated, sample-*) | "fixture" (released format, fixture-*)
    root: Path | None = None
    info: dict = field(default_factory=dict)
    #: what the methods need to know about it (datasets/traits.py): its registered spec's, else its kind's defaults
    traits: DatasetTraits | None = None

    def __post_init__(self):
        if self.traits is None:
            self.traits = for_kind(self.kind)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator:
        return iter(self.items)

    def __getitem__(self, index):
        return self.items[index]

    def __repr__(self) -> str:
        extra = []
        if self.kg is not None:
            extra.append(f"kg={self.kg.num_edges:,} facts")
        if self.corpus is not None:
            extra.append(f"corpus={len(self.corpus):,} passages")
        if self.rules is not None:
            extra.append(f"rules={len(self.rules.compositions)} compositions")
        tail = ", " + ", ".join(extra) if extra else ""
        return (f"Dataset(name={self.name!r}, split={self.split!r}, kind={self.kind!r}, "
                f"source={self.source!r}, items={len(self.items):,}{tail})")

    @property
    def answerable_rate(self) -> float | None:
        """Share of KG questions whose answers are reachable in the loaded KG (None if not computed)."""
        flags = [getattr(q, "answerable", None) for q in self.items]
        known = [f for f in flags if f is not None]
        if not known:
            return None
        return sum(bool(f) for f in known) / len(known)


_MARKED = re.compile(r"\[([^\[\]]+)\]")


def unmarked(question: str) -> str:
    """The question with its [brackets] taken off the names they mark (as a person would write it)."""
    return _MARKED.sub(lambda m: m.group(1), question or "")


def marked_names(question: str) -> list[str]:
    """The names a question marks in [brackets] (MetaQA's convention), in order, each once."""
    out: list[str] = []
    for m in _MARKED.finditer(question or ""):
        name = m.group(1).strip()
        if name and name not in out:
            out.append(name)
    return out
