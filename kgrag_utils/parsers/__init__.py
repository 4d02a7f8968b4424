"""Tolerant parsers for LLM output: JSON inside prose or code fences, triples, id lists and answer lists.

Small models wrap JSON in prose and ``` fences, leave trailing commas, use single quotes or Python
literals, and stop mid-list when they hit the token limit. These parsers recover what is there and
return an empty result (or `default`) when nothing is, never raising on arbitrary text. Nothing is
ever evaluated (no eval, no ast.literal_eval): a bracketed span is read by json.loads, then by a small
token-level repair (single quotes, Python literals, bare keys, trailing commas), then by the
json-repair library (unescaped quotes, missing commas or quotes, Python tuples), which is not handed
spans that contain call syntax such as `f(`.

Work is bounded on any input (adversarial text included): each public parser gets a budget of
`_WORK_PER_CHAR` character steps per input character (`_Work`); a text that would need more, such as
thousands of unclosed brackets, is counted as unparseable (`STATS["over_budget"]`) and gives the empty
result. Spans nested deeper than `_MAX_DEPTH` are not parsed, ids longer than `_MAX_ID_DIGITS` digits
are not ids, and the line regexes are written so that they cannot backtrack quadratically.

Modules: `budget` (the work budget and limits), `json_spans` (JSON values, code fences),
`triples` (triples in any of the usual shapes), `lists` (id lists and answer lists).
"""

from __future__ import annotations

from .budget import _MAX_SCAN, _WORK, STATS, _OutOfWork, _Work  # noqa: F401  (the budget: tests and benchmarks meter it)
from .json_spans import extract_json, extract_json_list, iter_json_values, json_field_list, strip_code_fences
from .lists import parse_answer_list, parse_ids
from .triples import parse_triples

__all__ = ["STATS", "extract_json", "extract_json_list", "iter_json_values", "json_field_list", "parse_answer_list",
           "parse_ids", "parse_triples", "strip_code_fences"]
