// Finish online-softmax attention: out = acc / l, the one and only normalisation.

struct Params { pos_base: u32, n_q: u32, n_heads: u32, n_kv: u32, qk_scale: f32, p0: u32, p1: u32, p2: u32 }

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> state: array<f32>;       // [n_q, n_heads, 2 + HD]
@group(0) @binding(2) var<storage, read_write> out: array<f32>;   // [n_q, n_heads, HD]

const HD: u32 = {{HEAD_DIM}}u;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.x;
    if (idx >= p.n_q * p.n_heads) { return; }
    let sb = idx * (HD + 2u);
    let l = state[sb + 1u];
    for (var j = 0u; j < HD; j = j + 1u) { out[idx * HD + j] = state[sb + 2u + j] / l; }
}
