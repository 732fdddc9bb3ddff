"""The commands as plain functions: typed arguments in, exit code out (the CLI only parses)."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import click

from .errors import VerifyError
from .pipeline import Workspace
from .plan import Plan

OK, STALE = 0, 1


def verify_output(ws: Workspace, plan: Plan, tree: Path, verify_import: bool) -> None:
    """Raise VerifyError unless the tree at `tree` satisfies every import it makes."""
    from .verify import first_party_names, verify_tree

    surface = ws.config.surface(plan.surface)
    first_party = first_party_names(ws.roots)
    problems = verify_tree(tree, plan.dest, first_party, set(surface.third_party), ws.roots)
    if problems:
        raise VerifyError(*problems)
    if verify_import:
        from .verify_import import import_entries

        failures = import_entries(tree, plan.dest, surface.entry, surface.third_party, first_party)
        if failures:
            raise VerifyError(*failures)


def sync(ws: Workspace, names: tuple[str, ...], dry_run: bool, verify_import: bool) -> int:
    """Write each surface's closure, verified, through a temporary tree; print one line each."""
    from .digest import digest_tree
    from .write import count, write

    for surface in ws.surfaces(names):
        plan = ws.plan(surface)
        dest = ws.root / plan.dest
        counts = count(plan, digest_tree(str(dest), frozenset({"bonsai-sync.lock"})))
        lock_text = ws.lock_text(plan)
        lock_path = dest / "bonsai-sync.lock"
        fresh = counts.written == 0 and counts.removed == 0 and lock_path.is_file() and lock_path.read_text() == lock_text
        verb = "would write" if dry_run else "wrote"
        if not fresh and not dry_run:
            write(ws.root, plan, lock_text, partial(verify_output, ws, plan, verify_import=verify_import))
        elif fresh and verify_import and not dry_run:
            verify_output(ws, plan, dest, True)
        click.echo(
            f"{surface.name}: {plan.dest}: {verb} {counts.written}, "
            f"{'would remove' if dry_run else 'removed'} {counts.removed}, unchanged {counts.unchanged}"
        )
    return OK


def check(ws: Workspace, names: tuple[str, ...], show_diff: bool, fmt: str) -> int:
    """Exit 0 when every surface is exactly what `sync` would write, else 1 naming each file."""
    from .check import diff, stale_files

    report = {}
    for surface in ws.surfaces(names):
        plan = ws.plan(surface)
        report[surface.name] = (plan, stale_files(ws.root, plan, ws.lock_text(plan)))
    if fmt == "json":
        import json

        body = {
            name: {"dest": plan.dest, "fresh": not items, "stale": [{"path": s.path, "reason": s.reason} for s in items]}
            for name, (plan, items) in report.items()
        }
        click.echo(json.dumps({"fresh": all(not items for _, items in report.values()), "surfaces": body}, indent=2))
    else:
        for name, (plan, items) in report.items():
            for item in items:
                click.echo(f"{item.path}: {item.reason}")
                if show_diff and item.source:
                    click.echo(diff(ws.root, item), nl=False)
            state = f"stale ({len(items)} file(s)); run `bonsai-sync sync`" if items else "fresh"
            click.echo(f"{name}: {plan.dest}: {state}", err=bool(items))
    return STALE if any(items for _, items in report.values()) else OK


def why(ws: Workspace, name: str, target: str) -> int:
    """Print the shortest import chain from an entry of surface `name` to `target`."""
    from .render import shortest_chain

    surface = ws.config.surface(name)
    closure = ws.graph(surface, strict=False)
    for line in shortest_chain(closure, surface, target, ws.root):
        click.echo(line)
    return _report_errors(closure)


def _report_errors(closure) -> int:
    """Print the closure's errors (why/graph still show a broken closure) and pick the exit code."""
    for error in closure.graph.get("errors", []):
        click.echo(str(error), err=True)
    return 3 if closure.graph.get("errors") else OK


def graph(ws: Workspace, name: str, fmt: str) -> int:
    """Print the closure graph of surface `name` as JSON or Graphviz dot."""
    from .render import to_dot, to_json

    surface = ws.config.surface(name)
    g = ws.graph(surface, strict=False)
    sys.stdout.write(to_dot(g) if fmt == "dot" else to_json(g, surface))
    return _report_errors(g)
