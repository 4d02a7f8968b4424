"""The OpenAI-compatible backend.

Most tests talk to a protocol-level fake server on 127.0.0.1 (tests/fake_openai.py: http.server in a
thread, canned OpenAI-format JSON), so they check our requests and parsing, not a model. One slow test runs
the real llama-cpp-python server (`python -m llama_cpp.server`, installed with the `llamacpp` extra)
on loopback with the packaged SmolLM2 model; CI never skips it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from kgrag_utils import settings
from kgrag_utils.errors import BackendUnavailableError, ConfigError
from kgrag_utils.llm import ResponseCache, load_llm

from fake_openai import FakeOpenAIServer


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:  # "reply to: <last message>", model "served-model"
        yield srv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_generate_sends_openai_requests_and_reads_usage(server, tmp_path):
    llm = load_llm("llama-3.1-8b", backend="openai", base_url=server.base_url, model="served-model",
                   api_key="sk-test", cache=ResponseCache(tmp_path / "c.sqlite"))
    assert llm.backend_name == "openai" and llm.model_id == "served-model"
    out = llm.generate(["first", [{"role": "system", "content": "s"}, {"role": "user", "content": "second"}]],
                       max_new_tokens=7, stop=["\n\n"])
    assert [r.text for r in out] == ["reply to: first", "reply to: second"]
    assert out[0].prompt_tokens == 15 and out[0].completion_tokens == 3 and out[0].finish_reason == "stop"
    bodies = sorted((r["body"] for r in server.requests), key=lambda b: len(b["messages"]))
    assert bodies[0]["max_tokens"] == 7 and bodies[0]["temperature"] == 0.0 and bodies[0]["stop"] == ["\n\n"]
    assert bodies[1]["messages"][0] == {"role": "system", "content": "s"}
    assert {r["path"] for r in server.requests} == {"/v1/chat/completions"}
    assert server.requests[0]["auth"] == "Bearer sk-test"

    n = len(server.requests)
    again = llm.generate(["first"], max_new_tokens=7, stop=["\n\n"])
    assert again[0].cached and again[0].text == "reply to: first" and len(server.requests) == n


def test_unknown_served_model_lists_what_the_server_has(server):
    with pytest.raises(ConfigError, match="served-model"):
        load_llm("qwen2.5-7b", backend="openai", base_url=server.base_url, cache=False)


def test_unreachable_url_fails_fast_with_one_line(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(BackendUnavailableError) as e:
        load_llm("llama-3.1-8b", backend="openai", base_url=url, cache=False)
    msg = str(e.value)
    assert url in msg and "\n" not in msg and "port" in msg


def test_server_errors_are_retried_then_reported(server):
    llm = load_llm("llama-3.1-8b", backend="openai", base_url=server.base_url, model="served-model",
                   cache=False, max_retries=2)
    server.fail_next = 2
    assert llm.chat("hello").text == "reply to: hello"
    server.fail_next = 5
    with pytest.raises(BackendUnavailableError, match="HTTP 503"):
        llm.chat("again")


SERVER_MODULES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")


def _require_llama_server() -> None:
    """The real-server test runs wherever llama-cpp-python is installed (its `llamacpp` extra brings the server).

    It skips only on a machine set up without llama.cpp (`make setup EXTRAS=...` without `llamacpp`), and
    never in CI (`.ci/run` sets CI): there a missing server is a failure.
    """
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if not missing:
        return
    msg = f"llama-cpp-python[server] is not installed (missing {', '.join(missing)}): pip install -e '.[llamacpp]'"
    if os.environ.get("CI") or importlib.util.find_spec("llama_cpp") is not None:
        pytest.fail(msg)
    pytest.skip(msg)


REQUEST_TIMEOUT_S = 300


@pytest.mark.slow
def test_real_llama_cpp_server_with_smollm2(tmp_path):
    from kgrag_utils.llm.gguf_assets import assemble
    from kgrag_utils.llm.presets import get_preset

    _require_llama_server()
    model_path = assemble(get_preset("smollm2-135m").gguf)
    port = _free_port()
    log = open(tmp_path / "server.log", "wb")  # a file, not a pipe: the server logs a lot and would block
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--model_alias", "smollm2",
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", str(settings.llm_threads()),
         "--n_threads_batch", str(settings.llm_threads())],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):  # bounded: 5 minutes at most, for a machine whose cores other jobs hold
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {(tmp_path / 'server.log').read_text()[-500:]}")
            try:
                urllib.request.urlopen(base + "/models", timeout=1).read()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("llama_cpp.server did not answer within 5 minutes")
        # every request is bounded (timeout_s): a hung server fails the test instead of stalling CI. A few
        # seconds each on an idle machine; minutes when other jobs hold both cores at a higher priority
        llm = load_llm("smollm2-135m", backend="openai", base_url=base, model="smollm2",
                       cache=ResponseCache(tmp_path / "c.sqlite"), timeout_s=REQUEST_TIMEOUT_S, max_retries=0)
        assert "smollm2" in llm.served_models
        r = llm.chat("Name one colour.", max_new_tokens=12)
        assert r.text.strip() and r.prompt_tokens > 0 and 0 < r.completion_tokens <= 12 and not r.cached
        r2 = llm.chat("Name one colour.", max_new_tokens=12)
        assert r2.cached and r2.text == r.text
        # a batch goes out as concurrent requests; the server answers each in order
        batch = llm.generate(["Count: one, two,", [{"role": "user", "content": "Say yes."}]], max_new_tokens=6)
        assert len(batch) == 2 and all(b.completion_tokens > 0 and not b.cached for b in batch)

        # structured decoding: json_schema first; a server that refuses it gets json_object, recorded.
        # llama-cpp-python's server (0.3.36) takes response_format type "text" or "json_object" only.
        js = load_llm("smollm2-135m", backend="openai", base_url=base, model="smollm2", cache=False,
                      timeout_s=REQUEST_TIMEOUT_S, max_retries=0, structured="schema")
        shape = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}
        first = js.chat('Name one colour. Reply in JSON: {"colour": "..."}', schema=shape, max_new_tokens=48)
        second = js.chat('Name another colour. Reply in JSON: {"colour": "..."}', schema=shape, max_new_tokens=48)
        for res in (first, second):
            assert res.error is None and res.finish_reason == "stop", res
            assert isinstance(json.loads(res.text), dict), res.text  # the server's grammar: a JSON object
        if first.structured == "schema":  # a server that honours json_schema: the object has the schema's shape
            assert isinstance(json.loads(first.text)["colour"], str)
            assert js.describe()["schema_fallback"] is None
        else:
            assert first.structured == second.structured == "json_object"
            # 0.3.x answers its request validation error with HTTP 500 naming response_format (a 4xx elsewhere)
            assert "response_format" in js.describe()["schema_fallback"], js.describe()["schema_fallback"]
            assert js.stats["schema_fallbacks"] == 2
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()
