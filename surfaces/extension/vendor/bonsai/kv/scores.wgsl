// Scores of one window for the split attention variant: one invocation per (query token, head,
// position), all positions of the window at once (thousands of invocations: the K loads are in flight
// together, where the fold kernel would wait on one row at a time). The score of a position is the
// same sequential dot product over d = 0..HD-1 the wide kernel computes, then * qk_scale: it does not
// depend on the windowing. attention_split.wgsl folds the scores in position order.

//#include "kv_query.wgsl"

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> w: Window;
@group(0) @binding(2) var<storage, read> q: array<f32>;        // [n_q, n_heads, HD]
@group(0) @binding(3) var<storage, read> kc: array<u32>;       // rows [pos, n_kv, K_WORDS]
@group(0) @binding(4) var<storage, read_write> sc: array<f32>; // [n_q * n_heads, w.end - w.start]

//#include "kv_format.wgsl"

//#include "kv_k_elem.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let span = w.end - w.start;
    let i = gid.x;
    let idx = wid.y;
    if (i >= span || idx >= p.n_q * p.n_heads) { return; }
    let h = idx % p.n_heads;
    let g = kv_head(h);
    let pos = w.start + i;
    let r = (pos - w.buf_base) * p.n_kv + g;
    let kb = w.k_off + r * K_WORDS;
    let gb = w.k_off + (r - (pos % GROUP) * p.n_kv) * K_WORDS;  // c4: the group's first row (buf_base group-aligned)
    var dot = 0.0;
    for (var d = 0u; d < HD; d = d + 1u) { dot = dot + q[idx * HD + d] * k_elem(kb, gb, d); }
    sc[idx * span + i] = dot * p.qk_scale;
}
