"""A demonstration pool that also holds rule-noise rewrites of its own training questions (SimGRAG's
`demo_pool_noise`, kgrag_utils.demos.rephrasings; docs/DEMONSTRATIONS.md, "A pool with rewritten training questions").

The embedder is the bag-of-words stand-in, so no model is needed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kgrag_utils.datasets import load_dataset, paraphrase
from kgrag_utils.demos import DEMO_POOL_NOISE_SEED_OFFSET, DemoPool, rephrasings
from kgrag_utils.errors import ConfigError
from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
from kgrag_utils.methods.simgrag.stages.demos import pattern_demo_pool, usable_for_pattern
from kgrag_utils.records import run_key
from stand_ins import WordsEmbedder


@pytest.fixture(scope="module")
def movies2():
    return load_dataset("sample-movies-2hop")


@pytest.fixture(scope="module")
def noisy_test(movies2):
    return paraphrase.noisy_questions(movies2.items, seed=0)


def test_the_pool_holds_its_training_questions_and_their_rewrites_with_the_same_gold(movies2):
    plain = pattern_demo_pool(movies2, WordsEmbedder())
    pool = pattern_demo_pool(movies2, WordsEmbedder(), noise="rules", seed=0)
    n = len(plain)
    assert pool.ids[:n] == plain.ids and pool.texts[:n] == plain.texts  # the training questions first, unchanged
    assert pool.rephrased == len(pool) - n and 0.8 * n <= pool.rephrased <= n  # a rewrite of (nearly) every one
    originals = {it.qid: it for it in plain.items}
    used = DEMO_POOL_NOISE_SEED_OFFSET
    for rewrite, origin in zip(pool.items[n:], pool.origins[n:]):
        item = originals[origin]
        assert rewrite.qid == f"{origin}+rules@{used}" and rewrite.meta["demo_of"] == origin
        assert (rewrite.chain, rewrite.answers, rewrite.topic_entities, rewrite.qtype) == \
            (item.chain, item.answers, item.topic_entities, item.qtype)
        # the project's rule noise, at a seed apart from the evaluated questions' (seed 0 here)
        assert rewrite.question == paraphrase.noisy_question(item.question, item.qid, used)[0] != item.question
    assert len(set(pool.ids)) == len(pool)


def test_rewrites_never_come_from_the_evaluated_split(movies2, noisy_test):
    pool = pattern_demo_pool(movies2, WordsEmbedder(), noise="rules")
    evaluated = {q.qid for q in movies2.items}
    assert pool.split == "dev" and not evaluated & set(pool.origins) and not evaluated & set(pool.ids)
    assert not {q.question for q in noisy_test} & {it.question for it in pool.items}
    with pytest.raises(ConfigError, match="cross-fitted"):  # its items are the evaluated questions
        DemoPool(movies2.items, WordsEmbedder(), split=movies2.split, folds=2, noise="rules")
    with pytest.raises(ConfigError, match="demo_pool_noise"):
        DemoPool(movies2.items, WordsEmbedder(), noise="llm")


def test_a_rewrite_is_skipped_wherever_its_training_question_is(movies2):
    train = load_dataset("sample-movies-2hop", split="dev").items
    x, y = train[0], next(q for q in train[1:] if q.qtype != train[0].qtype)
    z = next(q for q in train[1:] if q.qid != y.qid)  # a question outside the pool
    pool = DemoPool([x, y], WordsEmbedder(), noise="rules")
    x_rewrite = next(i for i, o in enumerate(pool.origins) if o == x.qid and pool.ids[i] != x.qid)
    assert pool.rephrased == 2 and pool.ids[x_rewrite].startswith(x.qid + "+")
    # the same id, another id excluded, or the same text: neither x nor its rewrite (y and its rewrite stay)
    for asked, kw in ((x, {}), (z, {"exclude_ids": [x.qid]}),
                      (dataclasses.replace(x, qid="twin"), {})):
        assert {d.id for d in pool.nearest(asked, 4, **kw)} == {i for i, o in zip(pool.ids, pool.origins) if o == y.qid}
    # a question worded as x's rewrite is never shown that rewrite (the same text); x itself, worded otherwise, stays
    reworded = {d.id for d in pool.nearest(dataclasses.replace(z, question=pool.items[x_rewrite].question), 4)}
    assert pool.ids[x_rewrite] not in reworded and x.qid in reworded


def test_the_knob_off_changes_nothing_and_the_respelling_reads_only_the_training_questions(movies2, noisy_test):
    before = DemoPool.from_training(movies2, WordsEmbedder(), usable_for_pattern, "a gold chain")
    off = pattern_demo_pool(movies2, WordsEmbedder(), noise="")
    on = pattern_demo_pool(movies2, WordsEmbedder(), noise="misspell")
    assert off.rephrased == 0 and off.ids == before.ids and off.origins == off.ids
    assert np.array_equal(off.vectors, before.vectors)
    for q in noisy_test:
        assert [(d.id, d.score) for d in off.nearest(q, 8)] == [(d.id, d.score) for d in before.nearest(q, 8)]
        assert on.query_text(q) == off.query_text(q)  # a rewrite's misspelling never becomes a word to respell to
    assert on.respell.vocab == off.respell.vocab
    # a run recorded before the knob keeps its resume key at the knob's default
    params = {"dataset": movies2.name, "demos": "nearest"}
    assert run_key({**params, "demo_pool_noise": ""}) == run_key(params) != run_key({**params, "demo_pool_noise": "rules"})


def test_simgrag_builds_the_pool_with_the_knob_and_refuses_an_unknown_noise(movies2):
    config = SimGRAGConfig(demos="nearest", pattern_source="copied", reader=False, dataset=movies2.name,
                           demo_pool_noise="rules", seed=3)
    method = SimGRAG.prepare(config, movies2, embedder=WordsEmbedder())
    assert method.demo_pool.rephrased > 0
    assert all(i.endswith(f"+rules@{3 + DEMO_POOL_NOISE_SEED_OFFSET}") for i in method.demo_pool.ids[-method.demo_pool.rephrased:])
    assert SimGRAG.prepare(config.model_copy(update={"demo_pool_noise": ""}), movies2,
                           embedder=WordsEmbedder()).demo_pool.rephrased == 0
    with pytest.raises(ConfigError):
        SimGRAGConfig(demo_pool_noise="llm")
    assert rephrasings(movies2.items[:3], "") == []
