"""The KV cache: quantised (or f32) K/V rows, a host-RAM master copy, GPU windows, exact chunked attention.

Modes (`format.modes.MODES`; row formats bit for bit in `format.codec`); bits per
stored element with scales, head_dim 64:
    f32      K, V f32                                                            32
    q8       K, V 8-bit per row, f16 scale                                        8.5
    q4       K, V 4-bit per row, f16 scale (the seed's format)                    4.5
    q4r      q4 with a fixed Hadamard rotation of K (and of Q in `attend`)        4.5
    q4b      K, V 4-bit, one f16 scale per 32 values                              4.5
    k8v4     K q8, V q4          k8v4b: V q4b        k8v4a: V q4a (asymmetric)    6.5
    kc4v4    K 4-bit per channel over groups of 32 positions, V q4                4.5
    kc4v4b   K as kc4v4, V q4b                                                    4.5
    kc4av4a  K 4-bit asymmetric per channel over groups of 64 positions,
             V 4-bit asymmetric per row (f16 scale and min)                      4.5
    q4res    kc4av4a, and V of the newest group kept in f32 as well               4.5
Grouped-K modes (kc4*, q4res) keep the newest partial group's K (q4res: K and V) as f32 rows (the
residual, one small buffer per layer: 2 x 64 x n_kv x head_dim x 4 bytes for q4res) and quantise
the group when its last position is appended; windows must be multiples of the group (32 or 64). Which mode to pick: `bonsai measure kv4` prints the measured
quality table (perplexity, KL and argmax changes against f32 on real text).

Engine API (`api.KVCacheAPI`; all GPU buffers are the backend's; shapes row-major f32):

    from bonsai.kv.cache import KVCache             # every mode, pure Python (the browser runs it too)
    cache = KVCache(gpu, n_layers, n_kv_heads, head_dim, max_positions,
                    mode="f32" | "q8" | "q4" | ... (any of format.modes.MODES), window=64, vram_budget=None,
                    staging_positions=512, variant="auto")
        # window: positions per GPU slot; vram_budget: bytes of slots (None = all resident);
        # variant: attention kernel ("auto" = "serial" on CPU adapters, "blocks" on GPUs)
    cache.append(layer, k_buf, v_buf, pos, n)
        # k_buf, v_buf: [n, n_kv_heads, head_dim] f32 written by the model (from offset 0).
        # Quantises on the GPU into the resident window(s) holding [pos, pos+n) and into a
        # staging area; the host master catches up at the next `sync_host()`.
    rows = cache.epilogue_rows(layer, pos, 1)    # or: a QKV matmul writes the rows itself (ops.qkv_store)
    cache.append(layer, k_buf, v_buf, pos, 1, stored=rows)  # then only the bookkeeping (rows not None)
    cache.sync_host()
        # ONE readback of every row appended since the last sync -> host master (bytes): the GPU
        # kernels' own output, grouped modes' quantised groups included (the host never quantises).
        # Raises NonFiniteKVError (naming layer and position) for rows with NaN/inf, or whose
        # scale (or min) overflows f16; those rows are never committed to the master.
    cache.attend(layer, q_buf, out_buf, pos_base, n_q, n_heads)
        # q_buf, out_buf: [n_q, n_heads, head_dim] f32. Query token i sits at absolute position
        # pos_base + i and attends to positions [0, pos_base + i] (causal). GQA: query head h
        # reads KV head h // (n_heads // n_kv_heads). Records dispatches; submits only when a
        # non-resident window has to be streamed in.
    cache.restore(new_gpu)                # after device loss: rebuild GPU windows from the master
    cache.bytes_per_position()            # GPU bytes per layer per position, from buffer sizes
    cache.residual_bytes()                # grouped-K modes: bytes of one layer's f32 residual buffer
    cache.length[layer]                   # positions committed to the host master
    cache.streamed_windows                # windows written up from the master so far
  The parts: `layout` (row words, slots), `master` (host bytes), `staging` (the readback), `slots`
  (resident windows, streaming, host pages), `residual` (grouped modes' newest group), `windows` (what
  attention folds, resolved to slots), `attention` (the windowed online-softmax driver and kernels), `store` (store/group/scatter/dequantise kernels),
  `format` (row formats, modes, the numpy codec that is the kernels' oracle).
  Tests and measurements: `bonsai.diagnostics.numpy_cache.NumpyKVCache` adds numpy views of the
  master (`host_rows`, `dequantised`, `residual_rows`) and `append_host` (rows written by the codec).
"""

from typing import Any

from .errors import KVError, NonFiniteKVError

# The names of `modes.MODES` without importing numpy (for CLI choices); a test keeps them equal.
MODE_NAMES = ("f32", "q8", "q4", "q4r", "q4b", "k8v4", "k8v4b", "kc4v4", "kc4v4b", "k8v4a", "kc4av4a", "q4res")

# `--kv auto` (the CLI's default): the mode `default_mode` picks for the adapter
AUTO = "auto"

__all__ = ["AUTO", "MODE_NAMES", "KVCache", "KVError", "NonFiniteKVError", "default_mode", "resolve_mode"]


def default_mode(gpu: Any) -> str:
    """q4res on GPUs: 7x less KV memory at +0.4% perplexity, decoding at 0.94-0.96x f32 on the H200 at 1K context
    (bench/probes/kv_pair_bench.py, nine rounds in one process in each of two calls: 0.89-1.01) and prefilling at the
    same rate (bench/NOTES.md, commit 9c5abea). f32 on CPU adapters (lavapipe, SwiftShader), where decoding 4-bit rows costs
    more compute than the memory saves (lavapipe: ~0.66x f32)."""
    return "f32" if gpu.is_cpu else "q4res"


def resolve_mode(kv: str, gpu: Any) -> str:
    """`kv`, or the adapter's `default_mode` for "auto"."""
    return default_mode(gpu) if kv == AUTO else kv


def __getattr__(name: str) -> Any:
    # import the cache (and its kernels' drivers) on first use so `bonsai --help` stays light
    if name == "KVCache":
        from .cache import KVCache

        return KVCache
    raise AttributeError(name)
