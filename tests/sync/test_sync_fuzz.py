"""Issue 18.6, as a property: whatever broken tree the CLI is driven through, it answers with
an exit code and one-line messages, never a traceback."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bonsai_sync.cli import main

SCENARIO = Path(__file__).parent / "scenarios" / "verify"
LINE = re.compile(r"^(bonsai-sync: (error|warning): .+|\S+:\d+:\d+: .+|\S+: \S+: (stale|fresh).*|\S+: .+)$")


def _break(root: Path, what: str, blob: bytes) -> None:
    src = root / "src" / "app"
    if what == "bad toml":
        (root / "pyproject.toml").write_text("[tool.bonsai-sync\nsource = [")
    elif what == "unknown key":
        (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + "entri = 1\n")
    elif what == "bytes module":
        (src / "helper.py").write_bytes(blob)
    elif what == "non-utf8":
        (src / "helper.py").write_bytes(b"x = '\xff\xfe'\n")
    elif what == "syntax":
        (src / "helper.py").write_text("def f(:\n")
    elif what == "missing import":
        (src / "main.py").write_text("import app.nope\nfrom . import nothing\n")
    elif what == "loop link":
        os.symlink("loop", src / "loop")
    elif what == "cycle link":
        os.symlink("..", src / "up")
    elif what == "dangling link":
        os.symlink("nowhere", src / "gone.py")
    elif what == "dest parent is a file":
        (root / "out").write_text("file\n")
    elif what == "dest is a file":
        (root / "out").mkdir(exist_ok=True)
        (root / "out" / "vendor").write_text("file\n")
    elif what == "dest is a link":
        (root / "out").mkdir(exist_ok=True)
        os.symlink(str(root / "src"), root / "out" / "vendor")
    elif what == "garbage lock":
        (root / "out" / "vendor").mkdir(parents=True, exist_ok=True)
        (root / "out" / "vendor" / "bonsai-sync.lock").write_bytes(blob or b"[[[")
    elif what == "deep package":
        path = src
        for _ in range(40):
            path = path / "d"
            path.mkdir()
            (path / "__init__.py").write_text("")
        (src / "main.py").write_text("import app" + ".d" * 40 + "\n")
    elif what == "odd names":
        (src / "a-b.py").write_text("")
        (src / "x.y.py").write_text("")
        (src / "main.py").write_text("import importlib\nimportlib.import_module('app.a-b')\n")
    elif what == "hand edit":
        CliRunner().invoke(main, ["--root", str(root), "sync"])
        (root / "out" / "vendor" / "app" / "main.py").write_text("# edited\n")
    elif what == "removed source root":
        shutil.rmtree(root / "src")


BREAKS = ["bad toml", "unknown key", "bytes module", "non-utf8", "syntax", "missing import", "loop link",
          "cycle link", "dangling link", "dest parent is a file", "dest is a file", "dest is a link", "garbage lock",
          "deep package", "odd names", "hand edit", "removed source root"]


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(breaks=st.lists(st.sampled_from(BREAKS), min_size=1, max_size=3, unique=True), blob=st.binary(max_size=64))
def test_broken_trees_never_give_a_traceback(breaks, blob):
    folder = Path(tempfile.mkdtemp(prefix="bonsai-sync-fuzz-"))
    try:
        root = folder / "repo"
        shutil.copytree(SCENARIO, root)
        for what in breaks:
            try:
                _break(root, what, blob)
            except OSError:
                pass  # this break does not apply on top of the earlier ones

        for args in (["sync"], ["check"], ["sync", "--dry-run"], ["why", "app", "app.main"], ["graph", "app"]):
            result = CliRunner().invoke(main, ["--root", str(root), *args], catch_exceptions=False)
            assert result.exit_code in (0, 1, 2, 3), (breaks, args, result.output)
            assert "Traceback" not in result.output
            for line in result.stderr.splitlines():
                assert LINE.match(line), (breaks, args, line)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
