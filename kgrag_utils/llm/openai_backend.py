"""OpenAI-compatible HTTP backend (vLLM, llama.cpp server, Ollama, ...) over the standard library.

Uses POST {base_url}/chat/completions; a batch is sent as concurrent requests so a continuous-
batching server (vLLM) can batch them itself. The server is probed at load time with a short
timeout so a wrong URL fails fast with one line that says what to check.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import BackendUnavailableError, ConfigError
from .base import LLM, Chat, GenerationConfig, RawGeneration
from .cache import ResponseCache
from .presets import Preset

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


class OpenAICompatibleLLM(LLM):
    """Chat completions from a server; `count_tokens` is an estimate (servers differ in tokenize APIs)."""

    backend_name = "openai"

    def __init__(
        self,
        preset: Preset,
        cache: ResponseCache | None,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        connect_timeout_s: float = 3.0,
        max_concurrency: int = 8,
        max_retries: int = 2,
        batch_size: int | None = None,
    ):
        self.base_url = (base_url or os.environ.get("KGRAG_OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must start with http:// or https://, got {self.base_url!r}.")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.timeout_s = float(timeout_s)
        self.connect_timeout_s = float(connect_timeout_s)
        self.max_concurrency = max(1, int(max_concurrency))
        self.max_retries = max(0, int(max_retries))
        self.batch_size = int(batch_size or 4 * self.max_concurrency)
        self.served_models = self._probe()
        served = model or preset.hub_id
        if not served:
            raise ConfigError(f"name the served model: load_llm(..., backend='openai', model=...); the server lists {self.served_models}.")
        if self.served_models and served not in self.served_models:
            raise ConfigError(
                f"the server at {self.base_url} does not serve {served!r}: pass model= one of {self.served_models}."
            )
        super().__init__(preset, cache, model_id=served)

    # ------------------------------------------------------------------ HTTP
    def _request(self, method: str, path: str, body: dict | None, timeout: float) -> dict:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def _probe(self) -> list[str]:
        try:
            listing = self._request("GET", "/models", None, self.connect_timeout_s)
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise BackendUnavailableError(
                    f"{self.base_url}/models answered HTTP {exc.code}: set OPENAI_API_KEY or pass api_key=."
                ) from exc
            return []  # some servers have no /models; the first completion will tell
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BackendUnavailableError(
                f"no OpenAI-compatible server answered at {self.base_url} ({reason}): start it (e.g. `vllm serve MODEL` "
                f"or `python -m llama_cpp.server --model FILE.gguf`) and check the host, port and /v1 suffix."
            ) from exc
        return [str(m.get("id")) for m in listing.get("data", []) if isinstance(m, dict)]

    def _complete(self, chat: Chat, config: GenerationConfig) -> RawGeneration:
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": chat,
            "max_tokens": int(config.max_new_tokens),
            "temperature": float(config.temperature),
            "top_p": float(config.top_p),
            "seed": int(config.seed),
        }
        if config.stop:
            body["stop"] = list(config.stop)
        for attempt in range(self.max_retries + 1):
            try:
                resp = self._request("POST", "/chat/completions", body, self.timeout_s)
                break
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:200].replace("\n", " ")
                if exc.code in (429, 500, 502, 503, 504) and attempt < self.max_retries:
                    time.sleep(0.5 * 2**attempt)
                    continue
                raise BackendUnavailableError(
                    f"{self.base_url}/chat/completions answered HTTP {exc.code} ({detail}): check the model name and server log."
                ) from exc
            except (urllib.error.URLError, OSError) as exc:
                if attempt < self.max_retries:
                    time.sleep(0.5 * 2**attempt)
                    continue
                raise BackendUnavailableError(
                    f"the server at {self.base_url} stopped answering ({getattr(exc, 'reason', exc)}): check that it is still running."
                ) from exc
        try:
            choice = resp["choices"][0]
            text = (choice.get("message") or {}).get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise BackendUnavailableError(
                f"{self.base_url}/chat/completions returned no choices ({str(resp)[:120]}): is it an OpenAI-compatible chat endpoint?"
            ) from exc
        usage = resp.get("usage") or {}
        return RawGeneration(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choice.get("finish_reason"),
        )

    # ------------------------------------------------------------------ LLM hooks
    def _generate_batch(self, chats: list[Chat], config: GenerationConfig) -> list[RawGeneration]:
        if len(chats) == 1 or self.max_concurrency == 1:
            return [self._complete(c, config) for c in chats]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(chats))) as pool:
            return list(pool.map(lambda c: self._complete(c, config), chats))

    def count_tokens(self, text: str) -> int:
        """An estimate: max(words, characters / 4). Servers do not share one tokenize API."""
        return max(len(text.split()), (len(text) + 3) // 4)
