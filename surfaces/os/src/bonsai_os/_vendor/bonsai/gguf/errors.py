"""The GGUF reader's exceptions: each names the file and the field or tensor at fault."""

from __future__ import annotations

from ..errors import BonsaiError


class GGUFError(BonsaiError):
    """A GGUF file could not be read; `path` and `field` say where, the message says what to do."""

    def __init__(self, path: str, field: str, message: str) -> None:
        self.path = path
        self.field = field
        self.message = message
        super().__init__(f"{path}: {field}: {message}")


class TruncatedGGUFError(GGUFError):
    """The file ends before a header field, metadata value or tensor's data does."""


class BadMagicError(GGUFError):
    """The file does not start with the 4 bytes `GGUF`."""


class UnsupportedVersionError(GGUFError):
    """The GGUF version is not 2 or 3."""


class UnknownTensorTypeError(GGUFError):
    """A tensor's ggml type id is not one this reader knows the block size of."""


class MissingKeyError(GGUFError):
    """A metadata key the caller requires is absent or has the wrong type."""
