// Shared by the attention kernels (//#include): the Params/Window layouts (packed by
// bonsai/kv/attention.py) and which KV head and positions a query sees. Expects `p` and format/row_format.wgsl.
struct Params { pos_base: u32, n_q: u32, n_heads: u32, n_kv: u32, qk_scale: f32, p0: u32, p1: u32, p2: u32 }
// One window: absolute positions [start, end); the bound K/V buffers hold position buf_base at
// row 0, starting at word k_off / v_off; first == 1 starts a fresh state.
struct Window { start: u32, end: u32, buf_base: u32, k_off: u32, v_off: u32, first: u32, w0: u32, w1: u32 }

// The KV head that query head h reads (GQA). MUT_GQA: a wrong mapping, for the mutation tests only.
fn kv_head(h: u32) -> u32 {
    if (MUT_GQA) { return h % p.n_kv; }
    return h / (p.n_heads / p.n_kv);
}

// One past the last position query token t may see: t sits at pos_base + t (causal).
// MUT_CAUSAL: an off-by-one mask, for the mutation tests only.
fn causal_end(t: u32) -> u32 {
    if (MUT_CAUSAL) { return p.pos_base + t + 2u; }
    return p.pos_base + t + 1u;
}
