"""Load WGSL kernels from package resources and fill their `{{NAME}}` constants strictly."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from ..errors import ShaderError

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Z_][A-Z0-9_]*)\s*\}\}")


_INCLUDE = re.compile(r'^//#include "((?:\.\./|[A-Za-z0-9_-]+/)*[A-Za-z0-9_.-]+\.wgsl)"[ \t]*$', re.MULTILINE)


@cache
def load_source(package: str, filename: str) -> str:
    """The text of `filename` inside `package` (e.g. "bonsai.kv.attention", "serial.wgsl").

    A line `//#include "other.wgsl"` is replaced by that file's text, expanded the same way: WGSL has
    no include, and kernels share their row-decoding code this way. The path is relative to the
    including file's package: `../format/row_format.wgsl` is `row_format.wgsl` of the sibling
    package `format`.
    """
    return _expand(package, filename, ())


def _resolve(package: str, path: str) -> tuple[str, str]:
    """(package, file name) of an include path relative to `package`."""
    parts = package.split(".")
    *dirs, filename = path.split("/")
    for d in dirs:
        parts = parts[:-1] if d == ".." else [*parts, d]
    return ".".join(parts), filename


def _expand(package: str, filename: str, including: tuple[str, ...]) -> str:
    name = f"{package}/{filename}"
    if name in including:
        raise ShaderError(f"{name}: include cycle ({' -> '.join((*including, name))})")
    try:
        text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        where = f" (included from {including[-1]})" if including else ""
        raise ShaderError(f"{name}: shader not found{where}") from exc
    return _INCLUDE.sub(lambda m: _expand(*_resolve(package, m.group(1)), (*including, name)).rstrip("\n"), text)


def render(source: str, constants: dict[str, object], *, name: str) -> str:
    """Replace every `{{NAME}}` with `constants[NAME]`; missing or unused constants are errors."""
    wanted = set(_PLACEHOLDER.findall(source))
    missing = sorted(wanted - constants.keys())
    unused = sorted(constants.keys() - wanted)
    if missing:
        raise ShaderError(f"{name}: no value for template constant(s) {', '.join(missing)}")
    if unused:
        raise ShaderError(f"{name}: constant(s) {', '.join(unused)} not used by the shader")

    def value(match: re.Match[str]) -> str:
        v = constants[match.group(1)]
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)

    return _PLACEHOLDER.sub(value, source)
