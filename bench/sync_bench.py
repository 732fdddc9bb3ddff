"""Benchmark bonsai-sync (cold sync, cold and warm check, a one-line edit) against libcst parsing and grimp.

Usage: python bench/sync_bench.py [--repeat N] [--trees repo,networkx,sympy] [--out PATH]

Runs on (1) this repository's runtime, (2) networkx and (3) sympy + mpmath, each copied from the
installed environment into a temporary source root (every module, via hidden-imports "pkg.**"); a
package that is not installed is skipped, nothing is downloaded. Every figure is a whole `python`
process, the best of N runs by wall clock, with its CPU (user+sys of the process and of the workers
it reaped; the machine may be shared) and, for a cold sync, the peak resident memory of the main
process and of its largest worker. bonsai_sync is byte-compiled first, as an installed package is.
grimp's `build_graph` and a bare libcst parse of the same files are timed in the same run, so the
ratios compare figures taken side by side. Prints a Markdown table and writes JSON (default
bench/results/sync_bench.json).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from results_file import write_results  # bench/, beside this script

REPO = Path(__file__).resolve().parent.parent
NX_CONFIG = """
[tool.bonsai-sync]
source = ["src"]

[tool.bonsai-sync.surfaces.all]
dest = "out/vendor"
entry = ["networkx"]
hidden-imports = ["networkx.**"]
# imports names that must not exist, inside `pytest.raises(ImportError)`
exclude = ["networkx.utils.tests.test__init"]
third-party = ["numpy", "scipy", "pandas", "matplotlib", "pygraphviz", "pydot", "lxml", "sympy", "pytest", "PIL"]
data = ["networkx/**/*.bz2", "networkx/**/*.gz", "networkx/**/*.A99", "networkx/**/*.B99", "networkx/**/*.png"]
"""
SYMPY_CONFIG = """
[tool.bonsai-sync]
source = ["src"]

[tool.bonsai-sync.surfaces.all]
dest = "out/vendor"
entry = ["sympy", "mpmath"]
hidden-imports = ["sympy.**", "mpmath.**"]
# these import names that must not exist, inside `raises(ImportError)`
exclude = ["sympy.core.tests.test_numbers", "sympy.utilities.tests.test_pickling"]
third-party = ["numpy", "scipy", "matplotlib", "pytest", "_pytest", "gmpy2", "gmpy", "IPython", "pyglet", "theano",
               "tensorflow", "symengine", "aesara", "jax", "llvmlite", "lfortran", "antlr4", "lark", "pycosat",
               "pysat", "python_flint", "flint", "clang", "cupy", "pymc", "pymc3", "torch", "sage", "numexpr",
               "Cython", "cython", "fastcache", "sphinx", "pyodide", "hypothesis", "PIL", "lxml", "matchpy",
               "mpl_toolkits", "multiset", "py", "pylab", "autolevparser", "all"]
data = ["sympy/utilities/mathml/data/*"]
"""
PARSE_ONLY = """
import sys, libcst
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as handle:
        libcst.parse_module(handle.read())
"""
GRIMP = """
import sys, grimp
sys.path.insert(0, sys.argv[1])
grimp.build_graph(*sys.argv[2:], cache_dir=None)
"""
# runs `python -m bonsai_sync ARGS` and writes its peak RSS and its largest reaped child's to a file
WITH_RSS = """
import json, resource, runpy, sys
out, sys.argv = sys.argv[1], ["bonsai_sync", *sys.argv[2:]]
code = 0
try:
    runpy.run_module("bonsai_sync", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as handle:
    json.dump({"main_mb": me.ru_maxrss / 1024, "worker_mb": kids.ru_maxrss / 1024}, handle)
sys.exit(code)
"""


def timed(args: list[str], expect: tuple[int, ...] = (0,)) -> dict[str, float]:
    """Wall seconds and CPU seconds (user+sys, reaped workers included) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in expect:
        raise SystemExit(f"{' '.join(args[:8])}... exited {proc.returncode}, expected {expect}:\n{proc.stderr[-3000:]}")
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def best(runs: list[dict[str, float]]) -> dict[str, float]:
    """The fastest run by wall clock (its CPU with it), and how many runs there were."""
    fastest = min(runs, key=lambda r: r["wall_s"])
    return {**fastest, "runs": len(runs), "wall_max_s": max(r["wall_s"] for r in runs)}


def sync_cli(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "bonsai_sync", "--root", str(root), *args]


class Tree:
    """One source tree in a temporary repo: `root` holds pyproject.toml, `src` the source root."""

    def __init__(self, name: str, root: Path, src: Path, packages: list[str], edit: str) -> None:
        self.name, self.root, self.src, self.packages = name, root, src, packages
        self.edit = root / edit  # the file a one-line edit changes (the top package's __init__.py)
        self.original = self.edit.read_text(encoding="utf-8")

    def clear(self, cache: bool = True, dests: bool = False) -> None:
        if cache:
            shutil.rmtree(self.root / ".bonsai-sync-cache", ignore_errors=True)
        if dests:
            for lock in list(self.root.rglob("bonsai-sync.lock")):
                shutil.rmtree(lock.parent)

    def edited(self, tag: str) -> None:
        self.edit.write_text(self.original + f"\n_bench_edit = {tag!r}\n", encoding="utf-8")

    def locked_sources(self) -> list[str]:
        found = set()
        for lock in self.root.rglob("bonsai-sync.lock"):
            found |= {e["source"] for e in tomllib.loads(lock.read_text(encoding="utf-8"))["file"]}
        return sorted(found)


def measure(tree: Tree, repeat: int) -> dict:
    """Every figure for one tree, each the best of `repeat` processes."""
    cold, memory = [], []
    for _ in range(repeat):
        tree.clear(cache=True, dests=True)
        rss = tree.root / "rss.json"
        cold.append(timed([sys.executable, "-c", WITH_RSS, str(rss), "--root", str(tree.root), "sync"]))
        memory.append(json.loads(rss.read_text()))
    files = tree.locked_sources()
    parsed = [str(tree.root / s) for s in files if s.endswith(".py")]
    cold_check = []
    for _ in range(repeat):
        tree.clear()
        cold_check.append(timed(sync_cli(tree.root, "--no-cache", "check")))
    timed(sync_cli(tree.root, "check"))  # warms the cache
    warm = [timed(sync_cli(tree.root, "check")) for _ in range(repeat)]
    # the first sync after an edit since the cache was wiped: the verifier reads every file again
    tree.edited("first")
    first_edit_sync = timed(sync_cli(tree.root, "sync"))
    edit_check, edit_sync, edit_cold = [], [], []
    for i in range(repeat):
        tree.edited(f"check {i}")
        edit_check.append(timed(sync_cli(tree.root, "check"), expect=(1,)))
        tree.edited(f"sync {i}")
        edit_sync.append(timed(sync_cli(tree.root, "sync")))
    for i in range(repeat):
        tree.clear()
        tree.edited(f"ci {i}")
        edit_cold.append(timed(sync_cli(tree.root, "--no-cache", "check"), expect=(1,)))
    tree.edit.write_text(tree.original, encoding="utf-8")
    parse = [timed([sys.executable, "-c", PARSE_ONLY, *parsed]) for _ in range(repeat)]
    grimp = [timed([sys.executable, "-c", GRIMP, str(tree.src), *tree.packages]) for _ in range(repeat)]
    result = {
        "tree": tree.name,
        "files": len(files),
        "modules": len(parsed),
        "cold_sync": {**best(cold), "main_peak_mb": max(m["main_mb"] for m in memory),
                      "worker_peak_mb": max(m["worker_mb"] for m in memory)},
        "cold_check_no_cache": best(cold_check),
        "cold_check_no_cache_after_edit": best(edit_cold),
        "warm_check": best(warm),
        "check_after_one_edit": best(edit_check),
        "sync_after_one_edit": best(edit_sync),
        "first_sync_after_one_edit_no_verify_cache": best([first_edit_sync]),
        "libcst_parse_only": best(parse),
        "grimp_build_graph": best(grimp),
    }
    result["cold_check_over_grimp"] = result["cold_check_no_cache"]["wall_s"] / result["grimp_build_graph"]["wall_s"]
    result["cold_sync_over_parse"] = result["cold_sync"]["wall_s"] / result["libcst_parse_only"]["wall_s"]
    result["cold_sync_over_parse_cpu"] = result["cold_sync"]["cpu_s"] / result["libcst_parse_only"]["cpu_s"]
    return result


def installed(package: str) -> Path | None:
    """The folder of an installed package, found without importing it; None when it is not installed."""
    spec = importlib.util.find_spec(package)
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def make_trees(tmp: Path, wanted: set[str]) -> list[Tree]:
    ignore = shutil.ignore_patterns("__pycache__")
    trees = []
    if "repo" in wanted:
        here = tmp / "this-repo"
        shutil.copytree(REPO / "runtime", here / "runtime", ignore=ignore)
        shutil.copy(REPO / "pyproject.toml", here / "pyproject.toml")
        trees.append(Tree("this repo (runtime/)", here, here / "runtime", ["bonsai"], "runtime/bonsai/__init__.py"))
    for key, packages, config in (("networkx", ["networkx"], NX_CONFIG), ("sympy", ["sympy", "mpmath"], SYMPY_CONFIG)):
        folders = [installed(p) for p in packages]
        if key not in wanted:
            continue
        if None in folders:
            print(f"skipped {key}: {', '.join(p for p, f in zip(packages, folders, strict=True) if f is None)} not installed")
            continue
        root = tmp / key
        for folder in folders:
            assert folder is not None
            shutil.copytree(folder, root / "src" / folder.name, ignore=ignore)
        (root / "pyproject.toml").write_text(config)
        version = importlib.metadata.version(packages[0])
        trees.append(Tree(f"{' + '.join(packages)} {version}", root, root / "src", packages, f"src/{packages[0]}/__init__.py"))
    return trees


ROWS = [
    ("cold sync (no cache, no dest)", "cold_sync"),
    ("cold check --no-cache (CI)", "cold_check_no_cache"),
    ("  the same after a 1-line edit", "cold_check_no_cache_after_edit"),
    ("warm check", "warm_check"),
    ("1-line edit: check", "check_after_one_edit"),
    ("1-line edit: sync", "sync_after_one_edit"),
    ("  the first one since the cache was wiped", "first_sync_after_one_edit_no_verify_cache"),
    ("libcst parse only (1 process)", "libcst_parse_only"),
    ("grimp.build_graph", "grimp_build_graph"),
]


def table(results: list[dict]) -> str:
    """The results as a Markdown table: wall seconds (CPU seconds) per tree."""
    head = "| measure (whole process, best of N) | " + " | ".join(f"{r['tree']} ({r['files']} files)" for r in results) + " |"
    lines = [head, "| --- |" + " ---: |" * len(results)]
    for label, key in ROWS:
        lines.append(f"| {label} | " + " | ".join(f"{r[key]['wall_s']:.2f} s ({r[key]['cpu_s']:.2f} cpu)" for r in results) + " |")
    lines.append("| cold sync peak RSS: main / largest worker | "
                 + " | ".join(f"{r['cold_sync']['main_peak_mb']:.0f} / {r['cold_sync']['worker_peak_mb']:.0f} MB" for r in results) + " |")
    lines.append("| cold check / grimp (wall) | " + " | ".join(f"{r['cold_check_over_grimp']:.2f}x" for r in results) + " |")
    lines.append("| cold sync / parse: wall (cpu) | "
                 + " | ".join(f"{r['cold_sync_over_parse']:.2f}x ({r['cold_sync_over_parse_cpu']:.2f}x)" for r in results) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="processes per figure (the fastest is reported)")
    parser.add_argument("--trees", default="repo,networkx,sympy", help="comma-separated: repo, networkx, sympy")
    parser.add_argument("--out", default=str(REPO / "bench/results/sync_bench.json"), help="where the JSON goes")
    args = parser.parse_args()
    import compileall

    import bonsai_sync  # only to say which one ran: every figure is a `python -m bonsai_sync` child

    # as installed: with PYTHONDONTWRITEBYTECODE set, every child would compile it again
    compileall.compile_dir(Path(bonsai_sync.__file__).parent, quiet=1)
    results: list[dict] = []
    meta = {"python": sys.version.split()[0], "machine": platform.machine(), "cpus": os.cpu_count(),
            "repeat": args.repeat, "bonsai_sync": str(Path(bonsai_sync.__file__).parent), "load_average": []}
    with tempfile.TemporaryDirectory(prefix="sync-bench-") as tmp:
        for tree in make_trees(Path(tmp), set(args.trees.split(","))):
            print(f"measuring {tree.name} ...", flush=True)
            results.append(measure(tree, args.repeat))
            # after each tree, so that a slow tree on a shared machine does not cost the others' figures
            meta["load_average"].append([tree.name, os.getloadavg()])
            print(table(results), flush=True)
            write_results(args.out, {"meta": meta, "results": results, "table": table(results)})


if __name__ == "__main__":
    main()
