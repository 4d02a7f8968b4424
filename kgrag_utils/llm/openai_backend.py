"""OpenAI-compatible HTTP backend (vLLM, llama.cpp server, Ollama, ...) over the standard library.

Uses POST {base_url}/chat/completions; a batch is sent as concurrent requests so a continuous-
batching server (vLLM) can batch them itself. The server is probed at load time with a short
timeout so a wrong URL fails fast with one line that says what to check. Transient failures are
retried with tenacity (exponential backoff); we keep the standard library's HTTP client rather than
the openai package, so the backend needs no extra.

structured="schema": `response_format={"type": "json_schema", ...}` (vLLM guided decoding, the
llama.cpp server). A server that refuses it (HTTP 4xx naming response_format / json_schema) is
asked for `{"type": "json_object"}` instead; the fallback is kept for the model's later calls,
recorded on every result (`structured="json_object"`), in `stats["schema_fallbacks"]` and in
`describe()["schema_fallback"]`. A server's context-length error becomes that example's
"prompt_too_long" result.
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
from .base import LLM, Chat, GenerationConfig, RawGeneration, chat_text, prompt_too_long
from .cache import ResponseCache
from .presets import Preset

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
_RETRIED = (429, 500, 502, 503, 504)


#: the whole of one request (connect, wait, every byte of the reply), in seconds; `KGRAG_OPENAI_TIMEOUT` sets it
DEFAULT_REQUEST_DEADLINE_S = 1200.0


def request_deadline() -> float:
    """`KGRAG_OPENAI_TIMEOUT` (seconds per request, the reply's last byte included), else the default."""
    value = os.environ.get("KGRAG_OPENAI_TIMEOUT", "").strip()
    if not value:
        return DEFAULT_REQUEST_DEADLINE_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise ConfigError(f"KGRAG_OPENAI_TIMEOUT={value[:40]!r} is not a positive number of seconds: set it to e.g. "
                          f"600, or unset it for {DEFAULT_REQUEST_DEADLINE_S:.0f}.")
    return seconds


class _BadReply(Exception):
    """A reply that is not a JSON object, or that did not finish within the request deadline (never retried)."""


def _read_within(resp, deadline: float, url: str, seconds: float) -> bytes:
    """The reply's body, read as it arrives; a reply still arriving at the deadline (a trickle) is refused."""
    chunks: list[bytes] = []
    late = _BadReply(f"{url} did not finish its reply within {seconds:.0f} s (a stalled or trickling server): check "
                     f"the server, or raise KGRAG_OPENAI_TIMEOUT.")
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise late
        sock = getattr(getattr(getattr(resp, "fp", None), "raw", None), "_sock", None)
        if sock is not None:
            sock.settimeout(max(0.05, min(left, sock.gettimeout() or left)))
        try:
            chunk = resp.read1(1 << 16) if hasattr(resp, "read1") else resp.read()
        except TimeoutError:
            if time.monotonic() >= deadline - 0.05:
                raise late from None
            raise
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _decode_reply(raw: bytes, url: str) -> dict:
    """The reply as a JSON object, else one line naming the server, the first bytes and the fix."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        data = None
    if not isinstance(data, dict):
        raise _BadReply(f"{url} answered with something that is not a JSON object ({raw[:60]!r}"
                        f"{'...' if len(raw) > 60 else ''}): check that the URL is an OpenAI-compatible server "
                        f"(KGRAG_OPENAI_BASE_URL, ending in /v1) and look at its log.")
    return data


class _HTTPFailure(Exception):
    def __init__(self, code: int, detail: str):
        super().__init__(f"HTTP {code}: {detail}")
        self.code, self.detail = int(code), detail


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, _HTTPFailure):
        return exc.code in _RETRIED and not _refuses_schema(exc)
    return isinstance(exc, (urllib.error.URLError, OSError)) and not isinstance(exc, urllib.error.HTTPError)


def _refuses_schema(exc: _HTTPFailure) -> bool:
    """A refused response_format: HTTP 4xx naming it, or HTTP 500 whose message names response_format
    (llama-cpp-python's server 0.3.x answers its request-validation error with 500: tests/test_llm_openai.py)."""
    text = exc.detail.lower()
    if exc.code == 500:
        return "response_format" in text
    return exc.code in (400, 404, 422, 501) and any(w in text for w in ("response_format", "json_schema", "schema"))


def _context_overflow(exc: _HTTPFailure) -> bool:
    text = exc.detail.lower()
    return exc.code in (400, 413, 422) and any(w in text for w in ("context length", "context window", "maximum context",
                                                                   "too many tokens", "exceed"))


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
        self.request_deadline_s = request_deadline()
        self.connect_timeout_s = float(connect_timeout_s)
        self.max_concurrency = max(1, int(max_concurrency))
        self.max_retries = max(0, int(max_retries))
        self.batch_size = int(batch_size or 4 * self.max_concurrency)
        self.schema_refused: str | None = None
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
        url = self.base_url + path
        seconds = min(self.request_deadline_s, max(timeout, 0.05) * 4)  # the probe's is short, as is its timeout
        deadline = time.monotonic() + seconds
        with urllib.request.urlopen(req, timeout=min(timeout, self.request_deadline_s)) as resp:
            raw = _read_within(resp, deadline, url, seconds)
        return _decode_reply(raw, url)

    def _probe(self) -> list[str]:
        try:
            listing = self._request("GET", "/models", None, self.connect_timeout_s)
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise BackendUnavailableError(
                    f"{self.base_url}/models answered HTTP {exc.code}: set OPENAI_API_KEY or pass api_key=."
                ) from exc
            return []  # some servers have no /models; the first completion will tell
        except _BadReply as exc:
            raise BackendUnavailableError(str(exc)) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BackendUnavailableError(
                f"no OpenAI-compatible server answered at {self.base_url} ({reason}): start it (e.g. `vllm serve MODEL` "
                f"or `python -m llama_cpp.server --model FILE.gguf`) and check the host, port and /v1 suffix."
            ) from exc
        models = listing.get("data")
        return [str(m.get("id")) for m in models if isinstance(m, dict)] if isinstance(models, list) else []

    def _post(self, body: dict) -> dict:
        """POST /chat/completions; transient failures (HTTP 429/5xx, connection errors) are retried by tenacity
        with exponential backoff (max_retries times), then reported in one line. Other HTTP errors are raised
        at once as `_HTTPFailure` so the caller can read the server's message."""
        import tenacity

        def attempt() -> dict:
            try:
                return self._request("POST", "/chat/completions", body, self.timeout_s)
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:400].replace("\n", " ")
                raise _HTTPFailure(exc.code, detail) from exc

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            wait=tenacity.wait_exponential(multiplier=0.5, max=8),
            retry=tenacity.retry_if_exception(_transient),
            reraise=True,
        )
        try:
            return retrying(attempt)
        except _HTTPFailure as exc:
            if exc.code in _RETRIED and not _refuses_schema(exc):
                raise BackendUnavailableError(
                    f"{self.base_url}/chat/completions answered HTTP {exc.code} ({exc.detail[:200]}) after "
                    f"{self.max_retries + 1} attempts: check the server log."
                ) from exc
            raise
        except _BadReply as exc:
            raise BackendUnavailableError(str(exc)) from None
        except (urllib.error.URLError, OSError) as exc:
            raise BackendUnavailableError(
                f"the server at {self.base_url} stopped answering ({getattr(exc, 'reason', exc)}): check that it is still running."
            ) from exc

    def _response_format(self, schema: str) -> tuple[dict, str]:
        if self.schema_refused:
            return {"type": "json_object"}, "json_object"
        return ({"type": "json_schema", "json_schema": {"name": "answer", "schema": json.loads(schema), "strict": True}},
                "schema")

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
        applied = None
        if config.schema is not None:
            body["response_format"], applied = self._response_format(config.schema)
        while True:
            try:
                resp = self._post(body)
                break
            except _HTTPFailure as exc:
                if _context_overflow(exc):
                    return prompt_too_long(self.count_tokens(chat_text(chat)), int(config.max_new_tokens), 0,
                                           detail=f"server: {exc.detail[:160]}")
                if applied == "schema" and _refuses_schema(exc):
                    # the server cannot do json_schema (e.g. an older llama.cpp server or Ollama): ask for any
                    # JSON object instead, for this and every later call, and record it on each result
                    self.schema_refused = f"HTTP {exc.code}: {exc.detail[:160]}"
                    body["response_format"], applied = {"type": "json_object"}, "json_object"
                    continue
                raise BackendUnavailableError(
                    f"{self.base_url}/chat/completions answered HTTP {exc.code} ({exc.detail[:200]}): check the model name and server log."
                ) from exc
        try:
            choice = resp["choices"][0]
            text = (choice.get("message") or {}).get("content") or ""
            usage = resp.get("usage") or {}
            if not isinstance(text, str):
                raise TypeError("content is not text")
            return RawGeneration(
                text=text,
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                finish_reason=choice.get("finish_reason"),
                structured=applied,
            )
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            raise BackendUnavailableError(
                f"{self.base_url}/chat/completions returned a reply not shaped as a chat completion "
                f"({type(exc).__name__}: {str(exc)[:60]}; reply {str(resp)[:120]}): is it an OpenAI-compatible chat "
                f"endpoint? check the server and its log."
            ) from None

    def _key_parts(self) -> dict[str, Any]:
        """The server is part of what answers: a reply cached from one server is never replayed for another."""
        return {**super()._key_parts(), "server": self.base_url}

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["schema_fallback"] = self.schema_refused or None  # why json_object replaced json_schema, if it did
        return out

    # ------------------------------------------------------------------ LLM hooks
    def _generate_batch(self, chats: list[Chat], config: GenerationConfig) -> list[RawGeneration]:
        if len(chats) == 1 or self.max_concurrency == 1:
            return [self._complete(c, config) for c in chats]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(chats))) as pool:
            return list(pool.map(lambda c: self._complete(c, config), chats))

    def count_tokens(self, text: str) -> int:
        """An estimate: max(words, characters / 4). Servers do not share one tokenize API."""
        return max(len(text.split()), (len(text) + 3) // 4)
