"""SimGRAG without an LLM from its demonstrations: pattern_source="copied" (the nearest demonstration copied
perfectly onto the question's topic entity), demo_wording (other words for a relation in the demonstrations), the
chosen demonstrations' own-type count per question and its score rows, and the retrieval score rows of every run
(fact_hit, gold_relations, pattern_miss).

The embedder is test_demos.py's bag-of-words stand-in (questions of one template are near each other); no LLM is
loaded anywhere here (a run that tried would fail: the preset is a packaged model the tests do not load).
"""

from __future__ import annotations

import dataclasses

import pytest

from kgrag_utils.datasets import load_dataset
from kgrag_utils.errors import ConfigError
from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
from kgrag_utils.methods.simgrag.stages.demos import copied_pattern, demo_fields, pattern_demo
from kgrag_utils.methods.simgrag.stages.oracle import oracle_pattern
from kgrag_utils.methods.simgrag.summary import record_scores, summarize
from stand_ins import WordsEmbedder


@pytest.fixture(scope="module")
def movies2():
    return load_dataset("sample-movies-2hop")


def _item(base, qid, topic, chain, qtype):
    return dataclasses.replace(base, qid=qid, question=f"question {qid} about [{topic}]", topic_entities=[topic],
                               chain=chain, qtype=qtype, hops=len(chain))


def test_a_copied_demonstration_is_the_demonstrations_gold_chain_in_its_words(movies2):
    base = movies2.items[0]
    chain = [("directed_by", False), ("starred_actors", True)]
    demo = _item(base, "d1", "Tobias Wrenfield", chain, "director_to_movie_to_actor")
    question = _item(base, "q1", "Mirela Castaway", chain, "director_to_movie_to_actor")
    shot = pattern_demo(demo)
    assert shot["topic"] == "Tobias Wrenfield"
    p = copied_pattern(question, shot)
    # the demonstration's triples, word for word, on the question's topic entity
    assert [list(t) for t in p.triples()] == [[question.topic_entities[0] if x == "Tobias Wrenfield" else x for x in t]
                                               for t in shot["triples"]]
    assert [list(t) for t in p.triples()] == pattern_demo(question)["triples"]  # same type: the question's own chain
    assert [list(t) for t in p.triples()] == [["Mirela Castaway", "directed", "UNKNOWN movie 1"],
                                               ["UNKNOWN actor 2", "starred in", "UNKNOWN movie 1"]]
    assert p.nodes[p.answer].label == "UNKNOWN actor 2" and p.source == "copied"
    # in another wording: the demonstration's words are the copy's
    acted = copied_pattern(question, pattern_demo(demo, wording={"starred_actors": {"words": "acted in"}}))
    assert [t[1] for t in acted.triples()] == ["directed", "acted in"]
    # a demonstration of another type is copied as it is: its chain, not the question's
    other = _item(base, "d2", "Tobias Wrenfield", [("written_by", True)], "movie_to_writer")
    wrong = copied_pattern(question, pattern_demo(other))
    assert [t[1] for t in wrong.triples()] == [pattern_demo(other)["triples"][0][1]] and len(wrong.edges) == 1


def test_demo_wording_is_checked_where_it_is_given():
    with pytest.raises(ConfigError, match="its keys are"):
        SimGRAGConfig(demo_wording={"starred_actors": {"wrods": "acted in"}})
    with pytest.raises(ConfigError, match="subject"):
        SimGRAGConfig(demo_wording={"starred_actors": {"words": "stars", "subject": "movie"}})
    with pytest.raises(ConfigError, match=r"\{x\}"):
        SimGRAGConfig(demo_wording={"starred_actors": {"backward": "movies acted in"}})
    with pytest.raises(ConfigError, match="copies the nearest demonstration"):
        SimGRAGConfig(pattern_source="copied", demos="fixed")
    assert not SimGRAGConfig(pattern_source="copied", reader=False).needs_llm
    item = type("Q", (), {"qid": "q", "question": "?", "chain": [("spouse_of", True)], "topic_entities": ["A"],
                          "qtype": None})()
    with pytest.raises(ConfigError, match="missing: subject, forward, backward"):  # a relation the file has no entry for
        pattern_demo(item, "movies", wording={"spouse_of": {"words": "married"}})


def test_own_type_fields_count_the_demonstrations_of_the_questions_type(movies2):
    q = _item(movies2.items[0], "q", "A", [("directed_by", True)], "movie_to_director")
    shots = [{"qtype": "movie_to_director"}, {"qtype": "movie_to_writer"}, {"qtype": "movie_to_director"}]
    assert demo_fields(q, shots, None) == {"pattern_demo_types": ["movie_to_director", "movie_to_writer",
                                                                  "movie_to_director"],
                                           "demo_own_type": "some", "pattern_demo_respelt": None}
    assert demo_fields(q, [], None)["demo_own_type"] is None
    # the score rows: each question's share of its type, and whether all / none are; 3 questions, 8 demonstrations
    recs = [{"id": str(i), "qtype": "t", "pattern_source": "copied", "hits@1": h, "containment": h, "pattern_ok": True,
             "retrieval_hit": True, "oracle_retrieval_hit": True, "top1_gold_relations": True, "pattern_demos": ["d"] * k,
             "pattern_demo_types": ["t"] * own + ["u"] * (k - own), "pattern_demo_respelt": i == 0}
            for i, (k, own, h) in enumerate([(2, 2, 1.0), (3, 1, 0.0), (3, 0, 0.0)])]
    scores = record_scores(recs[1])["pattern=copied"]
    assert scores["own_type_share"] == pytest.approx(1 / 3) and scores["own_type_all"] == 0.0
    assert scores["own_type_none"] == 0.0
    s = summarize(recs)
    own = s["demonstrations"]["own_type"]
    assert (own["questions"], own["demonstrations"], own["of_own_type"], own["questions_all_own_type"]) == (3, 8, 3, 1)
    assert own["by_own_type"]["none"] == {"n": 1, "hits@1": 0} and s["questions_respelt"] == 1
    rows = {r["metric"]: r["value"] for r in s["rows"] if r["variant"] == "pattern=copied"}
    assert rows["own_type_share"] == pytest.approx((1 + 1 / 3 + 0) / 3)  # the mean of each question's share
    assert rows["own_type_all"] == pytest.approx(1 / 3) and rows["own_type_none"] == pytest.approx(1 / 3)
    assert "the question's own" in next(r["definition"] for r in s["rows"] if r["metric"] == "own_type_share")
    fixed = summarize([{k: v for k, v in r.items() if not k.startswith("pattern_demo")} for r in recs])
    assert "questions_respelt" not in fixed and not any(r["metric"].startswith("own_type") for r in fixed["rows"])


def test_retrieval_rows_say_what_the_pattern_lost_against_the_gold_one():
    base = {"pattern_source": "llm", "task": "qa", "hits@1": 0.0, "containment": 0.0, "failed": True}
    lost = record_scores({**base, "retrieval_hit": False, "oracle_retrieval_hit": True, "top1_gold_relations": False})
    assert lost["pattern=llm"] == {"hits@1": 0.0, "containment": 0.0, "fact_hit": 0.0, "gold_relations": 0.0,
                                   "pattern_miss": 1.0}
    both = record_scores({**base, "retrieval_hit": False, "oracle_retrieval_hit": False, "top1_gold_relations": True})
    assert both["pattern=llm"]["pattern_miss"] == 0.0 and both["pattern=llm"]["gold_relations"] == 1.0
    # a failed answer does not undo the retrieval's hit; no gold pattern: nothing to compare with (nan)
    found = record_scores({**base, "retrieval_hit": True, "oracle_retrieval_hit": None, "top1_gold_relations": None})
    assert found["pattern=llm"]["fact_hit"] == 1.0
    assert all(v != v for k, v in found["pattern=llm"].items() if k in ("gold_relations", "pattern_miss"))
    claim = record_scores({**base, "task": "verify", "retrieval_hit": True})["pattern=llm"]
    assert set(claim) == {"hits@1", "containment", "accuracy"}  # claims: no retrieval rows (their hit is coverage)


def test_a_copied_run_records_its_demonstrations_and_retrieves_their_copy_without_an_llm(movies2):
    config = SimGRAGConfig(dataset=movies2.name, pattern_source="copied", reader=False, shots=3, demo_spelling=False)
    method = SimGRAG.prepare(config, movies2, embedder=WordsEmbedder())
    assert method.demos_mode == "nearest" and method.demo_pool is not None
    items = movies2.items[:6]
    records = method.run(items, progress=False)
    by_id = dict(zip(method.demo_pool.ids, method.demo_pool.items))
    for rec, q in zip(records, items):
        nearest = [d.id for d in method.demo_pool.nearest(q, 3)][::-1]
        assert rec["pattern_demos"] == nearest and rec["pattern_prompt"] is None  # chosen as an LLM run's, no prompt
        assert rec["pattern_triples"] == [list(t) for t in copied_pattern(q, pattern_demo(by_id[nearest[-1]])).triples()]
        types = [by_id[i].qtype for i in nearest]
        own = sum(t == q.qtype for t in types)
        assert rec["pattern_demo_types"] == types
        assert rec["demo_own_type"] == ("all" if own == 3 else "some" if own else "none")
        gold = sorted(r for _, r, _ in oracle_pattern(q).triples())
        assert rec["top1_gold_relations"] == (rec["top1_relations"] is not None and sorted(rec["top1_relations"]) == gold)
        assert rec["hits@1"] == float(bool(rec["top1_hit"]))  # retrieval only: the top-1 answer node is the prediction
    assert method._llm is None  # nothing loaded an LLM
    s = summarize(records)
    rows = {r["metric"]: r for r in s["rows"] if r["variant"] == "pattern=copied"}
    assert not rows["hits@1"]["uses_llm"] and rows["own_type_share"]["n"] == len(items)
    assert rows["own_type_share"]["value"] == pytest.approx(
        sum(sum(t == r["qtype"] for t in r["pattern_demo_types"]) / 3 for r in records) / len(records))
    assert rows["fact_hit"]["value"] == pytest.approx(sum(r["retrieval_hit"] for r in records) / len(records))
