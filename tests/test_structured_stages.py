"""Every LLM stage's declared answer shape: its JSON-form shots are valid under it, its parser reads it
(also cut by the token limit), schema mode runs end to end with the fake, and no stage evaluates output."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import pytest

from kgrag_utils.llm import load_llm
from kgrag_utils.llm.structured import schema_text, validate_reply
from kgrag_utils.methods.compact.prompts import ANSWER_SCHEMA as COMPACT_ANSWER, kgqa_prompt, kinship_schema, parse_answers
from kgrag_utils.methods.compact.prompts import parse_kinship_answer
from kgrag_utils.methods.kgp.prompts import READER_SCHEMA, clean_answer, reader_prompt, reader_schema
from kgrag_utils.methods.simgrag import SimGRAGConfig
from kgrag_utils.methods.simgrag.stages.generate import ANSWER_SCHEMA, parse_answer
from kgrag_utils.methods.simgrag.prompts import build_answer_prompt
from kgrag_utils.methods.simgrag.stages.pattern import PATTERN_SCHEMA, parse_pattern_output
from kgrag_utils.methods.simgrag.prompts import build_pattern_prompt
from kgrag_utils.methods.vector_rerank import prompts as vr
from kgrag_utils.parsers import parse_answer_list


def _assistant_turns(chat):
    return [m["content"] for m in chat if m["role"] == "assistant"]


@pytest.mark.parametrize("family", ["movies", "people", "claims"])
def test_simgrag_json_shots_are_valid_under_the_stage_schemas(family):
    pattern = build_pattern_prompt("who directed [X]", 8, family, form="json")
    assert "JSON object" in pattern[0]["content"] and "Phrases:" not in pattern[0]["content"].splitlines()[-1]
    for turn in _assistant_turns(pattern):
        assert validate_reply(turn, PATTERN_SCHEMA) is None, turn
    if family != "claims":
        for turn in _assistant_turns(build_answer_prompt("q", ["graph [1]: (a, r, b)"], family, 3, form="json")):
            assert validate_reply(turn, ANSWER_SCHEMA) is None, turn
    # the free-text form is the paper's, unchanged by the option
    assert _assistant_turns(build_pattern_prompt("q", 2, family))[0].startswith("Phrases:")


def test_vector_rerank_shots_are_valid_under_the_stage_schemas():
    for turn in _assistant_turns(vr.entity_prompt("Who founded Halvane Optics?")):
        assert validate_reply(turn, vr.ENTITY_SCHEMA) is None
    for turn in _assistant_turns(vr.rerank_prompt("q", ["a b c", "d e f"], 2)):
        assert validate_reply(turn, vr.RERANK_SCHEMA) is None
    for turn in _assistant_turns(vr.openie_prompt("T", "text")):
        assert validate_reply(turn, vr.OPENIE_SCHEMA) is None
    for turn in _assistant_turns(vr.answer_prompt("q", ["a r b"], form="json")):
        assert validate_reply(turn, vr.ANSWER_SCHEMA) is None
    assert _assistant_turns(vr.answer_prompt("q", ["a r b"]))[0] == "Salt Lanterns | The Tin Orchard"


def test_parsers_read_the_json_forms_and_recover_replies_cut_by_the_token_limit():
    q = "who directed the films of [Ann Lee]"
    full = '{"phrases": ["x"], "triples": [["Ann Lee", "acted in", "UNKNOWN movie 1"], ["UNKNOWN director 2", "directed", "UNKNOWN movie 1"]]}'
    assert len(parse_pattern_output(full, q).triples) == 2
    cut = '{"phrases": ["x"], "triples": [["Ann Lee", "acted in", "UNKNOWN movie 1"], ["UNKNOWN director 2", "dire'
    parsed = parse_pattern_output(cut, q)
    assert parsed.triples == [("Ann Lee", "acted in", "UNKNOWN movie 1")] and parsed.error is None
    assert parse_pattern_output('{"phrases": [], "triples": [["A", "r"', q).triples == []  # nothing complete: a failure
    assert parse_answer('{"answers": ["Big", "Splash"]}') == ["Big", "Splash"]
    assert parse_answer('{"answers": ["Big", "Spl') [:1] == ["Big"]
    assert parse_answer_list('{"answers": ["Crouching Tiger, Hidden Dragon"]}', known=["x"]) == ["Crouching Tiger, Hidden Dragon"]
    assert parse_answers('{"answers": []}') == []
    assert parse_kinship_answer('{"answer": "grandson"}', ["son", "grandson"]) == "grandson"
    assert clean_answer('{"answer": "Paris."}') == "Paris"
    assert reader_schema("Is Paris in France?")["properties"]["answer"]["enum"] == ["yes", "no"]
    assert reader_schema("Where is Paris?") == READER_SCHEMA
    assert "JSON" in reader_prompt("Where?", [("T", "x")], form="json") and "JSON" not in reader_prompt("Where?", [("T", "x")])
    assert "JSON" in kgqa_prompt("q", [("a", "r", "b")], form="json") and "JSON" not in kgqa_prompt("q", [("a", "r", "b")])
    assert validate_reply('{"answer": "son"}', kinship_schema(["son", "aunt"])) is None
    assert validate_reply('{"answer": "cousin"}', kinship_schema(["son", "aunt"])) is not None
    assert validate_reply('{"answers": ["a"]}', COMPACT_ANSWER) is None


def test_simgrag_runs_in_schema_mode_with_json_replies_and_records_the_mode():
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.simgrag.stages.gsd_search import GSDRetriever
    from kgrag_utils.methods.simgrag import SimGRAG
    from kgrag_utils.methods.simgrag.stages.oracle import oracle_pattern

    from test_llm_structured import _HashEmbedder

    data = load_dataset("sample-movies-1hop", limit=4)
    gold = {q.question: json.dumps({"phrases": ["p"], "triples": [[h, r.replace("_", " "), t]
                                                                  for h, r, t in oracle_pattern(q).triples()]})
            for q in data.items}

    def respond(text: str) -> str:
        if "Evidence:" not in text:
            return gold[text.rsplit("Question:", 1)[-1].strip()]
        first = next(ln for ln in reversed(text.splitlines()) if ln.startswith("graph [1]:"))
        return json.dumps({"answers": [first.rsplit(", ", 1)[-1].rstrip(")")]})

    llm = load_llm("fake", responses=respond, cache=False, structured="schema")
    retriever = GSDRetriever.from_embedder(data.kg, _HashEmbedder(), index_kind="flat")
    out = SimGRAG(SimGRAGConfig(), data.kg, retriever, llm, dataset=data.name).run(data.items, progress=False)
    assert all(r["pattern_ok"] and r["structured"] == "schema" for r in out)
    assert all(r["pattern_prompt"][-2]["content"].startswith("{") for r in out)  # the shots show the JSON form
    assert all(r["answers"] for r in out) and llm.stats["schema_calls"] == 2 * len(out)


def test_anchored_pattern_schema_requires_the_marked_entity_in_the_first_triple():
    from kgrag_utils.methods.simgrag.stages.pattern import anchored_pattern_schema, marked_entities

    q = "who are movie co-writers of [Al Pacino]"
    assert marked_entities(q) == ["Al Pacino"] and marked_entities("who wrote it") == []
    assert marked_entities("[A] and [B] and [A]") == ["A", "B"]
    schema = anchored_pattern_schema(q)
    assert anchored_pattern_schema("what films did Ann Lee direct") is PATTERN_SCHEMA

    def reply(*triples):
        return json.dumps({"phrases": ["p"], "triples": [list(t) for t in triples]})

    assert validate_reply(reply(("Al Pacino", "wrote", "UNKNOWN movie 1"), ("UNKNOWN writer 2", "wrote", "UNKNOWN movie 1")),
                          schema) is None
    assert validate_reply(reply(("UNKNOWN movie 1", "written by", "Al Pacino")), schema) is None
    # what the 1.5B model wrote for this question under the static schema: every node UNKNOWN
    every_unknown = reply(("UNKNOWN co-writer 1", "co-wrote", "UNKNOWN movie 1"),
                          ("UNKNOWN co-writer 2", "co-wrote", "UNKNOWN movie 1"))
    assert validate_reply(every_unknown, PATTERN_SCHEMA) is None and validate_reply(every_unknown, schema) is not None
    assert validate_reply(reply(("UNKNOWN movie 1", "written by", "UNKNOWN writer 2"),
                                ("UNKNOWN movie 1", "written by", "Al Pacino")), schema) is not None
    assert validate_reply(reply(*[("Al Pacino", "wrote", f"UNKNOWN movie {i}") for i in range(7)]), schema) is not None
    assert validate_reply(reply(("Al Pacino", "wrote", "")), schema) is not None  # the static limits still hold


def test_every_movie_shot_is_valid_under_its_anchored_schema():
    from kgrag_utils.methods.simgrag.stages.pattern import anchored_pattern_schema
    from kgrag_utils.methods.simgrag.prompts import load_prompt_file

    for ex in load_prompt_file("simgrag_pattern.yaml")["families"]["movies"]:
        turn = json.dumps({"phrases": ex["phrases"], "triples": ex["triples"]})
        assert validate_reply(turn, anchored_pattern_schema(ex["question"])) is None, ex["question"]


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_llamacpp_turns_the_anchored_schema_into_a_grammar_naming_the_entity():
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    from kgrag_utils.methods.simgrag.stages.pattern import anchored_pattern_schema

    gbnf = json_schema_to_gbnf(schema_text(anchored_pattern_schema('who wrote [The "Big" Sleep]')))
    const = [ln.split(" ::= ", 1)[1] for ln in gbnf.splitlines() if "Sleep" in ln]
    # the name, JSON-escaped, is the only string allowed at the head or the tail of the first triple (6 lengths x 2)
    assert len(const) == 12 and set(const) == {'"\\"The \\\\"Big\\\\" Sleep\\""'}


def test_simgrag_anchor_entity_sends_each_question_its_schema():
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.simgrag.stages.gsd_search import GSDRetriever
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
    from kgrag_utils.methods.simgrag.stages.pattern import anchored_pattern_schema

    from test_llm_structured import _HashEmbedder

    data = load_dataset("sample-movies-2hop", limit=3)
    every_unknown = json.dumps({"phrases": ["p"], "triples": [["UNKNOWN person 1", "directed", "UNKNOWN movie 2"]]})
    llm = load_llm("fake", responses=lambda text: every_unknown if "Evidence:" not in text else '{"answers": []}',
                   cache=False, structured="schema")
    retriever = GSDRetriever.from_embedder(data.kg, _HashEmbedder(), index_kind="flat")
    static = SimGRAG(SimGRAGConfig(reader=False), data.kg, retriever, llm, dataset=data.name)
    out = static.run(data.items, progress=False)  # valid under the static schema, unusable: no known entity
    assert all(not r["pattern_ok"] and "no known entity" in r["pattern_error"] and not r["pattern_anchored"] for r in out)
    anchored = SimGRAG(SimGRAGConfig(reader=False, anchor_entity=True), data.kg, retriever, llm, dataset=data.name)
    assert anchored.pattern_schema(data.items[0].question) == anchored_pattern_schema(data.items[0].question)
    with pytest.raises(Exception, match="schema"):  # a constrained model could not have written it
        anchored.run(data.items, progress=False)
    free = SimGRAG(SimGRAGConfig(reader=False, anchor_entity=True), data.kg, retriever,
                   load_llm("fake", responses=lambda t: every_unknown, cache=False, structured="off"),
                   dataset=data.name).run(data.items, progress=False)
    assert all(not r["pattern_anchored"] for r in free)  # free text: no schema, nothing anchored


def test_relation_vocabulary_schema_allows_only_the_kg_relation_names():
    from kgrag_utils.methods.simgrag.stages.pattern import anchored_pattern_schema, pattern_schema

    rels = ["directed_by", "starred_actors", "written_by"]
    assert pattern_schema() is PATTERN_SCHEMA and pattern_schema([]) is PATTERN_SCHEMA

    def reply(*triples):
        return json.dumps({"phrases": ["p"], "triples": [list(t) for t in triples]})

    kg_spelled = reply(("UNKNOWN movie 1", "written_by", "Al Pacino"), ("UNKNOWN movie 1", "written_by", "UNKNOWN writer 2"))
    free_words = reply(("Al Pacino", "wrote", "UNKNOWN movie 1"))
    for schema in (pattern_schema(rels), anchored_pattern_schema("who are movie co-writers of [Al Pacino]", rels)):
        assert validate_reply(kg_spelled, schema) is None
        assert validate_reply(free_words, schema) is not None  # a relation outside the KG's names
        assert validate_reply(reply(("Al Pacino", "Written_By", "UNKNOWN movie 1")), schema) is not None  # exactly
        assert validate_reply(reply(("Al Pacino", "written_by", "")), schema) is not None  # node limits still hold
        assert validate_reply(reply(*[("Al Pacino", "written_by", f"UNKNOWN movie {i}") for i in range(7)]), schema) is not None
    anchored = anchored_pattern_schema("who are movie co-writers of [Al Pacino]", rels)
    assert validate_reply(reply(("UNKNOWN movie 1", "written_by", "UNKNOWN writer 2")), anchored) is not None  # anchor kept
    assert validate_reply(free_words, anchored_pattern_schema("who are movie co-writers of [Al Pacino]")) is None
    # a question without a marked entity: the relation enum alone
    assert anchored_pattern_schema("who wrote it", rels) == pattern_schema(rels)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_llamacpp_turns_the_relation_vocabulary_into_a_grammar_of_those_names():
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    from kgrag_utils.methods.simgrag.stages.pattern import anchored_pattern_schema, pattern_schema

    rels = ["directed_by", "written_by"]
    for schema in (pattern_schema(rels), anchored_pattern_schema("who wrote [Heat]", rels)):
        gbnf = json_schema_to_gbnf(schema_text(schema))
        assert '"\\"directed_by\\""' in gbnf and '"\\"written_by\\""' in gbnf, gbnf


def test_simgrag_relation_vocabulary_constrains_and_names_the_kg_relations():
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.simgrag.stages.gsd_search import GSDRetriever
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig

    from test_llm_structured import _HashEmbedder

    data = load_dataset("sample-movies-2hop", limit=3)
    kg_rels = sorted({str(r) for r in data.kg.relation_names})
    assert "starred_actors" in kg_rels and "directed_by" in kg_rels

    def pattern_for(text, relation):
        q = text.rsplit("Question:", 1)[-1]
        name = q[q.index("[") + 1: q.index("]")]
        return json.dumps({"phrases": ["p"], "triples": [["UNKNOWN movie 1", relation, name]]})

    seen = []

    def answer(text, relation):
        seen.append(text)
        return '{"answers": []}' if "Evidence:" in text else pattern_for(text, relation)

    retriever = GSDRetriever.from_embedder(data.kg, _HashEmbedder(), index_kind="flat")
    config = SimGRAGConfig(reader=False, anchor_entity=True, relation_vocabulary=True)
    llm = load_llm("fake", responses=lambda t: answer(t, "starred_actors"), cache=False, structured="schema")
    method = SimGRAG(config, data.kg, retriever, llm, dataset=data.name)
    q = data.items[0].question
    schema = method.pattern_schema(q)
    first = schema["properties"]["triples"]["anyOf"][0]["prefixItems"][0]["anyOf"][0]["prefixItems"]
    assert first[0] == {"const": q[q.index("[") + 1: q.index("]")]} and first[1] == {"enum": kg_rels}
    out = method.run(data.items, progress=False)
    assert all(r["pattern_ok"] and r["pattern_relation_enum"] and r["pattern_anchored"] for r in out)
    assert all(r["pattern_triples"][0][1] == "starred_actors" for r in out)
    system = out[0]["pattern_prompt"][0]["content"]
    assert system.endswith(", ".join(kg_rels) + ".") and "relations, spelled exactly" in system
    # a relation outside the KG's names is what a constrained model cannot write: the fake refuses it
    bad = load_llm("fake", responses=lambda t: answer(t, "acted in"), cache=False, structured="schema")
    with pytest.raises(Exception, match="schema"):
        SimGRAG(config, data.kg, retriever, bad, dataset=data.name).run(data.items, progress=False)
    # off by default and without effect in free text: the prompt and the schema are those of before
    plain = SimGRAG(SimGRAGConfig(reader=False), data.kg, retriever, llm, dataset=data.name)
    assert plain.pattern_schema(q) is PATTERN_SCHEMA and plain.relation_vocabulary is None
    assert plain.pattern_prompt(q) == build_pattern_prompt(q, plain.config.shots, plain.family, form="json")
    free_llm = load_llm("fake", responses=lambda t: answer(t, "acted in"), cache=False, structured="off")
    free = SimGRAG(config, data.kg, retriever, free_llm, dataset=data.name)
    assert free.relation_vocabulary is None and free.pattern_prompt(q) == build_pattern_prompt(q, 8, free.family)
    assert all(not r["pattern_relation_enum"] for r in free.run(data.items, progress=False))


def test_relation_vocabulary_refuses_a_kg_with_too_many_relation_names():
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.errors import ConfigError
    from kgrag_utils.methods.simgrag.stages.gsd_search import GSDRetriever
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
    from kgrag_utils.methods.simgrag import method as simgrag_module

    from test_llm_structured import _HashEmbedder

    data = load_dataset("sample-movies-2hop", limit=1)
    retriever = GSDRetriever.from_embedder(data.kg, _HashEmbedder(), index_kind="flat")
    llm = load_llm("fake", responses=lambda t: "{}", cache=False, structured="schema")
    method = SimGRAG(SimGRAGConfig(reader=False, relation_vocabulary=True), data.kg, retriever, llm, dataset=data.name)
    simgrag_module.RELATION_VOCABULARY_MAX, old = 3, simgrag_module.RELATION_VOCABULARY_MAX
    try:
        with pytest.raises(ConfigError, match="relation names, more than 3"):
            method.pattern_schema(data.items[0].question)
    finally:
        simgrag_module.RELATION_VOCABULARY_MAX = old


def test_no_stage_evaluates_model_output():
    """No eval / exec anywhere in the package, and no ast.literal_eval where model output is read (the LLM
    layer, the parsers, the methods); data loaders and the notebook-parameter reader may read literals."""
    root = Path(__file__).resolve().parents[1] / "kgrag_utils"
    output_side = [*(root / "parsers").rglob("*.py"), *(root / "llm").rglob("*.py"), *(root / "methods").rglob("*.py")]
    calls = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                builtin = isinstance(f, ast.Name) and name in ("eval", "exec")  # (torch's model.eval() is a mode switch)
                if builtin or (name == "literal_eval" and path in output_side):
                    calls.append(f"{path.relative_to(root)}:{node.lineno}")
    assert calls == []


def test_schema_text_is_canonical():
    assert schema_text(PATTERN_SCHEMA) == schema_text(json.loads(json.dumps(PATTERN_SCHEMA)))
    # every key is sorted but the property names: the same schema written in another key order is the same text
    shuffled = {"required": ["reasoning", "ids"], "additionalProperties": False, "type": "object",
                "properties": {"reasoning": {"maxLength": 200, "type": "string"},
                               "ids": {"maxItems": 10, "type": "array", "items": {"minimum": 1, "type": "integer"}}}}
    assert schema_text(shuffled) == schema_text(vr.RERANK_SCHEMA)


def test_schema_text_keeps_the_order_of_properties():
    """A grammar makes the model write properties in the schema's order: the rerank's reasoning must come before
    its ids (sorted, "ids" came first and the 1.5B counted 1, 2, 3, 4, 5 instead of choosing)."""
    text = schema_text(vr.RERANK_SCHEMA)
    assert list(json.loads(text)["properties"]) == ["reasoning", "ids"]
    assert schema_text({"type": "object", "properties": {"b": {}, "a": {}}}) != schema_text(
        {"type": "object", "properties": {"a": {}, "b": {}}})
    # a schema whose properties are already in sorted order keeps its text (and the cache keys of its calls)
    assert schema_text(PATTERN_SCHEMA) == json.dumps(PATTERN_SCHEMA, sort_keys=True, ensure_ascii=False,
                                                     separators=(",", ":"))


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_llamacpp_grammar_writes_the_rerank_reasoning_before_the_ids():
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    root = next(ln for ln in json_schema_to_gbnf(schema_text(vr.RERANK_SCHEMA)).splitlines() if ln.startswith("root"))
    assert root.index("reasoning") < root.index("ids"), root
