"""Compact relation selection - relation knowledge: the lift lexicon (alignment, templates,
backoff, threshold) and the kNN vote, on tiny hand-made question sets."""

from __future__ import annotations

import re

import pytest

from kgrag_utils.datasets.items import KGQuestion
from kgrag_utils.embeddings import Embedder
from kgrag_utils.errors import ConfigError
from kgrag_utils.methods.compact.stages.knn import KNNVote
from kgrag_utils.methods.compact.stages.lexicon import LiftLexicon, align_counts, mask_topic, question_tokens
from kgrag_utils.methods.compact.stages.knowledge import as_chain
from kgrag_utils.methods.compact import format_chain
from stand_ins import HashBOW

NAMES = ["Ann Lee", "Bo Park", "Cy Tan", "Di Roe", "Ed Fox", "Fay Ng", "Gil Ma", "Hu Wu", "Ivo Ek", "Jo Ky"]

ACT_DIR = [("starred_actors", False), ("directed_by", True)]
DIR_ACT = [("directed_by", False), ("starred_actors", True)]
WRI_DIR = [("written_by", False), ("directed_by", True)]
ACT_WRI = [("starred_actors", False), ("written_by", True)]
DIR_LANG = [("directed_by", False), ("in_language", True)]


def q(text: str, chain, i: int = 0) -> KGQuestion:
    topic = re.search(r"\[([^\]]+)\]", text).group(1)
    return KGQuestion(qid=f"q{i}", question=text, topic_entities=[topic], answers=["x"], chain=list(chain),
                      hops=len(chain), qtype=None)


def movie_questions() -> list[KGQuestion]:
    """Templated 2-hop questions where only word order tells two chains apart."""
    out = []
    for i, n in enumerate(NAMES):
        out += [
            q(f"who directed the films acted by [{n}]", ACT_DIR, i),
            q(f"who acted in the films directed by [{n}]", DIR_ACT, i),
            q(f"who directed the films written by [{n}]", WRI_DIR, i),
            q(f"who wrote the films acted by [{n}]", ACT_WRI, i),
            q(f"what languages are the films directed by [{n}] in", DIR_LANG, i),
        ]
    return out


def test_tokens_mask_the_topic_and_split_possessives():
    assert question_tokens("who directed the films acted by [Ann Lee]") == \
        ["who", "directed", "the", "films", "acted", "by", "<X>"]
    # PathQuestion style: the topic is a plain (underscored) name inside the text
    assert question_tokens("what is louis_xiv 's kid 's job ?", ["louis_xiv"]) == ["what", "is", "<X>", "'s", "kid", "'s", "job"]
    assert "[X]" in mask_topic("films by [Ann Lee]", ["Ann Lee"], mark="[X]")
    assert mask_topic("Who is ANN LEE", ["Ann Lee"], mark="<X>").split() == ["Who", "is", "<X>"]


def test_alignment_finds_cues_of_relations_present_in_most_chains():
    # 'children' is in 80% of the chains, so over whole questions P(children | kid) / P(children)
    # is only 1.25 and a bag-of-relations lexicon drops 'kid' at threshold 1.5; the aligned
    # counts still tie 'kid' to children, and 'nation' / 'job' / 'wife' to their relations.
    qs = []
    for i, n in enumerate(NAMES):
        t = n.replace(" ", "_").lower()
        qs.append(KGQuestion(f"a{i}", f"{t} 's kid 's nation ?", [t], ["x"], [("children", True), ("nationality", True)], 2, None))
        qs.append(KGQuestion(f"b{i}", f"{t} 's kid 's job ?", [t], ["x"], [("children", True), ("profession", True)], 2, None))
        qs.append(KGQuestion(f"c{i}", f"{t} 's wife 's kid ?", [t], ["x"], [("spouse", True), ("children", True)], 2, None))
        qs.append(KGQuestion(f"d{i}", f"{t} 's kid 's kid ?", [t], ["x"], [("children", True), ("children", True)], 2, None))
        qs.append(KGQuestion(f"e{i}", f"{t} 's wife 's job ?", [t], ["x"], [("spouse", True), ("profession", True)], 2, None))
    with_kid = [x for x in qs if "kid" in x.question]
    p_children = sum("children" in {r for r, _ in x.chain} for x in qs) / len(qs)
    bag_lift = (sum("children" in {r for r, _ in x.chain} for x in with_kid) / len(with_kid)) / p_children
    assert bag_lift == pytest.approx(1.25)
    lex = LiftLexicon(threshold=1.5, min_count=1).fit(qs)
    assert lex.cues["kid"] == "children"
    assert lex.cues["nation"] == "nationality"
    assert lex.cues["job"] == "profession"
    assert lex.cues["wife"] == "spouse"
    assert "'s" not in lex.cues  # a function word aligns to NULL


def test_align_counts_is_a_distribution_over_each_token():
    counts = align_counts([[0, 1], [0, 2]], [[0, 1], [0, 2]], n_words=3, n_relations=3, iterations=5)
    # every token occurrence spreads exactly one unit of count over its question's relations
    assert counts.sum() == pytest.approx(4.0)
    assert counts[1, 2] == 0.0 and counts[2, 1] == 0.0
    with pytest.raises(ConfigError):
        align_counts([[0]], [[0]], 1, 1, iterations=0)


def test_lexicon_predicts_order_and_direction_from_word_order():
    lex = LiftLexicon(threshold=1.5).fit(movie_questions())
    new = q("who directed the films acted by [Zed Oak]", ACT_DIR)
    top = lex.propose(new)[0]
    assert top.chain == as_chain(ACT_DIR) and top.source == "lexicon:template"
    swapped = q("who acted in the films directed by [Zed Oak]", DIR_ACT)
    assert lex.propose(swapped)[0].chain == as_chain(DIR_ACT)
    assert format_chain(top.chain) == "starred_actors^-1 > directed_by"


def test_skeleton_backoff_carries_a_structure_to_an_unseen_word_combination():
    lex = LiftLexicon(threshold=1.5).fit(movie_questions())
    # "wrote ... directed" never occurs in training; the skeleton "0 1 <X>" does
    unseen = q("who wrote the films directed by [Zed Oak]", [("directed_by", False), ("written_by", True)])
    key = lex.key_of(unseen)
    assert key.words not in lex.templates and key.skeleton in lex.skeletons
    top = lex.propose(unseen)[0]
    assert top.source == "lexicon:skeleton"
    assert top.chain == (("directed_by", False), ("written_by", True))


def test_fallback_ranks_training_chains_by_cue_relations():
    lex = LiftLexicon(threshold=1.5).fit(movie_questions())
    odd = q("[Zed Oak] languages", DIR_LANG)  # no template, no skeleton with this shape
    props = lex.propose(odd)
    assert props and all(p.source == "lexicon:fallback" for p in props)
    assert "in_language" in {r for r, _ in props[0].chain}
    assert len({p.chain for p in props}) == len(props)  # no duplicates


def test_threshold_changes_the_lexicon_and_is_validated():
    lex = LiftLexicon(threshold=1.5).fit(movie_questions())
    n_low = len(lex.pairs())
    lex.set_threshold(50.0)
    assert len(lex.pairs()) < n_low
    assert all(row[2] >= 50.0 for row in lex.pairs())
    with pytest.raises(ConfigError):
        lex.set_threshold(0.5)
    with pytest.raises(ConfigError):
        LiftLexicon().fit([KGQuestion("x", "who", [], [], None, 1, None)])
    with pytest.raises(ConfigError):
        LiftLexicon().propose(movie_questions()[0])  # not fitted
    table = LiftLexicon(threshold=1.5).fit(movie_questions()).strongest_pairs(per_relation=1)
    assert set(table["relation"]) >= {"directed_by", "starred_actors", "written_by", "in_language"}
    assert (table["lift"] >= 1.5).all()




def test_knn_vote_returns_the_chain_of_the_nearest_training_questions():
    emb = Embedder(model=HashBOW(dim=128), model_id="hash-bow-compact-test", cache=False)
    knn = KNNVote(emb, k=3).fit(movie_questions())
    props = knn.propose(q("what languages are the films directed by [Zed Oak] in", DIR_LANG))
    assert props[0].chain == as_chain(DIR_LANG) and props[0].source == "knn"
    assert props[0].score == pytest.approx(1.0)  # all 3 neighbours share the chain
    many = knn.propose_many([q("who acted in the films directed by [Q R]", DIR_ACT),
                             q("who wrote the films acted by [Q R]", ACT_WRI)])
    assert [m[0].chain for m in many] == [as_chain(DIR_ACT), as_chain(ACT_WRI)]
    with pytest.raises(ConfigError):
        KNNVote(emb, k=0)
    with pytest.raises(ConfigError):
        KNNVote(None)
