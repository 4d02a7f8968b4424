"""Vector retrieval + LLM rerank on KG questions: the fact index, marked seeds, one rerank + one answer call, scores."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from stand_ins import HashBOW

from kgrag_utils.datasets.items import KGQuestion
from kgrag_utils.embeddings import Embedder
from kgrag_utils.errors import ConfigError
from kgrag_utils.kg import KG
from kgrag_utils.llm import load_llm
from kgrag_utils.methods.vector_rerank.config import KGQA_VARIANTS
from kgrag_utils.methods.vector_rerank.stages.kgqa import FactRerank, fact_hits, kgqa_variants
from kgrag_utils.methods.vector_rerank.stages.graph_index import GraphIndex
from kgrag_utils.methods.vector_rerank import VectorRerankConfig, summarize
from kgrag_utils.methods.vector_rerank.stages.corpus import build_index
from kgrag_utils.methods.vector_rerank.figures import scores_table
from kgrag_utils.methods.vector_rerank.stages.query_entities import lexical_entities, marked_entities
from kgrag_utils.records import RunRecorder

FACTS = [
    ("Grey Harbour", "directed_by", "Mara Quill"),
    ("Salt Lanterns", "directed_by", "Mara Quill"),
    ("The Tin Orchard", "directed_by", "Mara Quill"),
    ("Grey Harbour", "release_year", "1987"),
    ("Grey Harbour", "starred_actors", "Odo Venn"),
    ("Salt Lanterns", "in_language", "Danish"),
    ("Paper Moon Road", "directed_by", "Ilse Marr"),
    ("roger_needham", "spouse", "karen_sparck_jones"),
    ("clodoald", "parents", "chlodomer"),
    ("the", "parents", "of"),  # stop words that are (odd) entity names never become seeds
]
Q_DIRECTOR = KGQuestion("m1", "which movies share the director of [Grey Harbour]", ["Grey Harbour"],
                        ["Salt Lanterns", "The Tin Orchard"], [("directed_by", True), ("directed_by", False)], 2, "m_d_m", True)
Q_LANG = KGQuestion("m2", "what language is [Salt Lanterns] in", ["Salt Lanterns"], ["Danish"],
                    [("in_language", True)], 1, "m_l", True)
Q_PQ = KGQuestion("p1", "who is roger_needham 's spouse ?", ["roger_needham"], ["karen_sparck_jones"],
                  [("spouse", True)], 1, "spouse", True)


def hash_embedder() -> Embedder:
    return Embedder(model=HashBOW(dim=64), model_id="hash-bow-kgqa-test", cache=False)


@pytest.fixture(scope="module")
def kg():
    return KG.from_triples(FACTS, name="toy")


@pytest.fixture(scope="module")
def index(kg):
    idx = GraphIndex.from_kg(kg)
    idx.attach_vectors(hash_embedder())
    return idx


def test_fact_index_is_the_kg_edges_verbalised_without_passages(kg, index):
    assert index.num_passages == 0 and index.num_relations == len(kg) and index.num_entities == len(kg.entity_names)
    assert index.entity_names == [str(n) for n in kg.entity_names]
    for j, (h, r, t) in enumerate(kg.triples(np.arange(len(kg)))):
        assert index.relation_sentences[j] == f"{h} {r.replace('_', ' ')} {t}"
        assert index.triples([j]) == [(h, r.replace("_", " "), t)]
    # the incidence links each fact to its head and tail, nothing else
    inc = index.incidence.toarray()
    assert inc.sum() == 2 * len(FACTS)  # no self-loops here: two incident entities per fact
    assert np.array_equal(np.flatnonzero(inc[:, 0]), np.sort(np.unique([index.heads[0], index.tails[0]])))
    assert index.passage_index is None and index.passage_vecs.shape == (0, 64)
    assert index.search_relations(index.encode(["Salt Lanterns in language Danish"]), 1)[0][0][0] == 5


def test_marked_entities_read_brackets_and_snake_case_names(index):
    assert marked_entities(Q_DIRECTOR.question, index.entity_ids) == ["Grey Harbour"]
    assert marked_entities(Q_PQ.question, index.entity_ids) == ["roger_needham"]
    assert marked_entities("who directed [Not In The KG]", index.entity_ids) == ["Not In The KG"]
    assert marked_entities("who wrote some_unknown_token ?", index.entity_ids) == []
    assert marked_entities("who is the offspring of clodoald 's dad ?", index.entity_ids) == ["clodoald"]
    assert marked_entities("who is the dad of the son of roger_needham ?", index.entity_ids) == ["roger_needham"]
    # the passage path is unchanged: lowercase snake_case is not a capitalised n-gram
    assert lexical_entities(Q_PQ.question, index.entity_ids) == []


def test_fact_hits_is_head_or_tail_equal_to_a_gold_answer(index):
    brute = lambda ids, golds: float(any(x.lower() in {g.lower() for g in golds}  # noqa: E731
                                         for j in ids for x in (FACTS[j][0], FACTS[j][2])))
    for ids in ([], [0], [1, 3], [5], [6, 7], list(range(len(FACTS)))):
        for golds in (["Salt Lanterns"], ["danish"], ["Nobody"], ["karen_sparck_jones", "x"]):
            assert fact_hits(index, ids, golds) == brute(ids, golds)
    assert np.isnan(fact_hits(index, [0], []))


class ScriptedLLM:
    """A fake LLM: the rerank call picks the facts named in `pick`, the answer call replies `answer`; calls are counted."""

    def __init__(self, pick=(), answer="", rerank_reply=None):
        self.pick, self.answer, self.rerank_reply = pick, answer, rerank_reply
        self.calls = {"rerank": 0, "answer": 0, "other": 0}
        self.llm = load_llm("fake", responses=self.respond, cache=False)

    def respond(self, text: str) -> str:
        task = text.split("Question:")[-1]
        if "numbered list of facts" in text:
            self.calls["rerank"] += 1
            if self.rerank_reply is not None:
                return self.rerank_reply
            facts = text.split("Facts:")[-1]
            ids = [int(m.group(1)) for s in self.pick for m in [re.search(rf"\[(\d+)\] {re.escape(s)}\n?", facts)] if m]
            return json.dumps({"reasoning": "one fact per hop", "ids": ids})
        if "Answer the question using only the facts" in text:
            self.calls["answer"] += 1
            return self.answer(task) if callable(self.answer) else self.answer
        self.calls["other"] += 1
        return ""


def test_rerank_answers_from_the_chosen_facts_with_one_call_each(index):
    fake = ScriptedLLM(pick=("Grey Harbour directed by Mara Quill", "Salt Lanterns directed by Mara Quill"),
                       answer="Answer: Salt Lanterns | Mara Quill")
    cfg = VectorRerankConfig(dataset="toy", entity_extraction="lexical", degree=2, candidate_cap=20, entity_min_score=0.5)
    rec = FactRerank(cfg, index, fake.llm).retrieve(Q_DIRECTOR)
    assert fake.calls == {"rerank": 1, "answer": 1, "other": 0}  # lexical seeds: no entity call
    assert set(rec["variants"]) == set(KGQA_VARIANTS)
    assert rec["graph"]["rerank"]["query_entities"] == ["Grey Harbour"]
    r = rec["variants"]["rerank"]
    assert [f[1] for f in r["facts"]] == ["Grey Harbour directed by Mara Quill", "Salt Lanterns directed by Mara Quill"]
    assert r["predictions"] == ["Salt Lanterns", "Mara Quill"]
    assert r["hits@1"] == 1.0 and r["containment"] == 1.0 and r["fact_hit"] == 1.0 and not r["failed"]
    assert rec["tokens"]["prompt"] == rec["tokens"]["rerank_prompt"] + rec["tokens"]["answer_prompt"] > 0
    assert "rerank_llm" in rec["timings"] and "rerank_answer_llm" in rec["timings"]
    assert rec["graph"]["rerank"]["candidate_fact_hit"] == 1.0
    # strict vs lenient: a reply whose first name is wrong but which mentions a gold answer
    fake2 = ScriptedLLM(pick=("Salt Lanterns in language Danish",), answer="Mara Quill | Salt Lanterns")
    r2 = FactRerank(cfg, index, fake2.llm).retrieve(Q_DIRECTOR)["variants"]["rerank"]
    assert r2["hits@1"] == 0.0 and r2["containment"] == 1.0


def test_failures_count_as_wrong_and_skip_the_answer_call(index):
    cfg = VectorRerankConfig(dataset="toy", entity_extraction="lexical", degree=1, entity_min_score=0.5)
    fake = ScriptedLLM(rerank_reply="I cannot tell.", answer="Danish")
    recs = FactRerank(cfg, index, fake.llm).run([Q_LANG, Q_PQ], progress=False)
    assert fake.calls["answer"] == 0 and fake.calls["rerank"] == 2
    for rec in recs:
        r = rec["variants"]["rerank"]
        assert r["failed"] and r["hits@1"] == 0.0 and r["containment"] == 0.0 and rec["failed"]
    # an answer call that names nothing is a failure too, though its text is scored 0, not read leniently
    fake2 = ScriptedLLM(pick=("Salt Lanterns in language Danish",), answer="")
    rec = FactRerank(cfg, index, fake2.llm).retrieve(Q_LANG)
    assert rec["variants"]["rerank"]["failed"] and rec["variants"]["rerank"]["answer_status"] == "no-answer"
    s = summarize(recs + [rec])
    assert s["variants"]["rerank"]["n"] == 3 and s["variants"]["rerank"]["n_failed"] == 3
    assert s["variants"]["rerank"]["hits@1"] == 0.0 and s["variants"]["rerank"]["fact_hit"] == pytest.approx(1 / 3)


def test_no_llm_variants_and_summary(index):
    cfg = VectorRerankConfig(dataset="toy", variants="naive,expand", entity_extraction="lexical", degree=1,
                             entity_min_score=0.5, final_k=2)
    recs = FactRerank(cfg, index).run([Q_LANG, Q_PQ], progress=False)
    assert all(set(r["variants"]) == {"naive", "expand"} and "rerank" not in r for r in recs)
    assert all(r["variants"][v]["n_facts"] <= 2 for r in recs for v in ("naive", "expand"))
    pq = recs[1]["variants"]["expand"]
    assert recs[1]["graph"]["expand"]["query_entities"] == ["roger_needham"]
    assert "roger_needham spouse karen_sparck_jones" in [f[1] for f in pq["facts"]] and pq["fact_hit"] == 1.0
    s = summarize(recs)
    assert "hits@1" not in s["variants"]["expand"] and s["variants"]["expand"]["fact_hit"] == pytest.approx(
        np.mean([r["variants"]["expand"]["fact_hit"] for r in recs]))
    table = scores_table(s, "toy-kg", "toy", kgqa=True)
    assert list(table.variant) == ["naive", "expand"] and table["Hits@1 (strict)"].isna().all()


def test_kgqa_variants_and_llm_requirement(index):
    assert kgqa_variants(VectorRerankConfig()) == KGQA_VARIANTS
    with pytest.raises(ConfigError, match="KG question"):
        kgqa_variants(VectorRerankConfig(variants="rerank,rerank-padded"))
    method = FactRerank(VectorRerankConfig(variants="rerank"), index)
    assert method.config.needs_llm and method.loaded_llm is None  # loaded on first use only
    with pytest.raises(ConfigError, match="answer_max_new_tokens"):
        VectorRerankConfig(answer_max_new_tokens=0)


def test_run_resumes_from_recorder(index, tmp_path):
    cfg = VectorRerankConfig(variants="naive,expand", entity_extraction="lexical")
    rec = RunRecorder("vector_rerank", cfg.to_dict(), run_name="vr-kgqa-resume", root=tmp_path)
    FactRerank(cfg, index).run([Q_LANG], recorder=rec, progress=False)
    again = RunRecorder("vector_rerank", cfg.to_dict(), run_name="vr-kgqa-resume", root=tmp_path)
    assert again.done_ids == {"m2"}
    out = FactRerank(cfg, index).run([Q_LANG, Q_PQ], recorder=again, progress=False)
    assert [r["id"] for r in out] == ["m2", "p1"] and len(again.examples) == 2


def test_build_index_gives_the_fact_index_for_kg_question_datasets():
    from kgrag_utils.datasets import load_dataset

    ds = load_dataset("sample-movies-2hop", limit=4, seed=0)
    cfg = VectorRerankConfig(dataset="sample-movies-2hop", variants="naive,expand", entity_extraction="lexical")
    idx, info = build_index(cfg, ds, hash_embedder(), progress=False)
    assert idx.num_relations == len(ds.kg) and idx.num_passages == 0 and info["triples_source"] == "the dataset's KG"
    recs = FactRerank(cfg, idx).run(ds.items, progress=False)
    # every sample question brackets its topic entity, and the seeds come from it
    assert all(r["graph"]["expand"]["query_entities"] == r["topic_entities"] for r in recs)
    assert all([r["topic_entities"][0], 1.0] in [[name, round(score, 3)] for _, name, score in r["graph"]["expand"]["seed_entities"]]
               for r in recs)
