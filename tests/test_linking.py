"""The shared entity linker (kgrag_utils/linking.py): exact, normalised, fuzzy and vector steps, in that order."""

from __future__ import annotations

from kgrag_utils.datasets.items import KGQuestion
from kgrag_utils.kg import KG
from kgrag_utils.linking import EntityLinker, Link, link_entities, link_questions

NAMES = ["Edda Voss", "Greyhill Press", "The Salt Orchard", "Lantern Society", "Nine_Lighthouses", "poetry", "Velden"]


def test_exact_mentions_in_question_order_longest_first():
    links = link_entities("Did Edda Voss publish with Greyhill Press?", NAMES)
    assert links == [Link("Edda Voss", "Edda Voss", 1.0, "exact"), Link("Greyhill Press", "Greyhill Press", 1.0, "exact")]


def test_normalised_match_reads_case_and_underscores():
    assert link_entities("who wrote the salt orchard", NAMES)[0].name == "The Salt Orchard"
    link = link_entities("Where is nine lighthouses set?", NAMES)[0]
    assert (link.name, link.how) == ("Nine_Lighthouses", "normalised")


def test_fuzzy_match_takes_misspellings_and_refuses_what_is_far():
    link = link_entities("Who founded the lanturn socity?", NAMES)[0]
    assert (link.name, link.how) == ("Lantern Society", "fuzzy") and 0.88 <= link.score < 1.0
    assert link_entities("How tall is the tower?", NAMES) == []  # no embedder: nothing passes


def test_vector_match_with_the_embedder_when_nothing_else_does():
    linker = EntityLinker(NAMES, embedder="minilm", vector_min=0.5)
    links = linker.link("Which poems are there?")
    assert links and links[0].how == "vector" and links[0].name == "poetry"


def test_link_questions_fills_only_questions_without_topics():
    kg = KG.from_triples([("Edda Voss", "wrote", "Ash and Amber"), ("Ash and Amber", "won", "Marren Prize")])
    qs = [KGQuestion("a", "What did Edda Voss write?", [], [], None, 0, None),
          KGQuestion("b", "What did it win?", ["Ash and Amber"], [], None, 0, None),
          KGQuestion("c", "Nothing to see", [], [], None, 0, None)]
    assert link_questions(qs, kg) == 1
    assert qs[0].topic_entities == ["Edda Voss"] and qs[0].meta["topic_source"] == "linked"
    assert qs[0].meta["topic_links"][0]["how"] == "exact"
    assert qs[1].topic_entities == ["Ash and Amber"] and qs[2].topic_entities == [] and qs[2].meta["topic_links"] == []


def test_many_names_in_one_vectorised_pass():
    names = [f"Entity Number {i}" for i in range(20000)] + ["Quentin Yarborough"]
    linker = EntityLinker(names)
    assert linker.link("Who is Quentin Yarborogh?")[0].name == "Quentin Yarborough"
    assert linker.link("Tell me about entity number 17")[0].name == "Entity Number 17"


def test_forget_topics_keeps_the_gold_and_takes_the_marks_off():
    from kgrag_utils.linking import forget_topics, link_outcome

    kg = KG.from_triples([("Edda Voss", "wrote", "Ash and Amber"), ("Ash and Amber", "won", "Marren Prize")])
    qs = [KGQuestion("a", "what did [Edda Voss] write", ["Edda Voss"], ["Ash and Amber"], None, 1, None),
          KGQuestion("b", "what did [Ash and Amber] win", ["Edda Voss"], ["Marren Prize"], None, 1, None)]
    assert forget_topics(qs) == 2 and forget_topics(qs) == 0  # a second call keeps the first gold
    assert qs[0].question == "what did Edda Voss write" and qs[0].topic_entities == []
    assert link_outcome(qs[0]) == {"gold": ["Edda Voss"], "linked": [], "found": False, "exact": False}
    assert link_questions(qs, kg) == 2
    assert link_outcome(qs[0]) == {"gold": ["Edda Voss"], "linked": ["Edda Voss"], "found": True, "exact": True}
    assert link_outcome(qs[1])["found"] is False  # linked what the question names, not the (wrong) annotation
    assert link_outcome(KGQuestion("c", "q", ["X"], [], None, 1, None)) is None  # topics given: no outcome


def test_a_linked_run_records_each_link_and_the_summary_counts_them():
    import pytest

    from kgrag_utils.errors import ConfigError
    from kgrag_utils.methods.compact import Compact, CompactConfig

    cfg = CompactConfig(dataset="sample-movies-2hop", limit=6, reader=False, topics="linked")
    ds = cfg.load_dataset()
    assert ds.info["n_topics_taken"] == 6 and all("[" not in q.question for q in ds.items)
    method = Compact.prepare(cfg, ds)
    records = method.run(ds.items, progress=False)
    links = [r["topic_link"] for r in records]
    assert len(links) == 6 and all(set(x) == {"gold", "linked", "found", "exact"} for x in links)
    summary = Compact.summarize(records)
    assert summary["topic_linking"]["n"] == 6
    assert summary["topic_linking"]["found"] == sum(x["found"] for x in links) / 6
    [row] = [r for r in summary["rows"] if r["variant"] == "topic linking"]
    assert (row["metric"], row["n"], row["value"], row["uses_llm"]) == ("accuracy", 6, summary["topic_linking"]["found"], False)
    given = cfg.replace(topics="given")
    plain = Compact.prepare(given, given.load_dataset()).run(given.load_dataset().items, progress=False)
    assert not any("topic_link" in r for r in plain) and Compact.summarize(plain)["topic_linking"] is None
    with pytest.raises(ConfigError, match="topics='given'"):
        CompactConfig(dataset="sample-kinship", topics="linked", knowledge="rules").load_dataset()


def test_topics_given_keeps_the_run_keys_of_runs_recorded_before_the_knob():
    from kgrag_utils.records import run_key

    params = {"dataset": "metaqa-1hop", "limit": 100, "seed": 0}
    assert run_key({**params, "topics": "given"}) == run_key(params)
    assert run_key({**params, "topics": "linked"}) != run_key(params)


def test_a_mention_keeps_the_questions_dots_and_lower_case_words_give_way_to_names():
    names = ["Michael", "Michael J. Pollard", "director", "Oliver Twist", "Stars", "Remember the Day", "Velden"]
    assert [x.name for x in link_entities("what films did Michael J. Pollard act in", names)] == ["Michael J. Pollard"]
    assert [x.name for x in link_entities("who is the director of Oliver Twist", names)] == ["Oliver Twist"]
    assert [x.name for x in link_entities("who stars in Remember the Day", names)] == ["Remember the Day"]
    assert [x.name for x in link_entities("who is the director of oliver twist", names)] == ["Oliver Twist", "director"]
    assert [x.name for x in link_entities("Director of Oliver Twist?", names)] == ["Oliver Twist"]  # no name: lower
    assert [x.name for x in link_entities("Velden films", names)] == ["Velden"]  # the first word alone is the sentence's
