"""FactKG, RoG WebQSP/CWQ and IIRC: safe unpickling, loaders on fixtures in the released formats,
the DBpedia graph build, the registry / `kgrag data list` entries and the download step offline."""

from __future__ import annotations

import collections
import hashlib
import io
import json
import os
import pickle
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dataset_files import empty_data_folder

from kgrag_utils import cli
from kgrag_utils.datasets import download, factkg, fixture_graphs, fixtures, iirc, list_datasets, load_dataset, rog
from kgrag_utils.datasets.safe_pickle import UnsafePickleError, safe_load, safe_loads
from kgrag_utils.errors import (BackendUnavailableError, ConfigError, DatasetMissingError, IntegrityError)
from kgrag_utils.kg import KG

NEW_REAL = ("factkg", "webqsp", "cwq", "iirc")


@pytest.fixture
def data_root(tmp_path, monkeypatch) -> Path:
    """An empty data folder (the integrity check of real copies left on)."""
    return empty_data_folder(tmp_path, monkeypatch)


def _write_fixture(kind: str, dest: Path) -> None:
    """Write a fixture's files under `dest` (the layout of the real data directory)."""
    for rel, data in fixtures.generate_fixture(kind).items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _facts(kg: KG) -> set[tuple[str, str, str]]:
    return set(kg.triples(np.arange(kg.num_edges)))


# ----------------------------------------------------------------------------- safe unpickling


class _RunsCode:
    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


class _Plain:  # an ordinary class: refused too, although harmless
    pass


@pytest.mark.parametrize("protocol", [2, 4, pickle.HIGHEST_PROTOCOL])
def test_safe_pickle_admits_plain_data(protocol):
    obj = {"a": [1, 2.5, True, None, "x"], "b": (1, ("n",)), "c": {1, 2}, "d": frozenset({"z"}),
           "f": {"nested": {"~rel": ["t1", "t2"]}}}
    if protocol >= 3:  # protocol 2 writes bytes through _codecs.encode, a function: refused
        obj["e"] = b"raw"
    assert safe_loads(pickle.dumps(obj, protocol=protocol)) == obj


def test_safe_pickle_refuses_code_and_never_runs_it(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"claim": _RunsCode(marker)})
    with pytest.raises(UnsafePickleError) as info:
        safe_loads(payload, source="evil.pickle")
    msg = str(info.value)
    assert "\n" not in msg and "system" in msg and "evil.pickle" in msg and "builtin containers" in msg
    assert not marker.exists()


@pytest.mark.parametrize("obj", [_Plain(), collections.OrderedDict(a=1), eval, np.int64(3)])
def test_safe_pickle_refuses_every_other_global(obj):
    with pytest.raises(UnsafePickleError):
        safe_loads(pickle.dumps(obj))


def test_safe_pickle_optional_containers_only_on_request():
    data = pickle.dumps(collections.defaultdict(list, {"e": ["n"]}))
    with pytest.raises(UnsafePickleError, match="allow="):
        safe_loads(data)
    assert safe_loads(data, allow=("collections.defaultdict",)) == {"e": ["n"]}
    with pytest.raises(UnsafePickleError, match="only"):
        safe_loads(data, allow=("os.system",))


def test_safe_pickle_damaged_or_missing_file(tmp_path):
    bad = tmp_path / "cut.pickle"
    bad.write_bytes(pickle.dumps({"a": list(range(100))})[:-20])
    with pytest.raises(IntegrityError, match="re-fetch"):
        safe_load(bad)
    with pytest.raises(DatasetMissingError):
        safe_load(tmp_path / "absent.pickle")


def test_factkg_loader_refuses_a_malicious_claim_file(data_root, tmp_path):
    _write_fixture("factkg", data_root)
    marker = tmp_path / "pwned"
    evil = {"A claim.": {"Label": [True], "Entity_set": [_RunsCode(marker)], "types": []}}
    (data_root / "FactKG" / "factkg_test.pickle").write_bytes(pickle.dumps(evil))
    with pytest.raises(UnsafePickleError, match="factkg_test.pickle"):
        load_dataset("factkg", split="test")
    assert not marker.exists()


# ----------------------------------------------------------------------------- FactKG


def test_factkg_claims_become_kg_questions():
    train = load_dataset("fixture-factkg", split="train")
    assert train.kind == "kgqa" and train.source == "fixture" and len(train) == 6
    readme = next(q for q in train if q.question.startswith("Adam McQuaid weighed"))
    assert readme.answers == ["False"] and readme.meta["label"] is False
    assert readme.topic_entities == ["Adam_McQuaid", '"94802.4"', "Pleasant_Springs,_Wisconsin"]
    assert readme.qtype == "conjunction" and readme.meta["style"] == "coll:model" and readme.meta["substitution"]
    assert readme.meta["evidence"]["Adam_McQuaid"] == [["weight"], ["placeOfBirth"]]
    hop2 = next(q for q in train if q.qtype == "multi-hop")
    assert hop2.hops == 2 and hop2.answers == ["True"]
    neg = next(q for q in train if "did not" in q.question)
    assert neg.qtype == "negation"  # negation wins over num1, as in FactKG's baseline
    assert train.info["by_reasoning_type"] == {"conjunction": 1, "one-hop": 2, "multi-hop": 1, "negation": 1,
                                               "existence": 1}
    test = load_dataset("fixture-factkg", split="test")
    assert all(q.meta["evidence"] is None for q in test) and {q.answers[0] for q in test} == {"True", "False"}
    assert [q.hops for q in test] == [1, 1, 2, 1]


@pytest.mark.parametrize("types,expected", [
    (["written", "num1"], "one-hop"), (["coll:model", "num2", "multi claim"], "conjunction"),
    (["written", "multi hop"], "multi-hop"), (["coll:presup", "existence"], "existence"),
    (["written", "negation", "num1"], "negation"), (["written"], None),
])
def test_factkg_reasoning_type(types, expected):
    assert factkg.reasoning_type(types) == expected


def test_factkg_directed_graph_matches_the_written_facts():
    ds = load_dataset("fixture-factkg", split="dev")
    world = fixtures.factkg_world()
    assert _facts(ds.kg) == set(world["facts"])  # '~' entries folded back, types not facts
    assert "22-rdf-syntax-ns#type" not in set(ds.kg.relation_names)
    assert not any(r.startswith("~") for r in ds.kg.relation_names)
    kid = ds.kg.entity_id("Apollo_14")
    assert [ds.kg.entity_names[t] for t in ds.kg.neighbors(kid, "crewMember", "out")[0]] == ["Edgar_Mitchell"]
    assert ds.kg.neighbors(kid, "crewMember", "in")[0].size == 0  # direction is kept
    assert ds.info["facts_forward_only"] == 1 and ds.info["facts_reverse_only"] == 1
    types = ds.info["entity_types"]
    astronauts = {ds.kg.entity_names[i] for i in types.entities_of("Astronaut")}
    assert astronauts == {"Alan_Shepard", "Edgar_Mitchell", "Elliot_See"}
    assert "Q5" not in set(types.names) and types.entities_of("Unknown").size == 0
    assert sorted(types.types_of(ds.kg.entity_id("Seoul"))) == ["City", "Place"]


def test_factkg_full_graph_relation_filter_and_cache(data_root):
    _write_fixture("factkg", data_root)
    root = data_root / "FactKG"
    light, _, _ = factkg.load_dbpedia(root / "dbpedia_2015_undirected_light.pickle", cache=False)
    full_filtered, _, _ = factkg.load_dbpedia(root / "dbpedia_2015_undirected.pickle",
                                              root / "relations_for_final.pickle", cache=False)
    full_all, _, _ = factkg.load_dbpedia(root / "dbpedia_2015_undirected.pickle", cache=False)
    assert _facts(full_filtered) == _facts(light)
    assert _facts(full_all) - _facts(light) == set(fixture_graphs._FULL_ONLY)
    first = load_dataset("factkg", split="test", graph="full")
    second = load_dataset("factkg", split="test", graph="full")
    assert "kg_cache" not in first.info and "kg_cache" in second.info  # second load reads the .npz
    assert _facts(first.kg) == _facts(second.kg) == _facts(light)
    assert list(second.info["entity_types"].names) == list(first.info["entity_types"].names)
    no_filter = load_dataset("factkg", split="test", graph="full", relation_filter=False)
    assert "wikiPageUsesTemplate" in set(no_filter.kg.relation_names)
    claims_only = load_dataset("factkg", split="test", kg=False)
    assert claims_only.kg is None and len(claims_only) == 4


def test_factkg_build_agrees_with_a_plain_loop_on_a_random_graph():
    rng = np.random.default_rng(7)
    n_e, n_f = 400, 3000
    h = rng.integers(0, n_e, n_f)
    t = rng.integers(0, n_e, n_f)
    r = rng.integers(0, 12, n_f)
    facts = {(f"E{a}", f"r{c}", f"E{b}") for a, b, c in zip(h, t, r)}
    graph: dict = {}
    for i, (a, rel, b) in enumerate(sorted(facts)):
        if i % 17 != 0:  # most facts in both directions, some only forward, some only reverse
            graph.setdefault(a, {}).setdefault(rel, []).append(b)
        if i % 13 != 0 or i % 17 == 0:
            graph.setdefault(b, {}).setdefault("~" + rel, []).append(a)
    kg, _, stats = factkg.build_dbpedia_kg(graph)
    assert _facts(kg) == facts and kg.num_edges == len(facts)
    assert stats["facts_reverse_only"] == sum(1 for i in range(len(facts)) if i % 17 == 0)
    kept = {f"r{i}" for i in range(6)}
    kg6, _, _ = factkg.build_dbpedia_kg(graph, relations=kept)
    assert _facts(kg6) == {f for f in facts if f[1] in kept}


def test_factkg_missing_split_and_graph_name_the_fetch_command(data_root):
    folder = data_root / "FactKG"
    folder.mkdir()
    (folder / "factkg_test.pickle").write_bytes(pickle.dumps({}))
    with pytest.raises(DatasetMissingError) as info:
        load_dataset("factkg", split="test")
    assert "dbpedia_2015_undirected" in str(info.value) and "kgrag data fetch factkg" in str(info.value)
    _write_fixture("factkg", data_root)
    (folder / "factkg_train.pickle").unlink()
    with pytest.raises(DatasetMissingError, match=r"factkg_train\.pickle.*kgrag data fetch factkg"):
        load_dataset("factkg", split="train")
    with pytest.raises(ConfigError):
        load_dataset("factkg", split="test", graph="huge")


# ----------------------------------------------------------------------------- RoG WebQSP / CWQ


def test_rog_fixture_files_have_the_declared_parquet_schema():
    files = fixtures.generate_fixture("webqsp")
    schema = pq.read_schema(io.BytesIO(files["RoG-webqsp/data/test-00000-of-00001.parquet"]))
    expected = {"id": pa.string(), "question": pa.string(), "answer": pa.list_(pa.string()),
                "q_entity": pa.list_(pa.string()), "a_entity": pa.list_(pa.string()),
                "graph": pa.list_(pa.list_(pa.string())), "choices": pa.list_(pa.null())}
    assert {f.name: f.type for f in schema} == expected and schema.names == list(rog.COLUMNS)


def test_rog_questions_chains_and_answerable():
    ds = load_dataset("fixture-webqsp", split="train")
    assert ds.kind == "kgqa" and ds.kg is None and len(ds) == 4
    q = ds[0]
    assert q.qid == "WebQTrn-0" and q.topic_entities == ["Justin Bieber"] and q.answers == ["Jaxon Bieber"]
    assert q.meta["a_entity"] == ["Jaxon Bieber"] and q.meta["graph_triples"] == 8
    # all shortest paths, direction recorded: via the CVT node (two ways in), the shared parent, the gender
    assert sorted(map(tuple, q.meta["shortest_chains"])) == sorted([
        (("people.person.sibling_s", True), ("people.sibling_relationship.sibling", True)),
        (("people.sibling_relationship.sibling", False), ("people.sibling_relationship.sibling", True)),
        (("people.person.parents", True), ("people.person.parents", False)),
        (("people.person.gender", True), ("people.person.gender", False)),
    ])
    assert q.chain == q.meta["shortest_chains"][0] and q.hops == 2 and q.answerable
    polk = ds[2]  # "Farmer" is not in its graph
    assert polk.answerable is False and polk.meta["answerable_any"] is True
    assert polk.meta["answer_hops"] == {"Lawyer": 1}
    assert ds.info["answerable_rate"] == 0.75
    val = load_dataset("fixture-webqsp", split="validation")
    assert val[0].chain == [("location.location.containedby", False)]  # walks Nassau -> Bahamas backwards


def test_rog_chains_follow_in_the_question_graph():
    ds = load_dataset("fixture-cwq", split="test")
    for q in ds:
        kg = ds.triples.kg(q.qid)
        for chain in q.meta["shortest_chains"]:
            reached = kg.follow_chain([kg.entity_id(t) for t in q.topic_entities if t in set(kg.entity_names)],
                                      chain).reached
            assert set(q.meta["a_entity"]) & {kg.entity_names[i] for i in reached}


def test_rog_per_question_triples_and_kg():
    ds = load_dataset("fixture-webqsp", split="test")
    rows = {r["id"]: r for r in fixtures.rog_questions("webqsp")["test"]}
    assert set(ds.triples) == set(rows) and len(ds.triples) == 3
    for q in ds:
        assert ds.triples[q.qid] == [tuple(t) for t in rows[q.qid]["graph"]]
        kg = ds.triples.kg(q.qid)
        assert _facts(kg) == {tuple(t) for t in rows[q.qid]["graph"]}
    assert "m.02nqgmw" in set(ds.triples.kg("WebQTest-0").entity_names)  # Freebase ids stay ids
    limited = load_dataset("fixture-webqsp", split="test", limit=1, seed=1)
    assert len(limited) == 1 and limited[0].qid in limited.triples
    assert limited.info["answerable_khop_rate"] == limited.info["answerable_rate"] == float(limited[0].answerable)


def test_rog_malformed_triples_missing_columns_and_paths_off(data_root):
    folder = data_root / "RoG-webqsp" / "data"
    folder.mkdir(parents=True)
    rows = [{"id": "q0", "question": "who", "answer": ["B"], "q_entity": ["A"], "a_entity": ["B"],
             "graph": [["A", " r1 ", "B"], ["A", "r2"], ["B", "r3", "C", "D"]], "choices": []}]
    schema = pa.schema([("id", pa.string()), ("question", pa.string()), ("answer", pa.list_(pa.string())),
                        ("q_entity", pa.list_(pa.string())), ("a_entity", pa.list_(pa.string())),
                        ("graph", pa.list_(pa.list_(pa.string()))), ("choices", pa.list_(pa.null()))])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / "test-00000-of-00001.parquet")
    ds = load_dataset("webqsp", split="test")
    assert ds.info["malformed_triples"] == 2 and ds.triples["q0"] == [("A", "r1", "B")]
    assert ds[0].chain == [("r1", True)] and ds[0].answerable
    off = load_dataset("webqsp", split="test", paths=False)
    assert off[0].chain is None and off[0].answerable is None and "shortest_chains" not in off[0].meta
    with pytest.raises(DatasetMissingError, match=r"kgrag data fetch webqsp"):
        load_dataset("webqsp", split="train")
    pq.write_table(pa.table({"id": ["x"], "question": ["y"]}), folder / "test-00001-of-00002.parquet")
    with pytest.raises(IntegrityError, match="lacks the RoG column"):
        load_dataset("webqsp", split="test")


def test_shortest_chains_respect_direction_and_parallel_relations():
    kg = KG.from_triples([("t", "r1", "x"), ("y", "r2", "x"), ("y", "r3", "a"), ("x", "r4", "a"),
                          ("x", "r5", "a"), ("t", "r6", "z"), ("z", "r7", "w"), ("w", "r8", "a")])
    chains, dist = rog.shortest_chains(kg, ["t"], ["a", "missing"])
    assert dist == {"a": 2}
    assert sorted(map(tuple, chains)) == [(("r1", True), ("r4", True)), (("r1", True), ("r5", True))]
    assert rog.shortest_chains(kg, ["nowhere"], ["a"]) == ([], {})


# ----------------------------------------------------------------------------- IIRC


def test_iirc_questions_answers_and_document_sets():
    ds = load_dataset("fixture-iirc", split="train")
    assert ds.kind == "passages" and [q.qid for q in ds] == ["q-train-0", "q-train-1", "q-train-2", "q-train-4"]
    by_id = {q.qid: q for q in ds}
    assert by_id["q-train-0"].answers == ["56"] and by_id["q-train-0"].meta["answer_unit"] == "years"
    assert by_id["q-train-1"].answers == ["Ingrid Lund"] and by_id["q-train-2"].answers == ["yes"]
    assert by_id["q-train-4"].answers == ["Kettleby, Hallow Mill"]
    assert by_id["q-train-4"].meta["answer_spans"] == ["Kettleby", "Hallow Mill"]
    q = by_id["q-train-1"]
    titles = [p.title for p in q.paragraphs]
    assert titles[0] == "Arvid Tollefsen" and titles.count("Bergen Conservatory") == 3
    assert titles.count("Oslo Philharmonic") == 3
    texts = " ".join(p.text for p in q.paragraphs)
    assert "<" not in texts and "Mäkelä" in texts  # tags removed, entities unescaped
    support = {p.pid: p for p in q.paragraphs if p.pid in q.supporting}
    assert [p.text for p in support.values() if p.title != "Arvid Tollefsen"] == [
        "It was founded in 1905 by the pianist Ingrid Lund."]
    assert q.supporting_titles == ["Arvid Tollefsen", "Bergen Conservatory"]
    lake = by_id["q-train-4"]  # an article key that is not lower-cased; a linked article that is missing
    assert any(p.title == "Brenna River" for p in lake.paragraphs)
    assert ds.info["missing_articles"] == 1 and ds.info["left_out_unanswerable"] == 1
    assert ds.info["left_out_bad"] == 1 and ds.info["supporting_not_in_corpus"] == 0
    assert {p.pid for q in ds for p in q.paragraphs} == {p.pid for p in ds.corpus}


def test_iirc_unanswerable_option_and_overlap_matching():
    ds = load_dataset("fixture-iirc", split="train", unanswerable=True)
    none = next(q for q in ds if q.qid == "q-train-3")
    assert none.answers == [] and none.qtype == "none" and none.supporting == []
    assert not any(q.meta["answer_type"] == "bad" for q in ds)
    dev = load_dataset("fixture-iirc", split="dev")
    deep = next(q for q in dev if q.qid == "q-dev-1")
    assert [p.text for p in deep.paragraphs if p.pid in deep.supporting] == [
        "It is 12 kilometres long and reaches a depth of 80 metres."]
    assert dev.info["support_overlap"] == 1


def test_iirc_answers_of_rejects_unknown_types():
    assert iirc.answers_of({"type": "value", "answer_value": " 3 "}) == (["3"], "value")
    with pytest.raises(IntegrityError):
        iirc.answers_of({"type": "multiple choice"})


# ----------------------------------------------------------------------------- fixtures


def test_fixtures_are_deterministic_across_processes():
    digests = {k: {rel: hashlib.sha256(b).hexdigest() for rel, b in fixtures.generate_fixture(k).items()}
               for k in fixtures.FIXTURE_KINDS}
    assert digests == {k: {rel: hashlib.sha256(b).hexdigest() for rel, b in fixtures.generate_fixture(k).items()}
                       for k in fixtures.FIXTURE_KINDS}
    code = ("import hashlib, json; from kgrag_utils.datasets import fixtures; print(json.dumps({k: {r: "
            "hashlib.sha256(b).hexdigest() for r, b in fixtures.generate_fixture(k).items()} "
            "for k in fixtures.FIXTURE_KINDS}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "123"})
    assert json.loads(out.stdout) == digests


def test_ensure_fixture_writes_once_and_repairs(tmp_path, monkeypatch):
    monkeypatch.setenv("KGRAG_SAMPLE_DIR", str(tmp_path / "sample"))
    root = fixtures.ensure_fixture("iirc")
    target = root / "IIRC" / "dev.json"
    assert target.is_file() and fixtures.fixture_is_current("iirc", root)
    mtime = target.stat().st_mtime_ns
    fixtures.ensure_fixture("iirc")
    assert target.stat().st_mtime_ns == mtime  # current: not rewritten
    target.write_text("[]", encoding="utf-8")
    assert not fixtures.fixture_is_current("iirc", root)
    fixtures.ensure_fixture("iirc")
    assert target.read_bytes() == fixtures.generate_fixture("iirc")["IIRC/dev.json"]
    with pytest.raises(ConfigError):
        fixtures.ensure_fixture("webquestions")


def test_fixture_files_load_as_real_datasets(data_root):
    for kind in fixtures.FIXTURE_KINDS:
        _write_fixture(kind, data_root)
    for name in NEW_REAL:
        real = load_dataset(name, split="test")
        fixture = load_dataset(f"fixture-{name}", split="test")
        assert real.source == "real" and fixture.source == "fixture"
        assert [q.question for q in real] == [q.question for q in fixture] and len(real) > 0


# ----------------------------------------------------------------------------- registry, list, download


def test_registry_rows_and_missing_errors(data_root):
    rows = {r["name"]: r for r in list_datasets()}
    for name in NEW_REAL:
        assert rows[name]["source"] == "real" and rows[name]["present"] is False
        assert rows[name]["how"] == f"kgrag data fetch {name}"
        assert rows[f"fixture-{name}"]["how"] == "generated on first use (kgrag_utils.datasets.fixtures)"
        with pytest.raises(DatasetMissingError) as info:
            load_dataset(name, split="test")
        msg = str(info.value)
        assert "\n" not in msg and f"kgrag data fetch {name}" in msg and str(data_root) in msg
    assert rows["webqsp"]["splits"] == ["train", "validation", "test"]


def test_status_and_cli_list_show_the_new_datasets_and_their_sources(data_root, capsys):
    rows = {r["name"]: r for r in download.status()}
    pages = {"factkg": "drive.google.com", "webqsp": "huggingface.co/datasets/rmanluo/RoG-webqsp",
             "cwq": "huggingface.co/datasets/rmanluo/RoG-cwq", "iirc": "allenai.org/data/iirc"}
    for name, page in pages.items():
        assert rows[name]["group"] == name and page in rows[name]["source_page"] and rows[name]["license"]
    assert not any(n.startswith("fixture-") for n in rows)
    assert cli.main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for name in NEW_REAL:
        assert any(line.split()[0] == name and f"kgrag data fetch {name}" in line for line in out.splitlines())
    assert download.group_of("cwq") == "cwq"
    with pytest.raises(ConfigError):
        download.group_of("fixture-cwq")


def test_fetch_offline_fails_fast_with_one_line(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network unreachable")

    monkeypatch.setattr(download.socket, "create_connection", refuse)
    for name, page in (("iirc", "allenai.org"), ("webqsp", "huggingface.co")):
        with pytest.raises(BackendUnavailableError) as info:
            download.fetch(name, dest=tmp_path / "data", log=lambda s: None)
        assert "\n" not in str(info.value) and page in str(info.value)


def test_fetch_iirc_from_a_mirror_lays_out_what_the_loader_reads(tmp_path, monkeypatch):
    files = fixtures.generate_fixture("iirc")
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for archive, members in (("iirc_train_dev.tgz", ("train.json", "dev.json")),
                             ("context_articles.tar.gz", ("context_articles.json",))):
        with tarfile.open(mirror / archive, "w:gz") as tf:
            for m in members:
                data = files[f"IIRC/{m}"]
                info = tarfile.TarInfo(f"{archive.split('.')[0]}/{m}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    (mirror / "iirc_test.json").write_bytes(files["IIRC/iirc_test.json"])
    monkeypatch.setattr(download, "IIRC_BASE", mirror.as_uri())
    group = download.GROUPS["iirc"]
    monkeypatch.setitem(download.GROUPS, "iirc", download.Group(
        group.folder, (download.RemoteFile((mirror / "iirc_test.json").as_uri(), "iirc_test.json"),),
        group.page, group.license, special="iirc"))
    dest = tmp_path / "data"
    download.fetch("iirc", dest=dest, log=lambda s: None)
    assert sorted(p.name for p in (dest / "IIRC").iterdir()) == ["context_articles.json", "dev.json",
                                                                 "iirc_test.json", "train.json"]
    monkeypatch.setenv("KGRAG_DATA_DIR", str(dest))
    assert [q.qid for q in load_dataset("iirc", split="dev")] == ["q-dev-0", "q-dev-1"]


def test_fetch_hub_dataset_through_the_hub_client(tmp_path, monkeypatch):
    import huggingface_hub

    calls = []

    def fake_snapshot(repo_id, repo_type, revision, local_dir, allow_patterns):
        calls.append((repo_id, repo_type, revision, tuple(allow_patterns)))
        for rel, data in fixtures.generate_fixture("cwq").items():
            path = Path(local_dir) / rel.split("/", 1)[1]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return local_dir

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    monkeypatch.setattr(download, "_check_reachable", lambda *a, **k: None)
    dest = tmp_path / "data"
    download.fetch("cwq", dest=dest, log=lambda s: None)
    assert calls == [("rmanluo/RoG-cwq", "dataset", download.HF_DATASETS["cwq"][1], ("data/*.parquet", "README.md"))]
    download.fetch("cwq", dest=dest, log=lambda s: None)
    assert len(calls) == 1  # all three splits present: nothing fetched again
    monkeypatch.setenv("KGRAG_DATA_DIR", str(dest))
    assert len(load_dataset("cwq", split="train")) == 3


def test_factkg_claims_written_from_defaultdicts_load(tmp_path):
    import collections
    import pickle

    from kgrag_utils.datasets import factkg

    claims = collections.defaultdict(dict)
    claims["Alice was born in Paris."] = {"Label": [True], "Entity_set": ["Alice", "Paris"], "Evidence": {},
                                          "types": ["num1", "written"]}
    path = tmp_path / "factkg_test.pickle"
    path.write_bytes(pickle.dumps(claims))
    assert dict(factkg.read_claims(path)) == dict(claims)
