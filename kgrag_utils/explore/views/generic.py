"""The view of a run whose method has no view of its own: the record's plain fields and the rest as JSON."""

from __future__ import annotations

from typing import Any, Mapping

from ..panels import Panel
from .common import dumps_short, error_panel, frame, keep, outline_of, scalars

STAGES: tuple[str, ...] = ()
_SCORES = ("hits@1", "em", "accuracy", "recall@5")


def outline(rec: Mapping) -> dict:
    score = next((rec[k] for k in _SCORES if k in rec), None)
    return outline_of(rec, score, bool(rec.get("failed")), "", rec.get("prediction") or rec.get("answer") or "")


def signature(rec: Mapping) -> list[tuple[str, Any]]:
    return [("record", {k: v for k, v in rec.items() if k not in ("timings", "tokens")})]


def panels(rec: Mapping) -> list[Panel]:
    plain = scalars(rec)
    rest = [{"field": k, "value": dumps_short(v)} for k, v in rec.items() if k not in plain]
    return keep([
        Panel("Fields", "table", table=frame([{"field": k, "value": v} for k, v in plain.items()])),
        error_panel(rec),
        Panel("Structured fields", "table", table=frame(rest)) if rest else None,
    ])
