"""SimGRAG on FactKG: the type-candidate rule (vs brute force), verdict parsing, verification prompts,
and the verification pipeline on the FactKG fixture with fake LLMs."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from kgrag_utils.datasets import load_dataset
from kgrag_utils.datasets.registry import dataset_traits, get_spec
from kgrag_utils.errors import ConfigError
from kgrag_utils.kg import KG
from kgrag_utils.llm import load_llm
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDRetriever
from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig, summarize
from kgrag_utils.methods.simgrag.stages.replay import replay_gold_llm
from kgrag_utils.methods.simgrag.stages.generate import parse_verdict
from kgrag_utils.methods.simgrag.prompts import build_verify_prompt
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDConfig, search_topk
from kgrag_utils.methods.simgrag.stages.pattern import Pattern, pattern_family, validate_pattern
from kgrag_utils.methods.simgrag.prompts import build_pattern_prompt
from kgrag_utils.methods.simgrag.config import resolve_task
from kgrag_utils.methods.simgrag.stages.type_candidates import TypeIndex, type_text
from test_simgrag_gsd import brute_force, random_kg
from stand_ins import benchmark_module


class HashEmbedder:
    """Deterministic unit vectors per text (a stand-in for a sentence embedder)."""

    def __init__(self, dim: int = 16):
        self.dim = dim

    def encode(self, texts, progress=None):
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(str(t).encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).normal(size=self.dim)
            out[i] = v / np.linalg.norm(v)
        return out


TYPE_NAMES = ["city", "country", "person", "team", "film", "river"]


def typed_world(seed: int):
    """A random KG whose entities carry 1-2 of TYPE_NAMES, a retriever with the type rule, and the mapping."""
    rng = np.random.default_rng(seed)
    n_ent = int(rng.integers(6, 9))
    kg = random_kg(rng, n_ent, int(rng.integers(1, 4)), int(rng.integers(n_ent, 3 * n_ent)))
    mapping = {name: [] for name in TYPE_NAMES}
    for e in range(n_ent):
        for name in rng.choice(TYPE_NAMES, size=int(rng.integers(1, 3)), replace=False):
            mapping[str(name)].append(e)
    mapping = {k: v for k, v in mapping.items() if v}
    emb = HashEmbedder()
    ent = emb.encode([str(n) for n in kg.entity_names])
    rel = emb.encode([str(n) for n in kg.relation_names])
    types = TypeIndex.from_mapping(mapping, encode=emb.encode)
    retriever = GSDRetriever(kg, ent, rel, encode=emb.encode, index_kind="flat", type_index=types)
    return kg, retriever, mapping, emb


UNANCHORED = {  # (head, tail) pairs over typed UNKNOWN nodes; "anchor" marks a known node
    "edge": [(0, 1)],
    "path": [(0, 1), (1, 2)],
    "star": [(0, 1), (0, 2), (0, 3)],
    "triangle": [(0, 1), (1, 2), (2, 0)],
    "mixed": [(0, 1), (2, 3)],  # first component anchored by node 0 (known), second all UNKNOWN
}


def typed_pattern(rng, shape: str, kg) -> Pattern:
    pairs = UNANCHORED[shape]
    n = 1 + max(max(p) for p in pairs)
    types = rng.choice(TYPE_NAMES, size=n)
    known = str(kg.entity_names[int(rng.integers(kg.num_entities))])

    def label(v: int) -> str:
        return known if shape == "mixed" and v == 0 else f"UNKNOWN {types[v]} {v + 1}"

    return Pattern.from_triples([(label(a), f"rel {j}", label(b)) for j, (a, b) in enumerate(pairs)])


def nearest_type_entities(mapping: dict, emb: HashEmbedder, type_name: str, k: int) -> set[int]:
    """Independent of TypeIndex: the entities of the k types whose name vectors are nearest."""
    names = list(mapping)
    vecs = emb.encode([type_text(n) for n in names]).astype(np.float64)
    q = emb.encode([type_text(type_name)])[0].astype(np.float64)
    d = np.linalg.norm(vecs - q, axis=1)
    order = sorted(range(len(names)), key=lambda i: (d[i], i))[:k]
    return {e for i in order for e in mapping[names[i]]}


CONFIGS = [GSDConfig(top_k=3, time_limit_s=None, type_topk=1), GSDConfig(top_k=2, time_limit_s=None, type_topk=2),
           GSDConfig(top_k=4, injective=False, time_limit_s=None, type_topk=3),
           GSDConfig(top_k=3, direction="same", time_limit_s=None, type_topk=2)]


@pytest.mark.parametrize("shape", sorted(UNANCHORED))
def test_type_candidate_rule_equals_brute_force(shape):
    """Candidates of typed UNKNOWN nodes in unanchored components are the entities of the nearest types,
    and the pruned search over them returns exactly the top-k GSD values of exhaustive enumeration."""
    rng = np.random.default_rng(100 + sorted(UNANCHORED).index(shape))
    restricted = 0
    for trial in range(10):
        kg, retriever, mapping, emb = typed_world(1000 * trial + len(shape))
        pattern = typed_pattern(rng, shape, kg)
        check = validate_pattern(pattern, typed_unknowns=True)
        assert check.ok, check.errors
        pattern = check.pattern
        for config in CONFIGS:
            cand = retriever.candidates(pattern, config)
            comps = pattern.components()
            unanchored = {v for nodes, _ in comps if not any(pattern.nodes[u].known for u in nodes) for v in nodes}
            assert set(cand.typed) == unanchored
            for v in range(len(pattern.nodes)):
                if v in unanchored:
                    want = nearest_type_entities(mapping, emb, pattern.nodes[v].type, config.type_topk)
                    assert set(cand.node_ids[v].tolist()) == want
                    assert np.all(cand.node_dist[v] == 0)
                    restricted += len(want) < kg.num_entities
                elif not pattern.nodes[v].known:
                    assert cand.node_ids[v] is None  # anchored components keep unrestricted UNKNOWN nodes
            result = search_topk(retriever.incidence, pattern, cand, config)
            # brute force: the typed nodes as candidate-restricted nodes of cost 0 (same GSD by definition)
            view = Pattern([type(n)(n.label, n.known or v in unanchored, n.type) for v, n in enumerate(pattern.nodes)],
                           pattern.edges)
            expected = brute_force(kg, view, cand, config)
            got = [[sg.gsd for sg in comp] for comp in result.components]
            assert len(got) == len(expected)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=0, atol=1e-9)
            for comp in result.components:
                for sg in comp:
                    for v, x in sg.nodes.items():
                        if v in unanchored:
                            assert x in set(cand.node_ids[v].tolist())
    assert restricted > 0  # the rule did restrict somewhere (not every type set is the whole KG)


def test_the_rule_changes_the_result_and_is_off_for_anchored_patterns():
    """Brute force over ALL entities finds a cheaper match that the rule excludes; a pattern with a known
    node gets the same candidates with or without entity types (MetaQA behaviour unchanged)."""
    # e0 -r0-> e1 (e1 a person), e2 -r0-> e3 (e3 a city); the pattern asks for a city
    kg = KG.from_ids(np.array([0, 2]), np.array([0, 0]), np.array([1, 3]), ["e0", "e1", "e2", "e3"], ["r0"])
    emb = HashEmbedder()
    types = TypeIndex.from_mapping({"person": [1], "city": [3], "river": [0, 2]}, encode=emb.encode)
    with_types = GSDRetriever(kg, emb.encode(["e0", "e1", "e2", "e3"]), emb.encode(["r0"]), encode=emb.encode,
                              index_kind="flat", type_index=types)
    pattern = validate_pattern(Pattern.from_triples([("UNKNOWN river 1", "r0", "UNKNOWN city 2")]),
                               typed_unknowns=True).pattern
    config = GSDConfig(top_k=5, time_limit_s=None, type_topk=1)
    result, cand = with_types.retrieve(pattern, config)
    assert [sg.triples(kg) for sg in result.subgraphs] == [[("e2", "r0", "e3")]]
    assert cand.typed == {0: ["river"], 1: ["city"]}
    anchored = Pattern.from_triples([("e0", "r0", "UNKNOWN person 1")])
    without = GSDRetriever(kg, with_types.entity_vectors, with_types.relation_vectors, encode=emb.encode,
                           index_kind="flat")
    a, b = with_types.candidates(anchored, config), without.candidates(anchored, config)
    assert not a.typed and a.node_ids[1] is None
    assert [x.tolist() if x is not None else None for x in a.node_ids] == \
           [x.tolist() if x is not None else None for x in b.node_ids]
    with pytest.raises(ConfigError, match="no type candidates"):
        without.retrieve(pattern, config)


def test_validation_keeps_unanchored_components_only_with_types():
    all_unknown = Pattern.from_triples([("UNKNOWN astronaut 1", "birth place", "UNKNOWN city 2")])
    assert not validate_pattern(all_unknown).ok
    check = validate_pattern(all_unknown, typed_unknowns=True)
    assert check.ok and "type candidates" in check.warnings[0]
    untyped = Pattern.from_triples([("UNKNOWN 1", "birth place", "UNKNOWN 2")])
    assert not validate_pattern(untyped, typed_unknowns=True).ok
    mixed = Pattern.from_triples([("Alan Shepard", "mission", "UNKNOWN mission 1"), ("UNKNOWN 2", "r", "UNKNOWN 3")])
    check = validate_pattern(mixed, typed_unknowns=True)
    assert check.ok and check.pattern.triples() == [("Alan Shepard", "mission", "UNKNOWN mission 1")]


def test_type_index_helpers():
    assert type_text("SoccerClub") == "Soccer Club" and type_text("NCAATeamSeason") == "NCAA Team Season"
    idx = TypeIndex.from_mapping({"a": [3, 1], "b": [1, 2], "c": []}, vectors=np.eye(3))
    assert idx.entities_of([0, 1]).tolist() == [1, 2, 3] and idx.entities_of([2]).tolist() == []
    assert [t.tolist() for t in idx.nearest_types(np.array([[0.9, 0.1, 0.0]]), 2)] == [[0, 1]]
    with pytest.raises(ConfigError):
        TypeIndex.from_mapping({"a": [1]})


# ----------------------------------------------------------------------------- verdicts and prompts


@pytest.mark.parametrize("text,want", [
    ("Graph [1] says so.\nAnswer: True", "True"),
    ("As graph [1] says that X is the manager but not the leader, the answer is False", "False"),
    ("**Answer:** false", "False"),
    ("the answer is 'True'.", "True"),
    ("False. The graphs are about another album.", "False"),
    ("Yes", "True"),
    ("Verdict: not supported", "False"),
    ("That is not true.", "False"),
    ("Answer: True\nAnswer: False", "False"),  # the last stated verdict wins
    ("It is true that X, but false that Y", None),
    ("no idea", None),
    ("I cannot tell from these graphs", None),
    ("", None),
    (None, None),
])
def test_parse_verdict(text, want):
    assert parse_verdict(text) == want


def test_verify_prompt_and_claims_family():
    chat = build_verify_prompt("Alan Shepard was born in New Hampshire.", ["graph [1]: (a, b, c)"], shots=2)
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert chat[-1]["content"].endswith("Claim: Alan Shepard was born in New Hampshire.")
    assert all(parse_verdict(m["content"]) in ("True", "False") for m in chat if m["role"] == "assistant")
    assert "(no matching subgraph was found)" in build_verify_prompt("x", [], shots=0)[-1]["content"]
    with pytest.raises(ConfigError):
        build_verify_prompt("x", [], shots=99)
    traits, fixture = get_spec("factkg").traits, get_spec("fixture-factkg").traits
    assert fixture == traits and pattern_family(traits.shot_family) == "claims"  # the fixture takes its twin's traits
    chat = build_pattern_prompt("Elliot See studied at UT Austin.", 4, "claims")
    assert "claim" in chat[0]["content"] and len(chat) == 10
    assert any("UNKNOWN" in m["content"] and "Triples" in m["content"] for m in chat if m["role"] == "assistant")
    assert resolve_task("auto", fixture) == "verify" and resolve_task("auto", get_spec("metaqa-1hop").traits) == "qa"
    assert resolve_task("qa", fixture) == "qa" and resolve_task("auto", dataset_traits("my-own-kg")) == "qa"
    with pytest.raises(ConfigError):
        SimGRAGConfig(task="classify")


# ----------------------------------------------------------------------------- the pipeline on the fixture


@pytest.fixture(scope="module")
def fixture_factkg():
    data = load_dataset("fixture-factkg", split="test")
    retriever = GSDRetriever.from_embedder(data.kg, HashEmbedder(32), entity_types=data.info["entity_types"])
    return data, retriever


def test_fixture_claims_are_verified_and_scored_by_accuracy(fixture_factkg):
    data, retriever = fixture_factkg
    method = SimGRAG(SimGRAGConfig(relation_topk=64), data.kg, retriever, replay_gold_llm(data.items), dataset=data.name)
    assert method.task == "verify" and method.family == "claims"
    records = method.run(data.items, progress=False)
    assert len(records) == len(data.items) == 4
    for r, q in zip(records, data.items):
        assert r["task"] == "verify" and r["pattern_ok"] and r["evidence"]
        assert r["prediction"] in ("True", "False")
        assert r["hits@1"] == float(r["prediction"] == q.answers[0])
        last = r["answer_prompt"][-1]["content"] + r["pattern_prompt"][-1]["content"]
        assert "True" not in last and "False" not in last  # the label never reaches the model
    summary = summarize(records)
    assert summary["task"] == "verify"
    assert summary["accuracy"] == pytest.approx(np.mean([r["prediction"] == q.answers[0]
                                                         for r, q in zip(records, data.items)]))
    assert sum(summary["verdicts"].values()) == 4
    assert sum(v["n"] for v in summary["by_qtype"].values()) == 4


def _claim_fake(pattern_for, verdict_for):
    def respond(text):
        if "\nClaim:" in text:
            claim = text.rsplit("Claim:", 1)[-1].strip()
            return verdict_for(claim, text.rsplit("Evidence:", 1)[-1])
        return pattern_for(text.rsplit("Question:", 1)[-1].strip())

    return load_llm("fake", responses=respond, cache=False)


def test_failures_type_candidates_and_verdict_parsing_in_one_batch(fixture_factkg):
    data, retriever = fixture_factkg
    q_unparsable, q_typed, q_wordy, q_no_verdict = data.items
    patterns = {
        q_unparsable.question: "I am not sure what to write.",
        q_typed.question: "Phrases: x\nTriples:\n(UNKNOWN astronaut 1, birth place, UNKNOWN city 2)",
        q_wordy.question: "Phrases: x\nTriples:\n(Adam McQuaid, team, UNKNOWN team 1)",
        q_no_verdict.question: "Phrases: x\nTriples:\n(Alan Shepard, birth date, UNKNOWN date 1)",
    }
    verdicts = {q_typed.question: "Graph [1] shows it.\nAnswer: False", q_wordy.question: "the answer is true",
                q_no_verdict.question: "I cannot tell."}
    seen = []

    def verdict_for(claim, evidence):
        seen.append(claim)
        return verdicts[claim]

    llm = _claim_fake(patterns.__getitem__, verdict_for)
    method = SimGRAG(SimGRAGConfig(), data.kg, retriever, llm, dataset=data.name)
    by_q = {r["question"]: r for r in method.run(data.items, progress=False)}
    r = by_q[q_unparsable.question]
    assert not r["pattern_ok"] and r["failed"] and r["failure"] == "pattern" and r["hits@1"] == 0.0
    assert r["failed_stage"] == "pattern" and q_unparsable.question not in seen  # never sent to verification
    r = by_q[q_typed.question]  # no known node: the UNKNOWN nodes got candidates from the entity types
    assert r["pattern_ok"] and set(r["candidates"]["typed"]) == {"UNKNOWN astronaut 1", "UNKNOWN city 2"}
    assert r["subgraphs"] and r["prediction"] == "False" and r["hits@1"] == float(q_typed.answers[0] == "False")
    r = by_q[q_wordy.question]
    assert r["prediction"] == "True" and r["hits@1"] == float(q_wordy.answers[0] == "True") and not r["failed"]
    assert r["retrieval_hit"] is False  # the evidence does not reach United_States (a 1-edge pattern)
    r = by_q[q_no_verdict.question]
    assert r["answers"] == [] and r["failed"] and r["failure"] == "generation" and r["hits@1"] == 0.0
    summary = summarize(list(by_q.values()))
    assert summary["all"]["n_failed"] == 2 and summary["verdicts"]["none"] == 2


# ----------------------------------------------------------------------------- the scale path


def test_auto_index_is_ivf_at_dbpedia_scale_and_cached(monkeypatch):
    from kgrag_utils.methods.simgrag.stages import gsd_search
    from kgrag_utils.methods.simgrag.stages.gsd_search import auto_index_options, resolve_index_kind

    big = gsd_search.AUTO_IVF_MIN_ENTITIES
    assert resolve_index_kind("auto", big - 1) == "hnsw" and resolve_index_kind("auto", big) == "ivf"
    assert auto_index_options("ivf", 1_000_000, {}) == {"nlist": 2000, "nprobe": gsd_search.AUTO_IVF_NPROBE}
    assert auto_index_options("ivf", 1_000_000, {"nprobe": 8})["nprobe"] == 8
    assert auto_index_options("hnsw", 1_000_000, {}) == {}
    rng = np.random.default_rng(11)
    kg = random_kg(rng, 300, 2, 600)
    ent = HashEmbedder(16).encode([f"n{i}" for i in range(300)])
    rel = HashEmbedder(16).encode(["a", "b"])
    monkeypatch.setattr(gsd_search, "AUTO_IVF_MIN_ENTITIES", 200)
    first, second = GSDRetriever(kg, ent, rel), GSDRetriever(kg, ent, rel)
    assert (first.index_kind, first.index_from_cache, second.index_from_cache) == ("ivf", False, True)
    assert first.index_options == {"nlist": 1024, "nprobe": gsd_search.AUTO_IVF_NPROBE}
    np.testing.assert_array_equal(first.index.search(ent[:20], 4)[1], second.index.search(ent[:20], 4)[1])
    assert (second.index.search(ent[:20], 1)[1][:, 0] == np.arange(20)).all()


def test_node_search_benchmark_runs_small_and_exact_settings_find_every_source(tmp_path):
    """benchmarks/simgrag_node_search.py on a tiny KG: flat, and IVF probing every list, are exact."""
    import json

    bench = benchmark_module("simgrag_node_search")
    out = tmp_path / "node_search.json"
    assert bench.main(["--edges", "3000", "--queries", "20", "--dim", "16", "--indexes", "flat,ivf", "--nlist", "8",
                       "--nprobe", "8", "--k", "4", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["kg"]["entities"] == 300 and result["vectors"]["n"] == 300
    flat, ivf = result["indexes"]["flat"], result["indexes"]["ivf"]
    assert flat["source_entity_found"] == 1.0 and flat["recall_at_4_vs_exact"] == 1.0
    assert ivf["source_entity_found"] == 1.0 and ivf["nprobe_sweep"]["8"]["recall_at_4_vs_exact"] == 1.0
    assert set(ivf["nprobe_sweep"]) == {"4", "8", "16", "32"} and ivf["single_query_ms"]["n"] == 20
