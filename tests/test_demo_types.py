"""Type coverage of nearest demonstrations (kgrag_utils.demos.cover_types, SimGRAG's demo_types): when the nearest
training questions are all of one type and another type is about as near, one demonstration of it replaces the
farthest. The embedder is a hashed bag of words (tests/stand_ins.py; no model)."""

from __future__ import annotations

import pytest
from stand_ins import HashBOW

from kgrag_utils.datasets import load_dataset
from kgrag_utils.demos import Demo, cover_types
from kgrag_utils.errors import ConfigError


def _ranked(*pairs):
    return [Demo(f"d{i}", score, None) for i, (score, _) in enumerate(pairs)], [t for _, t in pairs]


def test_an_ambiguous_choice_gets_a_second_type_in_place_of_the_farthest():
    ranked, types = _ranked((0.90, "A"), (0.89, "A"), (0.88, "A"), (0.87, "B"), (0.86, "C"))
    assert [d.id for d in cover_types(ranked, 3, types, cover=1)] == ["d0", "d1", "d2"]  # off
    assert [d.id for d in cover_types(ranked, 3, types, cover=2, margin=0.05)] == ["d0", "d1", "d3"]
    assert [d.id for d in cover_types(ranked, 3, types, cover=3, margin=0.05)] == ["d0", "d3", "d4"]
    # the other type is far below the nearest: not ambiguous, nothing replaced
    assert [d.id for d in cover_types(ranked, 3, types, cover=2, margin=0.01)] == ["d0", "d1", "d2"]
    # already two types, or no other type at all
    mixed, mixed_types = _ranked((0.9, "A"), (0.8, "B"), (0.7, "A"))
    assert [d.id for d in cover_types(mixed, 2, mixed_types, cover=2)] == ["d0", "d1"]
    same, same_types = _ranked((0.9, "A"), (0.89, "A"), (0.88, "A"))
    assert [d.id for d in cover_types(same, 2, same_types, cover=2)] == ["d0", "d1"]


def test_the_pool_and_simgrag_choose_with_type_coverage():
    from kgrag_utils.methods.simgrag import SimGRAGConfig
    from kgrag_utils.methods.simgrag.stages.demos import demo_shots, demo_type, pattern_demo_pool

    data = load_dataset("sample-movies-2hop", split="test", limit=6, seed=0)
    pool = pattern_demo_pool(data, HashBOW())
    for q in data.items:
        plain = pool.nearest(q, 4)
        assert pool.nearest(q, 4, type_of=demo_type, cover=1) == plain
        covered = pool.nearest(q, 4, type_of=demo_type, cover=2, margin=2.0)  # every choice counts as ambiguous
        assert len(covered) == 4 and q.qid not in {d.id for d in covered}
        assert len({demo_type(d.item) for d in covered}) >= 2
        assert [d.score for d in covered] == sorted((d.score for d in covered), reverse=True)
        assert covered[0] == plain[0]  # the nearest stays
    shots, scores = demo_shots(pool, data.items[0], 4, "movies", types=2, margin=2.0)
    assert len(shots) == 4 and scores == sorted(scores)  # nearest last
    with pytest.raises(ConfigError, match="demo_types must be >= 1"):
        SimGRAGConfig(demo_types=0)
    assert SimGRAGConfig().demo_types == 1  # off by default
