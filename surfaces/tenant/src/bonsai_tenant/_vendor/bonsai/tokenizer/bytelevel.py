"""GPT-2's byte <-> printable-character table that byte-level BPE vocabularies are written in."""

from __future__ import annotations


def bytes_to_unicode() -> dict[int, str]:
    """Byte value -> the character standing for it (printable Latin-1 map to themselves, the rest to 256+)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    keep += list(range(ord("®"), ord("ÿ") + 1))
    table: dict[int, str] = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_TO_CHAR: dict[int, str] = bytes_to_unicode()
CHAR_TO_BYTE: dict[str, int] = {c: b for b, c in BYTE_TO_CHAR.items()}
# str.translate table: latin-1 decoded text -> byte-level characters.
_LATIN1_TO_BYTELEVEL = {b: c for b, c in BYTE_TO_CHAR.items()}


def encode_bytelevel(piece: str) -> str:
    """The byte-level spelling of a text piece (its UTF-8 bytes, one character each)."""
    return piece.encode("utf-8").decode("latin-1").translate(_LATIN1_TO_BYTELEVEL)


def decode_bytelevel(token: str) -> bytes | None:
    """The bytes a byte-level token stands for, or None if it has a character outside the table."""
    try:
        return bytes(CHAR_TO_BYTE[c] for c in token)
    except KeyError:
        return None
