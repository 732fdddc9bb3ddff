"""Real packages from the installed environment, vendored into scratch repos with the configuration
docs/bonsai-sync.md documents and nothing else, import and run from the copy alone in an isolated
interpreter (`python -I -S`, sys.path = the copy), every public name of each package included."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

# docs/bonsai-sync.md's "Vendoring real packages" table, verbatim.
CASES = {
    "yaml": (["PyYAML"], (
        'entry = ["yaml"]\n'  # its constructor imports the modules a document names: nothing to copy
        'hidden-imports = {"yaml/constructor.py:534" = [], "yaml/constructor.py:554" = []}\n'), """
import yaml
assert yaml.__with_libyaml__, "the compiled _yaml did not load"
assert yaml.load("a: [1, 2]", Loader=yaml.CSafeLoader) == {"a": [1, 2]}
assert yaml.dump({"b": 1}, Dumper=yaml.CSafeDumper) == "b: 1\\n"
"""),
    "jinja2": (["Jinja2", "MarkupSafe"], 'entry = ["jinja2"]\nhidden-imports = ["jinja2.ext"]\n', """
import jinja2, markupsafe
env = jinja2.Environment(extensions=["jinja2.ext.i18n"], autoescape=True)
env.install_null_translations()
assert env.from_string("{% trans %}hi {{ x }}{% endtrans %}").render(x="<b>") == "hi &lt;b&gt;"
assert markupsafe._escape_inner.__module__ == "markupsafe._speedups"
"""),
    "requests": (["requests", "urllib3", "idna", "charset-normalizer", "certifi"], (
        'entry = ["requests"]\n'
        'exclude = ["simplejson", "urllib3.contrib.pyopenssl", "urllib3.contrib.emscripten", '
        '"urllib3.http2.connection"]\n'), """
import os, requests
assert requests.Request("GET", "http://example.invalid/a b", params={"q": 1}).prepare().url == \\
    "http://example.invalid/a%20b?q=1"
assert os.path.isfile(requests.certs.where())
assert requests.compat.chardet.__name__ == "charset_normalizer"
"""),
    "pydantic": (["pydantic", "pydantic-core", "typing-extensions", "annotated-types", "typing-inspection"], (
        'entry = ["pydantic"]\nhidden-imports = ["pydantic.*", "pydantic.deprecated.*"]\nexclude = ["rich", "pydantic.mypy"]\n'), """
import pydantic, pydantic_core
class User(pydantic.BaseModel):
    name: str
    age: int = 0
assert User.model_validate({"name": "x", "age": "3"}).age == 3
try:
    User(age="x")
except pydantic.ValidationError as exc:
    assert exc.error_count() == 2
else:
    raise AssertionError("no ValidationError")
"""),
}
# Compiled modules each copy must carry, locked with their platform tag
COMPILED = {"yaml": ["yaml/_yaml"], "jinja2": ["markupsafe/_speedups"], "requests": ["charset_normalizer/md"],
            "pydantic": ["pydantic_core/_pydantic_core"]}
USE = """
import importlib, importlib.metadata, os, sys
tree = sys.argv[1]
sys.path[:] = [tree] + [p for p in sys.path if "-packages" not in p]
{code}
for top in sys.argv[3:]:  # every public name of each entry package, lazy ones (module __getattr__) included
    package = importlib.import_module(top)
    for public in getattr(package, "__all__", [n for n in dir(package) if not n.startswith("_")]):
        getattr(package, public)
for name, module in list(sys.modules.items()):
    file = getattr(module, "__file__", None) or ""
    assert not file or not "-packages" in file, f"{{name}} came from {{file}}"
print(importlib.metadata.version(sys.argv[2]))
"""


def _install_into(src: Path, names: list[str]) -> None:
    """What `pip install --target src` would leave: every file each distribution's RECORD lists."""
    for name in names:
        dist = metadata.distribution(name)
        for file in dist.files or []:
            if file.parts[0] == ".." or "__pycache__" in file.parts:
                continue
            path = Path(str(dist.locate_file(file)))
            target = src / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_real_package_runs_from_its_copy_alone(repo_at, tmp_path, case):
    dists, table, code = CASES[case]
    root = tmp_path / case
    _install_into(root / "src", dists)
    (root / "pyproject.toml").write_text(f'[tool.bonsai-sync]\nsource = ["src"]\n\n'
                                        f'[tool.bonsai-sync.surfaces.demo]\ndest = "out/vendor"\n{table}')
    repo = repo_at(root)
    result = repo.run("sync", "--verify-import")
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    dest = root / "out/vendor"
    entries = tomllib.loads(table)["entry"]
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", USE.format(code=code), str(dest), dists[0], *entries],
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == f"{metadata.version(dists[0])}\n"  # METADATA travelled with the copy
    lock = tomllib.loads(repo.read("out/vendor/bonsai-sync.lock"))["file"]
    assert any(e["kind"] == "license" for e in lock)
    compiled = sorted(e["path"].split(".")[0] for e in lock if e["kind"] == "compiled" and e["platform"])
    assert set(COMPILED[case]) <= set(compiled), compiled
    assert repo.run("check").exit_code == 0

