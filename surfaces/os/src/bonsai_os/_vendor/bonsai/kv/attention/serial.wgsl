// Fold one window of cached positions into the online-softmax state of every (query token, head):
// the serial variant, one invocation per (token, head) looping over head_dim. Chosen on CPU
// adapters (lavapipe), where workgroup barriers are expensive; blocks.wgsl is the GPU one.
// A dispatch folds at most `Attention.max_span` positions (lavapipe's loop budget, attention.py).
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
@group(0) @binding(2) var<storage, read> q: array<f32>;        // [n_q, n_heads, HD]
@group(0) @binding(3) var<storage, read> kc: array<u32>;       // rows [pos, n_kv, K_WORDS]
@group(0) @binding(4) var<storage, read> vc: array<u32>;       // rows [pos, n_kv, V_WORDS]
@group(0) @binding(5) var<storage, read_write> state: array<f32>;  // [n_q, n_heads, 2 + HD]

//#include "../format/row_format.wgsl"

//#include "state.wgsl"

//#include "../format/k_elem.wgsl"

//#include "../format/v_elem.wgsl"

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
    var acc: array<f32, {{HEAD_DIM}}>;
    var qv: array<f32, {{HEAD_DIM}}>;
    for (var j = 0u; j < HD; j = j + 1u) {
        qv[j] = q[idx * HD + j];
        acc[j] = 0.0;
    }
    if (w.first == 0u) {
        m = state[sb + M_AT];
        l = state[sb + L_AT];
        for (var j = 0u; j < HD; j = j + 1u) { acc[j] = state[sb + ACC_AT + j]; }
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
    state[sb + M_AT] = m;
    state[sb + L_AT] = l;
    for (var j = 0u; j < HD; j = j + 1u) { state[sb + ACC_AT + j] = acc[j]; }
}
