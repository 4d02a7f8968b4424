"""WebQSP / CWQ questions with RoG's gold relation paths (datasets/rog_paths.py) and the 18 whole subgraphs in RoG
form (rog.read_jsonl_table): the released-format fixture (fixture_webqsp_cwq) and, marked realdata, the shared copy.
"""

from __future__ import annotations

import gzip

import pytest

from kgrag_utils.datasets import load_dataset, rog, rog_paths
from kgrag_utils.errors import DatasetFormatError, IntegrityError


def test_gold_paths_drop_empty_and_na_paths_and_repeats():
    assert rog_paths.gold_paths([["a", "b"], ["NA"], [], ["a", "b"], [" c "]]) == [("a", "b"), ("c",)]
    assert rog_paths.gold_paths([["NA"]]) == [] and rog_paths.gold_paths([[]]) == [] and rog_paths.gold_paths(None) == []
    assert rog_paths.relation_path([("a", True), ("b", False)]) == ("a", "b")


def test_fixture_path_files_load_with_answers_and_cwq_topics():
    train = load_dataset("fixture-webqsp-paths", split="train")
    test = load_dataset("fixture-webqsp-paths", split="test")
    cwq = load_dataset("fixture-cwq-paths", split="test")
    assert [len(d.items) for d in (train, test, cwq)] == [4, 3, 2]
    assert load_dataset("fixture-webqsp-paths", split="validation").items[0].qid == "WebQTrn-4"
    q = test.items[0]
    assert q.meta["gold_paths"] == [["people.person.education", "education.education.institution"]]
    assert q.chain == [("people.person.education", True), ("education.education.institution", True)] and q.hops == 2
    assert q.meta["direction_known"] is False and q.answers == ["Columbia University", "Harvard Law School"]
    assert not train.items[0].answers and train.info["answers_file"] is None  # answers on test only
    assert cwq.items[0].topic_entities == ["Barack Obama"] and cwq.info["topics_file"] == "cwq.json.gz"
    assert test.kg is None and test.info["subgraphs"] is False
    with pytest.raises(Exception, match="splits test"):
        load_dataset("fixture-cwq-paths", split="train")


def test_fixture_whole_subgraphs_read_like_the_parquet_release():
    """The JSON-lines file in RoG form gives the same questions, graphs and shortest chains as RoG's parquet."""
    lines = load_dataset("fixture-webqsp-test18", split="test")
    parquet = load_dataset("fixture-webqsp", split="test")
    assert [q.qid for q in lines.items] == [q.qid for q in parquet.items]
    for a, b in zip(lines.items, parquet.items):
        assert a.meta["shortest_chains"] == b.meta["shortest_chains"] and a.answerable == b.answerable
        assert sorted(lines.triples[a.qid]) == sorted(parquet.triples[b.qid])
    assert lines.info["files"] == ["webqsp_test18_rog_format.jsonl.gz"]


def test_broken_files_are_one_line_errors(tmp_path):
    bad = tmp_path / "x.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"id": "q1", "question": "a"}\nnot json\n'))
    with pytest.raises(DatasetFormatError, match="line 2: not JSON"):
        rog_paths.read_rows(bad)
    with pytest.raises(IntegrityError, match="lacks the RoG field"):
        rog.read_jsonl_table(_one_row(tmp_path))
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(b'{"id": 1}\n')[:-6])
    with pytest.raises(DatasetFormatError, match="not a whole gzip file"):
        rog_paths.read_rows(cut)
    no_paths = tmp_path / "gnn-rag/llm/results/gen_rule_path/RoG-cwq/RoG/test/predictions_2_False.jsonl"
    no_paths.parent.mkdir(parents=True)
    no_paths.write_text('{"id": "q", "question": "who?"}\n')
    with pytest.raises(DatasetFormatError, match="no question or ground_paths"):
        rog_paths.read_questions(tmp_path, "cwq", "test")


def _one_row(tmp_path):
    path = tmp_path / "rog.jsonl"
    path.write_text('{"id": "q", "question": "who?", "answer": [], "q_entity": [], "a_entity": []}\n')
    return path


@pytest.mark.realdata
def test_real_path_files_counts(real_data):
    """The shared copy (data README): 2,826 / 246 / 1,628 WebQSP and 3,531 CWQ questions. Questions without a gold
    path: README's empty / [["NA"]] counts (111 / 11 / 71 / 683) plus RoG's empty paths [[]] (7 / 1 / 5 / 17)."""
    expected = {("webqsp-paths", "train"): (2826, 118), ("webqsp-paths", "validation"): (246, 12),
                ("webqsp-paths", "test"): (1628, 76), ("cwq-paths", "test"): (3531, 700)}
    for (name, split), (n, without) in expected.items():
        ds = load_dataset(name, split=split)
        assert len(ds.items) == n and ds.info["without_gold_paths"] == without
        assert all(bool(q.chain) == bool(q.meta["gold_paths"]) for q in ds.items)
        if split == "test":
            assert ds.info["with_answers"] == n
    cwq = load_dataset("cwq-paths", split="test")
    assert sum(bool(q.topic_entities) for q in cwq.items) == 3520  # ToG gives 11 questions an empty topic_entity
    lou = next(q for q in cwq.items if q.qid.startswith("WebQTest-832_"))
    assert lou.topic_entities == ["Lou Seal"] and lou.answers == ["2014 World Series"]


@pytest.mark.realdata
def test_real_whole_subgraphs(real_data):
    """The 18 whole subgraphs (README): 72,792 triples; every answer in its graph but WebQTest-3, -31 (0 of 1) and
    -12 (1 of 3)."""
    ds = load_dataset("webqsp-test18", split="test")
    assert len(ds.items) == 18 and ds.info["graph_triples"] == 72792 and ds.info["malformed_triples"] == 0
    sizes = [ds.triples.size(q.qid) for q in ds.items]
    assert min(sizes) == 348 and max(sizes) == 7499
    assert {q.qid for q in ds.items if not q.answerable} == {"WebQTest-3", "WebQTest-31", "WebQTest-12"}
    assert {q.qid for q in ds.items if not q.meta["answerable_any"]} == {"WebQTest-3", "WebQTest-31"}
    jamaica = next(q for q in ds.items if q.qid == "WebQTest-0")
    assert jamaica.topic_entities == ["Jamaica"] and ("location.country.languages_spoken", True) in jamaica.meta["shortest_chains"][0]


def test_the_union_dataset_is_one_kg_holding_every_questions_subgraph():
    """webqsp-test18-kg: the same questions as webqsp-test18, over one KG (for the methods built for one KG)."""
    per_question = load_dataset("fixture-webqsp-test18", split="test")
    union = load_dataset("fixture-webqsp-test18-kg", split="test")
    assert per_question.kg is None and union.kg is not None
    assert [q.qid for q in union.items] == [q.qid for q in per_question.items]
    facts = {(union.kg.entity_names[h], union.kg.relation_names[r], union.kg.entity_names[t])
             for h, r, t in zip(union.kg.heads, union.kg.rels, union.kg.tails)}
    wanted = {tuple(t) for q in per_question.items for t in per_question.triples[q.qid]}
    assert facts == wanted  # every subgraph's facts, nothing else, duplicates once
