"""Issue 18.3: a `hidden-imports` hint answers the dynamic import sites it names or whose targets
it matches; an unanswered site and an unused hint stay errors."""

from __future__ import annotations

HIDDEN = ("declare its targets in `hidden-imports` of surface 'app' (a \"path.py:LINE\" = [...] entry answers this "
          "site alone; [] when it needs nothing copied)")
SITE_11 = ("src/app/main.py:11:5: cannot follow import_module() of a non-literal name (its targets start with "
           f"'app.plugins.'); {HIDDEN}")
SITE_13 = ("src/app/main.py:13:17: cannot follow pkgutil.iter_modules() plugin loop (its targets start with "
           f"'app.plugins.'); {HIDDEN}")


def test_a_hint_for_another_module_does_not_silence_the_plugin_sites(scenario):
    repo = scenario("dynamic")
    repo.write("src/app/unrelated.py", "")
    repo.edit_config('entry = ["app.main"]', 'entry = ["app.main"]\nhidden-imports = ["app.unrelated"]')
    result = repo.run("sync")
    # app.unrelated answers the two sites whose target is unknown (same package), not app.plugins.*
    assert (result.exit_code, result.stderr) == (3, f"{SITE_11}\n{SITE_13}\n")
    assert not (repo.root / "out").exists()


def test_a_hint_per_site_answers_exactly_that_site(scenario):
    repo = scenario("dynamic")
    repo.edit_config('entry = ["app.main"]', 'entry = ["app.main"]\n\n'
                     '[tool.bonsai-sync.surfaces.app.hidden-imports]\n'
                     '"src/app/main.py:10" = ["app.plugins.a"]\n"src/app/main.py:11" = ["app.plugins.b"]\n'
                     '"app/main.py:13" = []\n"src/app/main.py:14" = []\n')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")
    assert "app/plugins/b.py" in repo.listing("out/vendor") and "app/plugins/deeper/c.py" not in repo.listing("out/vendor")
    assert repo.run("why", "app", "app.plugins.b").stdout == (
        "app.main  (entry)\n"
        "  -> app.plugins.b  (src/app/main.py:11:5, import_module() of a non-literal name (hidden-imports))\n"
    )


def test_an_unused_hint_is_an_error(scenario):
    repo = scenario("dynamic")
    repo.edit_config('entry = ["app.main"]', 'entry = ["app.main"]\nhidden-imports = ["app.plugins.*"]\n\n'
                     '[tool.bonsai-sync.surfaces.other]\ndest = "out/other"\nentry = ["app.plugins.a"]\n'
                     'hidden-imports = ["app.plugins.b"]')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (3, (
        "pyproject.toml:12:1: [tool.bonsai-sync.surfaces.other] hidden-imports: 'app.plugins.b' answers no dynamic "
        "import in the closure; remove it, or name the module as an `entry` if nothing imports it by name\n"))


def test_a_hint_can_name_a_module_whose_file_name_is_not_an_identifier(make_repo):
    repo = make_repo({
        "src/app/main.py": ("from importlib import import_module\n\n"
                            "def table(version):\n    return import_module(f'.unicode{version}', 'app._data')\n"),
        "src/app/_data/__init__.py": "",
        "src/app/_data/unicode17-0-0.py": "WIDTHS = ()\n",
        "src/app/_data/unicode16-0-0.py": "WIDTHS = ()\n",
    }, 'hidden-imports = ["app._data.unicode17-0-0"]\n')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")
    assert repo.listing("out/vendor") == ["app/__init__.py", "app/_data/__init__.py", "app/_data/unicode17-0-0.py",
                                          "app/main.py", "bonsai-sync.lock"]



def test_patterns_under_the_star_key_match_by_target_like_the_list_form(scenario):
    repo = scenario("dynamic")
    repo.edit_config('entry = ["app.main"]', 'entry = ["app.main"]\nhidden-imports = ["app.plugins.**"]')
    assert repo.run("sync").exit_code == 0
    listed = repo.listing("out/vendor")
    repo.edit_config('hidden-imports = ["app.plugins.**"]', 'hidden-imports = { "*" = ["app.plugins.**"] }')
    assert repo.run("sync").stdout == f"app: out/vendor: wrote 0, removed 0, unchanged {len(listed) - 1}\n"
    assert "app/plugins/deeper/c.py" in listed


LOADER = {
    "src/app/main.py": "import core\n",
    "src/core/__init__.py": "import loader\n\nloader.attach(__name__, ['fast'])\n",
    "src/core/fast.py": "X = 1\n",
    "src/loader/__init__.py": ("import importlib\n\n\ndef attach(package, names):\n    for name in names:\n"
                               "        importlib.import_module(f'{package}.{name}')\n"),
}


def test_a_pattern_for_another_packages_loader_is_refused_with_the_per_site_form_that_answers_it(make_repo):
    repo = make_repo(LOADER, 'hidden-imports = ["core.fast"]\n')
    result = repo.run("sync")
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0] == (
        "pyproject.toml:7:1: [tool.bonsai-sync.surfaces.app] hidden-imports: 'core.fast' answers no dynamic import "
        "in the closure; remove it, or name the module as an `entry` if nothing imports it by name; a site whose "
        "targets have no known start (such as src/loader/__init__.py:6) is answered by naming it: "
        "[tool.bonsai-sync.surfaces.app.hidden-imports] \"src/loader/__init__.py:6\" = ['core.fast']")
    repo.edit_config('hidden-imports = ["core.fast"]', 'hidden-imports = {"src/loader/__init__.py:6" = ["core.fast"]}')
    fixed = repo.run("sync")
    assert fixed.exit_code == 0, fixed.output
    assert "core/fast.py" in repo.listing("out/vendor")
