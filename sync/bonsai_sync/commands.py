"""The commands as plain functions: typed arguments in, exit code out (the CLI only parses)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from .config import Surface
from .errors import StaleSurfaceError, VerifyError
from .freshness import SurfaceState
from .pipeline import Workspace

OK, STALE = 0, 1


def verify_output(ws: Workspace, surface: Surface, tree: Path, verify_import: bool) -> None:
    """Raise VerifyError unless the tree at `tree` satisfies every import it makes."""
    from .verify import Rules, enclosing_package, first_party_names, verify_tree

    plan = ws.plan(surface)
    rules = Rules(first_party_names(ws.roots), frozenset(surface.third_party), surface.exclude,
                  surface.compiled == "forbid", surface.python, enclosing_package(ws.root / surface.dest))
    # each file's problems as the last verification of this surface found them (verify_tree keys them)
    memo = dict(ws.verify_store.get(f"problems {surface.name}") or {})
    problems = verify_tree(tree, plan.dest, rules, ws.roots, ws.read_for_verify, memo)
    ws.verify_store.put(f"problems {surface.name}", memo)
    ws.verify_store.save()
    if problems:
        raise VerifyError(*problems)
    if verify_import:
        # imported only here: the import alone cost a one-line edit's sync 0.05 s
        from .verify_import import import_entries

        failures, warnings = import_entries(tree, plan.dest, surface.entry, surface.third_party, rules.first_party)
        for warning in warnings:
            click.echo(f"bonsai-sync: warning: {warning}", err=True)
        if failures:
            raise VerifyError(*failures)


def _locks(ws: Workspace, surfaces: list[Surface], exclusive: bool, wait: float) -> contextlib.ExitStack:
    from .locking import surface_lock

    stack = contextlib.ExitStack()
    try:
        for surface in sorted(surfaces, key=lambda s: s.name):
            stack.enter_context(surface_lock(ws.cache_folder / "locks", surface.name, exclusive, wait))
    except BaseException:
        stack.close()
        raise
    return stack


def sync(ws: Workspace, names: tuple[str, ...], dry_run: bool, verify_import: bool, force: bool = False,
         wait: float = 30.0) -> int:
    """Write each surface's closure, verified, through a temporary tree; print one line each.
    A hand-edited file is refused (exit 1, naming each) unless `force`; nothing is written then."""
    from .swap import recover

    surfaces = ws.surfaces(names)
    with _locks(ws, surfaces, exclusive=not dry_run, wait=wait):
        if not dry_run:
            for surface in surfaces:
                recover(ws.root / surface.dest)
        states = [ws.state(surface) for surface in surfaces]
        refused = [s for state in states for s in state.refused]
        if dry_run:
            for state in states:
                _report(state, force, dry=True)
            return OK
        if refused and not force:
            raise StaleSurfaceError(*(f"{s.path}: {s.reason}; not overwritten" for s in refused),
                                    "move each change into the source (the only copy edited by hand), or run "
                                    "`bonsai-sync sync --force` to discard it")
        for surface, state in zip(surfaces, states, strict=True):
            if not state.fresh:
                _write(ws, surface, verify_import)
            elif verify_import:
                verify_output(ws, surface, ws.root / surface.dest, True)
            _report(state, force, dry=False)
    return OK


def _write(ws: Workspace, surface: Surface, verify_import: bool) -> None:
    from .fsutil import remove_tree, walk_files
    from .swap import install
    from .write import created_parents, stage

    plan = ws.plan(surface)
    dest = ws.root / plan.dest
    created = created_parents(ws.root, dest)
    tree = None
    try:
        tree = stage(ws.root, plan, ws.lock_text(plan), ws.state(surface).kept)
        verify_output(ws, surface, tree, verify_import)
        install(tree, dest)
        ws.wrote(dest, plan)
    except BaseException:
        if tree is not None:
            remove_tree(tree)
        if created is not None and created.exists() and next(walk_files(created), None) is None:
            remove_tree(created)
        raise


def _report(state: SurfaceState, force: bool, dry: bool) -> None:
    plan = state.plan
    if dry:
        for item in state.stale:
            action = "write" if item.action == "refuse" and force else item.action
            click.echo(f"{item.path}: would {action} ({item.reason})")
    written = state.count("write") + (state.count("refuse") if force else 0)
    write, remove = ("would write", "would remove") if dry else ("wrote", "removed")
    refuse = f", would refuse {state.count('refuse')}" if dry and state.refused and not force else ""
    click.echo(f"{plan.surface}: {plan.dest}: {write} {written}, {remove} {state.count('remove')}{refuse}, "
               f"unchanged {state.unchanged}")


def check(ws: Workspace, names: tuple[str, ...], show_diff: bool, fmt: str, wait: float = 30.0) -> int:
    """Exit 0 when every surface is exactly what `sync` would write, else 1 naming each file."""
    from .freshness import diff

    surfaces = ws.surfaces(names)
    with _locks(ws, surfaces, exclusive=False, wait=wait):
        report = {surface.name: ws.state(surface) for surface in surfaces}
    if fmt == "json":
        import json

        body = {
            name: {"dest": state.plan.dest, "fresh": state.fresh,
                   "stale": [{"path": s.path, "reason": s.reason} for s in state.stale]}
            for name, state in report.items()
        }
        click.echo(json.dumps({"fresh": all(s.fresh for s in report.values()), "surfaces": body}, indent=2))
    else:
        for name, state in report.items():
            for item in state.stale:
                click.echo(f"{item.path}: {item.reason}")
                if show_diff and item.source:
                    click.echo(diff(ws.root, item), nl=False)
            stale = f"stale ({len(state.stale)} file(s)); run `bonsai-sync sync`"
            click.echo(f"{name}: {state.plan.dest}: {stale if state.stale else 'fresh'}", err=not state.fresh)
    return OK if all(s.fresh for s in report.values()) else STALE


def why(ws: Workspace, name: str, target: str) -> int:
    """Print the shortest import chain from an entry of surface `name` to `target`, and what became of it."""
    from .render import shortest_chain

    surface = ws.config.surface(name)
    found = ws.closure(surface)
    for line in shortest_chain(found.graph, surface, target, ws.root):
        click.echo(line)
    return _report_errors(found.errors)


def _report_errors(errors) -> int:
    """Print the closure's errors (why/graph still show a broken closure) and pick the exit code."""
    for error in errors:
        click.echo(str(error), err=True)
    return 3 if errors else OK


def graph(ws: Workspace, name: str, fmt: str) -> int:
    """Print the closure graph of surface `name` as JSON or Graphviz dot."""
    from .render import to_dot, to_json

    surface = ws.config.surface(name)
    found = ws.closure(surface)
    sys.stdout.write(to_dot(found.graph) if fmt == "dot" else to_json(found.graph, surface))
    return _report_errors(found.errors)
