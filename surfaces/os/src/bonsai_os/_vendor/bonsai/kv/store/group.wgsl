// Quantise full groups of GROUP positions (spec: bonsai/kv/format/codec.py): K per channel (format c4, or c4a
// with ASYM) and, with V_ROWS (a V residual: q4res), the same positions' V rows per row (format q4a).
// Group k of the dispatch reads f32 rows [GROUP, N_KV, HD] of K at src[p.src_word + k * GROUP * N_KV * HD ..]
// (V: from p.v_src on) and writes GROUP rows [GROUP, N_KV, ROW_WORDS] at dst[p.dst_word + k * GROUP * N_KV *
// ROW_WORDS ..] (V: [GROUP, N_KV, V_ROW_WORDS] from p.v_dst on), the rows of consecutive positions, as one group a
// dispatch would. Every word also goes to `staged` (staging, where the host master takes the groups from), K rows
// from ps.k and V rows from ps.v on, laid out as in dst. Workgroup (KV head g, group k, z): z = 0
// quantises the group's K, z = 1 its V rows.
// Each in three phases: invocations take ranges over parts of a channel's positions (K) or of a row's values (V)
// into workgroup memory; after a barrier one invocation per channel (row) joins its parts in order into its scale
// word; after another each packs value words (8 values sharing scales); then the scale words are written. No two
// invocations write the same word. (One invocation per channel walking all 64 positions took 13.4 us a layer of a
// 512-token q4res prompt on the H100, and the V rows' store kernel, one invocation per row finding its range,
// 11.4 us more in a dispatch of its own, and a third dispatch copied the groups into staging: bench/NOTES.md
// commit bd8ccea.)

struct Params { src_word: u32, dst_word: u32, v_src: u32, v_dst: u32 }
struct Staged { k: u32, v: u32, a0: u32, a1: u32 }  // a parameter of its own: a decode step's `p` is a step parameter

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read_write> src: array<u32>;  // f32 bits; written only as `staged` (STAGED_IS_SRC)
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<storage, read_write> staged: array<u32>;  // unused with STAGED_IS_SRC
@group(0) @binding(4) var<storage, read> ps: Staged;

const HD: u32 = {{HEAD_DIM}}u;
const N_KV: u32 = {{N_KV}}u;
const GROUP: u32 = {{GROUP}}u;
const ROW_WORDS: u32 = {{ROW_WORDS}}u;
const CPR: u32 = HD / GROUP;  // channels whose scales each row carries
const ASYM: bool = {{ASYM}};  // c4a: one word per channel, scale | min << 16 (else two f16 scales a word)
const V_ROWS: bool = {{V_ROWS}};  // workgroups z = 1 quantise the V rows (q4a: HD / 8 value words, one scale word)
const V_ROW_WORDS: u32 = HD / 8u + 1u;
// a batch's rows are quantised from staging into staging: one binding for both (WebGPU forbids a buffer in two
// writable bindings of a dispatch)
const STAGED_IS_SRC: bool = {{STAGED_IS_SRC}};

//#include "../format/rounding.wgsl"

const WG: u32 = 256u;
const K_PARTS: u32 = max(WG / HD, 1u);                  // parts of a channel's positions
const K_SPAN: u32 = (GROUP + K_PARTS - 1u) / K_PARTS;   // positions per part
const V_PARTS: u32 = max(WG / GROUP, 1u);               // parts of a row's values
const V_SPAN: u32 = (HD + V_PARTS - 1u) / V_PARTS;      // values per part
var<workgroup> part_lo: array<f32, max(K_PARTS * HD, V_PARTS * GROUP)>;  // a part's min (c4: its largest magnitude's bits)
var<workgroup> part_hi: array<f32, max(K_PARTS * HD, V_PARTS * GROUP)>;  // a part's max
var<workgroup> part_bad: array<u32, V_PARTS * GROUP>;   // V: a part holds a non-finite value
var<workgroup> sb: array<u32, max(HD, GROUP)>;          // K: channel d's scale bits (c4a: scale | min << 16); V: row t's
var<workgroup> sf: array<f32, HD>;                      // channel d's scale as f32 (c4)

var<private> t0: u32;  // the first position of this workgroup's group, counted from the dispatch's first

fn x_at(g: u32, t: u32, d: u32) -> f32 { return bitcast<f32>(src[p.src_word + ((t0 + t) * N_KV + g) * HD + d]); }
fn v_at(g: u32, t: u32, d: u32) -> f32 { return bitcast<f32>(src[p.v_src + ((t0 + t) * N_KV + g) * HD + d]); }

// K word `at` of this dispatch's rows (counted from the first group's first row) into the window slot and staging
fn put_k(at: u32, word: u32) {
    dst[p.dst_word + at] = word;
    put_staged(ps.k + at, word);
}

fn put_v(at: u32, word: u32) {
    dst[p.v_dst + at] = word;
    put_staged(ps.v + at, word);
}

fn put_staged(at: u32, word: u32) {
    if (STAGED_IS_SRC) { src[at] = word; } else { staged[at] = word; }
}

fn mag_bits(x: f32) -> u32 { return bitcast<u32>(x) & 0x7fffffffu; }

// The range r (min, max) joined with eight more values, in order
fn range8(r: vec2<f32>, x0: f32, x1: f32, x2: f32, x3: f32, x4: f32, x5: f32, x6: f32, x7: f32) -> vec2<f32> {
    var lo = r.x; var hi = r.y;
    lo = min(lo, x0); hi = max(hi, x0); lo = min(lo, x1); hi = max(hi, x1);
    lo = min(lo, x2); hi = max(hi, x2); lo = min(lo, x3); hi = max(hi, x3);
    lo = min(lo, x4); hi = max(hi, x4); lo = min(lo, x5); hi = max(hi, x5);
    lo = min(lo, x6); hi = max(hi, x6); lo = min(lo, x7); hi = max(hi, x7);
    return vec2<f32>(lo, hi);
}

// Part q of channel d's positions: its (min, max) into part_lo / part_hi[i] (c4: the largest magnitude's bits).
fn k_part(g: u32, d: u32, q: u32, i: u32) {
    let a = q * K_SPAN;
    let b = min(GROUP, a + K_SPAN);
    if (a >= b) { return; }  // no positions left for this part (k_channel skips it)
    if (!ASYM) {
        var amax_bits = 0u;
        for (var t = a; t < b; t = t + 1u) { amax_bits = max(amax_bits, bitcast<u32>(x_at(g, t, d)) & 0x7fffffffu); }
        part_lo[i] = bitcast<f32>(amax_bits);
        return;
    }
    let x = x_at(g, a, d);
    var r = vec2<f32>(x, x);
    var t = a + 1u;
    for (; t + 8u <= b; t = t + 8u) {  // eight loads written out before they are compared
        r = range8(r, x_at(g, t, d), x_at(g, t + 1u, d), x_at(g, t + 2u, d), x_at(g, t + 3u, d),
                   x_at(g, t + 4u, d), x_at(g, t + 5u, d), x_at(g, t + 6u, d), x_at(g, t + 7u, d));
    }
    for (; t < b; t = t + 1u) {
        let y = x_at(g, t, d);
        r = vec2<f32>(min(r.x, y), max(r.y, y));
    }
    part_lo[i] = r.x;
    part_hi[i] = r.y;
}

// Channel d's scale word from its parts, joined in position order (asym_channel / sym_channel of the codec).
fn k_channel(d: u32) -> u32 {
    if (!ASYM) {
        var amax_bits = 0u;
        for (var q = 0u; q < K_PARTS; q = q + 1u) {
            if (q * K_SPAN < GROUP) { amax_bits = max(amax_bits, bitcast<u32>(part_lo[q * HD + d])); }
        }
        let amax = bitcast<f32>(amax_bits);
        if (amax < 7.0 * 65520.0) { return scale_bits(amax, 7.0); }  // larger: flagged by the store kernel
        return 0u;
    }
    var lo = part_lo[d];
    var hi = part_hi[d];
    for (var q = 1u; q < K_PARTS; q = q + 1u) {
        if (q * K_SPAN < GROUP) {
            lo = min(lo, part_lo[q * HD + d]);
            hi = max(hi, part_hi[q * HD + d]);
        }
    }
    let sm = asym_params(lo, hi);
    return select(sm, 0u, sm == 0xffffffffu);  // flagged by the store kernel
}

// Part q of row t's V values: (min, max) and whether one is not finite, into part_lo / part_hi / part_bad[i].
fn v_part(g: u32, t: u32, q: u32, i: u32) {
    let a = q * V_SPAN;
    let b = min(HD, a + V_SPAN);
    if (a >= b) { return; }  // no values left for this part (v_row skips it)
    let x = v_at(g, t, a);
    var r = vec2<f32>(x, x);
    var mag = mag_bits(x);  // the largest magnitude's bits: at or above infinity's if a value is not finite
    var d = a + 1u;
    for (; d + 8u <= b; d = d + 8u) {  // eight loads written out before they are compared
        let y0 = v_at(g, t, d); let y1 = v_at(g, t, d + 1u); let y2 = v_at(g, t, d + 2u); let y3 = v_at(g, t, d + 3u);
        let y4 = v_at(g, t, d + 4u); let y5 = v_at(g, t, d + 5u); let y6 = v_at(g, t, d + 6u); let y7 = v_at(g, t, d + 7u);
        r = range8(r, y0, y1, y2, y3, y4, y5, y6, y7);
        let m = max(max(max(mag_bits(y0), mag_bits(y1)), max(mag_bits(y2), mag_bits(y3))),
                    max(max(mag_bits(y4), mag_bits(y5)), max(mag_bits(y6), mag_bits(y7))));
        mag = max(mag, m);
    }
    for (; d < b; d = d + 1u) {
        let y = v_at(g, t, d);
        r = vec2<f32>(min(r.x, y), max(r.y, y));
        mag = max(mag, mag_bits(y));
    }
    part_lo[i] = r.x;
    part_hi[i] = r.y;
    part_bad[i] = select(0u, 1u, mag >= 0x7f800000u);
}

// Row t's scale word from its parts, joined in value order (store.wgsl's row_params for q4a): 0 for a row with a
// non-finite value or one whose scale or min would not fit f16.
fn v_row(t: u32) -> u32 {
    var lo = part_lo[t * V_PARTS];
    var hi = part_hi[t * V_PARTS];
    var bad = part_bad[t * V_PARTS];
    for (var q = 1u; q < V_PARTS; q = q + 1u) {
        if (q * V_SPAN < HD) {
            lo = min(lo, part_lo[t * V_PARTS + q]);
            hi = max(hi, part_hi[t * V_PARTS + q]);
            bad = bad | part_bad[t * V_PARTS + q];
        }
    }
    if (bad != 0u) { return 0u; }
    let sm = asym_params(lo, hi);
    return select(sm, 0u, sm == 0xffffffffu);
}

fn code(x: f32, d: u32) -> u32 {
    if (ASYM) { return asym_code(x, sb[d]); }
    return quant_code(x, sb[d], sf[d], 7u);
}

fn quantise_k(g: u32, j: u32) {
    for (var i = j; i < K_PARTS * HD; i = i + WG) { k_part(g, i % HD, i / HD, i); }
    workgroupBarrier();
    for (var d = j; d < HD; d = d + WG) {
        sb[d] = k_channel(d);
        sf[d] = h2f(sb[d]);
    }
    workgroupBarrier();
    for (var wd = j; wd < GROUP * (HD / 8u); wd = wd + WG) {  // value word c of row t
        let t = wd / (HD / 8u);
        let c = wd % (HD / 8u);
        let b = c * 8u;
        let x0 = x_at(g, t, b); let x1 = x_at(g, t, b + 1u); let x2 = x_at(g, t, b + 2u); let x3 = x_at(g, t, b + 3u);
        let x4 = x_at(g, t, b + 4u); let x5 = x_at(g, t, b + 5u); let x6 = x_at(g, t, b + 6u); let x7 = x_at(g, t, b + 7u);
        put_k(((t0 + t) * N_KV + g) * ROW_WORDS + c, code(x0, b) | (code(x1, b + 1u) << 4u) | (code(x2, b + 2u) << 8u)
            | (code(x3, b + 3u) << 12u) | (code(x4, b + 4u) << 16u) | (code(x5, b + 5u) << 20u)
            | (code(x6, b + 6u) << 24u) | (code(x7, b + 7u) << 28u));
    }
    for (var d = j; d < HD; d = d + WG) {  // scale words: c4a one per channel; c4 two channels a word
        let at = ((t0 + d / CPR) * N_KV + g) * ROW_WORDS + HD / 8u;
        if (ASYM) {
            put_k(at + d % CPR, sb[d]);
        } else if (d % 2u == 0u) {
            put_k(at + (d % CPR) / 2u, sb[d] | (sb[d + 1u] << 16u));
        }
    }
}

fn quantise_v(g: u32, j: u32) {
    for (var i = j; i < V_PARTS * GROUP; i = i + WG) { v_part(g, i / V_PARTS, i % V_PARTS, i); }
    workgroupBarrier();
    for (var t = j; t < GROUP; t = t + WG) { sb[t] = v_row(t); }
    workgroupBarrier();
    for (var wd = j; wd < GROUP * (HD / 8u); wd = wd + WG) {  // value word c of row t
        let t = wd / (HD / 8u);
        let c = wd % (HD / 8u);
        let b = c * 8u;
        let sm = sb[t];
        let x0 = v_at(g, t, b); let x1 = v_at(g, t, b + 1u); let x2 = v_at(g, t, b + 2u); let x3 = v_at(g, t, b + 3u);
        let x4 = v_at(g, t, b + 4u); let x5 = v_at(g, t, b + 5u); let x6 = v_at(g, t, b + 6u); let x7 = v_at(g, t, b + 7u);
        put_v(((t0 + t) * N_KV + g) * V_ROW_WORDS + c, asym_code(x0, sm) | (asym_code(x1, sm) << 4u)
            | (asym_code(x2, sm) << 8u) | (asym_code(x3, sm) << 12u) | (asym_code(x4, sm) << 16u)
            | (asym_code(x5, sm) << 20u) | (asym_code(x6, sm) << 24u) | (asym_code(x7, sm) << 28u));
    }
    for (var t = j; t < GROUP; t = t + WG) { put_v(((t0 + t) * N_KV + g) * V_ROW_WORDS + HD / 8u, sb[t]); }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) j: u32) {
    let g = wid.x;  // N_KV workgroups per group: uniform
    t0 = wid.y * GROUP;
    if (V_ROWS && wid.z == 1u) {
        quantise_v(g, j);
    } else {
        quantise_k(g, j);
    }
}
