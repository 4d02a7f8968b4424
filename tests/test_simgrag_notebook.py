"""notebooks/01_simgrag.ipynb: literal parameters, no committed outputs, and a run through the batch runner."""

from __future__ import annotations

import json

import pytest
from test_course import assert_solutions_ran

from kgrag_utils import settings
from kgrag_utils.methods import figure_name
from kgrag_utils.records import load_examples, read_run
from kgrag_utils.runner import notebook_parameters, run_notebook


def test_notebook_is_committed_clean_with_the_expected_parameters():
    path = settings.notebooks_dir() / "01_simgrag.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    first = next(c for c in code_cells if "install" not in c["metadata"].get("tags", []))  # the Colab install cell comes first
    assert "parameters" in first["metadata"].get("tags", [])
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code_cells)
    params = notebook_parameters(path)
    for name in ("run_name", "dataset", "split", "limit", "llm_preset", "shots", "top_k", "entity_topk", "relation_topk",
                 "pattern_source", "seed"):
        assert name in params, name
    assert params["run_name"] == "" and params["dataset"] == "sample-movies-2hop"
    from kgrag_utils.llm import DEFAULT_CPU_PRESET

    assert params["llm_preset"] == DEFAULT_CPU_PRESET


@pytest.mark.slow
def test_notebook_runs_through_the_runner_with_the_fake_llm():
    outcome = run_notebook("01_simgrag", {"llm_preset": "fake", "limit": 5, "dataset": "sample-movies-2hop"})
    assert outcome.status == "ok", outcome.error
    assert_solutions_ran(outcome.output)  # the exercises at the end ran too
    record = read_run(settings.results_dir() / outcome.run_name)
    assert record["status"] == "ok"
    summary = record["summary"]
    assert summary["n"] == 5 and summary["pattern_parse_rate"] == 1.0 and summary["retrieval_hit_rate"] == 1.0
    examples = load_examples(outcome.run_name)
    assert len(examples) == 5
    for name in ("worked_example", "stage_errors", "latency"):
        assert (settings.figures_dir() / f"{figure_name('simgrag', 'sample-movies-2hop', name, run=outcome.run_name)}.png").is_file()


@pytest.mark.slow
def test_notebook_verifies_factkg_fixture_claims_through_the_runner_with_the_fake_llm():
    outcome = run_notebook("01_simgrag", {"llm_preset": "fake", "dataset": "fixture-factkg", "limit": 0})
    assert outcome.status == "ok", outcome.error
    record = read_run(settings.results_dir() / outcome.run_name)
    assert record["status"] == "ok" and record["params"]["dataset"] == "fixture-factkg"
    summary = record["summary"]
    assert summary["task"] == "verify" and summary["n"] == 4 and summary["pattern_parse_rate"] == 1.0
    examples = load_examples(outcome.run_name).to_dict("records")
    assert len(examples) == 4 and all(e["prediction"] in ("True", "False") for e in examples)
    assert summary["accuracy"] == sum(e["prediction"] == e["answers_gold"][0] for e in examples) / 4
    for name in ("worked_example", "stage_errors", "latency"):
        assert (settings.figures_dir() / f"{figure_name('simgrag', 'fixture-factkg', name, run=outcome.run_name)}.png").is_file()
