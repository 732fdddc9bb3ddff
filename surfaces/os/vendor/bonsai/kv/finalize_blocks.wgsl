// Finish blocks-variant attention: merge PARTIAL (if any) into MAIN as merge_blocks.wgsl does, then
// out = acc / l, the one and only normalisation. State layout: merge_blocks.wgsl.

struct Params { pos_base: u32, n_q: u32, n_heads: u32, n_kv: u32, qk_scale: f32, p0: u32, p1: u32, p2: u32 }

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> state: array<f32>;       // [n_q, n_heads, 2 x (2 + HD)]
@group(0) @binding(2) var<storage, read_write> out: array<f32>;   // [n_q, n_heads, HD]

const HD: u32 = {{HEAD_DIM}}u;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.x;
    if (idx >= p.n_q * p.n_heads) { return; }
    let sb = idx * 2u * (HD + 2u);
    let mm = state[sb];
    let ll = state[sb + 1u];
    let pm = state[sb + HD + 2u];
    let pl = state[sb + HD + 3u];
    if (pl == 0.0) {
        for (var j = 0u; j < HD; j = j + 1u) { out[idx * HD + j] = state[sb + 2u + j] / ll; }
        return;
    }
    let m_new = max(mm, pm);
    let a = exp(mm - m_new);
    let c = exp(pm - m_new);
    let l = ll * a + pl * c;
    for (var j = 0u; j < HD; j = j + 1u) {
        out[idx * HD + j] = (state[sb + 2u + j] * a + state[sb + HD + 4u + j] * c) / l;
    }
}
