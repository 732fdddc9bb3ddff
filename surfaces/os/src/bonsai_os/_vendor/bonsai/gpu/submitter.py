"""One worker thread that finishes and submits command encoders in order, beside the thread recording the next.

wgpu-core encodes a command buffer's recorded passes when it is finished and tracks its resources when it is
submitted: on the H200 that is ~0.5-0.7 ms of a decode token's ~1.8 ms of host time, all of it in wgpu-native
with the GIL released (cffi releases it around C calls). Handing `finish` and `submit` to this thread lets
Python record the next layers meanwhile; measured, decode ran no faster than with submits in place (the GPU's
step bounds it: bench/NOTES.md, session 15), so `Gpu.submit_thread` is off by default.

Order is kept: encoders are submitted one at a time in the order given. Anything else that reaches the
queue (a buffer or texture write, a map that waits for submitted work) must first `drain`, so it lands after
every encoder handed over before it, as it would with submits made in place. A failed submit (a lost device)
is raised by the next `drain` or `put`, once; later encoders are dropped until then.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any


class Submitter:
    """`put(encoder)` queues it for `submit(encoder)` on the worker thread; `drain()` waits until all are done."""

    def __init__(self, submit: Callable[[Any], None]) -> None:
        self._submit = submit
        self._queue: queue.Queue[Any] = queue.Queue()
        self._error: BaseException | None = None
        self.busy_s = 0.0  # seconds the worker spent submitting (benchmarks read it)
        self._thread = threading.Thread(target=self._run, name="bonsai-submit", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import time

        while True:
            encoder = self._queue.get()
            try:
                if encoder is None:
                    return
                if self._error is None:
                    t0 = time.perf_counter()
                    self._submit(encoder)
                    self.busy_s += time.perf_counter() - t0
            except BaseException as exc:  # noqa: BLE001 - handed to the recording thread, raised there
                self._error = exc
            finally:
                self._queue.task_done()

    def put(self, encoder: Any) -> None:
        self._raise()
        self._queue.put(encoder)

    def drain(self) -> None:
        """Return once every encoder put so far is submitted (raise a failed submit's error)."""
        self._queue.join()
        self._raise()

    def _raise(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def stop(self) -> None:
        """End the thread once what is queued is submitted (does not wait)."""
        self._queue.put(None)
