"""Compact relation selection - kinship rules: CKY composition over story walks and paths,
ambiguity with its stated tie-break, the rule check against data, and the consistency signals."""

from __future__ import annotations

import pytest

from kgrag_utils.datasets.items import KinshipRules, KinshipStory
from kgrag_utils.errors import ConfigError
from kgrag_utils.methods.compact import KinshipRuleKnowledge, compose_cky
from kgrag_utils.methods.compact.stages.rules import check_rules, story_graph
from kgrag_utils.methods.compact.stages.checks import kinship_consistency

# CLUTRR's rules_store.yaml (family domain), as the loader reads it
COMPOSITIONS = {
    ("child", "child"): "grand", ("child", "SO"): "in-law", ("child", "sibling"): "child",
    ("child", "inv-un"): "sibling", ("child", "inv-grand"): "inv-child",
    ("inv-child", "child"): "sibling", ("inv-child", "inv-child"): "inv-grand", ("inv-child", "sibling"): "inv-un",
    ("SO", "inv-child"): "inv-in-law", ("SO", "grand"): "grand", ("SO", "child"): "child",
    ("sibling", "sibling"): "sibling", ("sibling", "inv-grand"): "inv-grand", ("sibling", "child"): "un",
    ("sibling", "inv-child"): "inv-child", ("grand", "sibling"): "grand",
}
SURFACE = {
    ("child", "male"): "son", ("child", "female"): "daughter", ("inv-child", "male"): "father",
    ("inv-child", "female"): "mother", ("SO", "male"): "husband", ("SO", "female"): "wife",
    ("sibling", "male"): "brother", ("sibling", "female"): "sister", ("grand", "male"): "grandson",
    ("grand", "female"): "granddaughter", ("inv-grand", "male"): "grandfather", ("inv-grand", "female"): "grandmother",
    ("in-law", "male"): "son-in-law", ("in-law", "female"): "daughter-in-law",
    ("inv-in-law", "male"): "father-in-law", ("inv-in-law", "female"): "mother-in-law",
    ("un", "male"): "nephew", ("un", "female"): "niece", ("inv-un", "male"): "uncle", ("inv-un", "female"): "aunt",
}


@pytest.fixture
def rules() -> KinshipRules:
    inverse = {"child": "inv-child", "inv-child": "child", "grand": "inv-grand", "inv-grand": "grand",
               "un": "inv-un", "inv-un": "un", "in-law": "inv-in-law", "inv-in-law": "in-law",
               "sibling": "sibling", "SO": "SO"}
    return KinshipRules(compositions=dict(COMPOSITIONS), inverse=inverse, symmetric={"sibling", "SO"},
                        relations=sorted({r for r, _ in SURFACE}),
                        surface_to_relation={w: r for (r, _), w in SURFACE.items()},
                        relation_to_surface=dict(SURFACE))


def story(edge_types, edges=None, query=None, people=None, target="", genders=None, sid="s") -> KinshipStory:
    n = len(edge_types)
    people = people or [f"P{i}" for i in range(n + 1)]
    edges = edges or [(i, i + 1) for i in range(n)]
    query = query or (people[0], people[-1])
    genders = genders or {p: "female" for p in people}
    return KinshipStory(sid=sid, story="", query=query, target=target, people=people, genders=genders,
                        edges=edges, edge_types=list(edge_types), chain_length=n)


def test_cky_composes_over_every_split_point(rules):
    table = compose_cky(["inv-child", "inv-child", "sibling"], rules)
    # (inv-child o inv-child) o sibling = inv-grand o sibling: no rule; inv-child o (inv-child o sibling) = inv-child o inv-un: no rule
    assert table[0][3] == {}
    table = compose_cky(["sibling", "inv-child", "sibling"], rules)
    # (sibling o inv-child) o sibling = inv-child o sibling = inv-un; sibling o (inv-child o sibling) = sibling o inv-un: no rule
    assert dict(table[0][3]) == {"inv-un": 1}
    assert dict(table[0][2]) == {"inv-child": 1} and dict(table[1][3]) == {"inv-un": 1}


def test_story_walk_may_revisit_a_person(rules):
    # CLUTRR's walks revisit people: sister, mother, daughter, uncle (P1 twice). The shortest
    # graph path (sibling, inv-un) composes to nothing; the story's own walk derives inv-un.
    s = story(["sister", "mother", "daughter", "uncle"], edges=[(0, 1), (1, 2), (2, 1), (1, 3)],
              people=["X", "S", "M", "U"], query=("X", "U"), target="uncle", genders={"U": "male"})
    k = KinshipRuleKnowledge(rules)
    d = k.derive(s)
    assert [st[1] for st in d.paths[0]] == ["sibling", "inv-child", "child", "inv-un"]
    assert d.ranked[0] == "inv-un"
    assert k.surface(d.ranked[0], "male") == "uncle"
    assert any([st[1] for st in p] == ["sibling", "inv-un"] for p in d.paths[1:])  # the graph path, tried second


def test_backward_edges_use_the_inverse_relation(rules):
    # edge (1, 0) 'son' says X is the son of F: walking F <- X backwards is X's inv-child (father)
    s = story(["son", "sister"], edges=[(1, 0), (1, 2)], people=["X", "F", "A"], query=("X", "A"), target="aunt")
    d = KinshipRuleKnowledge(rules).derive(s)
    assert [st[1] for st in d.paths[0]] == ["inv-child", "sibling"]
    assert d.ranked == ["inv-un"]


def test_ambiguity_is_reported_and_broken_by_the_training_prior(rules):
    amb = story(["wife", "son", "grandmother"], target="mother-in-law")
    k = KinshipRuleKnowledge(rules)
    d = k.derive(amb)
    assert set(d.candidates) == {"inv-child", "inv-in-law"} and d.ambiguous
    assert d.ranked == ["inv-child", "inv-in-law"]  # no prior: equal trees, then the name
    report = kinship_consistency(d)
    assert report.applicable["ambiguous_composition"] and not report.consistent
    assert report.conflicts["ambiguous_composition"] == ["inv-child", "inv-in-law"]
    train = [story(["wife", "son", "grandmother"], target="mother-in-law", sid=f"t{i}") for i in range(3)]
    train += [story(["wife", "son", "grandmother"], target="mother", sid="t9")]
    k.fit(train)
    assert k.derive(amb).ranked[0] == "inv-in-law"
    props = k.propose(amb)
    assert [p.relation for p in props] == ["inv-in-law", "inv-child"]
    assert props[0].evidence["train_prior"] == 3


def test_second_path_that_disagrees_is_a_conflict(rules):
    # X's father F, whose brother is U (U is X's uncle); and X's mother M has U as a *son* (so U
    # would be X's brother): two paths join X and U with different relations
    s = story(["father", "brother", "mother", "son"], edges=[(0, 1), (1, 2), (0, 3), (3, 2)],
              people=["X", "F", "U", "M"], query=("X", "U"))
    d = KinshipRuleKnowledge(rules).derive(s)
    assert len(d.paths) == 2 and d.paths_disagree
    report = kinship_consistency(d)
    assert report.applicable["second_path"] and report.conflicts["second_path"]


def test_rule_check_against_two_edge_stories(rules):
    good = story(["sister", "son"], target="nephew")  # sibling o child = un
    bad = story(["sister", "son"], target="son", sid="b")
    unknown = story(["cousin", "son"], target="son", sid="c")
    out = check_rules([good, bad, unknown, story(["sister", "son", "son"])], rules)
    assert out["agree"] == 1 and out["disagree"] == 1 and out["no_rule"] == 1 and out["two_edge_stories"] == 3
    graph = story_graph(unknown, rules)
    assert graph.unknown == ["cousin"] and len(graph.facts) == 1


def test_rules_are_required(rules):
    with pytest.raises(ConfigError):
        KinshipRuleKnowledge(None)
