"""Two runs side by side: the questions whose outcome changed, and at which stage.

For every example id in both runs, its outcome in each (status, failing stage, correct) comes from the
outlines, so comparing two 1,000-question runs reads no record twice. "Diverged at" is the first stage
(in pipeline order: the method's `view.py: signature`) whose output differs between the two records, e.g.
SimGRAG's pattern, compact's chain, KGP's seeds; it is computed for the changed examples only.
"""

from __future__ import annotations

import json
from typing import Any

from .store import RunView
from .views import view_for

__all__ = ["compare_runs", "COMPARE_COLUMNS", "diverged_at", "mark"]

COMPARE_COLUMNS = ["id", "question", "change", "a", "b", "stage a", "stage b", "diverged at", "position a",
                   "position b"]


def mark(status: str) -> str:
    """A status as one symbol for tables: ✓ ok, ✗ wrong, ! failed, ⚠ error."""
    return {"ok": "✓", "wrong": "✗", "failed": "!", "error": "⚠", "not scored": "·"}.get(status, "?")


def _same(x: Any, y: Any) -> bool:
    return json.dumps(x, sort_keys=True, default=str) == json.dumps(y, sort_keys=True, default=str)


def diverged_at(method_a: str, rec_a: dict, method_b: str, rec_b: dict) -> str:
    """The first stage whose output differs ("" when every stage matches; "method" across methods)."""
    if method_a != method_b:
        return "method"
    view = view_for(method_a)
    for (stage, x), (_, y) in zip(view.signature(rec_a), view.signature(rec_b)):
        if not _same(x, y):
            return stage
    return ""


def _by_id(outline):
    """The outline indexed by id: records without an id cannot be paired, an id twice keeps its last row."""
    keyed = outline[outline["id"].map(lambda i: i is not None and i == i)]  # None and NaN pair with nothing
    return keyed.drop_duplicates("id", keep="last").set_index("id", drop=False)


def compare_runs(a: RunView, b: RunView, changed_only: bool = True):
    """One row per example in both runs (only those whose status, stage or correctness changed, by default):
    `change` is "lost" (correct in a, not in b), "gained", or "changed" (e.g. wrong → failed)."""
    import pandas as pd

    oa, ob = _by_id(a.outline), _by_id(b.outline)
    common = [i for i in oa.index if i in ob.index]
    rows = []
    for ex_id in common:
        ra, rb = oa.loc[ex_id], ob.loc[ex_id]
        moved = (ra["status"], ra["stage"], ra["correct"]) != (rb["status"], rb["stage"], rb["correct"])
        if changed_only and not moved:
            continue
        change = "lost" if ra["correct"] and not rb["correct"] else "gained" if rb["correct"] and not ra["correct"] \
            else "changed" if moved else "same"
        where = diverged_at(a.method, a.record(int(ra["position"])), b.method, b.record(int(rb["position"])))
        rows.append({"id": ex_id, "question": ra["question"], "change": change,
                     "a": f"{mark(ra['status'])} {ra['status']}", "b": f"{mark(rb['status'])} {rb['status']}",
                     "stage a": ra["stage"], "stage b": rb["stage"], "diverged at": where or "-",
                     "position a": int(ra["position"]), "position b": int(rb["position"])})
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS)


def comparison_counts(a: RunView, b: RunView, table) -> dict:
    """How many examples the runs share, and how many were lost, gained or changed from a to b."""
    shared = len(set(a.ids) & set(b.ids))
    counts = table["change"].value_counts().to_dict() if len(table) else {}
    return {"a": a.name, "b": b.name, "shared": shared, "only in a": len(a) - shared, "only in b": len(b) - shared,
            **{k: int(counts.get(k, 0)) for k in ("lost", "gained", "changed")}}
