"""The vector-rerank notebook: its parameter defaults are the package's, and it runs end to end on the sample."""

from __future__ import annotations

import dataclasses

import pytest

from kgrag_utils import settings
from kgrag_utils.methods.vector_rerank import VARIANTS, VectorRerankConfig
from kgrag_utils.records import read_run
from kgrag_utils.runner import notebook_parameters, run_notebook

NOTEBOOK = "03_vector_rerank.ipynb"


def test_notebook_defaults_equal_the_config_defaults():
    params = notebook_parameters(NOTEBOOK)
    defaults = VectorRerankConfig().to_dict()
    assert {k: params[k] for k in defaults} == defaults
    assert set(params) - set(defaults) == {"example", "run_name"}
    assert params["run_name"] == ""
    assert [f.name for f in dataclasses.fields(VectorRerankConfig)] == list(defaults)


@pytest.mark.slow
def test_notebook_runs_on_the_sample_with_the_fake_llm():
    # "fake" answers "" to everything: entity extraction falls back to lexical seeds, every rerank fails,
    # which exercises the failure path end to end (never a source of reported numbers).
    outcome = run_notebook(NOTEBOOK, {"llm_preset": "fake", "limit": 3, "degree": 2}, run_name="vr-notebook-smoke")
    assert outcome.status == "ok", outcome.error
    run = read_run(settings.results_dir() / "vr-notebook-smoke")
    summary = run["summary"]
    assert set(summary["variants"]) == set(VARIANTS) and summary["n"] == 3
    assert summary["variants"]["rerank"]["n_failed"] == 3 and summary["variants"]["rerank"]["recall@5"] == 0.0
    assert summary["variants"]["rerank-padded"]["recall@5"] == summary["variants"]["naive"]["recall@5"]
    assert summary["variants"]["rerank-padded"]["n_rerank_failed"] == 3 and summary["variants"]["rerank-filled"]["n_failed"] == 0
    assert summary["rerank_graph"]["entity_sources"] == {"lexical": 3}
    figs = settings.figures_dir()
    for name in ("vector_rerank_worked_example", "vector_rerank_recall_at_k", "vector_rerank_expansion_vs_degree"):
        assert (figs / f"{name}.png").exists()
