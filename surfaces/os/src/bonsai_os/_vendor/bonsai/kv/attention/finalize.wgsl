// Finish online-softmax attention: out = acc / l, the one and only normalisation.
// BLOCKS (the blocks variant): the state holds MAIN then PARTIAL (merge_blocks.wgsl); PARTIAL, when
// not empty, is merged into MAIN first, exactly as merge_blocks.wgsl merges a completed block.

struct Params { pos_base: u32, n_q: u32, n_heads: u32, n_kv: u32, qk_scale: f32, p0: u32, p1: u32, p2: u32 }

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> state: array<f32>;       // [n_q, n_heads, 2 + HD] (BLOCKS: twice)
@group(0) @binding(2) var<storage, read_write> out: array<f32>;   // [n_q, n_heads, HD]

const HD: u32 = {{HEAD_DIM}}u;
const BLOCKS: bool = {{BLOCKS}};

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.x;
    if (idx >= p.n_q * p.n_heads) { return; }
    var sb = idx * (HD + 2u);
    if (BLOCKS) { sb = 2u * sb; }
    let l = state[sb + 1u];
    if (!BLOCKS || state[sb + HD + 3u] == 0.0) {  // no PARTIAL to merge
        for (var j = 0u; j < HD; j = j + 1u) { out[idx * HD + j] = state[sb + 2u + j] / l; }
        return;
    }
    let mm = state[sb];
    let pm = state[sb + HD + 2u];
    let m_new = max(mm, pm);
    let a = exp(mm - m_new);
    let c = exp(pm - m_new);
    let lm = l * a + state[sb + HD + 3u] * c;
    for (var j = 0u; j < HD; j = j + 1u) {
        out[idx * HD + j] = (state[sb + 2u + j] * a + state[sb + HD + 4u + j] * c) / lm;
    }
}
