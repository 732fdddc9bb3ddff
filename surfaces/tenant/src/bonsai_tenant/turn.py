"""One turn's events from a worker thread to the consumer, and a cancel that works from any thread.

The worker starts on the first `next()`; `cancel()` (a client gone, a time limit) makes the worker's
`cancelled()` true, so the decode loop stops at its next check, and ends the iteration.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .events import Event

_END = object()


class Turn(Iterator[Event]):
    """Iterate for the events; `cancel()` stops the work. The worker gets `emit` and `cancelled`."""

    def __init__(self, work: Callable[[Callable[[Event], None], Callable[[], bool]], None]) -> None:
        self._work = work
        self._out: queue.Queue[Any] = queue.Queue()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()
        self.finished = threading.Event()  # set once no worker runs (never started, or returned)
        # what the turn costs: the prompt's tokens (known before it runs), then the tokens the work
        # processed and generated (the work sets them; final once `finished` is set)
        self.prompt_size: int | None = None
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def cancel(self) -> None:
        """Stop generating as soon as the worker checks (between prefill batches and tokens)."""
        with self._start:
            self._cancel.set()
            if self._thread is None:
                self.finished.set()
        self._out.put(_END)

    close = cancel

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _run(self) -> None:
        try:
            self._work(self._out.put, self._cancel.is_set)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            self._out.put(exc)
        finally:
            self._out.put(_END)
            self.finished.set()

    def __next__(self) -> Event:
        with self._start:
            if self._thread is None:
                if self._cancel.is_set():
                    raise StopIteration
                self._thread = threading.Thread(target=self._run, name="bonsai-turn", daemon=True)
                self._thread.start()
        item = self._out.get()
        if item is _END:
            self._out.put(_END)  # every later next() ends too
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        return item
