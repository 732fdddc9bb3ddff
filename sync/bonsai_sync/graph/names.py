"""`from X import name`: `name` must be a submodule of X or a name X binds at run time."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

from ..errors import Diagnostic
from ..scan.facts import Facts
from .index import ModuleIndex, ModuleInfo

# Attributes every module has without binding them
MODULE_ATTRIBUTES = {"__name__", "__doc__", "__file__", "__spec__", "__loader__", "__package__", "__path__",
                     "__builtins__", "__dict__", "__cached__", "__annotations__", "__all__"}


class Names:
    """Answers "does module M provide `name`?" from scan facts: True, False, or None (it may: a
    module-level `__getattr__`, globals() writes, a compiled module, a star import of a module
    the scan cannot read)."""

    def __init__(self, index: ModuleIndex, facts_of: Callable[[Path], Facts]) -> None:
        self.index = index
        self.facts_of = facts_of

    def provides(self, module: ModuleInfo, name: str, seen: frozenset[str] = frozenset()) -> bool | None:
        if name in MODULE_ATTRIBUTES or module.name in seen:
            return True if name in MODULE_ATTRIBUTES else False
        if module.file is None:
            return False  # a namespace package binds nothing; its submodules were looked for already
        if module.compiled:
            return None
        facts = self.facts_of(module.file)
        if name in facts.bindings:
            return True
        answer: bool | None = None if facts.open_names else False
        for star in facts.imports:
            if star.names != ("*",) or star.type_checking or star.in_function:
                continue
            found = self._through_star(module, star.level, star.module, name, seen | {module.name})
            if found:
                return True
            if found is None:
                answer = None
        return answer

    def _through_star(self, module: ModuleInfo, level: int, target: str, name: str, seen: frozenset[str]) -> bool | None:
        if level:
            base = module.package.split(".")
            if level - 1 >= len(base):
                return False
            target = ".".join(base[: len(base) - (level - 1)] + ([target] if target else []))
        info = self.index.find(target)
        if info is None:
            return None  # stdlib or third-party: the scan does not read them
        if info.file is None or info.compiled:
            return None if info.compiled else False
        exported = self.facts_of(info.file).all_names
        if exported is not None:
            return name in exported
        if name.startswith("_"):
            return False
        return self.provides(info, name, seen)

    def suggestion(self, module: ModuleInfo, name: str) -> str:
        """ `; did you mean 'sub'?` from the module's bindings and submodules, or ""."""
        candidates = set(self.facts_of(module.file).bindings) if module.file and not module.compiled else set()
        if module.is_package:
            candidates |= {n.rpartition(".")[2] for n in self.index.submodules(module.name, recursive=False)}
        close = difflib.get_close_matches(name, sorted(candidates), n=1)
        return f"; did you mean {close[0]!r}?" if close else ""


def unresolved_names(builder) -> list[Diagnostic]:
    """Diagnostics for every recorded `from X import name` that X does not provide."""
    names = Names(builder.index, builder.facts_of)
    found = []
    for info, fact, target, attr in builder.names:
        if names.provides(target, attr) is False:
            where = builder.where(target.file) if target.file else target.rel
            found.append(Diagnostic(
                builder.where(info.file), fact.line, fact.col,
                f"cannot import name {attr!r} from {target.name!r} ({where}): neither a submodule nor a name it "
                f"binds at run time (names bound only under `if TYPE_CHECKING:` do not count)"
                f"{names.suggestion(target, attr)}",
            ))
    return found
