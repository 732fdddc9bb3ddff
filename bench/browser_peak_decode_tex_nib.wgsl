// bench/browser_peak.py: browser_peak_decode_tex.wgsl (one texel per step by textureLoad) with the
// codes decoded as browser_peak_decode_nib.wgsl (the CPU matmul's nib_lo): the closest of these
// kernels to the CPU matmul's inner loop, with x held in registers and the Q4_1 scale folded into x.
@group(0) @binding(0) var wt: texture_2d<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

fn nib_lo(q: u32) -> vec4<f32> {  // as runtime/bonsai/ops/quant_lanes.wgsl
    return vec4<f32>(f32(q & 15u), f32((q >> 8u) & 15u), f32((q >> 16u) & 15u), f32((q >> 24u) & 15u));
}

@compute @workgroup_size({{WG}})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let s = f32(g.x & 255u) * 1e-4;
    let x0 = vec4<f32>(0.1, 0.2, 0.3, 0.4) + s; let x1 = x0 * 0.5; let x2 = x0 - 0.25; let x3 = x0 * -0.75;
    let x4 = x0 + 0.5; let x5 = x0 * 0.125; let x6 = x0 - 1.0; let x7 = x0 * 1.5;
    var a0 = vec4<f32>(0.0); var a1 = a0; var a2 = a0; var a3 = a0; var a4 = a0; var a5 = a0; var a6 = a0; var a7 = a0;
    let base = g.x * {{ITERS}}u;
    for (var i = 0u; i < {{ITERS}}u; i++) {
        let t = (base + i) & ({{TEXELS}}u - 1u);
        let q = textureLoad(wt, vec2<u32>(t & 1023u, t >> 10u), 0);
        let h = q >> vec4<u32>(4u);
        a0 = fma(nib_lo(q.x), x0, a0); a1 = fma(nib_lo(q.y), x1, a1);
        a2 = fma(nib_lo(q.z), x2, a2); a3 = fma(nib_lo(q.w), x3, a3);
        a4 = fma(nib_lo(h.x), x4, a4); a5 = fma(nib_lo(h.y), x5, a5);
        a6 = fma(nib_lo(h.z), x6, a6); a7 = fma(nib_lo(h.w), x7, a7);
    }
    out[g.x] = dot((a0 + a1) + (a2 + a3) + (a4 + a5) + (a6 + a7), vec4<f32>(1.0));
}
