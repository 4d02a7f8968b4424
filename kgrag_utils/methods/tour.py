"""The quickstart's records (notebook 00: an LLM reads the facts on the gold chain): summarize and scores.

The quickstart is a tour of the shared layers, not a method; its evaluation loop is an oracle-context
reader, scored like the methods so that the report can put it beside them.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from .. import metrics
from ..metrics import CONTAINMENT, HITS1
from .scoring import cost, rows, score_row

__all__ = ["summarize", "scores", "stage_errors", "cost_of", "reader_record", "VARIANT"]

VARIANT = "oracle-chain reader"


def reader_record(question, prompt: str, result, prediction: list, n_facts: int, seconds: float) -> dict:
    """One quickstart record: the question, the reader's reply and its scores. A reply that failed says why
    in the record itself: `finish` is the LLM's finish reason ("prompt_too_long" for a question that does not
    fit the context window), `error` its message, `failure` what failed."""
    record = {
        "id": question.qid, "question": question.question, "answers": question.answers,
        "answerable": question.answerable, "n_facts": int(n_facts), "prompt": prompt, "raw_output": result.text,
        "prediction": prediction, "hits@1": metrics.hits_at_1(prediction, question.answers),
        "containment": metrics.containment(result.text, question.answers), "failed": not prediction,
        "finish": result.finish_reason, "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens, "cached": result.cached, "seconds": seconds,
    }
    if result.error:
        record.update(error=result.error, failure=result.finish_reason or "llm")
    return record


def summarize(records: Sequence[Mapping]) -> dict:
    """Strict Hits@1 and lenient containment over all records (failures count as wrong), and the cost."""
    records = list(records)
    out = metrics.summarize(records, [HITS1, CONTAINMENT])
    out["n_errors"] = sum(1 for r in records if r.get("error"))
    out["stage_errors"] = {}
    out["cost"] = cost_of(records)
    return out


def cost_of(records: Sequence[Mapping]) -> dict:
    return {VARIANT: cost((r.get("prompt_tokens") for r in records), (r.get("seconds") for r in records),
                          (r.get("cached") for r in records))}


def stage_errors(summary: Mapping, run: Mapping | None = None) -> dict:
    """The quickstart attributes no errors to stages (the context is the gold chain's facts)."""
    return {"raised an error": float(summary["n_errors"])} if (summary or {}).get("n_errors") else {}


def scores(summary: Mapping, run: Mapping | None = None) -> list[dict]:
    s = summary or {}
    c = (s.get("cost") or cost_of((run or {}).get("examples") or [])).get(VARIANT)
    return rows(score_row("quickstart", VARIANT, s.get("n"), m, s.get(m), c, run) for m in (HITS1, CONTAINMENT))
