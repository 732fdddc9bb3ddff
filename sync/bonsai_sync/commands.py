"""The commands as plain functions: typed arguments in, exit code out (the CLI only parses)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from .config import Surface
from .errors import FatalError, StaleSurfaceError, VerifyError
from .freshness import Stale, SurfaceState
from .pipeline import Workspace

OK, STALE = 0, 1
_DONE = {"keep": "kept", "delete": "deleted"}


def verify_output(ws: Workspace, surface: Surface, tree: Path, verify_import: bool) -> None:
    """Raise VerifyError unless the tree at `tree` satisfies every import it makes."""
    from .verify import Rules, enclosing_package, first_party_names, summarized, verify_tree

    plan = ws.plan(surface)
    rules = Rules(first_party_names(ws.roots), frozenset(surface.third_party), surface.exclude,
                  surface.compiled == "forbid", surface.python, enclosing_package(ws.root / surface.dest))
    # each file's problems as the last verification of this surface found them (verify_tree keys them)
    memo = dict(ws.verify_store.get(f"problems {surface.name}") or {})
    problems = verify_tree(tree, plan.dest, rules, ws.roots, ws.read_for_verify, memo)
    ws.verify_store.put(f"problems {surface.name}", memo)
    ws.verify_store.save()
    if problems:
        raise VerifyError(*summarized(problems, plan.dest, rules.package))
    if verify_import:
        # imported only here: the import alone cost a one-line edit's sync 0.05 s
        from .verify_import import import_entries

        failures, warnings = import_entries(tree, plan.dest, surface.entry, surface.third_party, rules.first_party,
                                            rules.package if surface.rewrite_imports else None)
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
         wait: float = 30.0, foreign: str = "refuse") -> int:
    """Write each surface's closure, verified, through a temporary tree; print one line each.
    A hand-edited file is refused (exit 1, naming each) unless `force`, and a file bonsai-sync did
    not write is refused unless `foreign` is "keep" or "delete"; nothing is written then. A dry run
    lists what it would do and refuses exactly as the real run would."""
    from .swap import recover

    surfaces = ws.surfaces(names)
    with _locks(ws, surfaces, exclusive=not dry_run, wait=wait):
        if not dry_run:
            for surface in surfaces:
                _warn(recover(ws.root / surface.dest))
        states = [ws.state(surface) for surface in surfaces]
        if dry_run:
            for state in states:
                _report(state, force, foreign, dry=True)
        _refuse(states, force, foreign)
        if dry_run:
            return OK
        done: list[str] = []
        for surface, state in zip(surfaces, states, strict=True):
            try:
                if not state.fresh:
                    _write(ws, surface, verify_import, foreign)
                elif verify_import:
                    verify_output(ws, surface, ws.root / surface.dest, True)
            except (FatalError, OSError) as exc:
                if len(surfaces) == 1:
                    raise
                raise _stopped(ws.root, exc, done, [s.name for s in surfaces[len(done):]]) from exc
            done.append(surface.name)
            _report(state, force, foreign, dry=False)
    return OK


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        click.echo(f"bonsai-sync: warning: {warning}", err=True)


def _stopped(root: Path, exc: FatalError | OSError, done: list[str], left: list[str]) -> FatalError:
    """The error of a sync that stopped at surface `left[0]`: what went wrong, then which surfaces
    it synced (`done`, now fresh) and which it left as they were."""
    from .fsutil import shown

    if isinstance(exc, FatalError):
        lines = list(exc.diagnostics)
    else:
        where = shown(exc.filename, root) + ": " if exc.filename else ""
        lines = [f"{where}{exc.strerror or exc}"]
    lines.append(f"synced: {', '.join(done) or 'none'}; left as they were: {', '.join(left)} "
                 "(run `bonsai-sync sync` again once the cause is fixed)")
    error = FatalError(*lines)
    error.exit_code = exc.exit_code if isinstance(exc, FatalError) else 2
    return error


def _refuse(states: list[SurfaceState], force: bool, foreign: str) -> None:
    """Raise StaleSurfaceError naming each file sync must not touch as told: hand edits without
    `force`, files it did not write unless `foreign` says to keep (where the closure does not need
    the path) or delete them."""
    edits = [s for state in states for s in state.refused] if not force else []
    if edits:
        raise StaleSurfaceError(*(f"{s.path}: {s.reason}; not overwritten" for s in edits),
                                "move each change into the source (the only copy edited by hand), or run "
                                "`bonsai-sync sync --force` to discard it")
    strangers = [s for state in states for s in state.foreign
                 if foreign == "refuse" or (foreign == "keep" and s.source is not None)]
    if strangers:
        advice = ("move each file out of the dest (a dest holds only what bonsai-sync writes), or run `bonsai-sync "
                  "sync --delete-foreign` to delete them")
        if foreign == "refuse":
            advice += ", or `--keep-foreign` to keep the ones the closure does not need (recorded in bonsai-sync.lock)"
        raise StaleSurfaceError(*(f"{s.path}: {s.reason}; left as it is" for s in strangers), advice)


def _write(ws: Workspace, surface: Surface, verify_import: bool, foreign: str = "refuse") -> None:
    from .fsutil import remove_tree, walk_files
    from .ownership import carry, section
    from .swap import install
    from .write import created_parents, stage

    plan = ws.plan(surface)
    state = ws.state(surface)
    dest = ws.root / plan.dest
    strays = [s.path[len(plan.dest) + 1:] for s in state.foreign if s.source is None]
    kept = list(state.kept_foreign) + (strays if foreign == "keep" else [])
    lock_text = ws.lock_text(plan) + section(kept)
    created = created_parents(ws.root, dest)
    tree = None
    try:
        tree = stage(ws.root, plan, lock_text, state.kept)
        verify_output(ws, surface, tree, verify_import)
        carry(dest, tree, kept)
        warning = install(tree, dest)
        ws.wrote(dest, plan, lock_text)
        _warn([warning] if warning else [])
    except BaseException:
        if tree is not None:
            remove_tree(tree)
        if created is not None and created.exists() and next(walk_files(created), None) is None:
            remove_tree(created)
        raise


def _foreign_action(item: Stale, foreign: str) -> str:
    """What sync does with a file it did not write: refuse, keep it, or delete (overwrite) it."""
    if foreign == "delete":
        return "delete"
    return "keep" if foreign == "keep" and item.source is None else "refuse"


def _report(state: SurfaceState, force: bool, foreign: str, dry: bool) -> None:
    plan = state.plan
    for item in state.stale:
        action = "write" if item.action == "refuse" and force else item.action
        action = _foreign_action(item, foreign) if action == "foreign" else action
        if dry:
            click.echo(f"{item.path}: would {action} ({item.reason})")
        elif item.action == "foreign":
            click.echo(f"{item.path}: {_DONE[action]} (not written by bonsai-sync)")
    written = state.count("write") + (state.count("refuse") if force else 0)
    write, remove = ("would write", "would remove") if dry else ("wrote", "removed")
    actions = [_foreign_action(s, foreign) for s in state.foreign]
    refused = (0 if force else state.count("refuse")) + actions.count("refuse")
    refuse = f", would refuse {refused}" if dry and refused else ""
    strangers = "".join(f", {'would ' if dry else ''}{verb} {actions.count(verb)} not written by bonsai-sync"
                        for verb in ("keep", "delete") if verb in actions)
    click.echo(f"{plan.surface}: {plan.dest}: {write} {written}, {remove} {state.count('remove')}{refuse}{strangers}, "
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
