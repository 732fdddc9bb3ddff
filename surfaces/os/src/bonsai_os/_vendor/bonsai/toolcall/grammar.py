"""Compile tool schemas into grammar nodes for constrained decoding (the validator's exact subset).

A node says what one JSON value may look like. Generation is stricter than validation where that
keeps the automaton small, never looser: objects never get properties their schema does not
list, a schema without a type generates scalars and arrays (no free-form objects). So whatever
the automaton accepts, `validate.errors` accepts too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .errors import ToolDefinitionError
from .registry import ToolRegistry
from .validate import parse_char_class_pattern


def encoded(value: Any) -> bytes:
    """`value` as compact JSON text in UTF-8 (how enum members and constants must be spelt)."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


@dataclass(eq=False)
class ObjNode:
    keys: tuple[bytes, ...]  # each property name JSON-escaped, without quotes
    values: tuple[Any, ...]  # the node of each property, same order
    required: frozenset[int]  # indices into keys
    ordered: bool = False  # keys must come in declaration order (the {"name", "arguments"} wrapper)
    free: Any = None  # with no declared keys: any key, each value of this node (a free-form object)


@dataclass(eq=False)
class ArrNode:
    items: Any = None


@dataclass(eq=False)
class StrNode:
    min_length: int = 0  # characters (an escape or a multi-byte UTF-8 character counts once)
    charset: frozenset[int] | None = None  # from `pattern: ^[...]+$`: the only (ASCII) bytes allowed


@dataclass(eq=False)
class NumNode:
    integer: bool


@dataclass(eq=False)
class LitNode:
    options: tuple[bytes, ...]  # exact JSON spellings: b'true', b'"c"', b'3'


@dataclass(eq=False)
class AltNode:
    options: tuple[Any, ...] = field(default_factory=tuple)


Node = ObjNode | ArrNode | StrNode | NumNode | LitNode | AltNode


def _scalar_or_array() -> AltNode:
    any_value = AltNode()
    any_value.options = (StrNode(), NumNode(False), LitNode((b"true", b"false", b"null")), ArrNode(any_value))
    return any_value


def json_object_node() -> ObjNode:
    """Any JSON object, free keys and values nested at will (JSON replies without a schema)."""
    value = AltNode()
    obj = ObjNode((), (), frozenset(), free=value)
    value.options = (StrNode(), NumNode(False), LitNode((b"true", b"false", b"null")), ArrNode(value), obj)
    return obj


def compile_schema(schema: dict[str, Any], where: str = "$") -> Node:
    """The node for one schema of the supported subset."""
    if "const" in schema:
        return LitNode((encoded(schema["const"]),))
    if "enum" in schema:
        return LitNode(tuple(dict.fromkeys(encoded(v) for v in schema["enum"])))
    if "anyOf" in schema:
        return AltNode(tuple(compile_schema(s, f"{where}.anyOf[{i}]") for i, s in enumerate(schema["anyOf"])))
    types_ = schema.get("type")
    if types_ is None:
        return _scalar_or_array()
    if isinstance(types_, list):
        return AltNode(tuple(compile_schema({**schema, "type": t}, where) for t in types_))
    if types_ == "string":
        min_length = int(schema.get("minLength", 0))
        if "pattern" not in schema:
            return StrNode(min_length)
        chars, at_least_one = parse_char_class_pattern(schema["pattern"], where)
        return StrNode(max(min_length, int(at_least_one)), frozenset(chars.encode("ascii")))
    if types_ in ("number", "integer"):
        return NumNode(types_ == "integer")
    if types_ == "boolean":
        return LitNode((b"true", b"false"))
    if types_ == "null":
        return LitNode((b"null",))
    if types_ == "array":
        return ArrNode(
            compile_schema(schema["items"], f"{where}[]") if "items" in schema else _scalar_or_array()
        )
    if types_ == "object":
        props = schema.get("properties", {})
        names = list(props)
        keys = tuple(json.dumps(k, ensure_ascii=False)[1:-1].encode("utf-8") for k in names)
        values = tuple(compile_schema(props[k], f"{where}.{k}") for k in names)
        required = frozenset(names.index(k) for k in schema.get("required", []))
        return ObjNode(keys, values, required)
    raise ToolDefinitionError(f"{where}: cannot constrain type {types_!r}")


def call_node(registry: ToolRegistry) -> AltNode:
    """`{"name": <tool>, "arguments": {...}}` for every declared tool, name first."""
    if not len(registry):
        raise ToolDefinitionError("constrained decoding needs at least one declared tool")
    return AltNode(
        tuple(
            ObjNode(
                (b"name", b"arguments"),
                (LitNode((encoded(t.name),)), compile_schema(t.parameters, f"tool {t.name!r}")),
                frozenset({0, 1}),
                ordered=True,
            )
            for t in registry
        )
    )
