"""Tolerant LLM-output parsers: known messy outputs, and hypothesis properties (no crash, round-trips)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgrag_utils.parsers import (
    extract_json,
    extract_json_list,
    iter_json_values,
    parse_ids,
    parse_triples,
    strip_code_fences,
)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------- examples
def test_strip_code_fences_drops_language_tag_and_handles_unclosed_fence():
    assert strip_code_fences("Here:\n```json\n{\"a\": 1}\n```\nbye") == '{"a": 1}'
    assert strip_code_fences("```\n[1, 2]") == "[1, 2]"
    assert strip_code_fences("  no fence  ") == "no fence"


@pytest.mark.parametrize(
    "text, expected",
    [
        ('Sure! ```json\n{"a": [1, 2,], "b": true}\n```', {"a": [1, 2], "b": True}),
        ("Answer: {'name': 'x', ok: None, 'n': 3,} done", {"name": "x", "ok": None, "n": 3}),
        ("prose [see note] then {\"k\": \"v [x]\"}", {"k": "v [x]"}),
        ('[["a","b","c"], ["d","e"', [["a", "b", "c"]]),  # cut by the token limit
        ("[('a', 'b', 'c')]", [["a", "b", "c"]]),  # Python literal, parsed without eval
        ("nothing here", None),
    ],
)
def test_extract_json_repairs_common_mistakes(text, expected):
    assert extract_json(text) == expected


def test_extract_json_never_evaluates_code():
    marker = []
    text = "[__import__('os').system('echo pwned')]"
    assert extract_json(text) in (None, ["__import__"], []) or marker == []
    assert extract_json("{'a': (lambda: 1)()}") is None


def test_extract_json_prefers_fenced_block_over_prose_brackets():
    text = "Relations [1] and [2] matter.\n```json\n{\"ids\": [2, 1]}\n```"
    assert extract_json(text) == {"ids": [2, 1]}


def test_extract_json_list_reads_lists_and_single_list_fields():
    assert extract_json_list('The entities: ["Paris", "France"].') == ["Paris", "France"]
    assert extract_json_list('{"entities": ["Paris"]}') == ["Paris"]
    assert extract_json_list('{"reason": "x", "ids": [1], "other": [2]}', key="ids") == [1]
    assert extract_json_list('{"reason": "x", "ids": [1], "other": [2]}') == []  # ambiguous without key
    assert extract_json_list("no list") == []


def test_parse_triples_formats():
    text = (
        "1. (Inception (film), directed by, Christopher Nolan)\n"
        '2. (UNKNOWN person 1, acted_in, "Heat, the movie")\n'
        "3. [Paris, capital_of, France]\n"
        "Berlin | capital of | Germany\n"
        "(not, a triple)\n"
    )
    assert parse_triples(text) == [
        ("Inception (film)", "directed by", "Christopher Nolan"),
        ("UNKNOWN person 1", "acted_in", "Heat, the movie"),
        ("Paris", "capital_of", "France"),
        ("Berlin", "capital of", "Germany"),
    ]


def test_bare_comma_line_counts_only_among_bracketed_triples():
    text = "Christopher Nolan, directed, Inception\n(Christopher Nolan, starring, Leonardo DiCaprio)"
    assert parse_triples(text) == [
        ("Christopher Nolan", "directed", "Inception"),
        ("Christopher Nolan", "starring", "Leonardo DiCaprio"),
    ]
    assert parse_triples("Well, I think, maybe not.") == []


def test_parse_triples_json_and_tables():
    assert parse_triples('```json\n[["a","b","c"],{"head":"d","relation":"e","tail":"f"}]\n```') == [
        ("a", "b", "c"),
        ("d", "e", "f"),
    ]
    assert parse_triples('{"triples": [["x", "y", "z"]]}') == [("x", "y", "z")]
    assert parse_triples("| head | relation | tail |\n|---|---|---|\n| Paris | capital of | France |") == [
        ("Paris", "capital of", "France")
    ]


def test_parse_ids_formats_and_filters():
    assert parse_ids('{"reasoning": "[3] looks related", "ids": [7, 3, 7]}') == [7, 3]
    assert parse_ids("The useful ones are [12] and [7], then [12].") == [12, 7]
    assert parse_ids("12, 7, 99", valid={12, 7}) == [12, 7]
    assert parse_ids('["4", "[5]"]') == [4, 5]
    assert parse_ids("none") == []


# ----------------------------------------------------------------------------- properties
@FAST
@given(st.text(max_size=400))
def test_random_text_never_crashes(text):
    assert isinstance(strip_code_fences(text), str)
    extract_json(text)
    assert isinstance(extract_json_list(text), list)
    triples = parse_triples(text)
    assert all(len(t) == 3 and all(isinstance(p, str) and p for p in t) for t in triples)
    assert all(isinstance(i, int) for i in parse_ids(text))


_BRACKETY = st.text(alphabet=st.sampled_from(list("{}[](),:'\"` |\n\\abc123.-_TrueNone")), max_size=200)


@FAST
@given(_BRACKETY)
def test_bracket_soup_never_crashes(text):
    list(iter_json_values(text))
    parse_triples(text)
    parse_ids(text)


_json_scalars = st.none() | st.booleans() | st.integers(-10**9, 10**9) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
_json_values = st.recursive(
    _json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
_prose = st.text(alphabet=st.characters(blacklist_characters="{}[]`'\"", blacklist_categories=("Cs",)), max_size=60)


@FAST
@given(st.one_of(st.lists(_json_values, max_size=4), st.dictionaries(st.text(max_size=8), _json_values, max_size=4)), _prose, _prose, st.booleans(), st.booleans())
def test_json_round_trip_inside_prose(value, before, after, fenced, indent):
    body = json.dumps(value, indent=2 if indent else None)
    text = f"{before}\n```json\n{body}\n```\n{after}" if fenced else f"{before} {body} {after}"
    assert extract_json(text) == value


_part = st.text(
    alphabet=st.characters(blacklist_characters="()[]|,\"'`\n\r\\", blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
    min_size=1,
    max_size=20,
).map(str.strip).filter(bool)
_triples = st.lists(st.tuples(_part, _part, _part), min_size=1, max_size=6)


@FAST
@given(_triples, st.sampled_from(["paren", "bracket", "pipe", "json", "quoted"]))
def test_triples_round_trip(triples, style):
    if style == "paren":
        text = "\n".join(f"{i + 1}. ({h}, {r}, {t})" for i, (h, r, t) in enumerate(triples))
    elif style == "bracket":
        text = "Triples: " + "; ".join(f"[{h}, {r}, {t}]" for h, r, t in triples)
    elif style == "pipe":
        text = "\n".join(f"- {h} | {r} | {t}" for h, r, t in triples)
    elif style == "json":
        text = "```json\n" + json.dumps([list(t) for t in triples]) + "\n```"
    else:  # quoted parts may contain commas
        triples = [(h + ", x", r, t) for h, r, t in triples]
        text = "\n".join(f'("{h}", "{r}", "{t}")' for h, r, t in triples)
    if style == "pipe":
        headerish = {"head", "relation", "tail", "subject", "predicate", "object", "h", "r", "t", "entity", "source", "target"}
        triples = [t for t in triples if not (all(p.lower() in headerish for p in t) or all(set(p) <= set("-: ") for p in t))]
    if style == "pipe" and any(p[0] in "-*+•" or p[0].isdigit() for t in triples for p in t[:1]):
        return  # a leading bullet-like character is read as list markup, by design
    assert parse_triples(text) == [tuple(t) for t in triples]


@FAST
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=12, unique=True), st.sampled_from(["json", "marks", "bare"]))
def test_ids_round_trip(ids, style):
    text = {
        "json": f'Reasoning first. {{"reason": "because", "ids": {json.dumps(ids)}}}',
        "marks": "Useful: " + ", ".join(f"[{i}]" for i in ids) + ".",
        "bare": "Useful: " + ", ".join(str(i) for i in ids),
    }[style]
    assert parse_ids(text) == ids
    assert parse_ids(text, valid=set(ids[:1])) == ids[:1]


# --- answer lists ---

from kgrag_utils.parsers import parse_answer_list  # noqa: E402


@pytest.mark.parametrize("text, known, expected", [
    ("Answer: Mann | Frankenheimer", (), ["Mann", "Frankenheimer"]),
    ("1. Mann\n2. Frankenheimer.", (), ["Mann", "Frankenheimer"]),
    ("- Mann\n- Mann", (), ["Mann"]),
    ("```\nMann | Frankenheimer\n```", (), ["Mann", "Frankenheimer"]),
    # commas: split only off pieces that are not a known name
    ("Tom Hanks, Meg Ryan", ("Tom Hanks", "Meg Ryan"), ["Tom Hanks", "Meg Ryan"]),
    ("Crouching Tiger, Hidden Dragon", ("Crouching Tiger, Hidden Dragon",), ["Crouching Tiger, Hidden Dragon"]),
    ("Tom Hanks, Meg Ryan", (), ["Tom Hanks, Meg Ryan"]),
    ("**Final answer:** \"Paris\".", (), ["Paris"]),
    ("Washington, D.C.", (), ["Washington, D.C."]),
    ("Martin Luther King Jr.", (), ["Martin Luther King Jr."]),
    ("", (), []),
    (None, (), []),
])
def test_parse_answer_list(text, known, expected):
    assert parse_answer_list(text, known) == expected


def test_parse_answer_list_first_line_drops_explanations():
    text = "Paris\nBecause the facts say (France, capital, Paris)."
    assert parse_answer_list(text, first_line=True) == ["Paris"]
    assert len(parse_answer_list(text)) == 2
