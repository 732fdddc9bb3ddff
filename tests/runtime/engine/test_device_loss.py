"""Device loss: destroying the device mid-generation is detected and recovered with identical tokens."""

from __future__ import annotations

import sys

import pytest

from bonsai.engine import Engine
from bonsai.kv import KVError


def test_destroyed_device_mid_generation_gives_the_same_tokens():
    engine = Engine.load(None, kv="q4", window=8, progress=False)  # its own device: this test kills it
    prompt = engine.tokenizer.encode("The capital of France is")
    clean = engine.generate(prompt, max_tokens=8)
    engine.reset()
    first_gpu = engine.gpu

    def lose_device(step):
        if step == 3:
            engine.gpu.device.destroy()

    lost = engine.generate(prompt, max_tokens=8, on_step=lose_device)
    assert engine.gpu is not first_gpu and len(lost.recoveries) == 1
    assert lost.tokens == clean.tokens and len(clean.tokens) == 8
    print(f"recovery took {lost.recoveries[0]:.2f}s", file=sys.stderr)


def test_a_failure_that_is_not_device_loss_is_raised_not_recovered(gpu):
    engine = Engine.load(None, gpu=gpu, kv="f32", max_positions=4, progress=False)
    with pytest.raises(KVError, match="outside the cache"):
        engine.forward([1, 2, 3, 4, 5])
    assert engine.recoveries == [] and engine.gpu is gpu


def test_a_loss_reported_only_through_the_wgpu_logger_triggers_recovery(gpu):
    import logging

    engine = Engine.load(None, gpu=gpu, kv="f32", progress=False)
    prompt = engine.tokenizer.encode("The capital of France is")
    clean = engine.generate(prompt, max_tokens=4)
    engine.reset()

    def log_loss(step):
        if step == 1:
            logging.getLogger("wgpu").error("Device lost: simulated by the test")

    logged = engine.generate(prompt, max_tokens=4, on_step=log_loss)
    assert len(logged.recoveries) == 1 and logged.tokens == clean.tokens
