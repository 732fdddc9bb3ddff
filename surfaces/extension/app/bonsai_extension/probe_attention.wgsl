// A tiny online-softmax attention over one query row per head: the browser plumbing probe.
// State (m, l, acc) lives in buffers between dispatches, so folding positions [start, end) window by
// window performs exactly the same f32 operations, in the same order, as folding [0, n) at once.
// DROP_WINDOW_START is a mutation switch: true skips the first position of every window.

struct Params { start: u32, end: u32, n_heads: u32, head_dim: u32, last: u32 }

@group(0) @binding(0) var<storage, read> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;        // [n_heads, head_dim]
@group(0) @binding(2) var<storage, read> k: array<f32>;        // [positions, n_heads, head_dim]
@group(0) @binding(3) var<storage, read> v: array<f32>;        // [positions, n_heads, head_dim]
@group(0) @binding(4) var<storage, read_write> ml: array<f32>; // [n_heads, 2]: running max, sum
@group(0) @binding(5) var<storage, read_write> acc: array<f32>; // [n_heads, head_dim]

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let h = gid.x;
    let hd = params.head_dim;
    let scale = 1.0 / sqrt(f32(hd));
    var m = ml[2u * h];
    var l = ml[2u * h + 1u];
    for (var p = params.start; p < params.end; p = p + 1u) {
        if ({{DROP_WINDOW_START}} && p == params.start) { continue; }
        let row = (p * params.n_heads + h) * hd;
        var s = 0.0;
        for (var d = 0u; d < hd; d = d + 1u) { s = s + q[h * hd + d] * k[row + d]; }
        s = s * scale;
        let m_new = max(m, s);
        let corr = exp(m - m_new);
        let w = exp(s - m_new);
        l = l * corr + w;
        for (var d = 0u; d < hd; d = d + 1u) { acc[h * hd + d] = acc[h * hd + d] * corr + w * v[row + d]; }
        m = m_new;
    }
    ml[2u * h] = m;
    ml[2u * h + 1u] = l;
    if (params.last == 1u) {
        // acc is divided by l once, at the very end.
        for (var d = 0u; d < hd; d = d + 1u) { acc[h * hd + d] = acc[h * hd + d] / l; }
    }
}
