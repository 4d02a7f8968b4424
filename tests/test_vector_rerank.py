"""Vector retrieval + LLM rerank: index, expansion, entity fallback, id mapping, variants, OpenIE resume."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
import scipy.sparse as sp
from stand_ins import HashBOW

from kgrag_utils.datasets.items import Passage, PassageQuestion
from kgrag_utils.embeddings import Embedder
from kgrag_utils.errors import ConfigError
from kgrag_utils.llm import load_llm
from kgrag_utils.methods.vector_rerank.stages.openie import triples_from_answer
from kgrag_utils.datasets.registry import get_spec
from kgrag_utils.methods.vector_rerank.config import VARIANTS, parse_variants
from kgrag_utils.methods.vector_rerank.stages.graph_index import GraphIndex
from kgrag_utils.methods.vector_rerank import VectorRerank, VectorRerankConfig, summarize
from kgrag_utils.methods.vector_rerank.stages.expansion import cap_by_similarity, expand
from kgrag_utils.methods.vector_rerank.prompts import entity_prompt, rerank_prompt
from kgrag_utils.methods.vector_rerank.stages.openie import extract_openie, openie_store_path
from kgrag_utils.methods.vector_rerank.stages.query_entities import lexical_entities, parse_entity_answer
from kgrag_utils.methods.vector_rerank.stages.rerank import map_rerank_answer
from kgrag_utils.methods.vector_rerank.stages.corpus import pool_corpus


def hash_embedder() -> Embedder:
    return Embedder(model=HashBOW(dim=64), model_id="hash-bow-test", cache=False)


CORPUS = [
    Passage("Marl Bridge#1", "Marl Bridge", "Marl Bridge crosses the Tolle. It was designed by Cosima Fairweather."),
    Passage("Cosima Fairweather#2", "Cosima Fairweather", "Cosima Fairweather was born in Dunmere in 1840."),
    Passage("Dunmere#3", "Dunmere", "Dunmere is a town in Aveland, founded in 1568."),
    Passage("Aveland#4", "Aveland", "Aveland is a province whose capital is Ostby."),
    Passage("Paper Lantern#5", "Paper Lantern", "Paper Lantern is a 1958 film directed by Jasper Rookwood."),
]
TRIPLES = {
    "Marl Bridge#1": [("Marl Bridge", "crosses", "Tolle"), ("Marl Bridge", "designed by", "Cosima Fairweather")],
    "Cosima Fairweather#2": [("Cosima Fairweather", "born in", "Dunmere"), ("Cosima Fairweather", "born in year", "1840"),
                             ("marl bridge", "designed by", "cosima  fairweather")],  # same relation, other case
    "Dunmere#3": [("Dunmere", "located in", "Aveland"), ("Dunmere", "founded in", "1568")],
    "Aveland#4": [("Aveland", "capital", "Ostby")],
    "Paper Lantern#5": [("Paper Lantern", "directed by", "Jasper Rookwood"), ("Paper Lantern", "released in", "1958")],
    "not-in-corpus#9": [("X", "y", "Z")],
}
QUESTIONS = [
    PassageQuestion("q1", "When was the birthplace of the designer of Marl Bridge founded?", ["1568"], [],
                    ["Marl Bridge#1", "Cosima Fairweather#2", "Dunmere#3"], ["Marl Bridge", "Cosima Fairweather", "Dunmere"],
                    "3hop"),
    PassageQuestion("q2", "Who directed Paper Lantern?", ["Jasper Rookwood"], [], ["Paper Lantern#5"], ["Paper Lantern"],
                    "1hop"),
]


@pytest.fixture(scope="module")
def index():
    return GraphIndex.build(CORPUS, TRIPLES, hash_embedder())


# --------------------------------------------------------------------------------------------- index
def test_index_dedups_entities_and_relations_and_keeps_passage_ids(index):
    assert index.num_passages == 5
    assert index.num_relations == 9  # the re-cased duplicate is merged, the unknown passage skipped
    assert index.info["triples_skipped_unknown_passage"] == 1
    assert index.entity_names.count("Cosima Fairweather") == 1 and "cosima fairweather" not in index.entity_names
    rid = index.relation_sentences.index("Marl Bridge designed by Cosima Fairweather")
    assert sorted(index.passage_pids[p] for p in index.relation_passages(rid)) == ["Cosima Fairweather#2", "Marl Bridge#1"]
    assert sp.issparse(index.incidence) and index.incidence.shape == (index.num_entities, index.num_relations)
    assert index.incidence.nnz == 2 * index.num_relations  # no self loops here: head and tail per relation


def test_index_search_returns_self_for_exact_texts(index):
    vecs = index.encode(["Marl Bridge", "Dunmere founded in 1568"])
    assert index.entity_names[index.search_entities(vecs[:1], 1)[0][0][0]] == "Marl Bridge"
    assert index.relation_sentences[index.search_relations(vecs[1:], 1)[0][0][0]] == "Dunmere founded in 1568"


def test_index_without_vectors_says_how_to_build():
    bare = GraphIndex.from_triples(CORPUS, TRIPLES)
    with pytest.raises(ConfigError, match="GraphIndex.build"):
        bare.search_passages(np.zeros((1, 4), dtype=np.float32), 2)


# --------------------------------------------------------------------------------------------- expansion
def _matrix_power_expansion(A: np.ndarray, e0, r0, d: int) -> set[int]:
    """The published formula, dense, for checking: (A A^T)^(d-1) A rows of e0, (A^T A)^d rows of r0."""
    A = (A > 0).astype(np.int64)
    out: set[int] = set(r0)
    if d == 0:
        return out
    ee = np.linalg.matrix_power(A @ A.T, d - 1) @ A
    rr = np.linalg.matrix_power(A.T @ A, d)
    for e in e0:
        out |= set(np.flatnonzero(ee[e]).tolist())
    for r in r0:
        out |= set(np.flatnonzero(rr[r]).tolist())
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("degree", [0, 1, 2, 3])
def test_sparse_expansion_equals_matrix_power_formula(seed, degree):
    rng = np.random.default_rng(seed)
    n_e, n_r = 30, 40
    heads, tails = rng.integers(0, n_e, n_r), rng.integers(0, n_e, n_r)
    rows, cols = np.concatenate([heads, tails]), np.concatenate([np.arange(n_r)] * 2)
    inc = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n_e, n_r))
    e0 = rng.choice(n_e, 2, replace=False).tolist()
    r0 = rng.choice(n_r, 2, replace=False).tolist()
    exp = expand(inc, inc.T.tocsr(), e0, r0, degree)
    assert set(exp.relation_ids.tolist()) == _matrix_power_expansion(inc.toarray(), e0, r0, degree)
    assert set(exp.relation_ids[exp.hops == 0].tolist()) == set(r0)
    assert np.all(np.diff(exp.hops) >= 0)


def test_expansion_grows_with_degree_and_reaches_the_second_hop(index):
    e = index.entity_ids["marl bridge"]
    one = expand(index.incidence, index.incidence_t, [e], [], 1)
    two = expand(index.incidence, index.incidence_t, [e], [], 2)
    s1 = {index.relation_sentences[r] for r in one.relation_ids}
    s2 = {index.relation_sentences[r] for r in two.relation_ids}
    assert s1 == {"Marl Bridge crosses Tolle", "Marl Bridge designed by Cosima Fairweather"}
    assert "Cosima Fairweather born in Dunmere" in s2 and s1 < s2
    with pytest.raises(ConfigError):
        expand(index.incidence, index.incidence_t, [10_000], [], 1)


def test_cap_by_similarity_keeps_the_most_similar_with_stable_ties():
    ids, sims = cap_by_similarity(np.array([7, 3, 5, 9]), np.array([0.1, 0.9, 0.9, 0.5]), 3)
    assert ids.tolist() == [3, 5, 9] and sims.tolist() == pytest.approx([0.9, 0.9, 0.5])


# --------------------------------------------------------------------------------------------- query entities
def test_parse_entity_answer_accepts_json_lists_and_rejects_the_rest():
    assert parse_entity_answer('```json\n["Marl Bridge", "marl  bridge", 1840]\n```') == ["Marl Bridge", "1840"]
    # names not written in the question (copied from the few-shot examples) are dropped
    q = "Who designed Marl Bridge in 1840?"
    assert parse_entity_answer('["Greta Hallam", "marl bridge", "1840"]', q) == ["marl bridge", "1840"]
    assert parse_entity_answer('["Greta Hallam", "Lisbon"]', q) is None
    assert parse_entity_answer('{"entities": ["Dunmere"]}') == ["Dunmere"]
    assert parse_entity_answer("I think it is Marl Bridge.") is None
    assert parse_entity_answer("[]") is None and parse_entity_answer(None) is None


def test_lexical_entities_prefers_vocabulary_ngrams_then_capitalised_runs(index):
    q = "When was the birthplace of the designer of Marl Bridge founded, and who built the Velder Tower?"
    assert lexical_entities(q, index.entity_ids) == ["Marl Bridge", "Velder Tower"]
    assert lexical_entities("what is it?", index.entity_ids) == []
    assert lexical_entities("Who was born in 1840?", index.entity_ids) == ["1840"]


# --------------------------------------------------------------------------------------------- rerank mapping
SENTS = ["Marl Bridge designed by Cosima Fairweather", "Cosima Fairweather born in Dunmere", "Dunmere founded in 1568"]


@pytest.mark.parametrize("answer, positions, status", [
    ('{"reasoning": "chain", "ids": [1, 2, 3]}', [0, 1, 2], "json"),
    ('{"thought_process": "x", "useful_relations": ["[3] Dunmere founded in 1568", "[1] Marl ..."]}', [2, 0], "json"),
    ('{"ids": [2, 2, 9, "[1]"]}', [1, 0], "json"),
    ('{"ids": ["Dunmere founded in 1568", "cosima fairweather born in dunmere"]}', [2, 1], "json"),
    ('{"ids": [17]}', [], "failed"),
    ('{"ids": []}', [], "empty"),
    ("[2] Cosima Fairweather born in Dunmere\n[3] Dunmere founded in 1568", [1, 2], "marks"),
    ("no idea", [], "failed"),
    ('{"ids": [[ "Marl Bridge", "designed by", "Cosima Fairweather" ]]}', [0], "json"),
    # cut by the token limit: the complete ids are kept, the last one (maybe "2" of "25") is dropped
    ('{"ids": [3, 1, 2', [2, 0], "partial"),
    ('{"ids": [3, 1, ', [2, 0], "partial"),
    ('{"reasoning": "Dunmere [3] then [1]", "ids": [2, 1', [1], "partial"),  # the ids win over the marks
    ('{"ids": [2, 3], "reasoning": "the designer [2] was born in Dunm', [1, 2], "json"),  # the list is complete
    # a looping reasoning that restates facts without ids: matched clause by clause, in order
    ('{"reasoning": "Dunmere founded in 1568; Cosima Fairweather born in Dunmere; Dunmere founded in 1568; Dunm',
     [2, 1], "text"),
    ('{"reasoning": "The answer is probably somewhere in the facts above and I am not sure which', [], "failed"),
])
def test_map_rerank_answer_is_robust(answer, positions, status):
    choice = map_rerank_answer(answer, SENTS)
    assert choice.positions == positions and choice.status == status


def test_map_rerank_answer_counts_bad_duplicate_and_textual_ids():
    choice = map_rerank_answer('{"reasoning": "r", "ids": [2, 2, 9, "[7] Dunmere founded in 1568", "nonsense"]}', SENTS)
    assert choice.positions == [1, 2]
    assert choice.duplicates == 1 and choice.by_text == 1 and choice.bad_ids == [9, "nonsense"]
    assert choice.reasoning == "r"


def test_prompts_list_candidates_as_id_lines_and_ask_for_json():
    chat = rerank_prompt("Q?", SENTS, 2)
    assert [m["role"] for m in chat] == ["user", "assistant", "user"]
    assert "[1] Marl Bridge designed by Cosima Fairweather\n[2]" in chat[-1]["content"]
    assert "Choose the 2 facts" in chat[-1]["content"] and json.loads(chat[1]["content"])["ids"]
    # the reasoning comes first (chain of thought); the example's own answer maps back to its ids
    assert list(json.loads(chat[1]["content"])) == ["reasoning", "ids"]
    assert map_rerank_answer(chat[1]["content"], ["f"] * 7).positions == [0, 2, 4, 3, 5]
    ent = entity_prompt("Who built Marl Bridge?")
    assert [m["role"] for m in ent][-2:] == ["assistant", "user"] and ent[-1]["content"] == "Question: Who built Marl Bridge?"
    assert "JSON list" in ent[0]["content"] and json.loads(ent[1]["content"])


# --------------------------------------------------------------------------------------------- pipeline
def _fake_llm(rerank_answer):
    def respond(text: str) -> str:
        if "List the named entities" in text:
            return '["Greta Hallam", "Marl Bridge"]' if "Marl Bridge" in text.split("Question:")[-1] else "not json"
        question = text.split("Question:")[-1].split("\n")[0]  # the task's question, repeated after its facts
        return "no idea" if "Paper Lantern" in question else rerank_answer(text.split("Facts:")[-1])
    return load_llm("fake", responses=respond, cache=False)


def _pick(*sentences):
    def answer(facts: str) -> str:
        ids = [int(m.group(1)) for s in sentences for m in [re.search(rf"\[(\d+)\] {re.escape(s)}\n?", facts)] if m]
        return json.dumps({"reasoning": "follow the chain", "ids": ids})
    return answer


def test_pipeline_variants_records_and_recall(index):
    llm = _fake_llm(_pick("Dunmere founded in 1568", "Cosima Fairweather born in Dunmere"))
    cfg = VectorRerankConfig(dataset="sample-passages", degree=2, candidate_cap=20, final_k=5, entity_min_score=0.5)
    recs = VectorRerank(cfg, index, llm).run(QUESTIONS, progress=False)
    r1 = recs[0]
    assert set(r1["variants"]) == set(VARIANTS)
    assert r1["graph"]["rerank"]["entity_source"] == "llm" and r1["graph"]["expand"]["entity_source"] == "lexical"
    assert r1["graph"]["rerank"]["query_entities"] == ["Marl Bridge"]
    assert "Greta Hallam" in " ".join(r1["graph"]["rerank"]["entity_notes"])
    assert r1["variants"]["rerank"]["passages"] == ["Dunmere#3", "Cosima Fairweather#2"]
    assert r1["variants"]["rerank"]["recall@2"] == pytest.approx(2 / 3)
    padded = r1["variants"]["rerank-padded"]
    assert padded["passages"][:2] == ["Dunmere#3", "Cosima Fairweather#2"] and len(padded["passages"]) == 5
    assert len(set(padded["passages"])) == 5 and padded["n_padded"] == 3
    assert r1["rerank"]["prompt"][-1]["content"].count("\n[") == len(r1["graph"]["rerank"]["candidates"])
    assert r1["rerank"]["status"] == "json" and r1["tokens"]["prompt"] > 0 and "rerank_llm" in r1["timings"]
    filled = r1["variants"]["rerank-filled"]
    assert filled["passages"][:2] == ["Dunmere#3", "Cosima Fairweather#2"] and len(filled["passages"]) > 2
    assert not filled["rerank_failed"]
    # q2: the LLM's entity answer is not JSON -> lexical fallback, and its rerank finds none of the facts -> failed
    r2 = recs[1]
    assert r2["graph"]["rerank"]["entity_source"] == "lexical"
    assert "fallback" in " ".join(r2["graph"]["rerank"]["entity_notes"])
    assert r2["variants"]["rerank"]["failed"] and r2["variants"]["rerank"]["passages"] == []
    assert r2["variants"]["rerank-padded"]["passages"] == r2["variants"]["naive"]["passages"]
    assert r2["variants"]["rerank-filled"]["rerank_failed"] and r2["variants"]["rerank-filled"]["passages"]
    s = summarize(recs)
    assert s["variants"]["rerank"]["n_failed"] == 1 and s["variants"]["rerank"]["n"] == 2
    assert s["variants"]["rerank"]["recall@5"] == pytest.approx((2 / 3 + 0) / 2)
    assert s["rerank_status"] == {"failed": 1, "json": 1}


def test_summary_counts_picks_and_replies_that_count_down_the_list():
    from kgrag_utils.methods.vector_rerank.summary import pick_shape

    recs = [{"rerank": {"raw": "r", "positions": p}} for p in ([0, 1, 2, 3, 4], [0, 1, 2], [3, 0], [0, 1], [2, 1, 0])]
    recs.append({"rerank": {"raw": None, "positions": []}})  # no candidates: no reply, not counted
    assert pick_shape(recs) == {"rerank_picks_mean": 3.0, "rerank_list_head": 2, "rerank_replies": 5}
    assert pick_shape([{"variants": {}}]) == {}
    voted = [{"rerank": {"raw": "r", "positions": [1], "vote": v}} for v in ("majority", "plurality", "majority")]
    assert pick_shape(voted)["rerank_votes"] == {"majority": 2, "plurality": 1}


@pytest.mark.parametrize("picks, n, chosen, rule", [
    ([[1, 0], [1, 2], [1]], 3, [1], "majority"),            # 1 named by all three; 0 and 2 by one each
    ([[0, 1], [1, 0], [2]], 3, [0, 1], "majority"),          # a tie in votes keeps the order the replies named them
    ([[0], [1], [2]], 3, [0, 1, 2], "plurality"),            # no majority: the most-voted, in naming order
    ([[3, 3, 3], [4], []], 3, [3, 4], "plurality"),          # a reply votes once per candidate; [] still counts in n
    ([[0, 1], [0, 1], []], 3, [0, 1], "majority"),           # 2 of 3 is a majority though one reply named nothing
    ([[], []], 2, [], "none"),
])
def test_rerank_vote(picks, n, chosen, rule):
    from kgrag_utils.methods.vector_rerank.stages.samples import vote

    got, votes, how = vote(picks, n)
    assert (got, how) == (chosen, rule)
    assert sum(votes.values()) == sum(len(set(p)) for p in picks)


def test_sampled_rerank_votes_over_seeded_replies_and_records_each(index, tmp_path):
    """samples=3: a greedy reply and two sampled ones per question, asked in a row; the vote picks the facts; a rerun
    with the same seeds is answered from the response cache; samples=1 records stay as they were (no sample fields)."""
    calls: list[str] = []

    def respond(text: str) -> str:
        if "List the named entities" in text:
            return '["Marl Bridge"]' if "Marl Bridge" in text.split("Question:")[-1] else "not json"
        question = text.split("Question:")[-1].split("\n")[0]
        if "Paper Lantern" in question:
            return "no idea"
        calls.append(question)
        facts = text.split("Facts:")[-1]
        # reply 0: both facts, reply 1: only the first, reply 2: the first again -> it wins 3 to 1
        both = ("Dunmere founded in 1568", "Cosima Fairweather born in Dunmere")
        return _pick(*(both if len(calls) % 3 == 1 else both[:1]))(facts)

    cfg = VectorRerankConfig(dataset="sample-passages", degree=2, candidate_cap=20, final_k=5, entity_min_score=0.5,
                             samples=3)
    llm = load_llm("fake", responses=respond, cache=tmp_path / "llm.sqlite")
    r1 = VectorRerank(cfg, index, llm).run(QUESTIONS[:1], progress=False)[0]
    rr = r1["rerank"]
    assert [s["seed"] for s in rr["samples"]] == [0, 1, 2] and [s["temperature"] for s in rr["samples"]] == [0.0, 0.7, 0.7]
    assert [len(s["positions"]) for s in rr["samples"]] == [2, 1, 1] and rr["vote"] == "majority"
    assert [c[1] for c in rr["chosen"]] == ["Dunmere founded in 1568"]
    assert r1["variants"]["rerank"]["passages"] == ["Dunmere#3"]
    assert sorted(rr["votes"].values()) == [1, 3] and rr["status"] == "json"
    assert len(calls) == 3 and not rr["cached"]
    again = VectorRerank(cfg, index, llm).run(QUESTIONS[:1], progress=False)[0]["rerank"]  # same seeds: all cached
    assert len(calls) == 3 and again["cached"] and again["chosen"] == rr["chosen"]
    greedy = VectorRerank(cfg.model_copy(update={"samples": 1}), index, llm).run(QUESTIONS[:1], progress=False)[0]
    assert "samples" not in greedy["rerank"] and len(calls) == 3  # the greedy reply is reply 0's cache row
    assert [c[1] for c in greedy["rerank"]["chosen"]] == ["Dunmere founded in 1568", "Cosima Fairweather born in Dunmere"]
    with pytest.raises(ConfigError, match="samples"):
        VectorRerankConfig(samples=0)
    with pytest.raises(ConfigError, match="sample_temperature"):
        VectorRerankConfig(samples=3, sample_temperature=0)


def test_pipeline_without_llm_runs_the_no_llm_variants_only(index):
    cfg = VectorRerankConfig(variants="naive,expand")
    recs = VectorRerank(cfg, index, None).run(QUESTIONS[:1], progress=False)
    assert set(recs[0]["variants"]) == {"naive", "expand"} and "rerank" not in recs[0]
    method = VectorRerank(VectorRerankConfig(variants="rerank"), index, None)
    assert method.config.needs_llm and method.loaded_llm is None  # the config's preset is loaded on first use only


def test_expand_variant_orders_passages_by_relation_similarity(index):
    cfg = VectorRerankConfig(variants="expand", degree=1, candidate_cap=50)
    method = VectorRerank(cfg, index)
    rec = method.retrieve(QUESTIONS[1])
    cands = rec["graph"]["expand"]["candidates"]
    assert [c[2] for c in cands] == sorted((c[2] for c in cands), reverse=True)
    assert rec["variants"]["expand"]["passages"][0] == "Paper Lantern#5"


@pytest.mark.parametrize("order", ["passage", "relation"])
def test_fill_orders_rank_the_candidates_passages(index, order):
    """expand and the fill of rerank-filled: each candidate passage by its own similarity ("passage"), or in the
    order of the candidate relations that reach it ("relation"); the LLM's passages always come first."""
    llm = _fake_llm(_pick("Dunmere founded in 1568"))
    cfg = VectorRerankConfig(degree=2, candidate_cap=20, final_k=5, entity_min_score=0.5, fill_order=order)
    method = VectorRerank(cfg, index, llm)
    q = QUESTIONS[0]
    rec = method.retrieve(q)
    qvec = index.encode([q.question])[0]
    cand = [c[0] for c in rec["graph"]["expand"]["candidates"]]
    reached = sorted({int(p) for c in cand for p in index.relation_passages(c)})
    if order == "passage":
        sims = index.passage_vecs[reached] @ qvec
        want = [index.passage_pids[reached[i]] for i in np.argsort(-sims, kind="stable")]
    else:  # the relations' order, each relation's passages by similarity (the earlier rule)
        want = [index.passage_pids[p] for p in method.passages_of(cand, qvec, 5)]
    assert rec["variants"]["expand"]["passages"] == want[:5]
    filled = rec["variants"]["rerank-filled"]["passages"]
    assert filled[0] == "Dunmere#3" and len(filled) == len(set(filled))
    rcand = [c[0] for c in rec["graph"]["rerank"]["candidates"]]
    rest = [p for p in method.ranked_passages(rcand, qvec, 6) if index.passage_pids[p] != "Dunmere#3"]
    assert filled[1:] == [index.passage_pids[p] for p in rest][: len(filled) - 1]


def test_passage_fill_puts_the_most_similar_passage_before_a_more_similar_relations_passage():
    """Two candidate relations: the more similar relation sits in a passage that is less similar to the question.
    "relation" ranks by the relation, "passage" by the passage."""
    from kgrag_utils.methods.vector_rerank.method import VectorRerank as VR

    class Stub:
        passage_vecs = np.array([[1.0, 0.0], [0.0, 1.0]])

        @staticmethod
        def relation_passages(r):
            return np.array([r])  # relation r is in passage r

    qvec = np.array([0.2, 1.0])
    for order, want in (("passage", [1, 0]), ("relation", [0, 1])):
        m = VR.__new__(VR)
        m.index, m.config = Stub(), VectorRerankConfig(fill_order=order)
        assert m.ranked_passages([0, 1], qvec, 5) == want  # relation 0 listed first (the more similar relation)
        assert m.ranked_passages([0, 1], qvec, 5, first=[1]) == [1, 0]
        assert m.ranked_passages([0, 1], qvec, 1, first=[0, 1]) == [0]


def test_title_gold_matches_by_title(index):
    q = PassageQuestion("t", "Who directed Paper Lantern?", [], [], ["Paper Lantern"], ["Paper Lantern"], None)
    rec = VectorRerank(VectorRerankConfig(dataset="2wiki", variants="naive"), index).retrieve(q)
    assert rec["gold_key"] == "title" and rec["variants"]["naive"]["recall@5"] == 1.0
    assert get_spec("musique").traits.gold_unit == "pid" and get_spec("hotpotqa").traits.gold_unit == "title"


def test_run_resumes_from_recorder(index, tmp_path):
    from kgrag_utils.records import RunRecorder

    cfg = VectorRerankConfig(variants="naive,expand")
    rec = RunRecorder("vector_rerank", cfg.to_dict(), run_name="vr-resume", root=tmp_path)
    VectorRerank(cfg, index).run(QUESTIONS[:1], recorder=rec, progress=False)
    again = RunRecorder("vector_rerank", cfg.to_dict(), run_name="vr-resume", root=tmp_path)
    assert again.done_ids == {"q1"}
    out = VectorRerank(cfg, index).run(QUESTIONS, recorder=again, progress=False)
    assert [r["id"] for r in out] == ["q1", "q2"] and len(again.examples) == 2


def test_pool_corpus_keeps_gold_and_top_passages():
    emb = hash_embedder()
    pool, info = pool_corpus(CORPUS, QUESTIONS[1:], emb, per_question=1, gold_key="pid")
    assert [p.pid for p in pool] == ["Paper Lantern#5"]
    pool, info = pool_corpus(CORPUS, QUESTIONS, emb, per_question=0, gold_key="title")
    assert len(pool) == 4 and info["pool_passages"] == 4 and info["gold_not_in_corpus"] == 0


# --------------------------------------------------------------------------------------------- config
def test_config_validates_and_parses_variants():
    assert parse_variants("all") == VARIANTS
    assert parse_variants("rerank, naive") == ("naive", "rerank")
    with pytest.raises(ConfigError):
        parse_variants("rerank-plus")
    with pytest.raises(ConfigError):
        VectorRerankConfig(degree=5)
    with pytest.raises(ConfigError):
        VectorRerankConfig(candidate_cap=0)
    assert VectorRerankConfig(variants="naive").needs_llm is False



def test_the_oracle_variant_picks_a_candidate_for_each_gold_passage_and_is_never_part_of_all(index):
    """oracle-filled: the ceiling of any reranker over the candidates (docs/RESULTS.md, vr-ceiling): in similarity
    order one pick per gold passage not yet covered, at most select_n, then the fill."""
    assert "oracle-filled" not in parse_variants("all") and parse_variants("oracle-filled,naive") == ("naive", "oracle-filled")
    with pytest.raises(ConfigError, match="rank passages"):
        parse_variants("oracle-filled", "kgqa")
    cfg = VectorRerankConfig(variants="naive,expand,oracle-filled", degree=2, candidate_cap=20, final_k=5,
                             entity_min_score=0.5, select_n=2)
    assert not cfg.needs_llm
    method = VectorRerank(cfg, index, None)
    q = QUESTIONS[0]
    rec = method.retrieve(q)
    oracle, expand_row = rec["variants"]["oracle-filled"], rec["variants"]["expand"]
    cand = [c[0] for c in rec["graph"]["expand"]["candidates"]]
    reach = {c: {index.passage_pids[p] for p in index.relation_passages(c)} for c in cand}
    gold = set(q.supporting)
    picks, covered = [], set()
    for c in cand:  # the rule, written out
        if (gold & reach[c]) - covered and len(picks) < 2:
            picks.append(c)
            covered |= gold & reach[c]
    qvec = index.encode([q.question])[0]
    want = method.ranked_passages(cand, qvec, 5, first=method.passages_of(picks, qvec, 5))
    assert oracle["passages"] == [index.passage_pids[p] for p in want] and oracle["picks"] == len(picks) == 2
    assert oracle["coverage"] == len(gold & set().union(*reach.values())) / len(gold)
    assert oracle["gold_candidates"] == sum(bool(gold & r) for r in reach.values())
    assert oracle["recall@5"] >= expand_row["recall@5"]  # the same candidates, the gold ones first
    assert {"naive", "expand", "oracle-filled"} <= {r["variant"] for r in summarize([rec])["rows"]}

# --------------------------------------------------------------------------------------------- OpenIE
def test_openie_extracts_parses_filters_and_resumes(tmp_path):
    calls = []

    def respond(text: str) -> str:
        calls.append(text)
        task = text.split("Title: ")[-1]
        title, passage = task.split("\n")[0], task.split("Passage: ")[-1]
        if title == "Aveland":
            return "no triples here"
        last = passage.split()[-1].rstrip(".")
        return json.dumps([[title, "ends with", last], [title, "ends with", last],  # a repeat
                           ["Tove Lund", "spouse", "Jasper Rookwood"],  # copied from the few-shot example
                           [title, "is", title], ["", "x", "y"]])  # a loop, an empty part

    llm = load_llm("fake", responses=respond, cache=False)
    first = extract_openie(CORPUS[:2], llm, tag="unit", batch_size=1, progress=False)
    assert first.triples["Marl Bridge#1"] == [("Marl Bridge", "ends with", "Fairweather")]
    assert first.stats["newly_extracted"] == 2 and first.store.exists()
    n_calls = len(calls)
    second = extract_openie(CORPUS[:4], llm, tag="unit", batch_size=2, progress=False)
    assert len(calls) == n_calls + 2  # only the two new passages reached the model
    assert second.stats["newly_extracted"] == 2 and second.triples["Aveland#4"] == []
    assert second.stats["passages_without_triples"] == 1
    assert openie_store_path(llm, "unit", 384) == first.store
    with pytest.raises(ConfigError):
        openie_store_path(llm, "../evil", 384)
    index = GraphIndex.from_triples(CORPUS[:4], second.triples)
    assert index.num_relations == 3 and "Tove Lund" not in index.entity_names


def test_openie_answer_parsing_joins_split_predicates():
    text = '[["Waldrada", "is the mistress", "and later the wife", "of Lothair II"], ["Waldrada", "born", 850]]'
    assert triples_from_answer(text) == [("Waldrada", "is the mistress and later the wife", "of Lothair II"),
                                         ("Waldrada", "born", "850")]
    assert triples_from_answer("(Marl Bridge, crosses, Tolle)") == [("Marl Bridge", "crosses", "Tolle")]
    assert triples_from_answer("") == []


def test_openie_rows_without_three_parts_are_dropped_not_invented():
    # answers of the kind the 0.5B model gave on 2Wiki: 2-part rows (no predicate), split predicates, nulls
    text = json.dumps([["Renaud Garcia-Fons", "composer"], ["King Dikkha"], [],
                       ["William Cagney", "married", "to", "Tove Lund"],
                       ["Archpriest Dmitry", "was", "a", "retired", "Professor", "at", "Georgetown University"],
                       ["Zoli Adok", "born in", None], ["Zoli Adok", "won", True], ["Zoli Adok", ["born"], "Hungary"],
                       ["Zoli Adok", "born in", "Hungary"]])
    assert triples_from_answer(text) == [("William Cagney", "married to", "Tove Lund"),
                                         ("Archpriest Dmitry", "was a retired Professor at", "Georgetown University"),
                                         ("Zoli Adok", "born in", "Hungary")]
    # a JSON answer whose rows are all unusable gives nothing (the lenient parser would turn null into "None")
    assert triples_from_answer('[["Zoli Adok", "born in", null], ["Renaud", "composer"]]') == []
    passage = "Zoli Adok was born in Hungary. None of his songs charted. Renaud is a composer."
    assert extract_openie_rows(['[["Zoli Adok", "born in", null], ["Renaud", "composer"]]'], passage) == [[]]
    # the cleaned triples of a mixed answer keep only grounded three-part rows
    assert extract_openie_rows([text], passage) == [[("Zoli Adok", "born in", "Hungary")]]


def extract_openie_rows(answers, passage):
    """The cleaned triples extract_openie would store for one passage per answer (fake LLM, no cache)."""
    out = []
    for i, answer in enumerate(answers):
        llm = load_llm("fake", responses=lambda _t, a=answer: a, cache=False)
        p = Passage(f"p{i}", "Zoli Adok", passage)
        tag = "rows-" + hashlib.sha1(answer.encode()).hexdigest()[:10]  # one store per answer (stores resume)
        res = extract_openie([p], llm, tag=tag, progress=False)
        out.append(res.triples[p.pid])
    return out

# --------------------------------------------------------------------------------------------- candidate titles
def test_titles_follow_each_fact_and_the_fixed_example_shows_its_own():
    titles = ["Marl Bridge", ""] + ["Dunmere"] * (len(SENTS) - 2)
    chat = rerank_prompt("Q?", SENTS, 2, titles=titles)
    task, example = chat[-1]["content"], chat[0]["content"]
    assert f"[1] {SENTS[0]} (passage: Marl Bridge)\n[2] {SENTS[1]}\n[3]" in task  # no title: the plain line
    assert "(passage: Halvane Optics)" in example and "title of the passage" in task and "title of the passage" in example
    plain = rerank_prompt("Q?", SENTS, 2)  # the default prompt is untouched (its cache keys hold)
    assert "passage" not in json.dumps(plain)
    assert [m["content"] for m in plain[1:2]] == [m["content"] for m in chat[1:2]]  # the same worked answer
    with pytest.raises(ValueError, match="titles"):
        rerank_prompt("Q?", SENTS, 2, titles=titles[:1])
    with pytest.raises(ValueError, match="fixed example"):
        rerank_prompt("Q?", SENTS, 2, demos=[{"question": "q", "facts": ["a"], "ids": [1]}], titles=titles)


def test_candidate_titles_name_the_passages_of_each_candidate(index):
    llm = _fake_llm(_pick("Dunmere founded in 1568"))
    cfg = VectorRerankConfig(degree=2, candidate_cap=20, final_k=5, entity_min_score=0.5, candidate_titles=True)
    method = VectorRerank(cfg, index, llm)
    rec = method.retrieve(QUESTIONS[0])
    cand = [c[0] for c in rec["graph"]["rerank"]["candidates"]]
    lines = rec["rerank"]["prompt"][-1]["content"].split("Facts:\n")[-1].splitlines()
    assert len(lines) == len(cand) > 1
    for line, j in zip(lines, cand):
        titles = list(dict.fromkeys(index.passage_titles[p] for p in index.relation_passages(j)))
        assert line.endswith(f" (passage: {'; '.join(titles[:2])})"), line
    assert rec["variants"]["rerank"]["passages"] == ["Dunmere#3"]  # the reply still maps to its fact


def test_candidate_titles_are_refused_where_no_passage_holds_the_facts():
    from kgrag_utils.datasets import load_dataset

    with pytest.raises(ConfigError, match="demos='fixed'"):
        VectorRerankConfig(candidate_titles=True, demos="nearest")
    ds = load_dataset("sample-movies-1hop", split="test", limit=2, seed=0)
    with pytest.raises(ConfigError, match="KG question dataset"):
        VectorRerank.prepare(VectorRerankConfig(dataset=ds.name, candidate_titles=True), ds)


def test_run_key_leaves_out_later_knobs_at_their_defaults():
    """Runs made before a knob existed keep their keys (and resume) while the knob holds its default."""
    key = VectorRerankConfig().run_key()
    assert not {"demos", "shots", "demo_pool", "candidate_titles", "take"} & set(key)
    assert set(VectorRerankConfig().to_dict()) - set(key) == {"demos", "shots", "demo_pool", "candidate_titles", "take"}
    assert VectorRerankConfig(take=5).run_key()["take"] == 5
    assert VectorRerankConfig(candidate_titles=True).run_key()["candidate_titles"] is True
    assert VectorRerankConfig(demos="nearest", shots=3).run_key()["shots"] == 3
