// The attention kernels' parameter blocks (//#include), packed by bonsai/kv/attention/driver.py:
// Params per call (the query block), Window per fold dispatch (one piece of a window).
struct Params { pos_base: u32, n_q: u32, n_heads: u32, n_kv: u32, qk_scale: f32, p0: u32, p1: u32, p2: u32 }
// One window: absolute positions [start, end); the bound K/V buffers hold position buf_base at
// row 0, starting at word k_off / v_off; first: bit 0 starts a fresh state, bit 1 (blocks variant)
// marks the call's last window, whose merge also writes the output (merge_blocks.wgsl).
struct Window { start: u32, end: u32, buf_base: u32, k_off: u32, v_off: u32, first: u32, w0: u32, w1: u32 }
