// q4r: rotate every query row by the normalised Hadamard transform (same order as rotate.py).

struct Params { pos_base: u32, n_q: u32, n_heads: u32, n_kv: u32, qk_scale: f32, p0: u32, p1: u32, p2: u32 }

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;            // [n_q, n_heads, HD]
@group(0) @binding(2) var<storage, read_write> qr: array<f32>;     // [n_q, n_heads, HD]

const HD: u32 = {{HEAD_DIM}}u;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.x;
    if (idx >= p.n_q * p.n_heads) { return; }
    var x: array<f32, {{HEAD_DIM}}>;
    for (var j = 0u; j < HD; j = j + 1u) { x[j] = q[idx * HD + j]; }
    for (var h = 1u; h < HD; h = h * 2u) {
        for (var i = 0u; i < HD; i = i + 1u) {
            if ((i & h) == 0u) {
                let a = x[i];
                let b = x[i + h];
                x[i] = a + b;
                x[i + h] = a - b;
            }
        }
    }
    for (var j = 0u; j < HD; j = j + 1u) { qr[idx * HD + j] = x[j] * {{INV_SQRT_HD}}; }
}
