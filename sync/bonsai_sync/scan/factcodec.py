"""Scan facts to and from the compact JSON a lock records for each scanned file (exact round trip)."""

from __future__ import annotations

import json
from typing import Any

from .facts import DynamicSite, Facts, ImportFact, Problem, ResourceFact

# ImportFact's flags, one bit each
_IN_FUNCTION, _OPTIONAL, _TYPE_CHECKING, _CONDITIONAL = 1, 2, 4, 8


def encode(facts: Facts) -> str:
    """`facts` as JSON in printable ASCII without a single quote (a TOML literal string holds it as
    is); stable: equal facts, equal text."""
    body: dict[str, Any] = {}
    if facts.imports:
        body["i"] = [_import(f) for f in facts.imports]
    if facts.resources:
        body["r"] = [[r.package, list(r.parts), r.line, r.col, int(r.optional)] for r in facts.resources]
    if facts.problems:
        body["p"] = [[p.kind, p.message, p.line, p.col] for p in facts.problems]
    if facts.dynamic:
        body["d"] = [[d.line, d.col, d.what, d.prefix, d.level, d.package, int(d.optional)] for d in facts.dynamic]
    if facts.all_names is not None:
        body["a"] = list(facts.all_names)
    if facts.bindings:
        body["b"] = sorted(facts.bindings)
    if facts.open_names:
        body["o"] = 1
    return json.dumps(body, separators=(",", ":"), ensure_ascii=True).replace("'", "\\u0027")


def decode(text: str) -> Facts:
    """The facts `encode` wrote; ValueError when `text` is not such a record."""
    try:
        body = json.loads(text)
        if not isinstance(body, dict) or not set(body) <= set("irpdabo"):
            raise ValueError("unknown keys")
        return Facts(
            imports=tuple(_import_fact(*row) for row in body.get("i", ())),
            resources=tuple(ResourceFact(_opt_str(p), _strs(parts), _int(line), _int(col), bool(opt))
                            for p, parts, line, col, opt in body.get("r", ())),
            problems=tuple(Problem(_str(k), _str(m), _int(line), _int(col)) for k, m, line, col in body.get("p", ())),
            dynamic=tuple(DynamicSite(_int(line), _int(col), _str(what), _opt_str(prefix), _int(level), _opt_str(pkg), bool(opt))
                          for line, col, what, prefix, level, pkg, opt in body.get("d", ())),
            all_names=_strs(body["a"]) if "a" in body else None,
            bindings=frozenset(_strs(body.get("b", ()))),
            open_names=bool(body.get("o", 0)),
        )
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"not a scan record: {exc}") from None


def _import(f: ImportFact) -> list[Any]:
    flags = (_IN_FUNCTION * f.in_function | _OPTIONAL * f.optional | _TYPE_CHECKING * f.type_checking
             | _CONDITIONAL * f.conditional)
    row = [f.module, list(f.names), f.level, f.line, f.col, f.kind, flags]
    return row + [f.package] if f.package is not None else row


def _import_fact(module: str, names: list[str], level: int, line: int, col: int, kind: str, flags: int,
                 package: str | None = None) -> ImportFact:
    if not isinstance(flags, int) or package is not None and not isinstance(package, str):
        raise TypeError("bad import row")
    return ImportFact(_str(module), _strs(names), _int(level), _int(line), _int(col), _str(kind),
                      bool(flags & _IN_FUNCTION), bool(flags & _OPTIONAL), bool(flags & _TYPE_CHECKING), package,
                      bool(flags & _CONDITIONAL))


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _opt_str(value: object) -> str | None:
    return None if value is None else _str(value)


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def _strs(values: object) -> tuple[str, ...]:
    if not isinstance(values, list | tuple):
        raise TypeError(f"expected a list, got {values!r}")
    return tuple(_str(v) for v in values)
