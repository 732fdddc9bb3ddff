"""What every benchmark row carries and how rows are shown: commit, device and date; one markdown table."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def commit() -> str:
    """$BONSAI_COMMIT where set (a copied tree without .git, as on the GPU machine), else the checkout's short
    commit, '+dirty' when tracked files differ from it; 'unknown' outside git."""
    if os.environ.get("BONSAI_COMMIT"):
        return os.environ["BONSAI_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def host_device() -> str:
    """The GPUs nvidia-smi names, else the CPU: for workloads whose script does not name its adapter."""
    try:
        gpus = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, check=True, timeout=30).stdout.split("\n")
        names = sorted({g.strip() for g in gpus if g.strip()})
        if names:
            return ", ".join(names)
    except (OSError, subprocess.SubprocessError):
        pass
    return f"CPU {platform.processor() or platform.machine()}"


def flat(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`row`'s scalar fields, nested dicts' fields as 'outer.inner'; lists are left to the JSON."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        elif value is None or isinstance(value, (str, int, float, bool)):
            out[f"{prefix}{key}"] = value
    return out


def stamp(rows: Iterable[dict[str, Any]], workload: str, device: str) -> list[dict[str, Any]]:
    """Each row flattened and stamped with the workload, the commit, the device and the UTC date."""
    meta = {"workload": workload, "commit": commit(), "device": device,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}
    return [{**meta, **flat(r)} for r in rows]


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
    return "" if value is None else str(value).replace("|", "/")


def markdown(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """A markdown table of `rows`: the given columns (those present), else every key in first-seen order."""
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    cols = [c for c in columns if c in keys] if columns else keys
    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines)
