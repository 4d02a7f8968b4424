"""llama.cpp backend (llama-cpp-python) on a packaged GGUF file: 5-7x faster CPU decoding.

Prompts are answered one at a time (llama.cpp reuses the KV cache of a shared prompt prefix, which
suits few-shot prompts); the chat template comes from the GGUF metadata. Decoding is made greedy and
penalty-free to match GenerationConfig (llama-cpp-python's default repeat_penalty is 1.1).

structured="schema": the call's JSON schema becomes a llama.cpp GBNF grammar (llama-cpp-python's
`LlamaGrammar.from_json_schema`, built once per schema); greedy decoding under it tests the model's own token before
the whole vocabulary (grammar_first.py: the same tokens, fewer grammar checks). A schema the converter cannot express
raises ConfigError; llama-cpp-python's own `response_format` path would silently fall back to any
JSON instead. A prompt that does not fit n_ctx (llama.cpp: "Requested tokens (N) exceed context
window of M") becomes that example's "prompt_too_long" result, not an exception for the batch.
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import settings, threads
from ..errors import ConfigError, MissingDependencyError
from ..integrity import file_digest
from .base import LLM, Chat, GenerationConfig, RawGeneration, prompt_too_long
from .cache import ResponseCache
from .gguf_assets import assemble
from .presets import Preset

INSTALL_HINT = "`pip install -e '.[llamacpp]'` (compiles llama-cpp-python, about 5 minutes)"


def llamacpp_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("llama_cpp") is not None


class LlamaCppLLM(LLM):
    backend_name = "llamacpp"
    miss_order = "text"  # one prompt at a time with prefix reuse: neighbours in text order share the most

    def __init__(
        self,
        preset: Preset,
        cache: ResponseCache | None,
        model_path: str | os.PathLike | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        n_batch: int = 512,
        n_gpu_layers: int = 0,
        batch_size: int | None = None,
    ):
        super().__init__(preset, cache)
        try:
            from .grammar_first import llama_class

            Llama = llama_class()  # greedy schema decoding tests the model's own token first: grammar_first.py
        except ImportError as exc:
            raise MissingDependencyError(f"the llamacpp backend needs llama-cpp-python: run {INSTALL_HINT}.") from exc
        # a file given by path is keyed by its own checksum: it must not answer from the packaged file's cache entries
        if model_path is not None and not Path(model_path).is_file():
            raise ConfigError(f"model_path {str(model_path)!r} is not a file: pass the path of a .gguf file.")
        # through the machine's digest store: hashed once, a `stat` on later loads while the file is unchanged
        self._weights = None if model_path is None else file_digest(Path(model_path))["sha256"]
        if model_path is None:
            if not preset.packaged:
                raise ConfigError(
                    f"the llamacpp backend runs GGUF files: preset {preset.name!r} has none; pass model_path='file.gguf' "
                    f"or use backend='hf'."
                )
            model_path = assemble(preset.gguf)
        self.model_path = Path(model_path)
        self.n_ctx = int(n_ctx or min(preset.context_length, 8192))
        self.n_threads = int(n_threads or settings.llm_threads())
        threads.announce()
        self.batch_size = int(batch_size or 8)  # prompts per cache write; generation itself is sequential
        self.llama = Llama(
            model_path=str(self.model_path),
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            n_threads_batch=self.n_threads,  # prompt prefill too (llama-cpp-python's default is every core)
            n_batch=int(n_batch),
            n_gpu_layers=int(n_gpu_layers),
            seed=0,
            verbose=False,
        )
        self._grammars: dict[str, object] = {}

    def grammar(self, schema: str):
        """The GBNF grammar of a JSON schema (canonical text), compiled once per schema."""
        g = self._grammars.get(schema)
        if g is None:
            from llama_cpp import LlamaGrammar

            try:
                g = LlamaGrammar.from_json_schema(schema, verbose=False)
            except Exception as exc:  # the converter's own error: unsupported schema construct
                raise ConfigError(f"llama.cpp cannot turn this JSON schema into a grammar ({exc}): simplify the schema.") from exc
            self._grammars[schema] = g
        return g

    def _key_parts(self) -> dict:
        parts = super()._key_parts()
        return parts if self._weights is None else {**parts, "weights": self._weights}

    def count_tokens(self, text: str) -> int:
        return len(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _generate_batch(self, chats: list[Chat], config: GenerationConfig) -> list[RawGeneration]:
        out = []
        grammar = self.grammar(config.schema) if config.schema is not None else None
        for chat in chats:
            self._reset_perf()
            try:
                resp = self.llama.create_chat_completion(
                    messages=chat,
                    max_tokens=int(config.max_new_tokens),
                    temperature=float(config.temperature),
                    top_p=float(config.top_p),
                    top_k=0 if not config.greedy else 40,
                    min_p=0.0,
                    repeat_penalty=1.0,
                    seed=int(config.seed),
                    stop=list(config.stop) or None,
                    grammar=grammar,
                )
            except ValueError as exc:
                if "exceed context window" not in str(exc):
                    raise
                import re

                m = re.search(r"Requested tokens \((\d+)\)", str(exc))
                n_prompt = int(m.group(1)) if m else 0
                out.append(prompt_too_long(n_prompt, int(config.max_new_tokens), self.n_ctx, detail=str(exc)))
                continue
            choice = resp["choices"][0]
            usage = resp.get("usage") or {}
            prefill_tokens, prefill_seconds = self._prefill()
            out.append(
                RawGeneration(
                    text=choice["message"].get("content") or "",
                    prompt_tokens=int(usage.get("prompt_tokens", 0)),
                    completion_tokens=int(usage.get("completion_tokens", 0)),
                    finish_reason=choice.get("finish_reason"),
                    structured="schema" if grammar is not None else None,
                    prefill_tokens=prefill_tokens,
                    prefill_seconds=prefill_seconds,
                )
            )
        return out

    def _reset_perf(self) -> None:
        import llama_cpp

        llama_cpp.llama_perf_context_reset(self.llama.ctx)

    def _prefill(self) -> tuple[int, float]:
        """llama.cpp's own count of the prompt tokens it evaluated in the last call (after the reused prefix) and
        their seconds (`llama_perf_context`: n_p_eval, t_p_eval_ms)."""
        import llama_cpp

        perf = llama_cpp.llama_perf_context(self.llama.ctx)
        return int(perf.n_p_eval), round(float(perf.t_p_eval_ms) / 1000.0, 4)

    def close(self) -> None:
        super().close()
        llama, self.llama = getattr(self, "llama", None), None
        if llama is not None:
            llama.close()
