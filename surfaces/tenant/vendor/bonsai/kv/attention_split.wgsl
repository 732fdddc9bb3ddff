// Fold one window of cached positions into the online-softmax state of every (query token, head):
// the split variant, which reads the window's scores from scores.wgsl instead of computing them.
//
// INVARIANT (the reason windowed attention is bit-identical to whole-cache attention):
//   state[(t, h)] = (m, l, acc[HD]) holds the fold of positions 0..P-1, one position at a time in
//   increasing order, for P = the first position not yet folded; m = running max of the scores,
//   l = sum exp(s - m), acc = sum exp(s - m) * v. It lives in this f32 buffer between dispatches,
//   so stopping after any position and resuming in the next dispatch performs exactly the same
//   f32 operations in the same order as one long loop. Nothing here depends on where a window
//   starts or ends; acc / l happens once, in finalize.wgsl, never here.
//
// One workgroup per (query token t, head h), HD invocations. Per block of HD positions: invocation i
// reads score s_i, the block's running max m_i = max(m, s_0..s_i) comes from a parallel prefix max
// (max is exact: any order gives the one-at-a-time fold's m bit for bit), and c_i = exp(m_{i-1} - m_i),
// e_i = exp(s_i - m_i) -- the expressions the one-at-a-time fold evaluates -- are computed for all
// positions at once. Only l = l * c_i + e_i and acc[j] = acc[j] * c_i + e_i * v_i[j] run serially,
// in position order, from V rows staged in workgroup memory by fixed-trip loads. Query token t sits
// at absolute position p.pos_base + t and sees positions [0, pos_base + t]. Query head h reads KV
// head h / (n_heads / n_kv) (GQA).

//#include "kv_query.wgsl"

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> w: Window;
@group(0) @binding(2) var<storage, read> sc: array<f32>;       // [n_q * n_heads, w.end - w.start]
@group(0) @binding(3) var<storage, read> vc: array<u32>;       // rows [pos, n_kv, V_WORDS]
@group(0) @binding(4) var<storage, read_write> state: array<f32>;  // [n_q, n_heads, 2 + HD]

//#include "kv_format.wgsl"

const VB: u32 = 2048u / HD;  // V rows staged per sub-block (8 KiB of workgroup memory)

var<workgroup> mx: array<f32, {{HEAD_DIM}}>;  // prefix max of the block's scores
var<workgroup> cs: array<f32, {{HEAD_DIM}}>;  // c_i = exp(m_{i-1} - m_i)
var<workgroup> es: array<f32, {{HEAD_DIM}}>;  // e_i = exp(s_i - m_i)
var<workgroup> vs: array<f32, 2048>;          // V rows [VB, HD] of the sub-block being folded

//#include "kv_v_elem.wgsl"

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
    let span = w.end - w.start;

    var m = NEG_BIG;
    var l = 0.0;
    var acc = 0.0;
    if (w.first == 0u) {
        m = state[sb];
        l = state[sb + 1u];
        acc = state[sb + 2u + j];
    }

    let end = min(w.end, limit);
    for (var b = w.start; b < end; b = b + HD) {
        let nb = min(HD, end - b);
        var s = NEG_BIG;
        if (j < nb) { s = sc[idx * span + (b + j - w.start)]; }
        var run = s;
        mx[j] = run;
        for (var off = 1u; off < HD; off = off * 2u) {  // prefix max (exact in any order)
            workgroupBarrier();
            var o = NEG_BIG;
            if (j >= off) { o = mx[j - off]; }
            workgroupBarrier();
            run = max(run, o);
            mx[j] = run;
        }
        workgroupBarrier();
        let m_blk = max(m, mx[nb - 1u]);  // read before the sub-block barriers let the next block rewrite mx
        if (j < nb) {
            var m_old = m;
            if (j > 0u) { m_old = max(m, mx[j - 1u]); }
            let m_new = max(m, mx[j]);
            cs[j] = exp(m_old - m_new);
            es[j] = exp(s - m_new);
        }
        for (var i0 = 0u; i0 < nb; i0 = i0 + VB) {
            let nv = min(VB, nb - i0);
            for (var i = 0u; i < VB; i = i + 1u) {  // fixed trip, clamped rows: every load issued up front
                let r = b + i0 + min(i, nv - 1u);
                vs[i * HD + j] = v_elem(w.v_off + ((r - w.buf_base) * p.n_kv + g) * V_WORDS, j);
            }
            workgroupBarrier();
            for (var i = 0u; i < nv; i = i + 1u) {  // the serial fold, in position order
                let c_old = cs[i0 + i];
                let e = es[i0 + i];
                l = l * c_old + e;
                acc = acc * c_old + e * vs[i * HD + j];
            }
            workgroupBarrier();  // vs is refilled (and mx/cs/es rewritten) only after every fold read it
        }
        m = m_blk;
    }
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
