// bench/browser_peak.py: roofline_probe.wgsl with each fma(a, m, c) written as a * m + c (8 independent
// chains, ITERS steps, one store): the arithmetic our kernels write (dot, *, +), whether or not the
// driver fuses it.
@group(0) @binding(0) var<storage, read_write> out: array<f32>;

@compute @workgroup_size({{WG}})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    var a0 = f32(g.x) * 1e-7; var a1 = a0 + 1.0; var a2 = a0 + 2.0; var a3 = a0 + 3.0;
    var a4 = a0 + 4.0; var a5 = a0 + 5.0; var a6 = a0 + 6.0; var a7 = a0 + 7.0;
    let m = 0.999; let c = 0.001;
    for (var i = 0u; i < {{ITERS}}u; i++) {
        a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c;
        a4 = a4 * m + c; a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c;
    }
    out[g.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
