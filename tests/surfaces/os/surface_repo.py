"""A throwaway copy of this repository holding only the runtime and the os/tenant surfaces, synced.

Bundle tests build from it so they never touch the real tree: `make_repo(dir)` copies runtime/
and the surfaces' hand-written parts, writes a pyproject.toml with the real `[tool.bonsai-sync]`
table (source, third-party, data) and the entry modules the hand-written apps import, then runs
`bonsai-sync sync` as a real subprocess.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import tomli_w

REPO = Path(__file__).resolve().parents[3]
SURFACES = ("os", "tenant")
# The runtime modules surfaces/{os,tenant}/src import (bonsai_sync.bundle.deps.check_app_imports enforces it).
APP_ENTRIES = ["bonsai.errors", "bonsai.models", "bonsai.engine", "bonsai.engine.native", "bonsai.tokenizer.chat_template",
               "bonsai.toolcall", "bonsai.toolcall.parser", "bonsai.toolcall.events", "bonsai.toolcall.prompt", "bonsai.toolcall.loop", "bonsai.toolcall.engine_generate",
               "bonsai.toolcall.constrain", "bonsai.toolcall.trie"]
EXTRA_ENTRIES = {"tenant": ["bonsai.models_pull"]}  # bonsai-tenant pull-model
_IGNORE = shutil.ignore_patterns("__pycache__", "vendor", "_vendor", "*.egg-info", "build", "dist", ".cache")


def make_repo(root: Path) -> Path:
    """Create and sync the scenario repository at `root`; returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "runtime", root / "runtime", ignore=_IGNORE)
    for name in SURFACES:
        shutil.copytree(REPO / "surfaces" / name, root / "surfaces" / name, ignore=_IGNORE)
    table = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["bonsai-sync"]
    table["surfaces"] = {name: {**table["surfaces"][name], "entry": APP_ENTRIES + EXTRA_ENTRIES.get(name, [])}
                         for name in SURFACES}
    (root / "pyproject.toml").write_text(tomli_w.dumps({"tool": {"bonsai-sync": table}}))
    sync(root)
    return root


def sync(root: Path) -> None:
    """`bonsai-sync --root ROOT sync` in a subprocess; raises with its output on failure."""
    done = subprocess.run([sys.executable, "-m", "bonsai_sync", "--root", str(root), "--no-cache", "sync"],
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"bonsai-sync sync failed ({done.returncode}):\n{done.stdout}{done.stderr}")


def config(root: Path):
    """The sync tool's Config for the scenario repository."""
    from bonsai_sync.config.settings import load

    return load(root)
