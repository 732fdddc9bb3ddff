"""The KV cache: 4-bit (or f32) rows, a host-RAM master copy, GPU windows, exact chunked attention.

Formats (see `quant4` for the bit-level spec)
    f32  row = head_dim f32 values                                   (4*head_dim bytes)
    q4   row = head_dim/8 u32 words of nibbles + one u32 scale slot  (head_dim/2 + 4 bytes)
         value j lives in word j//8, bits 4*(j%8)..4*(j%8)+3 (= byte j//2, low nibble first);
         the scale slot holds the f16 bits of `scale` in its low 16 bits, zero above.
    q4r  q4 with a fixed orthogonal Hadamard rotation applied to K (and to Q in `attend`).

Engine API (all GPU buffers are `Gpu.buffer`s; shapes in the comments are row-major f32):

    from bonsai.kv import KVCache
    cache = KVCache(gpu, n_layers, n_kv_heads, head_dim, max_positions,
                    mode="f32" | "q4" | "q4r", window=64, vram_budget=None,
                    staging_positions=512, variant="auto")
        # window: positions per GPU slot; vram_budget: bytes of slots (None = all resident);
        # variant: attention kernel ("auto" = "serial" on CPU adapters, "wide" on GPUs)
    cache.append(layer, k_buf, v_buf, pos, n)
        # k_buf, v_buf: [n, n_kv_heads, head_dim] f32 written by the model (from offset 0).
        # Quantises on the GPU into the resident window(s) holding [pos, pos+n) and into a
        # staging area; the host master catches up at the next `sync_host()`.
    cache.sync_host()
        # ONE readback of every row appended since the last sync -> host master (numpy).
        # Raises NonFiniteKVError (naming layer and position) for rows with NaN/inf, or whose
        # 4-bit scale overflows f16; those rows are never committed to the master.
        # Call once per engine step (prefill or decode token). Also called automatically
        # before a window must be streamed in or the staging area is full.
    cache.attend(layer, q_buf, out_buf, pos_base, n_q, n_heads)
        # q_buf, out_buf: [n_q, n_heads, head_dim] f32. Query token i sits at absolute position
        # pos_base + i and attends to positions [0, pos_base + i] (causal). GQA: query head h
        # reads KV head h // (n_heads // n_kv_heads). Records dispatches; submits only when a
        # non-resident window has to be streamed in.
    cache.append_host(layer, k, v, pos)   # numpy [n, n_kv, hd] f32 rows; validated before use
    cache.restore(new_gpu)                # after device loss: rebuild GPU windows from the master
    cache.bytes_per_position()            # GPU bytes per layer per position, from buffer sizes
    cache.length[layer]                   # positions committed to the host master
    cache.streamed_windows                # windows written up from the master so far
    cache.host_rows(layer, kind)          # the master copy ("k"/"v") in the cache's format
    cache.dequantised(layer, kind)        # [positions, n_kv, hd] f32 as attention sees it

Lower level: `quant4` (numpy reference of the 4-bit format), `attention.Attention` (the
windowed online-softmax driver the cache uses), `verify` / `measure` (the CLI checks).
"""

from typing import Any

from .errors import KVError, NonFiniteKVError

__all__ = ["KVCache", "KVError", "NonFiniteKVError"]


def __getattr__(name: str) -> Any:
    # KVCache pulls in numpy; import it on first use so `bonsai --help` stays light
    if name == "KVCache":
        from .cache import KVCache

        return KVCache
    raise AttributeError(name)
