"""The recorded responses under recorded/ and their golden events, shared by the parser tests."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from bonsai.toolcall import builtin_registry
from bonsai.toolcall.events import Event

HERE = Path(__file__).parent / "recorded"
REGISTRY = builtin_registry("calculator,clock")
SAMPLES = {p.stem: p.read_text(encoding="utf-8") for p in sorted(HERE.glob("*.txt"))}


def as_json(events: list[Event]) -> list[dict]:
    """Events as plain dicts tagged with their class name (the golden files' format)."""
    return [{"event": type(e).__name__, **dataclasses.asdict(e)} for e in events]


def golden(name: str) -> list[dict]:
    return json.loads((HERE / f"{name}.events.json").read_text(encoding="utf-8"))


if __name__ == "__main__":  # regenerate the goldens: python tests/runtime/toolcall/recorded_outputs.py
    from bonsai.toolcall.parser import parse_text

    for stem, text in SAMPLES.items():
        out = json.dumps(as_json(parse_text(text, REGISTRY)), indent=1, ensure_ascii=False) + "\n"
        (HERE / f"{stem}.events.json").write_text(out, encoding="utf-8")
