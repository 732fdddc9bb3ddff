"""`hidden-imports`: each hint answers the dynamic import sites it names or whose targets it matches."""

from __future__ import annotations

from dataclasses import dataclass

from .config import Hint
from .errors import Diagnostic
from .graph import ALWAYS, GraphBuilder
from .index import ModuleIndex

_HIDDEN_HINT = ("declare its targets in `hidden-imports` of surface {name!r} (a \"path.py:LINE\" = [...] entry answers "
                "this site alone; [] when it needs nothing copied)")


def expand(index: ModuleIndex, pattern: str) -> list[str]:
    """The modules a hint pattern names: "pkg.mod", "pkg.*" (the modules right below), "pkg.**" (all below)."""
    if pattern.endswith(".**"):
        return index.submodules(pattern[:-3], recursive=True)
    if pattern.endswith(".*"):
        return index.submodules(pattern[:-2], recursive=False)
    return [pattern] if index.find(pattern) is not None else []


@dataclass
class _Answer:
    hint: Hint
    modules: list[str]
    used: bool = False


def answer_sites(builder: GraphBuilder, hints: list[tuple[Hint, list[str]]], where_hint) -> list[Diagnostic]:
    """Link each dynamic site to the hinted modules that answer it; an unanswered site (optional or
    not: an empty per-site answer is how a site says it needs nothing copied), and a hint that
    answers no site, are errors."""
    answers = [_Answer(h, modules) for h, modules in hints]
    errors = []
    blind: list[str] = []  # unanswered sites with no known start: a per-site entry answers them
    for info, site in builder.dynamic:
        assert info.file is not None
        shown = builder.where(info.file)
        prefix = builder.absolute(info, site.level, site.prefix, site.package) if site.prefix is not None else None
        if prefix is not None and site.level and not site.prefix:
            prefix += "."  # f".{name}": a module right below the anchor package
        top = prefix.split(".")[0] if prefix else None
        if top and (top in builder.allowed or (top in ALWAYS and builder.index.find(top) is None)):
            continue  # f"encodings.{x}": the stdlib or an allowed third-party package provides it
        found = [a for a in answers if _answers(a, shown, site.line, prefix, info.name.split(".")[0], builder)]
        if prefix is None and not found:
            blind.append(f"{shown}:{site.line}")
        for answer in found:
            answer.used = True
            for module in answer.modules:
                builder.graph.add_edge(info.name, module, kind=f"{site.what} (hidden-imports)", file=shown,
                                       line=site.line, col=site.col, how="optional" if site.optional else "")
        if not found:  # inside try/except ImportError too: a target missing from the copy fails only at run time
            known = f" (its targets start with {prefix!r})" if prefix else ""
            optional = " inside try/except ImportError" if site.optional else ""
            advice = _HIDDEN_HINT.format(name=builder.surface.name)
            errors.append(Diagnostic(shown, site.line, site.col, f"cannot follow {site.what}{known}{optional}; {advice}"))
    for answer in answers:
        if not answer.used:
            what = f"{answer.hint.site!r}" if answer.hint.site else f"{answer.hint.patterns[0]!r}"
            advice = "remove it, or name the module as an `entry` if nothing imports it by name"
            if answer.hint.site is None and blind:
                # a loader in another package (lazy_loader.attach): its site is answered by naming it
                advice += (f"; a site whose targets have no known start (such as {blind[0]}) is answered by "
                           f"naming it: [{builder.table}.hidden-imports] \"{blind[0]}\" = [{what}]")
            errors.append(where_hint(f"{what} answers no dynamic import in the closure; {advice}"))
    return errors


def _answers(answer: _Answer, shown: str, line: int, prefix: str | None, top: str, builder: GraphBuilder) -> bool:
    site = answer.hint.site
    if site is not None:
        path, _, number = site.rpartition(":")
        return number == str(line) and (shown == path or shown.endswith("/" + path))
    if prefix is not None:
        return any(m.startswith(prefix) for m in answer.modules)
    return any(m.split(".")[0] == top for m in answer.modules)
