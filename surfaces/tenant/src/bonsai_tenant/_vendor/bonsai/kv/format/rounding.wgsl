// Exact rounding helpers shared by the KV quantisers (store.wgsl, group.wgsl), included with
// //#include. Spec: bonsai/kv/format/codec.py. No shader-f16 and no pack2x16float: every rounding is
// integer/exact-product code, identical on every device (WGSL division is not correctly rounded,
// so it is only ever a first guess here).

//#include "f16.wgsl"

// Round-to-nearest-even f16 bits of a finite x >= 0 (a first guess; corrected by the caller).
fn f2h_guess(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let e = i32((b >> 23u) & 255u) - 127;
    let m = b & 0x7fffffu;
    if (e > 15) { return 0x7c00u; }
    if (e >= -14) {
        var h = (u32(e + 15) << 10u) | (m >> 13u);
        let rem = m & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
        return h;
    }
    if (e < -25) { return 0u; }
    let sig = m | 0x800000u;
    let shift = u32(-(e + 1));
    var h = sig >> shift;
    let rem = sig & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u) == 1u)) { h = h + 1u; }
    return h;
}

// f16 bits of round-to-nearest-even(amax / qmax), exact for qmax <= 127: midpoints between
// neighbouring f16 values (<= 12 significant bits) times qmax (<= 7 bits) are exact f32
// products, so comparisons decide. amax must be 0 or a normal f32.
fn scale_bits(amax: f32, qmax: f32) -> u32 {
    if (bitcast<u32>(amax) < 0x00800000u) { return 0u; }  // zero or subnormal amax -> scale 0
    var h = f2h_guess(amax / qmax);
    if (h < 0x7c00u) {
        let t = qmax * ((h2f(h) + h2f(h + 1u)) * 0.5);
        if (amax > t || (amax == t && (h & 1u) == 1u)) { h = h + 1u; }
    }
    if (h > 0u && h <= 0x7c00u) {
        let t = qmax * ((h2f(h - 1u) + h2f(min(h, 0x7c00u))) * 0.5);
        if (amax < t || (amax == t && (h & 1u) == 1u)) { h = h - 1u; }
    }
    return h;
}

// round-half-even(a / s) for 0 <= a <= ~(top - 1.5) s, exact: (n+1)*s and (2n+1)*s are exact in f32.
fn round_ratio(a: f32, s: f32, top: f32) -> u32 {
    var n = u32(clamp(floor(a / s), 0.0, top));
    if (f32(n) * s > a) { n = n - 1u; }
    if (f32(n + 1u) * s <= a) { n = n + 1u; }
    let t = f32(2u * n + 1u) * s;
    let a2 = 2.0 * a;
    if (a2 > t || (a2 == t && (n & 1u) == 1u)) { n = n + 1u; }
    return n;
}

// Round-to-nearest-even signed f16 bits of a finite f32 (0x7c00 magnitude when it overflows).
fn f2h_signed(x: f32) -> u32 {
    return f2h_guess(abs(x)) | ((bitcast<u32>(x) >> 16u) & 0x8000u);
}

// Asymmetric (scale, min) of values in [lo, hi] (codec.py): returns scale bits | min bits << 16,
// or 0xffffffff when they do not fit f16 (the caller flags the row).
fn asym_params(lo: f32, hi: f32) -> u32 {
    let mn = f2h_signed(lo);
    let d = hi - h2f_signed(mn);
    if (abs(lo) >= 65520.0 || d >= 15.0 * 65520.0) { return 0xffffffffu; }
    var sb = 0u;
    if (d >= bitcast<f32>(0x00800000u)) { sb = scale_bits(d, 15.0); }
    return sb | (mn << 16u);
}

// Asymmetric code of x: 0 if s == 0, else clamp(round((x - min) / s), 0, 15).
fn asym_code(x: f32, sm: u32) -> u32 {
    let sb = sm & 0xffffu;
    if (sb == 0u) { return 0u; }
    let e = x - h2f_signed(sm >> 16u);
    if (e <= 0.0) { return 0u; }
    return min(round_ratio(e, h2f(sb), 24.0), 15u);
}

// Offset-binary code of x with scale s (f32 value of f16 bits sb): clamp(round(x/s) + off, 0, 2 off - 1).
fn quant_code(x: f32, sb: u32, s: f32, qmax: u32) -> u32 {
    if (sb == 0u) { return qmax + 1u; }
    let n = i32(round_ratio(abs(x), s, f32(qmax + 9u)));
    var q = n;
    if ((bitcast<u32>(x) & 0x80000000u) != 0u) { q = -n; }
    return u32(clamp(q + i32(qmax) + 1, 0, 2 * i32(qmax) + 1));
}
