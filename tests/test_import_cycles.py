"""No import cycles among the runtime's or bonsai-sync's modules (grimp's graph, `if TYPE_CHECKING:` imports included)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Run in a child process: grimp imports nothing, but the package must be found on sys.path by name, and a
# copy under tmp_path must not meet the `bonsai` this process has already imported.
_FIND = """
import sys
import grimp

graph = grimp.build_graph(sys.argv[1], cache_dir=None)
modules = sorted(graph.modules)
index = {m: i for i, m in enumerate(modules)}
edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules}

# Tarjan's strongly connected components, iterative (package trees may be deep).
low, num, on, stack, out, counter = {}, {}, set(), [], [], [0]
for root in modules:
    if root in num:
        continue
    work = [(root, iter(edges[root]))]
    num[root] = low[root] = counter[0]; counter[0] += 1; stack.append(root); on.add(root)
    while work:
        node, it = work[-1]
        nxt = next(it, None)
        if nxt is not None:
            if nxt not in num:
                num[nxt] = low[nxt] = counter[0]; counter[0] += 1; stack.append(nxt); on.add(nxt)
                work.append((nxt, iter(edges[nxt])))
            elif nxt in on:
                low[node] = min(low[node], num[nxt])
            continue
        work.pop()
        if work:
            low[work[-1][0]] = min(low[work[-1][0]], low[node])
        if low[node] == num[node]:
            comp = []
            while True:
                m = stack.pop(); on.discard(m); comp.append(m)
                if m == node:
                    break
            if len(comp) > 1 or node in edges[node]:
                out.append(" <-> ".join(sorted(comp)))
print("\\n".join(out))
"""


def import_cycles(package: str, root: Path) -> list[str]:
    """Each import cycle among `package`'s modules (found under `root`), as its modules joined by ' <-> '."""
    result = subprocess.run([sys.executable, "-c", _FIND, package], cwd=root, capture_output=True, text=True,
                            env={"PYTHONPATH": str(root), "PATH": ""}, timeout=300)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line]


def test_the_runtime_has_no_import_cycle():
    assert import_cycles("bonsai", REPO / "runtime") == []


def test_bonsai_sync_has_no_import_cycle():
    assert import_cycles("bonsai_sync", REPO / "sync") == []


def test_a_cycle_in_bonsai_sync_is_caught(tmp_path):
    """Mutation: the freshness step importing the workspace that composes it (a circle once broken) is reported."""
    copy = tmp_path / "sync"
    shutil.copytree(REPO / "sync" / "bonsai_sync", copy / "bonsai_sync", ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "bonsai_sync" / "state" / "freshness.py"
    target.write_text(target.read_text() + "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from ..pipeline import Workspace  # noqa\n")
    found = import_cycles("bonsai_sync", copy)
    assert any("bonsai_sync.pipeline" in c and "bonsai_sync.state.freshness" in c for c in found), found


@pytest.mark.parametrize("module,line,cycle", [
    ("kv/layout.py", "from . import cache  # noqa\n", "bonsai.kv.cache"),
    ("engine/resident.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .engine import Engine\n",
     "bonsai.engine.engine <-> bonsai.engine.resident"),
])
def test_a_cycle_is_caught(tmp_path, module, line, cycle):
    """Mutation: one import that closes a circle in a copy of the runtime is reported, naming its modules."""
    copy = tmp_path / "runtime"
    shutil.copytree(REPO / "runtime" / "bonsai", copy / "bonsai", ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "bonsai" / module
    target.write_text(target.read_text() + "\n" + line)
    found = import_cycles("bonsai", copy)
    assert any(cycle in c and module.replace("/", ".").removesuffix(".py") in c for c in found), found
