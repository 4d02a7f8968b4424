"""The CUDA code paths on a tiny random model: 4-bit loading, batched left-padded generation, the
response cache, a static KV cache, and embeddings on the device (`pytest -m cuda`).

They run on a CUDA GPU and are skipped without one, except when KGRAG_CUDA_TESTS_ON_CPU=1: then the
same bodies run on the CPU (bitsandbytes 0.45+ has CPU 4-bit kernels), which is what
`benchmarks/gpu_check.py --dry-run` does, so the GPU session's first call runs tests already proven
to pass somewhere. Models are built from configs with random weights (`kgrag_utils.random_models`).
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from kgrag_utils import random_models as rm
from kgrag_utils.llm import ResponseCache, load_llm

pytestmark = pytest.mark.cuda

PROMPTS = [
    "short",
    "a much longer prompt than the first one, so the batch needs left padding",
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."}],
    "mid length prompt",
    "x" * 90,
    "Which films did the director of Inception write?",
]


@pytest.fixture(scope="module")
def device():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        return "cuda"
    if os.environ.get("KGRAG_CUDA_TESTS_ON_CPU") == "1":
        return "cpu"
    pytest.skip("needs a CUDA GPU (KGRAG_CUDA_TESTS_ON_CPU=1 runs these bodies on the CPU)")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    pytest.importorskip("transformers")
    return rm.save_random_llama(tmp_path_factory.mktemp("tiny") / "llm", rm.TINY_LLAMA, rm.char_tokenizer(),
                                dtype="float32", seed=0)


needs_bnb = pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="needs bitsandbytes")


def _rendered_tokens(llm, prompt) -> int:
    from kgrag_utils.llm.base import normalize_prompt

    return llm.count_tokens(llm.render(normalize_prompt(prompt)))


@needs_bnb
def test_4bit_load_of_a_tiny_random_model_and_its_saved_copy(device, tiny, tmp_path):
    import bitsandbytes as bnb
    import torch

    llm = load_llm(str(tiny), quantization="4bit", device=device, cache=ResponseCache(tmp_path / "c.sqlite"))
    layers = rm.TINY_LLAMA["num_hidden_layers"]
    four_bit = [m for m in llm.model.modules() if isinstance(m, bnb.nn.Linear4bit)]
    assert len(four_bit) == 7 * layers  # q, k, v, o, gate, up, down per layer
    assert not isinstance(llm.model.lm_head, bnb.nn.Linear4bit)  # the output layer stays in bf16
    assert {p.device.type for p in llm.model.parameters()} == {device}
    assert (llm.preset.quantization, llm.preset.dtype, llm.tokenizer.padding_side) == ("4bit", "bfloat16", "left")
    out = llm.generate(PROMPTS[:2], max_new_tokens=6)
    for prompt, r in zip(PROMPTS[:2], out):
        assert r.prompt_tokens == _rendered_tokens(llm, prompt)  # padding is not counted
        assert 0 < r.completion_tokens <= 6 and not r.cached

    # a folder saved after quantization reloads as 4-bit (labelled so) and answers identically
    llm.model.save_pretrained(str(tmp_path / "q4"))
    llm.tokenizer.save_pretrained(str(tmp_path / "q4"))
    again = load_llm(str(tmp_path / "q4"), device=device, cache=False)
    assert again.preset.quantization == "4bit"
    assert any(isinstance(m, bnb.nn.Linear4bit) for m in again.model.modules())
    [a] = llm.generate([PROMPTS[3]], max_new_tokens=8)
    [b] = again.generate([PROMPTS[3]], max_new_tokens=8)
    assert a.text == b.text and a.completion_tokens == b.completion_tokens
    llm.close()
    again.close()
    if device == "cuda":
        torch.cuda.empty_cache()


def test_batched_left_padded_generation_equals_one_at_a_time(device, tiny):
    llm = load_llm(str(tiny), dtype="float32", device=device, cache=False, batch_size=len(PROMPTS))
    assert llm.model.device.type == device
    batched = llm.generate(PROMPTS, max_new_tokens=12)
    llm.batch_size = 1
    single = llm.generate(PROMPTS, max_new_tokens=12)
    lengths = {r.prompt_tokens for r in batched}
    assert len(lengths) == len(PROMPTS)  # every row of the batch had a different length: padding was exercised
    for b, s, prompt in zip(batched, single, PROMPTS):
        assert (b.text, b.completion_tokens, b.finish_reason) == (s.text, s.completion_tokens, s.finish_reason)
        assert b.prompt_tokens == s.prompt_tokens == _rendered_tokens(llm, prompt)
    llm.close()


def test_static_kv_cache_gives_the_same_greedy_text_and_its_own_cache_key(device, tiny):
    dynamic = load_llm(str(tiny), dtype="float32", device=device, cache=False, batch_size=4)
    static = load_llm(str(tiny), dtype="float32", device=device, cache=False, batch_size=4,
                      generate_options={"cache_implementation": "static", "disable_compile": True})
    a = dynamic.generate(PROMPTS[:4], max_new_tokens=10)
    b = static.generate(PROMPTS[:4], max_new_tokens=10)
    assert [r.text for r in a] == [r.text for r in b]
    assert dynamic.cache_key(PROMPTS[0]) != static.cache_key(PROMPTS[0])
    dynamic.close()
    static.close()


def test_response_cache_serves_reruns_and_a_fresh_process(device, tiny, tmp_path):
    path = tmp_path / "responses.sqlite"
    llm = load_llm(str(tiny), dtype="float32", device=device, cache=ResponseCache(path))
    first = llm.generate(PROMPTS[:3], max_new_tokens=8)
    assert not any(r.cached for r in first)
    done = llm.stats["completion_tokens"]
    again = llm.generate(PROMPTS[:3], max_new_tokens=8)
    assert all(r.cached for r in again) and [r.text for r in again] == [r.text for r in first]
    assert llm.stats["completion_tokens"] == done
    llm.close()
    fresh = load_llm(str(tiny), dtype="float32", device=device, cache=ResponseCache(path))
    third = fresh.generate(PROMPTS[:3], max_new_tokens=8)
    assert all(r.cached for r in third) and [r.text for r in third] == [r.text for r in first]
    assert fresh.stats["completion_tokens"] == 0 and fresh.stats["cache_hits"] == 3
    fresh.close()


def test_embeddings_on_the_device_match_the_cpu_and_are_cached(device, tmp_path):
    pytest.importorskip("sentence_transformers")
    from kgrag_utils.embeddings import load_embedder

    folder = rm.save_tiny_bert_embedder(tmp_path / "emb")
    texts = ["The Matrix", "Keanu Reeves", "directed_by", "a longer entity name (1999 film)", "x"]
    on_device = load_embedder(str(folder), device=device, cache=False)
    on_cpu = load_embedder(str(folder), device="cpu", cache=False)
    v = on_device.encode(texts)
    assert on_device.model.device.type == device
    assert v.shape == (len(texts), 64) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(v, on_cpu.encode(texts), atol=1e-4)

    cached = load_embedder(str(folder), device=device)
    first = cached.encode(texts)
    assert cached.last_stats["encoded"] == len(texts)
    reread = load_embedder(str(folder), device=device)  # a new Embedder reads the vector cache from disk
    np.testing.assert_array_equal(reread.encode(texts), first)
    assert reread.last_stats["cache_hits"] == len(texts) and not reread.model_loaded
