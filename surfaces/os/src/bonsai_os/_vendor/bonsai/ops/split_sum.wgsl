// The tiled matmul's split K, step 2 of 2 (matmul_tiled.wgsl with SPLIT parts wrote them): y[t, off + r] (+)=
// part 0 + part 1 + ... + part SPLIT-1, summed in part order, one invocation per output.

const SPLIT: u32 = {{SPLIT}}u;
const ACCUM: bool = {{ACCUM}};   // add into y (the fused residual) instead of overwriting it

@group(0) @binding(0) var<storage, read> part: array<f32>;      // [SPLIT, t, n]
@group(0) @binding(1) var<storage, read_write> y: array<f32>;   // (t, y_stride), rows at y_offset
@group(0) @binding(2) var<storage, read> p: array<u32>;         // the matmul's params: n, k, t, _, _, y_stride, y_offset

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = p[0];
    let i = gid.x;  // t * n + r
    if (i >= n * p[2]) { return; }
    var s = part[i];
    for (var z = 1u; z < SPLIT; z++) { s = s + part[z * n * p[2] + i]; }
    let yi = (i / n) * p[5] + p[6] + i % n;
    if (ACCUM) { y[yi] = y[yi] + s; } else { y[yi] = s; }
}
