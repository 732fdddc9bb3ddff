"""Parse and validate a `/v1/chat/completions` request body (pure: JSON bytes in, a request out)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import ApiError

ROLES = ("system", "developer", "user", "assistant", "tool")
MAX_TOKENS_LIMIT = 4096


@dataclass(frozen=True)
class ChatRequest:
    """The parts of an OpenAI chat request this server acts on; unknown fields are ignored."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    max_tokens: int
    temperature: float
    stream: bool
    include_usage: bool
    store: bool


def _bad(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code="invalid_value" if param else "invalid_request")


def parse_json(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or a 400 saying where the JSON breaks."""
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"request body is not valid JSON: {exc}", code="invalid_json") from exc
    if not isinstance(value, dict):
        raise ApiError(400, f"request body must be a JSON object, got {type(value).__name__}",
                       code="invalid_json")
    return value


def _text_content(content: Any, param: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)):
                raise _bad(f"{param}[{i}]: only text content parts are supported", f"{param}[{i}]")
            parts.append(part["text"])
        return "".join(parts)
    raise _bad(f"{param}: must be a string, a list of text parts, or null", param)


def _message(raw: Any, i: int) -> dict[str, Any]:
    param = f"messages[{i}]"
    if not isinstance(raw, dict):
        raise _bad(f"{param}: must be an object", param)
    role = raw.get("role")
    if role not in ROLES:
        raise _bad(f"{param}.role: must be one of {', '.join(ROLES)}, got {role!r}", f"{param}.role")
    message: dict[str, Any] = {"role": role, "content": _text_content(raw.get("content"), f"{param}.content")}
    if role == "assistant" and raw.get("tool_calls"):
        calls = raw["tool_calls"]
        if not isinstance(calls, list) or not all(
            isinstance(c, dict) and isinstance(c.get("function"), dict)
            and isinstance(c["function"].get("name"), str) for c in calls
        ):
            raise _bad(f"{param}.tool_calls: each needs function.name", f"{param}.tool_calls")
        message["tool_calls"] = calls
    elif message["content"] is None:
        raise _bad(f"{param}.content: required for role {role!r}", f"{param}.content")
    if role == "tool":
        if not isinstance(raw.get("tool_call_id"), str):
            raise _bad(f"{param}.tool_call_id: required for role 'tool'", f"{param}.tool_call_id")
        message["tool_call_id"] = raw["tool_call_id"]
    return message


def _tool(raw: Any, i: int) -> dict[str, Any]:
    param = f"tools[{i}]"
    if not (isinstance(raw, dict) and raw.get("type") == "function" and isinstance(raw.get("function"), dict)):
        raise _bad(f"{param}: must be {{\"type\": \"function\", \"function\": {{...}}}}", param)
    fn = raw["function"]
    if not (isinstance(fn.get("name"), str) and fn["name"]):
        raise _bad(f"{param}.function.name: required", f"{param}.function.name")
    if "parameters" in fn and not isinstance(fn["parameters"], dict):
        raise _bad(f"{param}.function.parameters: must be a JSON schema object", f"{param}.function.parameters")
    return {"type": "function", "function": {"name": fn["name"], "description": fn.get("description", ""),
                                             "parameters": fn.get("parameters", {"type": "object"})}}


def _select_tools(tools: list[dict[str, Any]], choice: Any) -> list[dict[str, Any]]:
    if choice is None or choice in ("auto", "required"):
        return tools
    if choice == "none":
        return []
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        chosen = [t for t in tools if t["function"]["name"] == name]
        if not chosen:
            raise _bad(f"tool_choice: names {name!r}, which is not in tools", "tool_choice")
        return chosen
    raise _bad("tool_choice: must be 'auto', 'none', 'required' or {\"type\": \"function\", ...}", "tool_choice")


def _number(body: dict[str, Any], key: str, kind: type, low: float, high: float, default: Any) -> Any:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise _bad(f"{key}: must be {'a number' if kind is float else 'an integer'}", key)
    if not low <= value <= high:
        raise _bad(f"{key}: must be between {low} and {high}, got {value}", key)
    return kind(value)


def parse_chat_request(body: dict[str, Any], *, default_max_tokens: int = 256) -> ChatRequest:
    """Validate the fields we use; every refusal is a 400 naming the field."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("model: required (a model id from GET /v1/models)", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("messages: required, a non-empty list", "messages")
    tools_raw = body.get("tools") or []
    if not isinstance(tools_raw, list):
        raise _bad("tools: must be a list", "tools")
    if body.get("n", 1) != 1:
        raise _bad("n: only n=1 is supported", "n")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _bad("stream: must be true or false", "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise _bad("stream_options: must be an object", "stream_options")
    key = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    return ChatRequest(
        model=model,
        messages=[_message(m, i) for i, m in enumerate(messages)],
        tools=_select_tools([_tool(t, i) for i, t in enumerate(tools_raw)], body.get("tool_choice")),
        max_tokens=_number(body, key, int, 1, MAX_TOKENS_LIMIT, default_max_tokens),
        temperature=_number(body, "temperature", float, 0.0, 2.0, 0.0),
        stream=stream,
        include_usage=bool(options.get("include_usage", False)),
        store=bool(body.get("store", False)),
    )
