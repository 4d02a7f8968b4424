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
