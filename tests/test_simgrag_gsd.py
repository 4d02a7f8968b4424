"""The pruned GSD search returns exactly the top-k GSD values of exhaustive enumeration.

Random small KGs (multi-relational, facts in both directions, parallel facts) with random unit
embeddings; random path, tree and cyclic patterns with random edge directions and a random mix of
known and UNKNOWN nodes; every search option (injective or not, either or same direction, distinct
fact sets or every mapping). The brute force below shares no code with the search.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kgrag_utils.kg import KG
from kgrag_utils.methods.simgrag.stages import gsd_enumerate, gsd_search
from kgrag_utils.methods.simgrag.stages.generate import evidence_lines
from kgrag_utils.methods.simgrag.stages.gsd_search import Candidates, GSDConfig, GSDRetriever, Incidence, search_topk
from kgrag_utils.methods.simgrag.stages.pattern import Pattern, PatternEdge, PatternNode


def unit(rng, n, d):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def random_kg(rng, n_ent, n_rel, n_facts, self_loops=False):
    facts = set()
    while len(facts) < n_facts:
        h, t = int(rng.integers(n_ent)), int(rng.integers(n_ent))
        if h == t and not self_loops:
            continue
        facts.add((h, int(rng.integers(n_rel)), t))
    h, r, t = (np.array(c) for c in zip(*sorted(facts)))
    return KG.from_ids(h, r, t, [f"e{i}" for i in range(n_ent)], [f"r{i}" for i in range(n_rel)])


SHAPES = {
    "path2": [(0, 1)],
    "path3": [(0, 1), (1, 2)],
    "path4": [(0, 1), (1, 2), (2, 3)],
    "star": [(0, 1), (0, 2), (0, 3)],
    "tree": [(0, 1), (1, 2), (1, 3)],
    "triangle": [(0, 1), (1, 2), (2, 0)],
    "square": [(0, 1), (1, 2), (2, 3), (3, 0)],
    "chorded_square": [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)],
    "parallel": [(0, 1), (0, 1), (1, 2)],
    "two_components": [(0, 1), (2, 3), (3, 4)],
}


def random_pattern(rng, shape):
    pairs = SHAPES[shape]
    n = 1 + max(max(p) for p in pairs)
    known = rng.random(n) < 0.5
    pattern = Pattern([], [])
    pattern.nodes = [PatternNode(f"v{i}", bool(k)) for i, k in enumerate(known)]
    for a, b in pairs:
        if rng.random() < 0.5:
            a, b = b, a
        pattern.edges.append(PatternEdge(a, f"p{len(pattern.edges)}", b))
    for nodes, _ in pattern.components():  # every component needs a known node
        if not any(pattern.nodes[v].known for v in nodes):
            pattern.nodes[int(rng.choice(nodes))].known = True
    return pattern


def random_candidates(rng, kg, pattern, ent_vecs, rel_vecs, d):
    node_vecs = unit(rng, len(pattern.nodes), d)
    # pull some pattern vectors towards KG entities so that distances vary a lot
    for v in range(len(pattern.nodes)):
        if rng.random() < 0.5:
            node_vecs[v] = ent_vecs[rng.integers(kg.num_entities)] + 0.3 * rng.normal(size=d)
            node_vecs[v] /= np.linalg.norm(node_vecs[v])
    edge_vecs = unit(rng, len(pattern.edges), d)
    node_full = {v: np.linalg.norm(ent_vecs - node_vecs[v], axis=1) for v in pattern.known_nodes}
    rel_full = np.linalg.norm(edge_vecs[:, None, :] - rel_vecs[None, :, :], axis=2)
    n = int(rng.integers(1, kg.num_entities + 1))
    m = int(rng.integers(1, kg.num_relations + 1))
    return Candidates.from_distances(pattern, node_full, rel_full, n, m)


def brute_force(kg, pattern, cand, config, with_reversed=False):
    """All mappings of each component, by itertools.product: top k of (cost, tie) by fact set.

    Returns the costs per component, or with `with_reversed` the (cost, tie) pairs sorted
    lexicographically, tie = (2 edges + 1) x (edges matched against their direction) + repeated
    entities + repeated facts (the search's tie-break)."""
    out = []
    cand_cost = {v: dict(zip(cand.node_ids[v].tolist(), cand.node_dist[v].tolist())) for v in pattern.known_nodes}
    facts = list(zip(kg.heads.tolist(), kg.rels.tolist(), kg.tails.tolist()))
    for nodes, edges in pattern.components():
        domains = [list(cand_cost[v]) if v in cand_cost else list(range(kg.num_entities)) for v in nodes]
        best: dict = {}
        mappings = []
        for combo in itertools.product(*domains):
            if config.injective and len(set(combo)) < len(combo):
                continue
            f = dict(zip(nodes, combo))
            node_cost = sum(cand_cost[v][f[v]] for v in nodes if v in cand_cost)
            options = []
            for j in edges:
                e = pattern.edges[j]
                a, b = f[e.head], f[e.tail]
                opts = []
                for fid, (h, r, t) in enumerate(facts):
                    if not np.isfinite(cand.rel_dist[j, r]):
                        continue
                    if (h, t) == (a, b):
                        opts.append((fid, cand.rel_dist[j, r], 0))
                    elif config.direction == "any" and (h, t) == (b, a):
                        opts.append((fid, cand.rel_dist[j, r], 1))
                options.append(opts)
            for choice in itertools.product(*options):
                ids = [c[0] for c in choice]
                if config.injective and len(set(ids)) < len(ids):
                    continue
                repeats = len(combo) - len(set(combo)) + len(ids) - len(set(ids))
                tie = (2 * len(edges) + 1) * sum(c[2] for c in choice) + repeats
                key_value = (node_cost + sum(c[1] for c in choice), tie)
                if config.distinct:
                    key = frozenset(ids)
                    best[key] = min(best.get(key, (np.inf, 0)), key_value)
                else:
                    mappings.append(key_value)
        values = sorted(best.values()) if config.distinct else sorted(mappings)
        values = values[: config.top_k]
        out.append(values if with_reversed else [c for c, _ in values])
    return out


CONFIGS = [
    GSDConfig(top_k=3, injective=True, time_limit_s=None),
    GSDConfig(top_k=1, injective=True, time_limit_s=None),
    GSDConfig(top_k=5, time_limit_s=None),  # the default: non-injective (walks allowed)
    GSDConfig(top_k=4, injective=True, direction="same", time_limit_s=None),
    GSDConfig(top_k=4, direction="same", time_limit_s=None),
    GSDConfig(top_k=6, injective=True, distinct=False, time_limit_s=None),
    GSDConfig(top_k=6, distinct=False, time_limit_s=None),
]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_pruned_search_equals_brute_force(shape):
    rng = np.random.default_rng(sorted(SHAPES).index(shape))
    checked = 0
    for trial in range(16):
        n_ent = int(rng.integers(4, 8))
        n_rel = int(rng.integers(1, 4))
        n_facts = int(rng.integers(n_ent, min(3 * n_ent, n_ent * (n_ent - 1) * n_rel)))
        kg = random_kg(rng, n_ent, n_rel, n_facts, self_loops=trial % 4 == 3)
        d = 4
        ent_vecs, rel_vecs = unit(rng, n_ent, d), unit(rng, n_rel, d)
        pattern = random_pattern(rng, shape)
        cand = random_candidates(rng, kg, pattern, ent_vecs, rel_vecs, d)
        incidence = Incidence(kg)
        for config in CONFIGS:
            result = search_topk(incidence, pattern, cand, config)
            assert not result.timed_out
            expected = brute_force(kg, pattern, cand, config)
            got = [[sg.gsd for sg in comp] for comp in result.components]
            assert len(got) == len(expected)
            for g, e in zip(got, expected):
                assert len(g) == len(e), (shape, trial, config, g, e)
                np.testing.assert_allclose(g, e, rtol=0, atol=1e-9)
            for comp in result.components:
                for sg in comp:  # each result's GSD is the sum of its terms, and its facts exist
                    assert sg.gsd == pytest.approx(sum(sg.node_terms.values()) + sum(sg.edge_terms.values()))
                    assert sg.injective == (len(set(sg.nodes.values())) == len(sg.nodes))
                    if config.injective:
                        assert sg.injective
                    for j, fid in sg.edges.items():
                        e = pattern.edges[j]
                        h, t = int(kg.heads[fid]), int(kg.tails[fid])
                        a, b = sg.nodes[e.head], sg.nodes[e.tail]
                        assert (h, t) == ((b, a) if sg.reversed[j] else (a, b))
                        if config.direction == "same":
                            assert not sg.reversed[j]
            checked += 1
    assert checked == 16 * len(CONFIGS)


def test_cyclic_pattern_where_charging_node_terms_on_back_edges_would_prune_the_optimum():
    """Two triangles through e0: the search meets the worse one (GSD 2.6) first. On the way to the
    optimum (GSD 2.2) a bound that also charged the back edge's node term would read
    1.0 + 0.5 + 0.1 + 1.0 = 2.6 >= 2.6 and prune it; the admissible bound reads 1.6 and goes on."""
    kg = KG.from_ids(np.array([0, 1, 2, 0, 3, 5]), np.zeros(6, dtype=int), np.array([1, 2, 0, 3, 5, 0]),
                     [f"e{i}" for i in range(6)], ["r0"])
    pattern = Pattern([PatternNode("a", True), PatternNode("b", True), PatternNode("c", True)],
                      [PatternEdge(0, "p", 1), PatternEdge(1, "p", 2), PatternEdge(2, "p", 0)])
    node_full = {0: np.array([1.0, 9, 9, 9, 9, 9]), 1: np.array([9, 0.5, 9, 0.1, 9, 9]),
                 2: np.array([9, 9, 0.7, 9, 0.1, 1.5])}
    cand = Candidates.from_distances(pattern, node_full, np.zeros((3, 1)), 6, 1)
    result = search_topk(Incidence(kg), pattern, cand, GSDConfig(top_k=1, time_limit_s=None))
    assert result.best is not None and result.best.gsd == pytest.approx(2.2)
    assert result.best.nodes == {0: 0, 1: 1, 2: 2}
    assert brute_force(kg, pattern, cand, GSDConfig(top_k=2, time_limit_s=None)) == [[pytest.approx(2.2), pytest.approx(2.6)]]


def test_incidence_binary_search_path_equals_dense_scan(monkeypatch):
    rng = np.random.default_rng(3)
    kg = random_kg(rng, 12, 5, 90)
    inc = Incidence(kg)
    for mask_bits in range(1, 2**5):
        mask = np.array([(mask_bits >> r) & 1 for r in range(5)], dtype=bool)
        allowed = np.flatnonzero(mask)
        for x in range(12):
            monkeypatch.setattr(gsd_enumerate, "_DENSE_SCAN", 10**9)
            dense = sorted(inc.around(x, mask, allowed).tolist())
            monkeypatch.setattr(gsd_enumerate, "_DENSE_SCAN", 0)
            sparse = sorted(inc.around(x, mask, allowed).tolist())
            assert dense == sparse
            # and they are exactly the facts touching x with an allowed relation
            want = sorted(set(np.flatnonzero(((kg.heads == x) | (kg.tails == x)) & mask[kg.rels]).tolist()))
            assert sorted(inc.eid[dense].tolist()) == want


def test_evidence_is_printed_in_kg_direction_and_reversal_flagged():
    kg = KG.from_triples([("Film A", "directed_by", "Ann Lee"), ("Film A", "release_year", "1999")])
    pattern = Pattern.from_triples([("Ann Lee", "directed", "UNKNOWN movie 1"),
                                    ("UNKNOWN movie 1", "release year", "UNKNOWN year 2")], answer="UNKNOWN year 2")
    ent = unit(np.random.default_rng(0), kg.num_entities, 8)
    rel = unit(np.random.default_rng(1), kg.num_relations, 8)
    retriever = GSDRetriever(kg, ent, rel)
    node_vecs = ent[[kg.entity_id("Ann Lee")]]
    edge_vecs = rel[[kg.relation_id("directed_by"), kg.relation_id("release_year")]]
    cand = retriever.candidates(pattern, GSDConfig(), node_vecs, edge_vecs)
    res = retriever.search(pattern, GSDConfig(direction="any"), cand)
    best = res.best
    assert best.gsd == pytest.approx(0.0, abs=1e-6)
    assert best.triples(kg) == [("Film A", "directed_by", "Ann Lee"), ("Film A", "release_year", "1999")]
    assert best.reversed == {0: True, 1: False}
    assert kg.entity_names[best.nodes[pattern.answer]] == "1999"
    assert evidence_lines(kg, [best]) == ["graph [1]: (Film A, directed_by, Ann Lee), (Film A, release_year, 1999)"]
    # the same pattern with direction="same" cannot match the reversed first edge
    assert retriever.search(pattern, GSDConfig(direction="same"), cand).best is None


def test_disconnected_pattern_is_searched_per_component():
    kg = KG.from_triples([("a", "r", "b"), ("c", "s", "d")])
    pattern = Pattern.from_triples([("a", "r", "UNKNOWN x 1"), ("c", "s", "UNKNOWN y 2")])
    ent = np.eye(4, dtype=np.float32)
    rel = np.eye(2, 4, dtype=np.float32)
    retriever = GSDRetriever(kg, ent, rel)
    cand = retriever.candidates(pattern, GSDConfig(), ent[kg.entity_ids(["a", "c"])], rel)
    res = retriever.search(pattern, GSDConfig(), cand)
    assert len(res.components) == 2
    assert [sg.triples(kg) for sg in res.subgraphs[:2]] == [[("a", "r", "b")], [("c", "s", "d")]]


def test_time_limit_stops_inside_the_loop():
    rng = np.random.default_rng(5)
    kg = random_kg(rng, 40, 2, 600)
    pattern = Pattern.from_triples([("e0", "p", "UNKNOWN a 1"), ("UNKNOWN a 1", "p", "UNKNOWN b 2"),
                                    ("UNKNOWN b 2", "p", "UNKNOWN c 3")])
    ent_vecs = unit(rng, 40, 4)
    cand = Candidates.from_distances(pattern, {0: np.linalg.norm(ent_vecs - ent_vecs[0], axis=1)},
                                     rng.random((3, 2)), 40, 2)
    full = search_topk(Incidence(kg), pattern, cand, GSDConfig(top_k=50, time_limit_s=None))
    assert not full.timed_out and full.nodes_expanded > 1
    cut = search_topk(Incidence(kg), pattern, cand, GSDConfig(top_k=50, time_limit_s=1e-9))
    assert cut.timed_out and cut.nodes_expanded == 1


def test_non_injective_search_matches_walks_that_revisit_entities_and_facts():
    """PathQuestion-style walk: X -spouse-> Y -spouse-> X -spouse-> Y uses one fact twice."""
    kg = KG.from_triples([("x", "spouse", "y"), ("x", "gender", "male")])
    pattern = Pattern.from_triples([("x", "spouse", "UNKNOWN p 1"), ("UNKNOWN p 1", "spouse", "UNKNOWN p 2"),
                                    ("UNKNOWN p 2", "spouse", "UNKNOWN p 3")], answer="UNKNOWN p 3")
    node_full = {0: np.array([0.0 if n == "x" else 1.0 for n in kg.entity_names])}
    rel_full = np.array([[0.0 if r == "spouse" else 1.0 for r in kg.relation_names]] * 3)
    cand = Candidates.from_distances(pattern, node_full, rel_full, 3, 2)
    inc = Incidence(kg)
    assert search_topk(inc, pattern, cand, GSDConfig(injective=True)).best is None
    assert GSDConfig().injective is False  # walks are the default; injective matching is one parameter away
    best = search_topk(inc, pattern, cand, GSDConfig()).best
    assert best.gsd == 0.0 and not best.injective
    assert kg.entity_names[best.nodes[pattern.answer]] == "y"


@pytest.mark.parametrize("label, director", [("Greg Mclean", "Ann"), ("Greg McLean", "Bo"), ("greg mclean", "Ann")])
def test_equal_vectors_prefer_the_name_spelled_as_in_the_pattern(label, director):
    """An uncased embedder gives 'Greg McLean' and 'Greg Mclean' one vector: the GSD ties, the spelling decides."""
    kg = KG.from_triples([("Greg Mclean", "directed", "Ann"), ("Greg McLean", "directed", "Bo")])
    ent = np.eye(4, dtype=np.float32)
    ent[kg.entity_id("Greg McLean")] = ent[kg.entity_id("Greg Mclean")]
    retriever = GSDRetriever(kg, ent, np.eye(1, 4, dtype=np.float32))
    pattern = Pattern.from_triples([(label, "directed", "UNKNOWN person 1")], answer="UNKNOWN person 1")
    cand = retriever.candidates(pattern, GSDConfig(), ent[[kg.entity_id("Greg Mclean")]], np.eye(1, 4, dtype=np.float32))
    best = retriever.search(pattern, GSDConfig(top_k=1), cand).best
    assert best.gsd == 0.0 and kg.entity_names[best.nodes[pattern.answer]] == director


def test_a_known_node_without_candidates_gives_no_match_instead_of_an_error():
    kg = KG.from_triples([("a", "r", "b")])
    pattern = Pattern.from_triples([("a", "r", "b")])
    cand = Candidates.from_distances(pattern, {0: np.zeros(2), 1: np.zeros(2)}, np.zeros((1, 1)), 2, 1)
    cand.node_ids[1], cand.node_dist[1] = np.empty(0, dtype=np.int64), np.empty(0)
    assert search_topk(Incidence(kg), pattern, cand, GSDConfig()).best is None


def tie_of(sg):
    repeats = len(sg.nodes) - len(set(sg.nodes.values())) + len(sg.edges) - len(set(sg.edges.values()))
    return (2 * len(sg.edges) + 1) * sum(sg.reversed.values()) + repeats


@pytest.mark.parametrize("shape", ["path3", "path4", "tree", "triangle", "parallel"])
def test_equal_gsd_goes_to_fewer_reversed_edges_then_repeats_as_in_brute_force(shape):
    """With integer distances GSD ties are exact; the top k by (GSD, reversed edges, repeats) equals brute force."""
    rng = np.random.default_rng(100 + sorted(SHAPES).index(shape))
    checked = 0
    for trial in range(12):
        n_ent = int(rng.integers(4, 7))
        kg = random_kg(rng, n_ent, 2, int(rng.integers(n_ent, 3 * n_ent)), self_loops=trial % 3 == 0)
        pattern = random_pattern(rng, shape)
        node_full = {v: rng.integers(0, 3, size=n_ent).astype(float) for v in pattern.known_nodes}
        rel_full = rng.integers(0, 2, size=(len(pattern.edges), kg.num_relations)).astype(float)
        cand = Candidates.from_distances(pattern, node_full, rel_full, n_ent, kg.num_relations)
        for config in (GSDConfig(top_k=3, injective=True, time_limit_s=None),
                       GSDConfig(top_k=1, injective=True, time_limit_s=None),
                       GSDConfig(top_k=4, time_limit_s=None)):
            result = search_topk(Incidence(kg), pattern, cand, config)
            got = [[(sg.gsd, tie_of(sg)) for sg in comp] for comp in result.components]
            assert got == brute_force(kg, pattern, cand, config, with_reversed=True), (shape, trial, config)
            checked += 1
    assert checked == 36


def test_a_gsd_tie_with_a_reversed_fact_does_not_lead_off_the_chain():
    """MetaQA merges the film "James Dean" with the actor: the pattern's directions pick the co-star's film."""
    kg = KG.from_triples([
        ("Rebel Without a Cause", "starred_actors", "James Dean"),
        ("James Dean", "starred_actors", "James Franco"),  # the TV film "James Dean" (listed first)
        ("Good Time Max", "written_by", "James Franco"),
        ("Child of God", "written_by", "James Franco"),
        ("Giant", "starred_actors", "James Dean"),
        ("Giant", "written_by", "Edna Ferber"),
    ])
    pattern = Pattern.from_triples([("Rebel Without a Cause", "starred_actors", "UNKNOWN actor 1"),
                                    ("UNKNOWN movie 2", "starred_actors", "UNKNOWN actor 1"),
                                    ("UNKNOWN movie 2", "written_by", "UNKNOWN writer 3")], answer="UNKNOWN writer 3")
    ent = np.eye(kg.num_entities, 8)
    rel = np.eye(kg.num_relations, 8)
    retriever = GSDRetriever(kg, ent, rel)
    cand = retriever.candidates(pattern, GSDConfig(), ent[[kg.entity_id("Rebel Without a Cause")]],
                                rel[kg.relation_ids(["starred_actors", "starred_actors", "written_by"])])
    for k in (1, 3):
        res = retriever.search(pattern, GSDConfig(top_k=k), cand)
        assert [sg.gsd for sg in res.subgraphs] == [0.0] * k  # the reversed matches tie at GSD 0 ...
        best = res.best  # ... but the match that follows every pattern direction ranks first
        assert kg.entity_names[best.nodes[pattern.answer]] == "Edna Ferber"
        assert not any(best.reversed.values())
        assert [sum(sg.reversed.values()) for sg in res.subgraphs] == sorted(sum(sg.reversed.values()) for sg in res.subgraphs)


def test_non_injective_search_prefers_a_simple_path_and_falls_back_to_a_walk_through_the_topic():
    """MetaQA 3-hop "directors of films whose writers also wrote [X]" counts X's own director, reached only
    by the walk X -> writer -> X -> director; a non-injective search finds it, but on equal GSD a path that
    repeats no entity ranks first."""
    facts = [("X", "written_by", "W"), ("X", "directed_by", "D0"), ("Y", "written_by", "W"), ("Y", "directed_by", "D1")]
    pattern = Pattern.from_triples([("X", "written_by", "UNKNOWN writer 1"), ("UNKNOWN movie 2", "written_by", "UNKNOWN writer 1"),
                                    ("UNKNOWN movie 2", "directed_by", "UNKNOWN person 3")], answer="UNKNOWN person 3")
    for kg_facts, expected in ((facts, "D1"), (facts[:2], "D0")):
        kg = KG.from_triples(kg_facts)
        ent, rel = np.eye(kg.num_entities, 8), np.eye(kg.num_relations, 8)
        retriever = GSDRetriever(kg, ent, rel)
        cand = retriever.candidates(pattern, GSDConfig(), ent[[kg.entity_id("X")]],
                                    rel[kg.relation_ids(["written_by", "written_by", "directed_by"])])
        best = retriever.search(pattern, GSDConfig(top_k=2), cand).best  # the default allows walks
        assert best.gsd == 0.0 and kg.entity_names[best.nodes[pattern.answer]] == expected
        assert best.injective == (expected == "D1")
        injective = retriever.search(pattern, GSDConfig(injective=True, top_k=2), cand).best
        assert (injective is not None) == (expected == "D1")


def test_auto_index_is_flat_for_small_kgs_and_a_cached_hnsw_for_large_ones(monkeypatch):
    from kgrag_utils.methods.simgrag.stages.gsd_search import resolve_index_kind

    assert resolve_index_kind("auto", gsd_search.AUTO_HNSW_MIN_ENTITIES - 1) == "flat"
    assert resolve_index_kind("auto", gsd_search.AUTO_HNSW_MIN_ENTITIES) == "hnsw"
    assert resolve_index_kind("ivf", 10) == "ivf"
    with pytest.raises(gsd_search.ConfigError):
        resolve_index_kind("annoy", 10)
    rng = np.random.default_rng(7)
    kg = random_kg(rng, 60, 2, 150)
    ent, rel = unit(rng, 60, 16).astype(np.float32), unit(rng, 2, 16).astype(np.float32)
    assert GSDRetriever(kg, ent, rel).index_kind == "flat"
    monkeypatch.setattr(gsd_search, "AUTO_HNSW_MIN_ENTITIES", 50)
    first = GSDRetriever(kg, ent, rel)
    second = GSDRetriever(kg, ent, rel)  # the graph comes back from the on-disk cache
    assert (first.index_kind, first.index_from_cache, second.index_from_cache) == ("hnsw", False, True)
    queries = ent[:5] + 0.05 * rng.normal(size=(5, 16)).astype(np.float32)
    np.testing.assert_array_equal(first.index.search(queries, 3)[1], second.index.search(queries, 3)[1])
    assert (second.index.search(ent[:5], 1)[1][:, 0] == np.arange(5)).all()


def test_relation_distances_with_many_relations_equal_the_exact_top_m():
    """The inner-product preselection keeps exactly the m nearest relations, with exact distances."""
    rng = np.random.default_rng(11)
    rel = unit(rng, 1000, 32).astype(np.float32).astype(np.float64)  # as GSDRetriever holds them
    queries = np.vstack([unit(rng, 3, 32), rel[[5, 700]]])  # two queries equal to a relation: distance 0
    for m in (1, 16, 100):
        got = gsd_search.relation_distances(queries.astype(np.float32), rel, m)
        full = np.linalg.norm(queries.astype(np.float32).astype(np.float64)[:, None, :] - rel[None], axis=2)
        for j in range(queries.shape[0]):
            keep = np.flatnonzero(np.isfinite(got[j]))
            assert sorted(keep.tolist()) == sorted(np.argsort(full[j])[:m].tolist())
            np.testing.assert_allclose(got[j, keep], full[j, keep], rtol=0, atol=1e-12)
        assert got[3, 5] == 0.0 and got[4, 700] == 0.0


def test_time_limit_clock_is_the_threads_cpu_time_so_load_cannot_cut_a_search():
    """The compiled loop's clock is time.thread_time's: sleeping (a descheduled process) does not advance it."""
    import time as _time

    from kgrag_utils.methods.simgrag.stages import gsd_kernel

    if not gsd_kernel.CPU_CLOCK_IN_LOOP:
        pytest.skip("the in-loop clock is Linux-only")
    a, t = gsd_kernel._now(), _time.thread_time()
    assert abs(a - t) < 0.05  # the same clock as time.thread_time
    _time.sleep(0.3)
    assert gsd_kernel._now() - a < 0.1  # a wall clock would have moved 0.3 s


def _as_tuples(result):
    return [[(sg.gsd, sg.nodes, sg.edges, sg.node_terms, sg.edge_terms, sg.reversed) for sg in comp]
            for comp in result.components]


def _random_cases(seed: int, repeats: int):
    """A random KG and (pattern, candidates) pairs of every shape, `repeats` times each."""
    rng = np.random.default_rng(seed)
    kg = random_kg(rng, 9, 3, 30)
    ent_vecs, rel_vecs = unit(rng, 9, 4), unit(rng, 3, 4)
    cases = []
    for shape in sorted(SHAPES) * repeats:
        pattern = random_pattern(rng, shape)
        cases.append((pattern, random_candidates(rng, kg, pattern, ent_vecs, rel_vecs, 4)))
    return kg, cases


def test_reused_search_buffers_give_the_results_of_fresh_ones():
    """The incidence keeps the compiled search's output rows and child pool between calls: patterns of
    other shapes and sizes searched in between must not leak into a later search's results."""
    kg, cases = _random_cases(7, 2)
    shared = Incidence(kg)
    for config in CONFIGS[:3]:
        for pattern, cand in cases:
            got = search_topk(shared, pattern, cand, config)
            fresh = search_topk(Incidence(kg), pattern, cand, config)
            assert _as_tuples(got) == _as_tuples(fresh)
            assert got.nodes_expanded == fresh.nodes_expanded and got.dfs_ms >= 0.0


def test_searches_from_several_threads_give_the_sequential_results():
    """Each thread has its own reused buffers: concurrent searches on one incidence do not mix results."""
    from concurrent.futures import ThreadPoolExecutor

    kg, cases = _random_cases(11, 3)
    config = CONFIGS[2]
    shared = Incidence(kg)
    expected = [_as_tuples(search_topk(Incidence(kg), p, c, config)) for p, c in cases]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda pc: _as_tuples(search_topk(shared, pc[0], pc[1], config)), cases * 4))
    assert got == expected * 4


def _every_field(result):
    """Every field of every result, dict order included, and the search orders."""
    return ([[(sg.gsd, sg.component, list(sg.nodes.items()), list(sg.edges.items()), list(sg.node_terms.items()),
               list(sg.edge_terms.items()), list(sg.reversed.items()), sg.injective) for sg in comp]
             for comp in result.components], result.orders, result.nodes_expanded)


@pytest.mark.parametrize("cap", [4096, 1])
def test_cached_pattern_arrays_and_row_plans_give_the_results_of_fresh_ones(monkeypatch, cap):
    """search_topk keeps its `pat` arrays and row builders by pattern shape (gsd_enumerate._PATS,
    _GATHERS): searching with those caches warm, in another order, after patterns of other shapes, gives
    what a search with emptied caches gives; with a cap of 1 every new shape empties them."""
    monkeypatch.setattr(gsd_enumerate, "_CACHE_CAP", cap)
    kg, cases = _random_cases(5, 3)
    inc = Incidence(kg)
    for config in CONFIGS:
        fresh = []
        for pattern, cand in cases:
            gsd_enumerate._PATS.clear()
            gsd_enumerate._GATHERS.clear()
            fresh.append(_every_field(search_topk(inc, pattern, cand, config)))
        warm = [_every_field(search_topk(inc, p, c, config)) for p, c in reversed(cases)][::-1]
        assert warm == fresh
        assert len(gsd_enumerate._PATS) <= cap and len(gsd_enumerate._GATHERS) <= cap


def test_a_pattern_of_the_same_size_with_other_edges_or_flags_gets_its_own_pat_array():
    """Two patterns with as many nodes, edges and candidates but another edge direction, another known
    node or other options never share a cached `pat` array: each equals the array built from scratch."""
    a = Pattern([PatternNode("x", True), PatternNode("UNKNOWN a 1", False)], [PatternEdge(0, "r", 1)])
    b = Pattern([PatternNode("x", True), PatternNode("UNKNOWN a 1", False)], [PatternEdge(1, "r", 0)])
    c = Pattern([PatternNode("UNKNOWN a 1", False), PatternNode("x", True)], [PatternEdge(0, "r", 1)])
    ids, dist = np.array([3, 1], dtype=np.int64), np.array([0.0, 0.5])
    cand = {id(a): Candidates([ids, None], [dist, None], np.zeros((1, 2))),
            id(b): Candidates([ids, None], [dist, None], np.zeros((1, 2))),
            id(c): Candidates([None, ids], [None, dist], np.zeros((1, 2)))}
    runs = [(p, config) for config in (GSDConfig(), GSDConfig(top_k=4), GSDConfig(injective=True),
                                       GSDConfig(direction="same")) for p in (a, b, c)]
    gsd_enumerate._PATS.clear()
    warm = [gsd_enumerate._kernel_inputs(p, cand[id(p)], config)[0].tolist() for p, config in runs]  # one cache
    fresh = []
    for p, config in runs:
        gsd_enumerate._PATS.clear()
        fresh.append(gsd_enumerate._kernel_inputs(p, cand[id(p)], config)[0].tolist())
    assert warm == fresh
    assert len({tuple(x) for x in fresh}) == len(runs)
