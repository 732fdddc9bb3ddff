"""The blocks attention variant (parallel block folds merged in block order) keeps the invariant bit for bit.

Blocks are shrunk to 8 positions so short caches on lavapipe cross many block and window
boundaries (windows ending inside a block carry the open block's fold in the state).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import bonsai.kv.attention.driver as attention
from bonsai.diagnostics.exactness import check_mutation, matrix, run_matrix
from bonsai.kv.attention.driver import Attention, Mutations, Window
from tests.helpers.shader_patch import patch_shader


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(attention, "BLOCK", 8)


def test_blocks_variant_windowed_equals_whole_bit_for_bit(gpu):
    results = run_matrix(gpu, matrix(30, modes=("f32", "q4", "q4r"), prefill=5), [1, 2, 5, 8, 11, 16],
                         variant="blocks")
    assert results and all(r.ok for r in results), [r for r in results if not r.ok][:3]


def test_blocks_variant_every_mode(gpu):
    from bonsai.kv.format.modes import MODES

    results = run_matrix(gpu, matrix(40, modes=tuple(MODES), prefill=3), [1, 7, 31, 33], variant="blocks")
    assert results and all(r.ok for r in results), [r for r in results if not r.ok][:3]


def test_blocks_variant_with_the_runtime_block_size(gpu, monkeypatch):
    monkeypatch.setattr(attention, "BLOCK", 64)
    results = run_matrix(gpu, matrix(150, modes=("q4",), prefill=9), [1, 63, 64, 65, 100], variant="blocks")
    assert results and all(r.ok for r in results), [r for r in results if not r.ok][:3]


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
    ("f32", "let v3 = pos_v(b + i + 3u, g, j, vs[i + 3u], vm[i + 3u]);",
     "let v3 = pos_v(b + i + 2u, g, j, vs[i + 2u], vm[i + 2u]);"),
    ("f32", "    s = s + qs[d + 5u] * b.y;", "    s = s + qs[d + 5u] * b.x;"),
    ("kc4v4", "    s = s + qs[d + 5u] * b.y;", "    s = s + qs[d + 5u] * b.x;"),
    ("f32", "let kz = bitcast<vec4<f32>>(kc4[(kb + d) / 4u + 1u]);", "let kz = bitcast<vec4<f32>>(kc4[(kb + d) / 4u]);"),
    ("kc4v4", "let k5 = k_elem(kb, gb, d + 5u);", "let k5 = k_elem(kb, gb, d + 4u);"),
], ids=["fold drops the tail", "fold reuses a V row", "f32 score reuses a K value", "c4 score reuses a K value",
        "f32 score reloads a K vector", "c4 score reloads a K value"])
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
    ("dot = dot + qs[d] * (f32((word >> (K_BITS * e)) & K_MASK) * ks[d] + km[d]);",
     "dot = dot + qs[d] * (f32((word >> (K_BITS * e)) & K_MASK) * ks[d] + km[d ^ 1u]);"),
    ("let v3 = pos_v(b + i + 3u, g, j, vs[i + 3u], vm[i + 3u]);", "let v3 = pos_v(b + i + 3u, g, j, vs[i + 3u], vm[i + 2u]);"),
], ids=["K scales of the next group", "K min of the neighbouring channel", "V min of the previous position"])
def test_grouped_scales_from_the_wrong_place_are_caught(gpu, monkeypatch, old, new):
    patch_shader(monkeypatch, gpu, "blocks.wgsl", old, new)
    assert any(not r.ok for r in _grouped_results(gpu, monkeypatch))


def test_blocks_variant_passes_the_mutation_suite_without_mutations(gpu):
    assert all(r.ok for r in check_mutation(gpu, Mutations(), kv_len=20, prefill=4, variant="blocks"))


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Mutations)])
def test_every_injected_bug_is_caught_in_the_blocks_variant(gpu, name):
    results = check_mutation(gpu, Mutations(**{name: True}), kv_len=20, prefill=4, variant="blocks")
    assert any(not r.ok for r in results)


# Rounds of staged block folds (merge_blocks.wgsl): with 8-position blocks a 100-position window holds 13
# blocks (invocations past lavapipe's first 8-wide batch stage some), and 300 positions take two rounds.
@pytest.mark.parametrize(("old", "new", "kv_len", "windows"), [
    ("        workgroupBarrier();\n        for (var i = 0u; i < cnt;", "        for (var i = 0u; i < cnt;", 100, [100, 67]),
    ("        workgroupBarrier();  // every invocation has merged this round", "        //", 300, [300, 131]),
], ids=["merge before the round's folds are staged", "next round staged while this one merges"])
def test_a_racy_merge_is_caught(gpu, monkeypatch, old, new, kv_len, windows):
    """Mutation: without a barrier around the staged round of block folds, lavapipe's 8-wide SIMD lets
    some invocations merge values other invocations have not written yet (or have overwritten): the
    windowed runs no longer match. (The rounds' barriers also order every invocation's reading of
    MAIN's (m, l) before invocation 0 rewrites it.)"""
    cases = matrix(kv_len, modes=("f32",), head_dims=(64,), prefill=1)
    assert all(r.ok for r in run_matrix(gpu, cases, windows, variant="blocks"))
    patch_shader(monkeypatch, gpu, "merge_blocks.wgsl", old, new)
    results = run_matrix(gpu, cases, windows, variant="blocks")
    assert any(not r.ok for r in results)


def test_the_last_merge_writes_the_output_without_a_finalize_dispatch(gpu):
    """Two dispatches per window (fold, merge) and none after them; still exact (the matrix above)."""
    att = Attention(gpu, 8, 4, 64, "f32", variant="blocks")
    kv = gpu.upload(np.zeros((20, 4, 64), np.float32))
    q, out, state = gpu.upload(np.ones((1, 8, 64), np.float32)), gpu.buffer(8 * 64 * 4), gpu.buffer(att.state_bytes(1))
    wins = [Window(kv, kv, 0, 12), Window(kv, kv, 12, 20)]
    att.plan(wins, 19, 1)
    before = gpu.dispatch_count
    att.record(q, out, state, 19, 1, wins)
    assert gpu.dispatch_count - before == 2 * len(wins)
    assert np.array_equal(np.frombuffer(gpu.read(out), np.float32), np.zeros(8 * 64, np.float32))


def test_a_last_merge_that_drops_the_open_block_is_caught(gpu, monkeypatch):
    """Mutation: the last merge writes acc / l of MAIN alone; windowed runs agree with the whole one, but
    not with fp64 attention (the open block's positions are missing)."""
    patch_shader(monkeypatch, gpu, "merge_blocks.wgsl", "        if (pl == 0.0) {\n            out[",
                 "        if (true) {\n            out[")
    results = run_matrix(gpu, matrix(30, modes=("f32",), prefill=1), [4, 11], variant="blocks")
    assert any(not r.ok for r in results)
