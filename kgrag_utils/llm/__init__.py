"""LLMs behind one interface: presets by name, several backends, a persistent response cache.

    from kgrag_utils.llm import load_llm, GenerationConfig
    llm = load_llm()                      # DEFAULT_CPU_PRESET, offline, on CPU
    [r] = llm.generate(["Name a colour."], max_new_tokens=8)
    r.text, r.prompt_tokens, r.completion_tokens, r.cached

Backends: "hf" (transformers; bitsandbytes 4-bit), "llamacpp" (llama-cpp-python on GGUF files),
"openai" (any OpenAI-compatible server by base_url), "fake" (a test double), and "auto" for the
packaged GGUF presets: llama.cpp when llama-cpp-python is importable, else transformers. The choice
is printed once and is part of `llm.backend_name` and of every cache key.

Decoding mode: `load_llm(..., structured="schema")` constrains every stage's answer to the JSON
schema the stage passes (`llm.generate(prompts, schema=Shape)`); "off" is free text. The default
is the preset's `structured` field (see structured.py).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .base import LLM, GenerationConfig, LLMResult
from .cache import ResponseCache, default_cache_path
from .presets import DEFAULT_CPU_PRESET, PRESETS, PackagedGGUF, Preset, get_preset, list_presets
from .structured import STRUCTURED_MODES, check_mode

BACKENDS = ("auto", "hf", "llamacpp", "openai", "fake")

__all__ = [
    "BACKENDS", "DEFAULT_CPU_PRESET", "GenerationConfig", "LLM", "LLMResult", "PRESETS", "PackagedGGUF",
    "Preset", "ResponseCache", "STRUCTURED_MODES", "get_preset", "list_presets", "load_llm", "resolve_backend",
]

_announced: set[str] = set()


def resolve_backend(preset: Preset, backend: str | None) -> str:
    """The concrete backend for a preset: an explicit choice, or the preset's default ("auto" resolved)."""
    choice = backend or preset.backend
    if choice not in BACKENDS:
        raise ConfigError(f"unknown LLM backend {choice!r}: use one of {list(BACKENDS)}.")
    if choice != "auto":
        if choice == "llamacpp" and preset.quantization == "4bit":
            raise ConfigError("the llamacpp backend runs GGUF files and cannot use bitsandbytes 4-bit: use backend='hf'.")
        return choice
    from .llamacpp_backend import llamacpp_available

    if preset.packaged and preset.quantization == "gguf" and llamacpp_available():
        concrete, why = "llamacpp", "llama-cpp-python is installed; backend='hf' forces transformers"
    else:
        concrete = "hf"
        why = (
            "4-bit needs transformers" if preset.quantization == "4bit"
            else "llama-cpp-python not installed (`pip install -e '.[llamacpp]'` is 5-7x faster on CPU)"
            if preset.packaged else "hub model"
        )
    message = f"[kgrag.llm] {preset.name}: backend=auto -> {concrete} ({why})"
    if message not in _announced:  # printed once per process and choice
        _announced.add(message)
        print(message)
    return concrete


def _open_cache(cache: Any) -> ResponseCache | None:
    if cache is None or cache is False:
        return None
    if cache is True:
        return ResponseCache(default_cache_path())
    if isinstance(cache, ResponseCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return ResponseCache(Path(cache))
    raise ConfigError(f"cache must be True, False, a path or a ResponseCache, got {type(cache).__name__}.")


def _construct(cls, name: str, *args, **kwargs):
    params = inspect.signature(cls.__init__).parameters
    unknown = sorted(k for k in kwargs if k not in params)
    if unknown:
        allowed = sorted(k for k in params if k not in ("self", "preset", "cache"))
        preset_fields = sorted(Preset.__dataclass_fields__)
        raise ConfigError(
            f"unknown option(s) {unknown} for the {name} backend: use preset fields {preset_fields} or options {allowed}."
        )
    return cls(*args, **kwargs)


def load_llm(preset: str = DEFAULT_CPU_PRESET, backend: str | None = None, cache: Any = True,
             structured: str | None = None, **overrides: Any) -> LLM:
    """Load a model by preset name (or a local model folder) on a backend.

    structured: the decoding mode, "off" (free text) or "schema" (constrained to each call's schema);
    None = the preset's default. overrides: any Preset field (quantization="4bit", revision=...,
    dtype=...) or a backend option (hf: device, batch_size; llamacpp: n_ctx, n_threads; openai:
    base_url, model, api_key; fake: responses, default, n_ctx). cache: True (the shared SQLite
    cache), False, a path, or a ResponseCache.
    """
    if backend is not None and backend not in BACKENDS:
        raise ConfigError(f"unknown LLM backend {backend!r}: use one of {list(BACKENDS)}.")
    if structured is not None:
        structured = check_mode(structured)
    if preset == "fake" or backend == "fake":
        from .fake_backend import FakeLLM

        return _construct(FakeLLM, "fake", _open_cache(cache), **overrides).set_structured(structured)

    if isinstance(preset, Preset):
        base = preset
    elif isinstance(preset, (str, os.PathLike)) and str(preset) not in PRESETS and Path(preset).is_dir():
        from .hf_backend import is_prequantized_4bit

        folder = Path(preset).resolve()
        four_bit = is_prequantized_4bit(folder)  # a folder saved after 4-bit quantization stays 4-bit
        base = Preset(name=folder.name, backend="hf", hub_id=str(folder), quantization="4bit" if four_bit else "none",
                      dtype="bfloat16" if four_bit else "auto", notes="local model folder")
    else:
        base = get_preset(preset)
    fields = {k: overrides.pop(k) for k in list(overrides) if k in Preset.__dataclass_fields__}
    if fields.get("quantization") == "4bit" and "dtype" not in fields:
        fields["dtype"] = "bfloat16"  # bitsandbytes computes in bf16 whatever the source dtype was
    spec = base.replace(**fields) if fields else base
    concrete = resolve_backend(spec, backend)
    store = _open_cache(cache)
    if concrete == "hf":
        from .hf_backend import HFBackendLLM as cls
    elif concrete == "llamacpp":
        from .llamacpp_backend import LlamaCppLLM as cls
    else:
        from .openai_backend import OpenAICompatibleLLM as cls
    return _construct(cls, concrete, spec, store, **overrides).set_structured(structured)
