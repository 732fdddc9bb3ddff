"""Source bytes to text the way CPython reads a module: UTF-8 unless a PEP 263 coding line says otherwise."""

from __future__ import annotations

import io
import tokenize

from .facts import Problem


def decode(data: bytes) -> tuple[str, Problem | None]:
    """The text of a source file, or a "syntax" Problem at the line CPython would fail on."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return "", Problem("syntax", f"cannot decode: {exc.msg}", exc.lineno or 1, 1)
    try:
        return data.decode(encoding), None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return "", Problem("syntax", f"not valid {encoding} (byte {data[exc.start]:#04x}); save it as UTF-8 or "
                           "declare its encoding in a coding line", line, col)
