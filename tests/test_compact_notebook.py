"""Compact relation selection - the notebook: its defaults are the package's, and it runs end to end
(through the batch runner, on the sample data, with the fake LLM) and writes an ok run record."""

from __future__ import annotations

import json

import pytest
from test_course import assert_solutions_ran

from kgrag_utils import records, runner, settings
from kgrag_utils.methods import figure_name

NOTEBOOK = "02_compact_relations.ipynb"


def test_notebook_is_committed_without_outputs():
    nb = json.loads((settings.repo_root() / "notebooks" / NOTEBOOK).read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["sample-movies-3hop", "sample-kinship"])
def test_notebook_runs_on_the_sample_with_the_fake_llm(dataset):
    out = runner.run_notebook(NOTEBOOK, {"dataset": dataset, "limit": 4, "llm_preset": "fake"}, grid="compact-test")
    assert out.status == "ok", out.error
    assert_solutions_ran(out.output)  # the exercises at the end ran too
    rec = records.read_run(settings.results_dir() / out.run_name)
    assert rec["status"] == "ok" and rec["summary"]["n"] == 4
    assert {"derived_hits@1", "gate_coverage", "llm_compact", "llm_topk"} <= set(rec["summary"])
    ex = records.load_examples(out.run_name)
    assert len(ex) == 4 and {"prompt_compact", "prompt_topk", "gate", "derived_answers"} <= set(ex.columns)
    for ds, what in ((dataset, "worked_example"), ("sample-kinship", "kinship_example"), (dataset, "results"),
                     (dataset, "stage_errors")):
        fig = figure_name("compact", ds, what, run=out.run_name)  # figure names carry the dataset and the run
        assert (settings.figures_dir() / f"{fig}.png").exists(), fig


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["fixture-webqsp", "fixture-cwq"])
def test_notebook_runs_on_the_rog_fixtures_through_the_runner(dataset):
    """WebQSP / CWQ in RoG's released format: per-question subgraphs, the kNN vote over the training
    split's shortest chains, both contexts read by the fake LLM, EM recorded (as strict Hits@1)."""
    from kgrag_utils.datasets import load_dataset

    n = len(load_dataset(dataset, split="test").items)
    out = runner.run_notebook(NOTEBOOK, {"dataset": dataset, "limit": 10, "llm_preset": "fake"}, grid="compact-test")
    assert out.status == "ok", out.error
    rec = records.read_run(settings.results_dir() / out.run_name)
    s = rec["summary"]
    assert rec["status"] == "ok" and s["n"] == n
    assert {"llm_compact", "llm_topk", "gold_chain_seen_rate", "derivable_rate"} <= set(s)
    details = rec["method_details"]
    assert details["knowledge"]["name"] == "knn" and details["tuning"]["kg"]["kind"] == "per-question subgraphs"
    ex = records.load_examples(out.run_name)
    assert len(ex) == n and {"subgraph_facts", "topk_facts", "hits@1_compact", "hits@1_topk"} <= set(ex.columns)
    assert (ex["topk_n_facts"] <= ex["subgraph_facts"]).all()


@pytest.mark.slow
def test_notebook_scores_chain_prediction_alone_through_the_runner():
    """evaluation="chains" (issue 48): no KG, no LLM; the knowledge learns from another dataset's training split
    (train_dataset) and the run record holds the chain metrics as score rows."""
    from kgrag_utils.methods.compact.stages.chain_eval import CHAIN_VARIANT

    out = runner.run_notebook(NOTEBOOK, {"dataset": "fixture-cwq-paths", "limit": 0, "evaluation": "chains",
                                         "train_dataset": "fixture-webqsp-paths", "knowledge": "knn", "reader": False},
                              grid="compact-test")
    assert out.status == "ok", out.error
    rec = records.read_run(settings.results_dir() / out.run_name)
    s = rec["summary"]
    assert s["n"] == 2 and s["trained_on"] == "fixture-webqsp-paths train" and s["knowledge"] == "knn"
    assert {r["variant"] for r in s["rows"]} == {CHAIN_VARIANT} and "any_gold_hit" in s
    ex = records.load_examples(out.run_name)
    assert len(ex) == 2 and {"gold_chains", "chain", "proposals", "scores"} <= set(ex.columns)
