"""The decoding option `structured="schema" | "off"`: cache keys, every backend's mechanism, prompts that do not fit.

The fake test double and a protocol-level fake OpenAI server run everywhere; the llama.cpp test uses
the packaged Qwen2.5-Coder-0.5B model (slow), and the transformers test a tiny random model with
xgrammar (slow; skipped without the `structured-hf` extra).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import BaseModel

from kgrag_utils.errors import ConfigError
from kgrag_utils.llm import GenerationConfig, ResponseCache, load_llm
from kgrag_utils.llm.cache import make_cache_key
from kgrag_utils.llm.structured import schema_dict, schema_text, validate_reply


class Answers(BaseModel):
    answers: list[str]


IDS = {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer"}}}, "required": ["ids"]}


@pytest.fixture
def cache(tmp_path):
    return ResponseCache(tmp_path / "responses.sqlite")


def _old_key(llm, prompt: str, max_new_tokens: int = 256) -> str:
    """The key formula from before the option existed (a free-text key must stay exactly this)."""
    gen = {"max_new_tokens": max_new_tokens, "temperature": 0.0, "top_p": 1.0, "seed": None, "stop": []}
    return make_cache_key({**llm._key_parts(), "messages": [{"role": "user", "content": prompt}], "gen": gen})


def test_off_keys_are_unchanged_and_ignore_schemas(cache):
    off = load_llm("fake", responses=['{"answers": ["x"]}'], cache=cache)
    assert off.structured == "off"
    plain = off.cache_key("q")
    assert plain == _old_key(off, "q")
    assert off.cache_key("q", GenerationConfig(schema=Answers)) == plain  # "off": the stage's schema is dropped
    r = off.generate(["q"], schema=Answers)[0]
    assert r.structured is None and off.stats["schema_calls"] == 0


def test_schema_keys_change_with_the_mode_and_with_the_schema(cache):
    on = load_llm("fake", responses=['{"answers": ["x"]}'], cache=cache, structured="schema")
    off = load_llm("fake", responses=['{"answers": ["x"]}'], cache=cache, structured="off")
    k_answers = on.cache_key("q", GenerationConfig(schema=Answers))
    k_ids = on.cache_key("q", GenerationConfig(schema=IDS))
    k_off = off.cache_key("q", GenerationConfig(schema=Answers))
    assert len({k_answers, k_ids, k_off}) == 3
    assert on.cache_key("q") == k_off  # a call without a schema is free text in either mode
    # the same shape as a pydantic model or as its schema dict is one key
    assert on.cache_key("q", GenerationConfig(schema=schema_dict(Answers))) == k_answers
    # a cached free-text answer is never served to a schema call, and vice versa
    off.generate(["q"], schema=Answers)
    r = on.generate(["q"], schema=Answers)[0]
    assert not r.cached and r.structured == "schema" and on.stats["schema_calls"] == 1
    assert on.generate(["q"], schema=Answers)[0].cached


def test_mode_is_validated_recorded_and_settable():
    with pytest.raises(ConfigError, match="structured must be one of"):
        load_llm("fake", cache=False, structured="json")
    llm = load_llm("fake", cache=False, structured="schema")
    assert llm.describe()["structured"] == "schema"
    assert llm.set_structured("off").structured == "off"
    with pytest.raises(ConfigError):
        GenerationConfig(schema="{not json")


def test_fake_honours_the_schema_like_a_constrained_decoder(cache):
    llm = load_llm("fake", responses={"good": '{"answers": ["Paris", "Lyon"]}', "bad": "Paris"}, cache=cache,
                   structured="schema")
    assert json.loads(llm.chat("good", schema=Answers).text) == {"answers": ["Paris", "Lyon"]}
    with pytest.raises(ConfigError, match="not valid under the call's schema"):
        llm.chat("bad", schema=Answers)
    cut = llm.chat("good", schema=Answers, max_new_tokens=1)  # cut by the token limit: no longer valid JSON
    assert cut.truncated and validate_reply(cut.text, schema_text(Answers)) is not None


def test_prompt_that_does_not_fit_is_a_per_example_result_not_an_exception(cache):
    llm = load_llm("fake", responses=lambda t: "ok", cache=cache, n_ctx=50)
    long = "word " * 100
    short, too_long = llm.generate(["short question", long], max_new_tokens=10)
    assert short.text == "ok" and short.error is None
    assert too_long.text == "" and too_long.finish_reason == "prompt_too_long"
    assert "context window of 50" in too_long.error and "\n" not in too_long.error
    assert llm.stats["prompt_too_long"] == 1
    assert not llm.generate([long], max_new_tokens=10)[0].cached  # never cached: a larger n_ctx can answer it


class _HashEmbedder:
    """Deterministic unit vectors per text (exact names match exactly: enough for gold patterns)."""

    dim = 32

    def encode(self, texts, progress=None):
        import hashlib

        import numpy as np

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            v = np.random.default_rng(int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little"))
            out[i] = v.normal(size=self.dim)
            out[i] /= np.linalg.norm(out[i])
        return out


def test_simgrag_run_records_a_prompt_too_long_question_as_that_questions_failure(tmp_path):
    """issue 17 case 8: one 45k-character question in a run; the run goes on and records why."""
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.simgrag.stages.gsd_search import GSDRetriever
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
    from kgrag_utils.methods.simgrag.stages.replay import replay_gold_llm
    from kgrag_utils.records import RunRecorder

    data = load_dataset("sample-movies-1hop", limit=3)
    qs = list(data.items)
    big = dataclasses.replace(qs[0], qid="huge", question="which film " * 4500)
    gold = replay_gold_llm(qs)
    llm = load_llm("fake", responses=gold.responses, cache=False, n_ctx=4000)
    retriever = GSDRetriever.from_embedder(data.kg, _HashEmbedder(), index_kind="flat")
    rec = RunRecorder("simgrag", {"t": 1}, run_name="too-long", root=tmp_path)
    out = SimGRAG(SimGRAGConfig(), data.kg, retriever, llm, dataset=data.name).run([big] + qs, recorder=rec, progress=False)
    by_id = {r["id"]: r for r in out}
    assert by_id["huge"]["failed"] and by_id["huge"]["failure"] == "pattern"
    assert "context window" in by_id["huge"]["pattern_error"]
    assert all(not by_id[q.qid]["failed"] for q in qs)
    assert {r["id"] for r in rec.examples} == {"huge"} | {q.qid for q in qs}


# ----------------------------------------------------------------------------- OpenAI-compatible servers
class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, code, payload):
        body = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send(200, {"data": [{"id": "m"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        fmt = body.get("response_format") or {}
        if len(body["messages"][-1]["content"]) > 500:
            return self._send(400, {"error": {"message": "This model's maximum context length is 128 tokens"}})
        if fmt.get("type") == "json_schema" and self.server.refuse_schema == 500:  # llama-cpp-python's server
            return self._send(500, {"error": {"message": "1 validation error: {'type': 'literal_error', 'loc': "
                                              "('body', 'response_format', 'type'), 'msg': \"Input should be "
                                              "'text' or 'json_object'\", 'input': 'json_schema'}"}})
        if fmt.get("type") == "json_schema" and self.server.refuse_schema:
            return self._send(400, {"error": {"message": "response_format json_schema is not supported"}})
        text = '{"ids": [1, 2]}' if fmt else "free text"
        self._send(200, {"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": 4}})


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.bodies, httpd.refuse_schema = [], False
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    httpd.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_openai_sends_json_schema_and_falls_back_to_json_object_recorded(server):
    llm = load_llm("qwen2.5-7b", backend="openai", base_url=server.base_url, model="m", cache=False, structured="schema")
    r = llm.chat("pick", schema=IDS)
    assert server.bodies[-1]["response_format"]["type"] == "json_schema"
    assert server.bodies[-1]["response_format"]["json_schema"]["schema"] == IDS
    assert r.structured == "schema" and llm.describe()["schema_fallback"] is None

    server.refuse_schema = True
    r = llm.chat("pick again", schema=IDS)
    assert [b.get("response_format", {}).get("type") for b in server.bodies[-2:]] == ["json_schema", "json_object"]
    assert r.structured == "json_object" and r.text == '{"ids": [1, 2]}'
    assert llm.stats["schema_fallbacks"] == 1 and "not supported" in llm.describe()["schema_fallback"]
    llm.chat("third", schema=IDS)  # the fallback is kept: no second refused request
    assert server.bodies[-1]["response_format"] == {"type": "json_object"} and len(server.bodies) == 4

    free = load_llm("qwen2.5-7b", backend="openai", base_url=server.base_url, model="m", cache=False)
    assert free.chat("pick", schema=IDS).text == "free text" and "response_format" not in server.bodies[-1]


def test_openai_falls_back_when_the_refusal_comes_as_http_500(server):
    server.refuse_schema = 500  # llama-cpp-python's server rejects json_schema with HTTP 500, not 4xx
    llm = load_llm("qwen2.5-7b", backend="openai", base_url=server.base_url, model="m", cache=False,
                   structured="schema", max_retries=2)
    r = llm.chat("pick", schema=IDS)
    assert [b.get("response_format", {}).get("type") for b in server.bodies] == ["json_schema", "json_object"]  # not retried
    assert r.structured == "json_object" and llm.describe()["schema_fallback"].startswith("HTTP 500")


def test_openai_context_length_error_is_a_per_example_result(server):
    llm = load_llm("qwen2.5-7b", backend="openai", base_url=server.base_url, model="m", cache=False)
    ok, long = llm.generate(["short", "x" * 600])
    assert ok.text == "free text"
    assert long.finish_reason == "prompt_too_long" and "maximum context length" in long.error


# ----------------------------------------------------------------------------- real engines (slow)
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_llamacpp_grammar_from_schema_and_context_overflow(tmp_path):
    llm = load_llm("qwen2.5-coder-0.5b", backend="llamacpp", cache=ResponseCache(tmp_path / "c.sqlite"),
                   structured="schema", n_ctx=512)
    prompt = "Which cities are in France? Paris, Berlin, Lyon. Answer with a JSON list."
    r = llm.chat(prompt, schema=Answers, max_new_tokens=48)
    assert r.structured == "schema" and validate_reply(r.text, schema_text(Answers)) is None
    assert json.loads(r.text)["answers"]  # the grammar forced the object shape the prompt did not name
    free = llm.set_structured("off").chat(prompt, schema=Answers, max_new_tokens=48)
    assert free.structured is None and not free.cached
    too_long = llm.chat("word " * 2000, max_new_tokens=8)
    assert too_long.finish_reason == "prompt_too_long" and "512" in too_long.error
    llm.close()


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("xgrammar") is None, reason="xgrammar (extra structured-hf) not installed")
def test_transformers_xgrammar_constrains_a_tiny_random_model(tmp_path):
    import torch
    import transformers

    from kgrag_utils.llm.gguf_assets import assemble
    from kgrag_utils.llm.presets import get_preset

    gguf = assemble(get_preset("qwen2.5-coder-0.5b").gguf)
    tok = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    cfg = transformers.Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512)
    torch.manual_seed(0)
    transformers.Qwen2ForCausalLM(cfg).save_pretrained(str(tmp_path / "tiny"))
    tok.save_pretrained(str(tmp_path / "tiny"))
    llm = load_llm(str(tmp_path / "tiny"), backend="hf", cache=False, structured="schema")
    shape = {"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}}, "required": ["verdict"],
             "additionalProperties": False}
    out = llm.generate(["Is it?", "Is it not?"], schema=shape, max_new_tokens=24)
    for r in out:  # random weights, yet every finished reply is valid under the schema
        assert r.structured == "schema"
        if not r.truncated:
            assert validate_reply(r.text, shape) is None
    assert any(not r.truncated for r in out)
    small = load_llm(str(tmp_path / "tiny"), backend="hf", cache=False, context_length=64)
    fits, too_long = small.generate(["Is it?", "word " * 100], max_new_tokens=8)
    assert fits.finish_reason != "prompt_too_long" and too_long.finish_reason == "prompt_too_long"
    assert "context window of 64" in too_long.error
