"""Paraphrase and noise robustness of compact's relation knowledge.

The generators (datasets/paraphrase.py): rule-based noise is deterministic, leaves the topic mention
alone and does what it says; LLM paraphrases are cleaned and counted. The method side: spelling
correction against the training vocabulary, the kNN vote's backoff, and the hybrid knowledge, which
keeps the lexicon's answers on templated questions and recovers misspelt and reworded ones.
"""

from __future__ import annotations


import pytest
from stand_ins import HashBOW

from kgrag_utils.datasets import load_dataset
from kgrag_utils.datasets import paraphrase as para
from kgrag_utils.datasets.items import KGQuestion
from kgrag_utils.embeddings import Embedder
from kgrag_utils.llm import load_llm
from kgrag_utils.methods.compact import Compact, CompactConfig, summarize
from kgrag_utils.methods.compact.stages.knn import KNNVote
from kgrag_utils.methods.compact.stages.hybrid import HybridKnowledge
from kgrag_utils.methods.compact.stages.spelling import SpellingCorrector, within_one_edit


@pytest.fixture(scope="module")
def embedder():
    return Embedder(model=HashBOW(), model_id="hash-bow-paraphrase", cache=False)


# ----------------------------------------------------------------------------- the generators


def test_rule_noise_is_deterministic_keeps_the_mention_and_makes_its_edits():
    text = "who directed the film [The Long Way Home] in the year it was released"
    a = para.noisy_question(text, "q1", seed=0)
    assert a == para.noisy_question(text, "q1", seed=0)
    assert a != para.noisy_question(text, "q1", seed=1) or a != para.noisy_question(text, "q2", seed=0)
    noisy, edits = a
    assert "[The Long Way Home]" in noisy
    kinds = [e.split(" ")[0] for e in edits]
    assert kinds.count("drop") == 1 and kinds.count("misspell") <= 1 and "synonym" in kinds
    only_drop, e = para.noisy_question(text, "q1", seed=0, kinds=("drop",))
    assert len(only_drop.split()) == len(text.split()) - 1 and e[0].split()[1] in para.DROPPABLE
    only_syn, e = para.noisy_question(text, "q1", seed=0, kinds=("synonym",))
    for edit in e:
        _, old, _, new = edit.split(" ", 3)
        assert new in para.SYNONYMS[old.lower()]
    with pytest.raises(Exception):
        para.noisy_question(text, "q1", kinds=("shout",))


def test_misspell_makes_one_typing_error_and_keeps_the_first_letter():
    import random

    for i in range(200):
        rng = random.Random(i)
        word = rng.choice(["directed", "language", "written", "release", "starred"])
        typo = para.misspell(word, rng)
        assert typo[0] == word[0]
        assert typo == word or within_one_edit(typo, word) or (typo[:-1] == word[:-1])  # a neighbouring key
    assert para.misspell("who", random.Random(0)) == "who"  # too short


def test_noisy_questions_keep_id_topic_answers_and_chain():
    q = KGQuestion("q7", "what movies did [Ann Lee] act in", ["Ann Lee"], ["Heat"], [("starred_actors", False)], 1, None)
    (n,) = para.noisy_questions([q], seed=3)
    assert (n.qid, n.topic_entities, n.answers, n.chain) == (q.qid, q.topic_entities, q.answers, q.chain)
    assert n.meta["original_question"] == q.question and n.meta["paraphrase"]["kind"] == "rule"


@pytest.mark.parametrize("reply, question, expected", [
    ("[Ann Lee] acted in which films", "what films did [Ann Lee] act in", "[Ann Lee] acted in which films"),
    ("Question: \"Ann Lee acted in which films?\"", "what films did [Ann Lee] act in", "[Ann Lee] acted in which films"),
    ("films of [ann lee]", "what films did [Ann Lee] act in", "films of [Ann Lee]"),
    ("what films did [Ann Lee] act in?", "what films did [Ann Lee] act in", None),  # unchanged
    ("Season [3] of [Ann Lee]", "what films did [Ann Lee] act in", None),  # an extra mention
    ("which films", "what films did [Ann Lee] act in", None),  # the mention is lost
    ("", "what films did [Ann Lee] act in", None),
])
def test_clean_paraphrase(reply, question, expected):
    assert para.clean_paraphrase(reply, question) == expected


def test_llm_paraphrases_go_through_the_llm_and_count_rejections(tmp_path):
    qs = [KGQuestion(f"q{i}", f"what films did [P{i}] act in", [f"P{i}"], ["x"], [("starred_actors", False)], 1, None)
          for i in range(4)]
    fake = load_llm("fake", responses=lambda prompt: "[P1] acted in which films" if "[P1] act" in prompt.split("\n\n")[-1]
                    else "no idea", cache=False)
    kept, counts = para.llm_paraphrases(qs, fake, progress=False)
    assert counts == {"asked": 4, "kept": 1, "rejected": 3}
    assert kept[0].qid == "q1" and kept[0].question == "[P1] acted in which films"
    assert kept[0].meta["paraphrase"]["kind"] == "llm"
    messages = para.paraphrase_prompt("what films did [P0] act in")
    assert messages[-1] == {"role": "user", "content": "what films did [P0] act in"}
    assert len(messages) == 2 + 2 * len(para.PARAPHRASE_SHOTS)


# ----------------------------------------------------------------------------- the method side


def test_within_one_edit():
    assert within_one_edit("directed", "dircted") and within_one_edit("directed", "direcetd")
    assert within_one_edit("directed", "dirrected") and within_one_edit("directed", "dirextd") is False
    assert within_one_edit("language", "langauge") and within_one_edit("language", "lnaguage") and not within_one_edit("language", "lnagauge")
    assert within_one_edit("abc", "abc")


def test_spelling_correction_uses_the_training_vocabulary_and_leaves_mentions_alone():
    train = [KGQuestion(f"t{i}", f"who directed the film [Dirctor {i}]", [f"Dirctor {i}"], ["x"], [("directed_by", True)],
                        1, None) for i in range(3)]
    fix = SpellingCorrector().fit(train)
    assert fix.correct_word("dirrected") == "directed" and fix.correct_word("helmed") == "helmed"
    assert fix.correct_word("flim") == "film"  # an adjacent swap
    q = KGQuestion("q", "who dirrected the flim [Dirctor 9]", ["Dirctor 9"], ["x"], [("directed_by", True)], 1, None)
    fixed = fix.correct(q)
    assert fixed.question == "who directed the film [Dirctor 9]"  # the mention is not "corrected"
    assert fixed.meta["written_question"] == q.question
    plain = KGQuestion("p", "who dirrected dirctor_9", ["dirctor_9"], ["x"], [("directed_by", True)], 1, None)
    assert fix.correct(plain).question == "who directed dirctor_9"


def test_the_knn_backoff_adds_reversed_chains_then_every_training_chain(embedder):
    train = [KGQuestion(f"t{i}", f"who directed [M{i}]", [f"M{i}"], ["x"], [("directed_by", True)], 1, None)
             for i in range(4)] + [KGQuestion("w", "who wrote [M9]", ["M9"], ["x"], [("written_by", True)], 1, None)]
    plain = KNNVote(embedder, k=2).fit(train)
    backed = KNNVote(embedder, k=2, backoff=True).fit(train)
    q = KGQuestion("q", "who directed [Z]", ["Z"], ["x"], [("directed_by", True)], 1, None)
    assert [p.chain for p in plain.propose(q)] == [(("directed_by", True),)]
    props = backed.propose(q)
    assert [(p.chain, p.source) for p in props] == [((("directed_by", True),), "knn"),
                                                     ((("directed_by", False),), "knn:reversed"),
                                                     ((("written_by", True),), "knn:fallback")]


def test_hybrid_keeps_templated_answers_and_recovers_noisy_ones_on_the_sample_world(embedder):
    ds = load_dataset("sample-movies-1hop", split="test")
    lex = Compact.prepare(config=CompactConfig(knowledge="lexicon"), dataset=ds)
    hyb = Compact.prepare(config=CompactConfig(knowledge="hybrid"), dataset=ds, embedder=embedder)
    assert isinstance(hyb.knowledge, HybridKnowledge)
    assert hyb.tuning["threshold_source"] == "validation"  # the lexicon inside is tuned as the lexicon alone
    templated_lex = lex.derive_many(ds.items)
    templated_hyb = hyb.derive_many(ds.items)
    same = sum(a["chain"] == b["chain"] for a, b in zip(templated_lex, templated_hyb))
    assert same >= len(ds) - 3  # template matches stay with the lexicon (HashBOW is no semantic encoder)
    assert summarize(templated_hyb)["chain_accuracy"] >= \
        summarize(templated_lex)["chain_accuracy"]
    misspelt = para.noisy_questions(ds.items, seed=0, kinds=("misspell",))
    s_lex = summarize(lex.derive_many(misspelt))
    s_hyb = summarize(hyb.derive_many(misspelt))
    s_tpl = summarize(templated_hyb)
    assert s_hyb["chain_accuracy"] == s_tpl["chain_accuracy"]  # every typo corrected against the training words
    assert s_lex["chain_accuracy"] < s_hyb["chain_accuracy"]
    rec = hyb.derive_many(misspelt[:1])[0]
    assert rec["chain_source"].startswith("hybrid:")
