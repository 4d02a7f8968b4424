"""The pieces of SimGRAG retrieval at scale, on small inputs: structured synthetic vectors, the
compressed FAISS index (saved, resumed, memory-mapped), the exact streaming search, and
ScaleRetriever over a memory-mapped on-disk KG, which must equal GSDRetriever when it is given the
exact nearest entities."""

from __future__ import annotations

import numpy as np
import pytest

from kgrag_utils.compressed_index import CompressedIndex, build_compressed_index, exact_topk
from kgrag_utils.errors import ConfigError
from kgrag_utils.kg import KG
from kgrag_utils.kg_disk import DiskKG, build_incidence, write_facts
from kgrag_utils.methods.simgrag.stages.gsd_enumerate import GSDConfig, Incidence
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDRetriever, alias_rows, relation_distances
from kgrag_utils.methods.simgrag.stages.pattern import Pattern
from kgrag_utils.methods.simgrag.stages.scale_retriever import ScaleRetriever
from kgrag_utils.synthetic import synthetic_fact_chunks
from kgrag_utils.synthetic_vectors import StructuredVectors

DIM = 32


def test_structured_vectors_are_a_pure_function_of_the_id_with_type_and_word_structure():
    sv = StructuredVectors(5000, dim=DIM, n_types=4, n_words=300, seed=1)
    ids = np.arange(5000)
    v = sv.rows(ids)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(sv.rows([17, 3, 17]), v[[17, 3, 17]])  # any order, any time
    assert not np.array_equal(StructuredVectors(5000, dim=DIM, n_types=4, n_words=300, seed=2).rows([3]), v[[3]])
    types = sv.type_of(ids)
    sims = v[:500] @ v[:500].T
    same = types[:500, None] == types[None, :500]
    off = ~np.eye(500, dtype=bool)
    assert sims[same & off].mean() > sims[~same].mean() + 0.1  # a type is a cluster
    words, _ = sv.words_of(ids[:500])
    share = (words[:, None, :2, None] == words[None, :, None, :2]).any(axis=(2, 3)) & same & off
    assert sims[share].mean() > sims[same & off & ~share].mean() + 0.1  # shared words share directions
    with pytest.raises(ConfigError, match="ids must lie"):
        sv.rows([5000])


def test_exact_topk_equals_brute_force():
    sv = StructuredVectors(3000, dim=DIM, seed=0)
    q = sv.query_rows([5, 99, 2999], 0.3, np.random.default_rng(0))
    got = exact_topk(sv.rows, 3000, q, 7, chunk=256)
    want = np.argsort(-(q @ sv.rows(np.arange(3000)).T), axis=1, kind="stable")[:, :7]
    np.testing.assert_array_equal(got, want)


def test_compressed_index_resumes_and_opens_memory_mapped(tmp_path):
    sv = StructuredVectors(4000, dim=DIM, n_types=8, n_words=500, seed=0)
    calls = {"n": 0}

    def dying_rows(ids):
        calls["n"] += 1
        if calls["n"] == 4:  # train + 2 chunks, then the build dies
            raise KeyboardInterrupt
        return sv.rows(ids)

    kw = dict(count=4000, dim=DIM, nlist=16, m=8, train_size=3000, chunk=1000, checkpoint_every=1000, seed=0,
              threads=1, opq_iterations=2)
    with pytest.raises(KeyboardInterrupt):
        build_compressed_index(tmp_path / "a.faiss", dying_rows, **kw)
    meta = build_compressed_index(tmp_path / "a.faiss", sv.rows, **kw)  # resumes after the checkpoint
    assert meta["added"] == 4000 and meta["done"] and meta["factory"] == "OPQ8_32,IVF16_HNSW32,PQ8"
    build_compressed_index(tmp_path / "b.faiss", sv.rows, **kw)  # uninterrupted
    q = sv.query_rows(np.arange(0, 4000, 40), 0.2, np.random.default_rng(3))
    a, b = CompressedIndex(tmp_path / "a.faiss", nprobe=4), CompressedIndex(tmp_path / "b.faiss", nprobe=4, mmap=False)
    assert len(a) == 4000
    np.testing.assert_array_equal(a.search(q, 10)[1], b.search(q, 10)[1])
    found = a.search(q, 20)[1]
    assert np.mean([x in row for x, row in zip(range(0, 4000, 40), found)]) > 0.9
    with pytest.raises(ConfigError, match="not a finished compressed index"):
        CompressedIndex(tmp_path / "missing.faiss")


class _Exact:
    def __init__(self, rows, count):
        self.rows, self.count = rows, count

    def search(self, queries, k):
        return None, exact_topk(self.rows, self.count, queries, k)


@pytest.mark.parametrize("with_aliases", [False, True])
def test_scale_retriever_over_the_disk_kg_equals_gsd_retriever_given_exact_neighbours(tmp_path, with_aliases):
    """Also with relation aliases (SimGRAG's relation_aliases): alias rows and their owners, as GSDRetriever holds them."""
    n_ent, n_rel = 400, 12
    write_facts(tmp_path / "kg", synthetic_fact_chunks(n_ent, n_rel, seed=4, chunk=500), n_ent, n_rel, num_edges=3000)
    build_incidence(tmp_path / "kg")
    disk = DiskKG(tmp_path / "kg")
    inc = Incidence.from_arrays(*disk.incidence_arrays().values(), disk.num_relations)
    ent = StructuredVectors(n_ent, dim=DIM, n_types=5, n_words=100, seed=0)
    rel = StructuredVectors(n_rel, dim=DIM, n_types=3, n_words=20, seed=1)
    kg = KG.from_ids(disk.heads, disk.rels, disk.tails, [f"e{i}" for i in range(n_ent)], [f"r{i}" for i in range(n_rel)])
    arng = np.random.default_rng(1)
    owners_of = arng.integers(n_rel, size=10)  # ten aliases, each near another relation's vector
    vectors = dict(zip((f"alias {i}" for i in range(10)), rel.query_rows(arng.integers(n_rel, size=10), 0.3, arng)))
    aliases = {f"r{r}": [f"alias {i}" for i in np.flatnonzero(owners_of == r)] for r in set(owners_of.tolist())}
    encode = lambda texts: np.vstack([vectors[t] for t in texts])  # noqa: E731
    flat = GSDRetriever(kg, ent.rows(np.arange(n_ent)), rel.rows(np.arange(n_rel)), encode=encode, index_kind="flat")
    rows, owners = rel.rows(np.arange(n_rel)), None
    if with_aliases:
        flat.set_relation_aliases(aliases)
        rows, owners = alias_rows(kg.relation_names, rel.rows(np.arange(n_rel)), aliases, encode)
    scale = ScaleRetriever(inc, _Exact(ent.rows, n_ent), ent.rows, rows, rerank=2, relation_owners=owners)
    rng = np.random.default_rng(0)
    config = GSDConfig(top_k=3, entity_topk=8, relation_topk=4, time_limit_s=None)
    checked = moved = 0
    for start in rng.integers(n_ent, size=12).tolist():
        pattern = Pattern.from_triples([(f"e{start}", "p", "UNKNOWN a 1"), ("UNKNOWN a 1", "q", "UNKNOWN b 2")])
        node = ent.query_rows([start], 0.3, rng)
        rels = rel.query_rows(rng.integers(n_rel, size=2), 0.3, rng)
        cand = scale.candidates(pattern, config, node, rels)
        a = scale.search(pattern, config, cand)
        b = flat.search(pattern, config, flat.candidates(pattern, config, node, rels))
        assert [(round(s.gsd, 9), s.nodes, s.edges) for s in a.subgraphs] == \
            [(round(s.gsd, 9), s.nodes, s.edges) for s in b.subgraphs]
        checked += bool(a.subgraphs)
        names_only = relation_distances(rels, rel.rows(np.arange(n_rel)).astype(np.float64), config.relation_topk)
        moved += not np.array_equal(cand.rel_dist, names_only)
    assert checked >= 6
    assert bool(moved) == with_aliases  # the aliases do change relation distances, and only with them
