"""`--verify-import`: import each entry in `python -I -S` with only the copy and its allowed
third-party distributions on sys.path, and report anything that fails or loads from elsewhere."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

_PROBE = r"""
import importlib, json, os, sys
args = json.loads(sys.argv[1])
package = args["package"]
sys.path[:] = ([] if package else [args["tree"]]) + [args["third_party"]] + [p for p in sys.path if p and "-packages" not in p]
tree = os.path.realpath(args["tree"])
entries = args["entries"]
if package:  # the copy is `package` (rewrite-imports): stand-ins for the packages above it, the copy inside
    import types
    parts = package.split(".")
    for i in range(1, len(parts) + 1):
        stand_in = types.ModuleType(".".join(parts[:i]))
        stand_in.__path__ = [args["tree"]] if i == len(parts) else []
        sys.modules[stand_in.__name__] = stand_in
        if i > 1:
            setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], stand_in)
    entries = [f"{package}.{entry}" for entry in entries]
failures = []
for entry in entries:
    try:
        importlib.import_module(entry)
    except BaseException as exc:
        missing = isinstance(exc, ImportError) and (exc.name or "").split(".")[0] in args["missing"]
        failures.append((f"importing {entry!r} failed: {type(exc).__name__}: {exc}", missing))
for name, module in sorted(sys.modules.items()):
    file = getattr(module, "__file__", None)
    if name.split(".")[0] in args["first_party"] and file and not os.path.realpath(file).startswith(tree + os.sep):
        failures.append((f"{name!r} was loaded from outside the copy: {file}", False))
print(json.dumps(failures))
"""


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    names = []
    for requirement in dist.requires or []:
        if "extra ==" in requirement:
            continue
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        if match:
            names.append(match.group(1))
    return names


def _distribution_files(import_names: tuple[str, ...]) -> tuple[set[Path], list[str]]:
    """Top-level paths installed by the distributions providing `import_names`, and their
    requirements, recursively; plus the names no installed distribution provides."""
    providers = metadata.packages_distributions()
    queue = [d for name in import_names for d in providers.get(name, [])]
    missing = [name for name in import_names if name not in providers]
    seen: set[str] = set()
    paths: set[Path] = set()
    while queue:
        name = queue.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for file in dist.files or []:
            top = file.parts[0]
            if top != ".." and not top.endswith((".dist-info", ".pth")) and top != "__pycache__":
                paths.add(Path(str(dist.locate_file(top))))
        queue.extend(_requirement_names(dist))
    return paths, missing


def import_entries(tree: Path, shown: str, entries: tuple[str, ...], third_party: tuple[str, ...],
                   first_party: set[str], package: str | None = None) -> tuple[list[str], list[str]]:
    """(failures, warnings) of importing every entry from `tree` in isolation (as `package.entry`,
    with `tree` standing for `package`, when the copy's imports were rewritten below it). A declared
    third-party name that is not installed is a warning, and so is an import failing on it."""
    paths, missing = _distribution_files(third_party)
    warnings = [f"{shown}: third-party not installed, so not part of the import check: {', '.join(sorted(missing))}"] if missing else []
    with tempfile.TemporaryDirectory(prefix="bonsai-sync-tp-") as folder:
        for path in paths:
            link = Path(folder, path.name)
            if path.exists() and not link.exists():
                link.symlink_to(path)
        args = {"tree": str(tree), "third_party": folder, "entries": list(entries),
                "first_party": sorted(set(first_party) - set(third_party)), "missing": sorted(missing),
                "package": package}
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-B", "-c", _PROBE, json.dumps(args)], capture_output=True, text=True, timeout=300
        )
    if proc.returncode != 0:
        return [f"{shown}: the import check crashed: {proc.stderr.strip()[-500:]}"], warnings
    failures: list[str] = []
    for message, skipped in json.loads(proc.stdout.strip().splitlines()[-1]):
        (warnings if skipped else failures).append(f"{shown}: {message}")
    return failures, warnings
