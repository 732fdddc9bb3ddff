"""Parse and validate a `/v1/chat/completions` request body (pure: JSON bytes in, a request out)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import openai_options as opt
from .errors import ApiError
from .openai_options import bad

ROLES = ("system", "developer", "user", "assistant", "tool")
MAX_DEPTH = 64  # JSON nesting the server reads (a tool schema needs a handful)


@dataclass(frozen=True)
class ChatRequest:
    """An OpenAI chat request as this server acts on it; every other parameter was refused or is inert."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]  # the tools offered: none for tool_choice "none", the one named
    tool_choice: str  # "auto" or "required" (a named function: "required" with only that tool)
    parallel_tool_calls: bool
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    stop: tuple[str, ...]
    logprobs: int | None  # None: off; else alternatives per token
    response_format: dict[str, Any] | None
    stream: bool
    include_usage: bool
    store: bool
    metadata: dict[str, str]  # kept with a stored completion; filters GET /v1/chat/completions
    sent_messages: list[Any]  # the messages as the client sent them (GET .../{id}/messages)

    def options(self) -> dict[str, Any]:
        """The backend options this request sets away from their defaults, by OpenAI parameter name."""
        wanted = {"tool_choice": self.tool_choice if self.tool_choice != "auto" else None,
                  "parallel_tool_calls": False if not self.parallel_tool_calls else None,
                  "response_format": self.response_format, "stop": self.stop or None,
                  "top_p": self.top_p if self.top_p != 1.0 else None, "seed": self.seed,
                  "logprobs": self.logprobs}
        return {k: v for k, v in wanted.items() if v is not None}


class _HugeInt:
    """A JSON integer too long for Python to read (over sys.get_int_max_str_digits() digits)."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _integer(text: str) -> int | _HugeInt:
    try:
        return int(text)
    except ValueError:  # more digits than the interpreter converts: refused below, naming where it is
        return _HugeInt(len(text.lstrip("-")))


def _depth(value: Any) -> int:
    """How deep JSON nests (iteratively: no recursion on client input); a 400 naming the place of an
    integer too long to read."""
    deepest, todo = 0, [(value, 1, "")]
    while todo:
        item, depth, path = todo.pop()
        if isinstance(item, _HugeInt):
            param = path.lstrip(".")
            raise bad(f"{param}: an integer of {item.digits} digits is out of range", param)
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            todo.extend((v, depth + 1, f"{path}.{k}" if k.isidentifier() else f"{path}[{k!r}]")
                        for k, v in item.items())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            todo.extend((v, depth + 1, f"{path}[{i}]") for i, v in enumerate(item))
    return deepest


def parse_json(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or a 400 saying where the JSON breaks."""
    try:
        value = json.loads(body, parse_int=_integer)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"request body is not valid JSON: {exc}", code="invalid_json") from exc
    except RecursionError as exc:
        raise ApiError(400, "request body is not valid JSON: nested too deeply", code="invalid_json") from exc
    if not isinstance(value, dict):
        raise ApiError(400, f"request body must be a JSON object, got {type(value).__name__}",
                       code="invalid_json")
    if _depth(value) > MAX_DEPTH:
        raise ApiError(400, f"request body is nested more than {MAX_DEPTH} levels deep", code="invalid_json")
    return value


def _text_content(content: Any, param: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)):
                raise bad(f"{param}[{i}]: only text content parts are supported", f"{param}[{i}]")
            parts.append(part["text"])
        return "".join(parts)
    raise bad(f"{param}: must be a string, a list of text parts, or null", param)


def _tool_call(raw: Any, param: str) -> dict[str, Any]:
    """An assistant's earlier call, its arguments parsed (a JSON object)."""
    fn = raw.get("function") if isinstance(raw, dict) else None
    if not (isinstance(fn, dict) and isinstance(fn.get("name"), str)):
        raise bad(f"{param}: needs function.name", param)
    arguments = fn.get("arguments") or "{}"
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError as exc:
        raise bad(f"{param}.function.arguments: not valid JSON ({exc.msg})", f"{param}.function.arguments") from exc
    if not isinstance(parsed, dict):
        raise bad(f"{param}.function.arguments: must be a JSON object", f"{param}.function.arguments")
    return {"id": str(raw.get("id", "")), "type": "function", "function": {"name": fn["name"], "arguments": parsed}}


def _message(raw: Any, i: int) -> dict[str, Any]:
    param = f"messages[{i}]"
    if not isinstance(raw, dict):
        raise bad(f"{param}: must be an object", param)
    role = raw.get("role")
    if role not in ROLES:
        raise bad(f"{param}.role: must be one of {', '.join(ROLES)}, got {role!r}", f"{param}.role")
    message: dict[str, Any] = {"role": role, "content": _text_content(raw.get("content"), f"{param}.content")}
    if role == "assistant" and raw.get("tool_calls"):
        calls = raw["tool_calls"]
        if not isinstance(calls, list):
            raise bad(f"{param}.tool_calls: must be a list", f"{param}.tool_calls")
        message["tool_calls"] = [_tool_call(c, f"{param}.tool_calls[{j}]") for j, c in enumerate(calls)]
    elif message["content"] is None:
        raise bad(f"{param}.content: required for role {role!r}", f"{param}.content")
    if role == "tool":
        if not isinstance(raw.get("tool_call_id"), str):
            raise bad(f"{param}.tool_call_id: required for role 'tool'", f"{param}.tool_call_id")
        message["tool_call_id"] = raw["tool_call_id"]
    return message


def _tool(raw: Any, i: int) -> dict[str, Any]:
    param = f"tools[{i}]"
    if not (isinstance(raw, dict) and raw.get("type") == "function" and isinstance(raw.get("function"), dict)):
        raise bad(f"{param}: must be {{\"type\": \"function\", \"function\": {{...}}}}", param)
    fn = raw["function"]
    if not (isinstance(fn.get("name"), str) and fn["name"]):
        raise bad(f"{param}.function.name: required", f"{param}.function.name")
    if "parameters" in fn and not isinstance(fn["parameters"], dict):
        raise bad(f"{param}.function.parameters: must be a JSON schema object", f"{param}.function.parameters")
    description = fn.get("description", "")
    if not isinstance(description, str):
        raise bad(f"{param}.function.description: must be a string", f"{param}.function.description")
    return {"type": "function", "function": {"name": fn["name"], "description": description,
                                             "parameters": fn.get("parameters", {"type": "object"})}}


def _tool_choice(tools: list[dict[str, Any]], choice: Any) -> tuple[list[dict[str, Any]], str]:
    """(the tools offered, "auto" | "required")."""
    if choice is None or choice in ("auto", "required"):
        return tools, choice or "auto"
    if choice == "none":
        return [], "auto"
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        chosen = [t for t in tools if t["function"]["name"] == name]
        if not chosen:
            raise bad(f"tool_choice: names {name!r}, which is not in tools", "tool_choice")
        return chosen, "required"
    raise bad("tool_choice: must be 'auto', 'none', 'required' or {\"type\": \"function\", ...}", "tool_choice")


def parse_chat_request(body: dict[str, Any], *, default_max_tokens: int = 256) -> ChatRequest:
    """Validate every parameter; each refusal is a 400 naming it."""
    opt.check_known(body)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad("model: required (a model id from GET /v1/models)", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("messages: required, a non-empty list", "messages")
    tools_raw = body.get("tools") or []
    if not isinstance(tools_raw, list):
        raise bad("tools: must be a list", "tools")
    if body.get("n") not in (None, 1) or isinstance(body.get("n"), bool):
        raise bad("n: only n=1 is supported", "n")
    tools, tool_choice = _tool_choice([_tool(t, i) for i, t in enumerate(tools_raw)], body.get("tool_choice"))
    key = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    return ChatRequest(
        model=model,
        messages=[_message(m, i) for i, m in enumerate(messages)],
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=opt.flag(body, "parallel_tool_calls", True),
        max_tokens=opt.number(body, key, int, 1, opt.MAX_TOKENS_LIMIT, default_max_tokens),
        temperature=opt.number(body, "temperature", float, 0.0, 2.0, 0.0),
        top_p=opt.number(body, "top_p", float, 0.0, 1.0, 1.0),
        seed=opt.number(body, "seed", int, -(2**63), 2**63 - 1, None),
        stop=opt.stop_sequences(body.get("stop")),
        logprobs=opt.logprobs(body),
        response_format=opt.response_format(body.get("response_format")),
        stream=opt.flag(body, "stream", False),
        include_usage=opt.stream_options(body),
        store=opt.flag(body, "store", False),
        metadata=opt.metadata(body.get("metadata")),
        sent_messages=messages,
    )
