"""The KG layer: vocabularies, CSR lookups, chain following with pruning, k-hop, I/O, export."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrag_utils.errors import ConfigError, DatasetMissingError
from kgrag_utils.kg import KG, ChainResult
from kgrag_utils.synthetic import synthetic_ids, synthetic_kg

# A small movie KG. m4 has an actor but no director: the dead end of actor -> movie -> director.
MOVIE_TRIPLES = [
    ("m1", "directed_by", "d1"),
    ("m2", "directed_by", "d1"),
    ("m3", "directed_by", "d2"),
    ("m1", "starred_actors", "a1"),
    ("m1", "starred_actors", "a2"),
    ("m2", "starred_actors", "a3"),
    ("m3", "starred_actors", "a1"),
    ("m4", "starred_actors", "a1"),
    ("m1", "directed_by", "d1"),  # duplicate of fact 0
    ("m1", "release_year", "1999"),
]


@pytest.fixture
def movies() -> KG:
    return KG.from_triples(MOVIE_TRIPLES, name="movies")


def fact_set(kg: KG, edge_ids) -> set[tuple[str, str, str]]:
    return set(kg.triples(edge_ids))


def ids(kg: KG, *names: str) -> list[int]:
    return [kg.entity_id(n) for n in names]


# ----------------------------------------------------------------------------- construction


def test_from_triples_assigns_ids_by_first_appearance_and_drops_duplicates(movies):
    assert movies.name == "movies"
    # ids follow first appearance in all heads, then all tails
    assert list(movies.entity_names) == ["m1", "m2", "m3", "m4", "d1", "d2", "a1", "a2", "a3", "1999"]
    assert list(movies.relation_names) == ["directed_by", "starred_actors", "release_year"]
    assert movies.num_entities == 10 and movies.num_relations == 3
    assert movies.num_edges == 9  # one duplicate removed
    assert movies.triples(np.arange(movies.num_edges)) == [t for i, t in enumerate(MOVIE_TRIPLES) if i != 8]
    for arr in (movies.heads, movies.rels, movies.tails):
        assert arr.dtype in (np.int32, np.int64) and arr.shape == (9,)
        with pytest.raises(ValueError):
            arr[0] = 1  # read-only


def test_from_ids_validates_and_dedupes():
    kg = KG.from_ids([0, 0, 1, 0], [0, 0, 1, 0], [1, 1, 2, 1], ["x", "y", "z"], ["p", "q"], name="ids")
    assert kg.num_edges == 2
    assert kg.triples([0, 1]) == [("x", "p", "y"), ("y", "q", "z")]
    with pytest.raises(ConfigError, match="same length"):
        KG.from_ids([0], [0, 0], [1], ["x", "y"], ["p"])
    with pytest.raises(ConfigError, match=r"\[0, 2\)"):
        KG.from_ids([0], [0], [2], ["x", "y"], ["p"])
    with pytest.raises(ConfigError, match="relation ids"):
        KG.from_ids([0], [1], [1], ["x", "y"], ["p"])
    with pytest.raises(ConfigError, match="unique"):
        KG.from_ids([0], [0], [1], ["x", "x"], ["p"])


def test_empty_kg_answers_empty():
    kg = KG.from_triples([], name="empty")
    assert kg.num_edges == 0 and kg.num_entities == 0
    kg2 = KG.from_ids([], [], [], ["lonely"], ["r"])
    assert kg2.neighbors(0)[0].size == 0
    res = kg2.follow_chain(0, [("r", True)])
    assert res.reached.size == 0 and res.edge_ids.size == 0 and not res.derivable
    assert kg2.khop_edges([0], 3).size == 0


def test_from_triples_rejects_bad_rows():
    with pytest.raises(ConfigError, match="head, relation, tail"):
        KG.from_triples([("a", "r")])
    with pytest.raises(ConfigError, match="str"):
        KG.from_triples([("a", "r", 3)])


# ----------------------------------------------------------------------------- vocabularies


def test_name_lookups(movies):
    m1 = movies.entity_id("m1")
    assert movies.entity_names[m1] == "m1"
    assert list(movies.entity_ids(["d2", "m1"])) == [movies.entity_id("d2"), m1]
    assert movies.entity_ids([]).size == 0
    assert movies.has_entity("a3") and not movies.has_entity("a4") and not movies.has_entity(3)
    assert movies.relation_names[movies.relation_id("starred_actors")] == "starred_actors"
    assert movies.has_relation("release_year") and not movies.has_relation("year")


def test_unknown_names_raise_config_error_with_hint(movies):
    with pytest.raises(ConfigError, match="did you mean 'm1'"):
        movies.entity_id("M1")
    with pytest.raises(ConfigError, match="unknown entity 'zzz'"):
        movies.entity_ids(["m1", "zzz"])
    with pytest.raises(ConfigError, match="did you mean 'directed_by'"):
        movies.relation_id("direct_by")
    with pytest.raises(ConfigError):
        movies.entity_id(5)
    err = None
    try:
        movies.entity_id("a11")
    except ConfigError as exc:
        err = str(exc)
    assert err is not None and "\n" not in err


def test_close_match_hint_scales_to_many_names():
    names = np.array([f"entity number {i}" for i in range(60_000)], dtype=object)
    kg = KG.from_ids([0], [0], [1], names, ["r"])
    with pytest.raises(ConfigError, match="entity number 123"):
        kg.entity_id("ENTITY NUMBER 123")


# ----------------------------------------------------------------------------- lookups


def test_degrees(movies):
    m1, a1, d1 = ids(movies, "m1", "a1", "d1")
    assert movies.out_degree[m1] == 4 and movies.in_degree[m1] == 0
    assert movies.in_degree[a1] == 3 and movies.in_degree[d1] == 2
    assert movies.out_degree.sum() == movies.in_degree.sum() == movies.num_edges


def test_neighbors_out_in_both(movies):
    m1, a1, d1 = ids(movies, "m1", "a1", "d1")
    nbrs, rels, edges = movies.neighbors(m1)
    assert fact_set(movies, edges) == {("m1", "directed_by", "d1"), ("m1", "starred_actors", "a1"),
                                       ("m1", "starred_actors", "a2"), ("m1", "release_year", "1999")}
    assert np.array_equal(nbrs, movies.tails[edges]) and np.array_equal(rels, movies.rels[edges])
    assert list(rels) == sorted(rels)  # grouped by relation
    nbrs, rels, edges = movies.neighbors(m1, "starred_actors")
    assert sorted(movies.entity_names[nbrs]) == ["a1", "a2"]
    assert set(rels) == {movies.relation_id("starred_actors")}
    nbrs, _, edges = movies.neighbors(a1, movies.relation_id("starred_actors"), direction="in")
    assert sorted(movies.entity_names[nbrs]) == ["m1", "m3", "m4"]
    assert np.array_equal(nbrs, movies.heads[edges])
    assert movies.neighbors(a1, "starred_actors", direction="out")[0].size == 0
    nbrs, _, edges = movies.neighbors(d1, direction="both")
    assert sorted(movies.entity_names[nbrs]) == ["m1", "m2"]
    with pytest.raises(ConfigError, match="direction"):
        movies.neighbors(m1, direction="sideways")
    with pytest.raises(ConfigError, match="out of range"):
        movies.neighbors(99)
    with pytest.raises(ConfigError, match="entity_id"):
        movies.neighbors("m1")


def test_neighbors_both_lists_a_self_loop_once_per_direction():
    kg = KG.from_triples([("x", "same_as", "x"), ("x", "r", "y")])
    nbrs, _, edges = kg.neighbors(0, direction="both")
    assert sorted(edges.tolist()) == [0, 0, 1]


# ----------------------------------------------------------------------------- chains


def test_chain_inverse_then_forward_prunes_dead_end(movies):
    a1 = movies.entity_id("a1")
    res = movies.follow_chain(a1, [("starred_actors", False), ("directed_by", True)])
    assert isinstance(res, ChainResult)
    assert list(movies.entity_names[res.reached]) == sorted(["d1", "d2"], key=movies.entity_id)
    assert fact_set(movies, res.edge_ids) == {
        ("m1", "starred_actors", "a1"), ("m3", "starred_actors", "a1"),
        ("m1", "directed_by", "d1"), ("m3", "directed_by", "d2"),
    }  # ("m4", "starred_actors", "a1") leads nowhere and is excluded
    assert len(res.frontiers) == 3
    assert set(movies.entity_names[res.frontiers[0]]) == {"a1"}
    assert set(movies.entity_names[res.frontiers[1]]) == {"m1", "m3", "m4"}  # before pruning
    assert set(movies.entity_names[res.step_entities[1]]) == {"m1", "m3"}  # after pruning
    assert fact_set(movies, res.step_edge_ids[1]) == {("m1", "directed_by", "d1"), ("m3", "directed_by", "d2")}
    assert res.num_facts == 4 and res.derivable and not res.truncated
    assert np.all(np.diff(res.reached) > 0) and np.all(np.diff(res.edge_ids) > 0)


def test_chain_accepts_ids_many_starts_and_bare_relations(movies):
    d1, d2 = ids(movies, "d1", "d2")
    rid = movies.relation_id("directed_by")
    res = movies.follow_chain([d2, d1, d1], [(rid, False)])
    assert set(movies.entity_names[res.reached]) == {"m1", "m2", "m3"}
    assert movies.follow_chain(movies.entity_id("m1"), ["directed_by"]).reached.tolist() == [d1]


def test_chain_any_relation_step(movies):
    res = movies.follow_chain(movies.entity_id("m2"), [(None, True)])
    assert set(movies.entity_names[res.reached]) == {"d1", "a3"}


def test_three_step_chain_and_exclude_start(movies):
    d1 = movies.entity_id("d1")
    chain = [("directed_by", False), ("starred_actors", True), ("starred_actors", False)]
    res = movies.follow_chain(d1, chain)
    # d1 -> m1, m2 -> a1, a2, a3 -> movies of those actors
    assert set(movies.entity_names[res.reached]) == {"m1", "m2", "m3", "m4"}
    assert ("m2", "directed_by", "d1") in fact_set(movies, res.edge_ids)
    back = movies.follow_chain(d1, [("directed_by", False), ("directed_by", True)])
    assert back.reached.tolist() == [d1]
    assert back.num_facts == 2
    excluded = movies.follow_chain(d1, [("directed_by", False), ("directed_by", True)], exclude_start=True)
    assert excluded.reached.size == 0 and excluded.edge_ids.size == 0


def test_chain_that_derives_nothing_keeps_no_facts(movies):
    res = movies.follow_chain(movies.entity_id("a2"), [("starred_actors", False), ("release_year", True),
                                                       ("directed_by", True)])
    assert res.reached.size == 0 and res.edge_ids.size == 0 and not res.derivable
    assert res.frontiers[2].size == 1  # 1999 was touched, then the walk died
    empty = movies.follow_chain(movies.entity_id("a2"), [])
    assert empty.reached.tolist() == [movies.entity_id("a2")] and empty.edge_ids.size == 0


def test_chain_truncation_is_flagged(movies):
    a1 = movies.entity_id("a1")
    res = movies.follow_chain(a1, [("starred_actors", False), ("directed_by", True)], max_paths_facts=1)
    assert res.truncated
    assert res.reached.size == 1 and res.num_facts == 2
    # every kept fact still lies on a complete path
    full = movies.follow_chain(a1, [("starred_actors", False), ("directed_by", True)])
    assert set(res.edge_ids) <= set(full.edge_ids)


def test_chain_rejects_bad_steps(movies):
    with pytest.raises(ConfigError, match="unknown relation"):
        movies.follow_chain(0, [("acted_in", True)])
    with pytest.raises(ConfigError, match="bool"):
        movies.follow_chain(0, [("directed_by", "forward")])
    with pytest.raises(ConfigError, match="out of range"):
        movies.follow_chain(0, [(7, True)])
    with pytest.raises(ConfigError, match="entity"):
        movies.follow_chain("m1", [("directed_by", True)])


# ----------------------------------------------------------------------------- neighbourhoods


def test_khop_edges(movies):
    d2 = movies.entity_id("d2")
    assert movies.khop_edges([d2], 0).size == 0
    assert fact_set(movies, movies.khop_edges([d2], 1)) == {("m3", "directed_by", "d2")}
    assert fact_set(movies, movies.khop_edges([d2], 2)) == {("m3", "directed_by", "d2"),
                                                           ("m3", "starred_actors", "a1")}
    three = fact_set(movies, movies.khop_edges([d2], 3))
    assert three == {("m3", "directed_by", "d2"), ("m3", "starred_actors", "a1"),
                     ("m1", "starred_actors", "a1"), ("m4", "starred_actors", "a1")}
    capped = movies.khop_edges([d2], 3, max_edges=3)
    assert capped.size == 3
    assert {("m3", "directed_by", "d2"), ("m3", "starred_actors", "a1")} <= fact_set(movies, capped)
    # the whole movie graph hangs together: d2 - m3 - a1 - m1 - d1 - m2 ... reaches every fact
    assert movies.khop_edges(d2, 10).size == movies.num_edges
    assert set(movies.entity_names[movies.khop_entities([d2], 2)]) == {"d2", "m3", "a1"}


def test_edges_between(movies):
    m1, a1, d1, m2 = ids(movies, "m1", "a1", "d1", "m2")
    assert fact_set(movies, movies.edges_between(m1, a1)) == {("m1", "starred_actors", "a1")}
    assert fact_set(movies, movies.edges_between(a1, m1)) == {("m1", "starred_actors", "a1")}
    assert movies.edges_between(a1, m1, directed=True).size == 0
    assert fact_set(movies, movies.edges_between([m1, m2], d1, directed=True)) == {
        ("m1", "directed_by", "d1"), ("m2", "directed_by", "d1")}
    assert movies.edges_between(a1, d1).size == 0


# ----------------------------------------------------------------------------- export


def test_triples_and_verbalize():
    kg = KG.from_triples([("ludwig_ii_of_bavaria", "parents", "maximilian_ii"), ("A", "directed_by", "B")])
    assert kg.triples([1, 0]) == [("A", "directed_by", "B"), ("ludwig_ii_of_bavaria", "parents", "maximilian_ii")]
    assert kg.verbalize([0, 1]) == "(ludwig_ii_of_bavaria, parents, maximilian_ii)\n(A, directed_by, B)"
    assert kg.verbalize([1, 0], style="sentence") == "A directed by B\nludwig ii of bavaria parents maximilian ii"
    assert kg.verbalize([]) == ""
    with pytest.raises(ConfigError, match="style"):
        kg.verbalize([0], style="json")
    with pytest.raises(ConfigError, match="out of range"):
        kg.triples([2])


def test_to_networkx(movies):
    res = movies.follow_chain(movies.entity_id("a1"), [("starred_actors", False), ("directed_by", True)])
    g = movies.to_networkx(res.edge_ids)
    assert isinstance(g, nx.MultiDiGraph)
    assert g.number_of_edges() == 4 and g.number_of_nodes() == 5
    assert {d["name"] for _, d in g.nodes(data=True)} == {"a1", "m1", "m3", "d1", "d2"}
    for h, t, key, data in g.edges(keys=True, data=True):
        assert key == data["edge_id"]
        assert movies.triples([key])[0] == (g.nodes[h]["name"], data["relation"], g.nodes[t]["name"])


def test_subgraph_kg(movies):
    res = movies.follow_chain(movies.entity_id("a1"), [("starred_actors", False), ("directed_by", True)])
    sub = movies.subgraph_kg(res.edge_ids)
    assert sub.num_edges == 4 and sub.num_entities == 5 and sub.num_relations == 2
    assert set(sub.triples(np.arange(sub.num_edges))) == fact_set(movies, res.edge_ids)


# ----------------------------------------------------------------------------- files


@pytest.mark.parametrize("sep", ["|", "\t"])
def test_load_both_separators(tmp_path, sep):
    lines = ["", "  m1 {s} directed_by {s} d1  ", "m2{s}directed_by{s}d1", "", "m1{s}directed_by{s}d1",
             "NA{s}has_tags{s}null", 'Say "Hi"{s}has_tags{s}don\'t', "   ", "m2{s}in_language{s}Français", ""]
    path = tmp_path / "kb.txt"
    path.write_text("\n".join(line.format(s=sep) for line in lines) + "\n", encoding="utf-8")
    expected = [("m1", "directed_by", "d1"), ("m2", "directed_by", "d1"), ("NA", "has_tags", "null"),
                ('Say "Hi"', "has_tags", "don't"), ("m2", "in_language", "Français")]
    for kg in (KG.load(path), KG.load(path, sep=sep, name="named")):
        assert kg.num_edges == 5  # blank lines skipped, the duplicate dropped
        assert kg.triples(np.arange(kg.num_edges)) == expected
        assert kg.num_entities == 8 and kg.num_relations == 3
    assert KG.load(path).name == "kb"
    assert KG.load(path, name="named").name == "named"


def test_load_rejects_malformed_files(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(DatasetMissingError):
        KG.load(missing)
    bad = tmp_path / "bad.txt"
    bad.write_text("a|r|b\nc|r\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        KG.load(bad)
    extra = tmp_path / "extra.txt"
    extra.write_text("a|r|b\nc|r|d|e\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        KG.load(extra)
    empty_field = tmp_path / "empty_field.txt"
    empty_field.write_text("a|r|b\nc| |d\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="empty head, relation or tail"):
        KG.load(empty_field)
    nosep = tmp_path / "nosep.txt"
    nosep.write_text("a r b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="sep="):
        KG.load(nosep)
    latin = tmp_path / "latin.txt"
    latin.write_bytes("a|r|Fran\u00e7ais\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="UTF-8|UTF8"):
        KG.load(latin)


def test_load_blank_files_give_empty_kg(tmp_path):
    for text in ("", "\n\n   \n"):
        path = tmp_path / "blank.txt"
        path.write_text(text, encoding="utf-8")
        kg = KG.load(path)
        assert (kg.num_edges, kg.num_entities, kg.num_relations) == (0, 0, 0)
    late = tmp_path / "late.txt"
    late.write_text("\n" * 1500 + "x\ty\tz\n", encoding="utf-8")  # separator found after many blank lines
    assert KG.load(late).triples([0]) == [("x", "y", "z")]


def test_npz_round_trip(tmp_path, movies):
    weird = KG.from_triples(MOVIE_TRIPLES + [("Amélie", "has_tags", "a|b"), ("x\ty", "r", "")], name="wéird")
    for kg in (movies, weird):
        path = kg.save(tmp_path / f"{kg.num_edges}.kg.npz")
        assert path.exists()
        back = KG.load_npz(path)
        assert back.name == kg.name
        assert list(back.entity_names) == list(kg.entity_names)
        assert list(back.relation_names) == list(kg.relation_names)
        for attr in ("heads", "rels", "tails", "out_degree", "in_degree"):
            assert np.array_equal(getattr(back, attr), getattr(kg, attr))
        chain = [("starred_actors", False), ("directed_by", True)]
        a1 = kg.entity_id("a1")
        assert np.array_equal(back.follow_chain(a1, chain).edge_ids, kg.follow_chain(a1, chain).edge_ids)
        assert back.entity_id("m3") == kg.entity_id("m3")
    with pytest.raises(DatasetMissingError):
        KG.load_npz(tmp_path / "absent.npz")
    with pytest.raises(ConfigError, match="NUL"):
        KG.from_triples([("a\x00b", "r", "c")]).save(tmp_path / "nul.npz")
    odd = tmp_path / "odd.npz"
    np.savez(odd, format_version=np.array(999))
    with pytest.raises(ConfigError, match="format"):
        KG.load_npz(odd)


def test_load_cached_reuses_and_refreshes_the_npz(tmp_path):
    from kgrag_utils.settings import cache_dir

    path = tmp_path / "kb.txt"
    path.write_text("a|r|b\nb|r|c\n", encoding="utf-8")
    first = KG.load_cached(path)
    cached = list(cache_dir("kg").glob("kb-*.npz"))
    assert first.num_edges == 2 and len(cached) == 1
    assert KG.load_cached(path).triples([1]) == [("b", "r", "c")]
    assert list(cache_dir("kg").glob("kb-*.npz")) == cached  # reused, not rebuilt under a new key
    path.write_text("a|r|b\nb|r|c\nc|s|d\n", encoding="utf-8")  # the file changed: size differs
    assert KG.load_cached(path).num_edges == 3
    for damaged in cache_dir("kg").glob("kb-*.npz"):
        damaged.write_bytes(b"PK not really an npz")
    assert KG.load_cached(path).num_edges == 3  # a damaged cache is rebuilt
    assert KG.load_npz(next(iter(sorted(cache_dir("kg").glob("kb-*.npz"), key=lambda p: p.stat().st_mtime_ns,
                                        reverse=True)))).num_edges == 3
    with pytest.raises(DatasetMissingError):
        KG.load_cached(tmp_path / "absent.txt")


# ----------------------------------------------------------------------------- property tests


def naive_chain(edges: list[tuple[int, int, int]], start: set[int], chain: list[tuple[int | None, bool]]):
    """Reference: enumerate every walk with Python loops."""
    walks: list[tuple[int, list[int]]] = [(s, []) for s in start]
    for rel, forward in chain:
        nxt = []
        for node, path in walks:
            for eid, (h, r, t) in enumerate(edges):
                if rel is not None and r != rel:
                    continue
                if forward and h == node:
                    nxt.append((t, path + [eid]))
                elif not forward and t == node:
                    nxt.append((h, path + [eid]))
        walks = nxt
    reached = {node for node, _ in walks}
    facts = {e for _, path in walks for e in path}
    return reached, facts


def naive_khop(edges, seeds: set[int], k: int) -> set[int]:
    dist = {s: 0 for s in seeds}
    frontier = set(seeds)
    for hop in range(1, k + 1):
        nxt = set()
        for h, _, t in edges:
            if h in frontier and t not in dist:
                nxt.add(t)
            if t in frontier and h not in dist:
                nxt.add(h)
        for n in nxt:
            dist[n] = hop
        frontier = nxt
    return {i for i, (h, _, t) in enumerate(edges) if min(dist.get(h, k), dist.get(t, k)) < k}


@st.composite
def small_graph_and_chain(draw):
    n_ent = draw(st.integers(1, 7))
    n_rel = draw(st.integers(1, 3))
    raw = draw(st.lists(st.tuples(st.integers(0, n_ent - 1), st.integers(0, n_rel - 1), st.integers(0, n_ent - 1)),
                        max_size=25))
    chain = draw(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, n_rel - 1)), st.booleans()), max_size=4))
    start = draw(st.sets(st.integers(0, n_ent - 1), min_size=1, max_size=3))
    return n_ent, n_rel, raw, chain, start


@settings(max_examples=300, deadline=None)
@given(small_graph_and_chain())
def test_follow_chain_matches_naive_reference(case):
    n_ent, n_rel, raw, chain, start = case
    names = [f"n{i}" for i in range(n_ent)]
    kg = KG.from_ids([h for h, _, _ in raw], [r for _, r, _ in raw], [t for _, _, t in raw], names,
                     [f"r{i}" for i in range(n_rel)])
    unique = list(dict.fromkeys(raw))
    assert kg.num_edges == len(unique)
    assert [tuple(int(x) for x in e) for e in zip(kg.heads, kg.rels, kg.tails)] == unique
    res = kg.follow_chain(sorted(start), chain)
    want_reached, want_facts = naive_chain(unique, start, chain)
    if not chain:
        want_reached, want_facts = set(start), set()
    assert set(res.reached.tolist()) == want_reached
    assert set(res.edge_ids.tolist()) == want_facts
    # neighbours against a scan
    node = min(start)
    for direction in ("out", "in"):
        for rel in [None] + list(range(n_rel)):
            _, _, edges = kg.neighbors(node, rel, direction)
            want = {i for i, (h, r, t) in enumerate(unique)
                    if (h if direction == "out" else t) == node and (rel is None or r == rel)}
            assert sorted(edges.tolist()) == sorted(want)
    for k in range(4):
        assert set(kg.khop_edges(sorted(start), k).tolist()) == naive_khop(unique, start, k)


def test_follow_chain_matches_reference_on_seeded_random_graphs():
    rng = random.Random(7)
    for _ in range(40):
        n_ent, n_rel = rng.randint(5, 30), rng.randint(1, 4)
        raw = [(rng.randrange(n_ent), rng.randrange(n_rel), rng.randrange(n_ent)) for _ in range(rng.randint(0, 80))]
        kg = KG.from_ids([e[0] for e in raw], [e[1] for e in raw], [e[2] for e in raw],
                         [f"n{i}" for i in range(n_ent)], [f"r{i}" for i in range(n_rel)])
        unique = list(dict.fromkeys(raw))
        chain = [(rng.randrange(n_rel), rng.random() < 0.5) for _ in range(rng.randint(1, 3))]
        start = {rng.randrange(n_ent) for _ in range(rng.randint(1, 3))}
        res = kg.follow_chain(sorted(start), chain)
        want_reached, want_facts = naive_chain(unique, start, chain)
        assert set(res.reached.tolist()) == want_reached
        assert set(res.edge_ids.tolist()) == want_facts


def naive_chain_to(edges, start: set[int], chain, targets: set[int]) -> set[int]:
    """Reference: the facts on walks from `start` along `chain` that end in `targets`."""
    walks: list[tuple[int, list[int]]] = [(s, []) for s in start]
    for rel, forward in chain:
        walks = [((t if forward else h), path + [eid]) for node, path in walks for eid, (h, r, t) in enumerate(edges)
                 if (rel is None or r == rel) and (h if forward else t) == node]
    return {e for node, path in walks if node in targets for e in path}


@settings(max_examples=200, deadline=None)
@given(small_graph_and_chain(), st.sets(st.integers(0, 6), max_size=4))
def test_prune_chain_keeps_exactly_the_paths_to_the_given_ends(case, targets):
    n_ent, n_rel, raw, chain, start = case
    kg = KG.from_ids([h for h, _, _ in raw], [r for _, r, _ in raw], [t for _, _, t in raw],
                     [f"n{i}" for i in range(n_ent)], [f"r{i}" for i in range(n_rel)])
    unique = list(dict.fromkeys(raw))
    res = kg.follow_chain(sorted(start), chain)
    again = kg.prune_chain(chain, res.step_edge_ids, res.reached, res.frontiers)
    assert np.array_equal(again.edge_ids, res.edge_ids) and np.array_equal(again.reached, res.reached)
    assert all(np.array_equal(a, b) for a, b in zip(again.step_entities, res.step_entities))
    ends = np.intersect1d(res.reached, sorted(targets))
    cut = kg.prune_chain(chain, res.step_edge_ids, ends, res.frontiers, truncated=True)
    assert cut.truncated and set(cut.reached.tolist()) == set(ends.tolist())
    if chain:
        assert set(cut.edge_ids.tolist()) == naive_chain_to(unique, start, chain, set(ends.tolist()))
        assert set(cut.step_entities[0].tolist()) <= start


# ----------------------------------------------------------------------------- synthetic


def test_synthetic_kg_is_exact_deterministic_and_heavy_tailed():
    kg = synthetic_kg(20_000, num_relations=50, seed=3)
    assert kg.num_edges == 20_000 and kg.num_entities == 2_000 and kg.num_relations == 50
    assert kg.entity_names[5] == "e5" and kg.relation_names[7] == "r7"
    assert not np.any(kg.heads == kg.tails)
    again = synthetic_ids(20_000, num_relations=50, seed=3)
    assert np.array_equal(again[0], kg.heads) and np.array_equal(again[2], kg.tails)
    other = synthetic_ids(20_000, num_relations=50, seed=4)
    assert not np.array_equal(other[0], kg.heads)
    degree = kg.degree
    assert degree.max() > 10 * degree.mean()  # hubs exist
    assert np.bincount(kg.rels, minlength=50).max() > 5 * (20_000 / 50)  # skewed relation types
    with pytest.raises(ConfigError):
        synthetic_kg(1_000, num_entities=5, num_relations=1)


# ----------------------------------------------------------------------------- real data


@pytest.mark.realdata
def test_metaqa_kb_loads(real_data, tmp_path):
    path = real_data / "MetaQA" / "kb_reconstructed.txt"
    if not path.exists():
        pytest.skip(f"{path} not present")
    kg = KG.load(path)
    assert kg.num_entities == 42_718
    assert kg.num_relations == 9
    assert kg.num_edges == 128_185
    assert set(kg.relation_names) == {"directed_by", "written_by", "starred_actors", "release_year", "in_language",
                                      "has_tags", "has_genre", "has_imdb_votes", "has_imdb_rating"}
    movie = kg.entity_id("Something Borrowed")
    assert ("Something Borrowed", "written_by", "Emily Giffin") in set(kg.triples(kg.neighbors(movie)[2]))
    director = kg.entity_id("Jonathan Liebesman")
    films = kg.follow_chain(director, [("directed_by", False)])
    assert kg.entity_id("The Killing Room") in set(films.reached.tolist())
    back = KG.load_npz(kg.save(tmp_path / "metaqa.npz"))
    assert back.num_edges == kg.num_edges and np.array_equal(back.tails, kg.tails)


def test_memory_mapped_id_arrays_build_the_same_kg(tmp_path):
    """The KG takes plain numpy arrays, memory-mapped ones included (an out-of-core build hands it memmaps)."""
    from kgrag_utils.kg.arrays import csr_index

    kg = synthetic_kg(2_000, num_relations=7, seed=5)
    arrays = {}
    for name in ("heads", "rels", "tails"):
        src = getattr(kg, name)
        mm = np.memmap(tmp_path / f"{name}.bin", dtype=src.dtype, mode="w+", shape=src.shape)
        mm[:] = src
        mm.flush()
        arrays[name] = np.memmap(tmp_path / f"{name}.bin", dtype=src.dtype, mode="r", shape=src.shape)
    again = KG.from_ids(arrays["heads"], arrays["rels"], arrays["tails"], kg.entity_names, kg.relation_names)
    direct = KG(name="mm", entity_names=kg.entity_names, relation_names=kg.relation_names, **arrays,
                index=csr_index(arrays["heads"], arrays["rels"], arrays["tails"], kg.num_entities, kg.num_relations))
    start = int(np.flatnonzero(kg.out_degree > 0)[0])
    chain = [(int(kg.rels[kg.neighbors(start)[2][0]]), True)]
    for other in (again, direct):
        assert other.num_edges == kg.num_edges
        assert np.array_equal(other.follow_chain([start], chain).edge_ids, kg.follow_chain([start], chain).edge_ids)
        assert np.array_equal(other.khop_edges([start], 2), kg.khop_edges([start], 2))
