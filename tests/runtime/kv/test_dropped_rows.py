"""A q4res batch leaves on the GPU the f32 rows of the groups it completes (`Entry.skip`): the host master and
residual end as when every row is read back and dropped there, and a sync reads only what the host keeps."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.diagnostics.numpy_cache import NumpyKVCache as KVCache
from bonsai.kv import append
from bonsai.kv.errors import KVError
from bonsai.kv.staging import Entry

LAYERS, N_KV, HD = 3, 2, 64
# [0, 20) completes no group; [20, 64) completes the residual's group at its last row (nothing kept); [64, 214)
# completes two groups inside it, one per window, and keeps 22 rows; [214, 256) completes the residual's group
BATCHES = (20, 44, 150, 42)


def _rows(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    k, v = (rng.standard_normal((2, LAYERS, sum(BATCHES), N_KV, HD)) * 2).astype(np.float32)
    return k, v


def _filled(gpu, mode: str, ahead: bool, seed: int = 1, reads: list[int] | None = None) -> list[tuple]:
    """The host after each of BATCHES, synced (`ahead`: a read ahead before every layer after the first): (master
    bytes, lengths, residual starts and rows) each; `reads` gets the bytes of every read staging starts, per sync."""
    k, v = _rows(seed)
    cache = KVCache(gpu, LAYERS, N_KV, HD, 256, mode=mode, window=64)
    pos, states = 0, []
    for n in BATCHES:
        for layer in range(LAYERS):
            if ahead and layer:
                cache.read_ahead()
            cache.append(layer, gpu.upload(k[layer, pos: pos + n]), gpu.upload(v[layer, pos: pos + n]), pos, n)
        if reads is not None:
            reads.append(0)
        cache.sync_host()
        pos += n
        res = cache.residual
        states.append((b"".join(bytes(h) for h in cache.master.layers), list(cache.length), list(res.host_start),
                       [bytes(b) for b in res.host_k + res.host_v]))
    return states


def _spy_reads(gpu, monkeypatch) -> list[int]:
    """Bytes read by staging, summed per sync (`_filled` opens each sync's count)."""
    reads: list[int] = []

    def counted(name, size):
        real = getattr(gpu, name)

        def read(buf, *a):
            if reads:
                reads[-1] += size(*a)
            return real(buf, *a)
        monkeypatch.setattr(gpu, name, read)

    counted("read_queued", lambda n, off=0: n)
    counted("read_with", lambda n, use, off=0: n)
    counted("read_gathered", lambda spans: sum(n for _, n in spans))
    return reads


@pytest.mark.parametrize("ahead", [False, True])
def test_rows_left_on_the_gpu_leave_the_host_as_rows_read_and_dropped(gpu, ahead, monkeypatch):
    monkeypatch.setattr(append, "DROP_QUANTISED_ROWS", False)
    every = _filled(gpu, "q4res", ahead)
    monkeypatch.setattr(append, "DROP_QUANTISED_ROWS", True)
    dropped = _filled(gpu, "q4res", ahead)
    assert dropped == every and every[-1][1] == [sum(BATCHES)] * LAYERS


def test_a_sync_reads_the_groups_flags_and_the_rows_after_them(gpu, monkeypatch):
    from bonsai.kv.format.modes import MODES
    from bonsai.kv.layout import Layout

    lay = Layout(MODES["q4res"], n_layers=LAYERS, n_kv=N_KV, head_dim=HD, max_positions=256, window=64)
    rows, flags, groups = lay.stored_k_words + lay.stored_v_words, 2 * N_KV, lay.group_words
    reads = _spy_reads(gpu, monkeypatch)
    _filled(gpu, "q4res", False, reads=reads)
    kept = [20, 0, 22, 0]  # rows after the last group each batch completes
    completed = [0, 64, 128, 64]
    assert reads == [LAYERS * 4 * (kept[i] * rows + n * flags + completed[i] * groups) for i, n in enumerate(BATCHES)]
    monkeypatch.setattr(append, "DROP_QUANTISED_ROWS", False)
    reads[:] = []
    _filled(gpu, "q4res", False, reads=reads)
    assert reads == [LAYERS * 4 * (n * (rows + flags) + completed[i] * groups) for i, n in enumerate(BATCHES)]


def _caught(gpu, mode: str, ahead: bool, monkeypatch, name: str, mutant) -> bool:
    """Whether, with `mutant` in place of `name` (an (object, attribute) pair), the host ends unlike rows read and dropped there
    (or the sync refuses them)."""
    monkeypatch.setattr(append, "DROP_QUANTISED_ROWS", False)
    clean = _filled(gpu, mode, ahead)
    monkeypatch.setattr(append, "DROP_QUANTISED_ROWS", True)
    monkeypatch.setattr(*name, mutant)
    try:
        return _filled(gpu, mode, ahead) != clean
    except KVError:
        return True


@pytest.mark.parametrize("ahead", [False, True])
def test_a_row_the_host_keeps_left_on_the_gpu_is_caught(gpu, ahead, monkeypatch):
    """Mutation: one row after the last completed group is dropped too."""
    real = append.dropped_rows
    assert _caught(gpu, "q4res", ahead, monkeypatch, (append, "dropped_rows"),
                   lambda lay, pos, runs: real(lay, pos, runs) + bool(runs))


def test_v_rows_dropped_where_the_host_keeps_them_is_caught(gpu, monkeypatch):
    """Mutation: a mode whose V rows reach the host as stored (kc4v4: no V residual) drops them too."""
    assert _caught(gpu, "kc4v4", False, monkeypatch, (append, "dropped_rows"),
                   lambda lay, pos, runs: runs[-1][1] - pos if runs else 0)


@pytest.mark.parametrize("ahead", [False, True])
def test_v_rows_read_from_the_first_position_are_caught(gpu, ahead, monkeypatch):
    """Mutation: the read takes an entry's V rows from its first position, not from the first one kept."""
    real = Entry.spans

    def spans(self):
        got = real(self)
        return got if not self.skip else [got[0], (self.word + self.n * self.k_words, got[1][1] - self.skip * self.v_words)]
    assert _caught(gpu, "q4res", ahead, monkeypatch, (Entry, "spans"), spans)


def test_a_q4res_engine_that_loses_its_device_after_such_a_prompt_gives_the_same_tokens(tmp_path):
    """End to end: a 150-token prompt in batches of 48 (each completing a group: rows left on the GPU, the groups'
    codes gathered), then the device dies mid-decode; the engine rebuilds from the host master and decodes what an
    uninterrupted run did. (The residual's rows are held to the bit by the host-state tests above: a run that
    dropped five rows too many still recovered these tokens.)"""
    from bonsai.engine.native import load_engine
    from tests.helpers.device_loss import clean_and_lost
    from tests.helpers.synthetic import write_tiny_gguf

    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", n_layers=2, dim=128, n_heads=2,
                           n_kv_heads=1, head_dim=64, ffn_dim=256, tied=False)
    eng = load_engine(path, kv="q4res", window=64, max_positions=256, batch=48, progress=False)
    prompt = [(7 * i) % 200 + 3 for i in range(150)]
    gathered = []
    real = eng.gpu.read_gathered
    eng.gpu.read_gathered = lambda buf, spans: gathered.append(spans) or real(buf, spans)
    clean, lost = clean_and_lost(eng, prompt, max_tokens=40, lose_at=12)
    assert gathered  # the prompt's batches left rows on the GPU
    assert lost.tokens == clean.tokens and len(clean.tokens) == 40
