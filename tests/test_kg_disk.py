"""The out-of-core KG build equals the in-memory one on small graphs.

Facts are streamed in small chunks with tiny buckets and passes (so that every chunk and bucket
boundary is crossed); the kept facts must be the first N distinct facts of the stream, and the
on-disk incidence must equal, array for array, `Incidence` built in memory from the same facts.
The GSD search over the memory-mapped incidence must return what it returns over the in-memory one.
"""

from __future__ import annotations

import numpy as np
import pytest

from kgrag_utils import kg_disk
from kgrag_utils.errors import ConfigError
from kgrag_utils.kg import KG
from kgrag_utils.kg_disk import DiskKG, build_incidence, write_facts
from kgrag_utils.methods.simgrag.stages.gsd_enumerate import Candidates, GSDConfig, Incidence, search_topk
from kgrag_utils.methods.simgrag.stages.pattern import Pattern
from kgrag_utils.synthetic import synthetic_fact_chunks


def first_distinct(chunks, n_ent, n_rel, limit):
    """The first `limit` distinct facts of a stream, in memory (sorted like the disk build)."""
    h, r, t = (np.concatenate(c).astype(np.int64) for c in zip(*chunks))
    key = (h * n_rel + r) * n_ent + t
    _, first = np.unique(key, return_index=True)
    first = np.sort(first)[:limit]
    order = np.lexsort((t[first], r[first], h[first]))
    return h[first][order], r[first][order], t[first][order]


@pytest.fixture
def small_passes(monkeypatch):
    monkeypatch.setattr(kg_disk, "_BUCKET_FACTS", 97)


@pytest.mark.parametrize("seed, n_ent, n_rel, n_edges, chunk", [(0, 60, 5, 700, 64), (1, 400, 30, 3000, 500),
                                                                (2, 25, 2, 300, 41)])
def test_out_of_core_build_equals_in_memory(tmp_path, small_passes, seed, n_ent, n_rel, n_edges, chunk):
    stream = synthetic_fact_chunks(n_ent, n_rel, seed=seed, alpha=0.9, chunk=chunk)
    drawn = []

    def recorded():
        for c in stream:
            drawn.append(c)
            yield c

    meta = write_facts(tmp_path / "kg", recorded(), n_ent, n_rel, num_edges=n_edges)
    assert meta["num_edges"] == n_edges
    build_incidence(tmp_path / "kg", chunk=37)
    disk = DiskKG(tmp_path / "kg")
    want = first_distinct(drawn, n_ent, n_rel, n_edges)
    for got, exp in zip((disk.heads, disk.rels, disk.tails), want):
        np.testing.assert_array_equal(got, exp)
    mem = Incidence(KG.from_ids(*want, [f"e{i}" for i in range(n_ent)], [f"r{i}" for i in range(n_rel)]))
    arrays = disk.incidence_arrays()
    for name in kg_disk.INCIDENCE_FILES:
        np.testing.assert_array_equal(arrays[name], getattr(mem, name), err_msg=name)
        assert arrays[name].dtype == getattr(mem, name).dtype, name
    assert disk.meta["max_degree"] == int(np.diff(mem.indptr).max())


def test_search_over_the_memory_mapped_incidence_equals_in_memory(tmp_path, small_passes):
    n_ent, n_rel = 80, 4
    write_facts(tmp_path / "kg", synthetic_fact_chunks(n_ent, n_rel, seed=3, chunk=100), n_ent, n_rel, num_edges=600)
    build_incidence(tmp_path / "kg", chunk=50)
    disk = DiskKG(tmp_path / "kg")
    on_disk = Incidence.from_arrays(*disk.incidence_arrays().values(), disk.num_relations)
    in_memory = Incidence(KG.from_ids(disk.heads, disk.rels, disk.tails, [f"e{i}" for i in range(n_ent)],
                                      [f"r{i}" for i in range(n_rel)]))
    rng = np.random.default_rng(0)
    pattern = Pattern.from_triples([("e1", "p", "UNKNOWN a 1"), ("UNKNOWN a 1", "q", "UNKNOWN b 2")])
    for _ in range(5):
        cand = Candidates.from_distances(pattern, {0: rng.random(n_ent)}, rng.random((2, n_rel)), 8, 3)
        for config in (GSDConfig(top_k=5, time_limit_s=None), GSDConfig(top_k=3, injective=True, time_limit_s=None)):
            a, b = search_topk(on_disk, pattern, cand, config), search_topk(in_memory, pattern, cand, config)
            assert [(s.gsd, s.nodes, s.edges) for s in a.subgraphs] == [(s.gsd, s.nodes, s.edges) for s in b.subgraphs]
            assert a.subgraphs


def test_a_finished_stage_is_not_redone_and_bad_ids_are_refused(tmp_path):
    meta = write_facts(tmp_path / "kg", [(np.array([0, 1, 1]), np.array([0, 0, 0]), np.array([1, 2, 2]))], 3, 1)
    assert meta["num_edges"] == 2  # the repeated fact counts once
    again = write_facts(tmp_path / "kg", [(np.array([2]), np.array([0]), np.array([0]))], 3, 1)
    assert again["num_edges"] == 2  # done already: the new chunks are not read
    with pytest.raises(ConfigError, match="write_facts first"):
        build_incidence(tmp_path / "empty")
    with pytest.raises(ConfigError, match="finished KG build"):
        DiskKG(tmp_path / "kg")  # facts only, no incidence yet
    with pytest.raises(ConfigError, match=r"tail ids must lie in \[0, 3\)"):
        write_facts(tmp_path / "bad", [(np.array([0]), np.array([0]), np.array([7]))], 3, 1)
    with pytest.raises(ConfigError, match="only 2 distinct facts"):
        write_facts(tmp_path / "short", [(np.array([0, 1]), np.array([0, 0]), np.array([1, 2]))], 3, 1, num_edges=5)
