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
    # under an `if` the scan cannot decide (`if sys.platform == "win32":`, `if has_simplejson:`)
    conditional: bool = False

    @property
    def required(self) -> bool:
        """Runs whenever the module is imported, and fails that import if it does not resolve."""
        return not (self.in_function or self.optional or self.type_checking or self.conditional)


@dataclass(frozen=True)
class DynamicSite:
    """An import of a name the scanner cannot read. `prefix` is the literal head of the name
    (`"app.plugins."` for f"app.plugins.{x}", relative when `level` > 0), None when nothing is known."""

    line: int
    col: int
    # what the call is, for messages: "import_module()", "__import__()", "pkgutil.iter_modules() plugin loop"
    what: str
    prefix: str | None = None
    level: int = 0
    # the literal anchor of a relative name; None = this module's package
    package: str | None = None
    optional: bool = False


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
    """Something the scanner cannot read: the file itself ("syntax") or a non-literal path ("resource")."""

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
    dynamic: tuple[DynamicSite, ...] = ()
    # the literal names of `__all__`, or None when the module does not define it literally
    all_names: tuple[str, ...] | None = None
    # names bound at module level at run time (defs, classes, assignments, imports; not those
    # bound only under `if TYPE_CHECKING:` or in a branch for another Python)
    bindings: frozenset[str] = frozenset()
    # the module may provide names the scanner cannot list: a module-level `__getattr__`,
    # writes through globals()/locals()/vars(), or `sys.modules[__name__]` replaced
    open_names: bool = False
