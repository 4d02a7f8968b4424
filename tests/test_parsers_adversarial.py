"""Issue 17 case 11: the parsers never raise on adversarial output and their work is bounded.

Each public parser runs under a work budget proportional to its input (`parsers._Work`). A text that
needs more is counted as unparseable and gives the empty result (no test here asserts on time).
"""

from __future__ import annotations

import json

import pytest

from kgrag_utils import parsers

N = 20_000
FAMILIES = {
    "unclosed_parens": "(" * N,
    "unclosed_brackets": "[" * N,
    "unclosed_braces": "{" * N,
    "deep_nesting": "[" * 5000 + "]" * 5000,
    "deep_dicts": '{"a": ' * 3000 + "1" + "}" * 3000,
    "mixed_openers": "({[\"'" * (N // 5),
    "long_number": "9" * 5000,
    "bracketed_long_number": "[" + "9" * 5000 + "]",
    "json_long_number": '{"ids": [' + "9" * 5000 + "]}",
    "comma_groups": "(a," * (N // 3),
    "apostrophes": "(" + "a'" * (N // 2) + ", b, c)",
    "blank_label": "answer" + " " * N + "x",
    "blank_bare_line": "(a, b, c)\na,b,c" + " " * N + "x(",
    "quotes": '"' * N,
    "fences": "```\n" * (N // 4),
    "pipes": "|".join(f"a{i}" for i in range(N // 4)),
}
PARSERS = {
    "parse_triples": parsers.parse_triples,
    "parse_ids": parsers.parse_ids,
    "extract_json": parsers.extract_json,
    "extract_json_list": parsers.extract_json_list,
    "json_field_list": lambda t: parsers.json_field_list(t, "answers"),
    "parse_answer_list": parsers.parse_answer_list,
    "strip_code_fences": parsers.strip_code_fences,
}


class Meter(parsers._Work):
    """The budget the parsers would get, recording how much of it one call used."""


def _run_metered(fn, text):
    meter = Meter(min(len(text), parsers._MAX_SCAN))
    token = parsers._WORK.set(meter)
    try:
        try:
            fn(text)
        except parsers._OutOfWork:
            pass  # over budget: the public wrapper turns this into the empty result
    finally:
        parsers._WORK.reset(token)
    return meter


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("parser", PARSERS)
def test_adversarial_output_never_raises(family, parser):
    PARSERS[parser](FAMILIES[family])  # any exception fails the test


@pytest.mark.parametrize("family", FAMILIES)
def test_work_stays_within_a_budget_linear_in_the_input(family):
    text = FAMILIES[family]
    for name in ("parse_triples", "parse_ids", "extract_json", "parse_answer_list"):
        meter = _run_metered(PARSERS[name], text)
        # the budget, plus at most one scan of the text past it before the check
        assert meter.used <= meter.limit + 2 * len(text) * 4, (name, meter.used, meter.limit)


def test_over_budget_replies_count_as_unparseable():
    before = parsers.STATS["over_budget"]
    assert parsers.parse_triples("(" * N) == []
    assert parsers.extract_json("[" * N, default="none") == "none"
    assert parsers.STATS["over_budget"] > before


def test_huge_numbers_are_not_ids():
    assert parsers.parse_ids("9" * 5000) == []
    assert parsers.parse_ids("[12] and then " + "9" * 5000) == [12]
    assert parsers.parse_ids('{"ids": [3, ' + "9" * 5000 + "]}") == [3]  # the huge one is dropped, the id kept
    assert parsers.parse_ids('{"ids": [3, 12345678901234567890]}') == [3]  # 20 digits: over _MAX_ID_DIGITS
    assert parsers.parse_ids("[3, 5]") == [3, 5]


def test_deep_nesting_is_not_parsed_but_normal_nesting_is():
    assert parsers.extract_json("[" * 5000 + "]" * 5000, default=None) is None
    value = {"a": [{"b": [1, 2, {"c": "d"}]}]}
    assert parsers.extract_json("here: " + json.dumps(value)) == value


def test_the_budget_never_cuts_a_long_normal_reply():
    triples = [(f"Entity {i}", "related to", f"Other {i}") for i in range(2000)]
    text = "\n".join(f"({h}, {r}, {t})" for h, r, t in triples)  # ~70k characters
    before = parsers.STATS["over_budget"]
    assert parsers.parse_triples(text) == triples
    as_json = json.dumps({"triples": [list(t) for t in triples]})
    assert parsers.parse_triples(as_json) == triples
    ids = list(range(5000))
    assert parsers.parse_ids(json.dumps({"ids": ids})) == ids
    answers = [f"Name {i}" for i in range(3000)]
    assert parsers.parse_answer_list(" | ".join(answers)) == answers
    assert parsers.STATS["over_budget"] == before


def test_labels_and_bare_lines_still_read_after_the_linear_rewrite():
    assert parsers.parse_answer_list("**Answer:** Paris | Lyon.") == ["Paris", "Lyon"]
    assert parsers.parse_answer_list("answer" + " " * 100 + ": x") == ["x"]
    assert parsers.parse_triples("(a, r, b)\n  c, s, d  \n[e, t, f]") == [("a", "r", "b"), ("c", "s", "d"), ("e", "t", "f")]
    assert parsers.parse_triples("(a, r, b)\n- c, s, d)") == [("a", "r", "b"), ("c", "s", "d")]
