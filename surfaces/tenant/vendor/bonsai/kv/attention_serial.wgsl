// Fold one window of cached positions into the online-softmax state of every (query token, head):
// the serial variant, one invocation per (token, head) looping over head_dim. Chosen on CPU
// adapters (lavapipe), where workgroup barriers are expensive; attention.wgsl is the wide variant.
// Same params, window descriptor and state layout as attention.wgsl.
//
// INVARIANT (the reason windowed attention is bit-identical to whole-cache attention):
//   state[(t, h)] = (m, l, acc[HD]) holds the fold of positions 0..P-1, one position at a time in
//   increasing order, for P = the first position not yet folded; m = running max of the scores,
//   l = sum exp(s - m), acc = sum exp(s - m) * v. It lives in this f32 buffer between dispatches,
//   so stopping after any position and resuming in the next dispatch performs exactly the same
//   f32 operations in the same order as one long loop. Nothing here depends on where a window
//   starts or ends; acc / l happens once, in finalize.wgsl, never here.
//
// Query token t sits at absolute position p.pos_base + t and sees positions [0, pos_base + t].
// Query head h reads KV head h / (n_heads / n_kv) (GQA).

struct Params { pos_base: u32, n_q: u32, n_heads: u32, n_kv: u32, qk_scale: f32, p0: u32, p1: u32, p2: u32 }
// One window: absolute positions [start, end); the bound K/V buffers hold position buf_base at
// row 0, starting at word k_off / v_off; first == 1 starts a fresh state.
struct Window { start: u32, end: u32, buf_base: u32, k_off: u32, v_off: u32, first: u32, w0: u32, w1: u32 }

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> w: Window;
@group(0) @binding(2) var<storage, read> q: array<f32>;        // [n_q, n_heads, HD]
@group(0) @binding(3) var<storage, read> kc: array<u32>;       // rows [pos, n_kv, K_WORDS]
@group(0) @binding(4) var<storage, read> vc: array<u32>;       // rows [pos, n_kv, V_WORDS]
@group(0) @binding(5) var<storage, read_write> state: array<f32>;  // [n_q, n_heads, 2 + HD]

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

fn v_elem(vb: u32, j: u32) -> f32 {
    if (V_BITS == 32u) { return bitcast<f32>(vc[vb + j]); }
    let code = (vc[vb + j / V_PER] >> (V_BITS * (j % V_PER))) & V_MASK;
    if (V_ASYM) {
        let sm = vc[vb + V_VW];
        return f32(code) * h2f(sm & 0xffffu) + h2f_signed(sm >> 16u);
    }
    let b = j / V_BLOCK;
    let s = h2f((vc[vb + V_VW + b / 2u] >> (16u * (b & 1u))) & 0xffffu);
    return f32(i32(code) - V_OFF) * s;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.x;
    if (idx >= p.n_q * p.n_heads) { return; }
    let t = idx / p.n_heads;
    let h = idx % p.n_heads;
    var g = h / (p.n_heads / p.n_kv);
    if (MUT_GQA) { g = h % p.n_kv; }
    var limit = p.pos_base + t + 1u;  // exclusive
    if (MUT_CAUSAL) { limit = limit + 1u; }
    let sb = idx * (HD + 2u);

    var m = NEG_BIG;
    var l = 0.0;
    var acc: array<f32, {{HEAD_DIM}}>;
    var qv: array<f32, {{HEAD_DIM}}>;
    for (var j = 0u; j < HD; j = j + 1u) {
        qv[j] = q[idx * HD + j];
        acc[j] = 0.0;
    }
    if (w.first == 0u) {
        m = state[sb];
        l = state[sb + 1u];
        for (var j = 0u; j < HD; j = j + 1u) { acc[j] = state[sb + 2u + j]; }
    }

    let end = min(w.end, limit);
    for (var pos = w.start; pos < end; pos = pos + 1u) {
        let r = (pos - w.buf_base) * p.n_kv + g;
        let kb = w.k_off + r * K_WORDS;
        let gb = w.k_off + (r - (pos % GROUP) * p.n_kv) * K_WORDS;  // c4: the group's first row
        let vb = w.v_off + r * V_WORDS;
        var dot = 0.0;
        var vrow: array<f32, {{HEAD_DIM}}>;
        for (var j = 0u; j < HD; j = j + 1u) {
            dot = dot + qv[j] * k_elem(kb, gb, j);
            vrow[j] = v_elem(vb, j);
        }
        let s = dot * p.qk_scale;
        let m_new = max(m, s);
        let c_old = exp(m - m_new);
        let e = exp(s - m_new);
        l = l * c_old + e;
        for (var j = 0u; j < HD; j = j + 1u) { acc[j] = acc[j] * c_old + e * vrow[j]; }
        m = m_new;
    }
    if (MUT_NORMALISE) {  // bug (3): normalise at the window boundary and carry on
        for (var j = 0u; j < HD; j = j + 1u) { acc[j] = acc[j] / l; }
        l = 1.0;
    }
    state[sb] = m;
    state[sb + 1u] = l;
    for (var j = 0u; j < HD; j = j + 1u) { state[sb + 2u + j] = acc[j]; }
}
