"""A deterministic TEST DOUBLE that answers without any model (like graphrag's mock provider).

`load_llm("fake", responses=...)` where responses is
- a callable(prompt_text) -> str,
- a dict {substring: answer} (the first key, in order, found in the prompt wins), or
- a list of answers handed out in order, cycling.
prompt_text is the chat's message contents joined by blank lines (a str prompt comes back as is).
Tokens are counted by whitespace split. It goes through the same cache and stats as real backends,
so notebooks and tests exercise the full path offline. Never use it for reported numbers.

structured="schema": the fake honours the call's schema the way a constrained decoder would - a
canned answer that is not valid under it raises ConfigError (a constrained model could not have
written it), a valid one is returned (still cut at max_new_tokens words, like a real reply cut by
the token limit). n_ctx: a prompt of at least n_ctx words (+ max_new_tokens) gets the per-example
"prompt_too_long" result, like a real backend's context window.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
from typing import Callable, Mapping, Sequence, Union

from ..errors import ConfigError
from .base import LLM, Chat, GenerationConfig, RawGeneration, chat_text, prompt_too_long
from .structured import validate_reply
from .cache import ResponseCache, canonical_json
from .presets import Preset

Responses = Union[Callable[[str], str], Mapping[str, str], Sequence[str]]

FAKE_PRESET = Preset(
    name="fake", backend="fake", hub_id="fake", quantization="none", context_length=1_000_000,
    dtype="none", notes="Deterministic test double: canned answers, no model.",
)


def responses_fingerprint(responses: Responses | None, default: str | None) -> str:
    """A stable id of the canned answers, so two fakes with different answers never share cache rows."""
    if callable(responses):
        fn = inspect.unwrap(responses)
        code = getattr(fn, "__code__", None)
        cells = [repr(c.cell_contents) for c in (getattr(fn, "__closure__", None) or ())]
        parts = [getattr(fn, "__module__", ""), getattr(fn, "__qualname__", repr(fn))]
        if code is not None:
            parts += [code.co_code.hex(), repr(code.co_consts)]
        parts += cells
        text = canonical_json(parts)
    else:
        text = canonical_json(responses if isinstance(responses, Mapping) else list(responses or []))
    return hashlib.sha256((text + canonical_json(default)).encode("utf-8")).hexdigest()[:16]


class FakeLLM(LLM):
    """Canned, deterministic answers (a test double; see the module docstring)."""

    backend_name = "fake"

    def __init__(
        self,
        cache: ResponseCache | None,
        responses: Responses | None = None,
        default: str | None = None,
        batch_size: int = 8,
        fingerprint: str | None = None,
        n_ctx: int | None = None,
    ):
        if responses is None and default is None:
            default = ""
        if responses is not None and not (callable(responses) or isinstance(responses, (Mapping, Sequence))) or isinstance(responses, str):
            raise ConfigError("fake responses must be a callable(prompt)->str, a dict {substring: answer} or a list of answers.")
        self.responses = responses
        self.default = default
        self.batch_size = int(batch_size)
        self.n_ctx = int(n_ctx) if n_ctx else None
        self._cycle = itertools.cycle(list(responses)) if isinstance(responses, Sequence) and responses else None
        fp = fingerprint or responses_fingerprint(responses, default)
        super().__init__(FAKE_PRESET.replace(revision=fp), cache, model_id="fake")
        self.prompts_seen: list[str] = []

    def _answer(self, text: str) -> str:
        r = self.responses
        if callable(r):
            out = r(text)
        elif isinstance(r, Mapping):
            out = next((v for k, v in r.items() if k in text), self.default)
        elif self._cycle is not None:
            out = next(self._cycle)
        else:
            out = self.default
        if out is None:
            raise ConfigError(f"the fake LLM has no answer for a prompt starting {text[:60]!r}: add a key or pass default=.")
        if not isinstance(out, str):
            raise ConfigError(f"fake responses must be strings, got {type(out).__name__}.")
        return out

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _generate_batch(self, chats: list[Chat], config: GenerationConfig) -> list[RawGeneration]:
        out = []
        for chat in chats:
            text = chat_text(chat)
            self.prompts_seen.append(text)
            if self.n_ctx is not None and self.count_tokens(text) + int(config.max_new_tokens) > self.n_ctx:
                out.append(prompt_too_long(self.count_tokens(text), int(config.max_new_tokens), self.n_ctx))
                continue
            answer = self._answer(text)
            if config.schema is not None:
                problem = validate_reply(answer, config.schema)
                if problem is not None:
                    raise ConfigError(
                        f"the fake LLM's answer {answer[:60]!r} is not valid under the call's schema ({problem}): "
                        f"a constrained decoder could not write it; give schema-valid answers for structured='schema'."
                    )
            words = answer.split()
            finish = "stop"
            if len(words) > config.max_new_tokens:  # keep the original spacing of the kept words
                cut = 0
                for w in words[: config.max_new_tokens]:
                    cut = answer.index(w, cut) + len(w)
                answer, finish = answer[:cut], "length"
            out.append(
                RawGeneration(
                    text=answer,
                    prompt_tokens=self.count_tokens(text),
                    completion_tokens=len(answer.split()),
                    finish_reason=finish,
                    structured="schema" if config.schema is not None else None,
                )
            )
        return out
