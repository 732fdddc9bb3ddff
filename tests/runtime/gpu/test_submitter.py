"""Encoders submitted by the worker thread (`Gpu.submit_thread`) keep the queue's order: a write or read made
after a flush lands after the flushed work, however slow the worker is, and a failed submit is raised."""

from __future__ import annotations

import time

import pytest

from bonsai.gpu import device as device_module
from bonsai.gpu.device import Gpu
from bonsai.gpu.submitter import Submitter


class SlowSubmitter(Submitter):
    """Submits each encoder 50 ms late: the recording thread is far ahead of the worker."""

    def __init__(self, submit):
        def slow(encoder):
            time.sleep(0.05)
            submit(encoder)

        super().__init__(slow)


def _fresh(gpu, monkeypatch) -> Gpu:
    """A Gpu on the session's device whose worker is slow (its own, made at its first flush)."""
    monkeypatch.setattr(device_module, "Submitter", SlowSubmitter)
    g = Gpu(gpu.device, gpu.adapter)
    g.submit_thread = True
    return g


def _copy_then_write(g: Gpu) -> tuple[bytes, bytes]:
    """Copy a -> b, flush, then write a new value into a: b must hold the value a had before the write."""
    a, b = g.upload(b"\1\0\0\0"), g.buffer(16)
    g.copy(a, 0, b, 0, 4)
    g.flush()
    g.write(a, b"\2\0\0\0")
    return g.read(b, 4), g.read(a, 4)


def test_a_write_after_a_flush_lands_after_the_flushed_work(gpu, monkeypatch):
    g = _fresh(gpu, monkeypatch)
    assert _copy_then_write(g) == (b"\1\0\0\0", b"\2\0\0\0")
    assert g._submitter is not None and g._submitter.busy_s > 0  # the worker did submit


def test_a_write_that_does_not_wait_for_the_worker_is_caught(gpu, monkeypatch):
    """Mutation: the queue write without draining the worker first lands before the flushed copy."""
    g = _fresh(gpu, monkeypatch)
    monkeypatch.setattr(Gpu, "_queue_write", lambda self, buf, off, view: self.queue.write_buffer(buf, off, view))
    assert _copy_then_write(g)[0] == b"\2\0\0\0"


def test_in_place_submits_give_the_same_order(gpu):
    g = Gpu(gpu.device, gpu.adapter)  # submit_thread off: the default
    assert _copy_then_write(g) == (b"\1\0\0\0", b"\2\0\0\0") and g._submitter is None


def test_a_failed_submit_is_raised_by_the_next_read(gpu, monkeypatch):
    class Lost(RuntimeError):
        pass

    class Failing(Submitter):
        def __init__(self, submit):
            def fail(encoder):
                raise Lost("submit failed")

            super().__init__(fail)

    monkeypatch.setattr(device_module, "Submitter", Failing)
    g = Gpu(gpu.device, gpu.adapter)
    g.submit_thread = True
    b = g.buffer(16)
    g.copy(g.upload(b"\1\0\0\0"), 0, b, 0, 4)
    g.flush()
    with pytest.raises(Lost):
        g.read(b, 4)
