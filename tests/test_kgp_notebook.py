"""The KGP notebook: its parameter defaults are KGPConfig's, and it runs through the batch runner."""

from __future__ import annotations

import json

import pytest
from test_course import assert_solutions_ran

from kgrag_utils import runner, settings
from kgrag_utils.methods import figure_name

NOTEBOOK = "04_kgp.ipynb"


def test_notebook_is_committed_without_outputs():
    nb = json.loads((settings.notebooks_dir() / NOTEBOOK).read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    first = next(c for c in code if "install" not in c["metadata"].get("tags", []))  # the Colab install cell comes first
    assert "parameters" in first["metadata"].get("tags", [])


@pytest.mark.slow
def test_notebook_runs_on_the_sample_with_the_fake_llm():
    out = runner.run_notebook(NOTEBOOK, {"limit": 2, "llm_preset": "fake", "sweep_limit": 2,
                                         "variants": ["tfidf", "nollm"], "set_passages": 40},
                              run_name="kgp-nb-test", grid="test", timeout=900)
    assert out.status == "ok", out.error
    assert_solutions_ran(out.output)  # the exercises at the end ran too
    assert out.summary["n"] == 2 and out.summary["n_failed"] == 0
    assert 0.0 <= out.summary["recall@30"] <= 1.0
    run = json.loads((settings.results_dir() / "kgp-nb-test" / "run.json").read_text())
    assert set(run["variants"]) >= {"tfidf", "entity/nollm"} and run["branching_sweep"]
    for name in ("stage_errors", "recall_curves"):  # figure names carry the dataset and the variant
        fig = figure_name("kgp", "sample-passages", name, "entity-llm", run="kgp-nb-test")
        assert (settings.figures_dir() / f"{fig}.png").exists(), fig


@pytest.mark.slow
def test_notebook_runs_on_the_iirc_fixture_through_the_runner():
    out = runner.run_notebook(NOTEBOOK, {"dataset": "fixture-iirc", "split": "dev", "limit": 2, "llm_preset": "fake",
                                         "sweep_limit": 2, "variants": ["tfidf", "nollm"], "set_passages": 40},
                              run_name="kgp-nb-iirc-test", grid="test", timeout=900)
    assert out.status == "ok", out.error
    assert out.summary["n"] == 2 and out.summary["n_failed"] == 0
    assert 0.0 <= out.summary["recall@30"] <= 1.0 and "f1" in out.summary
    run = json.loads((settings.results_dir() / "kgp-nb-iirc-test" / "run.json").read_text())
    assert run["params"]["dataset"] == "fixture-iirc" and run["params"]["split"] == "dev"
    ex = [json.loads(line) for line in (settings.results_dir() / "kgp-nb-iirc-test" / "examples.jsonl").open()]
    assert len(ex) == 2 and all(r["set"]["page_key"] == "title" for r in ex)
    assert set(run["variants"]) >= {"tfidf", "entity/nollm"} and run["branching_sweep"]
