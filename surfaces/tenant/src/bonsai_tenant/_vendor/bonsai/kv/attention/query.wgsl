// Shared by the attention kernels (//#include): which KV head and positions a query sees, after the
// parameter blocks (params.wgsl). Expects `p` and ../format/row_format.wgsl.

//#include "params.wgsl"

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
