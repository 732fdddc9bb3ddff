// Quantise one full group of GROUP positions of K per channel (format c4, spec: bonsai/kv/format/codec.py):
// reads GROUP f32 rows [GROUP, N_KV, HD] at src[p.src_word ..], writes GROUP c4 rows
// [GROUP, N_KV, ROW_WORDS] at dst[p.dst_word ..]. One invocation per (KV head g, octet c of channels
// 8c..8c+7): it owns value word c of every row of the group and the scale words of its channels
// (scales of channels 2s, 2s+1 share a word, and both are in the octet), so no two invocations
// write the same word.

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

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.x;
    if (idx >= N_KV * (HD / 8u)) { return; }
    let g = idx / (HD / 8u);
    let c = idx % (HD / 8u);
    var sb: array<u32, 8>;
    var s: array<f32, 8>;
    if (ASYM) {
        for (var i = 0u; i < 8u; i = i + 1u) {
            let d = c * 8u + i;
            var lo = src[p.src_word + g * HD + d];
            var hi = lo;
            for (var t = 1u; t < GROUP; t = t + 1u) {
                let x = src[p.src_word + (t * N_KV + g) * HD + d];
                lo = min(lo, x);
                hi = max(hi, x);
            }
            sb[i] = asym_params(lo, hi);
            if (sb[i] == 0xffffffffu) { sb[i] = 0u; }  // flagged by the store kernel
        }
        for (var t = 0u; t < GROUP; t = t + 1u) {
            var word = 0u;
            for (var i = 0u; i < 8u; i = i + 1u) {
                word = word | (asym_code(src[p.src_word + (t * N_KV + g) * HD + c * 8u + i], sb[i]) << (4u * i));
            }
            dst[p.dst_word + (t * N_KV + g) * ROW_WORDS + c] = word;
        }
        for (var i = 0u; i < 8u; i = i + 1u) {
            let d = c * 8u + i;
            dst[p.dst_word + ((d / CPR) * N_KV + g) * ROW_WORDS + HD / 8u + d % CPR] = sb[i];
        }
        return;
    }
    for (var i = 0u; i < 8u; i = i + 1u) {
        let d = c * 8u + i;
        var amax_bits = 0u;
        for (var t = 0u; t < GROUP; t = t + 1u) {
            amax_bits = max(amax_bits, bitcast<u32>(src[p.src_word + (t * N_KV + g) * HD + d]) & 0x7fffffffu);
        }
        let amax = bitcast<f32>(amax_bits);
        sb[i] = 0u;
        if (amax < 7.0 * 65520.0) { sb[i] = scale_bits(amax, 7.0); }  // larger: flagged by the store kernel
        s[i] = h2f(sb[i]);
    }
    for (var t = 0u; t < GROUP; t = t + 1u) {
        var word = 0u;
        for (var i = 0u; i < 8u; i = i + 1u) {
            let x = src[p.src_word + (t * N_KV + g) * HD + c * 8u + i];
            word = word | (quant_code(x, sb[i], s[i], 7u) << (4u * i));
        }
        dst[p.dst_word + (t * N_KV + g) * ROW_WORDS + c] = word;
    }
    for (var i = 0u; i < 8u; i = i + 2u) {
        let d = c * 8u + i;
        dst[p.dst_word + ((d / CPR) * N_KV + g) * ROW_WORDS + HD / 8u + (d % CPR) / 2u] = sb[i] | (sb[i + 1u] << 16u);
    }
}
