"""Fixtures for the model-input tests: the default model's reader, tokenizer and numpy reference."""

from __future__ import annotations

import os

# numpy's OpenBLAS starts one thread per host core; on a small shared CPU quota that oversubscription
# makes the reference forward pass ~5x slower. Only effective if numpy is not imported yet.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest  # noqa: E402

from bonsai.models import default_model_path  # noqa: E402


@pytest.fixture(scope="session")
def default_reference():
    """The default model as a bonsai.reference.ReferenceModel (weights dequantised lazily, shared)."""
    from bonsai.reference import ReferenceModel

    return ReferenceModel(default_model_path())


@pytest.fixture(scope="session")
def default_tokenizer(default_reference):
    """The default model's tokenizer."""
    from bonsai.tokenizer import Tokenizer

    return Tokenizer.from_gguf(default_reference.reader)
