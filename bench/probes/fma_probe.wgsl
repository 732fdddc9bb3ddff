// bench/probes/fma_probe.py: the FMA rate WGSL reaches on this adapter in several forms of the same work. Each entry
// runs ITERS rounds of independent multiply-add chains per invocation and stores one sum (no other memory
// traffic); the forms differ in chain count, scalar or vec4 chains, fma() or `a * m + c`, and a written-out round.
@group(0) @binding(0) var<storage, read_write> out: array<f32>;

const M: f32 = 0.999;
const C: f32 = 0.001;

// 8 scalar chains, fma(): roofline_probe.wgsl's form
@compute @workgroup_size({{WG}})
fn chains8(@builtin(global_invocation_id) g: vec3<u32>) {
    var a0 = f32(g.x) * 1e-7; var a1 = a0 + 1.0; var a2 = a0 + 2.0; var a3 = a0 + 3.0;
    var a4 = a0 + 4.0; var a5 = a0 + 5.0; var a6 = a0 + 6.0; var a7 = a0 + 7.0;
    for (var i = 0u; i < {{ITERS}}u; i++) {
        a0 = fma(a0, M, C); a1 = fma(a1, M, C); a2 = fma(a2, M, C); a3 = fma(a3, M, C);
        a4 = fma(a4, M, C); a5 = fma(a5, M, C); a6 = fma(a6, M, C); a7 = fma(a7, M, C);
    }
    out[g.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

// 8 scalar chains, `a * m + c` (what the matmul kernels write)
@compute @workgroup_size({{WG}})
fn muladd8(@builtin(global_invocation_id) g: vec3<u32>) {
    var a0 = f32(g.x) * 1e-7; var a1 = a0 + 1.0; var a2 = a0 + 2.0; var a3 = a0 + 3.0;
    var a4 = a0 + 4.0; var a5 = a0 + 5.0; var a6 = a0 + 6.0; var a7 = a0 + 7.0;
    let m = out[0] + M;  // not a constant the compiler could fold
    for (var i = 0u; i < {{ITERS}}u; i++) {
        a0 = a0 * m + C; a1 = a1 * m + C; a2 = a2 * m + C; a3 = a3 * m + C;
        a4 = a4 * m + C; a5 = a5 * m + C; a6 = a6 * m + C; a7 = a7 * m + C;
    }
    out[g.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

// 8 scalar chains, four rounds written out per loop step (ITERS / 4 steps)
@compute @workgroup_size({{WG}})
fn unrolled8(@builtin(global_invocation_id) g: vec3<u32>) {
    var a0 = f32(g.x) * 1e-7; var a1 = a0 + 1.0; var a2 = a0 + 2.0; var a3 = a0 + 3.0;
    var a4 = a0 + 4.0; var a5 = a0 + 5.0; var a6 = a0 + 6.0; var a7 = a0 + 7.0;
    for (var i = 0u; i < {{ITERS}}u; i += 4u) {
        a0 = fma(a0, M, C); a1 = fma(a1, M, C); a2 = fma(a2, M, C); a3 = fma(a3, M, C);
        a4 = fma(a4, M, C); a5 = fma(a5, M, C); a6 = fma(a6, M, C); a7 = fma(a7, M, C);
        a0 = fma(a0, M, C); a1 = fma(a1, M, C); a2 = fma(a2, M, C); a3 = fma(a3, M, C);
        a4 = fma(a4, M, C); a5 = fma(a5, M, C); a6 = fma(a6, M, C); a7 = fma(a7, M, C);
        a0 = fma(a0, M, C); a1 = fma(a1, M, C); a2 = fma(a2, M, C); a3 = fma(a3, M, C);
        a4 = fma(a4, M, C); a5 = fma(a5, M, C); a6 = fma(a6, M, C); a7 = fma(a7, M, C);
        a0 = fma(a0, M, C); a1 = fma(a1, M, C); a2 = fma(a2, M, C); a3 = fma(a3, M, C);
        a4 = fma(a4, M, C); a5 = fma(a5, M, C); a6 = fma(a6, M, C); a7 = fma(a7, M, C);
    }
    out[g.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

// 8 vec4 chains (32 lanes' worth), `a * m + c` as the tiled matmul's accumulators
@compute @workgroup_size({{WG}})
fn vec4x8(@builtin(global_invocation_id) g: vec3<u32>) {
    var a0 = vec4<f32>(f32(g.x) * 1e-7, 1.0, 2.0, 3.0); var a1 = a0 + 1.0; var a2 = a0 + 2.0; var a3 = a0 + 3.0;
    var a4 = a0 + 4.0; var a5 = a0 + 5.0; var a6 = a0 + 6.0; var a7 = a0 + 7.0;
    let m = out[0] + M;
    for (var i = 0u; i < {{ITERS}}u / 4u; i++) {  // the same FMAs per invocation as the scalar forms
        a0 = a0 * m + C; a1 = a1 * m + C; a2 = a2 * m + C; a3 = a3 * m + C;
        a4 = a4 * m + C; a5 = a5 * m + C; a6 = a6 * m + C; a7 = a7 * m + C;
    }
    let s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    out[g.x] = s.x + s.y + s.z + s.w;
}
