"""Ask your own question: `method.ask` on each method (fake LLM, sample datasets), its stages as text and HTML,
the side-by-side view of every method, and the live box."""

from __future__ import annotations

import pytest

from kgrag_utils.datasets import load_dataset
from kgrag_utils.errors import ConfigError
from kgrag_utils.methods.ask_all import AskEveryMethod, methods_for
from kgrag_utils.methods.asked import Asked, ask_box

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def movies():
    return load_dataset("sample-movies-2hop", split="test", limit=4, seed=0)


@pytest.fixture(scope="module")
def passages():
    return load_dataset("sample-passages", split="all", limit=2, seed=0)


def _stage_titles(asked: Asked) -> list[str]:
    return [s.title for s in asked.stages]


def test_simgrag_ask_shows_pattern_candidates_subgraphs_and_answer(movies):
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig

    method = SimGRAG.prepare(SimGRAGConfig(dataset="sample-movies-2hop", llm_preset="fake", limit=4), movies)
    q = movies.items[0]
    asked = method.ask(q.question, answers=q.answers)
    titles = _stage_titles(asked)
    assert titles[0] == "Pattern (LLM)" and titles[1] == "Candidates" and titles[2].startswith("Top-k subgraphs")
    assert asked.topic and asked.topic_source == "marked [X]"  # MetaQA's [brackets]
    assert asked.record["pattern_ok"] and asked.record["subgraphs"] and asked.answer
    text, page = asked.to_text(), asked._repr_html_()
    assert "GSD" in text and "=> answer:" in text and "<table>" in page and "GSD" in page
    assert asked.record["hits@1"] in (0.0, 1.0)  # scored: answers were given
    with pytest.raises(ConfigError, match="is not an entity of the KG"):
        method.ask("Who directed it?", topic="No Such Film 1234")


def test_compact_ask_shows_chain_facts_checks_and_gate(movies):
    from kgrag_utils.methods.compact import Compact, CompactConfig

    method = Compact.prepare(CompactConfig(dataset="sample-movies-2hop", llm_preset="fake", limit=4), movies)
    q = movies.items[0]
    asked = method.ask(q.question)
    titles = _stage_titles(asked)
    assert titles[:4] == ["Chain proposals (relation knowledge: " + str(asked.record["knowledge"]) + ")",
                          "Chain (first derivable proposal)", "Compact facts and the derivation", "Checks and gate"]
    assert asked.record["scored"] is False  # no answers given: not scored
    assert asked.gist.relations and all(isinstance(r, str) for r in asked.gist.relations)


def test_vector_rerank_ask_on_kg_questions_and_passages(movies, passages):
    from kgrag_utils.methods.vector_rerank import VectorRerank, VectorRerankConfig

    kg_method = VectorRerank.prepare(VectorRerankConfig(dataset="sample-movies-2hop", llm_preset="fake"), movies)
    asked = kg_method.ask(movies.items[0].question)
    assert _stage_titles(asked)[:3] == ["Query entities and seeds",
                                        "Candidates (seeds expanded, capped by similarity to the question)",
                                        "Rerank reply (LLM)"]
    assert asked.stages[1].rows  # the candidates the rerank chose from
    p_method = VectorRerank.prepare(VectorRerankConfig(dataset="sample-passages", split="all", llm_preset="fake"),
                                    passages)
    asked = p_method.ask(passages.items[0].question)
    assert asked.topic == [] and "Rerank reply (LLM)" in _stage_titles(asked)


def test_kgp_ask_shows_the_walk(passages):
    from kgrag_utils.methods.kgp import KGP, KGPConfig

    kgp = KGP.prepare(KGPConfig(dataset="sample-passages", split="all", llm_preset="fake", limit=2), passages)
    asked = kgp.ask(passages.items[0].question)
    assert _stage_titles(asked)[:3] == ["Seeds (TF-IDF)", "The walk", "Retrieved passages"]
    assert asked.stages[0].rows and "The walk" in asked.to_text()


def test_every_method_side_by_side_on_your_own_folder():
    assert [s.name for s in methods_for("kgqa")] == ["simgrag", "compact", "vector_rerank"]
    assert [s.name for s in methods_for("passages")] == ["vector_rerank", "kgp"]
    bench = AskEveryMethod("data/example-kg", llm_preset="fake")
    side = bench.ask("Who published the book written by [Tobin Harrow]?")
    assert [a.method for a in side.asked] == ["simgrag", "compact", "vector_rerank"]
    rows = {r["method"]: r for r in side.rows()}
    assert rows["compact relation selection"]["KG relations used"] == "wrote > published_by"
    assert rows["compact relation selection"]["answer"] == "Tidewater Books"  # derived along the chain
    lines = side.agreement()
    assert any("only compact relation selection used" in s for s in lines), lines
    assert "Asked every method" in side.to_text() and "<details>" in side._repr_html_()
    with pytest.raises(ConfigError, match="cannot be asked about a kgqa dataset"):
        AskEveryMethod("data/example-kg", methods=["kgp"], llm_preset="fake")


def test_the_live_box_asks_what_is_typed(capsys):
    pytest.importorskip("ipywidgets")

    class Echo:
        def ask(self, question, topic=None):
            return f"asked {question!r} about {topic!r}"

    box = ask_box(Echo(), "first?")
    (question, button), topic, out = box.children[0].children, box.children[1], box.children[2]
    question.value, topic.value = "Who wrote [Ash and Amber]?", "Ash and Amber"
    button.click()
    # in a kernel the Output widget holds the reply; outside one, display() prints it
    shown = "".join(o.get("data", {}).get("text/plain", "") for o in out.outputs) or capsys.readouterr().out
    assert "Who wrote [Ash and Amber]?" in shown and "Ash and Amber" in shown


def test_a_claim_asked_without_its_label_is_verified_and_not_scored():
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig

    cfg = SimGRAGConfig(dataset="fixture-factkg", llm_preset="fake", limit=0)
    ds = cfg.load_dataset()
    method = SimGRAG.prepare(cfg, ds)
    claim = ds.items[0]
    asked = method.ask(claim.question)  # topic entities linked: FactKG's names use underscores
    assert set(asked.topic) == set(claim.topic_entities) and asked.topic_source.startswith("linked")
    assert asked.answer in (["True"], ["False"]) and asked.record["scored"] is False
    assert method.ask(claim.question, answers=claim.answers).record["hits@1"] in (0.0, 1.0)
