// Store K/V rows into the cache format: f32 copy or 4-bit quantise (spec: bonsai/kv/quant4.py).
// One invocation per row. Rows 0..n*N_KV-1 come from k_src (from position p.src_pos on), the next n*N_KV from v_src; row r is
// written at dst[p.dst_word + r * ROW_WORDS ..], and flags[p.flag_base + r] gets
// 0 (ok) | 1 (non-finite value) | 2 (4-bit scale would overflow f16).
// No shader-f16 and no pack2x16float: every rounding is integer/exact-product code, identical on
// every device (WGSL division is not correctly rounded, so it is only ever a first guess here).

struct Params { n: u32, dst_word: u32, flag_base: u32, src_pos: u32 }

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> k_src: array<f32>;
@group(0) @binding(2) var<storage, read> v_src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;
@group(0) @binding(4) var<storage, read_write> flags: array<u32>;

const HD: u32 = {{HEAD_DIM}}u;
const N_KV: u32 = {{N_KV}}u;
const ROW_WORDS: u32 = {{ROW_WORDS}}u;
const Q4: bool = {{Q4}};
const ROTATE_K: bool = {{ROTATE_K}};

// f16 bits (positive, finite or 0x7c00) -> f32 value; 0x7c00 maps to 65536 (only used as the
// upper neighbour of 65504 when forming a rounding midpoint).
fn h2f(h: u32) -> f32 {
    let e = (h >> 10u) & 31u;
    let m = h & 1023u;
    if (e == 0u) { return f32(m) * 5.9604644775390625e-8; }  // m * 2^-24, exact
    return bitcast<f32>(((e + 112u) << 23u) | (m << 13u));
}

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

// f16 bits of round-to-nearest-even(amax / 7), exact: midpoints between neighbouring f16
// values times 7 are exact f32 products (<= 16 significant bits), so comparisons decide.
fn scale_bits(amax: f32) -> u32 {
    var h = f2h_guess(amax / 7.0);
    if (h < 0x7c00u) {
        let t = 7.0 * ((h2f(h) + h2f(h + 1u)) * 0.5);
        if (amax > t || (amax == t && (h & 1u) == 1u)) { h = h + 1u; }
    }
    if (h > 0u && h <= 0x7c00u) {
        let t = 7.0 * ((h2f(h - 1u) + h2f(min(h, 0x7c00u))) * 0.5);
        if (amax < t || (amax == t && (h & 1u) == 1u)) { h = h - 1u; }
    }
    return h;
}

// round-half-even(a / s) for 0 <= a <= ~10.5 s, exact: (n+1)*s and (2n+1)*s are exact in f32.
fn round_ratio(a: f32, s: f32) -> u32 {
    var n = u32(clamp(floor(a / s), 0.0, 16.0));
    if (f32(n) * s > a) { n = n - 1u; }
    if (f32(n + 1u) * s <= a) { n = n + 1u; }
    let t = f32(2u * n + 1u) * s;
    let a2 = 2.0 * a;
    if (a2 > t || (a2 == t && (n & 1u) == 1u)) { n = n + 1u; }
    return n;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let half_rows = p.n * N_KV;
    let r = gid.x;
    if (r >= 2u * half_rows) { return; }
    let is_v = r >= half_rows;
    let src = (p.src_pos * N_KV + r % half_rows) * HD;
    var x: array<f32, {{HEAD_DIM}}>;
    var bad = 0u;
    var amax_bits = 0u;
    for (var j = 0u; j < HD; j = j + 1u) {
        var v: f32;
        if (is_v) { v = v_src[src + j]; } else { v = k_src[src + j]; }
        x[j] = v;
        let bits = bitcast<u32>(v) & 0x7fffffffu;
        if (bits >= 0x7f800000u) { bad = 1u; }
        amax_bits = max(amax_bits, bits);
    }
    if (ROTATE_K && !is_v && bad == 0u) {
        // normalised Sylvester Hadamard, same butterfly order as bonsai/kv/rotate.py
        for (var h = 1u; h < HD; h = h * 2u) {
            for (var i = 0u; i < HD; i = i + 1u) {
                if ((i & h) == 0u) {
                    let a = x[i];
                    let b = x[i + h];
                    x[i] = a + b;
                    x[i + h] = a - b;
                }
            }
        }
        amax_bits = 0u;
        for (var j = 0u; j < HD; j = j + 1u) {
            x[j] = x[j] * {{INV_SQRT_HD}};
            amax_bits = max(amax_bits, bitcast<u32>(x[j]) & 0x7fffffffu);
        }
    }
    let out = p.dst_word + r * ROW_WORDS;
    if (!Q4) {
        for (var j = 0u; j < HD; j = j + 1u) { dst[out + j] = bitcast<u32>(x[j]); }
        flags[p.flag_base + r] = bad;
        return;
    }
    let amax = bitcast<f32>(amax_bits);
    if (bad == 0u && amax >= 458640.0) { bad = 2u; }  // 7 * 65520: scale rounds to f16 inf
    var sb = 0u;
    if (bad == 0u && amax_bits >= 0x00800000u) { sb = scale_bits(amax); }  // subnormal amax -> 0
    let s = h2f(sb);
    for (var w = 0u; w < HD / 8u; w = w + 1u) {
        var word = 0u;
        for (var i = 0u; i < 8u; i = i + 1u) {
            var raw = 8u;
            if (sb != 0u) {
                let v = x[w * 8u + i];
                let n = i32(round_ratio(abs(v), s));
                var q = n;
                if ((bitcast<u32>(v) & 0x80000000u) != 0u) { q = -n; }
                raw = u32(clamp(q + 8, 0, 15));
            }
            word = word | (raw << (4u * i));
        }
        dst[out + w] = word;
    }
    dst[out + HD / 8u] = sb;
    flags[p.flag_base + r] = bad;
}
