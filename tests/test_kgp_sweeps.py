"""KGP sweep data (density vs recall, branching vs recall) on the sample."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from kgrag_utils.datasets import load_dataset
from kgrag_utils.methods.kgp import KGP, KGPConfig
from kgrag_utils.methods.kgp.stages.graphs import PassageGraph
from kgrag_utils.methods.kgp.stages.docsets import GoldUnits
from kgrag_utils.methods.kgp.stages.sweeps import branching_sweep, density_sweep, graph_gold_stats


@pytest.fixture(scope="module")
def sample():
    return load_dataset("sample-passages", split="all", limit=4, seed=1)


def test_graph_gold_stats_on_a_known_graph():
    # passages 0,1 = gold doc A; 2 = gold doc B; 3 = other. Edges 1-2 and 2-3.
    adj = sp.csr_matrix(np.array([[0, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]], dtype=np.int8))
    gold = GoldUnits(["A", "B"], [], ["A", "B"], [np.array([0, 1]), np.array([2])], "document")
    st = graph_gold_stats(PassageGraph(kind="x", adj=adj), gold)
    assert st["sf_pair_recall"] == 1.0
    assert st["sf_neighbour_precision"] == pytest.approx(2 / 3)  # neighbours of 0,1,2: {2}, {1, 3}
    one = GoldUnits(["A"], [], ["A"], [np.array([0])], "document")
    assert math.isnan(graph_gold_stats(PassageGraph(kind="x", adj=adj), one)["sf_pair_recall"])


def test_density_grows_with_keywords_and_rows_are_complete(sample):
    kgp = KGP.prepare(KGPConfig(traversal="nollm", reader=False, set_passages=40, keyword_max_df=0.5), sample)
    rows = density_sweep(kgp, sample.items, "tfidf", values=[1, 3, 10])
    assert [r["value"] for r in rows] == [1, 3, 10] and all(r["n"] == 4 for r in rows)
    dens = [r["density"] for r in rows]
    assert dens[0] <= dens[1] <= dens[2] and dens[2] > dens[0]
    for r in rows:
        assert {"avg_degree", "sf_pair_recall", "sf_neighbour_precision", "recall@30", "sf_em@30"} <= set(r)


def test_branching_sweep_trades_seeds_for_branches(sample):
    kgp = KGP.prepare(KGPConfig(traversal="nollm", graph="tfidf", reader=False, budget=12), sample)
    rows = branching_sweep(kgp, sample.items, values=[1, 2, 5])
    assert [r["n_seeds"] for r in rows] == [6, 4, 2]
    assert kgp.config.branching == 3  # the sweep restores the config
    assert all(0 <= r["recall@10"] <= 1 for r in rows)
