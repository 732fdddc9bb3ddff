// Scores of one window for the split attention variant: one invocation per (query token, head,
// position), all positions of the window at once (thousands of invocations: the K loads are in flight
// together, where the fold kernel would wait on one row at a time). The score of a position is the
// same sequential dot product over d = 0..HD-1 the wide kernel computes, then * qk_scale: it does not
// depend on the windowing. attention_split.wgsl folds the scores in position order.

struct Params { pos_base: u32, n_q: u32, n_heads: u32, n_kv: u32, qk_scale: f32, p0: u32, p1: u32, p2: u32 }
// One window: absolute positions [start, end); the bound K/V buffers hold position buf_base at
// row 0, starting at word k_off / v_off; first == 1 starts a fresh state.
struct Window { start: u32, end: u32, buf_base: u32, k_off: u32, v_off: u32, first: u32, w0: u32, w1: u32 }

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> w: Window;
@group(0) @binding(2) var<storage, read> q: array<f32>;        // [n_q, n_heads, HD]
@group(0) @binding(3) var<storage, read> kc: array<u32>;       // rows [pos, n_kv, K_WORDS]
@group(0) @binding(4) var<storage, read_write> sc: array<f32>; // [n_q * n_heads, w.end - w.start]

const HD: u32 = {{HEAD_DIM}}u;
// Row formats (bonsai/kv/formats.py): bits 32 = f32; otherwise offset-binary codes, K_PER per word,
// then f16 scales two per word. K_BLOCK values share a scale; K_C4: one scale per channel per
// GROUP positions, carried by the group's rows (channel d's in row d / CPR of the group).
const K_BITS: u32 = {{K_BITS}}u;
const K_BLOCK: u32 = {{K_BLOCK}}u;
const K_WORDS: u32 = {{K_WORDS}}u;
const K_C4: bool = {{K_C4}};
const K_ASYM: bool = {{K_ASYM}};  // asymmetric: value = code * scale + min (c4a: one word per channel)
const V_BITS: u32 = {{V_BITS}}u;
const V_BLOCK: u32 = {{V_BLOCK}}u;
const V_WORDS: u32 = {{V_WORDS}}u;
const V_ASYM: bool = {{V_ASYM}};  // asymmetric per row: one word = scale | min << 16
const GROUP: u32 = {{GROUP}}u;
const CPR: u32 = HD / GROUP;
const K_PER: u32 = 32u / K_BITS;
const V_PER: u32 = 32u / V_BITS;
const K_VW: u32 = HD / K_PER;
const K_QB: u32 = min(K_BITS, 16u);  // (f32 rows never reach the code path below)
const K_MASK: u32 = (1u << K_QB) - 1u;
const K_OFF: i32 = i32(1u << (K_QB - 1u));
const V_VW: u32 = HD / V_PER;
const V_QB: u32 = min(V_BITS, 16u);
const V_MASK: u32 = (1u << V_QB) - 1u;
const V_OFF: i32 = i32(1u << (V_QB - 1u));
const NEG_BIG: f32 = -3.0e38;
// Mutations for the test suite only (bonsai.kv.attention.Mutations); all false in the runtime.
const MUT_NORMALISE: bool = {{MUT_NORMALISE}};
const MUT_GQA: bool = {{MUT_GQA}};
const MUT_CAUSAL: bool = {{MUT_CAUSAL}};

fn h2f(h: u32) -> f32 {
    let e = (h >> 10u) & 31u;
    let m = h & 1023u;
    if (e == 0u) { return f32(m) * 5.9604644775390625e-8; }
    return bitcast<f32>(((e + 112u) << 23u) | (m << 13u));
}

fn h2f_signed(h: u32) -> f32 {
    let x = h2f(h & 0x7fffu);
    if ((h & 0x8000u) != 0u) { return -x; }
    return x;
}

// K value j of the row at word kb; gb = word of the same head's row at the start of its group (c4).
fn k_elem(kb: u32, gb: u32, j: u32) -> f32 {
    if (K_BITS == 32u) { return bitcast<f32>(kc[kb + j]); }
    let code = (kc[kb + j / K_PER] >> (K_BITS * (j % K_PER))) & K_MASK;
    if (K_C4 && K_ASYM) {
        let sm = kc[gb + (j / CPR) * p.n_kv * K_WORDS + K_VW + j % CPR];
        return f32(code) * h2f(sm & 0xffffu) + h2f_signed(sm >> 16u);
    }
    var sw: u32;
    var half: u32;
    if (K_C4) {
        sw = gb + (j / CPR) * p.n_kv * K_WORDS + K_VW + (j % CPR) / 2u;
        half = j & 1u;
    } else {
        let b = j / K_BLOCK;
        sw = kb + K_VW + b / 2u;
        half = b & 1u;
    }
    let s = h2f((kc[sw] >> (16u * half)) & 0xffffu);
    return f32(i32(code) - K_OFF) * s;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let span = w.end - w.start;
    let i = gid.x;
    let idx = wid.y;
    if (i >= span || idx >= p.n_q * p.n_heads) { return; }
    let h = idx % p.n_heads;
    var g = h / (p.n_heads / p.n_kv);
    if (MUT_GQA) { g = h % p.n_kv; }
    let pos = w.start + i;
    let r = (pos - w.buf_base) * p.n_kv + g;
    let kb = w.k_off + r * K_WORDS;
    let gb = w.k_off + (r - (pos % GROUP) * p.n_kv) * K_WORDS;  // c4: the group's first row (buf_base group-aligned)
    var dot = 0.0;
    for (var d = 0u; d < HD; d = d + 1u) { dot = dot + q[idx * HD + d] * k_elem(kb, gb, d); }
    sc[idx * span + i] = dot * p.qk_scale;
}
