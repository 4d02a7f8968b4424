"""Random-weight models from configs (kgrag_utils.random_models) and the hf backend options the GPU check uses."""

from __future__ import annotations

import json

import pytest

from kgrag_utils import random_models as rm
from kgrag_utils.errors import ConfigError

pytest.importorskip("transformers")


def test_char_tokenizer_is_one_token_per_ascii_character_and_round_trips():
    tok = rm.char_tokenizer()
    text = "(Inception, directed by, UNKNOWN person 1)\n\tok"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text) and rm.UNK_ID not in ids
    assert tok.decode(ids) == text
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (rm.PAD_ID, 1, rm.EOS_ID)


def test_word_tokenizer_has_exactly_the_vocab_and_prompts_have_exactly_n_tokens():
    tok = rm.word_tokenizer(5000)
    assert len(tok) == 5000
    prompt = rm.word_prompt(321, 5000, seed=3)
    chat = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
    ids = tok(chat, add_special_tokens=False)["input_ids"]
    assert len(ids) == 321 and min(ids) >= 4 and max(ids) < 5000
    assert rm.word_prompt(321, 5000, seed=4) != prompt
    assert tok.decode([4, 4999]) == "w4 w4999"


def test_llama_31_8b_shape_has_its_parameter_count():
    import torch
    from transformers import AutoModelForCausalLM

    config = rm.llama_config(rm.LLAMA_31_8B)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == 8_030_261_248  # Llama-3.1-8B: 8.03B


def test_silenced_tokens_are_never_generated_so_every_row_runs_to_max_new_tokens(tmp_path):
    from kgrag_utils.llm import load_llm

    folder = rm.save_random_llama(tmp_path / "m", rm.TINY_LLAMA, rm.word_tokenizer(512), dtype="float32",
                                  silence=(rm.EOS_ID, rm.PAD_ID))
    llm = load_llm(str(folder), dtype="float32", cache=False, batch_size=4)
    out = llm.generate([rm.word_prompt(n, 512, seed=n) for n in (5, 17, 40, 9)], max_new_tokens=24)
    assert [(r.completion_tokens, r.finish_reason) for r in out] == [(24, "length")] * 4
    llm.close()


def test_a_plain_folder_is_not_prequantized_and_a_4bit_config_is(tmp_path):
    from kgrag_utils.llm.hf_backend import is_prequantized_4bit

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert not is_prequantized_4bit(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(
        {"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}}))
    assert is_prequantized_4bit(tmp_path)
    assert not is_prequantized_4bit(tmp_path / "missing")


@pytest.mark.parametrize("options", [{"max_new_tokens": 3}, {"no_such_field": 1}])
def test_generate_options_refuse_decoding_fields_and_unknown_names(tmp_path, options):
    from kgrag_utils.llm import load_llm

    with pytest.raises(ConfigError, match="generate_options"):
        load_llm(str(tmp_path), generate_options=options, cache=False)
