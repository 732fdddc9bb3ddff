"""Issue 18.11: a distribution installed into a source root ships its METADATA (so
importlib.metadata.version() works in the copy) and its license files; stubs and py.typed of
copied packages come along."""

from __future__ import annotations

import subprocess
import sys
import tomllib

DIST = "fakepkg-1.2.3.dist-info"
FILES = {
    "src/app/main.py": "import fakepkg\n",
    "src/fakepkg/__init__.py": "from .core import run\n",
    "src/fakepkg/core.py": "def run():\n    return 1\n",
    "src/fakepkg/core.pyi": "def run() -> int: ...\n",
    "src/fakepkg/py.typed": "",
    "src/fakepkg/unused.py": "",
    f"src/{DIST}/METADATA": "Metadata-Version: 2.4\nName: fakepkg\nVersion: 1.2.3\nLicense-File: LICENSE\n",
    f"src/{DIST}/licenses/LICENSE": "Permission is hereby granted...\n",
    f"src/{DIST}/RECORD": "fakepkg/__init__.py,,\nfakepkg/core.py,,\nfakepkg-1.2.3.dist-info/METADATA,,\n",
    f"src/{DIST}/INSTALLER": "pip\n",
}
VERSION = "import sys; sys.path[:0] = [sys.argv[1]]; import importlib.metadata as m; print(m.version('fakepkg'))"


def test_metadata_and_licenses_of_a_vendored_distribution_are_copied_and_locked(make_repo):
    repo = make_repo(FILES)
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")
    assert repo.listing("out/vendor") == [
        "app/__init__.py", "app/main.py", "bonsai-sync.lock",
        f"{DIST}/METADATA", f"{DIST}/licenses/LICENSE",
        "fakepkg/__init__.py", "fakepkg/core.py", "fakepkg/core.pyi", "fakepkg/py.typed",
    ]
    dest = repo.root / "out/vendor"
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", VERSION, str(dest)], capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, "1.2.3\n"), proc.stderr
    kinds = {e["path"]: e["kind"] for e in tomllib.loads(repo.read("out/vendor/bonsai-sync.lock"))["file"]}
    assert (kinds[f"{DIST}/METADATA"], kinds[f"{DIST}/licenses/LICENSE"], kinds["fakepkg/core.pyi"]) == (
        "metadata", "license", "stub")
    why = repo.run("why", "app", f"src/{DIST}/licenses/LICENSE").stdout
    assert why.splitlines()[-1] == f"{DIST}/licenses/LICENSE: its distribution's license file"
    repo.write(f"out/vendor/{DIST}/licenses/LICENSE", "changed\n")
    checked = repo.run("check")
    assert (checked.exit_code, checked.stdout) == (
        1, f"out/vendor/{DIST}/licenses/LICENSE: edited by hand in the surface (differs from bonsai-sync.lock)\n")


def test_stubs_can_be_left_out(make_repo):
    repo = make_repo(FILES, "stubs = false\n")
    assert repo.run("sync").exit_code == 0
    assert "fakepkg/core.pyi" not in repo.listing("out/vendor") and "fakepkg/py.typed" not in repo.listing("out/vendor")
