"""Pieces every view uses: the first table of an example, scalar fields, timings and tokens."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from ..outcome import base_outline
from ..panels import Panel, short

__all__ = ["summary_panel", "dict_table", "text_panel", "chat_text", "error_panel", "scalars", "frame", "dumps_short",
           "outline_of", "keep"]


def frame(rows: Iterable[Mapping[str, Any]], columns: list[str] | None = None):
    import pandas as pd

    return pd.DataFrame(list(rows), columns=columns)


#: how the summary table names record keys (most methods' `answers` are the gold ones; SimGRAG says otherwise)
LABELS = {"answers": "gold answers", "answers_gold": "gold answers", "answer_raw": "raw answer",
          "raw_output": "raw reply", "prediction": "predicted"}


def summary_panel(rec: Mapping, outline_row: Mapping, fields: Iterable[str], labels: Mapping | None = None) -> Panel:
    """The example at a glance: its outline (status, stage, score) and the method's main fields."""
    labels = {**LABELS, **(labels or {})}
    rows = [("id", rec.get("id")), ("status", outline_row["status"]), ("failing stage", outline_row["stage"] or "-"),
            ("score", outline_row["score"])]
    rows += [(labels.get(k, k), short(_plain(rec.get(k)), 300)) for k in fields if k in rec]
    return Panel("Example", "table", table=frame([{"field": k, "value": v} for k, v in rows]))


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return " | ".join(str(v) for v in value)
    return value


def dict_table(title: str, d: Mapping | None, key: str = "name", value: str = "value", note: str = "") -> Panel | None:
    """A {name: number} mapping (timings, tokens) as a two-column table; None when empty."""
    if not isinstance(d, Mapping) or not d:
        return None
    rows = [{key: k, value: round(v, 4) if isinstance(v, float) else v} for k, v in d.items()]
    return Panel(title, "table", table=frame(rows), note=note)


def text_panel(title: str, parts: Iterable[tuple[str, Any]], note: str = "") -> Panel | None:
    """Labelled blocks of text (a prompt, a raw reply); None when every part is empty."""
    blocks = [f"--- {label} ---\n{text}" for label, text in parts if text not in (None, "", [])]
    return Panel(title, "text", text="\n".join(blocks), note=note) if blocks else None


def chat_text(messages: Any, last: int = 1) -> str:
    """The last `last` turns of a chat prompt (or the prompt string itself)."""
    if isinstance(messages, list):
        turns = [m for m in messages if isinstance(m, Mapping)][-last:]
        return "\n".join(f"[{m.get('role')}] {m.get('content')}" for m in turns)
    return "" if messages is None else str(messages)


def error_panel(rec: Mapping) -> Panel | None:
    if not (rec.get("error") or rec.get("traceback")):
        return None
    return Panel("Error", "text", text=f"{rec.get('error', '')}\n\n{rec.get('traceback', '')}".strip())


def scalars(rec: Mapping) -> dict:
    """The record's keys holding a number, a string or a bool (what a generic table can show)."""
    return {k: v for k, v in rec.items() if isinstance(v, (int, float, str, bool)) or v is None}


def dumps_short(value: Any, width: int = 300) -> str:
    try:
        return short(json.dumps(value, ensure_ascii=False), width)
    except (TypeError, ValueError):
        return short(repr(value), width)


def outline_of(rec: Mapping, score: Any, failed: bool, stage: str = "", prediction: Any = "") -> dict:
    return base_outline(rec, score, failed, stage, prediction)


def keep(panels: Iterable[Panel | None]) -> list[Panel]:
    return [p for p in panels if p is not None]
