// f16 bits -> f32 without shader-f16 (//#include): the KV formats' scales and mins. Exact for every
// finite f16; 0x7c00 (infinity) maps to 65536, which the quantisers use only as the upper neighbour
// of 65504 when forming a rounding midpoint.
fn h2f(h: u32) -> f32 {
    let e = (h >> 10u) & 31u;
    let m = h & 1023u;
    if (e == 0u) { return f32(m) * 5.9604644775390625e-8; }  // m * 2^-24, exact
    return bitcast<f32>(((e + 112u) << 23u) | (m << 13u));
}

fn h2f_signed(h: u32) -> f32 {
    let x = h2f(h & 0x7fffu);
    if ((h & 0x8000u) != 0u) { return -x; }
    return x;
}
