// bench/browser_peak.py: a Q4_1-style decode mix with no loads. Each step takes four packed words (32
// 4-bit codes, as one Q4_1 texel) and, per code, a shift, a mask, a u32 -> f32 convert and an fma into
// one of eight accumulators (x folded with the scale, as a matvec does); then the words advance by a
// per-invocation step, so every code differs and nothing is constant. ITERS steps, one store.
@group(0) @binding(0) var<storage, read_write> out: array<f32>;

@compute @workgroup_size({{WG}})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    var q = vec4<u32>(g.x * 2654435761u, g.x ^ 0x5bd1e995u, g.x + 0x9e3779b9u, ~g.x);
    let step = vec4<u32>(g.x | 1u, 0x01234567u, 0x89abcdefu, (g.x << 3u) | 5u);
    let s = f32(g.x & 255u) * 1e-4;
    let x0 = vec4<f32>(0.1, 0.2, 0.3, 0.4) + s; let x1 = x0 * 0.5; let x2 = x0 - 0.25; let x3 = x0 * -0.75;
    let x4 = x0 + 0.5; let x5 = x0 * 0.125; let x6 = x0 - 1.0; let x7 = x0 * 1.5;
    var a0 = vec4<f32>(0.0); var a1 = a0; var a2 = a0; var a3 = a0; var a4 = a0; var a5 = a0; var a6 = a0; var a7 = a0;
    let k = vec4<u32>(15u);
    for (var i = 0u; i < {{ITERS}}u; i++) {
        a0 = fma(vec4<f32>(q & k), x0, a0);
        a1 = fma(vec4<f32>((q >> vec4<u32>(4u)) & k), x1, a1);
        a2 = fma(vec4<f32>((q >> vec4<u32>(8u)) & k), x2, a2);
        a3 = fma(vec4<f32>((q >> vec4<u32>(12u)) & k), x3, a3);
        a4 = fma(vec4<f32>((q >> vec4<u32>(16u)) & k), x4, a4);
        a5 = fma(vec4<f32>((q >> vec4<u32>(20u)) & k), x5, a5);
        a6 = fma(vec4<f32>((q >> vec4<u32>(24u)) & k), x6, a6);
        a7 = fma(vec4<f32>(q >> vec4<u32>(28u)), x7, a7);
        q += step;
    }
    out[g.x] = dot((a0 + a1) + (a2 + a3) + (a4 + a5) + (a6 + a7), vec4<f32>(1.0));
}
