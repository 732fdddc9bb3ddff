"""The facts a scan reports about one file: plain frozen values, cacheable, free of libcst."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ImportFact:
    """One import site. `module` has no leading dots; `level` counts them (0 = absolute)."""

    module: str
    # from-import names ("*" for a star import); empty for `import a.b`
    names: tuple[str, ...]
    level: int
    line: int
    col: int
    # "import", "from", "import_module" or "__import__"
    kind: str
    in_function: bool = False
    # inside `try: ... except ImportError` (or ModuleNotFoundError): fine if it does not resolve
    optional: bool = False
    # under `if TYPE_CHECKING:`: not a runtime dependency
    type_checking: bool = False
    # import_module(name, package="a"): the literal anchor for a relative name; None = this package
    package: str | None = None


@dataclass(frozen=True)
class ResourceFact:
    """A literal resource path: `parts` below `package` (None = the directory of this file)."""

    package: str | None
    parts: tuple[str, ...]
    line: int
    col: int
    optional: bool = False


@dataclass(frozen=True)
class Problem:
    """Something the scanner cannot follow: a non-literal import ("dynamic") or path ("resource")."""

    kind: str
    message: str
    line: int
    col: int


@dataclass(frozen=True)
class Facts:
    """Everything the closure needs to know about one file."""

    imports: tuple[ImportFact, ...] = ()
    resources: tuple[ResourceFact, ...] = ()
    problems: tuple[Problem, ...] = ()
    # the literal names of `__all__`, or None when the module does not define it literally
    all_names: tuple[str, ...] | None = None
