"""Random-weight models built from configs: GPU checks and tests without downloading any weights.

Everything here is built on the machine that runs it (the installed transformers writes its own
folder format): a Llama-architecture causal LM of any shape (``LLAMA_31_8B`` is Llama-3.1-8B's),
its tokenizer made with the `tokenizers` library, and a tiny BERT folder that sentence-transformers
loads with mean pooling. Their outputs are meaningless: they exercise code paths (loading, 4-bit
quantization, batching, caches, embeddings on a device) and measure speed, never quality.

Tokenizers:
- ``char_tokenizer``: one token per printable ASCII character (and newline / tab), decoding fuses
  the characters back, so a text of n ASCII characters is n tokens. A random model's replies are
  random characters: good for "an unparseable reply is a failure, not a crash".
- ``word_tokenizer(vocab_size)``: exactly ``vocab_size`` entries (4 special tokens and the words
  ``w4 .. w{vocab_size-1}``), split on whitespace, so ``word_prompt(n)`` is exactly n tokens and
  every id a model can generate decodes.

Special ids are the same in both: pad 0, bos 1, eos 2, unk 3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

__all__ = [
    "EOS_ID", "LLAMA_31_8B", "PAD_ID", "TINY_LLAMA", "char_tokenizer", "llama_config", "save_random_llama",
    "save_tiny_bert_embedder", "word_prompt", "word_tokenizer",
]

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
_SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]

#: Llama-3.1-8B's architecture (its config.json on the hub): 8.03B parameters, untied embeddings.
LLAMA_31_8B: dict[str, Any] = dict(
    vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
    rms_norm_eps=1e-5, tie_word_embeddings=False, hidden_act="silu",
    rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
)

#: a tiny Llama (about 1.3M parameters with the char tokenizer); dimensions are multiples of 64 for 4-bit blocks
TINY_LLAMA: dict[str, Any] = dict(
    hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=64, max_position_embeddings=16384, tie_word_embeddings=False,
)

CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
WORD_CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }} {% endfor %}"


def _fast_tokenizer(tok, chat_template: str):
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")
    fast.chat_template = chat_template
    return fast


def char_tokenizer(chat_template: str = CHAT_TEMPLATE):
    """One token per printable ASCII character, newline and tab (others map to <unk>)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = _SPECIALS + ["\n", "\t"] + [chr(c) for c in range(32, 127)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.decoder = decoders.Fuse()
    return _fast_tokenizer(tok, chat_template)


def word_tokenizer(vocab_size: int, chat_template: str = WORD_CHAT_TEMPLATE):
    """Exactly `vocab_size` tokens: the 4 specials, then the words w4 .. w{vocab_size-1}; whitespace split."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    if vocab_size <= len(_SPECIALS):
        raise ValueError(f"vocab_size must exceed {len(_SPECIALS)}, got {vocab_size}")
    vocab = {w: i for i, w in enumerate(_SPECIALS)}
    vocab.update({f"w{i}": i for i in range(len(_SPECIALS), vocab_size)})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return _fast_tokenizer(tok, chat_template)


def word_prompt(n_tokens: int, vocab_size: int, seed: int) -> str:
    """A prompt of exactly `n_tokens` random words of `word_tokenizer(vocab_size)` (distinct per seed)."""
    import numpy as np

    ids = np.random.default_rng(seed).integers(len(_SPECIALS), vocab_size, size=n_tokens)
    return " ".join(f"w{i}" for i in ids)


def llama_config(shape: dict[str, Any], vocab_size: int | None = None):
    """A LlamaConfig of the given shape with this module's special ids (vocab_size overrides the shape's)."""
    from transformers import LlamaConfig

    fields = dict(shape)
    if vocab_size is not None:
        fields["vocab_size"] = int(vocab_size)
    return LlamaConfig(**fields, pad_token_id=PAD_ID, bos_token_id=BOS_ID, eos_token_id=EOS_ID)


def save_random_llama(folder: str | Path, shape: dict[str, Any], tokenizer, *, seed: int = 0,
                      dtype: str = "bfloat16", device: str = "cpu", silence: Sequence[int] = ()) -> Path:
    """Build a randomly initialised Llama of `shape` on `device`, save it with `tokenizer` to `folder`.

    silence: token ids whose output-embedding rows are zeroed, so their logit is exactly 0 while the
    largest of the other random logits is positive: greedy decoding never picks them. Silencing
    eos and pad makes every row of a batch run to max_new_tokens (fixed lengths for throughput).
    """
    import torch
    from transformers import AutoModelForCausalLM

    folder = Path(folder)
    config = llama_config(shape, vocab_size=len(tokenizer))
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    with torch.no_grad():
        for i in silence:
            model.lm_head.weight[int(i)].zero_()
    model.generation_config.pad_token_id = PAD_ID
    model.generation_config.eos_token_id = EOS_ID
    model.generation_config.bos_token_id = BOS_ID
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    del model
    return folder


def save_tiny_bert_embedder(folder: str | Path, seed: int = 0, hidden_size: int = 64) -> Path:
    """A tiny random BERT (character WordPiece vocabulary) saved as a plain transformers folder.

    sentence-transformers loads such a folder with mean pooling (`SentenceTransformer(folder)`), so
    `kgrag_utils.embeddings.load_embedder(str(folder))` works with any sentence-transformers version.
    """
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    folder = Path(folder)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = [chr(c) for c in range(33, 127)]
    vocab = {w: i for i, w in enumerate(specials + chars + [f"##{c}" for c in chars])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=256)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=hidden_size, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=2 * hidden_size, max_position_embeddings=256, pad_token_id=0)
    torch.manual_seed(seed)
    BertModel(cfg).save_pretrained(str(folder))
    fast.save_pretrained(str(folder))
    return folder
