"""The generated sample datasets: deterministic, in the real benchmarks' formats, internally correct,
and safe to write from several threads or processes at once.

Correctness checks use independent readers (csv, json, yaml, plain string splitting) and an
independent traversal / rule composition, not the generators' own helpers.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from kgrag_utils import settings
from kgrag_utils.datasets import samples
from kgrag_utils.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("movies", "kinship", "passages")

_RELATION_OF_WORD = {"actor": "starred_actors", "director": "directed_by", "writer": "written_by",
                     "year": "release_year", "language": "in_language", "genre": "has_genre", "tags": "has_tags",
                     "tag": "has_tags", "imdbrating": "has_imdb_rating", "imdbvotes": "has_imdb_votes"}


@pytest.fixture(scope="module")
def generated() -> dict[str, dict[str, bytes]]:
    return {kind: samples.generate_sample(kind) for kind in KINDS}


def _text(files: dict[str, bytes], rel: str) -> str:
    return files[rel].decode("utf-8")


def _digest(files: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + files[rel] + b"\0")
    return h.hexdigest()


# ------------------------------------------------------------------------------- determinism

def test_generation_is_byte_identical_in_process(generated):
    for kind in KINDS:
        again = samples.generate_sample(kind)
        assert again == generated[kind], kind


def test_generation_is_byte_identical_across_processes_and_hash_seeds(generated):
    code = ("import hashlib,sys; from kgrag_utils.datasets import samples\n"
            "for k in ('movies','kinship','passages'):\n"
            "    f = samples.generate_sample(k); h = hashlib.sha256()\n"
            "    for r in sorted(f): h.update(r.encode() + b'\\0' + f[r] + b'\\0')\n"
            "    print(k, h.hexdigest())\n")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT,
                         timeout=120, check=True).stdout.split()
    assert dict(zip(out[::2], out[1::2])) == {k: _digest(generated[k]) for k in KINDS}


def test_other_seed_gives_other_content():
    assert samples.generate_sample("movies", seed=1) != samples.generate_sample("movies", seed=0)


# ------------------------------------------------------------------------------- ensure_sample

def test_ensure_sample_writes_files_and_marker(generated):
    for kind in KINDS:
        root = samples.ensure_sample(kind)
        assert root == settings.sample_dir()
        for rel, data in generated[kind].items():
            assert (root / rel).read_bytes() == data, rel
        marker = json.loads(samples.marker_path(kind).read_text())
        assert marker["version"] == samples.SAMPLE_VERSION and set(marker["files"]) == set(generated[kind])
        assert samples.sample_is_current(kind)
    assert {p.name for p in (settings.sample_dir()).iterdir()} >= {"MetaQA", "CLUTRR", "SamplePassages"}


def test_ensure_sample_reuses_regenerates_and_rejects(tmp_path, monkeypatch, generated):
    monkeypatch.setenv("KGRAG_SAMPLE_DIR", str(tmp_path / "s"))
    root = samples.ensure_sample("movies")
    kb = root / "MetaQA" / "kb.txt"
    stamp = kb.stat().st_mtime_ns
    os.utime(kb, ns=(stamp - 10**9, stamp - 10**9))
    samples.ensure_sample("movies")
    assert kb.stat().st_mtime_ns == stamp - 10**9  # current sample: not rewritten
    kb.write_text("truncated\n")  # size no longer matches the marker -> regenerated
    samples.ensure_sample("movies")
    assert kb.read_bytes() == generated["movies"]["MetaQA/kb.txt"]
    marker = samples.marker_path("movies")
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "version": -1}))
    assert not samples.sample_is_current("movies")
    samples.ensure_sample("movies")
    assert samples.sample_is_current("movies")
    os.utime(kb, ns=(1, 1))
    samples.ensure_sample("movies", force=True)
    assert kb.stat().st_mtime_ns != 1
    with pytest.raises(ConfigError):
        samples.ensure_sample("films")


def test_concurrent_threads_never_expose_partial_files(tmp_path, monkeypatch, generated):
    monkeypatch.setenv("KGRAG_SAMPLE_DIR", str(tmp_path / "s"))
    root = samples.ensure_sample("movies")
    expected = generated["movies"]
    stop = threading.Event()
    bad: list[str] = []

    def reader():
        while not stop.is_set():
            for rel in ("MetaQA/kb.txt", "MetaQA/qa/3-hop/vanilla/qa_test.txt"):
                if (root / rel).read_bytes() != expected[rel]:
                    bad.append(rel)

    t = threading.Thread(target=reader)
    t.start()
    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            list(pool.map(lambda _: samples.ensure_sample("movies", force=True), range(6)))
    finally:
        stop.set()
        t.join()
    assert not bad
    assert samples.sample_is_current("movies")
    assert not list(root.rglob("*.tmp"))


def test_concurrent_processes_write_one_consistent_sample(tmp_path, generated):
    env = dict(os.environ, KGRAG_SAMPLE_DIR=str(tmp_path / "s"))
    code = "from kgrag_utils.datasets.samples import ensure_sample; print(ensure_sample('passages'))"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert {o.strip() for o, _ in outs} == {str((tmp_path / "s").resolve())}
    for rel, data in generated["passages"].items():
        assert (tmp_path / "s" / rel).read_bytes() == data
    assert samples.sample_is_current("passages", tmp_path / "s")
    assert not list((tmp_path / "s").rglob("*.tmp"))


# ------------------------------------------------------------------------------- movies

def _kb(files) -> list[tuple[str, str, str]]:
    facts = []
    for line in _text(files, "MetaQA/kb.txt").splitlines():
        parts = line.split("|")
        assert len(parts) == 3 and all(parts), line
        facts.append(tuple(parts))
    return facts


def _qa(files, hops: int, split: str) -> list[tuple[str, str, list[str], str]]:
    lines = _text(files, f"MetaQA/qa/{hops}-hop/vanilla/qa_{split}.txt").splitlines()
    qtypes = _text(files, f"MetaQA/qa/{hops}-hop/qa_{split}_qtype.txt").splitlines()
    assert len(lines) == len(qtypes)
    out = []
    for line, qtype in zip(lines, qtypes):
        question, answers = line.split("\t")
        topics = re.findall(r"\[([^\]]+)\]", question)
        assert len(topics) == 1, question
        out.append((question, topics[0], answers.split("|"), qtype))
    return out


def _walk(facts, topic: str, qtype: str) -> tuple[set[str], dict[str, int]]:
    """Answers of a MetaQA question type (topic excluded after step 0) and the number of paths to each."""
    fwd, bwd = defaultdict(list), defaultdict(list)
    for h, r, t in facts:
        fwd[(h, r)].append(t)
        bwd[(t, r)].append(h)
    words = qtype.split("_to_")
    paths = {topic: 1}
    for src, dst in zip(words, words[1:]):
        nxt: dict[str, int] = defaultdict(int)
        for node, count in paths.items():
            targets = fwd[(node, _RELATION_OF_WORD[dst])] if src == "movie" else bwd[(node, _RELATION_OF_WORD[src])]
            for t in targets:
                if t != topic:
                    nxt[t] += count
        paths = dict(nxt)
    return set(paths), paths


def test_movie_kb_schema(generated):
    facts = _kb(generated["movies"])
    assert len(facts) == len(set(facts)) and 300 <= len(facts) <= 1000
    rels = {r for _, r, _ in facts}
    assert {"directed_by", "written_by", "starred_actors", "release_year", "in_language", "has_tags",
            "has_genre"} <= rels <= set(_RELATION_OF_WORD.values())
    movies = {h for h, _, _ in facts}
    assert 40 <= len(movies) <= 60
    assert all(re.fullmatch(r"\d{4}", t) for _, r, t in facts if r == "release_year")
    assert all(t == t.lower() for _, r, t in facts if r == "has_tags")
    people = {t for _, r, t in facts if r in ("directed_by", "written_by", "starred_actors")}
    assert not people & movies


def test_movie_questions_chains_reach_exactly_their_answers(generated):
    facts = _kb(generated["movies"])
    entities = {x for h, _, t in facts for x in (h, t)}
    several_answers = several_paths = 0
    for hops in (1, 2, 3):
        seen = {}
        for split in ("dev", "test"):
            rows = _qa(generated["movies"], hops, split)
            assert 60 <= len(rows) <= 150, (hops, split, len(rows))
            for question, topic, answers, qtype in rows:
                assert len(qtype.split("_to_")) == hops + 1
                assert topic in entities and topic not in answers
                reached, paths = _walk(facts, topic, qtype)
                assert set(answers) == reached, (question, qtype)
                several_answers += hops > 1 and len(answers) >= 3
                several_paths += hops > 1 and any(paths[a] > 1 for a in answers)
                key = (qtype, topic)
                assert seen.setdefault(key, split) == split, f"{key} in both dev and test"
    assert several_answers >= 50 and several_paths >= 20


def test_movie_question_types_use_metaqa_names(generated, real_data):
    for hops in (1, 2, 3):
        real = set((real_data / "MetaQA" / "qa" / f"{hops}-hop" / "qa_dev_qtype.txt").read_text().split())
        mine = {q for split in ("dev", "test") for *_, q in _qa(generated["movies"], hops, split)}
        assert mine <= real, mine - real
        assert len(mine) >= len(real) - 2
    real_rels = {line.split("|")[1] for line in
                 (real_data / "MetaQA" / "kb_reconstructed.txt").read_text(encoding="utf-8").splitlines()}
    assert {r for _, r, _ in _kb(generated["movies"])} <= real_rels


# ------------------------------------------------------------------------------- kinship

def _rows(files, rel) -> tuple[list[str], list[dict]]:
    reader = csv.DictReader(io.StringIO(_text(files, rel)))
    return list(reader.fieldnames), list(reader)


def _store(files):
    rules = yaml.safe_load(_text(files, "CLUTRR/clutrr_store/rules_store.yaml"))
    relations = yaml.safe_load(_text(files, "CLUTRR/clutrr_store/relations_store.yaml"))
    comp = {(a, b): c for a, row in rules["compositional"]["family"].items() for b, c in row.items()}
    word = {spec["rel"]: rel for rel, genders in relations.items() for spec in genders.values()}
    return comp, word


def _cky(comp, rels: list[str]) -> set[str]:
    n = len(rels)
    cell = {(i, i + 1): {r} for i, r in enumerate(rels)}
    for span in range(2, n + 1):
        for i in range(n - span + 1):
            j = i + span
            cell[(i, j)] = {comp[(x, y)] for m in range(i + 1, j) for x in cell[(i, m)] for y in cell[(m, j)]
                            if (x, y) in comp}
    return cell[(0, n)]


_MALE_WORDS = {"son", "father", "husband", "brother", "grandson", "grandfather", "son-in-law", "father-in-law",
               "nephew", "uncle"}
_FEMALE_WORDS = {"daughter", "mother", "wife", "sister", "granddaughter", "grandmother", "daughter-in-law",
                 "mother-in-law", "niece", "aunt"}


def _kinship_files(files):
    names = {"CLUTRR/data_sample/2,3_train.csv": (2, 3)}
    names.update({f"CLUTRR/data_sample/{k}_test.csv": (k,) for k in (2, 3, 4, 5, 6)})
    assert set(names) | {"CLUTRR/clutrr_store/rules_store.yaml", "CLUTRR/clutrr_store/relations_store.yaml"} \
        == set(files)
    return names


def test_kinship_rows_are_well_formed(generated):
    files = generated["kinship"]
    for rel, lengths in _kinship_files(files).items():
        header, rows = _rows(files, rel)
        assert header[:3] == ["", "id", "story"]
        assert (130 if "train" in rel else 25) <= len(rows) <= (170 if "train" in rel else 40)
        assert [r[""] for r in rows] == [str(i) for i in range(len(rows))]
        assert {len(ast.literal_eval(r["edge_types"])) for r in rows} == set(lengths)
        for r in rows:
            edges = ast.literal_eval(r["story_edges"])
            types = ast.literal_eval(r["edge_types"])
            k = len(types)
            assert edges == [(i, i + 1) for i in range(k)] and ast.literal_eval(r["query_edge"]) == (0, k)
            people = [p.split(":")[0] for p in r["genders"].split(",")]
            assert all(re.fullmatch(r"[A-Z][a-z]+:(male|female)", p) for p in r["genders"].split(","))
            assert len(people) == len(set(people)) == k + 1
            assert ast.literal_eval(r["query"]) == (people[0], people[-1])
            assert r["f_comb"] == "-".join(types) and r["task_name"] == f"task_1.{k}"
            gender = dict(p.split(":") for p in r["genders"].split(","))
            for (_, b), word in zip(edges, types):  # the word names the second person's gender
                assert word in (_MALE_WORDS if gender[people[b]] == "male" else _FEMALE_WORDS), word
            assert r["target"] in (_MALE_WORDS if gender[people[-1]] == "male" else _FEMALE_WORDS)
            assert r["task_split"] == ("train" if "train" in rel else "test")
            sentences = re.split(r"(?<=\.) ", r["clean_story"])
            assert len(sentences) == k and sorted(re.split(r"(?<=\.) ", r["story"])) == sorted(sentences)
            for (a, b), word, sentence in zip(edges, types, sentences):  # sentence i states edge i
                assert f"[{people[a]}]" in sentence and f"[{people[b]}]" in sentence
                assert re.search(rf"\b{re.escape(word)}\b", sentence)
            text_target = ast.literal_eval(r["text_target"])
            assert len(text_target) == 1 and re.search(rf"\b{re.escape(r['target'])}\b", text_target[0])
            assert sorted(ast.literal_eval(r["node_mapping"]).values()) == list(range(k + 1))
            assert r["text_query"] == r["syn_story"] == ""
            assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", r["id"])


def test_kinship_targets_follow_from_the_rules(generated):
    files = generated["kinship"]
    comp, word = _store(files)
    n = 0
    for rel in _kinship_files(files):
        for r in _rows(files, rel)[1]:
            types = ast.literal_eval(r["edge_types"])
            # every bracketing of the chain derives exactly the target
            assert _cky(comp, [word[t] for t in types]) == {word[r["target"]]}, r["f_comb"]
            # the proof tree is made of rule applications whose leaves are the story edges
            proof = [next(iter(step.items())) for step in ast.literal_eval(r["proof_state"])]
            people = [p.split(":")[0] for p in r["genders"].split(",")]
            query = ast.literal_eval(r["query"])
            assert proof[0][0] == (query[0], r["target"], query[1])
            leaves = {(query[0], r["target"], query[1])}
            for head, (left, right) in proof:
                assert head in leaves and left[2] == right[0] and (head[0], head[2]) == (left[0], right[2])
                assert comp[(word[left[1]], word[right[1]])] == word[head[1]]
                leaves = (leaves - {head}) | {left, right}
            story = {(people[i], t, people[i + 1]) for i, t in enumerate(types)}
            assert leaves == story
            n += 1
    assert n >= 290


def test_kinship_rules_are_facts_in_generated_families():
    """Every composition rule holds for all distinct triples of people in random family trees."""
    import random

    from kgrag_utils.datasets.sample_kinship import COMPOSITIONS, FamilyTree

    used = set()
    for seed in range(25):
        fam = FamilyTree(random.Random(seed))
        n = len(fam.people)
        for a in range(n):
            for b, r1 in fam.table[a].items():
                for c, r2 in fam.table[b].items():
                    if c != a and (r1, r2) in COMPOSITIONS:
                        assert fam.relation(a, c) == COMPOSITIONS[(r1, r2)], (r1, r2, fam.relation(a, c))
                        used.add((r1, r2))
    assert used == set(COMPOSITIONS)


def test_kinship_store_matches_clutrr_schema_and_data(generated, real_data):
    files = generated["kinship"]
    store = real_data / "CLUTRR" / "clutrr_store"
    real_rules = yaml.safe_load((store / "rules_store.yaml").read_text())
    real_rel = yaml.safe_load((store / "relations_store.yaml").read_text())
    mine_rules = yaml.safe_load(_text(files, "CLUTRR/clutrr_store/rules_store.yaml"))
    mine_rel = yaml.safe_load(_text(files, "CLUTRR/clutrr_store/relations_store.yaml"))
    assert set(mine_rules) == set(real_rules)
    for rel, genders in mine_rel.items():  # same relation keys and gendered words (CLUTRR misspells niece)
        assert {g: s["rel"] for g, s in genders.items()} == \
            {g: s["rel"].replace("neice", "niece") for g, s in real_rel[rel.strip()].items()}
        assert all("e_1" in p and "e_2" in p for s in genders.values() for p in s["p"])
    comp, word = _store(files)
    word["neice"] = "un"
    # the sample's rules hold on the real training stories of two edges
    checked = 0
    real_dir = next((real_data / "CLUTRR").glob("data_*"))
    with open(next(real_dir.glob("*_train.csv")), encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            types = ast.literal_eval(row["edge_types"])
            key = tuple(word[t] for t in types)
            if len(types) == 2 and key in comp:
                assert comp[key] == word[row["target"]], (types, row["target"])
                checked += 1
    assert checked > 1000
    header = next(csv.reader(open(next(real_dir.glob("*_test.csv")), encoding="utf-8", newline="")))
    for rel in _kinship_files(files):
        assert _rows(files, rel)[0] == header


# ------------------------------------------------------------------------------- passages

def _passages(files):
    q = json.loads(_text(files, "SamplePassages/sample_questions.json"))
    c = json.loads(_text(files, "SamplePassages/sample_corpus.json"))
    o = json.loads(_text(files, "SamplePassages/sample_openie.json"))
    return q, c, o


def test_passage_questions_are_supported(generated):
    questions, corpus, _ = _passages(generated["passages"])
    assert 35 <= len(questions) <= 50 and 50 <= len(corpus) <= 80
    in_corpus = {(d["title"], d["text"]) for d in corpus}
    assert len({d["title"] for d in corpus}) == len(corpus)
    assert {q["type"] for q in questions} == {"bridge", "comparison"}
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        paras = q["paragraphs"]
        assert [p["idx"] for p in paras] == list(range(10))
        assert all((p["title"], p["paragraph_text"]) in in_corpus for p in paras)
        support = [p for p in paras if p["is_supporting"]]
        first, second = q["question_decomposition"]
        assert [paras[first["paragraph_support_idx"]], paras[second["paragraph_support_idx"]]] == support \
            or [paras[second["paragraph_support_idx"]], paras[first["paragraph_support_idx"]]] == support
        p1, p2 = paras[first["paragraph_support_idx"]], paras[second["paragraph_support_idx"]]
        if q["type"] == "bridge":
            bridge = first["answer"]
            assert p1["title"] in q["question"] and bridge not in q["question"]
            assert bridge in p1["paragraph_text"] and p2["title"] == bridge
            assert q["answer"] == second["answer"] and q["answer"] in p2["paragraph_text"]
            assert "#1" in second["question"]
        else:
            assert p1["title"] in q["question"] and p2["title"] in q["question"]
            assert first["answer"] in p1["paragraph_text"] and second["answer"] in p2["paragraph_text"]
            v1, v2 = (int(x["answer"].replace(",", "")) for x in (first, second))
            larger = "more" in q["question"]
            winner = p1["title"] if (v1 > v2) == larger else p2["title"]
            assert v1 != v2 and q["answer"] == winner
        assert isinstance(q["answer_aliases"], list) and q["answerable"] is True


def test_passage_triples_are_true_to_their_text(generated):
    _, corpus, openie = _passages(generated["passages"])
    docs = openie["docs"]
    assert [(d["title"], d["text"]) for d in docs] == [(c["title"], c["text"]) for c in corpus]
    n = 0
    for d in docs:
        assert d["passage"] == f"{d['title']}\n{d['text']}"
        assert d["extracted_triples"] and all(len(t) == 3 for t in d["extracted_triples"])
        for s, p, o in d["extracted_triples"]:
            assert s in d["passage"] and o in d["passage"] and p, (s, p, o)
            n += 1
        assert d["extracted_entities"] == sorted({x for s, _, o in d["extracted_triples"] for x in (s, o)})
    assert n >= 150


def test_passage_files_have_the_real_keys(generated, real_data):
    questions, corpus, openie = _passages(generated["passages"])
    folder = real_data / "MuSiQue"
    real_q = json.loads((folder / "hipporag_musique_train_100q.json").read_text())[0]
    real_c = json.loads((folder / "hipporag_musique_train_corpus.json").read_text())[0]
    real_o = json.loads(next(folder.glob("hipporag_openie_musique_*.json")).read_text())
    for q in questions:
        assert set(real_q) <= set(q)
        assert all(set(p) == set(real_q["paragraphs"][0]) for p in q["paragraphs"])
        assert all(set(d) == set(real_q["question_decomposition"][0]) for d in q["question_decomposition"])
    assert all(set(c) == set(real_c) for c in corpus)
    assert set(real_o) <= set(openie)
    assert all(set(real_o["docs"][0]) <= set(d) for d in openie["docs"])


# ------------------------------------------------------------------------------- loaders

def test_samples_load_through_the_dataset_registry(tmp_path, monkeypatch, generated):
    """The same loaders that read the real benchmarks read the samples (integration check)."""
    registry = pytest.importorskip("kgrag_utils.datasets.registry")
    monkeypatch.setenv("KGRAG_SAMPLE_DIR", str(tmp_path / "s"))
    for hops in (1, 2, 3):
        ds = registry.load_dataset(f"sample-movies-{hops}hop", split="test")
        assert len(ds) == len(_qa(generated["movies"], hops, "test"))
        assert ds.kg.num_edges == len(_kb(generated["movies"]))
    kin = registry.load_dataset("sample-kinship", split="test")
    assert len(kin) == sum(len(_rows(generated["kinship"], f"CLUTRR/data_sample/{k}_test.csv")[1])
                           for k in (2, 3, 4, 5, 6))
    assert kin.rules is not None and kin.rules.compose("child", "child") == "grand"
    pas = registry.load_dataset("sample-passages", split="test")
    questions, corpus, _ = _passages(generated["passages"])
    assert len(pas) == len(questions) and len(pas.corpus) == len(corpus)
