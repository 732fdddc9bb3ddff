"""The sampling and output parameters of a chat request: each honoured, or a 400 naming it.

Nothing a client sends is silently ignored: a parameter this server does not implement is refused
unless it is at its neutral value (`n: 1`, `frequency_penalty: 0`, ...) or changes nothing in the
reply (`user`, `service_tier`); an unknown one is refused like OpenAI does. `metadata` is checked
against OpenAI's limits and kept with a stored completion.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import ApiError

MAX_TOKENS_LIMIT = 4096
MAX_STOP = 4
MAX_TOP_LOGPROBS = 20
# OpenAI's limits on `metadata`: pairs, key and value lengths
MAX_METADATA, MAX_METADATA_KEY, MAX_METADATA_VALUE = 16, 64, 512
# parameters parsed here or in openai_request
HANDLED = frozenset({"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "max_tokens",
                     "max_completion_tokens", "temperature", "top_p", "seed", "stop", "logprobs", "top_logprobs",
                     "response_format", "stream", "stream_options", "store", "metadata", "n"})
# accepted as sent: they label the request and change nothing in the reply
NO_EFFECT = frozenset({"user", "service_tier", "safety_identifier", "prompt_cache_key"})
# not implemented: accepted at these values only (null is always accepted)
NEUTRAL: dict[str, Any] = {"frequency_penalty": 0, "presence_penalty": 0, "logit_bias": {}, "modalities": ["text"]}


def bad(message: str, param: str | None = None) -> ApiError:
    """A 400 naming the parameter."""
    return ApiError(400, message, param=param, code="invalid_value" if param else "invalid_request")


# what no database column can hold: a NUL (PostgreSQL refuses it) or half of a UTF-16 pair (not UTF-8)
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


def storable(value: str, param: str, where: str | None = None) -> str:
    """`value` if the database can keep or compare it as text; else a 400 naming `param` (the message
    says `where`, default `param`), so the database never sees, and never refuses, a client's string."""
    found = _UNSTORABLE.search(value)
    if found is not None:
        what = "a NUL character" if found.group() == "\x00" else f"a lone surrogate (U+{ord(found.group()):04X})"
        raise bad(f"{where or param}: contains {what}, which is not text this server can store", param)
    return value


def check_known(body: dict[str, Any]) -> None:
    """Refuse parameters this server would otherwise ignore."""
    for key in sorted(body):
        value = body[key]
        if key in HANDLED or key in NO_EFFECT or value is None:
            continue
        if key in NEUTRAL:
            if value != NEUTRAL[key] or isinstance(value, bool):
                raise bad(f"{key}: not supported by this server (only {NEUTRAL[key]!r} or null)", key)
            continue
        raise bad(f"{key}: not supported by this server", key)


def number(body: dict[str, Any], key: str, kind: type, low: float, high: float, default: Any) -> Any:
    """`body[key]` as an int or float within [low, high], or `default` when absent or null."""
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise bad(f"{key}: must be {'a number' if kind is float else 'an integer'}", key)
    if not low <= value <= high:
        raise bad(f"{key}: must be between {low} and {high}, got {value}", key)
    return kind(value)


def flag(body: dict[str, Any], key: str, default: bool) -> bool:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad(f"{key}: must be true or false", key)
    return value


def stop_sequences(value: Any) -> tuple[str, ...]:
    """`stop`: a string or up to four non-empty strings."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not (isinstance(items, list) and all(isinstance(s, str) and s for s in items)) or len(items) > MAX_STOP:
        raise bad(f"stop: must be a non-empty string or a list of at most {MAX_STOP} non-empty strings", "stop")
    return tuple(items)


def logprobs(body: dict[str, Any]) -> int | None:
    """None when off; else how many alternatives to list per token (top_logprobs, 0 to 20)."""
    wanted = flag(body, "logprobs", False)
    top = number(body, "top_logprobs", int, 0, MAX_TOP_LOGPROBS, None)
    if top is not None and not wanted:
        raise bad("top_logprobs: needs logprobs: true", "top_logprobs")
    return (top or 0) if wanted else None


def response_format(value: Any) -> dict[str, Any] | None:
    """None for text; {"type": "json_object"}; or {"type": "json_schema", "schema": {...}}."""
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        raise bad("response_format.type: must be one of text, json_object, json_schema", "response_format")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        raise bad("response_format.json_schema: required, an object with name and schema", "response_format")
    if not isinstance(spec.get("name"), str) or not spec["name"]:
        raise bad("response_format.json_schema.name: required", "response_format")
    if not isinstance(spec.get("schema"), dict):
        raise bad("response_format.json_schema.schema: required, a JSON schema object", "response_format")
    return {"type": "json_schema", "schema": spec["schema"]}


def stream_options(body: dict[str, Any]) -> bool:
    """Whether the stream ends with a usage chunk."""
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise bad("stream_options: must be an object", "stream_options")
    value = options.get("include_usage", False)
    if not isinstance(value, bool):
        raise bad("stream_options.include_usage: must be true or false", "stream_options.include_usage")
    return value


def metadata(value: Any, param: str = "metadata") -> dict[str, str]:
    """`metadata`: up to 16 string pairs (keys up to 64 characters, values up to 512); null is {}."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(f"{param}: must be an object of string keys and string values", param)
    if len(value) > MAX_METADATA:
        raise bad(f"{param}: at most {MAX_METADATA} pairs, got {len(value)}", param)
    for key, item in value.items():
        if not key or len(key) > MAX_METADATA_KEY:
            raise bad(f"{param}: key {key[:MAX_METADATA_KEY]!r}: must be 1 to {MAX_METADATA_KEY} characters", param)
        storable(key, param, f"{param} key {key!r}")
        if not isinstance(item, str) or len(item) > MAX_METADATA_VALUE:
            raise bad(f"{param}.{key}: must be a string of at most {MAX_METADATA_VALUE} characters", param)
        storable(item, param, f"{param}.{key}")
    return dict(value)
