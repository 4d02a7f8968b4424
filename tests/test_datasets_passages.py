"""Passage-dataset loaders (HotpotQA, MuSiQue, 2Wiki, files of your own) on small files in each released format."""

from __future__ import annotations

import json

import pytest
from dataset_files import data_root, write_lines  # noqa: F401 (data_root: a fixture)

from kgrag_utils.datasets import load_dataset, passages
from kgrag_utils.errors import ConfigError, DatasetMissingError, IntegrityError

# ----------------------------------------------------------------------------- passages


def test_hotpotqa_loader(data_root):
    root = data_root / "HotpotQA"
    root.mkdir()
    questions = [{"_id": "h1", "question": "If Gallu is a demon Lilu is what?", "answer": "a spirit",
                  "type": "bridge", "level": "easy", "supporting_facts": [["Lilu", 0], ["Gallu", 1], ["Lilu", 1]],
                  "context": [["Gallu", ["Gallu is a demon.", " It lives below."]], ["Lilu", ["Lilu is a spirit."]]]}]
    corpus = {"Gallu": ["Gallu is a demon.", " It lives below."], "Lilu": ["Lilu is a spirit."],
              "Other": ["Unrelated."]}
    (root / "hipporag_hotpotqa_train_100q.json").write_text(json.dumps(questions), encoding="utf-8")
    (root / "hipporag_hotpotqa_train_corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    ds = load_dataset("hotpotqa")
    q = ds[0]
    assert ds.kind == "passages" and len(ds.corpus) == 3 and ds.triples is None
    assert q.answers == ["a spirit"] and q.qtype == "bridge" and q.qid == "h1"
    assert q.supporting == ["Lilu", "Gallu"] and q.supporting_titles == ["Lilu", "Gallu"]
    assert q.paragraphs[0].text == "Gallu is a demon. It lives below."  # one space between sentences
    assert q.paragraphs[0].sentences == ["Gallu is a demon.", " It lives below."]
    assert {p.pid for p in ds.corpus} == {"Gallu", "Lilu", "Other"}
    assert ds.info["supporting_not_in_corpus"] == 0


def test_musique_loader_maps_paragraphs_to_corpus_and_reads_openie(data_root):
    root = data_root / "MuSiQue"
    root.mkdir()
    corpus = [{"title": "Paris", "text": "Paris is the capital of France."},
              {"title": "Paris", "text": "Paris is a town in Texas."},
              {"title": "France", "text": "France is in Europe."}]
    questions = [{"id": "2hop__1_2", "question": "Which continent holds the country whose capital is Paris?",
                  "answer": "Europe", "answer_aliases": ["EU"], "answerable": True,
                  "question_decomposition": [{"id": 1}, {"id": 2}],
                  "paragraphs": [{"idx": 0, "title": "Paris", "paragraph_text": "Paris is a town in Texas.",
                                  "is_supporting": False},
                                 {"idx": 1, "title": "Paris", "paragraph_text": "Paris is the capital of France.",
                                  "is_supporting": True},
                                 {"idx": 2, "title": "France", "paragraph_text": "France is in Europe.",
                                  "is_supporting": True}]}]
    docs = [{"title": c["title"], "text": c["text"], "passage": c["title"] + "\n" + c["text"],
             "extracted_entities": [], "extracted_triples": t}
            for c, t in zip(corpus, [[["Paris", "capital of", "France"]], [["Paris", "in"]],
                                     [["France", "in", "Europe"], ["France", "is", "a", "country"]]])]
    (root / "hipporag_musique_train_100q.json").write_text(json.dumps(questions), encoding="utf-8")
    (root / "hipporag_musique_train_corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (root / "hipporag_openie_musique_train_results_ner_x_3.json").write_text(json.dumps({"docs": docs}),
                                                                           encoding="utf-8")
    ds = load_dataset("musique")
    pids = [p.pid for p in ds.corpus]
    assert len(set(pids)) == 3 and pids[0] != pids[1] and pids[0].startswith("Paris#")
    q = ds[0]
    assert q.answers == ["Europe", "EU"] and q.qtype == "2hop"
    assert q.supporting == [pids[0], pids[2]] and q.supporting_titles == ["Paris", "France"]
    assert [p.pid for p in q.paragraphs] == [pids[1], pids[0], pids[2]]
    assert ds.triples[pids[0]] == [("Paris", "capital of", "France")]
    assert ds.triples[pids[1]] == []
    assert ds.info["openie_triples_raw"] == 4 and ds.info["openie_triples"] == 2
    assert ds.info["openie_malformed"] == 2 and ds.info["openie_passages_not_in_corpus"] == 0
    assert load_dataset("musique", openie=False).triples is None


def test_musique_supporting_passages_follow_the_hops_not_the_paragraph_order():
    """The file lists supporting paragraphs in paragraph order; demonstrations need the chain's order (first hop
    first), which the decomposition's paragraph_support_idx gives. Passages no step names stay last, in order."""
    from kgrag_utils.datasets.passages import _in_hop_order

    support = [(3, "B"), (7, "A"), (9, "C")]
    hops = [{"paragraph_support_idx": 7}, {"paragraph_support_idx": 3}]
    assert _in_hop_order(support, hops) == ["A", "B", "C"]
    assert _in_hop_order(support, []) == ["B", "A", "C"]
    assert _in_hop_order(support, [{"id": 1}, {"paragraph_support_idx": None}]) == ["B", "A", "C"]


def test_2wiki_loader_with_title_questions(data_root):
    root = data_root / "2WikiMultiHopQA"
    root.mkdir()
    corpus = [{"title": "Teutberga", "text": "Teutberga was a queen."}, {"title": "Lothair II", "text": "A king."}]
    questions = [{"question": "Who was Lothair II's wife?", "supporting_titles": ["Lothair II", "Teutberga"]}]
    (root / "hipporag_2wikimultihopqa_corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (root / "2wiki_50q_supporting_titles.json").write_text(json.dumps(questions), encoding="utf-8")
    ds = load_dataset("2wiki")
    assert ds[0].answers == [] and ds[0].paragraphs == []
    assert ds[0].supporting == ["Lothair II", "Teutberga"] and [p.pid for p in ds.corpus] == ["Teutberga", "Lothair II"]


def test_2wiki_takes_another_questions_file_in_either_released_form(data_root, tmp_path):
    root = data_root / "2WikiMultiHopQA"
    root.mkdir()
    corpus = [{"title": "Teutberga", "text": "Teutberga was a queen."}, {"title": "Lothair II", "text": "A king."}]
    (root / "hipporag_2wikimultihopqa_corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (root / "2wiki_50q_supporting_titles.json").write_text(json.dumps([{"question": "q?", "supporting_titles": []}]),
                                                          encoding="utf-8")
    dev = [{"_id": "a1", "question": "Who was Lothair II's wife?", "answer": "Teutberga", "type": "compositional",
            "context": [["Lothair II", ["A king."]], ["Teutberga", ["Teutberga was a queen."]]],
            "supporting_facts": [["Lothair II", 0], ["Teutberga", 0]]}]
    (tmp_path / "dev.json").write_text(json.dumps(dev), encoding="utf-8")
    ds = load_dataset("2wiki", questions=str(tmp_path / "dev.json"))
    assert len(ds) == 1 and ds[0].answers == ["Teutberga"] and ds.info["questions_file"] == "dev.json"
    assert ds[0].supporting_titles == ["Lothair II", "Teutberga"]
    titles = root / "mine.json"  # a relative path resolves in the dataset's folder
    titles.write_text(json.dumps([{"question": "x?", "supporting_titles": ["Teutberga"]}]), encoding="utf-8")
    assert load_dataset("2wiki", questions="mine.json")[0].supporting == ["Teutberga"]
    with pytest.raises(DatasetMissingError, match="questions="):
        load_dataset("2wiki", questions="missing.json")


def test_the_training_split_of_a_file_dataset_is_found_beside_it_or_named_in_one_line(tmp_path):
    from kgrag_utils.datasets.registry import training_dataset

    lines = [f"q{i} of a_{i} ?\tb_{i}(b_{i}/)\ta_{i}#r#b_{i}#<end>#b_{i}" for i in range(20)]
    write_lines(tmp_path / "PQL-2H.txt", lines)
    write_lines(tmp_path / "PQL2-KB.txt", [f"a_{i}\tr\tb_{i}" for i in range(20)])
    test = load_dataset("pq-file", split="test", path=str(tmp_path / "PQL-2H.txt"))
    train = training_dataset(test)
    assert train.split == "train" and train.info["qa_file"] == "PQL-2H.txt" and len(train) == 16
    assert not {q.qid for q in train} & {q.qid for q in test}
    whole = load_dataset("pq-file", split="all", path=str(tmp_path / "PQL-2H.txt"))
    with pytest.raises(ConfigError, match="split='test'.*train="):
        training_dataset(whole)
    write_lines(tmp_path / "mine-test.txt", lines[:5])
    write_lines(tmp_path / "mine-train.txt", lines[5:])
    mine = load_dataset("pq-file", split="all", path=str(tmp_path / "mine-test.txt"), kb=str(tmp_path / "PQL2-KB.txt"))
    assert [q.qid for q in training_dataset(mine)][:1] == ["mine-train-00000"] and len(training_dataset(mine)) == 15
    with pytest.raises(ConfigError, match="has no training split"):
        training_dataset(load_dataset("pq-file", split="train", path=str(tmp_path / "PQL-2H.txt")))
    with pytest.raises(ConfigError, match="is the training split"):
        training_dataset(load_dataset("fixture-wc2014-1hop", split="train"))
    wc = training_dataset(load_dataset("fixture-wc2014-1hop", split="test"))
    assert wc.split == "train" and wc.name == "fixture-wc2014-1hop" and wc[0].answerable is None


def test_benchmark_dataset_arguments_take_any_registered_dataset_and_its_options():
    import argparse

    from kgrag_utils.datasets.arguments import add_dataset_arguments, check_dataset_arguments, parse_options

    assert parse_options(["path=a/b.txt", "chain_lengths=[4,5]", "answerable=false", "variant=ntm", "n=3"]) == \
        {"path": "a/b.txt", "chain_lengths": [4, 5], "answerable": False, "variant": "ntm", "n": 3}
    with pytest.raises(ConfigError, match="key=value"):
        parse_options(["novalue"])
    ap = argparse.ArgumentParser()
    add_dataset_arguments(ap, kinds=("kgqa",), default="metaqa-1hop")
    args = ap.parse_args(["--dataset", "wc2014-1hop", "--split", "all"])
    assert check_dataset_arguments(args) == {}
    args = ap.parse_args(["--dataset", "pq-file", "--option", "path=x.txt", "--option", "kb=y.txt"])
    assert check_dataset_arguments(args) == {"path": "x.txt", "kb": "y.txt"}
    for bad, match in ((["--dataset", "metaqa-1hopp"], "did you mean"), (["--dataset", "clutrr"], "kinship dataset"),
                       (["--dataset", "metaqa-1hop", "--option", "path=x"], "does not take"),
                       (["--dataset", "metaqa-1hop", "--split", "train"], "has splits")):
        with pytest.raises(ConfigError, match=match):
            check_dataset_arguments(ap.parse_args(bad))


def test_corpus_with_repeated_titles_needs_title_text_ids(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"title": "A", "text": "x"}, {"title": "A", "text": "y"}]), encoding="utf-8")
    with pytest.raises(IntegrityError, match="title\\+text"):
        passages.read_corpus(path, id_by="title")
    assert len(passages.read_corpus(path, id_by="title+text")) == 2


def test_openie_triples_given_as_strings_are_parsed_as_literals(tmp_path):
    path = tmp_path / "o.json"
    path.write_text(json.dumps({"docs": [{"passage": "T\nbody", "extracted_triples": "[['a', 'b', 'c']]"}]}),
                    encoding="utf-8")
    triples, counts = passages.read_openie_triples(path)
    assert triples == {passages.passage_id("T", "body"): [("a", "b", "c")]} and counts["openie_triples"] == 1
