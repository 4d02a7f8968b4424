"""Dataset loaders (MetaQA, PathQuestion, CLUTRR), the registry and the answerable flag, on small files in each
real format; the passage datasets are in test_datasets_passages.py, the download step in test_datasets_download.py."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import yaml
from dataset_files import (KB_LINES, PQ_KB, PQ_LINES, QA_2HOP, QTYPE_2HOP, data_root,  # noqa: F401 (a fixture)
                           write_lines)

from kgrag_utils.datasets import (KGQuestion, answerable_flags, compute_answerable, list_datasets, load_dataset,
                                  normalize_name, sample_items)
from kgrag_utils.datasets import clutrr, metaqa, pathquestion
from kgrag_utils.errors import ConfigError, DatasetMissingError, IntegrityError
from kgrag_utils.kg import KG

# ----------------------------------------------------------------------------- fixtures


@pytest.fixture
def metaqa_root(data_root) -> Path:
    root = data_root / "MetaQA"
    write_lines(root / "kb_reconstructed.txt", KB_LINES)
    write_lines(root / "qa" / "2-hop" / "vanilla" / "qa_test.txt", QA_2HOP)
    write_lines(root / "qa" / "2-hop" / "qa_test_qtype.txt", QTYPE_2HOP)
    write_lines(root / "qa" / "2-hop" / "vanilla" / "qa_dev.txt", QA_2HOP[:2])
    write_lines(root / "qa" / "2-hop" / "qa_dev_qtype.txt", QTYPE_2HOP[:2])
    write_lines(root / "qa" / "1-hop" / "vanilla" / "qa_test.txt",
           [f"what movies did [Tom Hanks] act in\tBig|Splash|Apollo 13"] * 3 + ["who directed [Big]\tPenny Marshall"])
    write_lines(root / "qa" / "1-hop" / "qa_test_qtype.txt", ["actor_to_movie"] * 3 + ["movie_to_director"])
    return root


# ----------------------------------------------------------------------------- MetaQA


@pytest.mark.parametrize("qtype, chain", [
    ("actor_to_movie", [("starred_actors", False)]),
    ("movie_to_director", [("directed_by", True)]),
    ("tag_to_movie", [("has_tags", False)]),
    ("movie_to_tags", [("has_tags", True)]),
    ("movie_to_imdbrating", [("has_imdb_rating", True)]),
    ("movie_to_imdbvotes", [("has_imdb_votes", True)]),
    ("actor_to_movie_to_director", [("starred_actors", False), ("directed_by", True)]),
    ("writer_to_movie_to_language", [("written_by", False), ("in_language", True)]),
    ("movie_to_director_to_movie_to_year", [("directed_by", True), ("directed_by", False), ("release_year", True)]),
])
def test_qtype_to_chain(qtype, chain):
    assert metaqa.qtype_to_chain(qtype) == chain


@pytest.mark.parametrize("bad", ["actor", "actor_to_director", "movie_to_budget"])
def test_qtype_to_chain_rejects_unknown_types(bad):
    with pytest.raises(ConfigError):
        metaqa.qtype_to_chain(bad)


def test_parse_question_line():
    q, topics, answers = metaqa.parse_question_line("what movies did [Tom Hanks] act in\tBig|Splash\n")
    assert (q, topics, answers) == ("what movies did [Tom Hanks] act in", ["Tom Hanks"], ["Big", "Splash"])


def test_metaqa_loader_fields_and_answerable(metaqa_root):
    ds = load_dataset("metaqa-2hop", split="test")
    assert ds.kind == "kgqa" and ds.source == "real" and len(ds) == 5
    q0 = ds[0]
    assert q0.topic_entities == ["Tom Hanks"]
    assert q0.answers == ["Penny Marshall", "ron  HOWARD"]
    assert q0.chain == [("starred_actors", False), ("directed_by", True)]
    assert q0.hops == 2 and q0.qtype == "actor_to_movie_to_director"
    assert q0.qid == "metaqa-2hop-vanilla-test-00000"
    assert q0.meta["question_plain"] == "which person directed the movies starred by Tom Hanks"
    assert [q.answerable for q in ds] == [True, False, False, True, False]
    assert [q.meta["answerable_khop"] for q in ds] == [True, False, False, True, True]
    assert ds.info["answerable_rate"] == pytest.approx(2 / 5)
    assert ds.kg.num_edges == len(KB_LINES)
    assert ds.info["kb_file"] == "kb_reconstructed.txt"


def test_metaqa_prefers_original_kb(metaqa_root):
    write_lines(metaqa_root / "kb.txt", KB_LINES[:3])
    ds = load_dataset("metaqa-1hop", answerable=False)
    assert ds.info["kb_file"] == "kb.txt" and ds.kg.num_edges == 3
    assert all(q.answerable is None for q in ds)


def test_metaqa_misaligned_qtype_file_is_an_error(metaqa_root):
    write_lines(metaqa_root / "qa" / "2-hop" / "qa_test_qtype.txt", QTYPE_2HOP[:3])
    with pytest.raises(IntegrityError, match="not aligned"):
        load_dataset("metaqa-2hop")


def test_metaqa_ntm_variant_borrows_missing_topics_from_vanilla(metaqa_root):
    write_lines(metaqa_root / "qa" / "1-hop" / "ntm" / "qa_test.txt",
           ["what films did tom hanks appear in\tBig|Splash|Apollo 13"] * 3 + ["who made [Big]\tPenny Marshall"])
    ds = load_dataset("metaqa-1hop", variant="ntm")
    assert [q.topic_entities for q in ds] == [["Tom Hanks"]] * 3 + [["Big"]]
    assert all(q.answerable for q in ds)
    assert ds[0].qid.startswith("metaqa-1hop-ntm-test-")


def test_answerable_is_cached_on_disk_and_invalidated_by_file_changes(metaqa_root, monkeypatch):
    from kgrag_utils.datasets import answerable as answerable_mod

    first = [q.answerable for q in load_dataset("metaqa-2hop")]
    calls = []
    real = answerable_mod.compute_answerable
    monkeypatch.setattr(answerable_mod, "compute_answerable", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert [q.answerable for q in load_dataset("metaqa-2hop")] == first
    assert calls == []  # served from the cache
    write_lines(metaqa_root / "kb_reconstructed.txt", KB_LINES + ["Splash|directed_by|Steven Spielberg"])
    again = load_dataset("metaqa-2hop")
    assert calls, "a changed KB file must invalidate the cached flags"
    assert again[1].answerable is True  # Spielberg now reachable from Tom Hanks via Splash


def test_compute_answerable_without_chain_uses_hops():
    kg = KG.from_triples([("a", "r", "b"), ("b", "s", "c"), ("d", "r", "c")], name="t")
    qs = [KGQuestion("q0", "", ["a"], ["c"], None, 2, None),
          KGQuestion("q1", "", ["a"], ["c"], None, 1, None),
          KGQuestion("q2", "", ["a"], ["d"], None, 3, None),
          KGQuestion("q3", "", ["a"], [], None, 3, None)]
    assert compute_answerable(qs, kg).tolist() == [True, False, True, False]
    chain, khop = answerable_flags(qs, kg)
    assert chain.tolist() == khop.tolist() == [True, False, True, False]


def test_compute_answerable_unknown_relation_and_multiple_topics():
    kg = KG.from_triples([("a", "r", "b"), ("c", "r", "d")], name="t")
    qs = [KGQuestion("q0", "", ["a"], ["b"], [("nope", True)], 1, None),
          KGQuestion("q1", "", ["a", "c"], ["b", "d"], [("r", True)], 1, None),
          KGQuestion("q2", "", ["b"], ["a"], [("r", False)], 1, None)]
    assert compute_answerable(qs, kg).tolist() == [False, True, True]
    with pytest.raises(ConfigError):
        compute_answerable(qs, kg, mode="bogus")


def test_normalize_name():
    assert normalize_name("  The  Matrix ") == normalize_name("the matrix")
    assert normalize_name("Ｔｏｍ") == normalize_name("tom")  # NFKC folds full-width letters


# ----------------------------------------------------------------------------- PathQuestion


def test_parse_pq_line_pathquestion_format():
    rec = pathquestion.parse_pq_line(PQ_LINES[1])
    assert rec["answers"] == ["female", "male"]
    assert rec["paths"] == [("x_c", ["children", "gender"], ["x_d", "female"])]


def test_parse_pq_line_wc2014_format_with_extra_columns():
    line = ("which country does A_B play in ?\tItaly\tA_B#plays_in_club#C_D#is_in_country#Italy"
            "\tItaly/\tA_B#plays_in_club#C_D///C_D#is_in_country#Italy")
    rec = pathquestion.parse_pq_line(line)
    assert rec["answers"] == ["Italy"]
    assert rec["paths"] == [("A_B", ["plays_in_club", "is_in_country"], ["C_D", "Italy"])]
    conj = ("name a player at Forward in club C_D ?\tA_B\tForward#pos_inverse#A_B#<end>#A_B*C_D#club_inverse#A_B"
            "#<end>#A_B\tA_B/E_F/\tfacts\tForward/C_D")
    rec = pathquestion.parse_pq_line(conj)
    assert rec["answers"] == ["A_B", "E_F"] and len(rec["paths"]) == 2


@pytest.mark.parametrize("bad", ["only a question", "q\ta\tx#r", "q\ta\t"])
def test_parse_pq_line_rejects_malformed(bad):
    with pytest.raises(ConfigError):
        pathquestion.parse_pq_line(bad)


def test_pq_loader_and_answerable(data_root):
    root = data_root / "PathQuestion"
    write_lines(root / "PQ-2H.txt", PQ_LINES)
    write_lines(root / "2H-kb.txt", PQ_KB)
    write_lines(root / "3H-kb.txt", PQ_KB)
    write_lines(root / "PQ-3H.txt", PQ_LINES[:1])
    ds = load_dataset("pq-2hop", split="all")
    assert [q.qid for q in ds] == ["pq-2h-00000", "pq-2h-00001", "pq-2h-00002"]
    assert ds[0].chain == [("spouse", True), ("nationality", True)] and ds[0].hops == 2
    assert ds[0].topic_entities == ["x_a"] and ds[0].qtype == "spouse#nationality"
    assert [q.answerable for q in ds] == [True, True, False]  # x_e is not in the KB
    assert ds.kg.num_edges == len(PQ_KB)


def test_pq_split_is_seeded_disjoint_and_independent_of_sampling_seed():
    n = 1908
    parts = {s: pathquestion.split_indices(n, s) for s in ("train", "dev", "test")}
    assert [len(parts[s]) for s in ("train", "dev", "test")] == [1526, 191, 191]
    allidx = np.concatenate(list(parts.values()))
    assert np.array_equal(np.sort(allidx), np.arange(n))
    assert all(np.all(np.diff(p) > 0) for p in parts.values())  # original order kept
    assert np.array_equal(pathquestion.split_indices(n, "test"), parts["test"])
    assert not np.array_equal(pathquestion.split_indices(n, "test", seed=1), parts["test"])
    with pytest.raises(ConfigError):
        pathquestion.split_indices(n, "validation")


def test_pq_file_loader_guesses_the_kb(tmp_path):
    write_lines(tmp_path / "WC-P2.txt", ["where is the club of A_B ?\tItaly\tA_B#plays_in_club#C_D#is_in_country#Italy"
                                     "\tItaly/\tA_B#plays_in_club#C_D"])
    write_lines(tmp_path / "WC2014.txt", ["A_B\tplays_in_club\tC_D", "C_D\tis_in_country\tItaly"])
    ds = load_dataset("pq-file", split="all", path=str(tmp_path / "WC-P2.txt"))
    assert len(ds) == 1 and ds[0].answerable is True and ds.info["kb_file"] == "WC2014.txt"
    with pytest.raises(ConfigError, match="path="):
        load_dataset("pq-file", split="all")


def test_conjunctive_lines_become_branches_meeting_at_the_answer_and_answerable_intersects_them(tmp_path):
    conj = "name a player at {a} in club {b} ?\t{m}\t{a}#plays_position_inverse#{m}#<end>#{m}*{b}#plays_in_club_inverse#{m}#<end>#{m}\t{s}\tfacts"
    write_lines(tmp_path / "WC-C.txt", [conj.format(a="Forward", b="Club_A", m="P1", s="P1/"),
                                   conj.format(a="Forward", b="Club_A", m="P1", s="P1/P2/"),  # P2 is no forward
                                   conj.format(a="Forward", b="Club_B", m="P3", s="P3/")])
    write_lines(tmp_path / "WC2014.txt", ["Forward\tplays_position_inverse\tP1", "Forward\tplays_position_inverse\tP3",
                                     "Defender\tplays_position_inverse\tP2", "Club_A\tplays_in_club_inverse\tP1",
                                     "Club_A\tplays_in_club_inverse\tP2", "Club_B\tplays_in_club_inverse\tP2"])
    ds = load_dataset("pq-file", split="all", path=str(tmp_path / "WC-C.txt"))
    q = ds[0]
    assert q.chain is None and q.conjunctive and q.topic_entities == ["Forward", "Club_A"]
    assert q.gold_branches() == [("Forward", [("plays_position_inverse", True)]),
                                 ("Club_A", [("plays_in_club_inverse", True)])]
    assert q.answers == ["P1"] and q.hops == 1 and q.qtype == "plays_position_inverse*plays_in_club_inverse"
    # answerable = every gold answer lies where BOTH chains arrive (P2 is in Club_A but no forward; P3 not in Club_B)
    assert [x.answerable for x in ds] == [True, False, False]
    single = KGQuestion("s", "", ["Club_A"], ["P2"], [("plays_in_club_inverse", True)], 1, None)
    assert single.gold_branches() == [("Club_A", [("plays_in_club_inverse", True)])] and not single.conjunctive
    assert compute_answerable([single, q], ds.kg).tolist() == [True, True]


# PathQuestion-large (PQL) lines as released: a leading space, no <end> marker, entity names that hold
# parentheses themselves, and answer sets whose names hold parentheses too (invented names)
PQL_LINES = [
    " what is the films of Anna_Lee 's film ?\tBig_(film)(Big_(film)/)\tAnna_Lee#__film__actor__film#Xyz#__film__sequel#Big_(film)",
    " which version of Solo 's version ?\tSolo_(T4_Remix)(Solo/Solo_(T4_Remix)/Solo_(original)/)"
    "\tSolo#__music__single__versions#Solo#__music__single__versions#Solo_(T4_Remix)",
    " what is the rating of Quake 's track ?\tPG_(USA)(PG_(USA)/)\tQuake#__music__recording__tracks#Quake#__film__rating#PG_(USA)",
    " a plain one ?\tParis(Paris/)\tAnna_Lee#__born_in#Lyon#__capital_of#Paris",
    " a line whose answer field names another entity ?\tRome(Rome/)\tAnna_Lee#__born_in#Lyon#__capital_of#Paris",
    " a line without a path ?\tParis(Paris/)",
]
PQL_KB = ["Anna_Lee\t__film__actor__film\tXyz", "Xyz\t__film__sequel\tBig_(film)",
          "Solo\t__music__single__versions\tSolo", "Solo\t__music__single__versions\tSolo_(T4_Remix)",
          "Solo\t__music__single__versions\tSolo_(original)", "Quake\t__music__recording__tracks\tQuake",
          "Quake\t__film__rating\tPG_(USA)", "Anna_Lee\t__born_in\tLyon", "Lyon\t__capital_of\tParis"]


def test_answers_whose_names_hold_parentheses_are_the_path_answer_and_its_alternatives():
    rec = pathquestion.parse_pq_line(PQL_LINES[0])
    assert rec["answers"] == ["Big_(film)"]
    assert rec["paths"] == [("Anna_Lee", ["__film__actor__film", "__film__sequel"], ["Xyz", "Big_(film)"])]
    rec = pathquestion.parse_pq_line(PQL_LINES[1])
    assert rec["answers"] == ["Solo_(T4_Remix)", "Solo", "Solo_(original)"]
    assert pathquestion.split_answer_field("PG_(USA)(PG_(USA)/)", "PG_(USA)") == ("PG_(USA)", ["PG_(USA)"])
    assert pathquestion.split_answer_field("PG_(USA)", "PG_(USA)") == ("PG_(USA)", [])  # no list at all
    with pytest.raises(ConfigError, match="path's answer"):
        pathquestion.split_answer_field("Rome(Rome/)", "Paris")
    with pytest.raises(ConfigError):
        pathquestion.parse_pq_line(PQL_LINES[4])


def test_pq_file_counts_the_lines_that_do_not_parse_and_answers_the_rest(tmp_path):
    write_lines(tmp_path / "PQL-2H.txt", PQL_LINES)
    write_lines(tmp_path / "PQL2-KB.txt", PQL_KB)
    with pytest.warns(UserWarning, match="2 line"):
        ds = load_dataset("pq-file", split="all", path=str(tmp_path / "PQL-2H.txt"))
    assert ds.info["kb_file"] == "PQL2-KB.txt"
    assert ds.info["n_file"] == 6 and ds.info["unparsed_lines"] == 2 and len(ds) == 4
    assert ds.info["unparsed_examples"][0].startswith("line 5: ") and ds.info["unparsed_examples"][1].startswith("line 6: ")
    assert [q.answers[0] for q in ds] == ["Big_(film)", "Solo_(T4_Remix)", "PG_(USA)", "Paris"]
    assert all(q.answerable for q in ds)  # the parenthesised names are the KB's entities, so they score
    assert [q.qid for q in ds] == ["pql-2h-00000", "pql-2h-00001", "pql-2h-00002", "pql-2h-00003"]
    with pytest.raises(ConfigError, match="line 5"):  # the reader alone stays strict
        pathquestion.read_pq_file(tmp_path / "PQL-2H.txt")


# ----------------------------------------------------------------------------- CLUTRR

RULES_YAML = {
    "symmetric": {"family": {"sibling": "sibling", "SO": "SO"}},
    "inverse-equivalence": {"family": {"child": "inv-child", "un": "inv-un"}},
    "compositional": {"family": {"inv-child": {"sibling": "inv-un", "child": "sibling"},
                                 "child": {"child": "grand"}}},
}
RELATIONS_YAML = {
    "child": {"male": {"rel": "son"}, "female": {"rel": "daughter"}},
    "inv-child": {"male": {"rel": "father"}, "female": {"rel": "mother"}},
    "sibling": {"male": {"rel": "brother"}, "female": {"rel": "sister"}},
    "un": {"male": {"rel": "nephew"}, "female": {"rel": "neice"}},
    "inv-un": {"male": {"rel": "uncle"}, "female": {"rel": "aunt"}},
    "grand": {"male": {"rel": "grandson"}, "female": {"rel": "granddaughter"}},
    "no-relation": {"male": {"rel": "no-relation"}, "female": {"rel": "no-relation"}},
}
CLUTRR_COLUMNS = ["", "id", "story", "query", "text_query", "target", "text_target", "clean_story", "proof_state",
                  "f_comb", "task_name", "story_edges", "edge_types", "query_edge", "genders", "syn_story",
                  "node_mapping", "task_split"]


def _clutrr_row(i, story, query, target, edges, types, genders):
    return {"": str(i), "id": f"id-{i}", "story": story, "query": repr(query), "text_query": "", "target": target,
            "text_target": "", "clean_story": story, "proof_state": "[]", "f_comb": "-".join(types),
            "task_name": f"task_1.{len(edges)}", "story_edges": repr(edges), "edge_types": repr(types),
            "query_edge": repr((0, len(edges))), "genders": genders, "syn_story": "", "node_mapping": "{}",
            "task_split": "test"}


def _write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CLUTRR_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture
def clutrr_root(data_root) -> Path:
    root = data_root / "CLUTRR"
    store = root / "clutrr_store"
    store.mkdir(parents=True)
    (store / "rules_store.yaml").write_text(yaml.safe_dump(RULES_YAML), encoding="utf-8")
    (store / "relations_store.yaml").write_text(yaml.safe_dump(RELATIONS_YAML), encoding="utf-8")
    two = _clutrr_row(0, "[Donald]'s father [Michael] has a sister [Dorothy].", ("Donald", "Dorothy"), "aunt",
                      [(0, 1), (1, 2)], ["father", "sister"], "Donald:male,Michael:male,Dorothy:female")
    three = _clutrr_row(1, "story three", ("Ann", "Cy"), "nephew", [(0, 1), (1, 2), (2, 3)],
                        ["father", "sister", "son"], "Ann:female,Bo:male,Di:female,Cy:male")
    _write_csv(root / "data_test1" / "1.2_test.csv", [two])
    _write_csv(root / "data_test1" / "1.3_test.csv", [three, {**three, "": "2", "id": "id-2"}])
    _write_csv(root / "data_test1" / "1.2,1.3_train.csv", [two, three])
    return root


def test_clutrr_rules_from_store(clutrr_root):
    rules = clutrr.load_rules(clutrr_root)
    assert rules.compose("inv-child", "sibling") == "inv-un"
    assert rules.compose("sibling", "child") is None
    assert rules.inverse["child"] == "inv-child" and rules.inverse["inv-un"] == "un"
    assert rules.symmetric == {"sibling", "SO"}
    assert rules.relation_of("Niece") == "un"  # the store's "neice" spelling is fixed
    assert rules.surface("inv-un", "female") == "aunt"
    assert "no-relation" not in rules.relations
    # orientation: Donald's father's sister is Donald's aunt
    assert rules.compose(rules.relation_of("father"), rules.relation_of("sister")) == rules.relation_of("aunt")


def test_clutrr_loader_fields_filter_and_limit(clutrr_root):
    ds = load_dataset("clutrr", split="test")
    assert ds.kind == "kinship" and len(ds) == 3 and ds.rules is not None
    s = ds[0]
    assert s.query == ("Donald", "Dorothy") and s.target == "aunt"
    assert s.people == ["Donald", "Michael", "Dorothy"] and s.genders["Dorothy"] == "female"
    assert s.edges == [(0, 1), (1, 2)] and s.edge_types == ["father", "sister"] and s.chain_length == 2
    assert s.meta["query_edge"] == (0, 2) and s.meta["file_chain_lengths"] == [2]
    assert ds.info["by_chain_length"] == {2: 1, 3: 2}
    three = load_dataset("clutrr", split="test", chain_lengths=3)
    assert [x.chain_length for x in three] == [3, 3]
    train = load_dataset("clutrr", split="train")
    assert [x.chain_length for x in train] == [2, 3] and train[0].meta["file_chain_lengths"] == [2, 3]
    with pytest.raises(ConfigError):
        load_dataset("clutrr", split="dev")


def test_clutrr_literal_columns_are_never_evaluated(clutrr_root, tmp_path):
    marker = tmp_path / "pwned"
    row = _clutrr_row(0, "s", ("A", "B"), "aunt", [(0, 1)], ["father"], "A:male,B:female")
    row["query"] = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    _write_csv(clutrr_root / "data_test1" / "1.2_test.csv", [row])
    with pytest.raises(ConfigError, match="query"):
        load_dataset("clutrr", split="test")
    assert not marker.exists()


def test_clutrr_chain_length_of_file():
    assert clutrr.chain_length_of_file(Path("1.2,1.3_train.csv")) == [2, 3]
    assert clutrr.chain_length_of_file(Path("1.10_test.csv")) == [10]
    assert clutrr.chain_length_of_file(Path("5_test.csv")) == [5]
    assert clutrr.chain_length_of_file(Path("2,3_train.csv")) == [2, 3]


# ----------------------------------------------------------------------------- registry


def test_missing_dataset_error_names_dataset_folder_and_fetch_command(data_root):
    with pytest.raises(DatasetMissingError) as info:
        load_dataset("metaqa-1hop")
    msg = str(info.value)
    assert "'metaqa-1hop'" in msg and str(data_root / "MetaQA") in msg
    assert "kgrag data fetch metaqa-1hop" in msg and "\n" not in msg


def test_missing_split_file_names_the_file(metaqa_root):
    with pytest.raises(DatasetMissingError, match="qa_dev.txt") as info:
        load_dataset("metaqa-1hop", split="dev")
    assert "kgrag data fetch metaqa-1hop" in str(info.value)


def test_unknown_name_split_and_option_are_config_errors(data_root):
    with pytest.raises(ConfigError, match="metaqa-2hop"):
        load_dataset("metaqa-2hops")
    with pytest.raises(ConfigError, match="splits"):
        load_dataset("metaqa-2hop", split="train")
    with pytest.raises(ConfigError, match="variantt"):
        load_dataset("metaqa-2hop", variantt="ntm")


def test_limit_is_seeded_deterministic_and_keeps_file_order(metaqa_root):
    a = load_dataset("metaqa-2hop", limit=3, seed=7)
    b = load_dataset("metaqa-2hop", limit=3, seed=7)
    assert [q.qid for q in a] == [q.qid for q in b]
    assert [q.meta["line"] for q in a] == sorted(q.meta["line"] for q in a)
    seen = {tuple(q.qid for q in load_dataset("metaqa-2hop", limit=3, seed=s)) for s in range(10)}
    assert len(seen) > 1  # the seed matters
    assert len(load_dataset("metaqa-2hop", limit=100)) == 5
    assert a.info["n_total"] == 5 and a.info["n_items"] == 3
    assert a.info["answerable_rate"] == pytest.approx(np.mean([q.answerable for q in a]))
    with pytest.raises(ConfigError):
        load_dataset("metaqa-2hop", limit=-1)


def test_sample_items():
    items = list(range(50))
    kept, idx = sample_items(items, 10, seed=3)
    assert kept == sorted(kept) and len(set(kept)) == 10 and kept == [items[i] for i in idx]
    assert sample_items(items, None)[0] == items


def test_list_datasets_reports_presence(metaqa_root):
    rows = {r["name"]: r for r in list_datasets()}
    assert rows["metaqa-2hop"]["present"] is True
    assert rows["metaqa-3hop"]["present"] is False  # no 3-hop file in the fixture
    assert rows["clutrr"]["present"] is False and rows["clutrr"]["how"] == "kgrag data fetch clutrr"
    assert rows["sample-movies-1hop"]["source"] == "sample"
    assert {"name", "kind", "source", "present", "path", "how"} <= set(rows["musique"])


def test_sample_datasets_load_with_the_same_loaders():
    movies = load_dataset("sample-movies-2hop", limit=20)
    assert movies.source == "sample" and movies.kind == "kgqa" and len(movies) == 20
    assert all(q.chain and q.topic_entities and q.answers for q in movies)
    assert movies[0].qid.startswith("sample-movies-2hop-")
    kin = load_dataset("sample-kinship", split="test")
    assert kin.rules is not None and all(s.chain_length == len(s.edges) for s in kin)
    pas = load_dataset("sample-passages")
    assert pas.triples and all(set(q.supporting) <= {p.pid for p in pas.corpus} for q in pas)
