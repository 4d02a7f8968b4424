"""Hand-written relation knowledge: CLUTRR's kinship rules applied to a story graph.

Orientation (checked on the data, see `check_rules`): a story edge (a, b) of type `son` reads
"b is the son of a", i.e. (a child b) in the store's gender-neutral relations; the query (x, y)
with target t reads "y is the t of x". So surface words map straight onto store relations
(son/daughter -> child, father/mother -> inv-child, husband/wife -> SO, ...), and a story edge
walked backwards is its inverse relation (child <-> inv-child; sibling and SO are symmetric).

Derivation: take the paths from x to y - first the story's own edge chain when its edges form a
walk from x to y (CLUTRR's are such walks and may revisit a person: sister, mother, daughter,
uncle), then simple paths of the graph, shortest first - and compose each path's relations
bottom-up over every split point (CKY): cell (i, j) holds every relation the rules derive for
the sub-path i..j, with the number of derivation trees giving it. The store has only 2-step
rules, so a relation is derived for a path when some bracketing composes all the way.

Ambiguity is real: [wife, son, grandmother] is (SO o child) o inv-grand = inv-child ("mother")
or SO o (child o inv-grand) = inv-in-law ("mother-in-law"), and CLUTRR's own targets say both.
The consistency check reports it; the tie-break is stated and learned, never hidden:
  1. how often each candidate was the target of the same relation sequence in training stories,
  2. then the number of derivation trees,
  3. then the relation name (determinism).
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from typing import Sequence

from ....errors import ConfigError
from .knowledge import Chain, ChainProposal, RelationKnowledge

__all__ = ["KinshipDerivation", "KinshipRuleKnowledge", "StoryGraph", "compose_cky", "story_graph", "check_rules"]


@dataclass
class StoryGraph:
    """A story's people and its facts as gender-neutral relations: (a, relation, b) = "b is a's relation"."""

    people: list[str]
    facts: list[tuple[str, str, str]]
    surface: list[tuple[str, str, str]]  # every story fact with the story's word (son, aunt, ...)
    source: list[int] = field(default_factory=list)   # facts[i] comes from surface[source[i]]
    unknown: list[str] = field(default_factory=list)  # surface words the rules do not know

    def neighbours(self, rules) -> dict[str, list[tuple[str, str, int, bool]]]:
        """person -> [(other, relation seen from person, surface fact index, forward)] (both ways)."""
        adj: dict[str, list[tuple[str, str, int, bool]]] = defaultdict(list)
        for i, (a, r, b) in zip(self.source, self.facts):
            adj[a].append((b, r, i, True))
            inv = rules.inverse.get(r)
            if inv is not None:
                adj[b].append((a, inv, i, False))
        return adj


def story_graph(story, rules) -> StoryGraph:
    """The gold relation graph of a KinshipStory in store relations."""
    facts, surface, source, unknown = [], [], [], []
    for i, ((a, b), word) in enumerate(zip(story.edges, story.edge_types)):
        pa, pb = story.people[a], story.people[b]
        rel = rules.relation_of(word)
        surface.append((pa, word, pb))
        if rel is None:
            unknown.append(word)
            continue
        facts.append((pa, rel, pb))
        source.append(i)
    return StoryGraph(people=list(story.people), facts=facts, surface=surface, source=source, unknown=unknown)


def compose_cky(relations: Sequence[str], rules) -> list[list[Counter]]:
    """CKY table: table[i][j] (j > i) counts the derivation trees of each relation for steps i..j-1."""
    n = len(relations)
    table: list[list[Counter]] = [[Counter() for _ in range(n + 1)] for _ in range(n + 1)]
    for i, r in enumerate(relations):
        table[i][i + 1][r] += 1
    for span in range(2, n + 1):
        for i in range(0, n - span + 1):
            j = i + span
            cell = table[i][j]
            for k in range(i + 1, j):
                for r1, n1 in table[i][k].items():
                    for r2, n2 in table[k][j].items():
                        r = rules.compose(r1, r2)
                        if r is not None:
                            cell[r] += n1 * n2
    return table


@dataclass
class KinshipDerivation:
    """What the rules derive for one story's query pair."""

    paths: list[list[tuple[str, str, str, int, bool]]]  # per path: (from, relation, to, fact index, forward)
    candidates: Counter                                 # relation -> derivation trees, over all paths
    per_path: list[Counter]                             # the same per path
    ranked: list[str]                                   # candidates after the tie-break
    prior: dict                                         # training counts used by the tie-break
    ambiguous_spans: int                                # sub-path cells with more than one relation

    @property
    def derivable(self) -> bool:
        return bool(self.ranked)

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1

    @property
    def paths_disagree(self) -> bool:
        """Two paths join the query pair and derive different relation sets."""
        sets = {frozenset(c) for c in self.per_path if c}
        return len(sets) > 1


class KinshipRuleKnowledge(RelationKnowledge):
    """Kinship rules over story graphs; training stories only supply the tie-break prior."""

    name = "rules"

    def __init__(self, rules, max_path_length: int = 10, max_paths: int = 8):
        super().__init__()
        if rules is None or not getattr(rules, "compositions", None):
            raise ConfigError("kinship rules are missing: load a dataset of kind 'kinship' (`kgrag data list`) for its rules.")
        self.rules = rules
        self.max_path_length = int(max_path_length)
        self.max_paths = int(max_paths)
        self.prior: dict[tuple[str, ...], Counter] = {}
        self.rule_check: dict = {}
        self._fitted = True  # the rules themselves need no training

    def fit(self, train_items: Sequence = (), **_) -> "KinshipRuleKnowledge":
        """Count targets per relation sequence of the training stories (the tie-break prior)."""
        prior: dict[tuple[str, ...], Counter] = defaultdict(Counter)
        for story in train_items:
            graph = story_graph(story, self.rules)
            target = self.rules.relation_of(story.target)
            if graph.unknown or target is None:
                continue
            for path in self.all_paths(story, graph)[:1]:
                prior[tuple(step[1] for step in path)][target] += 1
        self.prior = dict(prior)
        self.rule_check = check_rules(train_items, self.rules)
        return self

    # ------------------------------------------------------------------ paths and derivations
    def paths(self, graph: StoryGraph, source: str, target: str) -> list[list[tuple[str, str, str, int, bool]]]:
        """Simple paths source -> target, shortest first (at most `max_paths`, each <= max_path_length)."""
        adj = graph.neighbours(self.rules)
        found: list[list[tuple[str, str, str, int, bool]]] = []
        queue: deque = deque([(source, [], {source})])
        while queue and len(found) < self.max_paths:
            node, path, visited = queue.popleft()
            if node == target and path:
                found.append(path)
                continue
            if len(path) >= self.max_path_length:
                continue
            for other, rel, idx, forward in adj.get(node, ()):
                if other in visited:
                    continue
                queue.append((other, path + [(node, rel, other, idx, forward)], visited | {other}))
        return found

    def story_walk(self, story, graph: StoryGraph) -> list[tuple[str, str, str, int, bool]] | None:
        """The story's edges in their given order, when they form a walk from x to y (else None)."""
        x, y = story.query
        if graph.unknown or not graph.facts or len(graph.facts) != len(story.edges):
            return None
        walk, at = [], x
        for idx, (a, rel, b) in zip(graph.source, graph.facts):
            if a == at:
                walk.append((a, rel, b, idx, True))
                at = b
            elif b == at and self.rules.inverse.get(rel):
                walk.append((b, self.rules.inverse[rel], a, idx, False))
                at = a
            else:
                return None
        return walk if at == y else None

    def all_paths(self, story, graph: StoryGraph) -> list[list[tuple[str, str, str, int, bool]]]:
        """The story walk (when there is one) followed by the graph's simple paths x -> y."""
        walk = self.story_walk(story, graph)
        paths = [walk] if walk else []
        for p in self.paths(graph, *story.query):
            if len(paths) >= self.max_paths:
                break
            if p != walk:
                paths.append(p)
        return paths

    def derive(self, story) -> KinshipDerivation:
        """Compose every path between the query people and rank the derived relations."""
        graph = story_graph(story, self.rules)
        paths = self.all_paths(story, graph)
        per_path, total, ambiguous_spans = [], Counter(), 0
        for path in paths:
            rels = [step[1] for step in path]
            table = compose_cky(rels, self.rules)
            root = table[0][len(rels)]
            per_path.append(root)
            total.update(root)
            ambiguous_spans += sum(1 for i in range(len(rels)) for j in range(i + 2, len(rels) + 1) if len(table[i][j]) > 1)
        prior = Counter()
        for path in paths:
            prior.update(self.prior.get(tuple(step[1] for step in path), Counter()))
        ranked = sorted(total, key=lambda r: (-prior.get(r, 0), -total[r], r))
        return KinshipDerivation(paths=paths, candidates=total, per_path=per_path, ranked=ranked,
                                 prior={r: int(prior.get(r, 0)) for r in total}, ambiguous_spans=ambiguous_spans)

    def propose(self, item) -> list[ChainProposal]:
        """One proposal per derived relation (tie-break order); the chain is the first path."""
        d = self.derive(item)
        if not d.paths:
            return []
        chain: Chain = tuple((step[1], True) for step in d.paths[0])
        trees = sum(d.candidates.values()) or 1
        return [ChainProposal(chain, d.candidates[r] / trees, "rules", relation=r,
                              evidence={"trees": int(d.candidates[r]), "train_prior": d.prior.get(r, 0)})
                for r in d.ranked]

    def surface(self, relation: str, gender: str) -> str | None:
        return self.rules.surface(relation, gender)

    def describe(self) -> dict:
        return {"name": self.name, "compositions": len(self.rules.compositions),
                "prior_sequences": len(self.prior), "rule_check": self.rule_check}


def check_rules(stories: Sequence, rules) -> dict:
    """Do the store's rules (and orientation) reproduce the targets of 2-edge training stories?

    Returns counts: agree / disagree / no_rule, and the disagreeing (r1, r2) -> target pairs.
    """
    agree = disagree = no_rule = 0
    conflicts: Counter = Counter()
    for s in stories:
        if len(s.edge_types) != 2:
            continue
        r1, r2 = (rules.relation_of(t) for t in s.edge_types)
        target = rules.relation_of(s.target)
        if None in (r1, r2, target):
            no_rule += 1
            continue
        derived = rules.compose(r1, r2)
        if derived is None:
            no_rule += 1
        elif derived == target:
            agree += 1
        else:
            disagree += 1
            conflicts[f"{r1} o {r2} -> {derived} (data: {target})"] += 1
    return {"two_edge_stories": agree + disagree + no_rule, "agree": agree, "disagree": disagree,
            "no_rule": no_rule, "conflicts": dict(conflicts.most_common(10))}
