"""The figures every method's `figures.py` draws under the same name, and the drawing they share.

Each method's figures module defines, for its own records and summaries:

- `scores_table(summary, ...)`: our scores beside the paper's published numbers (a DataFrame);
- `draw_worked_example(...)`: one example drawn in the method's own terms (its graph, chain or traversal);
- `failure_figure(records, title="")`: the questions lost at each of the method's stages.

Figures only one method has (SimGRAG's latencies, KGP's sweeps, compact's gate curve) keep names of their own.
tests/test_structure.py checks that every registered method defines the names in `FIGURE_ROLES`.
"""

from __future__ import annotations

import math
from typing import Mapping

__all__ = ["FIGURE_ROLES", "percent", "stage_loss_figure"]

FIGURE_ROLES = ("scores_table", "draw_worked_example", "failure_figure")


def percent(x) -> float | None:
    """A fraction as a percentage rounded to 0.1, for the score tables; None for a missing or nan value."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(100 * float(x), 1)


def stage_loss_figure(stage_errors: Mapping[str, float], n: int, title: str, what: str = "questions"):
    """One bar per stage: the share of the `n` scored items lost there (a run summary's `stage_errors` and
    `n_scored`); with nothing lost, or nothing scored, a figure that says so in words (never empty axes)."""
    import matplotlib.pyplot as plt

    from ..plotting import empty_state

    lost = {stage: float(count) for stage, count in stage_errors.items() if count}
    if not n or not lost:
        fig, ax = plt.subplots(figsize=(7, 1.8))
        empty_state(ax, f"no errors: no stage lost any of the {n} {what}" if n else f"no {what} scored yet")
        ax.set_title(title)
        return fig
    stages = list(stage_errors)
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(stages) + 1.4))
    shares = [100 * float(stage_errors[s] or 0) / n for s in stages]
    ax.barh(stages, shares, color="#fb9a99")
    for y, (stage, share) in enumerate(zip(stages, shares)):
        ax.annotate(f"{int(stage_errors[stage] or 0)} of {n}", (share, y), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.invert_yaxis()  # the method's stage order, top to bottom
    ax.set_xlim(0, 100)
    ax.set_xlabel(f"share of {what} lost at the stage (%)")
    ax.set_title(title)
    fig.tight_layout()
    return fig
