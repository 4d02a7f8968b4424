"""Prompt-token counting without loading a model's weights (for the no-LLM benchmark).

The packaged default CPU model's GGUF file carries its tokenizer; llama.cpp can open the file
with `vocab_only=True` in under a second. When that is unavailable the count falls back to
whitespace words, and the counter says so in its `name`, so numbers are never mislabelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["TokenCounter", "load_token_counter"]


@dataclass
class TokenCounter:
    name: str
    count: Callable[[str], int]

    def __call__(self, text: str) -> int:
        return int(self.count(text))


def load_token_counter(preset: str | None = None) -> TokenCounter:
    """The tokenizer of a packaged GGUF preset (default: the default CPU preset), else whitespace."""
    try:
        from llama_cpp import Llama

        from ....llm import DEFAULT_CPU_PRESET, get_preset
        from ....llm.gguf_assets import assemble

        spec = get_preset(preset or DEFAULT_CPU_PRESET)
        if spec.gguf is None:
            raise ValueError("no packaged GGUF")
        model = Llama(model_path=str(assemble(spec.gguf)), vocab_only=True, verbose=False)

        def count(text: str) -> int:
            return len(model.tokenize(text.encode("utf-8"), add_bos=False, special=False))

        return TokenCounter(f"{spec.name} tokenizer (GGUF vocab)", count)
    except Exception:  # no llama.cpp, no packaged model: an honest, labelled approximation
        return TokenCounter("whitespace words", lambda text: len(text.split()))
