"""`check --staged`: check the commit being made (git's index), as a fresh clone of it would be."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import click

from .errors import UsageError


def _git(root: Path, *args: str, data: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=root, input=data, capture_output=True, timeout=120)
    except FileNotFoundError:
        raise UsageError("check --staged needs git, and git is not installed") from None
    if done.returncode != 0:
        raise UsageError(f"check --staged needs a git repository: git {args[0]} failed: "
                         f"{done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def check_staged(root: Path, names: tuple[str, ...], fmt: str, wait: float) -> int:
    """Export the index's pyproject.toml, source roots and surfaces into a temporary tree and check
    it there; a file stale in the commit but fresh in the working tree is named as not staged."""
    from . import commands
    from .config.settings import load
    from .pipeline import Workspace

    root = root.resolve()
    prefix = _git(root, "rev-parse", "--show-prefix").decode().strip()
    config = load(root)
    paths = ["pyproject.toml", *config.source, *(s.dest for s in config.surfaces)]
    listed = _git(root, "ls-files", "-z", "--", *paths)
    with tempfile.TemporaryDirectory(prefix="bonsai-sync-staged-") as folder:
        top = Path(folder)
        if listed:
            _git(root, "checkout-index", "-z", "--stdin", f"--prefix={folder}/", data=listed)
        staged_root = top / prefix
        if not (staged_root / "pyproject.toml").is_file():  # not committed yet: the working tree's config
            staged_root.mkdir(parents=True, exist_ok=True)
            (staged_root / "pyproject.toml").write_text(config.text, encoding="utf-8")
        for source in config.source:
            (staged_root / source).mkdir(parents=True, exist_ok=True)
        ws = Workspace(staged_root, cache_root=root)
        code = commands.check(ws, names, False, fmt, wait) if fmt == "json" else _check_text(ws, root, names)
    return code


def _check_text(ws, root: Path, names: tuple[str, ...]) -> int:
    from .pipeline import Workspace

    here = Workspace(root)
    stale = 0
    for surface in ws.surfaces(names):
        state = ws.state(surface)
        fine_here = {s.path for s in here.state(surface).stale} if state.stale else set()
        for item in state.stale:
            if item.path not in fine_here and (root / item.path).exists():
                click.echo(f"{item.path}: {item.reason} in the commit: synced in the working tree but not "
                           f"staged; `git add {item.path}`")
            elif item.path not in fine_here:
                click.echo(f"{item.path}: {item.reason} in the commit: `git rm --cached {item.path}`")
            else:
                click.echo(f"{item.path}: {item.reason}")
        stale += len(state.stale)
        summary = f"stale in the commit ({len(state.stale)} file(s))" if state.stale else "fresh in the commit"
        click.echo(f"{surface.name}: {surface.dest}: {summary}", err=bool(state.stale))
    return 1 if stale else 0
