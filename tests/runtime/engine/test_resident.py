"""The GPU-resident decode loop: blocks of greedy steps with one readback give the tokens, positions and
host master of one readback per step, stop exactly where it stops, and catch their injected bugs."""

from __future__ import annotations

import pytest

import bonsai.kv.cache as cache_module
from bonsai.engine.forward import GpuModel
from bonsai.engine.native import load_engine
from bonsai.engine.resident import ResidentBlocks
from bonsai.gpu.backend import PendingRead
from bonsai.kv.errors import KVError, NonFiniteKVError
from bonsai.kv.handover import Handover
from bonsai.kv.master import HostMaster
from tests.helpers.device_loss import clean_and_lost
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256, tied=False)  # untied: varied ids
PROMPT = [3, 1, 4, 1, 5, 9]


@pytest.fixture(params=["f32", "q4res"])
def engine(request, gpu, tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    return load_engine(path, gpu=gpu, kv=request.param, window=64, max_positions=128, progress=False)


def _run(engine, steps: int, max_tokens: int = 70, ahead: int = 0, **kw):
    """Tokens, position, fed ids and host master of one generation with `steps` steps per readback (and
    `ahead` blocks recorded before the last one is read)."""
    engine.reset()
    for host in engine.cache.master.layers:  # a blank master, so rows missing from it show
        host[:] = bytes(len(host))
    engine.resident_steps, engine.blocks_ahead = steps, ahead
    gen = engine.generate(PROMPT, max_tokens=max_tokens, stop_ids=kw.pop("stop_ids", set()), **kw)
    engine.cache.sync_host()
    return gen.tokens, engine.pos, list(engine.fed), b"".join(bytes(h) for h in engine.cache.master.layers)


def _mid_block_stop(tokens: list[int]) -> int:
    """A token first decoded strictly inside the first block (index 2..15: ids were decoded past it)."""
    return next(t for i, t in enumerate(tokens) if 2 <= i < 16 and t not in tokens[:i])


def test_blocks_of_steps_equal_one_step_per_readback(engine):
    one = _run(engine, 1)
    blocks = _run(engine, 16)
    assert blocks == one and len(one[0]) == 70 and one[3].count(0) < len(one[3])


def test_a_stop_token_inside_a_block_rewinds_to_the_same_position(engine):
    full = _run(engine, 1)[0]
    stop = _mid_block_stop(full)
    first = full.index(stop)
    one = _run(engine, 1, stop_ids={stop})
    blocks = _run(engine, 16, stop_ids={stop})
    assert blocks[:3] == one[:3] and len(one[0]) == first
    # the positions decoded past the stop were forgotten: continuing gives the tokens it gives after
    # a run that never computed them
    after_blocks = engine.generate([stop], max_tokens=8, stop_ids=set()).tokens
    _run(engine, 1, stop_ids={stop})
    assert engine.generate([stop], max_tokens=8, stop_ids=set()).tokens == after_blocks


def test_a_rewind_that_forgets_the_steps_decoded_ahead_is_caught(engine, monkeypatch):
    """Mutation: stopping inside a block without rewinding leaves the positions decoded past the stop."""
    stop = _mid_block_stop(_run(engine, 1)[0])
    one = _run(engine, 1, stop_ids={stop})
    real = type(engine).rewind
    monkeypatch.setattr(type(engine), "rewind", lambda self, pos: real(self, pos) if pos == 0 else None)
    assert _run(engine, 16, stop_ids={stop})[1] != one[1]


def test_a_step_that_embeds_the_host_id_instead_of_the_gpu_id_is_caught(engine, monkeypatch):
    """Mutation: the resident steps embed act.ids (the block's first id) instead of the last argmax."""
    one = _run(engine, 1)
    real = GpuModel._record_dispatches
    monkeypatch.setattr(GpuModel, "_record_dispatches",
                        lambda self, pos, t, all_logits, from_token, **kw: real(self, pos, t, all_logits, False, **kw))
    engine.model.forget_tapes()
    assert _run(engine, 16)[0] != one[0]


def test_a_park_that_drops_the_rows_is_caught(engine, monkeypatch):
    """Mutation: parking that empties staging without copying the rows leaves the host master behind."""
    one = _run(engine, 1)
    monkeypatch.setattr(Handover, "park", lambda self: self.parked.append((self.staging.take()[0], self.rows_at)))
    assert _run(engine, 16)[3] != one[3]


def _handover_bytes_read(engine, monkeypatch) -> tuple[int, int]:
    """(bytes the handover's readbacks read in a 70-token run of 16-step blocks, the bound they must keep):
    the flag slots, one position's stored rows per layer per parked step, every group the run quantised
    and the tokens; not each step's worst-case room."""
    read = []

    def spy(real):
        def spied(self, also):
            real_read, real_soon = self.gpu.read_with, self.gpu.read_queued  # every read goes through them
            self.gpu.read_with = lambda buf, n, use, off=0: read.append(n) or real_read(buf, n, use, off)
            self.gpu.read_queued = lambda buf, n, off=0: read.append(n) or real_soon(buf, n, off)
            try:
                return real(self, also)
            finally:
                del self.gpu.read_with, self.gpu.read_queued
        return spied

    monkeypatch.setattr(Handover, "readback", spy(Handover.readback))
    monkeypatch.setattr(Handover, "start_readback", spy(Handover.start_readback))
    _run(engine, 16)
    lay = engine.cache.layout
    hand = engine.cache._handover
    steps = 70 - 1  # the first token comes from the prefill
    groups = (len(PROMPT) + steps) // lay.group if lay.mode.grouped else 0
    rows = steps * lay.n_layers * (lay.stored_k_words + lay.stored_v_words) + groups * lay.group * lay.n_layers * lay.group_words
    bound = 4 * (len(read) * hand.rows_at + rows) + len(read) * 256
    return sum(read), bound


def test_a_handover_reads_the_parked_rows_not_each_steps_room(engine, monkeypatch):
    got, bound = _handover_bytes_read(engine, monkeypatch)
    assert 0 < got <= bound, (got, bound)


def test_a_handover_that_pads_every_step_to_its_room_is_caught(engine, monkeypatch):
    """Mutation: the old layout (every step parked at a worst-case stride) reads far more; q4res's room
    holds a whole quantised group per step."""
    real = Handover.park

    def padded(self):
        real(self)
        self.rows_used = len(self.parked) * self.rows_max

    monkeypatch.setattr(Handover, "park", padded)
    got, bound = _handover_bytes_read(engine, monkeypatch)
    if engine.cache.layout.mode.grouped:
        assert got > bound, (got, bound)
    else:  # f32 has no group: its room is one position's rows, as before
        assert got <= bound


def test_a_blocks_rows_reach_the_master_in_a_few_copies(engine, monkeypatch):
    """A 16-step block's one-position entries are joined per layer (`staging.coalesce`) before they are
    committed: the master takes one copy per layer, kind and block, not one per step."""
    puts = []
    real = HostMaster.put
    monkeypatch.setattr(HostMaster, "put", lambda self, *a: puts.append(a[:3]) or real(self, *a))
    _run(engine, 16, max_tokens=40)
    lay = engine.cache.layout
    block_puts = [p for p in puts if p[2] >= len(PROMPT)]
    if lay.mode.grouped:  # q4res keeps the newest group's rows in the host residual: no master put at all
        assert not block_puts
    else:
        blocks = sorted({p[2] for p in block_puts})
        assert len(blocks) == 3 and len(block_puts) == 2 * lay.n_layers * len(blocks), block_puts


def _residual(eng) -> bytes:
    r = eng.cache.residual
    return b"".join(bytes(b) for b in [*r.host_k, *r.host_v])


def test_rows_joined_across_a_group_entry_are_caught(gpu, tmp_path, monkeypatch):
    """Mutation: joining a layer's rows across the group entry its 64th position booked (the groups left for
    last) commits the next group's rows into q4res's host residual before the full group moves it on: the
    residual no longer holds the newest group's rows."""
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    eng = load_engine(path, gpu=gpu, kv="q4res", window=64, max_positions=128, progress=False)
    one, res_one = _run(eng, 1), _residual(eng)
    assert _run(eng, 16) == one and _residual(eng) == res_one and res_one.count(0) < len(res_one)
    real = cache_module.coalesce
    monkeypatch.setattr(cache_module, "coalesce",
                        lambda rows: real([r for r in rows if not r[0].group] + [r for r in rows if r[0].group]))
    try:
        bad = _run(eng, 16), _residual(eng)
    except KVError:  # the residual saw its rows out of order
        return
    assert bad != (one, res_one)


# ---- a block recorded ahead: the next block runs while the last one is read back ---------------------

@pytest.mark.parametrize("steps, max_tokens", [(16, 70), (8, 40), (16, 17)])
def test_blocks_recorded_ahead_equal_one_step_per_readback(engine, steps, max_tokens):
    host = (lambda: _residual(engine)) if engine.cache.layout.mode.grouped else (lambda: b"")
    one = _run(engine, 1, max_tokens=max_tokens), host()
    ahead = _run(engine, steps, max_tokens=max_tokens, ahead=1), host()
    rows = one[0][3] + one[1]  # the master, and (q4res) the host residual: the newest group's rows
    assert ahead == one and len(one[0][0]) == max_tokens and rows.count(0) < len(rows)


def test_a_stop_with_a_block_in_flight_rewinds_to_the_same_position(engine):
    """A stop inside the first block: the block recorded ahead of it is committed and rewound too, and
    what follows is what follows a run that never decoded past the stop."""
    stop = _mid_block_stop(_run(engine, 1)[0])
    one = _run(engine, 1, stop_ids={stop})
    ahead = _run(engine, 16, ahead=1, stop_ids={stop})
    assert ahead[:3] == one[:3]
    after_ahead = engine.generate([stop], max_tokens=8, stop_ids=set()).tokens
    _run(engine, 1, stop_ids={stop})
    assert engine.generate([stop], max_tokens=8, stop_ids=set()).tokens == after_ahead


def test_a_read_that_waits_until_the_next_block_is_recorded_is_caught(engine, monkeypatch):
    """Mutation: a `read_queued` that copies only when its result is asked for reads the buffers after the
    block recorded ahead has overwritten them (its ids, its parked rows)."""
    one = _run(engine, 1)
    gpu = engine.gpu
    monkeypatch.setattr(gpu, "read_queued", lambda buf, n, off=0: PendingRead(lambda use: use(
        memoryview(gpu.read(buf, n, off)))), raising=False)
    assert _run(engine, 16, ahead=1) != one


def test_a_block_ahead_that_embeds_the_host_id_is_caught(engine, monkeypatch):
    """Mutation: the block recorded ahead writes the host's last known id (the block before's input) into
    the GPU token instead of leaving the last argmax there."""
    one = _run(engine, 1)
    real = ResidentBlocks._launch
    seen = []

    def stale(self, tok, index):
        if tok is not None:
            seen.append(tok)
        return real(self, seen[-1] if tok is None and seen else tok, index)

    monkeypatch.setattr(ResidentBlocks, "_launch", stale)
    assert _run(engine, 16, ahead=1)[0] != one[0]


def test_device_loss_with_a_block_in_flight_gives_the_same_tokens(tmp_path):
    """The device dies while the block ahead is recorded (step 20 of 16-step blocks): the block being read
    is lost too; both re-run on a new device from the host master, exact up to the block's start."""
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    eng = load_engine(path, kv="q4res", window=64, max_positions=128, progress=False, blocks_ahead=1)
    clean, lost = clean_and_lost(eng, PROMPT, max_tokens=50, lose_at=20)
    assert lost.tokens == clean.tokens and len(clean.tokens) == 50


def test_blocks_ahead_defaults_to_none_on_a_cpu_adapter_and_checks_its_value(gpu, tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    eng = load_engine(path, gpu=gpu, kv="f32", window=64, max_positions=128, progress=False)
    assert eng.blocks_ahead == (0 if gpu.is_cpu else 1)
    with pytest.raises(ValueError, match="blocks_ahead must be 0 or 1"):
        load_engine(path, gpu=gpu, kv="f32", window=64, max_positions=128, progress=False, blocks_ahead=2)


def test_refused_rows_with_a_block_in_flight_leave_the_engine_usable(engine, monkeypatch):
    """The third block's rows are refused (NonFiniteKVError) while the fourth is in flight: generate raises,
    nothing of either block reaches the master, positions end where the master does, and the next run
    gives the tokens of a run that never failed."""
    one = _run(engine, 1)
    real = Handover._rows
    calls = []

    def refuse_third(self, parked, raw, also):  # one call per block read back
        calls.append(1)
        if len(calls) == 3:
            raise NonFiniteKVError("layer 0 position 40 K head 0: injected by the test")
        return real(self, parked, raw, also)

    monkeypatch.setattr(Handover, "_rows", refuse_third)
    with pytest.raises(NonFiniteKVError, match="injected"):
        _run(engine, 16, ahead=1)
    assert engine.cache._in_flight == [] and engine.pos == len(engine.fed) == len(PROMPT) + 2 * 16
    assert min(engine.cache.length) >= engine.pos or engine.cache.layout.mode.grouped
    monkeypatch.setattr(Handover, "_rows", real)
    assert _run(engine, 16, ahead=1) == one


def test_a_failed_sync_left_in_flight_is_caught(engine, monkeypatch):
    """Mutation: a sync whose rows were refused stays first in flight (and the one after it too): every later
    sync tries it again and the engine is stuck."""
    real = Handover._rows
    calls = []

    def refuse_third(self, parked, raw, also):
        calls.append(1)
        if len(calls) == 3:
            raise NonFiniteKVError("injected by the test")
        return real(self, parked, raw, also)

    def keep_failed(self, upto):
        while self._in_flight:
            sync = self._in_flight[0]
            rows, sync.extra = sync.take()
            del self._in_flight[0]
            self._commit(rows)
            if sync is upto:
                return

    monkeypatch.setattr(Handover, "_rows", refuse_third)
    monkeypatch.setattr(cache_module.KVCache, "_finish_in_flight", keep_failed)
    with pytest.raises(NonFiniteKVError):
        _run(engine, 16, ahead=1)
    monkeypatch.setattr(Handover, "_rows", real)
    with pytest.raises(RuntimeError, match="already taken"):
        _run(engine, 16, ahead=1)
