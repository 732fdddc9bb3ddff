"""The blocks attention variant (parallel block folds merged in block order) keeps the invariant bit for bit.

Blocks are shrunk to 8 positions so short caches on lavapipe cross many block and window
boundaries (windows ending inside a block carry the open block's fold in the state).
"""

from __future__ import annotations

import dataclasses

import pytest

import bonsai.kv.attention.driver as attention
from bonsai.diagnostics.exactness import check_mutation, matrix, run_matrix
from bonsai.kv.attention.driver import Mutations


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


def test_blocks_variant_passes_the_mutation_suite_without_mutations(gpu):
    assert all(r.ok for r in check_mutation(gpu, Mutations(), kv_len=20, prefill=4, variant="blocks"))


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Mutations)])
def test_every_injected_bug_is_caught_in_the_blocks_variant(gpu, name):
    results = check_mutation(gpu, Mutations(**{name: True}), kv_len=20, prefill=4, variant="blocks")
    assert any(not r.ok for r in results)


def test_a_racy_merge_is_caught(gpu, monkeypatch):
    """Mutation: without the barrier between reading and rewriting MAIN, lavapipe's 8-wide SIMD lets
    later invocations read the already-merged (m, l): the windowed runs no longer match."""
    from bonsai.gpu import shaders
    from bonsai.gpu.backend import KernelCache

    real = shaders.load_source

    def without_barrier(package, filename):
        source = real(package, filename)
        return source.replace("    workgroupBarrier();  // every invocation has read m and l", "    //", 1) \
            if filename == "merge_blocks.wgsl" else source

    monkeypatch.setattr(shaders, "load_source", without_barrier)
    monkeypatch.setattr(gpu, "_kernels", KernelCache())  # compile afresh (the session's device caches pipelines)
    results = run_matrix(gpu, matrix(30, modes=("f32",), prefill=1), [4, 11], variant="blocks")
    assert any(not r.ok for r in results)
