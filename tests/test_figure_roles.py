"""The figures every method names alike (kgrag_utils/methods/figure_roles.py): the shared stage-loss drawing,
and each method's `failure_figure` on the records of a real no-LLM run (tests/cases.py)."""

from __future__ import annotations

import importlib

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from cases import CASES  # noqa: E402
from kgrag_utils.methods import get_method  # noqa: E402
from kgrag_utils.methods.figure_roles import percent, stage_loss_figure  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _bars(fig) -> dict[str, float]:
    fig.canvas.draw()  # the category names are tick labels once drawn
    ax = fig.axes[0]
    return {t.get_text(): p.get_width() for t, p in zip(ax.get_yticklabels(), ax.patches)}


def test_percent_rounds_a_fraction_and_keeps_missing_values_missing():
    assert percent(0.12345) == 12.3 and percent(1) == 100.0
    assert percent(None) is None and percent(float("nan")) is None


def test_stage_loss_bars_are_the_share_of_scored_questions_in_stage_order():
    fig = stage_loss_figure({"chain": 2, "derivation": 0, "reading": 1.0}, 8, "lost")
    assert _bars(fig) == {"chain": 25.0, "derivation": 0.0, "reading": 12.5}
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["2 of 8", "0 of 8", "1 of 8"] and fig.axes[0].get_title() == "lost"


@pytest.mark.parametrize("stages, n, words", [({"chain": 0}, 5, "no errors: no stage lost any of the 5 questions"),
                                              ({}, 5, "no errors"), ({"chain": 3}, 0, "no questions scored yet")])
def test_with_nothing_lost_the_figure_says_so_in_words(stages, n, words):
    fig = stage_loss_figure(stages, n, "t")
    ax = fig.axes[0]
    assert not ax.patches and not ax.axison
    assert any(words in t.get_text() for t in ax.texts)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_method_failure_figure_draws_its_run_summary_stage_errors(name, monkeypatch):
    method, ds = CASES[name].prepared()
    bad = method.item_id(ds.items[0])
    inner = method._run_batch
    monkeypatch.setattr(method, "_run_batch", lambda batch: (_ for _ in ()).throw(RuntimeError("x"))
                        if any(method.item_id(it) == bad for it in batch) else inner(batch))
    records = method.run(ds.items, progress=False)  # one example raises: at least one question is lost
    figures = importlib.import_module(f"kgrag_utils.methods.{name}.figures")
    fig = figures.failure_figure(records, title="t")
    assert fig.axes and fig.axes[0].get_title() == "t"
    if name == "simgrag":  # strict and lenient bars of its own (tests/figure_builders.py draws them)
        return
    summary = get_method(name).summarize(records)
    n = summary["n_scored"]
    assert summary["stage_errors"]["raised an error"] == 1.0
    assert _bars(fig) == pytest.approx({k: 100 * v / n for k, v in summary["stage_errors"].items()})
