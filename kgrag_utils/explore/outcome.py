"""One example's outcome in the explorer's vocabulary, whatever the method.

- `status`: "ok" (the headline strict metric is met), "wrong" (it is not), "failed" (the method could
  not produce an answer: no usable pattern, an unusable rerank reply, an empty reader reply) or "error"
  (the example raised; its record holds the error and a traceback); "not scored" (no gold answers: a question of
  your own, `methods.summary.mark_unscored`).
- `stage`: where the method lost the example, in the method's own terms (the same attribution as the
  method's stage errors: SimGRAG's pattern / retrieval / generation, compact's chain / derivation / reading,
  ...); empty when it is correct.
- `correct`, `score`: the headline strict metric of the method (its `MethodSpec.headline`): Hits@1, EM,
  or for retrieval without a reader recall@5, where "correct" means every gold passage retrieved. It is
  read from the record's own `scores` (what the run summary averages) where the record has them; older
  records are read by the view.
Each method's rules live in its view (`views/<method>.py: outline`); an unknown method gets the generic one.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["STATUSES", "OUTLINE_COLUMNS", "outline", "base_outline", "headline_value"]

STATUSES = ("ok", "wrong", "failed", "error", "not scored")
OUTLINE_COLUMNS = ["position", "id", "question", "status", "stage", "correct", "score", "prediction"]


def base_outline(rec: Mapping[str, Any], score: Any, failed: bool, stage: str = "", prediction: Any = "") -> dict:
    """The outline row from a method's reading of its record (`score` a number in [0, 1] or None)."""
    from .panels import short

    value = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None
    correct = value is not None and value >= 1.0 - 1e-9
    if rec.get("error") or rec.get("traceback"):
        status, stage = "error", "raised an error"
    elif rec.get("scored") is False:  # no gold answers (a question of your own): not right nor wrong, maybe failed
        (status, stage), correct = (("failed", stage) if failed else ("not scored", "")), False
    elif correct:
        status, stage = "ok", ""
    else:
        status = "failed" if failed else "wrong"
    if isinstance(prediction, (list, tuple)):
        prediction = " | ".join(str(p) for p in prediction)
    return {"position": -1, "id": rec.get("id"), "question": short(rec.get("question") or rec.get("query") or "", 200),
            "status": status, "stage": stage if status != "ok" else "", "correct": correct, "score": value,
            "prediction": short(prediction, 120)}


def outline(method: str, rec: Mapping[str, Any]) -> dict:
    """The outline row of one record of a run of `method`: the view's reading, scored by the protocol where
    the record carries its scores (`scores`: {variant: {metric: value}}, methods/summary.py)."""
    from .views import view_for

    try:
        row = view_for(method).outline(rec)
        value = headline_value(method, rec)
    except Exception as exc:  # an odd record: listed with the failure as its stage, never dropped or fatal
        row = view_for("generic").outline(rec)
        row["stage"] = f"the view failed: {type(exc).__name__}"
        value = None
    if value is None or row["status"] == "error":
        return row
    again = base_outline(rec, value[2], row["status"] == "failed", row["stage"], row["prediction"])
    return {**row, **{k: again[k] for k in ("status", "stage", "correct", "score")}}


def headline_value(method: str, rec: Mapping[str, Any]) -> tuple[str, str, Any] | None:
    """(variant, metric, value) of the method's headline strict metric (`MethodSpec.headline`) in the
    record's own scores; None for a record without scores or a method the registry does not know."""
    scores = rec.get("scores")
    if not isinstance(scores, Mapping) or not scores:
        return None
    from ..errors import ConfigError
    from ..methods.registry import get_method

    try:
        spec = get_method(method)
    except ConfigError:
        return None
    hl = spec.headline
    variant = hl.variant if hl.variant in scores else next(iter(scores))
    values = scores.get(variant) or {}
    if not isinstance(values, Mapping):  # an odd record's scores: no headline value, not a failure
        return None
    for strict, _ in hl.pairs:
        if strict in values:
            return str(variant), strict, values[strict]
    return None
