// RoPE in place on the Q and K heads of a (t, stride) buffer, optionally after a per-head RMSNorm
// (qwen3's Q/K norm). Heads h < n_q use norm weights w[0:D], the others w[D:2D]. One workgroup per
// (head, token). Mode NEOX rotates pairs (i, i + n_rot/2); GGML "normal" rotates pairs (2i, 2i + 1).
// Angle for pair i at position pos: pos * base^(-2i / n_rot).
const WG: u32 = {{WG}}u;
const NEOX: bool = {{NEOX}};
const QK_NORM: bool = {{QK_NORM}};

// params (u32): n_heads, head_dim, n_rot, stride, offset, pos_base, base (f32 bits), n_q, eps (f32 bits)
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

var<workgroup> vals: array<f32, 512>;
var<workgroup> part: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let h = wid.x;
    let t = wid.y;
    let d = p[1]; let n_rot = p[2];
    let b = t * p[3] + p[4] + h * d;
    for (var i = li; i < d; i += WG) { vals[i] = x[b + i]; }
    if (QK_NORM) {
        var s = 0.0;
        for (var i = li; i < d; i += WG) { s += vals[i] * vals[i]; }
        part[li] = s;
        for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
            workgroupBarrier();
            if (li < stride) { part[li] += part[li + stride]; }
        }
        workgroupBarrier();
        let scale = 1.0 / sqrt(part[0] / f32(d) + bitcast<f32>(p[8]));
        let wo = select(d, 0u, h < p[7]);
        for (var i = li; i < d; i += WG) { vals[i] = (vals[i] * scale) * w[wo + i]; }
    }
    workgroupBarrier();
    let pos = f32(p[5] + t);
    let base = bitcast<f32>(p[6]);
    let half = n_rot / 2u;
    for (var i = li; i < d; i += WG) {
        if (i >= n_rot) { x[b + i] = vals[i]; continue; }
        var pair: u32; var first: bool;
        if (NEOX) { pair = i % half; first = i < half; } else { pair = i / 2u; first = (i & 1u) == 0u; }
        let theta = pos * pow(base, -2.0 * f32(pair) / f32(n_rot));
        let c = cos(theta); let s = sin(theta);
        var i0: u32; var i1: u32;
        if (NEOX) { i0 = pair; i1 = pair + half; } else { i0 = 2u * pair; i1 = i0 + 1u; }
        if (first) { x[b + i] = vals[i0] * c - vals[i1] * s; } else { x[b + i] = vals[i0] * s + vals[i1] * c; }
    }
}
