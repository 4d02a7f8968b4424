"""The quickstart's records (notebook 00: an LLM reads the facts on the gold chain): its summary hooks.

The quickstart is a tour of the shared layers, not a method; its evaluation loop is an oracle-context
reader, scored like the methods (`kgrag_utils.methods.summary`) so that the report can put it beside them.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Mapping, Sequence

from .. import metrics
from ..errors import ConfigError
from ..metrics import CONTAINMENT, HITS1
from . import summary as shared
from .base import Method
from .scoring import cost
from .summary import SummaryHooks, record_value

__all__ = ["Quickstart", "HOOKS", "VARIANT", "summarize", "scores", "record_scores", "cost_of", "reader_record",
           "topic_id", "unknown_entity_record", "worked_example"]

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
    record["scores"] = shared.record_scores(record, HOOKS)  # the record carries its metric values, as a method's does
    return record


def topic_id(kg, question) -> int | None:
    """The KG id of the question's first topic entity; None when it has none or the KG lacks it (a few MetaQA
    questions name an entity its KB does not hold: the loader marks them unanswerable)."""
    if not question.topic_entities:
        return None
    try:
        return kg.entity_id(question.topic_entities[0])
    except ConfigError:
        return None


def unknown_entity_record(question, seconds: float) -> dict:
    """The record of a question whose topic entity is not in the KG: its own failure ("unknown_entity"), scored
    0 like any failed example, so the run goes on and the summary counts it."""
    topic = question.topic_entities[0] if question.topic_entities else None
    why = f"topic entity {topic!r} is not in the KG" if topic else "the question names no topic entity"
    result = SimpleNamespace(text="", finish_reason="unknown_entity", prompt_tokens=0, completion_tokens=0,
                             cached=False, error=why)
    return reader_record(question, "", result, [], 0, seconds)


def worked_example(items: Sequence, kg):
    """The first question whose topic entity is in the KG (the tour's worked example); the first one if none is."""
    return next((q for q in items if topic_id(kg, q) is not None), items[0])


def record_scores(r: Mapping) -> dict:
    """Strict Hits@1 and lenient containment of the reader's answer (a failed record scores 0)."""
    return {VARIANT: {HITS1: record_value(r, HITS1), CONTAINMENT: record_value(r, CONTAINMENT)}}


def cost_of(records: Sequence[Mapping]) -> dict:
    return {VARIANT: cost((r.get("prompt_tokens") for r in records), (r.get("seconds") for r in records),
                          (r.get("cached") for r in records))}


def extras(records: Sequence[Mapping]) -> dict:
    """Strict Hits@1 and lenient containment over all records (`metrics.summarize`), and questions without gold."""
    means = metrics.summarize(records, [HITS1, CONTAINMENT])
    return {k: v for k, v in means.items() if k not in ("n", "n_failed")}


#: the quickstart attributes no errors to stages (the context is the gold chain's facts)
HOOKS = SummaryHooks(record_scores=record_scores, cost=cost_of, extras=extras)


def summarize(records: Sequence[Mapping]) -> dict:
    """The run summary (`methods.summary.summarize`): strict, lenient, failures, cost, score rows."""
    return shared.summarize(records, "quickstart", HOOKS)


def scores(summary: Mapping, run: Mapping | None = None) -> list[dict]:
    """The long-form score rows stored in a summary, with the run's fields."""
    return shared.score_rows(summary, run)


class Quickstart(Method):
    """The quickstart notebook's registry entry: its evaluation loop runs in the notebook, scored like a method."""

    name = "quickstart"
    notebook = "00_quickstart.ipynb"
    kind = "tour"
    color = "#666666"
    label = "quickstart (oracle-chain reader)"
    view_module = "tour_view"  # the run explorer's view of its records, beside this module

    @classmethod
    def summary_hooks(cls) -> SummaryHooks:
        return HOOKS
