"""OS-surface fixtures: the hand-written package on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "surfaces" / "os" / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))
