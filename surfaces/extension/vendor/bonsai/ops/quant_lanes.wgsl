// Four weights at a time from packed words (//#include): the low nibble of each byte (nib_lo),
// four signed bytes (i8x4), four sign bits as +-d (bits4). Shared by matmul.wgsl and matmul_cpu.wgsl.

fn nib_lo(q: u32) -> vec4<f32> {
    return vec4<f32>(f32(q & 15u), f32((q >> 8u) & 15u), f32((q >> 16u) & 15u), f32((q >> 24u) & 15u));
}

fn i8x4(q: u32) -> vec4<f32> {
    let s = vec4<i32>(bitcast<i32>(q)) << vec4<u32>(24u, 16u, 8u, 0u);
    return vec4<f32>(s >> vec4<u32>(24u));
}

fn bits4(q: u32, d: f32) -> vec4<f32> {
    return select(vec4<f32>(-d), vec4<f32>(d), (vec4<u32>(q) & vec4<u32>(1u, 2u, 4u, 8u)) != vec4<u32>(0u));
}
