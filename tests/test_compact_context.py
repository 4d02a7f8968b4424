"""Compact relation selection - contexts, checks, gate and prompts on a toy movie KG."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kgrag_utils.datasets.items import KGQuestion
from kgrag_utils.embeddings import Embedder
from kgrag_utils.errors import ConfigError
from kgrag_utils.kg import KG
from kgrag_utils.methods.compact.stages.knowledge import ChainProposal
from kgrag_utils.methods.compact import CompactConfig, gate_table
from kgrag_utils.methods.compact.stages.gate import choose_gate, gate_passes
from kgrag_utils.methods.compact.stages.context import compact_context, path_support, topk_context
from kgrag_utils.methods.compact.stages.checks import (context_derivation, functional_relations, kg_consistency,
                                                select_derivable)
from kgrag_utils.methods.compact.prompts import kgqa_prompt, kinship_prompt, parse_answers, parse_kinship_answer
from kgrag_utils.methods.compact.stages.context import choose_topic_policy, follow_chain
from stand_ins import HashBOW

TRIPLES = [
    ("Heat", "directed_by", "Mann"), ("Collateral", "directed_by", "Mann"), ("Thief", "directed_by", "Mann"),
    ("Heat", "starred_actors", "Pacino"), ("Heat", "starred_actors", "De Niro"),
    ("Collateral", "starred_actors", "Cruise"), ("Thief", "starred_actors", "Caan"),
    ("Heat", "release_year", "1995"), ("Collateral", "release_year", "2004"), ("Thief", "release_year", "1981"),
    ("Thief", "release_year", "1982"),  # a second year for a functional relation: a conflict
    ("Heat", "in_language", "English"), ("Collateral", "in_language", "English"), ("Thief", "in_language", "English"),
    ("Ronin", "starred_actors", "De Niro"), ("Ronin", "release_year", "1998"), ("Ronin", "directed_by", "Frankenheimer"),
    ("Lonely", "directed_by", "Nobody"),
]


@pytest.fixture
def kg() -> KG:
    return KG.from_triples(TRIPLES, name="toy")


def ids(kg, *names):
    return [kg.entity_id(n) for n in names]


def names(kg, arr):
    return sorted(str(x) for x in kg.entity_names[np.asarray(arr, dtype=np.int64)])


DIR_YEAR = (("directed_by", False), ("release_year", True))


def test_compact_context_keeps_complete_paths_and_ranks_answers_by_support(kg):
    ctx = compact_context(kg, ids(kg, "Mann"), DIR_YEAR, max_facts=None)
    assert ctx.derivable and not ctx.capped
    assert names(kg, ctx.answers) == ["1981", "1982", "1995", "2004"]
    assert ctx.n_facts == 3 + 4  # three films of Mann and their four year facts
    # the English facts are not on a path of this chain
    assert not any(r == "in_language" for _, r, _ in kg.triples(ctx.edge_ids))
    # support: one path each
    ents, counts = path_support(kg, DIR_YEAR, follow_chain(kg, ids(kg, "Mann"), DIR_YEAR))
    assert names(kg, ents) == ["1981", "1982", "1995", "2004"] and set(counts.tolist()) == {1.0}
    ctx = compact_context(kg, ids(kg, "Mann"), (("directed_by", False), ("in_language", True)), max_facts=None)
    assert names(kg, ctx.answers) == ["English"] and ctx.support.tolist() == [3.0]


def test_cap_keeps_whole_paths_and_prefers_shared_prefixes(kg):
    ctx = compact_context(kg, ids(kg, "Mann"), DIR_YEAR, max_facts=5)
    assert ctx.capped and ctx.n_facts == 5 and ctx.n_facts_full == 7
    triples = kg.triples(ctx.edge_ids)
    films = {h for h, r, _ in triples if r == "release_year"}
    # every year fact kept has its directed_by fact kept: whole paths only
    assert films <= {h for h, r, _ in triples if r == "directed_by"}
    # answers in support-then-name order: 1981 (Thief: 2 facts), 1982 (shares Thief's directed_by:
    # +1 fact), 1995 (Heat: +2 = 5 facts); 2004 would need 7 and is skipped
    assert names(kg, ctx.answers_in_context) == ["1981", "1982", "1995"]
    four = compact_context(kg, ids(kg, "Mann"), DIR_YEAR, max_facts=4)
    assert four.n_facts == 3 and names(kg, four.answers_in_context) == ["1981", "1982"]
    one = compact_context(kg, ids(kg, "Mann"), DIR_YEAR, max_facts=1)
    assert one.n_facts == 2 and one.answers_in_context.size == 1  # the first path is always kept whole
    with pytest.raises(ConfigError):
        compact_context(kg, ids(kg, "Mann"), DIR_YEAR, max_facts=-1)


def test_topic_policies(kg):
    co_star = (("starred_actors", False), ("starred_actors", True))
    start = ids(kg, "De Niro")
    assert "De Niro" in names(kg, follow_chain(kg, start, co_star, "walk").reached)
    assert "De Niro" not in names(kg, follow_chain(kg, start, co_star, "exclude_end").reached)
    # 3 hops: films sharing a director with Heat, then their years; "avoid" drops Heat itself
    share = (("directed_by", True), ("directed_by", False), ("release_year", True))
    walk = names(kg, follow_chain(kg, ids(kg, "Heat"), share, "exclude_end").reached)
    avoid = names(kg, follow_chain(kg, ids(kg, "Heat"), share, "avoid").reached)
    assert "1995" in walk and "1995" not in avoid and avoid == ["1981", "1982", "2004"]
    assert follow_chain(kg, ids(kg, "Heat"), (("no_such_relation", True),)).reached.size == 0
    with pytest.raises(ConfigError):
        follow_chain(kg, ids(kg, "Heat"), share, "sideways")
    qs = [KGQuestion("a", "q", ["Heat"], ["1981", "1982", "2004"], list(share), 3, None),
          KGQuestion("b", "q", ["Collateral"], ["1981", "1982", "1995"], list(share), 3, None)]
    policy, table = choose_topic_policy(kg, qs)
    assert policy == "avoid" and {r["policy"] for r in table} == {"walk", "exclude_end", "avoid"}


def test_derivability_check_walks_the_proposals(kg):
    props = [ChainProposal((("written_by", False), ("release_year", True)), 0.6, "lexicon:template"),
             ChainProposal(DIR_YEAR, 0.3, "lexicon:template"),
             ChainProposal((("directed_by", False), ("in_language", True)), 0.1, "lexicon:skeleton")]
    sel = select_derivable(kg, ids(kg, "Mann"), props, max_candidates=5)
    assert sel.derivable and sel.index == 1 and sel.proposal.chain == DIR_YEAR
    assert [t["derivable"] for t in sel.tried] == [False, True, True]
    none = select_derivable(kg, ids(kg, "Mann"), props[:1])
    assert not none.derivable and none.proposal is None
    assert not select_derivable(kg, [], props).derivable


def test_context_derivation_uses_only_the_given_facts(kg):
    ctx = compact_context(kg, ids(kg, "Mann"), DIR_YEAR, max_facts=None)
    assert context_derivation(kg, ["Mann"], DIR_YEAR, ctx.edge_ids) == ["1981", "1982", "1995", "2004"]
    years_only = [e for e in ctx.edge_ids if kg.triples([e])[0][1] == "release_year"]
    assert context_derivation(kg, ["Mann"], DIR_YEAR, years_only) == []  # no directed_by fact: no derivation
    assert context_derivation(kg, ["Mann"], DIR_YEAR, []) == []


def test_consistency_signals(kg):
    assert kg.relation_id("release_year") not in functional_relations(kg)  # Thief has two years... of 4 films
    big = KG.from_triples(TRIPLES + [(f"F{i}", "release_year", str(1900 + i)) for i in range(200)], name="big")
    functional = functional_relations(big)
    assert big.relation_id("release_year") in functional and big.relation_id("starred_actors") not in functional
    ctx = compact_context(big, ids(big, "Mann"), DIR_YEAR, max_facts=None)
    props = [ChainProposal(DIR_YEAR, 0.7, "lexicon:template"),
             ChainProposal((("directed_by", False), ("in_language", True)), 0.3, "lexicon:template")]
    sel = select_derivable(big, ids(big, "Mann"), props)
    report = kg_consistency(big, sel, ctx.edge_ids)
    assert report.applicable == {"rival_derivations": True, "functional_conflict": True}
    assert report.conflicts["functional_conflict"] == ["Thief release_year: 1981 / 1982"]
    assert report.conflicts["rival_derivations"] == ["directed_by^-1 > in_language"]
    assert not report.consistent
    # a weak rival (below rival_min_score) or a fallback proposal does not count
    weak = select_derivable(big, ids(big, "Mann"), [props[0], ChainProposal(props[1].chain, 0.05, "lexicon:template")])
    assert not kg_consistency(big, weak, []).applicable["rival_derivations"]




def test_topk_baseline_ranks_neighbourhood_facts_by_similarity(kg):
    emb = Embedder(model=HashBOW(), model_id="hash-bow-compact-ctx", cache=False)
    ranked = topk_context(kg, "when were the films directed by Mann released year", ids(kg, "Mann"), 2, emb, k=5)
    assert ranked.n_facts == 5 and ranked.pool_size == kg.khop_edges(ids(kg, "Mann"), 2).size
    assert np.all(np.diff(ranked.scores) <= 1e-6)  # best first
    assert kg.triples(ranked.edge_ids[:1])[0][1] in ("release_year", "directed_by")
    small = topk_context(kg, "x", ids(kg, "Mann"), 2, emb, k=100, pool=4)
    assert small.pool_size == 4 and small.n_facts == 4
    assert topk_context(kg, "x", [], 2, emb).n_facts == 0
    with pytest.raises(ConfigError):
        topk_context(kg, "x", ids(kg, "Mann"), 2, emb, k=0)


def test_gate_choice_on_validation():
    recs = ([{"derivable": True, "consistent": True, "n_derived": 1, "derived_correct": True}] * 8
            + [{"derivable": True, "consistent": True, "n_derived": 5, "derived_correct": False}] * 4
            + [{"derivable": True, "consistent": False, "n_derived": 1, "derived_correct": False}] * 1
            + [{"derivable": False, "consistent": True, "n_derived": 0, "derived_correct": False}] * 7)
    table = {r["gate"]: r for r in gate_table(recs)}
    assert table["derivable"]["coverage"] == pytest.approx(13 / 20) and table["derivable"]["precision"] == pytest.approx(8 / 13)
    assert table["consistent+unique"]["precision"] == 1.0 and table["unique"]["precision"] == pytest.approx(8 / 9)
    assert math.isnan(table["never"]["precision"])
    assert choose_gate(recs, 0.85).name == "unique"           # widest with precision >= 0.85
    # consistent+max3 and consistent+unique pass the same 8 items here: the tie goes to the less strict rule
    assert choose_gate(recs, 0.95).name == "consistent+max3"
    assert choose_gate(recs, 0.5).name == "derivable"
    none = [{"derivable": True, "consistent": True, "n_derived": 1, "derived_correct": False}] * 3
    assert choose_gate(none, 0.9).name != "never"  # nothing reaches the target: the most precise (all 0) is kept
    assert choose_gate([], 0.9).name == "never"
    backoff = {"derivable": True, "consistent": True, "n_derived": 2, "chain_source": "lexicon:fallback"}
    assert gate_passes("derivable", backoff) and not gate_passes("supported", backoff)
    assert gate_passes("supported", {**backoff, "chain_source": "lexicon:template"})
    assert gate_passes("unique", {"derivable": True, "n_derived": 1})
    with pytest.raises(ConfigError):
        gate_passes("sometimes", {})
    with pytest.raises(ConfigError):
        choose_gate(recs, 0.0)


def test_prompts_and_parsers():
    p = kgqa_prompt("who directed [Heat]", [("Heat", "directed_by", "Mann")])
    assert "(Heat, directed_by, Mann)" in p and p.endswith("Question: who directed Heat?\nAnswer:")
    assert "(no facts)" in kgqa_prompt("q", [])
    assert parse_answers("Answer: Mann | Frankenheimer") == ["Mann", "Frankenheimer"]
    assert parse_answers("1. Mann\n2. Frankenheimer.") == ["Mann", "Frankenheimer"]
    known = {"Crouching Tiger, Hidden Dragon", "Heat"}
    assert parse_answers("Crouching Tiger, Hidden Dragon", known) == ["Crouching Tiger, Hidden Dragon"]
    assert parse_answers("Heat, Thief", known) == ["Heat", "Thief"]
    assert parse_answers("") == [] and parse_answers(None) == []
    vocab = ["son", "daughter", "granddaughter", "mother-in-law", "mother"]
    assert parse_kinship_answer("She is his granddaughter.", vocab) == "granddaughter"
    assert parse_kinship_answer("mother-in-law", vocab) == "mother-in-law"
    assert parse_kinship_answer("no idea", vocab) is None
    kp = kinship_prompt("X", "Y", ["Y is the son of X."], vocab)
    assert "How is Y related to X?" in kp and "granddaughter" in kp


def test_config_validation():
    cfg = CompactConfig()
    assert cfg.contexts() == ("compact", "topk")
    assert cfg.replace(context="compact").contexts() == ("compact",)
    for bad in ({"knowledge": "oracle"}, {"context": "all"}, {"gate": "sometimes"}, {"lift_threshold": 0.5},
                {"knn_k": 0}, {"max_facts": -1}, {"validation_fraction": 1.0}):
        with pytest.raises(ConfigError):
            cfg.replace(**bad)
    with pytest.raises(ConfigError):
        cfg.replace(no_such_knob=1)
