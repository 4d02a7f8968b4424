"""SimGRAG runs its questions in the order of their chosen demonstrations (llama.cpp prefix reuse), with unchanged records."""

from __future__ import annotations

from stand_ins import WordsEmbedder
from test_demos import _gold_pattern_llm, movies2, retriever  # noqa: F401 - fixtures

from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
from kgrag_utils.methods.simgrag.stages.demos import pattern_demo_pool


def test_nearest_demos_run_questions_sorted_by_their_demonstrations_and_records_do_not_change(movies2, retriever):
    """run_order puts questions that chose the same demonstrations next to each other (llama.cpp then reuses their
    shared prompt prefix); the records are the same as in the sample's order and come back in the sample's order."""
    items = movies2.items[:12]
    pool = pattern_demo_pool(movies2, WordsEmbedder())
    config = SimGRAGConfig(demos="nearest", shots=3, fixed_shots=2, dataset=movies2.name, batch_size=5)
    seen = {}
    for mode in ("sample", "sorted"):
        method = SimGRAG(config, movies2.kg, retriever, _gold_pattern_llm(movies2), dataset=movies2.name, demo_pool=pool)
        if mode == "sample":
            method.run_order = lambda todo: todo
        order = []
        batch = method._run_batch
        method._run_batch = lambda qs, batch=batch, order=order: (order.extend(q.qid for q in qs), batch(qs))[1]
        records = method.run(items, progress=False)
        assert [r["id"] for r in records] == [q.qid for q in items]
        seen[mode] = (order, {r["id"]: (r["pattern_demos"], r["answers"], r["hits@1"]) for r in records})
    assert seen["sample"][0] == [q.qid for q in items]
    assert seen["sorted"][1] == seen["sample"][1]
    keys = [tuple(pool.items[pool.ids.index(i)].question for i in seen["sorted"][1][qid][0]) for qid in seen["sorted"][0]]
    assert keys == sorted(keys) and seen["sorted"][0] != seen["sample"][0]
    fixed = SimGRAG(SimGRAGConfig(shots=3), movies2.kg, retriever, _gold_pattern_llm(movies2), dataset=movies2.name)
    assert fixed.run_order(list(items)) == list(items)  # fixed shots: nothing to share beyond the prefix
