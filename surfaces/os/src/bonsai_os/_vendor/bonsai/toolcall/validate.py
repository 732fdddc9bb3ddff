"""Validation of JSON values against the JSON Schema subset that tools use (no third-party library).

The subset: `type` (string, number, integer, boolean, null, array, object, or a list of them),
`enum`, `const`, `properties`, `required`, `additionalProperties` (bool), `items`, `anyOf`,
`minLength` and `pattern` of the form `^[chars]+$` / `^[chars]*$` (strings), plus
the annotations `description`, `title`, `default`. It is exactly what constrained decoding can
enforce, so a call that the mask allowed always validates here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import ToolDefinitionError

SUPPORTED_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "minLength",
        "pattern",
    }
    | {"description", "title", "default"}
)
JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "null", "array", "object"})


_CLASS_PATTERN = re.compile(r"^\^\[((?:\\.|[^\]\\])+)\]([+*])\$$")


def parse_char_class_pattern(pattern: str, where: str) -> tuple[str, bool]:
    """(allowed characters, at least one?) of a `^[...]+$` / `^[...]*$` pattern (ASCII, `a-z` ranges,
    backslash escapes); ToolDefinitionError for any other pattern."""
    m = _CLASS_PATTERN.match(pattern)
    if not m:
        raise ToolDefinitionError(f"{where}: pattern {pattern!r} unsupported; use ^[chars]+$ or ^[chars]*$")
    body, i = m.group(1), 0
    chars: list[str] = []
    while i < len(body):
        c = body[i + 1] if body[i] == "\\" else body[i]
        step = 2 if body[i] == "\\" else 1
        if i + step + 1 < len(body) and body[i + step] == "-":
            end = body[i + step + 1]
            chars.extend(chr(x) for x in range(ord(c), ord(end) + 1))
            i += step + 2
        else:
            chars.append(c)
            i += step
    text = "".join(dict.fromkeys(chars))
    if not text.isascii() or '"' in text or "\\" in text or any(ord(ch) < 0x20 for ch in text):
        raise ToolDefinitionError(
            f"{where}: pattern {pattern!r}: printable ASCII only, no quote or backslash"
        )
    return text, m.group(2) == "+"


def check_supported(schema: Any, where: str) -> None:
    """Raise ToolDefinitionError if `schema` uses anything outside the supported subset."""
    if not isinstance(schema, dict):
        raise ToolDefinitionError(f"{where}: a schema must be a JSON object, got {schema!r}")
    unknown = sorted(set(schema) - SUPPORTED_KEYWORDS)
    if unknown:
        raise ToolDefinitionError(
            f"{where}: unsupported schema keyword(s) {unknown}; supported: {sorted(SUPPORTED_KEYWORDS)}"
        )
    types_ = schema.get("type")
    if types_ is not None:
        for t in types_ if isinstance(types_, list) else [types_]:
            if t not in JSON_TYPES:
                raise ToolDefinitionError(f"{where}: unknown type {t!r}")
    if "enum" in schema and (not isinstance(schema["enum"], list) or not schema["enum"]):
        raise ToolDefinitionError(f"{where}: enum must be a non-empty list")
    for key, sub in (schema.get("properties") or {}).items():
        check_supported(sub, f"{where}.{key}")
    if "items" in schema:
        check_supported(schema["items"], f"{where}[]")
    for i, sub in enumerate(schema.get("anyOf", [])):
        check_supported(sub, f"{where}.anyOf[{i}]")
    if "minLength" in schema and not (
        isinstance(schema["minLength"], int) and 0 <= schema["minLength"] <= 64
    ):
        raise ToolDefinitionError(f"{where}: minLength must be an integer from 0 to 64")
    if "pattern" in schema:
        parse_char_class_pattern(schema["pattern"], where)
    if not isinstance(schema.get("additionalProperties", False), bool):
        raise ToolDefinitionError(f"{where}: additionalProperties must be true or false")
    missing = set(schema.get("required", [])) - set(schema.get("properties", {}))
    if missing:
        raise ToolDefinitionError(f"{where}: required names unknown properties {sorted(missing)}")


def _type_ok(value: Any, t: str) -> bool:
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "null":
        return value is None
    if t == "array":
        return isinstance(value, list)
    return isinstance(value, dict)


def _kind(value: Any) -> str:
    for t in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _type_ok(value, t):
            return t
    return type(value).__name__


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0 but True != 1."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Every way `value` fails `schema`, as `path: problem` lines; empty when it validates."""
    if "anyOf" in schema:
        branches = [errors(value, sub, path) for sub in schema["anyOf"]]
        if all(branches):
            return [f"{path}: matches none of the allowed forms ({'; '.join(b[0] for b in branches)})"]
    types_ = schema.get("type")
    if types_ is not None:
        allowed = types_ if isinstance(types_, list) else [types_]
        if not any(_type_ok(value, t) for t in allowed):
            return [f"{path}: expected {' or '.join(allowed)}, got {_kind(value)} {json.dumps(value)[:40]}"]
    if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
        return [f"{path}: must be one of {json.dumps(schema['enum'])}, got {json.dumps(value)[:40]}"]
    if "const" in schema and not _same(value, schema["const"]):
        return [f"{path}: must be {json.dumps(schema['const'])}"]
    found: list[str] = []
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        found.append(f"{path}: must have at least {schema['minLength']} character(s)")
    if isinstance(value, str) and "pattern" in schema and not re.fullmatch(schema["pattern"], value):
        found.append(f"{path}: must match {schema['pattern']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                found.append(f"{path}: missing required property {key!r}")
        for key, item in value.items():
            if key in props:
                found += errors(item, props[key], f"{path}.{key}")
            elif schema.get("additionalProperties", True) is False:
                found.append(f"{path}: unexpected property {key!r} (allowed: {sorted(props)})")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += errors(item, schema["items"], f"{path}[{i}]")
    return found
