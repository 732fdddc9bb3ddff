// Finish online-softmax attention: out = acc / l, the one and only normalisation.
// BLOCKS (the blocks variant): the state holds MAIN then PARTIAL (merge_blocks.wgsl); PARTIAL, when
// not empty, is merged into MAIN first, exactly as merge_blocks.wgsl merges a completed block.

//#include "params.wgsl"

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> state: array<f32>;       // state.wgsl's layout
@group(0) @binding(2) var<storage, read_write> out: array<f32>;   // [n_q, n_heads, HD]

const HD: u32 = {{HEAD_DIM}}u;

//#include "state.wgsl"

// One invocation per output value (token, head, j): every invocation of a (token, head) computes the
// same m_new, a, c and l from the same state words, so the values are those one invocation per
// (token, head) looping over j wrote, bit for bit; the dispatch is a 2D grid of workgroups.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let e = gid.y * nw.x * 64u + gid.x;
    let idx = e / HD;
    let j = e % HD;
    if (idx >= p.n_q * p.n_heads) { return; }
    let sb = main_fold(idx);
    let pb = partial_fold(idx);
    let l = state[sb + L_AT];
    if (FOLDS == 1u || state[pb + L_AT] == 0.0) {  // no PARTIAL to merge
        out[idx * HD + j] = state[sb + ACC_AT + j] / l;
        return;
    }
    let mm = state[sb + M_AT];
    let pm = state[pb + M_AT];
    let m_new = max(mm, pm);
    let a = exp(mm - m_new);
    let c = exp(pm - m_new);
    let lm = l * a + state[pb + L_AT] * c;
    out[idx * HD + j] = (state[sb + ACC_AT + j] * a + state[pb + ACC_AT + j] * c) / lm;
}
