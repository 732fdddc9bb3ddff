"""Load WGSL kernels from package resources and fill their `{{NAME}}` constants strictly."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from ..errors import ShaderError

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Z_][A-Z0-9_]*)\s*\}\}")


_INCLUDE = re.compile(r'^//#include "([A-Za-z0-9_.-]+\.wgsl)"[ \t]*$', re.MULTILINE)

# Kernels are named by their canonical package ("bonsai.kv"); a surface may import this runtime
# under another name (`bonsai_tenant._vendor.bonsai`), so that prefix means "the package this copy
# of the runtime is": a vendored copy reads its own kernels, never those of another `bonsai`.
CANONICAL = "bonsai"
RUNTIME_PACKAGE = __name__.rsplit(".", 2)[0]  # "<runtime>.gpu.shaders" -> "<runtime>"


def resolve_package(package: str) -> str:
    """The importable name of `package` ("bonsai.kv" -> e.g. "bonsai_tenant._vendor.bonsai.kv")."""
    if package == CANONICAL or package.startswith(CANONICAL + "."):
        return RUNTIME_PACKAGE + package[len(CANONICAL):]
    return package


@cache
def load_source(package: str, filename: str) -> str:
    """The text of `filename` inside `package` (e.g. "bonsai.kv", "attention.wgsl").

    A line `//#include "other.wgsl"` is replaced by that file's text (same package, expanded the
    same way): WGSL has no include, and kernel variants share their row-decoding code this way.
    """
    return _expand(package, filename, ())


def _expand(package: str, filename: str, including: tuple[str, ...]) -> str:
    name = f"{package}/{filename}"
    if filename in including:
        raise ShaderError(f"{name}: include cycle ({' -> '.join((*including, filename))})")
    try:
        text = resources.files(resolve_package(package)).joinpath(filename).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        where = f" (included from {package}/{including[-1]})" if including else ""
        raise ShaderError(f"{name}: shader not found{where}") from exc
    return _INCLUDE.sub(lambda m: _expand(package, m.group(1), (*including, filename)).rstrip("\n"), text)


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
