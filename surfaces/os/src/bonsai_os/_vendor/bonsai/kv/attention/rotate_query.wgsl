// q4r: rotate every query row by the normalised Hadamard transform (hadamard.wgsl).

//#include "params.wgsl"

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;            // [n_q, n_heads, HD]
@group(0) @binding(2) var<storage, read_write> qr: array<f32>;     // [n_q, n_heads, HD]

const HD: u32 = {{HEAD_DIM}}u;

//#include "../format/hadamard.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.x;
    if (idx >= p.n_q * p.n_heads) { return; }
    var x: array<f32, {{HEAD_DIM}}>;
    for (var j = 0u; j < HD; j = j + 1u) { x[j] = q[idx * HD + j]; }
    hadamard(&x);
    for (var j = 0u; j < HD; j = j + 1u) { qr[idx * HD + j] = x[j]; }
}
