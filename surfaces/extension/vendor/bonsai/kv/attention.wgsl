// Fold one window of cached positions into the online-softmax state of every (query token, head).
//
// INVARIANT (the reason windowed attention is bit-identical to whole-cache attention):
//   state[(t, h)] = (m, l, acc[HD]) holds the fold of positions 0..P-1, one position at a time in
//   increasing order, for P = the first position not yet folded; m = running max of the scores,
//   l = sum exp(s - m), acc = sum exp(s - m) * v. It lives in this f32 buffer between dispatches,
//   so stopping after any position and resuming in the next dispatch performs exactly the same
//   f32 operations in the same order as one long loop. Nothing here depends on where a window
//   starts or ends; acc / l happens once, in finalize.wgsl, never here.
//
// One workgroup per (query token t, head h), HD invocations. Per block of HD positions, invocation
// i computes the score of position block + i (a sequential dot product over d = 0..HD-1, the
// same for every position whatever the blocking); then every invocation folds the block's
// positions one at a time, in order, into (m, l) (computed identically by all) and its own acc[j]. Query token t sits at absolute position p.pos_base + t and
// sees positions [0, pos_base + t]. Query head h reads KV head h / (n_heads / n_kv) (GQA).

//#include "kv_query.wgsl"

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> w: Window;
@group(0) @binding(2) var<storage, read> q: array<f32>;        // [n_q, n_heads, HD]
@group(0) @binding(3) var<storage, read> kc: array<u32>;       // rows [pos, n_kv, K_WORDS]
@group(0) @binding(4) var<storage, read> vc: array<u32>;       // rows [pos, n_kv, V_WORDS]
@group(0) @binding(5) var<storage, read_write> state: array<f32>;  // [n_q, n_heads, 2 + HD]

//#include "kv_format.wgsl"

var<workgroup> qs: array<f32, {{HEAD_DIM}}>;
var<workgroup> sc: array<f32, {{HEAD_DIM}}>;
var<workgroup> vs: array<f32, {{HEAD_DIM}}>;

//#include "kv_k_elem.wgsl"

//#include "kv_v_elem.wgsl"

//#include "kv_fold.wgsl"

@compute @workgroup_size({{HEAD_DIM}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let idx = wid.y * 65535u + wid.x;
    if (idx >= p.n_q * p.n_heads) { return; }
    let j = lid.x;
    let t = idx / p.n_heads;
    let h = idx % p.n_heads;
    let g = kv_head(h);
    let limit = causal_end(t);  // exclusive
    let sb = idx * (HD + 2u);

    var m = NEG_BIG;
    var l = 0.0;
    var acc = 0.0;
    if (w.first == 0u) {
        m = state[sb];
        l = state[sb + 1u];
        acc = state[sb + 2u + j];
    }
    qs[j] = q[idx * HD + j];
    workgroupBarrier();

    fold_range(w.start, min(w.end, limit), g, j, &m, &l, &acc);
    if (MUT_NORMALISE) {  // bug (3): normalise at the window boundary and carry on
        acc = acc / l;
        l = 1.0;
    }
    if (j == 0u) {
        state[sb] = m;
        state[sb + 1u] = l;
    }
    state[sb + 2u + j] = acc;
}
