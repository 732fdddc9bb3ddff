// Fold one window of cached positions into the online-softmax state of every (query token, head):
// the serial variant, one invocation per (token, head), four dimensions at a time. Chosen on CPU
// adapters (lavapipe, SwiftShader), where workgroup barriers are expensive and a texel fetch costs a
// fraction of a storage-buffer load: K and V are read through word textures (the cache keeps a
// texture copy of each window slot). blocks.wgsl is the GPU variant. A dispatch folds at most
// `Attention.max_span` positions (lavapipe's loop budget, driver.py).
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

//#include "query.wgsl"

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> w: Window;
@group(0) @binding(2) var<storage, read> q: array<vec4<f32>>;  // [n_q, n_heads, HD / 4]
@group(0) @binding(3) var kt: texture_2d<u32>;                 // words of rows [pos, n_kv, K_WORDS]
@group(0) @binding(4) var vt: texture_2d<u32>;                 // words of rows [pos, n_kv, V_WORDS]
@group(0) @binding(5) var<storage, read_write> state: array<f32>;  // state.wgsl's layout

//#include "../format/row_format.wgsl"

//#include "state.wgsl"

//#include "../format/words_texture.wgsl"

const HD4: u32 = HD / 4u;
const K_STEP: u32 = max(K_PER / 4u, 1u);  // vec4s per code word: 2 (4-bit), 1 (8-bit; f32 rows: unused)
const V_STEP: u32 = max(V_PER / 4u, 1u);

// Quantised rows are decoded four values at a time, each word fetched once: a code word when the
// loop over a row reaches it, a row's (or block's) scale word once per row (block), and c4 K's
// per-channel scales -- the same for every position of a GROUP-position group -- once per group
// (or where a dispatch starts inside one) into `ksc`/`kmn`. The values are k_elem.wgsl's and
// v_elem.wgsl's (the codec's), with the same f32 operations; test_serial_decode pins the bits.

// Codes of values j .. j+3 (j % 4 == 0) from the word holding them, `bits` wide, `per` to a word.
fn codes4(word: u32, j: u32, bits: u32, per: u32, mask: u32) -> vec4<u32> {
    return (vec4<u32>(word) >> (bits * (vec4<u32>(j % per) + vec4<u32>(0u, 1u, 2u, 3u)))) & vec4<u32>(mask);
}

// c4 K: (scale, min) of channel j of the group whose first row is at word gb (min 0: symmetric c4).
fn c4_scale(gb: u32, j: u32) -> vec2<f32> {
    if (K_ASYM) {
        let sm = kword(gb + (j / CPR) * p.n_kv * K_WORDS + K_VW + j % CPR);
        return vec2<f32>(h2f(sm & 0xffffu), h2f_signed(sm >> 16u));
    }
    let sw = gb + (j / CPR) * p.n_kv * K_WORDS + K_VW + (j % CPR) / 2u;
    return vec2<f32>(h2f((kword(sw) >> (16u * (j & 1u))) & 0xffffu), 0.0);
}

// Values from codes c and their scales s (and mins mn: c4a K, q4a V), as k_elem / v_elem compute them.
fn k_vec(c: vec4<u32>, s: vec4<f32>, mn: vec4<f32>) -> vec4<f32> {
    if (K_C4 && K_ASYM) { return vec4<f32>(c) * s + mn; }
    return vec4<f32>(vec4<i32>(c) - vec4<i32>(K_OFF)) * s;
}

fn v_vec(c: vec4<u32>, s: vec4<f32>, mn: vec4<f32>) -> vec4<f32> {
    if (V_ASYM) { return vec4<f32>(c) * s + mn; }
    return vec4<f32>(vec4<i32>(c) - vec4<i32>(V_OFF)) * s;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.x;
    if (idx >= p.n_q * p.n_heads) { return; }
    let t = idx / p.n_heads;
    let h = idx % p.n_heads;
    let g = kv_head(h);
    let limit = causal_end(t);  // exclusive
    let sb = main_fold(idx);

    var m = NEG_BIG;
    var l = 0.0;
    var acc: array<vec4<f32>, HD4>;
    var qv: array<vec4<f32>, HD4>;
    for (var i = 0u; i < HD4; i = i + 1u) {
        qv[i] = q[idx * HD4 + i];
        acc[i] = vec4<f32>(0.0);
    }
    if (w.first == 0u) {
        m = state[sb + M_AT];
        l = state[sb + L_AT];
        for (var i = 0u; i < HD4; i = i + 1u) {
            let a = sb + ACC_AT + 4u * i;
            acc[i] = vec4<f32>(state[a], state[a + 1u], state[a + 2u], state[a + 3u]);
        }
    }

    let end = min(w.end, limit);
    var ksc: array<vec4<f32>, HD4>;  // c4 K: the current group's per-channel scales
    var kmn: array<vec4<f32>, HD4>;  // c4a K: and mins
    // Loop trips per position, each loop's exit test counted too (lavapipe's loop budget; driver.max_span
    // allows HD / 2 + 4): 1, then HD4 + 1 for f32 K and for f32 V rows (HD / 2 + 3 in all), HD / 8 + 1 for
    // 4-bit rows, HD4 + 1 for 8-bit ones; c4 scales add HD4 + 1 per group of >= 32 positions.
    for (var pos = w.start; pos < end; pos = pos + 1u) {
        let r = (pos - w.buf_base) * p.n_kv + g;
        let kb = w.k_off + r * K_WORDS;
        let vb = w.v_off + r * V_WORDS;
        if (K_C4 && (pos == w.start || pos % GROUP == 0u)) {
            let gb = w.k_off + (r - (pos % GROUP) * p.n_kv) * K_WORDS;  // the group's first row
            for (var i = 0u; i < HD4; i = i + 1u) {
                let a = c4_scale(gb, 4u * i);
                let b = c4_scale(gb, 4u * i + 1u);
                let c = c4_scale(gb, 4u * i + 2u);
                let d = c4_scale(gb, 4u * i + 3u);
                ksc[i] = vec4<f32>(a.x, b.x, c.x, d.x);
                kmn[i] = vec4<f32>(a.y, b.y, c.y, d.y);
            }
        }
        var d4 = vec4<f32>(0.0);
        if (K_BITS == 32u) {  // f32 rows start on a texel
            for (var i = 0u; i < HD4; i = i + 1u) { d4 = d4 + qv[i] * bitcast<vec4<f32>>(kword4(kb + 4u * i)); }
        } else {
            var ks = vec4<f32>(0.0);  // not c4: the current block's scale
            var sw = 0u;
            for (var i = 0u; i < HD4; i = i + K_STEP) {  // one code word per trip
                let j = 4u * i;
                let cw = kword(kb + j / K_PER);
                if (!K_C4 && j % K_BLOCK == 0u) {  // a block's scale: two f16 to a word
                    if (j % (2u * K_BLOCK) == 0u) { sw = kword(kb + K_VW + j / (2u * K_BLOCK)); }
                    ks = vec4<f32>(h2f((sw >> (16u * ((j / K_BLOCK) & 1u))) & 0xffffu));
                }
                d4 = d4 + qv[i] * k_vec(codes4(cw, j, K_BITS, K_PER, K_MASK), select(ks, ksc[i], K_C4), kmn[i]);
                if (K_STEP == 2u) {  // 4-bit: the word's second four values (blocks hold >= 8, so the same block)
                    let c = codes4(cw, j + 4u, K_BITS, K_PER, K_MASK);
                    d4 = d4 + qv[i + 1u] * k_vec(c, select(ks, ksc[i + 1u], K_C4), kmn[i + 1u]);
                }
            }
        }
        let s = ((d4.x + d4.y) + (d4.z + d4.w)) * p.qk_scale;
        let m_new = max(m, s);
        let c_old = exp(m - m_new);
        let e = exp(s - m_new);
        l = l * c_old + e;
        if (V_BITS == 32u) {
            for (var i = 0u; i < HD4; i = i + 1u) {
                acc[i] = acc[i] * c_old + e * bitcast<vec4<f32>>(vword4(vb + 4u * i));
            }
        } else {
            var vs = vec4<f32>(0.0);
            var vm = vec4<f32>(0.0);
            if (V_ASYM) {  // one (scale, min) word per row
                let sm = vword(vb + V_VW);
                vs = vec4<f32>(h2f(sm & 0xffffu));
                vm = vec4<f32>(h2f_signed(sm >> 16u));
            }
            var sw = 0u;
            for (var i = 0u; i < HD4; i = i + V_STEP) {  // one code word per trip
                let j = 4u * i;
                let cw = vword(vb + j / V_PER);
                if (!V_ASYM && j % V_BLOCK == 0u) {
                    if (j % (2u * V_BLOCK) == 0u) { sw = vword(vb + V_VW + j / (2u * V_BLOCK)); }
                    vs = vec4<f32>(h2f((sw >> (16u * ((j / V_BLOCK) & 1u))) & 0xffffu));
                }
                acc[i] = acc[i] * c_old + e * v_vec(codes4(cw, j, V_BITS, V_PER, V_MASK), vs, vm);
                if (V_STEP == 2u) {
                    acc[i + 1u] = acc[i + 1u] * c_old + e * v_vec(codes4(cw, j + 4u, V_BITS, V_PER, V_MASK), vs, vm);
                }
            }
        }
        m = m_new;
    }
    if (MUT_NORMALISE) {  // bug (3): normalise at the window boundary and carry on
        for (var i = 0u; i < HD4; i = i + 1u) { acc[i] = acc[i] / l; }
        l = 1.0;
    }
    state[sb + M_AT] = m;
    state[sb + L_AT] = l;
    for (var i = 0u; i < HD4; i = i + 1u) {
        let a = sb + ACC_AT + 4u * i;
        state[a] = acc[i].x; state[a + 1u] = acc[i].y; state[a + 2u] = acc[i].z; state[a + 3u] = acc[i].w;
    }
}
