"""Device loss: destroying the device mid-generation is detected and recovered with identical tokens."""

from __future__ import annotations

import sys

import pytest

from bonsai.engine.native import load_engine
from bonsai.kv import KVError
from tests.helpers.device_loss import clean_and_lost
from tests.helpers.synthetic import write_tiny_gguf

PROMPT = [5, 17, 42, 9, 33, 2]  # token ids of the tiny synthetic model (random weights, a real forward pass)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A small llama GGUF: recovery is about the device, not the weights, so no 135M-parameter upload."""
    return write_tiny_gguf(tmp_path_factory.mktemp("tiny") / "t.gguf", "llama", dim=128, n_heads=2, n_kv_heads=1,
                           head_dim=64, ffn_dim=256)


def test_destroyed_device_mid_generation_gives_the_same_tokens(tiny):
    engine = load_engine(tiny, kv="q4", window=8, progress=False)  # its own device: this test kills it
    clean, lost = clean_and_lost(engine, PROMPT, max_tokens=8, lose_at=3)
    assert lost.tokens == clean.tokens and len(clean.tokens) == 8
    print(f"recovery took {lost.recoveries[0]:.2f}s", file=sys.stderr)


def test_a_failure_that_is_not_device_loss_is_raised_not_recovered(gpu, tiny):
    engine = load_engine(tiny, gpu=gpu, kv="f32", max_positions=4, progress=False)
    with pytest.raises(KVError, match="outside the cache"):
        engine.forward([1, 2, 3, 4, 5])
    assert engine.recoveries == [] and engine.gpu is gpu


def test_a_loss_reported_only_through_the_wgpu_logger_triggers_recovery(gpu, tiny):
    import logging

    engine = load_engine(tiny, gpu=gpu, kv="f32", progress=False)
    prompt = PROMPT
    clean = engine.generate(prompt, max_tokens=4, stop_ids=set())
    engine.reset()

    def log_loss(step):
        if step == 1:
            logging.getLogger("wgpu").error("Device lost: simulated by the test")

    logged = engine.generate(prompt, max_tokens=4, on_step=log_loss, stop_ids=set())
    assert len(logged.recoveries) == 1 and logged.tokens == clean.tokens and len(clean.tokens) == 4


class _Backend:
    """A GPU backend class of its own (delegating to the shared test device) that counts `create()` calls."""

    created = 0
    shared = None

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @classmethod
    def create(cls):
        cls.created += 1
        return cls(cls.shared)


def test_recovery_opens_the_new_device_through_the_engines_own_backend_class(gpu, tiny):
    from bonsai.config import ModelConfig
    from bonsai.engine import Engine
    from bonsai.gguf import GGUFReader

    reader = GGUFReader(tiny)
    _Backend.shared, _Backend.created = gpu, 0
    engine = Engine(reader, ModelConfig.from_gguf(reader), _Backend(gpu), kv="f32", window=4, progress=False)
    before = bytes(engine.forward([5, 6, 7]))
    engine.recover()  # the same backend class, never the native one: the browser engine recovers in the browser
    assert _Backend.created == 1 and type(engine.gpu) is _Backend and engine.gpu is not gpu
    engine.reset()
    assert bytes(engine.forward([5, 6, 7])) == before
