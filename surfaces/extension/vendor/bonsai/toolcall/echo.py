"""Drop the `<tool_response>` markup a model copies from the tool turn into its own reply.

After a tool result, small models often answer by echoing the result block
(`<tool_response>\\n391\\n</tool_response>`, SmolLM2 on a calculator result). Those tags are the tool
turn's markup, never the assistant's: they are removed (with the newline inside each tag's side
of the block) and what they wrapped stays as the answer. Split-proof: text that may still become
a tag is held back until it cannot.
"""

from __future__ import annotations

import re

OPEN, CLOSE = "<tool_response>", "</tool_response>"
_TAGS = re.compile(re.escape(OPEN) + r"\n?|\n?" + re.escape(CLOSE))
_HELD = (OPEN + "\n", "\n" + CLOSE, CLOSE)  # a suffix that is a proper prefix of one of these may still change


def _pending(text: str) -> int:
    """How many characters at the end of `text` could still become (part of) a tag."""
    return max((k for s in _HELD for k in range(min(len(s) - 1, len(text)), 0, -1) if text.endswith(s[:k])),
               default=0)


class EchoFilter:
    """`feed(text)` returns the text with echoed tags removed, as far as it is decided; `finish()` the rest."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        text = self._held + text
        out: list[str] = []
        pos = 0
        for match in _TAGS.finditer(text):
            if match.end() == len(text) and match.group() == OPEN:
                break  # an opening tag at the very end: the newline it takes with it may still come
            out.append(text[pos:match.start()])
            pos = match.end()
        rest = text[pos:]
        keep = _pending(rest)
        self._held = rest[len(rest) - keep:] if keep else ""
        out.append(rest[: len(rest) - keep])
        return "".join(out)

    def finish(self) -> str:
        text, self._held = self._held, ""
        return _TAGS.sub("", text)
