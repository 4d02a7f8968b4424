"""Per-example isolation: an example that raises becomes its failure record, and the run goes on.

Below both the method base class (`base.Method.run` isolates every batch) and the shared summary
(`summary.py` counts these records: `is_error_record`).
"""

from __future__ import annotations

import traceback
from typing import Any, Callable, Mapping, Sequence

__all__ = ["error_record", "is_error_record", "isolated"]


def error_record(item_id: Any, exc: BaseException, **fields: Any) -> dict:
    """The record of an example that raised: its id, `failed`, the error and a short traceback."""
    return {"id": item_id, **fields, "failed": True, "error": f"{type(exc).__name__}: {exc}",
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=6))}


def is_error_record(record: Mapping) -> bool:
    """True for a record that holds only an example's error (no method output)."""
    return bool(record.get("error")) and bool(record.get("failed"))


def isolated(batch: Sequence, process: Callable[[Sequence], list[dict]], item_id: Callable[[Any], Any],
             **error_fields: Callable[[Any], Any]) -> list[dict]:
    """`process(batch)`; when it raises, each item alone, an item that raises becoming `error_record`.

    `error_fields` are name -> function(item) of fields every error record should also carry (so
    that summaries can still group it, e.g. `answerable`). Interrupts are never caught.
    """
    try:
        return list(process(batch))
    except Exception as exc:  # noqa: BLE001 - a batch of one is recorded; a larger one is retried item by item
        if len(batch) == 1:
            return [error_record(item_id(batch[0]), exc, **{k: f(batch[0]) for k, f in error_fields.items()})]
    out: list[dict] = []
    for item in batch:
        try:
            out.extend(process([item]))
        except Exception as exc:  # noqa: BLE001 - recorded, counted as failed, never dropped
            out.append(error_record(item_id(item), exc, **{k: f(item) for k, f in error_fields.items()}))
    return out
