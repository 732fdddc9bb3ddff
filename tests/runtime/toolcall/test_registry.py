"""Tools from typed functions and raw schemas: generated schemas, validation, the registry."""

from __future__ import annotations

from typing import Literal, Optional

import pytest

from bonsai.errors import BonsaiError
from bonsai.toolcall import Tool, ToolArgumentError, ToolDefinitionError, ToolRegistry, tool
from bonsai.toolcall.schema import parse_docstring
from bonsai.toolcall.validate import errors


def weather(
    city: str,
    days: int,
    unit: Literal["c", "f"] = "c",
    hourly: bool = False,
    tags: list[str] | None = None,
    scale: Optional[float] = None,  # noqa: UP045 - Optional[T] must work too
) -> str:
    """Forecast the weather.

    Args:
        city: The city name,
            for example "Paris".
        days: How many days ahead.
        unit (str): Temperature unit.

    Returns:
        A forecast.
    """
    return f"{city}:{days}:{unit}"


def test_schema_from_type_hints_and_google_docstring():
    t = tool(weather)
    assert t.name == "weather" and t.description == "Forecast the weather."
    assert t.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": 'The city name, for example "Paris".'},
            "days": {"type": "integer", "description": "How many days ahead."},
            "unit": {"type": "string", "enum": ["c", "f"], "description": "Temperature unit."},
            "hourly": {"type": "boolean"},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
            "scale": {"anyOf": [{"type": "number"}, {"type": "null"}]},
        },
        "required": ["city", "days"],
        "additionalProperties": False,
    }


def test_rest_docstring_params():
    summary, params = parse_docstring("Add numbers.\n\n:param a: first\n:param int b: second\n")
    assert summary == "Add numbers." and params == {"a": "first", "b": "second"}


@pytest.mark.parametrize(
    "bad",
    [
        lambda x: x,  # no annotation
        lambda *a: a,  # *args
    ],
)
def test_unsupported_functions_are_definition_errors(bad):
    with pytest.raises(ToolDefinitionError):
        tool(bad, name="bad")


def test_unsupported_type_names_tool_and_parameter():
    def f(x: dict) -> None:
        """F."""

    with pytest.raises(ToolDefinitionError, match=r"tool 'f', parameter 'x'"):
        tool(f)


def test_raw_schema_tool_and_unsupported_keyword():
    t = Tool(
        "sum",
        "Sum.",
        {
            "type": "object",
            "properties": {"xs": {"type": "array", "items": {"type": "number"}}},
            "required": ["xs"],
        },
        lambda xs: sum(xs),
    )
    assert t({"xs": [1, 2.5]}) == 3.5
    with pytest.raises(ToolDefinitionError, match="minimum"):
        Tool("x", "", {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}})
    with pytest.raises(ToolDefinitionError, match="object"):
        Tool("x", "", {"type": "string"})
    assert issubclass(ToolDefinitionError, BonsaiError)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"city": "P", "days": 2}, None),
        ({"city": "P"}, "missing required property 'days'"),
        ({"city": "P", "days": "2"}, "$.days: expected integer, got string"),
        ({"city": "P", "days": True}, "$.days: expected integer, got boolean"),
        ({"city": "P", "days": 2.0}, "$.days: expected integer, got number"),
        ({"city": "P", "days": 2, "unit": "k"}, "$.unit: must be one of"),
        ({"city": "P", "days": 2, "zzz": 1}, "unexpected property 'zzz'"),
        ({"city": "P", "days": 2, "tags": ["a", 3]}, "$.tags: matches none"),
        ({"city": "P", "days": 2, "tags": None, "scale": 3}, None),
        ([1], "$: expected object, got array"),
    ],
)
def test_validation_names_the_failing_path(value, problem):
    found = errors(value, tool(weather).parameters)
    if problem is None:
        assert found == []
    else:
        assert found and problem in "; ".join(found)


def test_registry_runs_calls_and_reports_failures_as_text():
    reg = ToolRegistry([weather])
    assert reg.names() == ["weather"] and "weather" in reg and len(reg) == 1
    assert reg.run("call_0", "weather", {"city": "P", "days": 1}).content == "P:1:c"
    bad = reg.run("call_1", "weather", {"city": "P"})
    assert not bad.ok and "missing required property 'days'" in bad.content
    unknown = reg.run("call_2", "nope", {})
    assert not unknown.ok and "unknown tool 'nope'" in unknown.content
    with pytest.raises(ToolDefinitionError, match="twice"):
        reg.add(weather)
    with pytest.raises(ToolArgumentError):
        reg.get("weather").validate({"city": 1, "days": 1})


def test_tool_exceptions_become_error_results():
    def boom(x: int) -> int:
        """Boom."""
        raise RuntimeError("kaput")

    result = ToolRegistry([boom]).run("call_0", "boom", {"x": 1})
    assert not result.ok and "RuntimeError: kaput" in result.content
