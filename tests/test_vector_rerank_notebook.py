"""The vector-rerank notebook: its parameter defaults are the package's, and it runs end to end on the sample."""

from __future__ import annotations

import json

import pytest
from test_course import assert_solutions_ran

from kgrag_utils import settings
from kgrag_utils.methods import figure_name
from kgrag_utils.methods.vector_rerank.config import VARIANTS
from kgrag_utils.records import read_run
from kgrag_utils.runner import run_notebook

NOTEBOOK = "03_vector_rerank.ipynb"


@pytest.mark.slow
def test_notebook_runs_on_the_sample_with_the_fake_llm():
    # "fake" answers "" to everything: entity extraction falls back to lexical seeds, every rerank fails,
    # which exercises the failure path end to end (never a source of reported numbers).
    outcome = run_notebook(NOTEBOOK, {"llm_preset": "fake", "limit": 3, "degree": 2}, run_name="vr-notebook-smoke")
    assert outcome.status == "ok", outcome.error
    assert_solutions_ran(outcome.output)  # the exercises at the end ran too
    run = read_run(settings.results_dir() / "vr-notebook-smoke")
    summary = run["summary"]
    assert set(summary["variants"]) == set(VARIANTS) and summary["n"] == 3
    assert summary["variants"]["rerank"]["n_failed"] == 3 and summary["variants"]["rerank"]["recall@5"] == 0.0
    assert summary["variants"]["rerank-padded"]["recall@5"] == summary["variants"]["naive"]["recall@5"]
    assert summary["variants"]["rerank-padded"]["n_rerank_failed"] == 3 and summary["variants"]["rerank-filled"]["n_failed"] == 0
    assert summary["rerank_graph"]["entity_sources"] == {"lexical": 3}
    figs = settings.figures_dir()
    for name in ("worked_example", "recall_at_k", "expansion_vs_degree", "stage_errors"):  # figure names carry the dataset
        assert (figs / f"{figure_name('vector_rerank', 'sample-passages', name, run='vr-notebook-smoke')}.png").exists(), name


@pytest.mark.slow
def test_notebook_runs_on_kg_questions_with_the_fake_llm():
    # KG questions (sample-movies-2hop): the fact index, lexical seeds from the bracketed topic entity; the fake LLM
    # answers "" so every rerank fails and counts as wrong (plumbing only, never a source of reported numbers).
    outcome = run_notebook(NOTEBOOK, {"dataset": "sample-movies-2hop", "llm_preset": "fake", "limit": 3, "degree": 2,
                                      "entity_extraction": "lexical"}, run_name="vr-notebook-kgqa-smoke")
    assert outcome.status == "ok", outcome.error
    run = read_run(settings.results_dir() / "vr-notebook-kgqa-smoke")
    summary, params = run["summary"], run["params"]
    assert params["dataset"] == "sample-movies-2hop" and summary["task"] == "kgqa" and params["llm_preset"] == "fake"
    assert set(summary["variants"]) == {"naive", "expand", "rerank"} and summary["n"] == 3
    rerank = summary["variants"]["rerank"]
    assert rerank["n_failed"] == 3 and rerank["hits@1"] == 0.0 and rerank["containment"] == 0.0
    assert "fact_hit" in summary["variants"]["naive"] and "hits@1" not in summary["variants"]["naive"]
    assert summary["rerank_graph"]["entity_sources"] == {"lexical": 3}
    examples = [json.loads(line) for line in (settings.results_dir() / "vr-notebook-kgqa-smoke" / "examples.jsonl").open()]
    assert len(examples) == 3 and all(e["graph"]["rerank"]["query_entities"] == e["topic_entities"] for e in examples)
    figs = settings.figures_dir()
    for name in ("worked_example", "kgqa_scores", "expansion_vs_degree", "stage_errors"):
        assert (figs / f"{figure_name('vector_rerank', 'sample-movies-2hop', name, run='vr-notebook-kgqa-smoke')}.png").exists(), name
