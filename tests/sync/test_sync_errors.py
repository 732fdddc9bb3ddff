"""Closure errors (exit 3) and configuration errors (exit 2) name the file, line and column."""

from __future__ import annotations

import pytest

UNRESOLVED = (
    "src/app/main.py:3:1: no module named 'app.nope' in the source roots; fix the import, or wrap it in "
    "try/except ImportError if it is optional\n"
    "src/app/main.py:5:1: relative import beyond the top-level package 'app'\n"
    "src/app/main.py:6:1: cannot import 'requests': not first-party, not stdlib, and not in `third-party` of "
    "[tool.bonsai-sync.surfaces.app]; declare it there or fix the import\n"
    "src/app/main.py:10:5: cannot import 'yaml': not first-party, not stdlib, and not in `third-party` of "
    "[tool.bonsai-sync.surfaces.app]; declare it there or fix the import\n"
)
HIDDEN = ("declare its targets in `hidden-imports` of surface 'app' (a \"path.py:LINE\" = [...] entry answers this "
          "site alone; [] when it needs nothing copied)")
PLUGINS = "(its targets start with 'app.plugins.')"
DYNAMIC = (
    f"src/app/main.py:10:5: cannot follow import_module() of a non-literal name; {HIDDEN}\n"
    f"src/app/main.py:11:5: cannot follow import_module() of a non-literal name {PLUGINS}; {HIDDEN}\n"
    f"src/app/main.py:13:17: cannot follow pkgutil.iter_modules() plugin loop {PLUGINS}; {HIDDEN}\n"
    f"src/app/main.py:14:9: cannot follow __import__() of a non-literal name; {HIDDEN}\n"
)
RESOURCES = (
    "src/app/main.py:6:11: resource src/app/missing.wgsl does not exist\n"
    "src/app/main.py:7:11: resource '../../secret.txt' escapes the source root src\n"
    "src/app/main.py:8:11: resource path is not a literal; declare the files in this surface's `data` globs\n"
)


@pytest.mark.parametrize(
    ("name", "expected"), [("unresolved", UNRESOLVED), ("dynamic", DYNAMIC), ("resources", RESOURCES)]
)
def test_closure_errors_name_file_line_col_and_write_nothing(scenario, name, expected):
    repo = scenario(name)
    result = repo.run("sync")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "", expected)
    assert not (repo.root / "out").exists()
    checked = repo.run("check")
    assert (checked.exit_code, checked.stderr) == (3, expected)


def test_closure_error_from_a_real_subprocess(scenario):
    proc = scenario("unresolved").run_process("sync")
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "", UNRESOLVED)


def test_hidden_imports_cover_the_dynamic_imports_and_are_copied(scenario):
    repo = scenario("dynamic")
    repo.edit_config('entry = ["app.main"]', 'entry = ["app.main"]\nhidden-imports = ["app.plugins.*"]')
    assert repo.run("sync").exit_code == 0
    assert repo.listing("out/vendor") == [
        "app/__init__.py",
        "app/main.py",
        "app/plugins/__init__.py",
        "app/plugins/a.py",
        "app/plugins/b.py",
        "app/plugins/deeper/__init__.py",
        "bonsai-sync.lock",
    ]
    repo.edit_config('"app.plugins.*"', '"app.plugins.**"')
    assert repo.run("sync").output == "app: out/vendor: wrote 1, removed 0, unchanged 6\n"
    assert "app/plugins/deeper/c.py" in repo.listing("out/vendor")


def test_data_glob_covers_a_non_literal_resource(scenario):
    repo = scenario("resources")
    repo.write("src/app/missing.wgsl", "// now it exists\n")
    repo.write("src/secret.txt", "inside the root now\n")
    repo.write("src/app/main.py", repo.read("src/app/main.py").replace('/ ".." / ".." /', '/ ".." /'))
    repo.edit_config('entry = ["app.main"]', 'entry = ["app.main"]\ndata = ["app/*.wgsl"]')
    result = repo.run("sync")
    assert result.exit_code == 0, result.output
    assert repo.listing("out/vendor") == [
        "app/__init__.py",
        "app/main.py",
        "app/missing.wgsl",
        "bonsai-sync.lock",
        "secret.txt",  # app/../secret.txt stays inside the source root
    ]


CONFIG_ERRORS = [
    (
        "source = [\"src\", \"lib\"]",
        "source = [\"src\", \"lib\"]\nsorce = []",
        "pyproject.toml:6:1: [tool.bonsai-sync] sorce: unknown key 'sorce' (known keys: source, surfaces, third-party)",
    ),
    (
        'entry = ["app.main"]',
        'entri = ["app.main"]',
        "pyproject.toml:10:1: [tool.bonsai-sync.surfaces.app] entri: unknown key 'entri' (known keys: bundle, "
        "bundle-project, compiled, data, dest, entry, exclude, hidden-imports, python, rewrite-imports, stubs, "
        "third-party)",
    ),
    (
        'source = ["src", "lib"]',
        'source = ["src", "nowhere"]',
        "pyproject.toml:5:1: [tool.bonsai-sync] source: source root 'nowhere' is not a directory under {root}",
    ),
    (
        'entry = ["app.main"]',
        'entry = ["app.mian"]',
        "pyproject.toml:10:1: [tool.bonsai-sync.surfaces.app] entry: entry module 'app.mian' is not a module in the "
        "source roots ['src', 'lib']",
    ),
    (
        'dest = "out/leaf"',
        'dest = "out/vendor/leaf"',
        "pyproject.toml:14:1: [tool.bonsai-sync.surfaces.leaf] dest: 'out/vendor/leaf' overlaps the dest of surface 'app'",
    ),
    (
        'dest = "out/leaf"',
        'dest = "src/leaf"',
        "pyproject.toml:14:1: [tool.bonsai-sync.surfaces.leaf] dest: 'src/leaf' overlaps source root src",
    ),
    (
        'entry = ["app.main"]',
        'entry = ["app.main"]\nhidden-imports = ["app.nothing.*"]',
        "pyproject.toml:11:1: [tool.bonsai-sync.surfaces.app] hidden-imports: 'app.nothing.*' matches no module in "
        "the source roots",
    ),
    (
        'entry = ["app.main"]',
        'entry = "app.main"',
        "pyproject.toml:10:1: [tool.bonsai-sync.surfaces.app] entry: must be a list of strings",
    ),
]


@pytest.mark.parametrize(("old", "new", "message"), CONFIG_ERRORS)
def test_configuration_errors_name_the_key(scenario, old, new, message):
    repo = scenario("closure")
    repo.edit_config(old, new)
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (2, message.format(root=repo.root.resolve()) + "\n")
    assert not (repo.root / "out").exists()


def test_unknown_surface_and_missing_table(scenario, tmp_path):
    repo = scenario("closure")
    result = repo.run("check", "--surface", "nope")
    assert (result.exit_code, result.stderr) == (
        2,
        "bonsai-sync: error: no surface named 'nope' in [tool.bonsai-sync.surfaces] (known: app, leaf)\n",
    )
    repo.write("pyproject.toml", "[project]\nname = 'x'\n")
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (
        2,
        "bonsai-sync: error: pyproject.toml: no [tool.bonsai-sync] table; add one with `source` and `surfaces`\n",
    )


def test_syntax_error_names_the_place(scenario):
    repo = scenario("verify")
    repo.write("src/app/helper.py", '"""Broken."""\n\ndef f(:\n')
    result = repo.run("sync")
    assert result.exit_code == 3
    assert result.stderr.startswith("src/app/helper.py:3:")
    assert "syntax error" in result.stderr


def test_why_explains_a_forbidden_import_even_when_the_closure_fails(scenario):
    repo = scenario("unresolved")
    result = repo.run("why", "app", "requests")
    assert result.exit_code == 3
    assert result.stdout == (
        "app.main  (entry)\n  -> requests  (src/app/main.py:6:1, import)\n"
        "requests: not first-party, stdlib or declared third-party: an error\n"
    )
    assert result.stderr == UNRESOLVED
    graph = repo.run("graph", "app", "--format", "dot")
    assert '  "requests" [shape=octagon];\n' in graph.stdout and graph.exit_code == 3
