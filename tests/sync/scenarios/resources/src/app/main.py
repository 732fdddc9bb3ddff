"""Resource paths: missing, escaping the source root, and not literal."""

from importlib import resources
from pathlib import Path

MISSING = resources.files("app") / "missing.wgsl"
ESCAPES = Path(__file__).parent / ".." / ".." / "secret.txt"
DYNAMIC = resources.files("app").joinpath(MISSING.name)
