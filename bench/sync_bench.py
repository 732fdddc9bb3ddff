"""Benchmark bonsai-sync (cold sync, warm check, check after one edit) against libcst parsing and grimp.

Usage: python bench/sync_bench.py [--repeat N]

Runs on (1) this repository's runtime and (2) networkx copied into a temporary source root
(every module, via hidden-imports "networkx.**"). Every figure is a whole `python` process,
timed by wall clock and by CPU (user+sys of the child; the machine may be shared). Prints a
table and writes bench/results/sync_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NX_CONFIG = """
[tool.bonsai-sync]
source = ["src"]

[tool.bonsai-sync.surfaces.all]
dest = "out/vendor"
entry = ["networkx"]
hidden-imports = ["networkx.**"]
third-party = ["numpy", "scipy", "pandas", "matplotlib", "pygraphviz", "pydot", "lxml", "sympy", "pytest", "PIL"]
data = ["networkx/**/*.bz2", "networkx/**/*.gz", "networkx/**/*.A99", "networkx/**/*.B99", "networkx/**/*.png"]
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
grimp.build_graph(sys.argv[2], cache_dir=None)
"""


def timed(args: list[str], expect: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in expect:
        raise SystemExit(f"{' '.join(args[:6])}... exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(runs: list[tuple[float, float]]) -> dict[str, float]:
    return {
        "wall_s": min(r[0] for r in runs),
        "wall_median_s": statistics.median(r[0] for r in runs),
        "cpu_s": min(r[1] for r in runs),
    }


def sync_cli(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "bonsai_sync", "--root", str(root), *args]


def measure(name: str, root: Path, package: str, src: Path, repeat: int) -> dict:
    """Every figure for one source tree; `root` holds pyproject.toml, `src` the source root."""
    shutil.rmtree(root / ".bonsai-sync-cache", ignore_errors=True)
    cold = timed(sync_cli(root, "sync"))
    lock_files = []
    for lock in root.rglob("bonsai-sync.lock"):
        import tomllib

        lock_files += [e["source"] for e in tomllib.loads(lock.read_text())["file"]]
    parsed = sorted({str(root / s) for s in lock_files if s.endswith(".py")})
    warm = [timed(sync_cli(root, "check")) for _ in range(repeat)]
    victim = next(p for p in parsed if p.endswith("__init__.py"))
    original = Path(victim).read_text()
    changed = []
    for i in range(repeat):
        Path(victim).write_text(original + f"\n# edit {i}\n")
        changed.append(timed(sync_cli(root, "check"), expect=(1,)))
    Path(victim).write_text(original)
    parse = [timed([sys.executable, "-c", PARSE_ONLY, *parsed]) for _ in range(max(1, repeat // 3))]
    grimp = [timed([sys.executable, "-c", GRIMP, str(src), package]) for _ in range(max(1, repeat // 3))]
    result = {
        "tree": name,
        "modules": len(parsed),
        "cold_sync": best([cold]),
        "warm_check": best(warm),
        "check_after_one_edit": best(changed),
        "libcst_parse_only": best(parse),
        "grimp_build_graph": best(grimp),
    }
    result["cold_sync_over_parse"] = result["cold_sync"]["wall_s"] / result["libcst_parse_only"]["wall_s"]
    result["cold_sync_over_parse_cpu"] = result["cold_sync"]["cpu_s"] / result["libcst_parse_only"]["cpu_s"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per warm measurement (best is reported)")
    args = parser.parse_args()
    import networkx

    results = []
    with tempfile.TemporaryDirectory(prefix="sync-bench-") as tmp:
        here = Path(tmp, "this-repo")
        shutil.copytree(REPO / "runtime", here / "runtime", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(REPO / "pyproject.toml", here / "pyproject.toml")
        results.append(measure("this repo (runtime/)", here, "bonsai", here / "runtime", args.repeat))
        nx_root = Path(tmp, "networkx")
        shutil.copytree(Path(networkx.__file__).parent, nx_root / "src/networkx", ignore=shutil.ignore_patterns("__pycache__"))
        (nx_root / "pyproject.toml").write_text(NX_CONFIG)
        results.append(measure(f"networkx {networkx.__version__}", nx_root, "networkx", nx_root / "src", args.repeat))
    print_table(results)
    out = REPO / "bench/results/sync_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"python": sys.version.split()[0], "machine": platform.machine(), "cpus": os.cpu_count(), "repeat": args.repeat}
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(REPO)}")


def print_table(results: list[dict]) -> None:
    rows = [
        ("cold sync", "cold_sync"),
        ("warm check", "warm_check"),
        ("check after 1 edit", "check_after_one_edit"),
        ("libcst parse only", "libcst_parse_only"),
        ("grimp.build_graph", "grimp_build_graph"),
    ]
    header = f"{'measure (whole process)':<26}" + "".join(f"{r['tree'] + ' [' + str(r['modules']) + ' mod]':>40}" for r in results)
    print(header)
    print("-" * len(header))
    for label, key in rows:
        cells = "".join(f"{r[key]['wall_s']:>16.3f} s wall {r[key]['cpu_s']:>10.3f} s cpu" for r in results)
        print(f"{label:<26}{cells}")
    ratio = "".join(f"{r['cold_sync_over_parse']:>21.2f}x wall {r['cold_sync_over_parse_cpu']:>11.2f}x cpu" for r in results)
    print(f"{'cold sync / parse':<26}{ratio}")


if __name__ == "__main__":
    main()
