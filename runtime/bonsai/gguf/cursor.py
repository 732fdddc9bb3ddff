"""A bounds-checked little-endian reader over GGUF bytes that names the field it is reading when they end."""

from __future__ import annotations

import struct
from typing import Any

from .constants import VALUE_FORMATS, ValueType
from .errors import GGUFError, TruncatedGGUFError


class Cursor:
    """Reads little-endian values from a buffer, naming the current field when the buffer ends."""

    def __init__(self, buf: memoryview, path: str) -> None:
        self.buf = buf
        self.path = path
        self.pos = 0
        self.field = "header"

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise TruncatedGGUFError(
                self.path,
                self.field,
                f"file ends at byte {len(self.buf)} but this field needs bytes {self.pos}..{self.pos + n}"
                " (the file is truncated or corrupt; download it again)",
            )
        view = self.buf[self.pos : self.pos + n]
        self.pos += n
        return view

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize("<" + fmt)
        return struct.unpack_from("<" + fmt, self.take(size))

    def u32(self) -> int:
        return self.unpack("I")[0]

    def u64(self) -> int:
        return self.unpack("Q")[0]

    def string(self) -> str:
        raw = self.take(self.u64())
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise GGUFError(self.path, self.field, f"string is not valid UTF-8 ({exc.reason})") from exc

    def value(self, vtype: int) -> Any:
        if vtype == ValueType.STRING:
            return self.string()
        if vtype == ValueType.ARRAY:
            item_type = self._value_type(self.u32())
            count = self.u64()
            if item_type in VALUE_FORMATS:
                fmt = VALUE_FORMATS[item_type]
                return list(self.unpack(f"{count}{fmt}"))
            if item_type == ValueType.STRING:
                return self._strings(count)
            return [self.value(item_type) for _ in range(count)]
        vt = self._value_type(vtype)
        return self.unpack(VALUE_FORMATS[vt])[0]

    def _strings(self, count: int) -> list[str]:
        """`count` length-prefixed strings: the hot path (49k tokens, 49k merges) in one tight loop."""
        buf, pos, end = self.buf, self.pos, len(self.buf)
        unpack_len = struct.Struct("<Q").unpack_from
        out: list[str] = []
        append = out.append
        try:
            for _ in range(count):
                if pos + 8 > end:
                    break
                (n,) = unpack_len(buf, pos)
                pos += 8
                if pos + n > end:
                    pos -= 8
                    break
                append(str(buf[pos : pos + n], "utf-8"))
                pos += n
        except UnicodeDecodeError as exc:
            raise GGUFError(
                self.path, self.field, f"string #{len(out)} is not valid UTF-8 ({exc.reason})"
            ) from exc
        self.pos = pos
        if len(out) < count:  # ran off the end: let the checked reader raise the named error
            self.field += f" item #{len(out)}"
            self.string()
        return out

    def _value_type(self, raw: int) -> ValueType:
        try:
            return ValueType(raw)
        except ValueError:
            raise GGUFError(
                self.path, self.field, f"unknown metadata value type {raw} (the file is corrupt)"
            ) from None
