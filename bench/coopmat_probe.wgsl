// coopmat_probe.py's kernel: C[M, N] += A[M, K] B[K, N] (row-major f32) with wgpu's experimental 8x8 f32
// cooperative matrices, one subgroup (32 invocations) per 16 x 16 block of C, A and B read from global memory.
enable wgpu_cooperative_matrix;
@group(0) @binding(0) var<storage, read> a: array<f32>;        // [M, K]
@group(0) @binding(1) var<storage, read> b: array<f32>;        // [K, N]
@group(0) @binding(2) var<storage, read_write> c: array<f32>;  // [M, N]
@group(0) @binding(3) var<storage, read> dims: array<u32>;     // M, N, K

@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wid: vec3<u32>) {
    let N = dims[1]; let K = dims[2];
    let r0 = wid.y * 16u; let c0 = wid.x * 16u;
    var c00 = coopLoad<coop_mat8x8<f32, C>>(&c[r0 * N + c0], N);
    var c01 = coopLoad<coop_mat8x8<f32, C>>(&c[r0 * N + c0 + 8u], N);
    var c10 = coopLoad<coop_mat8x8<f32, C>>(&c[(r0 + 8u) * N + c0], N);
    var c11 = coopLoad<coop_mat8x8<f32, C>>(&c[(r0 + 8u) * N + c0 + 8u], N);
    for (var k = 0u; k < K; k += 8u) {
        let a0 = coopLoad<coop_mat8x8<f32, A>>(&a[r0 * K + k], K);
        let a1 = coopLoad<coop_mat8x8<f32, A>>(&a[(r0 + 8u) * K + k], K);
        let b0 = coopLoad<coop_mat8x8<f32, B>>(&b[k * N + c0], N);
        let b1 = coopLoad<coop_mat8x8<f32, B>>(&b[k * N + c0 + 8u], N);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
    }
    coopStore(c00, &c[r0 * N + c0], N);
    coopStore(c01, &c[r0 * N + c0 + 8u], N);
    coopStore(c10, &c[(r0 + 8u) * N + c0], N);
    coopStore(c11, &c[(r0 + 8u) * N + c0 + 8u], N);
}
