"""Issue 20: a cold run resolves from the facts the lock records and parses only changed or new
files. For random edits of generated trees the fast path and a full re-scan give the same verdict
and the same closure; a fast path that trusts a stale lock entry is caught by the same property."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import bonsai_sync.state.factsource
from bonsai_sync.cli import main
from bonsai_sync.pipeline import Workspace
from bonsai_sync.scan.factcodec import decode
from bonsai_sync.write.lock import read

CONFIG = """[tool.bonsai-sync]
source = ["src"]

[tool.bonsai-sync.surfaces.app]
dest = "out/vendor"
entry = ["app.main"]
"""
MODULES = ["m0", "m1", "m2", "m3"]
# names app/__init__.py binds; a module of the same name shadows one (`from app import helper`)
NAMES = ["helper", "value"]
HEAD = "import importlib\nimport sys\n"


def _lines(modules: list[str]) -> st.SearchStrategy[str]:
    """One statement importing (or binding) something, in one of the ways the scanner reads."""
    target = st.sampled_from(modules)
    name = st.sampled_from(NAMES)
    return st.one_of(
        target.map(lambda m: f"import app.{m}"),
        target.map(lambda m: f"from app import {m}"),
        target.map(lambda m: f"from . import {m}"),
        st.tuples(target, name).map(lambda t: f"from app.{t[0]} import {t[1]}"),
        name.map(lambda n: f"from app import {n}"),
        name.map(lambda n: f"{n} = 1"),
        target.map(lambda m: f"importlib.import_module('app.{m}')"),
        target.map(lambda m: f"def load():\n    import app.{m}"),
        target.map(lambda m: f"try:\n    import app.{m}\nexcept ImportError:\n    pass"),
        target.map(lambda m: f"if sys.version_info >= (3, 99):\n    import app.{m}"),
        st.just("import json"),
    )


def _body(lines: list[str]) -> str:
    return HEAD + "".join(line + "\n" for line in lines) + "".join(f"{n} = 0\n" for n in NAMES)


@st.composite
def trees(draw) -> dict[str, str]:
    """A package `app` whose modules import only modules that exist (so its first sync succeeds)."""
    present = draw(st.lists(st.sampled_from(MODULES), min_size=1, max_size=4, unique=True))
    files = {f"src/app/{m}.py": _body(draw(st.lists(_lines(present), max_size=4))) for m in present}
    files["src/app/__init__.py"] = _body(draw(st.lists(_lines(present), max_size=2)))
    files["src/app/main.py"] = _body(draw(st.lists(_lines(present), min_size=1, max_size=4)))
    return files


EDITS = st.one_of(
    st.tuples(st.just("shadow"), st.sampled_from(NAMES), st.lists(_lines(MODULES), max_size=3)),
    st.tuples(st.just("rewrite"), st.sampled_from([*MODULES, "main", "__init__"]), st.lists(_lines(MODULES), max_size=4)),
    st.tuples(st.just("dynamic"), st.sampled_from([*MODULES, "main"]), st.sampled_from([*MODULES, *NAMES])),
    st.tuples(st.just("delete"), st.sampled_from([*MODULES, *NAMES]), st.just(None)),
    st.tuples(st.just("add"), st.sampled_from(MODULES), st.lists(_lines(MODULES), max_size=3)),
)


def _edit(root: Path, edit: tuple) -> None:
    what, module, arg = edit
    path = root / "src" / "app" / f"{module}.py"
    if what in ("shadow", "rewrite", "add"):
        path.write_text(_body(arg))
    elif what == "dynamic" and path.exists():
        path.write_text(path.read_text() + f"importlib.import_module('app.{arg}')\n")
    elif what == "delete" and path.exists():
        path.unlink()


def _closure(root: Path, rescan: bool, use_cache: bool = False):
    ws = Workspace(root, use_cache=use_cache, rescan=rescan)
    found = ws.closure(ws.config.surface("app"))
    nodes = sorted((n, dict(d)) for n, d in found.graph.nodes(data=True))
    edges = sorted(((a, b), d) for a, b, d in found.graph.edges(data=True))
    return ws, found, nodes, edges


def _check(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--root", str(root), *args, "check"], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _same_verdict_and_closure(files: dict[str, str], edits: list[tuple]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bonsai-sync-fast-"))
    try:
        root = folder / "repo"
        for rel, text in {**files, "pyproject.toml": CONFIG}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        synced = CliRunner().invoke(main, ["--root", str(root), "sync"], catch_exceptions=False)
        assert synced.exit_code == 0, synced.output
        for edit in edits:
            _edit(root, edit)
        _, full_found, full_nodes, full_edges = _closure(root, rescan=True)
        _, cached_found, cached_nodes, cached_edges = _closure(root, rescan=False, use_cache=True)
        fast, fast_found, fast_nodes, fast_edges = _closure(root, rescan=False)
        assert fast_found.errors == cached_found.errors == full_found.errors
        assert fast_nodes == cached_nodes == full_nodes
        assert fast_edges == cached_edges == full_edges
        assert _check(root, "--no-cache") == _check(root) == _check(root, "--rescan")
        # and the fast path parsed exactly the files whose bytes the lock does not record
        target = fast.config.surface("app").python
        scanned = [d["path"] for _, d in fast_nodes if "facts" in d]
        unrecorded = {p for p in scanned if fast.facts.key(p, target) not in fast.facts.recorded}
        assert sum(fast.facts.parser.parsed.values()) == len(unrecorded)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


PROPERTY = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=60, derandomize=True, **PROPERTY)
@given(files=trees(), edits=st.lists(EDITS, min_size=1, max_size=3))
def test_the_fast_path_and_a_full_rescan_agree(files, edits):
    _same_verdict_and_closure(files, edits)


def _trust_the_lock_by_path(monkeypatch) -> None:
    """Inject the bug the content keys prevent: answer a file from its lock entry even when its bytes changed."""
    real = bonsai_sync.state.factsource.FactSource.facts_of

    def facts_of(self, path, target):
        if not self.rescan:
            rel = path.relative_to(self.root).as_posix()
            for dest in self.dests:
                for entry in (read(dest) or {}).values():
                    if entry.source == rel and entry.scan:
                        return decode(entry.scan)
        return real(self, path, target)

    monkeypatch.setattr(bonsai_sync.state.factsource.FactSource, "facts_of", facts_of)


def test_a_fast_path_trusting_a_stale_lock_entry_is_caught(monkeypatch):
    _trust_the_lock_by_path(monkeypatch)
    search = settings(max_examples=60, derandomize=True, phases=[Phase.generate], **PROPERTY)(
        given(files=trees(), edits=st.lists(EDITS, min_size=1, max_size=3))(_same_verdict_and_closure))
    with pytest.raises(AssertionError):
        search()


def test_a_cold_check_after_an_edit_parses_only_the_edited_file(make_repo, monkeypatch):
    import bonsai_sync.scan

    repo = make_repo({"src/app/main.py": "from . import a, b\n", "src/app/a.py": "x = 1\n", "src/app/b.py": "import app.a\n"})
    assert repo.run("--no-cache", "sync").exit_code == 0
    parsed = []
    real = bonsai_sync.scan.scan
    monkeypatch.setattr(bonsai_sync.scan, "scan", lambda text, *a: parsed.append(text) or real(text, *a))
    assert repo.run("--no-cache", "check").exit_code == 0
    assert parsed == []
    repo.write("src/app/b.py", "import app.a\nimport json\n")
    result = repo.run("--no-cache", "check")
    assert (result.exit_code, result.stdout) == (1, "out/vendor/app/b.py: changed upstream\n")
    assert parsed == ["import app.a\nimport json\n"]
