"""An exception as the extension's pages show it: its class, message and, for GGUF errors, the file and field."""

from __future__ import annotations

import traceback
from typing import Any

from bonsai.errors import BonsaiError


def describe(exc: BaseException) -> dict:
    """{type, message, path?, field?, cause?, traceback?}: a traceback only for what is not a BonsaiError."""
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    for attr in ("path", "field"):
        if isinstance(getattr(exc, attr, None), str):
            out[attr] = getattr(exc, attr)
    if exc.__cause__ is not None:
        out["cause"] = f"{type(exc.__cause__).__name__}: {exc.__cause__}"
    if not isinstance(exc, BonsaiError):
        out["traceback"] = "".join(traceback.format_exception(exc))
    return out
