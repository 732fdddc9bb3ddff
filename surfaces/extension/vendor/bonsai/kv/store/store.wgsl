// Store K/V rows into the cache's row formats: f32 copy, or 8/4-bit per row / per block (spec:
// bonsai/kv/format/codec.py). One workgroup per row. Rows 0..n*N_KV-1 come from k_src (from word
// p.src_word on: [n, N_KV, HD] f32), the next n*N_KV from v_src (from the same word); K row r is written at dst[p.dst_word + r * K_WORDS ..],
// V row r at dst[p.dst_word + n*N_KV*K_WORDS + r * V_WORDS ..], and flags[p.flag_base + row] gets
// 0 (ok) | 1 (non-finite value) | 2 (a scale would overflow f16).

struct Params { n: u32, dst_word: u32, flag_base: u32, src_word: u32 }

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> k_src: array<f32>;
@group(0) @binding(2) var<storage, read> v_src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;
@group(0) @binding(4) var<storage, read_write> flags: array<u32>;

const HD: u32 = {{HEAD_DIM}}u;
const N_KV: u32 = {{N_KV}}u;
const K_BITS: u32 = {{K_BITS}}u;    // 32 = f32
const K_BLOCK: u32 = {{K_BLOCK}}u;  // values per scale
const K_WORDS: u32 = {{K_WORDS}}u;
const V_BITS: u32 = {{V_BITS}}u;
const V_BLOCK: u32 = {{V_BLOCK}}u;
const V_WORDS: u32 = {{V_WORDS}}u;
const K_ASYM: bool = {{K_ASYM}};   // asymmetric per row: codes 0..15, one word = scale | min << 16
const V_ASYM: bool = {{V_ASYM}};
const ROTATE_K: bool = {{ROTATE_K}};
const K_LIMIT: f32 = {{K_LIMIT}};  // f32 K kept for per-channel quantisation: flag |x| >= this (0: none)
const V_LIMIT: f32 = {{V_LIMIT}};  // f32 V kept in the residual, quantised later: flag |x| >= this (0: none)

//#include "../format/rounding.wgsl"

//#include "../format/hadamard.wgsl"

// Row r of a dispatch over 2 * n * N_KV rows (K rows, then V rows): where its values come from (the
// first float in k_src / v_src) and where it is written (its first word in dst). Both entries use these.
fn half_rows() -> u32 { return p.n * N_KV; }

fn row_src(r: u32) -> u32 { return p.src_word + (r % half_rows()) * HD; }

fn row_dst(r: u32) -> u32 {
    if (r >= half_rows()) { return p.dst_word + half_rows() * K_WORDS + (r - half_rows()) * V_WORDS; }
    return p.dst_word + r * K_WORDS;
}

// f32 rows (no rotation), one workgroup per row, invocation j copying values j, j + 64, ...: the same
// words and the same flag as `main_rows` (1: a non-finite value; else 2: a value at or above the limit),
// with no invocation walking the row alone (bench/NOTES.md: that cost 15 us of a decode step's 30 layers).
// ALSO: every word goes to dst2 as well, K rows from word d2.k and V rows from d2.v on (a per-step
// parameter): the copy into the window slot (or the f32 residual) that scatter.wgsl would make next.
const ALSO: bool = {{ALSO}};
struct Also { k: u32, v: u32, a0: u32, a1: u32 }
@group(0) @binding(5) var<storage, read_write> dst2: array<u32>;
@group(0) @binding(6) var<storage, read> d2: Also;
var<workgroup> non_finite: atomic<u32>;
var<workgroup> over_limit: atomic<u32>;

@compute @workgroup_size(64)
fn main_f32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
            @builtin(local_invocation_index) li: u32) {
    let r = wid.y * nw.x + wid.x;
    if (r >= 2u * half_rows()) { return; }
    let is_v = r >= half_rows();
    let src = row_src(r);
    let out = row_dst(r);
    var out2 = d2.k + r * K_WORDS;
    var limit = K_LIMIT;
    if (is_v) {
        out2 = d2.v + (r - half_rows()) * V_WORDS;
        limit = V_LIMIT;
    }
    if (li == 0u) {
        atomicStore(&non_finite, 0u);
        atomicStore(&over_limit, 0u);
    }
    workgroupBarrier();
    for (var j = li; j < HD; j = j + 64u) {
        var v: f32;
        if (is_v) { v = v_src[src + j]; } else { v = k_src[src + j]; }
        if ((bitcast<u32>(v) & 0x7fffffffu) >= 0x7f800000u) { atomicOr(&non_finite, 1u); }
        if (limit > 0.0 && abs(v) >= limit) { atomicOr(&over_limit, 1u); }
        dst[out + j] = bitcast<u32>(v);
        if (ALSO) { dst2[out2 + j] = bitcast<u32>(v); }
    }
    workgroupBarrier();
    if (li == 0u) {
        var bad = 0u;
        if (atomicLoad(&over_limit) != 0u) { bad = 2u; }
        if (atomicLoad(&non_finite) != 0u) { bad = 1u; }
        flags[p.flag_base + r] = bad;
    }
}

// Every other row, one workgroup per row: the row is staged in workgroup memory; invocation 0 flags it,
// rotates it (q4r's K: a private copy through hadamard.wgsl, skipped for a flagged row) and takes its
// scales, the codec's comparisons in the codec's order; then invocation w packs value word w. (One
// invocation per row with the row in a private array, the kernel before it, took 25 us for a q4res V
// group's 192 rows on the H200, 6 ms of a 512-token prefill step: bench/NOTES.md, commit a5062ac.)
var<workgroup> xs: array<f32, {{HEAD_DIM}}>;
var<workgroup> row_scales: array<u32, {{HEAD_DIM}}>;  // asymmetric: [0] = scale | min << 16; else per block
var<workgroup> row_bad: u32;

fn row_params(bits: u32, block: u32, asym: bool, limit: f32, rotate: bool) {
    var bad = 0u;
    for (var j = 0u; j < HD; j = j + 1u) {
        if ((bitcast<u32>(xs[j]) & 0x7fffffffu) >= 0x7f800000u) { bad = 1u; }
    }
    if (rotate && bad == 0u) {
        var x: array<f32, {{HEAD_DIM}}>;
        for (var j = 0u; j < HD; j = j + 1u) { x[j] = xs[j]; }
        hadamard(&x);
        for (var j = 0u; j < HD; j = j + 1u) { xs[j] = x[j]; }
    }
    if (bits == 32u) {  // f32 rows kept to quantise later (grouped K, a V residual): flag the limit
        for (var j = 0u; j < HD; j = j + 1u) {
            if (bad == 0u && limit > 0.0 && abs(xs[j]) >= limit) { bad = 2u; }
        }
    } else if (asym) {
        var lo = xs[0];
        var hi = xs[0];
        for (var j = 1u; j < HD; j = j + 1u) {
            lo = min(lo, xs[j]);
            hi = max(hi, xs[j]);
        }
        var sm = 0u;
        if (bad == 0u) { sm = asym_params(lo, hi); }
        if (sm == 0xffffffffu) {
            bad = 2u;
            sm = 0u;
        }
        row_scales[0] = sm;
    } else {
        let qmax = (1u << (bits - 1u)) - 1u;
        for (var b = 0u; b < HD / block; b = b + 1u) {
            var amax_bits = 0u;
            for (var j = b * block; j < (b + 1u) * block; j = j + 1u) {
                amax_bits = max(amax_bits, bitcast<u32>(xs[j]) & 0x7fffffffu);
            }
            let amax = bitcast<f32>(amax_bits);
            var sb = 0u;
            if (bad == 0u && amax >= f32(qmax) * 65520.0) { bad = 2u; }
            if (bad == 0u) { sb = scale_bits(amax, f32(qmax)); }
            row_scales[b] = sb;
        }
    }
    row_bad = bad;
}

@compute @workgroup_size(64)
fn main_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
             @builtin(local_invocation_index) li: u32) {
    let r = wid.y * nw.x + wid.x;
    if (r >= 2u * half_rows()) { return; }
    let is_v = r >= half_rows();
    let src = row_src(r);
    for (var j = li; j < HD; j = j + 64u) {
        if (is_v) { xs[j] = v_src[src + j]; } else { xs[j] = k_src[src + j]; }
    }
    var bits = K_BITS;
    var block = K_BLOCK;
    var asym = K_ASYM;
    var limit = K_LIMIT;
    let out = row_dst(r);
    if (is_v) {
        bits = V_BITS;
        block = V_BLOCK;
        asym = V_ASYM;
        limit = V_LIMIT;
    }
    workgroupBarrier();
    if (li == 0u) { row_params(bits, block, asym, limit, ROTATE_K && !is_v); }
    workgroupBarrier();
    if (bits == 32u) {
        for (var j = li; j < HD; j = j + 64u) { dst[out + j] = bitcast<u32>(xs[j]); }
        if (li == 0u) { flags[p.flag_base + r] = row_bad; }
        return;
    }
    let qmax = (1u << (bits - 1u)) - 1u;
    let per = 32u / bits;
    let value_words = HD / per;
    for (var w = li; w < value_words; w = w + 64u) {
        var word = 0u;
        for (var i = 0u; i < per; i = i + 1u) {
            let x = xs[w * per + i];
            var code: u32;
            if (asym) {
                code = asym_code(x, row_scales[0]);
            } else {
                let sb = row_scales[(w * per + i) / block];
                code = quant_code(x, sb, h2f(sb), qmax);
            }
            word = word | (code << (bits * i));
        }
        dst[out + w] = word;
    }
    if (li == 0u) {
        if (asym) {
            dst[out + value_words] = row_scales[0];
        } else {
            for (var b = 0u; b < HD / block; b = b + 2u) {
                var scales = row_scales[b];
                if (b + 1u < HD / block) { scales = scales | (row_scales[b + 1u] << 16u); }
                dst[out + value_words + b / 2u] = scales;
            }
        }
        flags[p.flag_base + r] = row_bad;
    }
}
