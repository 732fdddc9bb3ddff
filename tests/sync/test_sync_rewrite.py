"""`rewrite-imports`: a copy vendored into a package imports itself below that package, verified
like every copy, and runs with only the application on sys.path."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bonsai_sync.rewrite import rewrite_imports
from tests.sync.test_sync_vendor_packages import _install_into

TOPS = frozenset({"yaml", "core"})


@pytest.mark.parametrize(("before", "after"), [
    ("import yaml\n", "from app._vendor import yaml\n"),
    ("import yaml as y\n", "from app._vendor import yaml as y\n"),
    ("import yaml.error as e\n", "from app._vendor.yaml import error as e\n"),
    ("import yaml.error\n", "import app._vendor.yaml.error as _vendored_yaml_error; from app._vendor import yaml\n"),
    ("import os, yaml\n", "import os; from app._vendor import yaml\n"),
    ("from yaml.error import YAMLError\n", "from app._vendor.yaml.error import YAMLError\n"),
    ("from yaml import (\n    load,\n    dump,\n)\n", "from app._vendor.yaml import (\n    load,\n    dump,\n)\n"),
    ("def f():\n    if x: import core  # import yaml\n", "def f():\n    if x: from app._vendor import core  # import yaml\n"),
    ('"""Use: import yaml"""\nfrom . import yaml\nimport yamlish\n', '"""Use: import yaml"""\nfrom . import yaml\nimport yamlish\n'),
    ("s = 'é'; import yaml\n", "s = 'é'; from app._vendor import yaml\n"),
])
def test_each_import_form_is_rewritten_from_the_syntax_tree(before, after):
    assert rewrite_imports(before.encode(), TOPS, "app._vendor").decode() == after
    compile(after, "x.py", "exec")


CONFIG = """[tool.bonsai-sync]
source = ["src"]

[tool.bonsai-sync.surfaces.app]
dest = "app/_vendor"
entry = ["yaml", "core.main"]
hidden-imports = {"yaml/constructor.py:534" = [], "yaml/constructor.py:554" = []}
"""
USE = """
import sys
sys.path[:] = [sys.argv[1]] + [p for p in sys.path if "-packages" not in p]
from app._vendor.core.main import load
assert load("a: [1, 2]") == {"a": [1, 2]}
assert "yaml" not in sys.modules and "core" not in sys.modules, "a top-level copy was imported"
print(sys.modules["app._vendor.yaml"].__file__)
"""


@pytest.fixture
def monorepo(repo_at, tmp_path):
    """A stranger's repo: src/ holds pyyaml (as pip --target leaves it) and its own `core`; the app
    package vendors both into app/_vendor."""
    root = tmp_path / "mono"
    _install_into(root / "src", ["PyYAML"])
    repo = repo_at(root)
    repo.write("src/core/__init__.py", "")
    repo.write("src/core/main.py", "import yaml\nimport core.util\n\n\ndef load(text):\n    return core.util.parse(text)\n")
    repo.write("src/core/util.py", "from yaml import safe_load as parse\n")
    repo.write("app/__init__.py", "")
    repo.write("pyproject.toml", CONFIG)
    return repo


def test_without_rewriting_the_copy_inside_a_package_is_refused(monorepo):
    result = monorepo.run("sync")
    assert result.exit_code == 3
    assert result.stderr.startswith("app/_vendor:1:1: 4 imports in 3 files of the copy import its own packages "
                                    "absolutely, but the dest lies inside package 'app._vendor'")
    assert "set `rewrite-imports = true` for the surface" in result.stderr


def test_with_rewriting_the_copy_imports_itself_below_the_app_and_runs(monorepo):
    monorepo.edit_config('entry = ["yaml", "core.main"]', 'entry = ["yaml", "core.main"]\nrewrite-imports = true')
    result = monorepo.run("sync", "--verify-import")
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    assert monorepo.read("app/_vendor/core/main.py").startswith(
        "from app._vendor import yaml\nimport app._vendor.core.util as _vendored_core_util; from app._vendor import core\n")
    assert monorepo.read("app/_vendor/yaml/cyaml.py").count("from app._vendor.yaml._yaml import") == 1
    assert monorepo.run("check").exit_code == 0
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", USE, str(monorepo.root)], capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == f"{monorepo.root / 'app/_vendor/yaml/__init__.py'}\n"
    monorepo.write("app/_vendor/core/util.py", "from yaml import safe_load as parse\n")  # the source's bytes
    check = monorepo.run("check")
    assert check.exit_code == 1 and "app/_vendor/core/util.py: edited by hand" in check.stdout


def test_the_verifier_reads_rewritten_imports(monorepo):
    monorepo.edit_config('entry = ["yaml", "core.main"]', 'entry = ["yaml", "core.main"]\nrewrite-imports = true')
    monorepo.write("src/core/util.py", "from yaml import safe_load as parse\ntry:\n    import core.gone\nexcept ImportError:\n"
                   "    pass\n")
    assert monorepo.run("sync").exit_code == 0
    # a module the rewritten copy imports but does not hold is caught, under the name the copy spells
    (monorepo.root / "app/_vendor/core/util.py").unlink()
    from bonsai_sync.verify import Rules, verify_tree

    rules = Rules({"yaml", "core"}, frozenset(), package="app._vendor")
    problems = verify_tree(monorepo.root / "app/_vendor", "app/_vendor", rules, [monorepo.root / "src"])
    assert [(p.path, p.line, p.message) for p in problems] == [
        ("app/_vendor/core/main.py", 2, "imports 'app._vendor.core.util', which was not copied into the surface")]


def test_rewriting_a_dest_that_is_no_package_is_a_config_error(monorepo):
    monorepo.edit_config('entry = ["yaml", "core.main"]', 'entry = ["yaml", "core.main"]\nrewrite-imports = true')
    (monorepo.root / "app/__init__.py").unlink()
    result = monorepo.run("sync")
    assert result.exit_code == 2
    assert result.stderr.startswith("pyproject.toml:7:1: [tool.bonsai-sync.surfaces.app] rewrite-imports: the dest "
                                    "'app/_vendor' is no package's folder")


def test_verify_import_imports_the_rewritten_copy_below_its_package(monorepo):
    monorepo.edit_config('entry = ["yaml", "core.main"]\nhidden-imports = {',
                         'entry = ["yaml", "core.main"]\nrewrite-imports = true\nhidden-imports = {"core/util.py:2" = '
                         '["yaml"], ')
    # a name built at run time is not rewritten: only importing the copy below its package shows it
    monorepo.write("src/core/util.py", "def load(name):\n    return __import__(name)\n\n\nparse = load('yaml').safe_load\n")
    assert monorepo.run("sync").exit_code == 0
    result = monorepo.run("sync", "--verify-import")
    assert result.exit_code == 3
    assert "importing 'app._vendor.core.main' failed: ModuleNotFoundError: No module named 'yaml'" in result.stderr
