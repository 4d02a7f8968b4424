"""transformers backend: hub models (4-bit bitsandbytes on GPU) and the packaged GGUF files on CPU.

Batched generation with left padding through the tokenizer's chat template; decoding is fully
defined by GenerationConfig (a fresh transformers GenerationConfig per call, so a model's shipped
sampling defaults never leak into a "greedy" run).

structured="schema" uses xgrammar (optional extra `structured-hf`): its JSON-schema grammar,
compiled once per schema against this tokenizer, masks the logits through xgrammar's transformers
LogitsProcessor (one matcher per batch row). Why xgrammar: it is the constrained-decoding engine of
vLLM, SGLang and TensorRT-LLM, compiles a schema in milliseconds, ships a ready transformers
processor, and its wheel is small (pip also pulls triton on Linux, hence an extra, not a core dependency).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from .. import settings
from ..errors import BackendUnavailableError, ConfigError, MissingDependencyError, require
from .base import LLM, Chat, GenerationConfig, RawGeneration, plain_chat_rendering, prompt_too_long
from .cache import ResponseCache
from .gguf_assets import assemble
from .presets import Preset

log = logging.getLogger(__name__)

_DTYPES = ("float32", "bfloat16", "float16", "auto")


def _torch_dtype(torch, name: str):
    if name not in _DTYPES:
        raise ConfigError(f"dtype must be one of {list(_DTYPES)}, got {name!r}.")
    return "auto" if name == "auto" else getattr(torch, name)


def bnb_4bit_config(torch):
    """nf4 weights, double quantization, bf16 compute (the QLoRA recipe the papers' 4-bit runs use)."""
    transformers = require("transformers", "cpu", "the transformers backend")
    return transformers.BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=torch.bfloat16,
    )


def is_prequantized_4bit(folder: str | os.PathLike) -> bool:
    """True for a local model folder saved after bitsandbytes 4-bit quantization (its config says so)."""
    try:
        qc = json.loads((Path(folder) / "config.json").read_text()).get("quantization_config") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return qc.get("quant_method") == "bitsandbytes" and bool(qc.get("load_in_4bit") or qc.get("_load_in_4bit"))


#: GenerationConfig fields the backend sets itself on every call (from kgrag's GenerationConfig)
_OWN_GENERATION_FIELDS = ("max_new_tokens", "do_sample", "temperature", "top_p", "top_k", "pad_token_id",
                          "eos_token_id", "stop_strings")


def check_4bit_available(preset: Preset, torch) -> None:
    """4-bit needs bitsandbytes; a GPU preset also needs CUDA. Raise a one-line fix otherwise."""
    try:
        import bitsandbytes  # noqa: F401  (only checking that it imports)

        has_bnb = True
    except ImportError:
        has_bnb = False
    has_cuda = bool(torch.cuda.is_available())
    if preset.gpu and not (has_bnb and has_cuda):
        lacking = " and ".join(x for x, ok in (("a CUDA GPU", has_cuda), ("bitsandbytes", has_bnb)) if not ok)
        raise MissingDependencyError(
            f"preset {preset.name!r} runs 4-bit on a GPU but {lacking} is missing: install the gpu extra "
            f"(`pip install -e '.[gpu]'`) on a CUDA machine, or use a CPU preset (smollm2-135m, qwen2.5-coder-0.5b) "
            f"or backend='openai'."
        )
    if not has_bnb:
        raise MissingDependencyError(
            f"4-bit quantization of {preset.name!r} needs bitsandbytes: run `pip install -e '.[quant]'`."
        )


def converted_folder(preset: Preset) -> Path:
    return settings.cache_dir("models") / f"{preset.name}-safetensors"


def ensure_safetensors_copy(preset: Preset, gguf_path: Path) -> Path:
    """A bf16 safetensors copy of a packaged GGUF model (made once), so bitsandbytes can quantize it.

    transformers cannot combine `gguf_file` with a quantization_config, and refuses to save a
    GGUF-loaded model until its GGUF quantizer is detached (its weights are already dequantized).
    """
    torch = require("torch", "cpu", "the transformers backend")
    transformers = require("transformers", "cpu", "the transformers backend")
    folder = converted_folder(preset)
    marker = folder / "kgrag_source.json"
    source = {"gguf": gguf_path.name, "sha256": preset.gguf.sha256 if preset.gguf else None}
    try:
        if json.loads(marker.read_text()) == source:
            return folder
    except (OSError, ValueError):
        pass
    print(f"[kgrag.llm] converting {gguf_path.name} to a safetensors copy for 4-bit loading (once) -> {folder}")
    tmp = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tok = transformers.AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32
    )
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.to(torch.bfloat16)
    model.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    (tmp / "kgrag_source.json").write_text(json.dumps(source))
    del model
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return folder


class HFBackendLLM(LLM):
    """A transformers causal LM with batched, left-padded generation."""

    backend_name = "hf"

    def __init__(
        self,
        preset: Preset,
        cache: ResponseCache | None,
        device: str | None = None,
        batch_size: int | None = None,
        trust_remote_code: bool = False,
        model_kwargs: dict[str, Any] | None = None,
        generate_options: dict[str, Any] | None = None,
    ):
        """generate_options: extra transformers GenerationConfig fields for every call, e.g.
        {"cache_implementation": "static"} (on CUDA transformers then compiles the forward pass;
        add "disable_compile": True to keep it eager). They are part of the response-cache key."""
        super().__init__(preset, cache)
        self.torch = torch = require("torch", "cpu", "the transformers backend")
        tf = require("transformers", "cpu", "the transformers backend")
        self._tf = tf
        self.generate_options = dict(generate_options or {})
        probe = tf.GenerationConfig()
        bad = sorted(k for k in self.generate_options if k in _OWN_GENERATION_FIELDS or not hasattr(probe, k))
        if bad:
            raise ConfigError(
                f"generate_options {bad} are not extra transformers GenerationConfig fields: decoding parameters "
                f"({', '.join(_OWN_GENERATION_FIELDS)}) come from kgrag's GenerationConfig; others must exist in "
                f"transformers.GenerationConfig."
            )
        has_cuda = bool(torch.cuda.is_available())
        self.device = device or ("cuda" if has_cuda else "cpu")
        if self.device == "cpu":
            from .. import threads

            threads.configure_torch(torch)  # the CPU budget, not every core of the host
            threads.announce()
        self.batch_size = int(batch_size or (16 if self.device.startswith("cuda") else 4))
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}.")
        kwargs: dict[str, Any] = dict(model_kwargs or {})
        remote = {"trust_remote_code": True} if trust_remote_code else {}
        kwargs.update(remote)
        if preset.quantization == "4bit":
            check_4bit_available(preset, torch)

        if preset.packaged:
            gguf_path = assemble(preset.gguf)
            if preset.quantization == "4bit":
                source, tok_kwargs = str(ensure_safetensors_copy(preset, gguf_path)), {}
            else:
                source, tok_kwargs = str(gguf_path.parent), {"gguf_file": gguf_path.name}
            self.tokenizer = tf.AutoTokenizer.from_pretrained(source, **tok_kwargs)
            self.model = self._load(source, {**tok_kwargs, **kwargs})
        else:
            if not preset.hub_id:
                raise ConfigError(f"preset {preset.name!r} has no hub_id: pass hub_id='org/model' or a local folder.")
            hub_kwargs = {} if Path(preset.hub_id).is_dir() else {"revision": preset.revision}
            try:
                self.tokenizer = tf.AutoTokenizer.from_pretrained(preset.hub_id, **hub_kwargs, **remote)
                self.model = self._load(preset.hub_id, {**hub_kwargs, **kwargs})
            except OSError as exc:
                first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
                raise BackendUnavailableError(
                    f"cannot load {preset.hub_id!r} (revision {preset.revision}) from the hub or its local cache "
                    f"({first}): check network access, HF_TOKEN and the model license, or unset HF_HUB_OFFLINE."
                ) from exc
        self.model.eval()
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if not self._has_template:
            log.warning("%s has no chat template: prompts are rendered as 'Role: text' lines", self.model_id)
        self._eos_ids = self._collect_eos_ids()
        self._grammar_compiler = None
        self._grammars: dict[str, Any] = {}

    def compiled_grammar(self, schema: str):
        """xgrammar's compiled grammar for a JSON schema (canonical text), built once per schema."""
        g = self._grammars.get(schema)
        if g is None:
            xgr = require("xgrammar", "structured-hf", "structured='schema' on the transformers backend")
            if self._grammar_compiler is None:
                vocab = int(getattr(self.model.config, "vocab_size", 0) or len(self.tokenizer))
                info = xgr.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=vocab)
                self._grammar_compiler = xgr.GrammarCompiler(info)
            try:
                # compact JSON (", " and ": " separators, no free whitespace): a small model cannot pad a reply
                # with whitespace until the token limit (llama.cpp's converter bounds whitespace likewise)
                g = self._grammar_compiler.compile_json_schema(schema, any_whitespace=False, separators=(", ", ": "))
            except Exception as exc:  # xgrammar's own error for an unsupported construct
                raise ConfigError(f"xgrammar cannot compile this JSON schema ({exc}): simplify the schema.") from exc
            self._grammars[schema] = g
        return g

    def _load(self, source: str, kwargs: dict[str, Any]):
        torch, tf, preset = self.torch, self._tf, self.preset
        if preset.quantization == "4bit":
            if not is_prequantized_4bit(source):  # a saved 4-bit folder brings its own quantization_config
                kwargs = {**kwargs, "quantization_config": bnb_4bit_config(torch)}
            kwargs["device_map"] = "auto" if self.device.startswith("cuda") else self.device
            kwargs.setdefault("dtype", torch.bfloat16)
        else:
            kwargs.setdefault("dtype", _torch_dtype(torch, preset.dtype))
            if self.device.startswith("cuda"):
                kwargs["device_map"] = "auto"
        model = tf.AutoModelForCausalLM.from_pretrained(source, **kwargs)
        if preset.quantization != "4bit" and not self.device.startswith("cuda"):
            model.to(self.device)
        return model

    def _collect_eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for src in (getattr(self.model, "generation_config", None), self.tokenizer):
            val = getattr(src, "eos_token_id", None)
            if isinstance(val, int):
                ids.add(val)
            elif val:
                ids.update(int(v) for v in val)
        return ids

    def _key_parts(self) -> dict[str, Any]:
        parts = super()._key_parts()
        if self.generate_options:  # only when set, so existing cache entries keep their keys
            parts["generate_options"] = {k: repr(v) for k, v in sorted(self.generate_options.items())}
        return parts

    # ------------------------------------------------------------------ LLM hooks
    def render(self, chat: Chat) -> str:
        """The exact text the model sees for a chat (its chat template, generation prompt added)."""
        if self._has_template:
            return self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        return plain_chat_rendering(chat)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _generation_config(self, config: GenerationConfig):
        gen = self._tf.GenerationConfig(
            max_new_tokens=int(config.max_new_tokens),
            do_sample=not config.greedy,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=sorted(self._eos_ids) or None,
        )
        if not config.greedy:
            gen.temperature = float(config.temperature)
            gen.top_p = float(config.top_p)
            gen.top_k = None
        if config.stop:
            gen.stop_strings = list(config.stop)
        for key, value in self.generate_options.items():
            setattr(gen, key, value)
        return gen

    def _generate_batch(self, chats: list[Chat], config: GenerationConfig) -> list[RawGeneration]:
        """Prompts that do not fit the context window get the per-example "prompt_too_long" result; the rest are generated."""
        limit = int(self.preset.context_length)
        sizes = [len(self.tokenizer(self.render(c), add_special_tokens=False)["input_ids"]) for c in chats]
        fits = [i for i, n in enumerate(sizes) if n + int(config.max_new_tokens) <= limit]
        out: list[RawGeneration | None] = [None] * len(chats)
        for i, n in enumerate(sizes):
            if i not in fits:
                out[i] = prompt_too_long(n, int(config.max_new_tokens), limit)
        if fits:
            for i, raw in zip(fits, self._generate_fitting([chats[i] for i in fits], config)):
                out[i] = raw
        return out  # type: ignore[return-value]

    def _generate_fitting(self, chats: list[Chat], config: GenerationConfig) -> list[RawGeneration]:
        torch = self.torch
        texts = [self.render(c) for c in chats]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=not self._has_template)
        enc = {k: v.to(self.model.device) for k, v in enc.items()}
        torch.manual_seed(int(config.seed))
        extra: dict[str, Any] = {"tokenizer": self.tokenizer} if config.stop else {}
        if config.schema is not None:
            from xgrammar.contrib.hf import LogitsProcessor  # compiled_grammar() has checked the import

            grammar = self.compiled_grammar(config.schema)
            extra["logits_processor"] = self._tf.LogitsProcessorList([LogitsProcessor([grammar] * len(chats))])
        with torch.inference_mode():
            out = self.model.generate(**enc, generation_config=self._generation_config(config), **extra)
        prompt_len = enc["input_ids"].shape[1]
        prompt_tokens = enc["attention_mask"].sum(dim=1).tolist()
        gen = out[:, prompt_len:].tolist()
        pad = self.tokenizer.pad_token_id
        results = []
        for row, n_prompt in zip(gen, prompt_tokens):
            n, finish = len(row), "length"
            eos_at = next((i for i, t in enumerate(row) if t in self._eos_ids), None)
            if eos_at is not None:
                n, finish = eos_at + 1, "stop"
            else:
                while n and row[n - 1] == pad:  # a row stopped by a stop string is padded afterwards
                    n -= 1
                if n < int(config.max_new_tokens):
                    finish = "stop"
            text = self.tokenizer.decode(row[:n], skip_special_tokens=True)
            results.append(RawGeneration(text=text, prompt_tokens=int(n_prompt), completion_tokens=n, finish_reason=finish,
                                         structured="schema" if config.schema is not None else None))
        return results

    def close(self) -> None:
        super().close()
        self.model = None
