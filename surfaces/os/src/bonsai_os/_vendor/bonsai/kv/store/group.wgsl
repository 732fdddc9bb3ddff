// Quantise full groups of GROUP positions of K per channel (format c4, spec: bonsai/kv/format/codec.py):
// group k of the dispatch reads GROUP f32 rows [GROUP, N_KV, HD] at src[p.src_word + k * GROUP * N_KV * HD ..],
// writes GROUP c4 rows [GROUP, N_KV, ROW_WORDS] at dst[p.dst_word + k * GROUP * N_KV * ROW_WORDS ..] (the rows
// of consecutive positions, as one group a dispatch would). One workgroup per (KV head g, group k), in three phases: each
// invocation finds its channels' range over the group (positions in increasing order) and their scale
// words; after a barrier each packs value words (8 channels of one row, from the shared scales); each
// writes its channels' scale words. No two invocations write the same word. (One invocation per octet of
// channels doing all of it serially took 178 us a group on the H200, 42.6 ms of a q4res 512-token
// prefill step; bench/NOTES.md session 11.)

struct Params { src_word: u32, dst_word: u32, p0: u32, p1: u32 }

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

const HD: u32 = {{HEAD_DIM}}u;
const N_KV: u32 = {{N_KV}}u;
const GROUP: u32 = {{GROUP}}u;
const ROW_WORDS: u32 = {{ROW_WORDS}}u;
const CPR: u32 = HD / GROUP;  // channels whose scales each row carries
const ASYM: bool = {{ASYM}};  // c4a: one word per channel, scale | min << 16 (else two f16 scales a word)

//#include "../format/rounding.wgsl"

const WG: u32 = 64u;
var<workgroup> sb: array<u32, {{HEAD_DIM}}>;  // channel d's scale bits (c4a: scale | min << 16)
var<workgroup> sf: array<f32, {{HEAD_DIM}}>;  // channel d's scale as f32 (c4)

var<private> t0: u32;  // the first position of this workgroup's group, counted from the dispatch's first

fn x_at(g: u32, t: u32, d: u32) -> f32 { return src[p.src_word + ((t0 + t) * N_KV + g) * HD + d]; }

// c4a: channel d's scale word from its range over the group (the order of the positions kept).
fn asym_channel(g: u32, d: u32) -> u32 {
    var lo = x_at(g, 0u, d);
    var hi = lo;
    var t = 1u;
    for (; t + 8u <= GROUP; t = t + 8u) {  // eight loads written out before they are compared
        let x0 = x_at(g, t, d); let x1 = x_at(g, t + 1u, d); let x2 = x_at(g, t + 2u, d); let x3 = x_at(g, t + 3u, d);
        let x4 = x_at(g, t + 4u, d); let x5 = x_at(g, t + 5u, d); let x6 = x_at(g, t + 6u, d); let x7 = x_at(g, t + 7u, d);
        lo = min(lo, x0); hi = max(hi, x0); lo = min(lo, x1); hi = max(hi, x1);
        lo = min(lo, x2); hi = max(hi, x2); lo = min(lo, x3); hi = max(hi, x3);
        lo = min(lo, x4); hi = max(hi, x4); lo = min(lo, x5); hi = max(hi, x5);
        lo = min(lo, x6); hi = max(hi, x6); lo = min(lo, x7); hi = max(hi, x7);
    }
    for (; t < GROUP; t = t + 1u) {
        let x = x_at(g, t, d);
        lo = min(lo, x);
        hi = max(hi, x);
    }
    let sm = asym_params(lo, hi);
    return select(sm, 0u, sm == 0xffffffffu);  // flagged by the store kernel
}

// c4: channel d's scale bits from its largest magnitude over the group.
fn sym_channel(g: u32, d: u32) -> u32 {
    var amax_bits = 0u;
    for (var t = 0u; t < GROUP; t = t + 1u) {
        amax_bits = max(amax_bits, bitcast<u32>(x_at(g, t, d)) & 0x7fffffffu);
    }
    let amax = bitcast<f32>(amax_bits);
    if (amax < 7.0 * 65520.0) { return scale_bits(amax, 7.0); }  // larger: flagged by the store kernel
    return 0u;
}

fn code(x: f32, d: u32) -> u32 {
    if (ASYM) { return asym_code(x, sb[d]); }
    return quant_code(x, sb[d], sf[d], 7u);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let g = wid.x;  // N_KV workgroups per group: uniform
    t0 = wid.y * GROUP;
    let j = lid.x;
    for (var d = j; d < HD; d = d + WG) {
        if (ASYM) { sb[d] = asym_channel(g, d); } else { sb[d] = sym_channel(g, d); }
        sf[d] = h2f(sb[d]);
    }
    workgroupBarrier();
    for (var wd = j; wd < GROUP * (HD / 8u); wd = wd + WG) {  // value word c of row t
        let t = wd / (HD / 8u);
        let c = wd % (HD / 8u);
        let b = c * 8u;
        let x0 = x_at(g, t, b); let x1 = x_at(g, t, b + 1u); let x2 = x_at(g, t, b + 2u); let x3 = x_at(g, t, b + 3u);
        let x4 = x_at(g, t, b + 4u); let x5 = x_at(g, t, b + 5u); let x6 = x_at(g, t, b + 6u); let x7 = x_at(g, t, b + 7u);
        dst[p.dst_word + ((t0 + t) * N_KV + g) * ROW_WORDS + c] = code(x0, b) | (code(x1, b + 1u) << 4u) | (code(x2, b + 2u) << 8u)
            | (code(x3, b + 3u) << 12u) | (code(x4, b + 4u) << 16u) | (code(x5, b + 5u) << 20u)
            | (code(x6, b + 6u) << 24u) | (code(x7, b + 7u) << 28u);
    }
    for (var d = j; d < HD; d = d + WG) {  // scale words: c4a one per channel; c4 two channels a word
        let at = p.dst_word + ((t0 + d / CPR) * N_KV + g) * ROW_WORDS + HD / 8u;
        if (ASYM) {
            dst[at + d % CPR] = sb[d];
        } else if (d % 2u == 0u) {
            dst[at + (d % CPR) / 2u] = sb[d] | (sb[d + 1u] << 16u);
        }
    }
}
