"""Work beyond a limit the adapter reports is split to fit or refused naming the limit, never run wrong.

Each test opens a second `Gpu` on the shared test device with a lowered limit (the runtime reads limits
only through `gpu.limits`), so the same code paths run as on an adapter that has that limit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bonsai.diagnostics.exactness import Case, run_case
from bonsai.engine.native import load_engine
from bonsai.errors import GpuLimitError
from bonsai.gpu.device import Gpu
from bonsai.kv.attention.driver import Attention
from bonsai.kv.cache import KVCache
from bonsai.kv.errors import KVError
from tests.helpers.synthetic import write_tiny_gguf


def limited(gpu, **limits):
    """A Gpu on the same device whose limits are lowered to `limits`."""
    g = Gpu(gpu.device, gpu.adapter)
    g.limits = dataclasses.replace(g.limits, **limits)
    return g


def test_a_binding_above_the_limit_is_refused_naming_kernel_and_limit(gpu):
    g = limited(gpu, max_binding_bytes=4096)
    kernel = g.kernel("bonsai.gpu", "loop_cap.wgsl")
    with pytest.raises(GpuLimitError, match=r"bonsai.gpu/loop_cap.wgsl: binding 1 is 8192 bytes, above this "
                                            r"adapter's maxStorageBufferBindingSize \(4096 bytes\)"):
        g.dispatch(kernel, [g.buffer(16), g.buffer(8192)], (1,))


def test_too_many_workgroups_and_too_big_a_buffer_are_refused(gpu):
    g = limited(gpu, max_groups=100, max_buffer_bytes=1 << 20)
    kernel = g.kernel("bonsai.gpu", "loop_cap.wgsl")
    with pytest.raises(GpuLimitError, match=r"\(101, 1\) workgroups, above .*maxComputeWorkgroupsPerDimension \(100\)"):
        g.dispatch(kernel, [g.buffer(16), g.buffer(16)], (101, 1))
    with pytest.raises(GpuLimitError, match=r"maxBufferSize \(1048576 bytes\)"):
        g.buffer((1 << 20) + 4)


def test_blocks_attention_cuts_windows_so_block_folds_fit_one_binding(gpu):
    # 32 tokens x 9 heads x 66 floats = 76 KB of folds per block: 240 KB bindings hold three blocks (and
    # the case's 300-position K and V buffers, 230 KB each): a 300-position window is folded in two pieces
    g = limited(gpu, max_binding_bytes=240 << 10)
    att = Attention(g, 9, 3, 64, "f32", variant="blocks")
    assert att.max_span(32) == 3 * 64
    result = run_case(g, Case(9, 3, 64, "f32", 300, 32), [300, 100], variant="blocks")
    assert result.ok, result.describe()


def test_a_kv_window_above_the_binding_limit_is_refused_with_the_largest_that_fits(gpu):
    g = limited(gpu, max_binding_bytes=1 << 16)  # f32, 1 KV head of 64: 512 bytes per position
    with pytest.raises(KVError, match=r"a window of 256 positions takes 131072 bytes .* at most 128 positions"):
        KVCache(g, 2, 1, 64, 512, mode="f32", window=256)
    cache = KVCache(g, 2, 1, 64, 512, mode="f32", window=128)
    assert cache.staging_positions * 2 * (128 + 2) * 4 <= 1 << 16  # staging shrunk to one binding too


def test_the_engine_lowers_its_batch_to_fit_logits_in_a_binding_and_gets_the_same_logits(gpu, tmp_path):
    path = write_tiny_gguf(tmp_path / "m.gguf", "llama", weight_type="Q8_0", dim=128, n_heads=2, n_kv_heads=1,
                           head_dim=64, ffn_dim=128)
    ids = [int(i) for i in np.random.default_rng(0).integers(3, 300, 70)]
    want = np.asarray(load_engine(path, gpu=gpu, kv="f32", window=32, batch=64, progress=False).forward(ids))
    # the Q8_0 embedding (304 x 128) takes 41,344 bytes raw, 43,776 repacked for the CPU kernel: a binding
    # that holds it holds 36 rows of logits
    g = limited(gpu, max_binding_bytes=43_792)
    engine = load_engine(path, gpu=g, kv="f32", window=32, batch=64, progress=False)
    assert engine.batch == 43_792 // (want.shape[1] * 4) == 36
    got = np.asarray(engine.forward(ids))
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_tensor_above_the_binding_limit_is_refused_by_name(gpu, tmp_path):
    path = write_tiny_gguf(tmp_path / "m.gguf", "llama", weight_type="F32", dim=128, n_heads=2, n_kv_heads=1,
                           head_dim=64, ffn_dim=256)
    g = limited(gpu, max_binding_bytes=100_000)  # the F32 embedding is ~300 tokens x 128 x 4 > 100 KB
    with pytest.raises(GpuLimitError, match=r"tensor token_embd.weight .*maxStorageBufferBindingSize \(100000"):
        load_engine(path, gpu=g, kv="f32", window=4, batch=4, progress=False)


def test_head_dims_above_the_workgroup_limit_use_the_serial_kernel(gpu):
    g = limited(gpu, max_invocations=64)
    assert Attention(g, 2, 1, 128, "f32", variant="serial").variant == "serial"
    with pytest.raises(KVError, match=r"head_dim \(128\) invocations per workgroup, above .*\(64\); use 'serial'"):
        Attention(g, 2, 1, 128, "f32", variant="blocks")
    from bonsai.kv.attention.driver import default_variant

    assert default_variant(g, 128) == "serial" and default_variant(g, 64) in ("serial", "blocks")


def test_the_storage_buffers_per_stage_are_read_from_the_device_or_taken_as_webgpus_default():
    from bonsai.gpu.limits import browser_limits, native_limits

    sizes = {"max-storage-buffer-binding-size": 1 << 27, "max-buffer-size": 1 << 28}
    assert native_limits({**sizes, "max-storage-buffers-per-shader-stage": 10}).max_storage_buffers == 10
    assert native_limits(sizes).max_storage_buffers == 8
    assert browser_limits(type("JsLimits", (), {"maxStorageBuffersPerShaderStage": 12})()).max_storage_buffers == 12
    assert browser_limits(object()).max_storage_buffers == 8


@pytest.mark.parametrize("cpu,want", [(True, 128), (False, 512)])
def test_the_engine_takes_512_tokens_a_step_on_a_gpu_and_128_on_a_cpu_adapter(gpu, tmp_path, monkeypatch, cpu, want):
    """Without a `batch`, steps are as long as the adapter's kernels like them (forward.default_batch)."""
    from bonsai.gpu.recorder import Recorder

    monkeypatch.setattr(Recorder, "is_cpu", property(lambda self: cpu))
    path = write_tiny_gguf(tmp_path / "m.gguf", "llama", weight_type="Q8_0", dim=128, n_heads=2, n_kv_heads=1,
                           head_dim=64, ffn_dim=128)
    engine = load_engine(path, gpu=gpu, kv="f32", window=32, progress=False)
    assert engine.batch == want
    assert load_engine(path, gpu=gpu, kv="f32", window=32, batch=64, progress=False).batch == 64
