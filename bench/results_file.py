"""Where a benchmark's JSON goes: `write_results` makes the folder, writes, and says where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_results(out: str | Path, payload: dict[str, Any]) -> None:
    """Write `payload` as indented JSON to `out` (folders made as needed) and print its path."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2))
    print(f"wrote {path}")
