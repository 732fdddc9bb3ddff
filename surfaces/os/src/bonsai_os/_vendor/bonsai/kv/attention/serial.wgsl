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

//#include "../format/k_elem.wgsl"

//#include "../format/v_elem.wgsl"

const HD4: u32 = HD / 4u;

// K values j .. j+3 of the row at word kb (j % 4 == 0; f32 rows: one texel, as they start on one).
fn k4(kb: u32, gb: u32, j: u32) -> vec4<f32> {
    if (K_BITS == 32u) { return bitcast<vec4<f32>>(kword4(kb + j)); }
    return vec4<f32>(k_elem(kb, gb, j), k_elem(kb, gb, j + 1u), k_elem(kb, gb, j + 2u), k_elem(kb, gb, j + 3u));
}

fn v4(vb: u32, j: u32) -> vec4<f32> {
    if (V_BITS == 32u) { return bitcast<vec4<f32>>(vword4(vb + j)); }
    return vec4<f32>(v_elem(vb, j), v_elem(vb, j + 1u), v_elem(vb, j + 2u), v_elem(vb, j + 3u));
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
    for (var pos = w.start; pos < end; pos = pos + 1u) {
        let r = (pos - w.buf_base) * p.n_kv + g;
        let kb = w.k_off + r * K_WORDS;
        let gb = w.k_off + (r - (pos % GROUP) * p.n_kv) * K_WORDS;  // c4: the group's first row
        let vb = w.v_off + r * V_WORDS;
        var d4 = vec4<f32>(0.0);
        for (var i = 0u; i < HD4; i = i + 1u) { d4 = d4 + qv[i] * k4(kb, gb, 4u * i); }
        let s = ((d4.x + d4.y) + (d4.z + d4.w)) * p.qk_scale;
        let m_new = max(m, s);
        let c_old = exp(m - m_new);
        let e = exp(s - m_new);
        l = l * c_old + e;
        for (var i = 0u; i < HD4; i = i + 1u) { acc[i] = acc[i] * c_old + e * v4(vb, 4u * i); }
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
