"""JSON Schema for a Python function, from its type hints and its docstring."""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin

from .errors import ToolDefinitionError

_SCALARS: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_GOOGLE_PARAM = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def schema_for_type(tp: Any, where: str) -> dict[str, Any]:
    """The JSON Schema of one annotation: str/int/float/bool, list[T], Literal[...], Optional[T]."""
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    origin = get_origin(tp)
    if origin is Literal:
        values = get_args(tp)
        kinds = {type(v) for v in values}
        if len(kinds) != 1 or next(iter(kinds)) not in _SCALARS:
            raise ToolDefinitionError(
                f"{where}: Literal values must all be of one type among str/int/float/bool"
            )
        return {"type": _SCALARS[next(iter(kinds))], "enum": list(values)}
    if origin is list:
        args = get_args(tp)
        if len(args) != 1:
            raise ToolDefinitionError(f"{where}: write list[T] with the item type, e.g. list[str]")
        return {"type": "array", "items": schema_for_type(args[0], f"{where}[]")}
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        rest = [a for a in args if a is not type(None)]
        if len(args) == 2 and len(rest) == 1:
            return {"anyOf": [schema_for_type(rest[0], where), {"type": "null"}]}
        raise ToolDefinitionError(f"{where}: only Optional[T] unions are supported, got {tp!r}")
    raise ToolDefinitionError(
        f"{where}: unsupported type {tp!r}; use str, int, float, bool, list[T], Literal[...] or Optional[T]"
    )


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(summary, {param: description}) from a Google-style (`Args:`) or reST (`:param x:`) docstring."""
    text = inspect.cleandoc(doc or "")
    lines = text.splitlines()
    summary_lines: list[str] = []
    params: dict[str, str] = {}
    i = 0
    while i < len(lines) and lines[i].strip() and not _SECTION.match(lines[i].strip()):
        if _REST_PARAM.match(lines[i].strip()):
            break
        summary_lines.append(lines[i].strip())
        i += 1
    current: str | None = None
    in_section = False
    section_indent = 0
    for line in lines[i:]:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if _SECTION.match(stripped):
            in_section, current, section_indent = True, None, indent
            continue
        rest = _REST_PARAM.match(stripped)
        if rest:
            current = rest.group(1)
            params[current] = rest.group(2).strip()
            continue
        if in_section and stripped and indent <= section_indent:
            in_section, current = False, None  # a new section (Returns:, Raises:, ...) begins
        if in_section and stripped:
            google = _GOOGLE_PARAM.match(stripped)
            if google and (current is None or indent <= section_indent + 4):
                current = google.group(1).lstrip("*")
                params[current] = google.group(3).strip()
                continue
        if current is not None and stripped and indent > section_indent:
            params[current] = f"{params[current]} {stripped}".strip()
        elif not stripped:
            current = None if not in_section else current
    return " ".join(summary_lines), params


def function_schema(fn: Callable[..., Any], name: str | None = None) -> tuple[str, str, dict[str, Any]]:
    """(name, description, parameters schema) of `fn`; every parameter needs a supported annotation."""
    tool_name = name or fn.__name__
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:  # noqa: BLE001 - any unresolvable annotation is reported the same way
        raise ToolDefinitionError(f"tool {tool_name!r}: cannot resolve type hints: {exc}") from exc
    summary, docs = parse_docstring(fn.__doc__)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        where = f"tool {tool_name!r}, parameter {param.name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ToolDefinitionError(f"{where}: tools take named parameters only (no *args, **kwargs, /)")
        if param.name not in hints:
            raise ToolDefinitionError(f"{where}: add a type annotation")
        prop = schema_for_type(hints[param.name], where)
        if param.name in docs:
            prop["description"] = docs[param.name]
        properties[param.name] = prop
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    schema["additionalProperties"] = False
    return tool_name, summary, schema
