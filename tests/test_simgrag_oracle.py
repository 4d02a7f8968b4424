"""Oracle patterns from gold relation structure, simple-path answers and the miss classifier (why an answerable
question's top-1 answer is not gold), and the retrieval latency benchmark on oracle patterns."""

from __future__ import annotations

import numpy as np

from kgrag_utils.datasets.items import KGQuestion
from kgrag_utils.kg import KG
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDConfig, GSDRetriever, embedding_text
from kgrag_utils.methods.simgrag.stages.oracle import (MISS_CLASSES, branches_pattern, gold_answer_ids, miss_class, oracle_pattern,
                                                simple_path_answers)
from stand_ins import benchmark_module


def exact_retriever(kg: KG) -> GSDRetriever:
    """One-hot embeddings: a name's nearest entity is itself, a relation's nearest relation is itself."""
    names = [str(n) for n in kg.entity_names] + [str(r) for r in kg.relation_names]
    table = {embedding_text(n): row for n, row in zip(names, np.eye(len(names)))}
    vectors = np.stack(list(table.values()))
    encode = lambda texts: np.stack([table[t] for t in texts])  # noqa: E731
    return GSDRetriever(kg, vectors[: kg.num_entities], vectors[kg.num_entities:], encode=encode, index_kind="flat")


def top1(kg, question, config):
    pattern = oracle_pattern(question)
    result, _ = exact_retriever(kg).retrieve(pattern, config)
    best = result.best
    return pattern, best, (None if best is None else str(kg.entity_names[best.nodes[pattern.answer]]))


def test_a_self_loop_answer_is_found_by_default_and_labelled_a_walk_when_matching_is_injective():
    """MetaQA's [Lemmy] starred Lemmy: the only answer is the topic itself (a self-loop)."""
    kg = KG.from_triples([("Lemmy", "starred_actors", "Lemmy"), ("Other", "starred_actors", "Someone")])
    q = KGQuestion("q1", "who starred in [Lemmy]", ["Lemmy"], ["Lemmy"], [("starred_actors", True)], 1, None, True)
    _, best, answer = top1(kg, q, GSDConfig())  # the default allows walks
    assert answer == "Lemmy" and not best.injective
    _, best, answer = top1(kg, q, GSDConfig(injective=True))
    assert answer == "Someone" and best.gsd > 1  # injective: only another entity's fact fits
    _, best, answer = top1(kg, q, GSDConfig(injective=True, entity_topk=1))
    assert best is None and answer is None  # ... or nothing at all
    simple = simple_path_answers(kg, "Lemmy", q.chain)
    assert simple == set()  # no simple path at all: the answer is reached only by revisiting the topic
    # the classifier checks for walks before "no match": nothing matched BECAUSE the answer needs one
    assert miss_class(on_chain=False, needs_walk=True, best=None) == "needs_non_simple_path"
    assert miss_class(on_chain=False, needs_walk=False, best=None) == "no_match"


def test_a_walk_through_the_topic_is_the_default_top1_and_injective_misses_it():
    """PathQuestion's X -children-> C -parents-> X: the answer is the topic entity again."""
    kg = KG.from_triples([("X", "children", "C"), ("C", "parents", "X"), ("C", "parents", "Y")])
    q = KGQuestion("q2", "who is a parent of X's child", ["X"], ["X", "Y"], [("children", True), ("parents", True)],
                   2, None, True)
    assert {str(kg.entity_names[i]) for i in simple_path_answers(kg, "X", q.chain)} == {"Y"}
    _, best, answer = top1(kg, q, GSDConfig(top_k=3))
    assert answer == "Y" and best.injective  # among equal GSDs, the match that repeats nothing ranks first
    q_walk = KGQuestion("q3", "...", ["X"], ["X"], q.chain, 2, None, True)
    _, best, answer = top1(kg, q_walk, GSDConfig(top_k=1))
    assert answer == "Y"  # k = 1: the simple path wins the tie, the walk's answer X is second
    _, _, answer_inj = top1(kg, q_walk, GSDConfig(top_k=1, injective=True))
    assert answer_inj == "Y"
    assert miss_class(on_chain=True, needs_walk=True, best=best) == "top1_is_kb_answer_not_in_gold_list"
    assert miss_class(on_chain=False, needs_walk=True, best=best) == "needs_non_simple_path"
    assert miss_class(on_chain=False, needs_walk=False, best=best) == "other"
    assert set(MISS_CLASSES) == {"top1_is_kb_answer_not_in_gold_list", "needs_non_simple_path", "no_match", "other"}


def test_an_oracle_run_labels_each_answerable_miss_and_counts_the_labels_in_its_summary():
    """The method extra that replaced the oracle benchmark's quality mode: with oracle patterns, an answerable
    question whose top-1 answer is not gold gets `miss_class` in its record; the summary counts them by class."""
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
    from kgrag_utils.methods.simgrag.summary import summarize

    kg = KG.from_triples([("Lemmy", "starred_actors", "Lemmy"), ("Other", "starred_actors", "Someone"),
                          ("X", "children", "C"), ("C", "parents", "X"), ("C", "parents", "Y")])
    chain = [("children", True), ("parents", True)]
    items = [KGQuestion("loop", "who starred in [Lemmy]", ["Lemmy"], ["Lemmy"], [("starred_actors", True)], 1, None, True),
             KGQuestion("tie", "who is a parent of [X]'s child", ["X"], ["X"], chain, 2, None, True),
             KGQuestion("hit", "who is a parent of [X]'s child", ["X"], ["Y"], chain, 2, None, True)]
    config = SimGRAGConfig(pattern_source="oracle", reader=False, injective=True, top_k=1)
    records = SimGRAG(config, kg, exact_retriever(kg), None, dataset="tiny").run(items, progress=False)
    assert [r.get("miss_class") for r in records] == ["needs_non_simple_path", "top1_is_kb_answer_not_in_gold_list",
                                                       None]
    assert summarize(records)["answerable_misses_by_class"] == {
        "top1_is_kb_answer_not_in_gold_list": 1, "needs_non_simple_path": 1, "no_match": 0, "other": 0}


def test_simple_path_answers_of_an_unknown_relation_is_empty_and_too_many_paths_is_none():
    kg = KG.from_triples([("a", "r", f"b{i}") for i in range(5)])
    assert simple_path_answers(kg, "a", [("missing", True)]) == set()
    assert len(simple_path_answers(kg, "a", [("r", True)])) == 5
    assert simple_path_answers(kg, "a", [("r", True)], max_paths=3) is None


# ----------------------------------------------------------------------------- conjunctive questions


def test_a_conjunctive_question_gives_a_tree_pattern_whose_branches_meet_at_the_answer():
    from kgrag_utils.datasets import load_dataset

    ds = load_dataset("fixture-wc2014-conj", split="all")
    q = ds[0]
    assert q.conjunctive and q.chain is None
    pattern = oracle_pattern(q)
    (t1, c1), (t2, c2) = q.gold_branches()
    assert [n.label for n in pattern.nodes if n.known] == [t1, t2]
    assert not pattern.nodes[pattern.answer].known
    # every edge touches the answer (one-hop branches) and points the way the KG's facts do
    assert [(pattern.nodes[e.head].label, e.relation, e.tail) for e in pattern.edges] == \
        [(t1, c1[0][0], pattern.answer), (t2, c2[0][0], pattern.answer)]
    assert len(pattern.components()) == 1


def test_tree_patterns_retrieve_the_intersection_of_the_branches_on_the_fixture_world():
    """Oracle retrieval on every conjunctive question of the generated WC2014 world: the top-1 answer is a
    gold answer (an entity both branches reach), and a single branch alone would often not be."""
    from kgrag_utils.datasets import load_dataset

    ds = load_dataset("fixture-wc2014-conj", split="all")
    retriever = exact_retriever(ds.kg)
    hits, single_branch_ambiguous = 0, 0
    for q in ds:
        result, _ = retriever.retrieve(oracle_pattern(q), GSDConfig(top_k=1))
        answer = str(ds.kg.entity_names[result.best.nodes[oracle_pattern(q).answer]])
        hits += answer in q.answers
        assert gold_answer_ids(ds.kg, q) == set(ds.kg.entity_ids(q.answers).tolist())
        topic, chain = q.gold_branches()[0]
        single = ds.kg.follow_chain([ds.kg.entity_id(topic)], chain).reached
        single_branch_ambiguous += len(single) > len(q.answers)
    assert hits == len(ds)
    assert single_branch_ambiguous > len(ds) // 2  # one branch alone reaches more than the answers


def test_branches_pattern_builds_longer_branches_with_their_own_unknowns():
    pattern = branches_pattern([("A", [("r1", True), ("r2", False)]), ("B", [("r3", True)])])
    labels = [n.label for n in pattern.nodes]
    assert labels[0].startswith("UNKNOWN") and pattern.answer == 0
    assert [(e.head, e.relation, e.tail) for e in pattern.edges] == [(1, "r1", 2), (0, "r2", 2), (3, "r3", 0)]
    assert branches_pattern([("A", [("r1", True)])]).edges == oracle_pattern(
        KGQuestion("q", "", ["A"], ["x"], [("r1", True)], 1, None)).edges


def test_the_retrieval_benchmark_takes_any_registered_dataset_with_options(tmp_path):
    """benchmarks/simgrag_retrieval.py (latency from oracle patterns) on the conjunctive fixture (tree patterns)
    and on a file through pq-file: one timed query per question, in the keys docs/RESULTS.md's latency table reads."""
    import json

    import pytest

    from kgrag_utils.datasets.fixtures import ensure_fixture
    from kgrag_utils.errors import ConfigError

    bench = benchmark_module("simgrag_retrieval")
    out = tmp_path / "conj.json"
    assert bench.main(["--dataset", "fixture-wc2014-conj", "--split", "all", "--index", "flat", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["no_pattern"] == 0 and result["params"]["injective"] is False
    ms = result["ms_per_query"]
    assert ms["enumeration_cpu"]["n"] == ms["retrieval_total_cpu"]["n"] == result["n_questions"] > 100
    assert {"median", "p95"} <= set(ms["vector_search_cpu"]) and result["batched_node_search_ms_per_node"] > 0
    kb = ensure_fixture("wc2014") / "WC2014"
    out = tmp_path / "file.json"
    assert bench.main(["--dataset", "pq-file", "--split", "all", "--option", f"path={kb / 'WC-P2.txt'}",
                       "--option", f"kb={kb / 'WC2014.txt'}", "--index", "flat", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["ms_per_query"]["retrieval_total"]["n"] == 56
    with pytest.raises(ConfigError, match="does not take"):
        bench.main(["--dataset", "fixture-wc2014-conj", "--option", "variant=ntm"])


def test_the_recorded_oracle_benchmarks_use_the_default_and_keep_the_injective_runs_beside_them():
    """benchmarks/results/simgrag_<dataset>.json were run with the current default (walks allowed), and each
    `_injective` file beside one with injective matching; walks never lose an answerable question there."""
    import json

    from kgrag_utils import settings

    folder = settings.repo_root() / "benchmarks" / "results"
    datasets = ("metaqa-1hop", "metaqa-2hop", "metaqa-3hop", "pq-2hop", "pq-3hop")
    from kgrag_utils.methods.simgrag import SimGRAGConfig

    # one default (the method config), passed on to the search; the benchmark flag follows it
    assert SimGRAGConfig().injective is False and GSDConfig().injective is False
    assert SimGRAGConfig().gsd_config().injective is False
    for name in datasets:
        walks = json.loads((folder / f"simgrag_{name}.json").read_text())
        injective = json.loads((folder / f"simgrag_{name}_injective.json").read_text())
        assert walks["params"]["injective"] is False and injective["params"]["injective"] is True, name
        assert walks["dataset"] == injective["dataset"] == name
        hw, hi = walks["hits@1_top1_subgraph"], injective["hits@1_top1_subgraph"]
        assert hw["n_answerable"] == hi["n_answerable"] and hw["answerable"] >= hi["answerable"], name
        assert walks["answerable_misses_by_class"]["needs_non_simple_path"] == 0, name
    assert not list(folder.glob("simgrag_*_noninjective.json"))  # superseded by the default runs
    for flat in folder.glob("simgrag_metaqa-*_flat.json"):
        assert json.loads(flat.read_text())["params"]["injective"] is False, flat.name
