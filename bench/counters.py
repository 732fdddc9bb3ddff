"""What decode_bench.py counts per token: queue submits, writes and reads, compute passes, and the Python
cost of recording one dispatch."""

from __future__ import annotations

import time


class CountingQueue:
    """Wraps the device queue to count submits, writes and reads (the host round-trips per token).

    `Gpu.read` records its copy into the kept readback buffer in the open encoder and submits it with
    the step's work (a read is counted by `count_reads`); wgpu-py's `read_buffer` only for huge reads."""

    def __init__(self, queue):
        self._q, self.submits, self.writes, self.reads = queue, 0, 0, 0

    def submit(self, *a, **k):
        self.submits += 1
        return self._q.submit(*a, **k)

    def write_buffer(self, *a, **k):
        self.writes += 1
        return self._q.write_buffer(*a, **k)

    def read_buffer(self, *a, **k):
        self.reads += 1
        return self._q.read_buffer(*a, **k)

    def __getattr__(self, name):
        return getattr(self._q, name)


def count_reads(gpu, queue: CountingQueue) -> None:
    """Count `Gpu.read`s (and `wait`s: they go through the kept readback buffer), `read_soon`s, `read_queued`s and
    `read_gathered`s as reads."""
    for name in ("_read_after_recorded", "read_soon", "read_queued", "read_gathered"):
        real = getattr(gpu, name)

        def counted(*a, _real=real, **k):
            queue.reads += 1
            return _real(*a, **k)

        setattr(gpu, name, counted)


def count_passes(gpu):
    """Count compute passes ended (a pass ends at a submit or at a buffer copy)."""
    box = [0]
    real = gpu._end_pass

    def counted():
        if gpu._pass is not None:
            box[0] += 1
        real()

    gpu._end_pass = counted
    return box


def dispatch_cost_us(gpu, n=2000):
    """Python-side cost of recording one dispatch in a shared pass (cached pipeline and bind group)."""
    import numpy as np

    k = gpu.kernel("bonsai.kv.attention", "finalize.wgsl", HEAD_DIM=64, FOLDS=1)
    prm = gpu.upload(np.array([0, 0, 1, 1, 0, 0, 0, 0], np.uint32))  # n_q * n_heads = 0: no work
    st, out = gpu.buffer(1024), gpu.buffer(1024)
    gpu.dispatch(k, [prm, st, out], 1)
    gpu.wait()
    t0 = time.perf_counter()
    for _ in range(n):
        gpu.dispatch(k, [prm, st, out], 1)
    dt = time.perf_counter() - t0
    gpu.wait()
    gpu.dispatch_count -= n + 1
    return dt / n * 1e6
