"""The one interface every LLM backend implements, and the bookkeeping they share.

A backend only knows how to turn a batch of chats into texts (`_generate_batch`) and how to count
tokens. Everything that must behave the same on every backend lives here: prompt normalisation,
the persistent response cache (look up all prompts first, generate only the misses, in batches),
stop-string truncation, token accounting and the `stats` counters; the decoding mode
(`structured`, see structured.py) and the per-example "prompt does not fit" result.
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import ConfigError
from .cache import ResponseCache, make_cache_key
from .structured import check_mode, schema_text

if TYPE_CHECKING:  # pragma: no cover
    from .presets import Preset

Message = dict[str, str]
Chat = list[Message]

_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class GenerationConfig:
    """Decoding parameters; greedy by default so that reruns and cache hits agree."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    stop: tuple[str, ...] = ()
    #: the answer's JSON schema (canonical JSON text; a dict or pydantic model is converted). Only a
    #: model loaded with structured="schema" uses it; in "off" mode it is dropped before the call.
    schema: str | None = None

    def __post_init__(self):
        if self.schema is not None:
            object.__setattr__(self, "schema", schema_text(self.schema))
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))
        if int(self.max_new_tokens) < 1:
            raise ConfigError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}.")
        if float(self.temperature) < 0:
            raise ConfigError(f"temperature must be >= 0 (0 = greedy), got {self.temperature}.")
        if not 0 < float(self.top_p) <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}.")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ConfigError(f"stop must be non-empty strings, got {self.stop!r}.")

    @property
    def greedy(self) -> bool:
        return float(self.temperature) == 0.0

    def updated(self, **changes: Any) -> "GenerationConfig":
        """A copy with some fields changed; unknown names raise ConfigError listing the valid ones."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise ConfigError(f"unknown generation parameter(s) {unknown}: use one of {sorted(names)}.")
        return dataclasses.replace(self, **changes) if changes else self

    def key(self) -> dict[str, Any]:
        """The parameters that change the output, in a stable JSON-able form (part of the cache key)."""
        key = {
            "max_new_tokens": int(self.max_new_tokens),
            "temperature": float(self.temperature),
            "top_p": float(self.top_p),
            # the seed cannot change a greedy output; leaving it out lets greedy reruns share entries
            "seed": None if self.greedy else int(self.seed),
            "stop": list(self.stop),
        }
        if self.schema is not None:  # free-text keys stay exactly what they were before this option existed
            key["structured"] = "schema"
            key["schema"] = self.schema
        return key


@dataclass
class LLMResult:
    """One generation: the text, its token counts, whether it came from the cache, and how long it took.

    seconds: backend time of the batch it was generated in, divided by the batch's size (0 when
    cached). finish_reason: "stop" (end of turn or a stop string), "length" (max_new_tokens), or
    "prompt_too_long" (the prompt plus max_new_tokens does not fit the context window: nothing was
    generated, `text` is "" and `error` says by how much; never cached). structured: how the
    schema was applied ("schema", "json_object" where a server refused the schema, None = free text).
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    seconds: float
    finish_reason: str | None = None
    error: str | None = None
    structured: str | None = None

    @property
    def truncated(self) -> bool:
        """The reply was cut by the token limit."""
        return self.finish_reason == "length"

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class RawGeneration:
    """What a backend returns for one chat (before caching and stop-string truncation)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    error: str | None = None
    structured: str | None = None
    #: prompt tokens the backend actually evaluated (the rest reused from its KV cache) and the seconds it took;
    #: None where the backend does not say (only llama.cpp does)
    prefill_tokens: int | None = None
    prefill_seconds: float | None = None


PROMPT_TOO_LONG = "prompt_too_long"


def prompt_too_long(prompt_tokens: int, max_new_tokens: int, n_ctx: int, detail: str = "") -> RawGeneration:
    """The per-example result for a prompt that cannot fit: stated, counted, never cached, never raised."""
    why = (f"prompt of {prompt_tokens} tokens + max_new_tokens {max_new_tokens} exceeds the context window of "
           f"{n_ctx} tokens{f' ({detail})' if detail else ''}: shorten the input or load the model with a larger n_ctx")
    return RawGeneration(text="", prompt_tokens=int(prompt_tokens), completion_tokens=0,
                         finish_reason=PROMPT_TOO_LONG, error=why)


def normalize_prompt(prompt: "str | Sequence[dict]") -> Chat:
    """A str becomes one user message; a chat is checked (roles, string contents) and copied."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if isinstance(prompt, dict) or not isinstance(prompt, Sequence):
        raise ConfigError(
            f"a prompt must be a str or a list of {{'role', 'content'}} dicts, got {type(prompt).__name__}."
        )
    chat: Chat = []
    for i, msg in enumerate(prompt):
        if not isinstance(msg, dict) or "role" not in msg or "content" not in msg:
            raise ConfigError(f"message {i} must be a dict with 'role' and 'content', got {msg!r:.80}.")
        if msg["role"] not in _ROLES:
            raise ConfigError(f"message {i} has role {msg['role']!r}: use one of {list(_ROLES)}.")
        if not isinstance(msg["content"], str):
            raise ConfigError(f"message {i} content must be a str, got {type(msg['content']).__name__}.")
        chat.append({"role": msg["role"], "content": msg["content"]})
    if not chat:
        raise ConfigError("a chat prompt must hold at least one message.")
    return chat


def chat_text(chat: Chat) -> str:
    """The contents of a chat joined by blank lines (a single user message gives back its string)."""
    return "\n\n".join(m["content"] for m in chat)


def plain_chat_rendering(chat: Chat) -> str:
    """A readable rendering for models whose tokenizer has no chat template."""
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in chat]
    return "\n".join(lines) + "\nAssistant:"


def apply_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut the text before the earliest stop string; True when one was found."""
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def _empty_stats() -> dict[str, float]:
    return {
        "calls": 0,
        "cache_hits": 0,
        "cache_misses": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_prompt_tokens": 0,
        "cached_completion_tokens": 0,
        "generate_seconds": 0.0,
        "schema_calls": 0,
        "schema_fallbacks": 0,
        "prompt_too_long": 0,
    }


class LLM(ABC):
    """A loaded model: `generate` a batch of prompts, `chat` one, `count_tokens`, and `stats`.

    `stats` counts prompts (`calls`), cache hits/misses, and tokens: `prompt_tokens` and
    `completion_tokens` are those actually processed by the backend in this session, while tokens of
    answers served from the cache go to `cached_prompt_tokens` / `cached_completion_tokens`, so a
    fully cached rerun reports 0 new tokens. `generate_seconds` is backend time only. A backend that reuses
    the KV cache of a shared prompt prefix (llama.cpp) adds `prefill_tokens` and `prefill_seconds`: the prompt
    tokens it really evaluated, a count that does not depend on the machine's load.
    """

    backend_name: str = "base"
    #: how many prompts one `_generate_batch` call receives
    batch_size: int = 1
    #: the order in which the misses of one `generate` call reach the backend: "length" (shortest first: batched
    #: backends pad less) or "text" (a backend that answers one prompt at a time and reuses the KV cache of the
    #: previous prompt's prefix, llama.cpp: prompts in text order put the ones that share a prefix - the same fixed
    #: and chosen demonstrations - next to each other, so only what differs is prefilled)
    miss_order: str = "length"
    #: a bar over the prompts of each `generate` call whose caller passes no `progress`
    show_progress: bool = False
    #: while set, every `generate` call counts its generated prompts on this one bar instead of its own: `Method.run`
    #: sets it for each batch of questions, so a batch's LLM calls move one line however many calls its stages make
    #: (SimGRAG under an anchored schema makes one call per question)
    call_bar: Any = None

    def __init__(self, preset: "Preset", cache: ResponseCache | None, model_id: str | None = None):
        self.preset = preset
        self.cache = cache
        self.model_id = model_id or preset.hub_id or preset.name
        self._stats = _empty_stats()
        #: the decoding mode: "off" (free text; schemas passed by stages are ignored) or "schema"
        #: (constrained to each call's schema). load_llm sets it from structured= or the preset.
        self.structured = check_mode(getattr(preset, "structured", "off"))

    def set_structured(self, mode: str | None) -> "LLM":
        """Switch the decoding mode ("off" | "schema"; None keeps the preset's). Returns self."""
        self.structured = check_mode(mode, getattr(self.preset, "structured", "off"))
        return self

    def _effective(self, config: GenerationConfig) -> GenerationConfig:
        """The config actually decoded: in "off" mode a stage's schema is dropped (and leaves the key alone)."""
        if self.structured == "off" and config.schema is not None:
            return config.updated(schema=None)
        return config

    # ----------------------------------------------------------------- backend hooks
    @abstractmethod
    def _generate_batch(self, chats: list[Chat], config: GenerationConfig) -> list[RawGeneration]:
        """Generate one answer per chat (same order). Called with at most `batch_size` chats."""

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Number of tokens of `text` under this model's tokenizer (no special tokens added)."""

    def _key_parts(self) -> dict[str, Any]:
        """Everything about the model that changes its output (the cache key adds prompt + config)."""
        return {
            "model": self.model_id,
            "revision": self.preset.revision,
            "quantization": self.preset.quantization,
            "dtype": self.preset.dtype,
            "backend": self.backend_name,
            # a packaged model is identified by its file's checksum, not only by the hub name
            "weights": self.preset.gguf.sha256 if self.preset.gguf is not None else None,
        }

    # ----------------------------------------------------------------- public API
    @property
    def label(self) -> str:
        """The backend and preset, as progress bars name them."""
        return f"{self.backend_name}:{self.preset.name}"

    @property
    def stats(self) -> dict[str, float]:
        return dict(self._stats)

    def reset_stats(self) -> None:
        self._stats = _empty_stats()

    def cache_key(self, prompt: "str | Sequence[dict]", config: GenerationConfig | None = None) -> str:
        """The response-cache key of one prompt under a config (exposed for tests and debugging).

        The messages stand for the rendered prompt: the chat template is fixed by the model id,
        revision and (for packaged files) the weights' sha256, which are all in the key.
        """
        config = self._effective(config or GenerationConfig())
        return make_cache_key({**self._key_parts(), "messages": normalize_prompt(prompt), "gen": config.key()})

    def generate(
        self,
        prompts: "Sequence[str | list[dict]]",
        config: GenerationConfig | None = None,
        progress: bool | None = None,
        **gen_kwargs: Any,
    ) -> list[LLMResult]:
        """Answer each prompt; cached answers are returned without touching the model.

        All prompts are looked up in the cache first; only the misses (each distinct one once) are
        generated in `miss_order` (shortest first, or in text order), in batches of `batch_size`. Three steps: `_lookup` (the cache),
        `_generate_misses` (the backend, writing each batch to the cache), `_assemble` (one answer per
        prompt, repeats answered from this call); the counters are kept by `_count_*`.
        """
        if isinstance(prompts, (str, dict)) or (
            isinstance(prompts, Sequence) and prompts and isinstance(prompts[0], dict)
        ):
            raise ConfigError("generate() takes a list of prompts: wrap a single prompt as [prompt], or use chat().")
        config = self._effective((config or GenerationConfig()).updated(**gen_kwargs))
        progress = self.show_progress if progress is None else progress
        chats = [normalize_prompt(p) for p in prompts]
        keys = [
            make_cache_key({**self._key_parts(), "messages": c, "gen": config.key()}) for c in chats
        ]
        results = self._lookup(keys)
        todo: dict[str, int] = {}  # distinct missing key -> first index
        for i, key in enumerate(keys):
            if results[i] is None and key not in todo:
                todo[key] = i
        self._count_call(len(chats), len(todo), config)
        texts = {i: chat_text(chats[i]) for i in todo.values()}
        order = sorted(todo.values(), key=(lambda i: texts[i]) if self.miss_order == "text" else (lambda i: len(texts[i])))
        fresh = self._generate_misses(order, chats, keys, config, progress)
        return self._assemble(keys, results, todo, fresh)

    # ----------------------------------------------------------------- generate's steps
    def _lookup(self, keys: list[str]) -> "list[LLMResult | None]":
        """The cached answer of each key (None for a miss); cached tokens are counted."""
        found = self.cache.get_many(keys) if self.cache is not None else {}
        results: list[LLMResult | None] = [None] * len(keys)
        for i, key in enumerate(keys):
            entry = found.get(key)
            if entry is not None:
                results[i] = LLMResult(
                    text=entry["text"],
                    prompt_tokens=int(entry["prompt_tokens"]),
                    completion_tokens=int(entry["completion_tokens"]),
                    cached=True,
                    seconds=0.0,
                    finish_reason=entry.get("finish_reason"),
                    structured=entry.get("structured"),
                )
                self._count_cached(results[i])
        return results

    def _count_call(self, n_prompts: int, n_misses: int, config: GenerationConfig) -> None:
        self._stats["calls"] += n_prompts
        # repeats of a prompt inside this call count as hits: they are answered without the model
        self._stats["cache_hits"] += n_prompts - n_misses
        self._stats["cache_misses"] += n_misses
        if config.schema is not None:
            self._stats["schema_calls"] += n_misses

    def _count_cached(self, res: LLMResult) -> None:
        self._stats["cached_prompt_tokens"] += res.prompt_tokens
        self._stats["cached_completion_tokens"] += res.completion_tokens

    def _generate_misses(self, order: list[int], chats: list, keys: list[str], config: GenerationConfig,
                         progress: bool) -> dict[str, LLMResult]:
        """Generate the prompts at `order` in batches; each batch is cached as soon as it is answered."""
        bar, own = self.call_bar, False
        if bar is None and progress and order:
            from ..progress import progress_bar

            bar, own = progress_bar(total=len(order), desc=self.label, unit="prompt", leave=False), True
        fresh: dict[str, LLMResult] = {}
        size = max(1, int(self.batch_size))
        for start in range(0, len(order), size):
            idx = order[start : start + size]
            t0 = time.perf_counter()
            raws = self._generate_batch([chats[i] for i in idx], config)
            elapsed = time.perf_counter() - t0
            if len(raws) != len(idx):  # pragma: no cover - a backend bug
                raise RuntimeError(f"{self.backend_name} returned {len(raws)} answers for {len(idx)} prompts")
            self._stats["generate_seconds"] += elapsed
            entries = {}
            for i, raw in zip(idx, raws):
                res = self._fresh_result(raw, config, elapsed / len(idx))
                fresh[keys[i]] = res
                entry = self._count_fresh(raw, res, config)
                if entry is not None:
                    entries[keys[i]] = entry
            if self.cache is not None:
                self.cache.put_many(entries)
            if bar is not None:
                bar.update(len(idx))
        if own:
            bar.close()
        return fresh

    @staticmethod
    def _fresh_result(raw, config: GenerationConfig, seconds: float) -> LLMResult:
        text, stopped = apply_stop(raw.text, config.stop)
        return LLMResult(
            text=text,
            prompt_tokens=int(raw.prompt_tokens),
            completion_tokens=int(raw.completion_tokens),
            cached=False,
            seconds=seconds,
            finish_reason="stop" if stopped else raw.finish_reason,
            error=raw.error,
            structured=raw.structured,
        )

    def _count_fresh(self, raw, res: LLMResult, config: GenerationConfig) -> dict | None:
        """Count one generated answer; its cache entry, or None when it must not be cached."""
        if raw.finish_reason == PROMPT_TOO_LONG:  # nothing generated: counted, not cached
            self._stats["prompt_too_long"] += 1
            return None
        if config.schema is not None and raw.structured not in (None, "schema"):
            self._stats["schema_fallbacks"] += 1
        self._stats["prompt_tokens"] += res.prompt_tokens
        self._stats["completion_tokens"] += res.completion_tokens
        if raw.prefill_tokens is not None:  # a backend that reuses a prompt prefix says what it evaluated
            self._stats["prefill_tokens"] = self._stats.get("prefill_tokens", 0) + int(raw.prefill_tokens)
            self._stats["prefill_seconds"] = self._stats.get("prefill_seconds", 0.0) + float(raw.prefill_seconds or 0.0)
        entry = {
            "text": res.text,
            "prompt_tokens": res.prompt_tokens,
            "completion_tokens": res.completion_tokens,
            "finish_reason": res.finish_reason,
            "model": self.model_id,
            "backend": self.backend_name,
        }
        if raw.structured is not None:
            entry["structured"] = raw.structured
        return entry

    def _assemble(self, keys: list[str], results: list, todo: dict[str, int],
                  fresh: dict[str, LLMResult]) -> list[LLMResult]:
        """One answer per prompt, in order; a repeat of a prompt generated in this call is a cached answer."""
        out: list[LLMResult] = []
        for i, key in enumerate(keys):
            if results[i] is not None:
                out.append(results[i])
            elif todo[key] == i:
                out.append(fresh[key])
            else:  # same answer, no new tokens
                out.append(dataclasses.replace(fresh[key], cached=True, seconds=0.0))
                self._count_cached(fresh[key])
        return out

    def chat(self, prompt_or_messages: "str | list[dict]", config: GenerationConfig | None = None, **gen_kwargs: Any) -> LLMResult:
        """Answer one prompt (a str, or a chat as a list of role/content dicts)."""
        return self.generate([prompt_or_messages], config=config, **gen_kwargs)[0]

    def close(self) -> None:
        """Release the model (and the cache connection)."""
        if self.cache is not None:
            self.cache.close()

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary for run records."""
        return {
            "preset": self.preset.name,
            "backend": self.backend_name,
            "model_id": self.model_id,
            "revision": self.preset.revision,
            "quantization": self.preset.quantization,
            "dtype": self.preset.dtype,
            "structured": self.structured,
            "cache": None if self.cache is None else str(self.cache.path),
        }

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(preset={self.preset.name!r}, backend={self.backend_name!r}, model={self.model_id!r}, "
                f"structured={self.structured!r})")

