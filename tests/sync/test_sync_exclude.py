"""Issue 18.5: `exclude` leaves optional things out (a required import of them is an error), and
a declared third-party name is never copied, even from a source root."""

from __future__ import annotations

FILES = {
    "src/app/main.py": ("try:\n    import fancy\nexcept ImportError:\n    fancy = None\n\n"
                        "def render():\n    from app.plugins import slow\n    return slow\n"),
    "src/app/plugins/__init__.py": "",
    "src/app/plugins/slow.py": "import fancy.deep\n",
    "src/fancy/__init__.py": "from . import deep\n",
    "src/fancy/deep.py": "",
    "src/click/__init__.py": "",
}


def test_excluded_modules_are_not_copied_when_only_optional(make_repo):
    repo = make_repo(FILES, 'exclude = ["fancy", "app.plugins.*"]\n')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")
    assert repo.listing("out/vendor") == ["app/__init__.py", "app/main.py", "app/plugins/__init__.py",
                                          "bonsai-sync.lock"]
    why = repo.run("why", "app", "fancy")
    assert why.stdout == ("app.main  (entry)\n  -> fancy  (src/app/main.py:2:5, import, optional)\n"
                          "fancy: left out by this surface's `exclude` (not copied)\n")
    assert repo.run("why", "app", "app.plugins.slow").stdout == (
        "app.main  (entry)\n  -> app.plugins.slow  (src/app/main.py:7:5, from, in a function)\n"
        "app.plugins.slow: left out by this surface's `exclude` (not copied)\n")


def test_a_required_import_of_an_excluded_module_is_an_error_at_its_site(make_repo):
    repo = make_repo({**FILES, "src/app/main.py": "import os\nimport fancy.deep\n"}, 'exclude = ["fancy"]\n')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (3, (
        "src/app/main.py:2:1: imports 'fancy.deep', which `exclude` leaves out ('fancy'); drop the pattern, or make "
        "the import optional (try/except ImportError, or inside a function)\n"))


def test_an_excluded_module_imported_by_a_module_below_the_entry_suggests_excluding_that_module(make_repo):
    repo = make_repo({**FILES, "src/app/main.py": "from . import extra\n", "src/app/extra.py": "import fancy\n"},
                     'exclude = ["fancy"]\n')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (3, (
        "src/app/extra.py:1:1: imports 'fancy', which `exclude` leaves out ('fancy'); exclude 'app.extra' too, drop "
        "the pattern, or make the import optional (try/except ImportError, or inside a function)\n"))


def test_a_declared_third_party_name_is_not_copied_from_a_source_root(make_repo):
    repo = make_repo({**FILES, "src/app/main.py": "import click\n"}, 'third-party = ["click"]\n')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")
    assert repo.listing("out/vendor") == ["app/__init__.py", "app/main.py", "bonsai-sync.lock"]


def test_an_import_under_an_undecided_if_may_be_excluded(make_repo):
    repo = make_repo({**FILES, "src/app/main.py": 'import sys\nif sys.platform == "emscripten":\n    import fancy\n'},
                     'exclude = ["fancy"]\n')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")
    assert repo.run("why", "app", "fancy").stdout.splitlines()[1] == "  -> fancy  (src/app/main.py:3:5, import, conditional)"
