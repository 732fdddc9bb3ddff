"""Token bytes in, reply text out: UTF-8 split across tokens held back, stop sequences cut.

A character whose bytes span tokens comes out once it is whole; when the reply ends inside one
(max_tokens cut it), its bytes are dropped, never sent as U+FFFD. With `stop` strings, text that
could be the start of one is held back until it is not; once one appears, the text ends before it.
"""

from __future__ import annotations

import codecs


class TextOut:
    """One reply's text: `feed(bytes)` returns what may be sent now, `finish()` the rest."""

    def __init__(self, stop: tuple[str, ...] = ()) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.stop = tuple(s for s in stop if s)
        self._held = ""
        self.stopped = False  # a stop sequence appeared: nothing more comes out

    def feed(self, data: bytes) -> str:
        if self.stopped:
            return ""
        text = self._held + self._decoder.decode(data)
        hits = [i for i in (text.find(s) for s in self.stop) if i != -1]
        if hits:
            self.stopped, self._held = True, ""
            return text[: min(hits)]
        keep = max((k for s in self.stop for k in range(min(len(s) - 1, len(text)), 0, -1)
                    if text.endswith(s[:k])), default=0)
        self._held = text[len(text) - keep:] if keep else ""
        return text[: len(text) - keep]

    def finish(self) -> str:
        """Text still held for a stop sequence that never came; an incomplete character is dropped."""
        text, self._held = ("" if self.stopped else self._held), ""
        return text
