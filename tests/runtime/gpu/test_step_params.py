"""Step parameters (gpu/params.py): a step's words reach its own dispatches, never a neighbour's, with one write
a step and no submit of its own."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.engine.native import load_engine
from bonsai.gpu import params
from bonsai.gpu.params import ParamCache, StepParams
from bonsai.kv.store.scatter import Scatter
from tests.helpers.synthetic import write_tiny_gguf

ROLE = "dst"


def _copies(gpu, steps: list[tuple[int, int]], *, dispatch_first: bool = False) -> tuple[np.ndarray, StepParams]:
    """Steps at positions 0, 1, ..., each copying src word `word` to the dst word `at` its step parameter names,
    recorded back to back with no flush between them; dst read back at the end. dispatch_first: from the third
    step on, each first copies src word 7 to where its set's slot points before the step rewrites it (a
    dispatch before the step's deferred write, which must then submit first)."""
    step = StepParams(gpu)
    scatter = Scatter(gpu, ParamCache(gpu), step)
    src = gpu.upload(np.arange(100, 108, dtype=np.uint32))
    dst = gpu.upload(np.zeros(16, np.uint32))
    gpu.flush()
    for pos, (word, at) in enumerate(steps):
        step.begin_step(pos)
        if dispatch_first and pos >= params.SETS:
            slot = step.get((ROLE,), *step_words(step))  # the slot as it stands: nothing rewritten
            scatter._dispatch(src, 7, 1, 0, 0, dst, slot)
        with step.deferred():
            scatter.dst_words(at, 0, role=ROLE)
        scatter.record(src, word, 1, 0, 0, dst, at, 0, role=ROLE)
    return np.frombuffer(gpu.read(dst), np.uint32), step


def step_words(step: StepParams) -> tuple[int, ...]:
    """The words the current set's ROLE slot holds."""
    held = step._roles[((ROLE,), step.current)][2]
    return tuple(np.frombuffer(held, np.uint32).tolist())


def test_each_step_copies_to_its_own_destination_without_a_submit_of_its_own(gpu):
    out, step = _copies(gpu, [(0, 1), (1, 3), (2, 5), (3, 9)])
    assert list(out[[1, 3, 5, 9]]) == [100, 101, 102, 103] and np.count_nonzero(out) == 4
    # steps 2 and 3 rewrote their set's slot; neither write submitted the pass (steps 0 and 1 made new slots)
    assert step.rewrites == 2 and step.unsubmitted_writes == 2


def test_a_set_whose_last_step_is_still_in_the_pass_is_submitted_first(gpu):
    """Step 2 takes step 0's set while step 0 waits in the open pass (nothing submitted since): begin_step
    submits it before the write. Mutation: without that submit, step 0's copy reads step 2's destination."""
    out, _ = _copies(gpu, [(0, 1), (1, 3), (2, 5)])
    assert list(out[[1, 3, 5]]) == [100, 101, 102]

    def no_submit(self, pos):  # begin_step less its flush
        self._left_at[self.current] = self.gpu.submits
        self.current, self._step_dispatches = pos % params.SETS, self.gpu.dispatch_count

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(StepParams, "begin_step", no_submit)
        out, _ = _copies(gpu, [(0, 1), (1, 3), (2, 5)])
    assert out[1] == 0 and out[5] in (100, 102)  # step 0's copy landed on step 2's word


def test_a_write_after_the_steps_own_dispatch_submits_first(gpu):
    """A dispatch of the step binds its slot before the step's deferred write: the write must follow it.
    Mutation: every deferred write unsubmitted; the dispatch before it reads the new destination."""
    out, _ = _copies(gpu, [(0, 1), (1, 3), (2, 5)], dispatch_first=True)
    assert out[1] == 107 and out[3] == 101 and out[5] == 102  # step 2's first copy to set 0's old word 1
    real = StepParams._write
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(StepParams, "_write", lambda self, arena, submit: real(self, arena, False))
        out, _ = _copies(gpu, [(0, 1), (1, 3), (2, 5)], dispatch_first=True)
    assert out[1] == 100 and out[5] == 102  # step 2's first copy went to word 5, not 1


def test_a_dispatch_inside_a_deferral_is_refused(gpu):
    step = StepParams(gpu)
    scatter = Scatter(gpu, ParamCache(gpu), step)
    src, dst = gpu.buffer(64), gpu.buffer(64)
    step.begin_step(0)
    with pytest.raises(RuntimeError, match="a dispatch was recorded while step parameters waited"):
        with step.deferred():
            scatter.dst_words(1, 0, role=ROLE)
            scatter.record(src, 0, 1, 0, 0, dst, 1, 0, role=ROLE)
    gpu.flush()


def test_gpu_resident_decode_steps_write_once_each_and_submit_every_second_step(gpu, tmp_path, monkeypatch):
    """Replayed GPU-resident steps: each step's parameters (KV, RoPE rows, argmax slot) in one queue write that
    submits nothing; a step submits nothing of its own (`GpuModel.submit_every` 0), and a submit comes when a step
    takes back the set of slots the step two before it bound, still in the open pass: every second step. The
    tokens are those of one step per readback (tests/runtime/engine/test_resident.py proves that bit for bit)."""
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", dim=128, n_heads=2, n_kv_heads=1,
                           head_dim=64, ffn_dim=256, n_layers=4)
    engine = load_engine(path, gpu=gpu, kv="f32", window=64, max_positions=128, progress=False)
    engine.cache.variant = "blocks"
    engine.prefill_argmax([3, 1, 4, 1, 5, 9])
    engine._steps_on_gpu(2, 16, lambda j: None)  # records the tapes
    counts = {"writes": 0, "submits": 0}
    for name, key in (("_queue_write", "writes"), ("_submit", "submits")):
        real = getattr(type(gpu), name)
        monkeypatch.setattr(type(gpu), name, lambda self, *a, _r=real, _k=key: counts.__setitem__(_k, counts[_k] + 1)
                            or _r(self, *a))
    replays = engine.model.replays
    engine._steps_on_gpu(7, 16, lambda j: None)
    assert engine.model.replays - replays == 16
    # + the block's first id (one write) and its readback (one submit)
    assert engine.model.submit_every == 0 and counts == {"writes": 16 + 1, "submits": 16 // 2 + 1}
