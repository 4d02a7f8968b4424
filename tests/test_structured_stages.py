"""Every LLM stage's declared answer shape: its JSON-form shots are valid under it, its parser reads it
(also cut by the token limit), schema mode runs end to end with the fake, and no stage evaluates output."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kgrag_utils.llm import load_llm
from kgrag_utils.llm.structured import schema_text, validate_reply
from kgrag_utils.methods.compact.prompts import ANSWER_SCHEMA as COMPACT_ANSWER, kgqa_prompt, kinship_schema, parse_answers
from kgrag_utils.methods.compact.prompts import parse_kinship_answer
from kgrag_utils.methods.kgp.prompts import READER_SCHEMA, clean_answer, reader_prompt, reader_schema
from kgrag_utils.methods.simgrag.generate import ANSWER_SCHEMA, build_answer_prompt, parse_answer
from kgrag_utils.methods.simgrag.pattern import PATTERN_SCHEMA, build_pattern_prompt, parse_pattern_output
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
    from kgrag_utils.methods.simgrag import GSDRetriever, SimGRAG, oracle_pattern

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
    out = SimGRAG(data.kg, retriever, llm, dataset=data.name).run(data.items, progress=False)
    assert all(r["pattern_ok"] and r["structured"] == "schema" for r in out)
    assert all(r["pattern_prompt"][-2]["content"].startswith("{") for r in out)  # the shots show the JSON form
    assert all(r["answers"] for r in out) and llm.stats["schema_calls"] == 2 * len(out)


def test_no_stage_evaluates_model_output():
    """No eval / exec anywhere in the package, and no ast.literal_eval where model output is read (the LLM
    layer, the parsers, the methods); data loaders and the notebook-parameter reader may read literals."""
    root = Path(__file__).resolve().parents[1] / "kgrag_utils"
    output_side = [root / "parsers.py", *(root / "llm").rglob("*.py"), *(root / "methods").rglob("*.py")]
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
