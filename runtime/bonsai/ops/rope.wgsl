// RoPE in place on the Q and K heads of one token block, optionally after a per-head RMSNorm (qwen3's
// Q/K norm). Heads h < n_q live in `q` (t, n_q, D) and use norm weights w[0:D]; heads h >= n_q live
// in `k` (t, n_heads - n_q, D) and use w[D:2D]. One workgroup per (head, token): Q and K in one
// dispatch. Mode NEOX rotates pairs (i, i + n_rot/2); GGML "normal" rotates pairs (2i, 2i + 1).
// Angle for pair i at position pos: pos * base^(-2i / n_rot); its cos and sin come from the host, in the
// parameter block after the header (rope.py: computed in float64; WGSL's sin/cos may err by 2^-11).
const WG: u32 = {{WG}}u;
const NEOX: bool = {{NEOX}};
const QK_NORM: bool = {{QK_NORM}};
const HEAD_DIM: u32 = {{HEAD_DIM}}u;  // p[1]: the workgroup's copy of one head holds exactly this many

// params (u32): n_heads (Q + K), head_dim, n_rot, 0, 0, pos_base, 0, n_q, eps (f32 bits), 0, 0, 0; then
// for token t and pair i, words 12 + 2 (t n_rot / 2 + i) and the next: cos and sin (f32 bits)
@group(0) @binding(0) var<storage, read_write> q: array<f32>;
@group(0) @binding(1) var<storage, read_write> k: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> p: array<u32>;

var<workgroup> vals: array<f32, HEAD_DIM>;
var<workgroup> part: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let h = wid.x;
    let t = wid.y;
    let d = p[1]; let n_rot = p[2]; let n_q = p[7];
    let in_q = h < n_q;
    let b = select((t * (p[0] - n_q) + h - n_q) * d, (t * n_q + h) * d, in_q);
    for (var i = li; i < d; i += WG) { vals[i] = select(k[b + i], q[b + i], in_q); }
    if (QK_NORM) {
        workgroupBarrier();
        var s = 0.0;
        for (var i = li; i < d; i += WG) { s += vals[i] * vals[i]; }
        part[li] = s;
        for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
            workgroupBarrier();
            if (li < stride) { part[li] += part[li + stride]; }
        }
        workgroupBarrier();
        let scale = 1.0 / sqrt(part[0] / f32(d) + bitcast<f32>(p[8]));
        let wo = select(d, 0u, in_q);
        for (var i = li; i < d; i += WG) { vals[i] = (vals[i] * scale) * w[wo + i]; }
    }
    workgroupBarrier();
    let half = n_rot / 2u;
    let row = 12u + 2u * t * half;  // token t's (cos, sin) pairs
    for (var i = li; i < d; i += WG) {
        var v = vals[i];
        if (i < n_rot) {
            var pair: u32; var first: bool;
            if (NEOX) { pair = i % half; first = i < half; } else { pair = i / 2u; first = (i & 1u) == 0u; }
            let c = bitcast<f32>(p[row + 2u * pair]); let s = bitcast<f32>(p[row + 2u * pair + 1u]);
            var i0: u32; var i1: u32;
            if (NEOX) { i0 = pair; i1 = pair + half; } else { i0 = 2u * pair; i1 = i0 + 1u; }
            if (first) { v = vals[i0] * c - vals[i1] * s; } else { v = vals[i0] * s + vals[i1] * c; }
        }
        if (in_q) { q[b + i] = v; } else { k[b + i] = v; }
    }
}
