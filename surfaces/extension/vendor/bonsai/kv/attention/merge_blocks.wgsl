// The blocks variant, step 2 of 2 where the adapter cannot bind blocks.wgsl's fold_merge (10 storage buffers):
// merge the window's block folds into the state, in block order (merge.wgsl says how). One workgroup per
// (token, head), HD invocations.

//#include "query.wgsl"

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> w: Window;
@group(0) @binding(2) var<storage, read_write> state: array<f32>;  // [n_q, n_heads, 2 x (2 + HD)]
@group(0) @binding(3) var<storage, read_write> part: array<atomic<u32>>;  // written by blocks.wgsl
@group(0) @binding(4) var<storage, read_write> out: array<f32>;    // [n_q, n_heads, HD], the last window only

//#include "../format/row_format.wgsl"

//#include "state.wgsl"

//#include "block_state.wgsl"

//#include "merge.wgsl"

@compute @workgroup_size({{HEAD_DIM}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let idx = wid.y * 65535u + wid.x;
    if (idx >= p.n_q * p.n_heads) { return; }
    merge_window(idx, lid.x);
}
