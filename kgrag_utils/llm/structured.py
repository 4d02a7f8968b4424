"""Schema-constrained decoding: one option on the LLM interface, `structured="schema" | "off"`.

A stage declares the shape of its answer once (a pydantic model or a JSON schema dict) and passes it
with every call (`llm.generate(prompts, schema=Shape)`). What happens then depends on the model's
decoding mode, chosen when it is loaded (`load_llm(..., structured=...)`, default: the preset's):

* ``"off"``    - the schema is ignored; prompts, decoding and cache keys are exactly those of a run
                 without it (the paper-faithful free-text mode);
* ``"schema"`` - the backend constrains decoding to the schema with the engine's own mechanism
                 (llama.cpp: a GBNF grammar built from the schema; OpenAI-compatible servers:
                 `response_format` json_schema, falling back to json_object where a server refuses
                 it, recorded; transformers: xgrammar's logits processor). The schema is part of the
                 response-cache key, so a cached free-text answer is never served to a schema call.

A constrained reply can still be cut by the token limit (it is then not valid JSON): the tolerant
parsers recover its complete elements and the stage counts it as a failure when nothing is left.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..errors import ConfigError

STRUCTURED_MODES = ("off", "schema")

__all__ = ["STRUCTURED_MODES", "check_mode", "schema_dict", "schema_text", "validate_reply", "wants_schema",
           "string_list_schema"]


def wants_schema(llm: Any) -> bool:
    """True when `llm` decodes under schemas (structured="schema"): its stages then prompt for the JSON form."""
    return getattr(llm, "structured", "off") == "schema"


def string_list_schema(key: str, max_items: int = 10, max_length: int = 120) -> dict:
    """{key: [str, ...]} with bounded sizes (bounds stop a constrained model from running on)."""
    return {"type": "object",
            "properties": {key: {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": max_length},
                                 "maxItems": max_items}},
            "required": [key], "additionalProperties": False}


def check_mode(mode: str | None, default: str = "off") -> str:
    """A valid decoding mode (None -> default); anything else raises ConfigError naming the choices."""
    mode = default if mode is None or mode == "" else mode
    if mode not in STRUCTURED_MODES:
        raise ConfigError(f"structured must be one of {list(STRUCTURED_MODES)}, got {mode!r}.")
    return mode


def schema_dict(shape: Any) -> dict:
    """The JSON schema of a stage's answer shape: a pydantic model class (or instance) or a schema dict."""
    if shape is None:
        raise ConfigError("no answer shape given: pass a pydantic model or a JSON schema dict.")
    if isinstance(shape, Mapping):
        out = json.loads(json.dumps(dict(shape)))  # a plain, JSON-able copy
    elif isinstance(shape, str):
        try:
            out = json.loads(shape)
        except ValueError as exc:
            raise ConfigError(f"a schema given as text must be JSON: {exc}") from None
    elif hasattr(shape, "model_json_schema"):
        out = shape.model_json_schema()
    else:
        raise ConfigError(f"an answer shape must be a pydantic model or a JSON schema dict, got {type(shape).__name__}.")
    if not isinstance(out, dict) or not out:
        raise ConfigError("a JSON schema must be a non-empty object.")
    return out


def _canonical(value: Any, ordered: bool = False) -> Any:
    """Keys sorted everywhere except in a `properties` mapping (ordered=True), whose order is kept."""
    if isinstance(value, dict):
        items = value.items() if ordered else sorted(value.items())
        return {k: _canonical(v, ordered=(k == "properties" and not ordered)) for k, v in items}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def schema_text(shape: Any) -> str:
    """Canonical JSON text of a shape's schema: the form held by GenerationConfig and cache keys.

    Keys are sorted, except the names under "properties": grammar engines (llama.cpp's GBNF converter,
    xgrammar) make the model write an object's properties in the order the schema lists them, so that
    order is part of the answer's shape. Sorting them once turned the rerank's {"reasoning", "ids"} into
    ids first, and the 1.5B then counted 1, 2, 3, 4, 5 instead of choosing (docs/RESULTS.md)."""
    return json.dumps(_canonical(schema_dict(shape)), ensure_ascii=False, separators=(",", ":"))


def validate_reply(text: str, schema: Mapping | str) -> str | None:
    """None when `text` is one JSON value valid under `schema`, else the reason (one line)."""
    import jsonschema

    schema = json.loads(schema) if isinstance(schema, str) else schema
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"not JSON ({exc})"
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        return f"schema violation: {exc.message[:160]}"
    return None
