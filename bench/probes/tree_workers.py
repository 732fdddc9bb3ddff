"""Benchmarks that compare runtime trees: one case in a worker process with a given tree first on its path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def in_worker(script: str, runtime: Path, args: list[str]) -> dict:
    """Run `script --worker ARGS` with `runtime` first on PYTHONPATH; its last stdout line, as JSON."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(runtime), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, script, "--worker", *args], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ratios(got: dict[str, dict], wall: str, cpu: str) -> str:
    """"baseline/this" of the wall and CPU figures once both trees ran the case, else ""."""
    if len(got) < 2:
        return ""
    base, this = got["baseline"], got["this"]
    return f"{base[wall] / this[wall]:.2f}x, {base[cpu] / this[cpu]:.2f}x"
