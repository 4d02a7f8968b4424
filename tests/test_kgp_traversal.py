"""KGP traversal: seeds, next-evidence ranking of neighbours, budget, branching, modes, variants."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kgrag_utils.errors import ConfigError
from kgrag_utils.methods.kgp.stages.traversal import Evidence, flat_retrieve, path_order, traverse
from kgrag_utils.methods.kgp import KGPConfig
from kgrag_utils.methods.kgp.stages.graphs import PassageGraph
from kgrag_utils.methods.kgp.stages.similarity import SetIndex

# a bridge question: the seed names "Alf Clausen"; only the agent's evidence leads to his birth
TEXTS = [
    "The Simpsons theme music is arranged by Alf Clausen today",        # 0 seed (matches the question)
    "Alf Clausen was born in Minnesota in 1941",                        # 1 the evidence we need
    "Danny Elfman composed the original Simpsons theme music",          # 2 a neighbour that matches the question
    "Minnesota is a state in the upper Midwest",                        # 3 neighbour of 1 (depth 2)
    "Springfield is a fictional town of the Simpsons theme",            # 4 neighbour of 0
    "Unrelated passage about volcanoes and lava",                       # 5
    "Another passage about glaciers and ice",                           # 6
    "Lakes of Minnesota and their fish",                                # 7 neighbour of 3 (depth 3)
]
EDGES = [(0, 1), (0, 2), (0, 4), (1, 3), (3, 7), (5, 6)]
QUESTION = "Who arranges the Simpsons theme music and when was he born?"


def _graph(n=len(TEXTS), edges=EDGES) -> PassageGraph:
    r = [a for a, b in edges] + [b for a, b in edges]
    c = [b for a, b in edges] + [a for a, b in edges]
    adj = sp.csr_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(n, n))
    return PassageGraph(kind="hand", adj=adj)


def _agent(answers: dict[int, str]):
    calls = []

    def agent(question, paths):
        calls.append([tuple(p) for p in paths])
        return [Evidence(text=answers.get(p[-1], question)) for p in paths]

    agent.calls = calls
    return agent


def _cfg(**kw) -> KGPConfig:
    return KGPConfig(**{"traversal": "llm", "graph": "tfidf", "budget": 3, "branching": 1, "n_seeds": 1, **kw})


def test_evidence_not_the_question_picks_the_bridge_neighbour():
    index = SetIndex(TEXTS)
    by_question = traverse(QUESTION, index, _graph(), _cfg(budget=2))
    assert by_question.seeds == [0] and by_question.ranked == [0, 2]  # question-only ranking: Danny Elfman
    agent = _agent({0: "Alf Clausen birth year born"})
    by_agent = traverse(QUESTION, index, _graph(), _cfg(budget=2), agent)
    assert by_agent.ranked == [0, 1]
    assert by_agent.hops[0]["query"] == "Alf Clausen birth year born" and by_agent.hops[0]["chosen"] == [1]
    assert agent.calls == [[(0,)]]


def test_multi_round_goes_deeper_than_one_hop():
    index = SetIndex(TEXTS)
    agent = _agent({0: "Alf Clausen born", 1: "Minnesota state", 3: "Minnesota lakes fish"})
    multi = traverse(QUESTION, index, _graph(), _cfg(budget=4), agent)
    assert multi.ranked == [0, 1, 3, 7]
    assert multi.paths()[-1] == [0, 1, 3, 7]
    one = traverse(QUESTION, index, _graph(), _cfg(budget=4, mode="onehop", reseed=False), agent)
    assert one.ranked == [0, 1]  # only the seed is expanded; no reseeding -> stops short of the budget


def test_budget_and_branching_are_respected_without_duplicates():
    index = SetIndex(TEXTS)
    res = traverse(QUESTION, index, _graph(), _cfg(budget=5, branching=3, n_seeds=1))
    assert len(res.ranked) == 5 and len(set(res.ranked)) == 5
    assert len(res.hops[0]["chosen"]) == 3  # the seed has exactly three neighbours
    assert set(res.hops[0]["chosen"]) == {1, 2, 4}


def test_default_seed_count_expands_every_seed_once():
    cfg = KGPConfig(budget=30, branching=3)
    assert cfg.seeds_count == 7
    assert KGPConfig(budget=30, branching=1).seeds_count == 15
    assert KGPConfig(budget=30, branching=3, n_seeds=10).seeds_count == 10


def test_reseed_continues_from_the_next_tfidf_passage_when_the_queue_runs_dry():
    index = SetIndex(TEXTS)
    empty = _graph(edges=[])
    res = traverse(QUESTION, index, empty, _cfg(budget=4))
    assert len(res.ranked) == 4 and res.n_reseeds == 3
    flat = flat_retrieve(index, QUESTION, "tfidf", 4)
    assert res.ranked == flat.ranked  # with no edges, reseeding is TF-IDF order
    stop = traverse(QUESTION, index, empty, _cfg(budget=4, reseed=False))
    assert stop.ranked == [0]


def test_agent_is_not_asked_about_dead_ends():
    index = SetIndex(TEXTS)
    agent = _agent({})
    traverse(QUESTION, index, _graph(edges=[]), _cfg(budget=3), agent)
    assert agent.calls == []


def test_no_graph_variant_considers_every_unvisited_passage():
    index = SetIndex(TEXTS)
    agent = _agent({0: "volcanoes lava"})
    res = traverse(QUESTION, index, None, _cfg(budget=2, traversal="nograph"), agent)
    assert res.ranked == [0, 5]  # passage 5 is not a neighbour of the seed


def test_embedding_similarity_ranks_with_the_encoder():
    def encode(texts):
        # a toy encoder: one dimension per keyword
        keys = ["clausen", "elfman", "minnesota", "volcano"]
        v = np.array([[float(k in t.lower()) for k in keys] + [0.1] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    index = SetIndex(TEXTS, encode=encode)
    agent = _agent({0: "elfman"})
    res = traverse(QUESTION, index, _graph(), _cfg(budget=2, similarity="embedding"), agent)
    assert res.ranked == [0, 2]
    knn = flat_retrieve(index, "minnesota", "knn", 3)
    assert set(knn.ranked) == {1, 3, 7}


def test_path_order_groups_descendants_under_their_seed():
    parent = {0: None, 5: None, 1: 0, 2: 0, 6: 5, 3: 1}
    assert path_order([0, 5, 1, 2, 6, 3], parent) == [0, 1, 3, 2, 5, 6]
    index = SetIndex(TEXTS)
    res = traverse(QUESTION, index, _graph(), _cfg(budget=4, n_seeds=2, branching=1, rank_order="path"))
    assert res.ranked[0] == res.seeds[0] and res.parent[res.ranked[1]] == res.seeds[0]


def test_config_rejects_unknown_values():
    with pytest.raises(ConfigError):
        KGPConfig(traversal="dfs")
    with pytest.raises(ConfigError):
        KGPConfig(budget=0)
    with pytest.raises(ConfigError):
        KGPConfig(traversal="llm", graph="none")
    with pytest.raises(ConfigError):
        KGPConfig().replace(branchingfactor=2)
    assert KGPConfig.from_params({"budget": 5, "dataset": "x"}).budget == 5
