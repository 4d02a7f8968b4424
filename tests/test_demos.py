"""Demonstrations chosen per question (kgrag_utils.demos, SimGRAG demos="nearest") and SimGRAG's samples vote.

The embedder is a stand-in that hashes the words of a text into a bag-of-words vector, so questions of
one template are near each other and tests need no model; the LLM is the fake.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from kgrag_utils.datasets import load_dataset
from kgrag_utils.demos import DemoPool, similarity_text
from kgrag_utils.errors import ConfigError
from kgrag_utils.llm import load_llm
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDRetriever
from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
from kgrag_utils.methods.simgrag.stages.oracle import oracle_pattern
from kgrag_utils.methods.simgrag.stages.demos import pattern_demo, pattern_demo_pool, requested_answer_demos, requested_demos
from kgrag_utils.methods.simgrag.prompts import load_prompt_file, render_pattern_answer
from kgrag_utils.methods.simgrag.stages.samples import merge_samples, vote
from stand_ins import WordsEmbedder


@pytest.fixture(scope="module")
def movies2():
    return load_dataset("sample-movies-2hop")


@pytest.fixture(scope="module")
def retriever(movies2):
    return GSDRetriever.from_embedder(movies2.kg, WordsEmbedder())


def test_similarity_text_blanks_entities_so_the_template_decides():
    assert similarity_text("who directed [Tom Hanks] films", ["Tom Hanks"]) == "who directed X films"
    assert similarity_text("what does tom_hanks 's wife do ?", ["tom_hanks"]) == "what does X 's wife do ?"
    assert similarity_text("films by Ann Lee and Ann Lee Jr", ["Ann Lee", "Ann Lee Jr"]) == "films by X and X"


def test_nearest_never_returns_the_question_itself_and_ranks_by_similarity(movies2):
    emb = WordsEmbedder()
    pool = pattern_demo_pool(movies2, emb)
    assert pool.split == "dev" and len(pool) > 10
    test_ids = {q.qid for q in movies2.items}
    assert not test_ids & set(pool.ids)  # only the training split
    q = movies2.items[0]
    chosen = pool.nearest(q, 5)
    assert len(chosen) == 5 and [d.score for d in chosen] == sorted((d.score for d in chosen), reverse=True)
    assert all(d.id not in test_ids for d in chosen)
    # a pool item with the evaluated question's id or text is skipped
    twin = dataclasses.replace(pool.items[0], qid="twin")
    same = DemoPool([pool.items[0], twin, pool.items[1]], emb, split="dev")
    assert [d.id for d in same.nearest(pool.items[0], 3)] == [pool.items[1].qid]
    assert [d.id for d in same.nearest(pool.items[2], 3, exclude_ids=[pool.items[0].qid])] == ["twin", pool.items[1].qid]


def test_pool_refuses_without_a_training_split_or_a_usable_item(movies2):
    emb = WordsEmbedder()
    with pytest.raises(ConfigError, match="gold relation chain"):
        DemoPool.from_training(movies2, emb, lambda item, train: False, "a gold relation chain")
    passages = load_dataset("sample-passages")
    with pytest.raises(ConfigError, match="needs a training split.*demos='fixed'"):
        DemoPool.from_training(passages, emb, lambda item, train: True, "supporting facts")
    dev = load_dataset("sample-movies-2hop", split="dev")
    with pytest.raises(ConfigError, match="training split"):
        pattern_demo_pool(dev, emb)


def test_a_demonstration_is_written_from_the_gold_chain_like_the_fixed_shots(movies2):
    shots = load_prompt_file("simgrag_pattern.yaml")["families"]["movies"]
    acted = next(s for s in shots if s["question"].startswith("who acted in the movies directed by"))
    item = dataclasses.replace(movies2.items[0], qid="x", question="who starred in films of [Tobias Wrenfield]",
                               topic_entities=["Tobias Wrenfield"], chain=[("directed_by", False), ("starred_actors", True)],
                               qtype="director_to_movie_to_actor", hops=2)
    demo = pattern_demo(item)
    # the fixed shot's shape and nodes; `starred_actors` in the demonstrations' words, "starred in" (the fixed shots
    # say "acted in", which the MiniLM relation match sent to directed_by: configs/reproduce/demos-simgrag-wording.yaml)
    assert demo["triples"] == [[h, "starred in" if r == "acted in" else r, t] for h, r, t in acted["triples"]]
    assert demo["triples"][1] == ["UNKNOWN actor 2", "starred in", "UNKNOWN movie 1"]
    assert demo["phrases"] == ["movies directed by Tobias Wrenfield", "actors of those movies"]
    actor = dataclasses.replace(item, topic_entities=["Mirela Castaway"], chain=[("starred_actors", False)],
                                qtype="actor_to_movie", hops=1)
    assert pattern_demo(actor)["phrases"] == ["movies Mirela Castaway starred in"]
    assert pattern_demo(actor)["triples"] == [["Mirela Castaway", "starred in", "UNKNOWN movie 1"]]
    # another wording, given without editing the prompt file: its keys replace the file's, the rest are kept
    acted_in = pattern_demo(actor, wording={"starred_actors": {"words": "acted in", "backward": "movies {x} acted in"}})
    assert acted_in["triples"] == [["Mirela Castaway", "acted in", "UNKNOWN movie 1"]]
    assert acted_in["phrases"] == ["movies Mirela Castaway acted in"]
    assert pattern_demo(actor)["triples"][0][1] == "starred in"  # the override did not stick
    tags = dataclasses.replace(item, topic_entities=["Copper Sky Blues"], chain=[("has_tags", True)], qtype="movie_to_tags")
    assert pattern_demo(tags)["triples"] == [["Copper Sky Blues", "has tag", "UNKNOWN tag 1"]]
    # a relation the family does not word is written as its KG name, in the KG's direction
    other = dataclasses.replace(item, chain=[("spouse_of", True)], qtype=None, hops=1)
    assert pattern_demo(other, family="people")["triples"] == [["Tobias Wrenfield", "spouse of", "UNKNOWN entity 1"]]


def test_wording_key_follows_the_prompt_files_wording(monkeypatch):
    """A nearest-demonstration run's key holds the wording's hash: another wording is another run, not a resume."""
    from kgrag_utils.methods.simgrag.stages import demos

    key = demos.wording_key("movies")
    assert key == demos.wording_key("movies") and len(key) == 8
    relations, types = demos.demo_wording("movies")
    acted = {**relations, "starred_actors": {**relations["starred_actors"], "words": "acted in"}}
    monkeypatch.setattr(demos, "demo_wording", lambda family: (acted, types))
    assert demos.wording_key("movies") != key


def _gold_pattern_llm(data):
    gold = {q.question: render_pattern_answer(["p"], [(h, r.replace("_", " "), t) for h, r, t in oracle_pattern(q).triples()])
            for q in data.items}
    by_text = {q.question: q for q in data.items}

    def respond(text):
        question = text.rsplit("Question:", 1)[-1].strip()
        if "Evidence:" in text:  # the first gold answer the evidence holds (a reader that reads right)
            evidence = text.rsplit("Evidence:", 1)[-1]
            return next((a for a in by_text[question].answers if a in evidence), "none")
        return gold[question]

    return load_llm("fake", responses=respond, cache=False)


def test_nearest_demos_follow_the_fixed_shots_and_are_recorded(movies2, retriever):
    items = movies2.items[:5]
    emb = WordsEmbedder()
    pool = pattern_demo_pool(movies2, emb)
    config = SimGRAGConfig(demos="nearest", shots=3, fixed_shots=2, dataset=movies2.name)
    method = SimGRAG(config, movies2.kg, retriever, _gold_pattern_llm(movies2), dataset=movies2.name, demo_pool=pool)
    records = method.run(items, progress=False)
    fixed = load_prompt_file("simgrag_pattern.yaml")["families"]["movies"]
    for rec, q in zip(records, items):
        chat = rec["pattern_prompt"]
        users = [m["content"] for m in chat if m["role"] == "user"]
        assert len(users) == 2 + 3 + 1 and users[-1] == f"Question: {q.question}"
        assert users[:2] == [f"Question: {s['question']}" for s in fixed[:2]]  # the shared prefix first
        assert len(rec["pattern_demos"]) == 3 and rec["pattern_demos"] == [d.id for d in pool.nearest(q, 3)][::-1]
        assert rec["pattern_demo_scores"] == sorted(rec["pattern_demo_scores"])  # nearest last
        by_id = dict(zip(pool.ids, pool.items))
        assert users[2:5] == [f"Question: {by_id[i].question}" for i in rec["pattern_demos"]]
        assert rec["hits@1"] == 1.0
        types = [str(by_id[i].qtype) for i in rec["pattern_demos"]]
        assert rec["pattern_demo_types"] == types
        same = sum(t == str(q.qtype) for t in types)
        assert rec["demo_own_type"] == ("all" if same == 3 else "some" if same else "none")
    from kgrag_utils.methods.simgrag import summarize

    own = summarize(records)["demonstrations"]["own_type"]  # the run's summary extra, from its records
    assert own["questions"] == 5 and own["demonstrations"] == 15
    assert own["of_own_type"] == sum(t == str(q.qtype) for r, q in zip(records, items) for t in r["pattern_demo_types"])
    assert sum(g["n"] for g in own["by_own_type"].values()) == 5
    fixed_run = SimGRAG(SimGRAGConfig(shots=3), movies2.kg, retriever, _gold_pattern_llm(movies2), dataset=movies2.name)
    [plain] = fixed_run.run(items[:1], progress=False)
    assert plain["pattern_demos"] == [] and len([m for m in plain["pattern_prompt"] if m["role"] == "user"]) == 4


def test_prepare_builds_the_pool_and_nearest_without_a_pool_says_how(movies2, retriever):
    method = SimGRAG.prepare(SimGRAGConfig(demos="nearest", llm_preset="fake", dataset=movies2.name), movies2,
                             embedder=WordsEmbedder())
    assert method.demo_pool is not None and method.demo_pool.split == "dev"
    bare = SimGRAG(SimGRAGConfig(demos="nearest"), movies2.kg, retriever, _gold_pattern_llm(movies2), dataset=movies2.name)
    with pytest.raises(ConfigError, match="SimGRAG.prepare"):
        bare.pattern_demos(movies2.items[0])
    with pytest.raises(ConfigError, match="demos"):
        SimGRAGConfig(demos="closest")
    with pytest.raises(ConfigError, match="samples"):
        SimGRAGConfig(samples=3, pattern_source="oracle")


def _sample(answers, gsd, ok=True):
    return {"pattern_ok": ok, "subgraphs": [{"gsd": gsd}] if gsd is not None else [], "answers": answers,
            "tokens": {"pattern_prompt": 10, "pattern_cached": False}, "timings": {"pattern_s": 1.0, "answer_s": 0.5}}


def test_the_vote_weighs_each_sample_by_its_best_gsd():
    close, far, far2, broken = _sample(["A"], 0.1), _sample(["B", "A"], 1.5), _sample(["B"], 1.4), _sample(["C"], None)
    answers, rep, totals = vote([far, close, far2, broken])
    # A: e^-0.1 + e^-1.5 = 1.128; B: e^-1.5 + e^-1.4 = 0.470; C has no subgraph, so no vote
    assert answers == ["A", "B"] and rep == 1 and set(totals) == {"A", "B"}
    assert totals["A"] == pytest.approx(np.exp(-0.1) + np.exp(-1.5), abs=1e-6)
    answers, rep, _ = vote([_sample(["B"], 0.5), _sample(["A"], 0.6), _sample(["A"], 0.6)])
    assert answers == ["A", "B"] and rep == 1  # two votes at 0.6 beat one at 0.5; the first A holder represents
    merged = merge_samples([far, close], [0, 1], [0.0, 0.7])
    assert merged["answers"] == ["A", "B"] and merged["sample_representative"] == 1
    assert merged["tokens"] == {"pattern_prompt": 20, "pattern_cached": False} and merged["timings"]["pattern_s"] == 2.0
    assert [s["seed"] for s in merged["samples"]] == [0, 1] and merged["samples"][1]["weight"] == pytest.approx(np.exp(-0.1))
    assert vote([broken, _sample([], 0.1)]) == ([], 0, {})


def test_samples_sample_seeded_patterns_and_the_vote_fixes_a_wrong_greedy_one(movies2, retriever):
    q = movies2.items[0]
    seen = []
    wrong = render_pattern_answer(["p"], [(q.topic_entities[0], "has imdb votes", "UNKNOWN x 1")])
    right = render_pattern_answer(["p"], [(h, r.replace("_", " "), t) for h, r, t in oracle_pattern(q).triples()])

    def respond(text):
        if "Evidence:" in text:
            evidence = text.rsplit("Evidence:", 1)[-1]
            return next((a for a in q.answers if a in evidence), "none")
        seen.append(text)
        return wrong if len(seen) == 1 else right  # the greedy call is wrong, the sampled ones right

    llm = load_llm("fake", responses=respond, cache=False)
    config = SimGRAGConfig(samples=3, relation_topk=1, shots=2)
    [rec] = SimGRAG(config, movies2.kg, retriever, llm, dataset=movies2.name).run([q], progress=False)
    assert len(seen) == 3 and len(rec["samples"]) == 3
    assert [(s["seed"], s["temperature"]) for s in rec["samples"]] == [(0, 0.0), (1, 0.7), (2, 0.7)]
    assert rec["sample_representative"] in (1, 2) and rec["hits@1"] == 1.0 and rec["failed_stage"] is None
    assert rec["pattern_triples"] == rec["samples"][rec["sample_representative"]]["pattern_triples"]
    assert rec["tokens"]["pattern_prompt"] == 3 * len(seen[0].split())  # the fake counts words; three equal prompts


def test_wilson_interval():
    from kgrag_utils.metrics import wilson_interval

    w = wilson_interval(90, 100)
    assert w["rate"] == 0.9 and w["low"] == pytest.approx(0.8256, abs=1e-3) and w["high"] == pytest.approx(0.9448, abs=1e-3)
    assert wilson_interval(0, 10)["low"] == 0.0 and wilson_interval(10, 10)["high"] == 1.0
    assert wilson_interval(0, 0)["rate"] is None


def test_the_summary_counts_demonstrations_of_the_questions_type_and_llm_seconds_of_computed_calls():
    """SimGRAG's summary extras `demonstrations` (own-type counts per demonstration and per question, records without
    demonstrations left out) and `llm_seconds` (only questions whose calls were all computed, none cached)."""
    from kgrag_utils.methods.simgrag.summary import demonstrations, llm_seconds

    def rec(qtype, types, hits, cached=False, seconds=(2.0, 1.0)):
        return {"qtype": qtype, "pattern_demos": [f"{t}{i}" for i, t in enumerate(types)], "pattern_demo_types": types,
                "pattern_demo_tokens": 10 * len(types), "hits@1": hits, "pattern_prompt": [{"role": "user"}],
                "tokens": {"pattern_cached": cached, "answer_cached": False},
                "timings": {"pattern_s": seconds[0], "answer_s": seconds[1]}}

    records = [rec("a", ["a", "a"], 1.0), rec("b", ["b", "a"], 0.0, cached=True), rec("b", ["a", "a"], 1.0, seconds=(4.0, 2.0)),
               rec("a", [], 1.0), {**rec(None, ["a"], 1.0), "failed": True}]
    out = demonstrations(records)
    assert out["own_type"] == {"questions": 3, "demonstrations": 6, "of_own_type": 3, "share": 0.5,
                               "questions_all_own_type": 1, "by_own_type": {"all": {"n": 1, "hits@1": 1},
                                                                            "some": {"n": 1, "hits@1": 0},
                                                                            "none": {"n": 1, "hits@1": 1}}}
    assert out["demo_tokens_per_question"] == (20 + 20 + 20 + 0 + 10) / 5 and out["distinct_demo_sets"] == 3
    assert llm_seconds(records) == {"per_uncached_question": (3.0 + 6.0 + 3.0 + 3.0) / 4, "n_uncached": 4, "n_called": 5}
    assert demonstrations([{"pattern_demos": []}]) is None and llm_seconds([{"pattern_prompt": None}]) is None


def test_vector_rerank_nearest_demos_on_kg_questions(movies2):
    """Rerank demonstrations from the dev split's gold chains: gold facts at the stated ids, after the fixed example."""
    from kgrag_utils.methods.vector_rerank import VectorRerankConfig
    from kgrag_utils.methods.vector_rerank.stages.demos import kg_rerank_demo, rerank_demo_pool
    from kgrag_utils.methods.vector_rerank.method import VectorRerank
    from kgrag_utils.methods.vector_rerank.prompts import rerank_prompt

    emb = WordsEmbedder()
    pool = rerank_demo_pool(movies2, emb)
    item = pool.items[0]
    demo = kg_rerank_demo(item, pool.source.kg)
    assert demo is not None and len(demo["ids"]) == item.hops and len(demo["facts"]) <= 6
    gold = [demo["facts"][i - 1] for i in demo["ids"]]
    assert item.topic_entities[0] in gold[0]  # the path starts at the topic entity
    assert any(a in gold[-1] for a in item.answers)  # and ends at a gold answer
    assert kg_rerank_demo(item, pool.source.kg) == demo  # the shuffle is seeded by the question id
    chat = rerank_prompt("q?", ["a b c"], 2, demos=[demo])
    assert [m["role"] for m in chat] == ["user", "assistant", "user", "assistant", "user"]
    assert chat[0] == rerank_prompt("q?", ["a b c"], 2)[0]  # the fixed example stays first, unchanged
    assert json.loads(chat[3]["content"])["ids"] == demo["ids"]
    method = VectorRerank.prepare(VectorRerankConfig(dataset=movies2.name, demos="nearest", shots=2, variants=("rerank",),
                                                     entity_extraction="lexical", llm_preset="fake"), movies2, embedder=emb)
    assert method.demo_pool is not None
    demos = method.rerank_demos(movies2.items[0])
    assert len(demos) == 2 and demos[0]["score"] <= demos[1]["score"]
    assert not {d["id"] for d in demos} & {q.qid for q in movies2.items}
    method._llm = load_llm("fake", responses=lambda text: '{"reasoning": "r", "ids": [1, 2]}' if "Facts:" in text
                           else '{"answers": ["x"]}', cache=False)
    records = method.run(movies2.items[:2], progress=False)
    for rec in records:
        assert rec["rerank"]["demos"] == [d["id"] for d in method.rerank_demos(movies2.items[records.index(rec)])]
        assert len(rec["rerank"]["prompt"]) == 2 + 2 * 2 + 1 and rec["rerank"]["status"]


def test_vector_rerank_demo_answer_reasons_with_its_gold_facts_within_the_schema_cap():
    """demo-2: the demonstration's reasoning names each gold fact with its id, in hop order (demo-1's one template
    sentence was copied by the 1.5B with its own first ids), and never exceeds RERANK_SCHEMA's 200 characters."""
    from kgrag_utils.methods.vector_rerank.prompts import RERANK_SCHEMA, rerank_prompt

    cap = RERANK_SCHEMA["properties"]["reasoning"]["maxLength"]
    demo = {"question": "Where did Ann Lee die?", "facts": ["Ann Lee born in Oslo", "Ann Lee died in Bergen", "x y"],
            "ids": [2]}
    answer = json.loads(rerank_prompt("q?", ["a"], 1, demos=[demo])[3]["content"])
    assert answer == {"reasoning": "Ann Lee died in Bergen [2].", "ids": [2]}
    long = {"question": "q", "facts": [" ".join(["word"] * 60) + f" end{i}" for i in range(6)], "ids": [4, 1, 6, 2]}
    answer = json.loads(rerank_prompt("q?", ["a"], 1, demos=[long])[3]["content"])
    assert len(answer["reasoning"]) <= cap and answer["ids"] == [4, 1, 6, 2]
    marks = [answer["reasoning"].index(f"[{i}]") for i in long["ids"]]
    assert marks == sorted(marks)  # every id shown, in hop order


def test_vector_rerank_nearest_refuses_on_passages_without_a_training_split():
    from kgrag_utils.methods.vector_rerank.stages.demos import rerank_demo_pool

    with pytest.raises(ConfigError, match="needs a training split.*demos='fixed'"):
        rerank_demo_pool(load_dataset("sample-passages"), WordsEmbedder())


def test_crossfit_pool_takes_demonstrations_only_from_the_other_fold():
    """demo_pool="crossfit": the evaluated questions are their own pool, cut in two by a hash of the id; a question
    never sees itself or any question of its own fold, and the fold does not depend on which questions are loaded."""
    from kgrag_utils.demos import crossfit_fold

    passages = load_dataset("sample-passages")
    emb = WordsEmbedder()
    pool = DemoPool.build(passages, emb, lambda item, train: bool(item.supporting), "supporting facts", pool="crossfit")
    assert pool.folds == 2 and pool.source is passages and pool.ids == [q.qid for q in passages.items]
    folds = [crossfit_fold(q.qid) for q in passages.items]
    assert set(folds) == {0, 1} and pool.item_folds == folds
    for q, fold in zip(passages.items, folds):
        chosen = pool.nearest(q, 5)
        assert len(chosen) == 5 and q.qid not in {d.id for d in chosen}
        assert all(crossfit_fold(d.id) != fold for d in chosen) and pool.fold_of(q) == fold
    # every item of the other fold can be reached, none of its own
    other = sum(f != folds[0] for f in folds)
    assert len(pool.nearest(passages.items[0], len(folds))) == other
    # a smaller load keeps each question's fold
    few = load_dataset("sample-passages", limit=7, seed=3)
    assert [crossfit_fold(q.qid) for q in few.items] == [folds[[p.qid for p in passages.items].index(q.qid)]
                                                           for q in few.items]
    # a training-split pool has no folds; bad pools and fold counts are refused
    movies_pool = pattern_demo_pool(load_dataset("sample-movies-2hop"), emb)
    assert movies_pool.folds == 0 and movies_pool.fold_of(passages.items[0]) is None
    with pytest.raises(ConfigError, match="demo_pool must be one of"):
        DemoPool.build(passages, emb, lambda item, train: True, "x", pool="test")
    with pytest.raises(ConfigError, match="at least 2 folds"):
        DemoPool.cross_fitted(passages, emb, lambda item, train: True, "x", folds=1)
    with pytest.raises(ConfigError, match="no evaluated question.*demos='fixed'"):
        DemoPool.cross_fitted(passages, emb, lambda item, train: False, "released triples")


def test_vector_rerank_crossfit_demos_on_passages():
    """sample-passages has no training split: demo_pool="crossfit" shows the other fold's questions with their gold
    facts, records each question's fold, and the config refuses a crossfit pool without nearest demos."""
    from kgrag_utils.demos import crossfit_fold
    from kgrag_utils.methods.vector_rerank import VectorRerankConfig
    from kgrag_utils.methods.vector_rerank.method import VectorRerank

    passages = load_dataset("sample-passages", limit=12, seed=0)
    emb = WordsEmbedder()
    cfg = VectorRerankConfig(dataset="sample-passages", demos="nearest", demo_pool="crossfit", shots=2,
                             variants=("rerank-filled",), entity_extraction="lexical", llm_preset="fake")
    method = VectorRerank.prepare(cfg, passages, embedder=emb,
                                  llm=load_llm("fake", responses=lambda text: '{"reasoning": "r", "ids": [1]}',
                                               cache=False))
    assert method.demo_pool.folds == 2
    # a pool the caller built already (the benchmark builds it before loading the LLM) is used, not built again
    again = VectorRerank.prepare(cfg, passages, embedder=emb, llm=method.llm, demo_pool=method.demo_pool)
    assert again.demo_pool is method.demo_pool
    records = method.run(passages.items, progress=False)
    with_demos = [r for r in records if r["rerank"].get("demos")]
    assert with_demos
    for rec in with_demos:
        fold = crossfit_fold(rec["id"])
        assert rec["rerank"]["demo_fold"] == fold and rec["id"] not in rec["rerank"]["demos"]
        assert all(crossfit_fold(d) != fold for d in rec["rerank"]["demos"])
        assert len(rec["rerank"]["prompt"]) == 2 + 2 * len(rec["rerank"]["demos"]) + 1
    with pytest.raises(ConfigError, match="demo_pool='crossfit'.*demos='nearest'"):
        VectorRerankConfig(dataset="sample-passages", demo_pool="crossfit")
    with pytest.raises(ConfigError):
        VectorRerankConfig(dataset="sample-passages", demos="nearest", demo_pool="tests")


def test_kgp_agent_nearest_demos_from_the_training_split():
    """IIRC's fixture has a train split: each demonstration is one step of a training question's evidence chain."""
    from kgrag_utils.llm import load_llm as _load
    from kgrag_utils.methods.kgp import KGP, KGPConfig
    from kgrag_utils.methods.kgp.prompts import evidence_prompt

    data = load_dataset("fixture-iirc", split="test")
    seen = []
    llm = _load("fake", responses=lambda text: seen.append(text) or "Ingrid Lund founded it.", cache=False)
    cfg = KGPConfig(dataset="fixture-iirc", split="test", demos="nearest", shots=2, budget=4, set_passages=0,
                    reader=False, limit=1)
    kgp = KGP(cfg, data, llm=llm, embedder=WordsEmbedder())
    assert kgp.demo_pool is not None and kgp.demo_pool.split == "train"
    [rec] = kgp.run(data.items[:1], progress=False)
    assert not rec["failed"] and len(rec["agent_demos"]) == 2 and set(rec["agent_demos"]) <= set(kgp.demo_pool.ids)
    prompt = seen[0]
    assert prompt.startswith(evidence_prompt("q", [])[:80]) and prompt.count("Example.") == 2
    assert prompt.rindex("Example.") < prompt.rindex(f"Question: {data.items[0].question}")
    plain = KGP(cfg.replace(demos="fixed"), data, llm=llm, embedder=WordsEmbedder())
    assert plain.demo_pool is None and plain.agent_demos(data.items[0]) == []
    assert kgp.sibling(budget=3).demo_pool is kgp.demo_pool
    with pytest.raises(ConfigError, match="training split"):
        KGP(cfg.replace(dataset="sample-passages", split="all"), load_dataset("sample-passages", split="all"),
            llm=llm, embedder=WordsEmbedder())


def test_kgp_agent_crossfit_demos_from_the_other_fold():
    """sample-passages has no training split: demo_pool="crossfit" shows other-fold questions' evidence steps."""
    from kgrag_utils.demos import crossfit_fold
    from kgrag_utils.llm import load_llm as _load
    from kgrag_utils.methods.kgp import KGP, KGPConfig

    data = load_dataset("sample-passages", split="all", limit=6, seed=0)
    llm = _load("fake", responses=lambda text: "Ingrid Lund founded it.", cache=False)
    cfg = KGPConfig(dataset="sample-passages", split="all", demos="nearest", demo_pool="crossfit", shots=2, budget=4,
                    set_passages=0, reader=False, limit=6)
    kgp = KGP(cfg, data, llm=llm, embedder=WordsEmbedder())
    assert kgp.demo_pool.folds == 2
    for rec in kgp.run(data.items[:3], progress=False):
        fold = crossfit_fold(rec["id"])
        assert not rec["failed"] and rec["agent_demo_fold"] == fold and len(rec["agent_demos"]) == 2
        assert rec["id"] not in rec["agent_demos"] and all(crossfit_fold(d) != fold for d in rec["agent_demos"])
    sibling = kgp.sibling(budget=3)  # a variant shares the pool and keeps the cross-fit setting
    assert sibling.demo_pool is kgp.demo_pool and sibling.config.demo_pool == "crossfit"
    with pytest.raises(ConfigError, match="demo_pool='crossfit'.*demos='nearest'"):
        KGPConfig(dataset="sample-passages", demo_pool="crossfit")


def test_answer_demos_show_training_questions_answered_from_their_gold_evidence(movies2, retriever):
    pool = pattern_demo_pool(movies2, WordsEmbedder())
    config = SimGRAGConfig(demos="fixed", answer_demos="nearest", answer_shots=2, shots=2, dataset=movies2.name)
    method = SimGRAG(config, movies2.kg, retriever, _gold_pattern_llm(movies2), dataset=movies2.name, demo_pool=pool)
    [rec] = method.run(movies2.items[:1], progress=False)
    assert len(rec["answer_demos"]) == 2 and rec["pattern_demos"] == []  # the pattern prompt keeps its fixed shots
    users = [m["content"] for m in rec["answer_prompt"] if m["role"] == "user"]
    assert len(users) == 2 + 2 + 1  # 2 fixed shots, 2 demonstrations, the question
    by_id = dict(zip(pool.ids, pool.items))
    for text, demo_id, reply in zip(users[2:4], rec["answer_demos"], [m["content"] for m in rec["answer_prompt"]
                                                                         if m["role"] == "assistant"][2:]):
        q = by_id[demo_id]
        assert text.endswith(f"Question: {q.question}") and "graph [1]:" in text
        assert reply.split(" | ")[0] in q.answers  # the gold answer the gold pattern's evidence holds
    assert rec["hits@1"] == 1.0


def test_an_answer_demonstration_answers_the_answer_node_never_a_bridge_entity(movies2, retriever):
    """A gold set may hold an entity the shown evidence has only mid-chain (MetaQA 3-hop: an actor of "films that share
    actors with [X]" who also directed a film); the shot answers what its subgraphs bind to the answer node."""
    from kgrag_utils.methods.simgrag.stages.demos import answer_demo
    from kgrag_utils.methods.simgrag.stages.generate import evidence_lines
    from kgrag_utils.methods.simgrag.stages.pattern import validate_pattern

    item = movies2.items[0]  # movie -> actor -> movie
    pattern = validate_pattern(oracle_pattern(item)).pattern
    retrieve = lambda p: retriever.retrieve(p)[0]
    subgraphs = retrieve(pattern).subgraphs
    bridges = list(dict.fromkeys(str(movies2.kg.entity_names[sg.nodes[1]]) for sg in subgraphs))
    answers = list(dict.fromkeys(str(movies2.kg.entity_names[sg.nodes[pattern.answer]]) for sg in subgraphs))
    assert bridges and answers and not set(bridges) & set(answers)
    tricky = dataclasses.replace(item, answers=bridges + list(item.answers))  # the bridge actors count as gold too
    demo = answer_demo(tricky, retrieve, movies2.kg, evidence_lines)
    shown = demo["answer"].split(" | ")
    assert shown == [a for a in answers if a in item.answers][:5]  # answer-node entities, in evidence order
    assert not set(shown) & set(bridges)
    only_bridges = dataclasses.replace(item, answers=bridges)
    assert answer_demo(only_bridges, retrieve, movies2.kg, evidence_lines) is None  # nothing at the answer node


def test_misses_reach_a_prefix_reusing_backend_in_text_order():
    """llama.cpp answers one prompt at a time and reuses the previous prompt's prefix: text order puts prompts that
    share demonstrations next to each other; batched backends keep shortest first."""
    from kgrag_utils.llm.llamacpp_backend import LlamaCppLLM

    assert LlamaCppLLM.miss_order == "text"
    llm = load_llm("fake", responses=lambda text: "ok", cache=False)
    prompts = ["shared demos B q1", "shared demos A q22", "shared demos B q3", "x"]
    llm.generate(prompts)
    assert llm.prompts_seen == ["x", "shared demos B q1", "shared demos B q3", "shared demos A q22"]  # by length
    llm.prompts_seen.clear()
    llm.miss_order = "text"
    results = llm.generate(prompts)
    assert llm.prompts_seen == ["shared demos A q22", "shared demos B q1", "shared demos B q3", "x"]
    assert [r.text for r in results] == ["ok"] * 4  # answers come back in the prompts' order either way


def test_the_preset_default_uses_nearest_demos_only_where_the_dataset_has_them(movies2, monkeypatch):
    from kgrag_utils.methods.simgrag.config import PRESET_DEMOS

    monkeypatch.setitem(PRESET_DEMOS, "qwen2.5-coder-0.5b", "nearest")
    config = SimGRAGConfig(dataset=movies2.name, llm_preset="qwen2.5-coder-0.5b")  # demos="" : the preset's
    method = SimGRAG.prepare(config, movies2, embedder=WordsEmbedder())
    assert method.demos_mode == "nearest" and method.demos_note == "nearest" and method.demo_pool is not None
    assert method.answer_demos_mode == "nearest"  # answer_demos="": as the pattern demonstrations
    paper = SimGRAG.prepare(config.replace(demos="fixed"), movies2, embedder=WordsEmbedder())
    assert (paper.demos_mode, paper.answer_demos_mode) == ("fixed", "fixed")  # one knob gives the paper's prompts
    split = SimGRAG.prepare(config.replace(answer_demos="fixed"), movies2, embedder=WordsEmbedder())
    assert (split.demos_mode, split.answer_demos_mode) == ("nearest", "fixed")
    answers_only = SimGRAG.prepare(config.replace(demos="fixed", answer_demos="nearest"), movies2, embedder=WordsEmbedder())
    assert (answers_only.demos_mode, answers_only.answer_demos_mode) == ("fixed", "nearest")
    # a family without demonstration wording (PathQuestion's people): the fixed shots, and the record says why
    other = SimGRAG.prepare(config.replace(family="people"), movies2, embedder=WordsEmbedder())
    assert other.demos_mode == "fixed" and "no wording" in other.demos_note
    dev = load_dataset("sample-movies-2hop", split="dev")  # evaluated on the training split: no pool
    fallback = SimGRAG.prepare(config.replace(split="dev"), dev, embedder=WordsEmbedder())
    assert fallback.demos_mode == "fixed" and "not available" in fallback.demos_note
    assert fallback.answer_demos_mode == "fixed" and fallback.answer_demos(dev.items[0]) == []
    with pytest.raises(ConfigError, match="training split"):  # asked for explicitly: refused
        SimGRAG.prepare(config.replace(split="dev", demos="nearest"), dev, embedder=WordsEmbedder())
    with pytest.raises(ConfigError, match="training split"):  # the answer demonstrations too
        SimGRAG.prepare(config.replace(split="dev", demos="fixed", answer_demos="nearest"), dev, embedder=WordsEmbedder())
    # a preset without the field's override (the fake test double) keeps the fixed shots
    assert SimGRAG.prepare(config.replace(llm_preset="fake"), movies2, embedder=WordsEmbedder()).demos_mode == "fixed"


def test_the_packaged_presets_default_demonstrations_are_the_measured_ones():
    """docs/DEMONSTRATIONS.md#defaults: the 1.5B measured better with nearest demonstrations on every MetaQA hop,
    the 0.5B on 2-hop; the other presets were not measured and keep the paper's fixed shots."""
    from kgrag_utils.llm.presets import DEFAULT_CPU_PRESET, PRESETS
    from kgrag_utils.methods.simgrag.config import PRESET_DEMOS

    assert set(PRESET_DEMOS) <= set(PRESETS) and PRESET_DEMOS[DEFAULT_CPU_PRESET] == "nearest"
    assert {name for name, mode in PRESET_DEMOS.items() if mode == "nearest"} == {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"}
    assert not any("demos" in f for f in PRESETS[DEFAULT_CPU_PRESET].to_dict())  # the LLM layer knows no method
    config = SimGRAGConfig(llm_preset="qwen2.5-coder-1.5b")
    assert requested_demos(config) == "nearest" and requested_demos(config.replace(demos="fixed")) == "fixed"
    assert requested_answer_demos(config) == "nearest"  # the answer prompt follows the pattern demonstrations
    assert requested_answer_demos(config.replace(demos="fixed")) == "fixed"
    assert requested_answer_demos(config.replace(answer_demos="fixed")) == "fixed"


def test_a_questions_samples_are_generated_back_to_back_for_the_prefix_cache(movies2, retriever):
    """samples=n: sample i of a question follows sample i-1 of the same question (one schema per question),
    so llama.cpp reuses the whole prompt's KV cache and a sample costs its decoding only."""
    llm = load_llm("fake", responses=lambda text: "{}", cache=False, structured="schema")
    pipe = SimGRAG(SimGRAGConfig(samples=3, shots=2), movies2.kg, retriever, llm, dataset=movies2.name)
    calls = []

    def spy(prompts, schema=None, seed=0, **kw):
        calls.append((json.dumps(schema, sort_keys=True), seed))
        return [f"{schema['title']}/{seed}" for _ in prompts]

    llm.generate = spy
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(3)]
    schemas = [{"title": "a"}, {"title": "b"}, {"title": "a"}]  # questions 0 and 2 share a schema: one call
    out = pipe._generate_patterns(prompts, schemas, samples=3)
    order = [(json.loads(sc)["title"], seed) for sc, seed in calls]
    assert order == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)]
    assert out == [["a/0", "b/0", "a/0"], ["a/1", "b/1", "a/1"], ["a/2", "b/2", "a/2"]]
