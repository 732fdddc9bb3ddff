"""The blocks attention variant (parallel block folds merged in block order) keeps the invariant bit for bit.

Blocks are shrunk to 8 positions so short caches on lavapipe cross many block and window
boundaries (windows ending inside a block carry the open block's fold in the state). Lavapipe binds
32 storage buffers, so the merge runs inside the fold dispatch (blocks.wgsl's fold_merge) unless a test
turns FUSE_MERGE off for the two-dispatch path (merge_blocks.wgsl) adapters with fewer buffers take.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

import bonsai.kv.attention.driver as attention
from bonsai.diagnostics.exactness import check_mutation, matrix, run_matrix
from bonsai.kv.attention.driver import Attention, Mutations, Window
from tests.helpers.shader_patch import patch_shader


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(attention, "BLOCK", 8)


# The merge in the fold's dispatch (fold_merge), or in a dispatch of its own (merge_blocks.wgsl): the
# kernel file each path's merge code is compiled into, for the mutation tests.
MERGE_PATHS = {"fused": "blocks.wgsl", "separate": "merge_blocks.wgsl"}


def _fuse_every_call(monkeypatch) -> None:
    """fold_merge for every call, batches too (the runtime keeps it to decode steps: FUSED_TOKENS)."""
    monkeypatch.setattr(attention, "FUSE_MERGE", True)
    monkeypatch.setattr(attention, "FUSED_TOKENS", 1 << 16)


@pytest.fixture(params=sorted(MERGE_PATHS))
def merge_path(request, monkeypatch):
    if request.param == "fused":
        _fuse_every_call(monkeypatch)
    else:
        monkeypatch.setattr(attention, "FUSE_MERGE", False)
    return request.param


def test_blocks_variant_windowed_equals_whole_bit_for_bit(gpu, merge_path):
    results = run_matrix(gpu, matrix(30, modes=("f32", "q4", "q4r"), prefill=5), [1, 2, 5, 8, 11, 16],
                         variant="blocks")
    assert results and all(r.ok for r in results), [r for r in results if not r.ok][:3]


def test_both_merge_paths_give_the_same_bits(gpu, monkeypatch):
    """fold_merge merges in whichever workgroup finishes last, merge_blocks.wgsl in a dispatch of its own:
    the same operations in the same order, so the same output bits (prefill and decode, windows inside blocks)."""
    rng = np.random.default_rng(7)
    kv_len, n_q = 45, 5
    kv = gpu.upload(rng.standard_normal((kv_len, 4, 64)).astype(np.float32))
    q = gpu.upload(rng.standard_normal((n_q, 8, 64)).astype(np.float32))
    wins = [Window(kv, kv, 0, 13), Window(kv, kv, 13, 30), Window(kv, kv, 30, kv_len)]
    outs = {}
    for path in sorted(MERGE_PATHS):
        if path == "fused":
            _fuse_every_call(monkeypatch)
        else:
            monkeypatch.setattr(attention, "FUSE_MERGE", False)
        att = Attention(gpu, 8, 4, 64, "f32", variant="blocks")
        assert att.fuses_merge == (path == "fused")
        out, state = gpu.buffer(n_q * 8 * 64 * 4), gpu.buffer(att.state_bytes(n_q))
        att.record(q, out, state, kv_len - n_q, n_q, wins)
        outs[path] = np.frombuffer(gpu.read(out), np.uint32)
    assert outs["fused"].any() and np.array_equal(outs["fused"], outs["separate"])


# fold_merge's hand-over: the workgroup that counts the window's last block merges, and resets the count.
@pytest.mark.parametrize(("old", "new"), [
    ("atomicAdd(&part[counter(idx)], 1u) + 1u == window_blocks()", "atomicAdd(&part[counter(idx)], 1u) == 0u"),
    ("if (last) { atomicStore(&part[counter(idx)], 0u); }", "if (last) { }"),
], ids=["the first to finish merges", "the count is never reset"])
def test_a_wrong_hand_over_to_the_merging_workgroup_is_caught(gpu, monkeypatch, old, new):
    _fuse_every_call(monkeypatch)
    patch_shader(monkeypatch, gpu, "blocks.wgsl", old, new)
    results = run_matrix(gpu, matrix(30, modes=("f32",), prefill=5), [1, 8, 11], variant="blocks")
    assert any(not r.ok for r in results)


def test_blocks_variant_every_mode(gpu):
    from bonsai.kv.format.modes import MODES

    results = run_matrix(gpu, matrix(40, modes=tuple(MODES), prefill=3), [1, 7, 31, 33], variant="blocks")
    assert results and all(r.ok for r in results), [r for r in results if not r.ok][:3]


def test_blocks_variant_with_the_runtime_block_size(gpu, monkeypatch):
    monkeypatch.setattr(attention, "BLOCK", 64)
    results = run_matrix(gpu, matrix(150, modes=("q4",), prefill=9), [1, 63, 64, 65, 100], variant="blocks")
    assert results and all(r.ok for r in results), [r for r in results if not r.ok][:3]


# With the runtime's 64-position blocks a full block's V is folded in rounds of sixteen positions (two
# eights loaded before either is folded; fold.wgsl fold_range): f32 V through v8_any, q4res's quantised V
# through v8_quick. Blocks of 8 (the fixture) never reach those rounds.
@pytest.mark.parametrize(("mode", "old", "new"), [
    ("f32", "let vb = v8_any(b + i + 8u, g, j, i + 8u);", "let vb = v8_any(b + i, g, j, i);"),
    ("q4res", "let vb = v8_quick(b + i + 8u, g, j, i + 8u);", "let vb = v8_quick(b + i, g, j, i);"),
], ids=["f32 round of sixteen folds an eight twice", "quantised round of sixteen folds an eight twice"])
def test_a_round_of_sixteen_v_loads_that_mixes_up_positions_is_caught(gpu, monkeypatch, mode, old, new):
    monkeypatch.setattr(attention, "BLOCK", 64)
    cases = matrix(GROUPED["kv_len"], modes=(mode,), head_dims=(64,), prefill=5)
    assert all(r.ok for r in run_matrix(gpu, cases, GROUPED["windows"], variant="blocks"))
    patch_shader(monkeypatch, gpu, "blocks.wgsl", old, new)
    assert any(not r.ok for r in run_matrix(gpu, cases, GROUPED["windows"], variant="blocks"))


# Windows of 100 positions hold 13 blocks of 8; 67 and 20 split them differently (9 and 3 blocks). A
# full block folds its 8 positions in the fold's round of eight loads, an open one in its tail;
# head_dim 64 takes the score's rounds of eight.
UNROLLED = dict(kv_len=100, windows=[100, 67, 20])


def test_blocks_variant_across_the_rounds_of_loads(gpu):
    results = run_matrix(gpu, matrix(UNROLLED["kv_len"], modes=("f32", "q4res"), head_dims=(64,), prefill=6),
                         UNROLLED["windows"], variant="blocks")
    assert results and all(r.ok for r in results), [r.describe() for r in results if not r.ok][:3]


@pytest.mark.parametrize(("mode", "old", "new"), [
    ("f32", "        for (; i < nb; i = i + 1u) { fold_one(", "        for (; i < min(nb, i); i = i + 1u) { fold_one("),
    ("f32", "let v3 = pos_v(pos + 3u, g, j, vs[k + 3u], vm[k + 3u]);",
     "let v3 = pos_v(pos + 2u, g, j, vs[k + 2u], vm[k + 2u]);"),
    ("q4res", "let c3 = vword(base + 3u * st);", "let c3 = vword(base + 2u * st);"),
    ("f32", "    s = s + qb.y * b.y;", "    s = s + qb.y * b.x;"),
    ("kc4v4", "    s = s + qb.y * b.y;", "    s = s + qb.y * b.x;"),
    ("f32", "bitcast<vec4<f32>>(kc4[i + 9u]),", "bitcast<vec4<f32>>(kc4[i + 8u]),"),
    ("kc4v4", "let k5 = k_elem(kb, gb, d + 5u);", "let k5 = k_elem(kb, gb, d + 4u);"),
    ("f32", "q[qb], q[qb + 1u], q[qb + 2u], q[qb + 3u]", "q[qb], q[qb + 1u], q[qb + 1u], q[qb + 3u]"),
], ids=["fold drops the tail", "fold reuses a V row", "quantised fold reuses a V word", "f32 score reuses a K value", "c4 score reuses a K value",
        "f32 score reloads a K vector", "c4 score reloads a K value", "a query vector staged with a value twice"])
def test_a_round_of_loads_that_loses_or_mixes_up_a_value_is_caught(gpu, monkeypatch, mode, old, new):
    patch_shader(monkeypatch, gpu, "blocks.wgsl", old, new)
    results = run_matrix(gpu, matrix(UNROLLED["kv_len"], modes=(mode,), head_dims=(64,), prefill=6),
                         UNROLLED["windows"], variant="blocks")
    assert any(not r.ok for r in results)


# q4res with the runtime's 64-position blocks: each block is one of K's 64-position c4a groups, so the
# fold decodes the group's channel scales once (fold.wgsl K_GROUP_CACHE) and each V row's scale and min
# once (V_ROW_MIN); windows start and end inside blocks, and the newest group is the f32 residual.
GROUPED = dict(kv_len=150, windows=[1, 63, 64, 65, 100])


def _grouped_results(gpu, monkeypatch):
    monkeypatch.setattr(attention, "BLOCK", 64)
    return run_matrix(gpu, matrix(GROUPED["kv_len"], modes=("q4res",), head_dims=(64,), prefill=5),
                      GROUPED["windows"], variant="blocks")


def test_blocks_variant_decodes_grouped_scales_once_per_block(gpu, monkeypatch):
    results = _grouped_results(gpu, monkeypatch)
    assert results and all(r.ok for r in results), [r.describe() for r in results if not r.ok][:3]


@pytest.mark.parametrize(("old", "new"), [
    ("let gb = w.k_off + ((pos - pos % GROUP - w.buf_base)", "let gb = w.k_off + ((pos - pos % GROUP + GROUP - w.buf_base)"),
    ("f32((word >> (sh + 8u)) & K_MASK) * s.z + mn.z,", "f32((word >> (sh + 8u)) & K_MASK) * s.z + mn.w,"),
    ("* vs[k] + vm[k]; }", "* vs[k] + vm[k ^ 1u]; }"),
    ("fold_one(sc[i], pos_v(b + i, g, j, vs[i], vm[i]), m, l, acc);",
     "fold_one(sc[i], pos_v(b + i, g, j, vs[i], vm[i ^ 1u]), m, l, acc);"),
    ("bitcast<vec4<f32>>(rc[i + 9u]),", "bitcast<vec4<f32>>(rc[i + 8u]),"),
    ("fn rword(i: u32) -> u32 { return rc[i / 4u][i % 4u]; }", "fn rword(i: u32) -> u32 { return rc[i / 4u][(i + 1u) % 4u]; }"),
    ("let w5 = kword(kb + 5u);", "let w5 = kword(kb + 4u);"),
    ("h2f(s2 & 0xffffu), h2f(s3 & 0xffffu)", "h2f(s2 & 0xffffu), h2f(s2 & 0xffffu)"),
], ids=["K scales of the next group", "K min of the neighbouring channel", "V min of the neighbouring position",
        "V min of the neighbouring position in a tail", "residual K reloads a vector", "residual V from the next word",
        "K codes reload a word", "a channel's scale staged from its neighbour's"])
def test_grouped_scales_from_the_wrong_place_are_caught(gpu, monkeypatch, old, new):
    patch_shader(monkeypatch, gpu, "blocks.wgsl", old, new)
    assert any(not r.ok for r in _grouped_results(gpu, monkeypatch))


def test_blocks_variant_passes_the_mutation_suite_without_mutations(gpu):
    assert all(r.ok for r in check_mutation(gpu, Mutations(), kv_len=20, prefill=4, variant="blocks"))


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Mutations)])
def test_every_injected_bug_is_caught_in_the_blocks_variant(gpu, name):
    results = check_mutation(gpu, Mutations(**{name: True}), kv_len=20, prefill=4, variant="blocks")
    assert any(not r.ok for r in results)


# Rounds of staged block folds (merge.wgsl): with 8-position blocks a 100-position window holds 13
# blocks (invocations past lavapipe's first 8-wide batch stage some), and 300 positions take two rounds.
@pytest.mark.parametrize(("old", "new", "kv_len", "windows"), [
    ("        workgroupBarrier();\n        for (var i = 0u; i < cnt;", "        for (var i = 0u; i < cnt;", 100, [100, 67]),
    ("        workgroupBarrier();  // every invocation has merged this round", "        //", 300, [300, 131]),
], ids=["merge before the round's folds are staged", "next round staged while this one merges"])
def test_a_racy_merge_is_caught(gpu, monkeypatch, merge_path, old, new, kv_len, windows):
    """Mutation: without a barrier around the staged round of block folds, lavapipe's 8-wide SIMD lets
    some invocations merge values other invocations have not written yet (or have overwritten): the
    windowed runs no longer match. (The rounds' barriers also order every invocation's reading of
    MAIN's (m, l) before invocation 0 rewrites it.)"""
    cases = matrix(kv_len, modes=("f32",), head_dims=(64,), prefill=1)
    assert all(r.ok for r in run_matrix(gpu, cases, windows, variant="blocks"))
    patch_shader(monkeypatch, gpu, MERGE_PATHS[merge_path], old, new)
    results = run_matrix(gpu, cases, windows, variant="blocks")
    assert any(not r.ok for r in results)


@pytest.mark.parametrize(("old", "new"), [
    ("let a15 = part_f32(block_fold(idx, r0 + k + 15u) + ACC_AT + j);",
     "let a15 = part_f32(block_fold(idx, r0 + k + 14u) + ACC_AT + j);"),
    ("let a7 = part_f32(block_fold(idx, r0 + k + 7u) + ACC_AT + j);\n            ba_s",
     "let a7 = part_f32(block_fold(idx, r0 + k + 6u) + ACC_AT + j);\n            ba_s"),
], ids=["sixteen at a time", "eight at a time"])
def test_a_staged_fold_of_the_wrong_block_is_caught(gpu, monkeypatch, merge_path, old, new):
    """Mutation: one of a round's block folds staged from its neighbour, in the loads sixteen at a time (a round of
    32 blocks: a 300-position window of 8-position blocks) or the eight at a time after them (131 positions: 17
    blocks, sixteen then one; 67 positions take eight then one)."""
    cases = matrix(300, modes=("f32",), head_dims=(64,), prefill=1)
    assert all(r.ok for r in run_matrix(gpu, cases, [300, 131, 67], variant="blocks"))
    patch_shader(monkeypatch, gpu, MERGE_PATHS[merge_path], old, new)
    assert any(not r.ok for r in run_matrix(gpu, cases, [300, 131, 67], variant="blocks"))


def test_only_decode_steps_fold_and_merge_in_one_dispatch(gpu):
    """By default fold_merge serves one-token calls; a batch's windows take fold and merge_blocks.wgsl."""
    att = Attention(gpu, 8, 4, 64, "f32", variant="blocks")
    assert att.fuses_merge  # lavapipe binds 32 storage buffers
    kv = gpu.upload(np.zeros((20, 4, 64), np.float32))
    wins = [Window(kv, kv, 0, 12), Window(kv, kv, 12, 20)]
    for n_q, per_window in [(1, 1), (2, 2), (5, 2)]:
        q, out, state = gpu.buffer(n_q * 8 * 64 * 4), gpu.buffer(n_q * 8 * 64 * 4), gpu.buffer(att.state_bytes(n_q))
        att.plan(wins, 20 - n_q, n_q)
        before = gpu.dispatch_count
        att.record(q, out, state, 20 - n_q, n_q, wins)
        assert gpu.dispatch_count - before == per_window * len(wins), n_q


def test_the_last_merge_writes_the_output_without_a_finalize_dispatch(gpu, merge_path):
    """One dispatch per window (fold_merge), or two (fold, merge), and none after them; still exact (the
    matrix above)."""
    att = Attention(gpu, 8, 4, 64, "f32", variant="blocks")
    kv = gpu.upload(np.zeros((20, 4, 64), np.float32))
    q, out, state = gpu.upload(np.ones((1, 8, 64), np.float32)), gpu.buffer(8 * 64 * 4), gpu.buffer(att.state_bytes(1))
    wins = [Window(kv, kv, 0, 12), Window(kv, kv, 12, 20)]
    att.plan(wins, 19, 1)
    before = gpu.dispatch_count
    att.record(q, out, state, 19, 1, wins)
    assert gpu.dispatch_count - before == (1 if merge_path == "fused" else 2) * len(wins)
    assert np.array_equal(np.frombuffer(gpu.read(out), np.float32), np.zeros(8 * 64, np.float32))


def test_decode_steps_dispatch_a_window_s_blocks_rounded_up(gpu):
    """A one-token call's fold dispatch has FOLD_PAD-rounded blocks (so a taped step replays while its window
    grows); a batch's has the blocks its window touches."""
    att = Attention(gpu, 8, 4, 64, "f32", variant="blocks")
    kv = gpu.upload(np.zeros((20, 4, 64), np.float32))
    assert [att.fold_shape(Window(kv, kv, 0, end), 1) for end in (1, 8, 9, 64, 65)] == [8, 8, 8, 8, 16]
    assert [att.fold_shape(Window(kv, kv, 12, 20), n) for n in (1, 2)] == [8, 2]


@pytest.mark.parametrize(("path", "old", "new"), [
    ("fused", "    if (wid.x >= window_blocks()) { return; }", "    if (false) { return; }"),
    ("separate", "wid.y >= p.n_q * p.n_heads || wid.x >= window_blocks()", "wid.y >= p.n_q * p.n_heads"),
])
def test_a_padded_workgroup_that_folds_is_caught(gpu, monkeypatch, path, old, new):
    """Mutation: workgroups past the window's blocks fold (and, in fold_merge, count) as if they were blocks."""
    monkeypatch.setattr(attention, "FUSE_MERGE", path == "fused")
    patch_shader(monkeypatch, gpu, "blocks.wgsl", old, new)
    results = run_matrix(gpu, matrix(30, modes=("f32",), prefill=1), [4, 11], variant="blocks")
    assert any(not r.ok for r in results)


def test_a_last_merge_that_drops_the_open_block_is_caught(gpu, monkeypatch, merge_path):
    """Mutation: the last merge writes acc / l of MAIN alone; windowed runs agree with the whole one, but
    not with fp64 attention (the open block's positions are missing)."""
    patch_shader(monkeypatch, gpu, MERGE_PATHS[merge_path], "        if (pl == 0.0) {\n            out[",
                 "        if (true) {\n            out[")
    results = run_matrix(gpu, matrix(30, modes=("f32",), prefill=1), [4, 11], variant="blocks")
    assert any(not r.ok for r in results)


def _counter_overlaps(att, calls) -> list[tuple[int, int]]:
    """Calls (n, blocks) of `_part_for` in order whose folds reach a counter an earlier call used in the same
    buffer (those words would hold fold bits when the earlier call's count next starts from them)."""
    used: dict[int, int] = {}  # id(buffer) -> most counters used at its end
    bad = []
    for n, blocks in calls:
        buf = att._part_for(n, blocks)
        words = int(buf.size) // 4
        if n * blocks * att.fold_floats > words - used.get(id(buf), 0):
            bad.append((n, blocks))
        used[id(buf)] = max(used.get(id(buf), 0), n)
        assert n * blocks * att.fold_floats + n <= words
    return bad


# a prompt's many (token, head)s over one block, then a decode step's few over many blocks, then the prompt's
# again: with 66-float folds the decode's 101 blocks end inside the counters the prompt's 100 used
MIXED = [(100, 1), (1, 101), (100, 1), (9, 3), (4608, 8), (9, 17), (4608, 1)]


def test_block_folds_never_reach_a_counter_in_use(gpu):
    att = Attention(gpu, 9, 3, 64, "f32", variant="blocks")
    assert not _counter_overlaps(att, MIXED)


def test_a_part_buffer_reused_while_the_folds_fit_past_this_calls_counters_is_caught(gpu, monkeypatch):
    """Mutation: reuse `part` whenever this call's folds and counters fit, forgetting the counters earlier
    calls left at its end."""
    def fits(self, n, blocks):
        need = n * blocks * self.fold_floats + n
        if self._part is None or int(self._part.size) // 4 < need:
            self._part = self.gpu.buffer(4 * need)
        return self._part

    monkeypatch.setattr(Attention, "_part_for", fits)
    assert _counter_overlaps(Attention(gpu, 9, 3, 64, "f32", variant="blocks"), MIXED)


def test_prompts_and_decode_steps_in_turn_give_the_bits_of_fresh_drivers(gpu):
    """One driver's calls with many and few (token, head)s in turn (its part buffer grows and is reused)
    give the output bits of a fresh driver per call."""
    rng = np.random.default_rng(3)
    kv_len = 200
    kv = gpu.upload(rng.standard_normal((kv_len, 3, 64)).astype(np.float32))
    shared = Attention(gpu, 9, 3, 64, "f32", variant="blocks")
    for n_q, start in [(1, 0), (40, 100), (1, 0), (1, 150), (40, 0), (1, 0)]:
        q = gpu.upload(rng.standard_normal((n_q, 9, 64)).astype(np.float32))
        wins = [Window(kv, kv, start, kv_len)]
        got = []
        for att in (shared, Attention(gpu, 9, 3, 64, "f32", variant="blocks")):
            out, state = gpu.buffer(n_q * 9 * 64 * 4), gpu.buffer(att.state_bytes(n_q))
            att.record(q, out, state, kv_len - n_q, n_q, wins)
            got.append(np.frombuffer(gpu.read(out), np.uint32))
        assert got[0].any() and np.array_equal(got[0], got[1]), (n_q, start)


def test_a_head_dim_the_blocks_kernels_cannot_hold_says_so(gpu):
    """The blocks kernels keep the query in vectors of four: another head_dim is refused, and "auto" takes serial."""
    with pytest.raises(attention.KVError, match="multiple of 4"):
        Attention(gpu, 2, 1, 6, "f32", variant="blocks")
    a_gpu = SimpleNamespace(is_cpu=False, limits=SimpleNamespace(max_invocations=256))
    assert attention.default_variant(a_gpu, 64) == "blocks" and attention.default_variant(a_gpu, 6) == "serial"
