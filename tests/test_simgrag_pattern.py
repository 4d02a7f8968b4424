"""SimGRAG patterns: the tolerant parser on malformed model output, validation, prompts, oracle patterns, answers."""

from __future__ import annotations

import pytest

from kgrag_utils.errors import ConfigError
from kgrag_utils.methods.simgrag.stages.generate import parse_answer
from kgrag_utils.methods.simgrag.prompts import build_answer_prompt
from kgrag_utils.methods.simgrag.stages.oracle import chain_pattern, oracle_pattern, qtype_node_types
from kgrag_utils.methods.simgrag.stages.pattern import Pattern, parse_pattern_output, parse_unknown, pattern_family, validate_pattern
from kgrag_utils.methods.simgrag.prompts import build_pattern_prompt, load_prompt_file


@pytest.mark.parametrize("label, expected", [
    ("UNKNOWN movie 1", ("movie", "1")),
    ("UNKNOWN_director_2", ("director", "2")),
    ("UNKNOWN release year 3", ("release year", "3")),
    ("UNKNOWN", ("", "")),
    ("unknown person 4", ("person", "4")),
    ("?x", ("x", "")),
    ("?", ("", "")),
    ("Unknown", None),  # a film title, not a placeholder
    ("Unknown Pleasures", None),
    ("Tom Hanks", None),
])
def test_parse_unknown(label, expected):
    assert parse_unknown(label) == expected


def test_pattern_from_triples_merges_nodes_and_keeps_titles_named_unknown():
    p = Pattern.from_triples([("[Tom Hanks]", "acted in", "UNKNOWN movie 1"),
                              ("UNKNOWN  movie 1", "directed by", "UNKNOWN director 2"),
                              ("tom hanks", "acted in", "Unknown")], answer="UNKNOWN director 2")
    assert [n.label for n in p.nodes] == ["Tom Hanks", "UNKNOWN movie 1", "UNKNOWN director 2", "Unknown"]
    assert [n.known for n in p.nodes] == [True, False, False, True]
    assert p.answer == 2
    assert p.nodes[1].type == "movie"
    assert Pattern.from_dict(p.to_dict()).triples() == p.triples()


GOOD = """Phrases: films directed by Orla Penhallow; languages of those films
Triples:
(Orla Penhallow, directed, UNKNOWN movie 1)
(UNKNOWN movie 1, in language, UNKNOWN language 2)"""


def test_parse_well_formed_output():
    out = parse_pattern_output(GOOD, "what languages are the films directed by [Orla Penhallow] in")
    assert out.error is None
    assert out.phrases == ["films directed by Orla Penhallow", "languages of those films"]
    assert out.triples == [("Orla Penhallow", "directed", "UNKNOWN movie 1"),
                           ("UNKNOWN movie 1", "in language", "UNKNOWN language 2")]


@pytest.mark.parametrize("text", [
    "Sure! Here is the pattern:\n```\n" + GOOD + "\n```\nHope this helps.",
    GOOD + "\n\nQuestion: who wrote [Other Film]\nPhrases: x\nTriples:\n(UNKNOWN writer 1, wrote, Other Film)",
    GOOD.replace("(Orla", "1. (Orla").replace("(UNKNOWN movie 1, in", "2. (UNKNOWN movie 1, in"),
    GOOD.replace("Triples:\n", "**Triples:** "),
    GOOD + "\n(UNKNOWN language 2, spoken in, UNKNOWN coun",  # cut by the token limit
    '{"triples": [["Orla Penhallow", "directed", "UNKNOWN movie 1"], '
    '["UNKNOWN movie 1", "in language", "UNKNOWN language 2"]]}',
    'Triples: ("Orla Penhallow", "directed", "UNKNOWN movie 1"), ("UNKNOWN movie 1", "in language", "UNKNOWN language 2")',
    "Orla Penhallow | directed | UNKNOWN movie 1\nUNKNOWN movie 1 | in language | UNKNOWN language 2",
])
def test_parse_malformed_outputs_recovers_the_two_triples(text):
    out = parse_pattern_output(text, "what languages are the films directed by [Orla Penhallow] in")
    assert out.triples == [("Orla Penhallow", "directed", "UNKNOWN movie 1"),
                           ("UNKNOWN movie 1", "in language", "UNKNOWN language 2")], out


def test_parse_names_with_commas_and_parentheses():
    q = "who directed [Crouching Tiger, Hidden Dragon] and [Crash (2004 film)]"
    text = ("Triples:\n(UNKNOWN director 1, directed, Crouching Tiger, Hidden Dragon)\n"
            "(Crash (2004 film), directed by, UNKNOWN director 2)\n"
            "(Crouching Tiger, Hidden Dragon, released in, UNKNOWN year 3)")
    out = parse_pattern_output(text, q)
    assert out.triples == [("UNKNOWN director 1", "directed", "Crouching Tiger, Hidden Dragon"),
                           ("Crash (2004 film)", "directed by", "UNKNOWN director 2"),
                           ("Crouching Tiger, Hidden Dragon", "released in", "UNKNOWN year 3")]


@pytest.mark.parametrize("text", ["", "   ", None, "I don't know.", "Phrases: something\nTriples:\n(only two, parts)"])
def test_parse_garbage_gives_an_error_not_an_exception(text):
    out = parse_pattern_output(text, "q")
    assert out.triples == [] and out.error


def test_validate_drops_self_loops_duplicates_and_unanchored_components():
    p = Pattern.from_triples([("A", "r", "UNKNOWN x 1"), ("A", "r", "UNKNOWN x 1"), ("A", "s", "A"),
                              ("UNKNOWN y 2", "t", "UNKNOWN z 3")])
    check = validate_pattern(p)
    assert check.ok and check.error is None
    assert check.pattern.triples() == [("A", "r", "UNKNOWN x 1")]
    assert len(check.warnings) == 3
    assert any("no known entity" in w for w in check.warnings)


@pytest.mark.parametrize("triples, message", [
    ([], "no triples"),
    ([("UNKNOWN a 1", "r", "UNKNOWN b 2")], "no known entity"),
    ([("A", "r", "A")], "no triples left"),
    ([("A", f"r{i}", f"UNKNOWN x {i}") for i in range(13)], "more than 12"),
])
def test_validate_rejects_unusable_patterns(triples, message):
    check = validate_pattern(Pattern.from_triples(triples) if triples else None)
    assert not check.ok and check.pattern is None and message in check.error


def test_validate_keeps_disconnected_anchored_components():
    p = Pattern.from_triples([("A", "r", "UNKNOWN x 1"), ("B", "s", "UNKNOWN y 2")])
    check = validate_pattern(p)
    assert check.ok and len(check.pattern.components()) == 2


@pytest.mark.parametrize("shots", [0, 4, 8, 12])
def test_pattern_prompt_has_the_requested_shots(shots):
    chat = build_pattern_prompt("who directed [X]", shots=shots, family="movies")
    assert chat[0]["role"] == "system" and chat[-1] == {"role": "user", "content": "Question: who directed [X]"}
    assert len(chat) == 2 + 2 * shots
    for user, assistant in zip(chat[1:-1:2], chat[2:-1:2]):
        parsed = parse_pattern_output(assistant["content"], user["content"])
        assert parsed.error is None and validate_pattern(Pattern.from_triples(parsed.triples)).ok


def test_pattern_prompt_rejects_bad_shots_and_family():
    with pytest.raises(ConfigError):
        build_pattern_prompt("q", shots=13)
    with pytest.raises(ConfigError):
        build_pattern_prompt("q", shots=4, family="sports")


def test_every_shot_parses_back_to_its_own_triples():
    for family, shots in load_prompt_file("simgrag_pattern.yaml")["families"].items():
        assert len(shots) == 12, family
        for ex in shots:
            text = "Phrases: " + "; ".join(ex["phrases"]) + "\nTriples:\n" + "\n".join(
                f"({h}, {r}, {t})" for h, r, t in ex["triples"])
            assert parse_pattern_output(text, ex["question"]).triples == [tuple(t) for t in ex["triples"]]


def test_pattern_family():
    from kgrag_utils.datasets.registry import get_spec

    assert pattern_family(get_spec("metaqa-2hop").traits.shot_family) == "movies"
    assert pattern_family(get_spec("sample-movies-1hop").traits.shot_family) == "movies"  # its twin's
    assert pattern_family(get_spec("pq-3hop").traits.shot_family, ["directed_by"]) == "people"  # the dataset's first
    assert pattern_family("", ["directed_by"]) == "movies" and pattern_family("", ["born_in"]) == "people"  # a user's KG


def test_chain_pattern_directions_and_answer():
    p = chain_pattern("Tom", [("starred_actors", False), ("directed_by", True)], ["movie", "director"])
    assert p.triples() == [("UNKNOWN movie 1", "starred_actors", "Tom"),
                           ("UNKNOWN movie 1", "directed_by", "UNKNOWN director 2")]
    assert p.nodes[p.answer].label == "UNKNOWN director 2" and p.source == "oracle"
    assert [n.known for n in p.nodes] == [True, False, False]
    with pytest.raises(ConfigError):
        chain_pattern("Tom", [])


def test_oracle_pattern_keeps_a_topic_named_like_a_placeholder():
    class Q:  # a KGQuestion-like record
        chain = [("directed_by", True)]
        topic_entities = ["Unknown"]
        qtype = "movie_to_director"

    p = oracle_pattern(Q())
    assert p.nodes[0].known and p.nodes[0].label == "Unknown"
    assert p.nodes[1].type == "director"
    assert qtype_node_types("actor_to_movie_to_director", 2) == ["movie", "director"]
    assert qtype_node_types(None, 3) == ["entity"] * 3


@pytest.mark.parametrize("text, evidence, expected", [
    ("Answer: Ann Lee | Bo Chen", (), ["Ann Lee", "Bo Chen"]),
    ("Ann Lee|Ann Lee | bo chen.", (), ["Ann Lee", "bo chen"]),
    ("\n\nFilm A, Film B and Film C\nextra", ("Film A", "Film B", "Film C"), ["Film A", "Film B", "Film C"]),
    ("Washington, D.C.", ("Washington, D.C.", "Washington"), ["Washington, D.C."]),
    ("Crouching Tiger, Hidden Dragon", (), ["Crouching Tiger, Hidden Dragon"]),
    ("**Final answer:** 1999", (), ["1999"]),
    ("", (), []),
    (None, (), []),
])
def test_parse_answer(text, evidence, expected):
    assert parse_answer(text, evidence) == expected


def test_answer_prompt_holds_the_evidence_and_the_question():
    chat = build_answer_prompt("who directed [X]", ["graph [1]: (X, directed_by, Ann)"], "movies", shots=2)
    assert len(chat) == 1 + 2 * 2 + 1
    assert chat[-1]["content"].endswith("graph [1]: (X, directed_by, Ann)\nQuestion: who directed [X]")
    assert "no matching subgraph" in build_answer_prompt("q", [], "people", 0)[-1]["content"]
