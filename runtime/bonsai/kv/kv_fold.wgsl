// Shared by attention.wgsl and attention_blocks.wgsl (//#include): scores and the one-position-at-a-
// time fold. Expects `p`, `w`, `kc`, `vc`, workgroup arrays `qs` (the query) and `sc` (HD scores),
// kv_format.wgsl, kv_k_elem.wgsl and kv_v_elem.wgsl; one workgroup of HD invocations.

// Score of the position at buffer row r (absolute position pos): a sequential dot product over d.
fn score(r: u32, pos: u32) -> f32 {
    let kb = w.k_off + r * K_WORDS;
    let gb = w.k_off + (r - (pos % GROUP) * p.n_kv) * K_WORDS;  // c4: the group's first row (buf_base group-aligned)
    var dot = 0.0;
    for (var d = 0u; d < HD; d = d + 1u) { dot = dot + qs[d] * k_elem(kb, gb, d); }
    return dot * p.qk_scale;
}

// Fold positions [lo, hi) of KV head g into (m, l, acc[j]), one position at a time in increasing
// order: scores HD at a time (invocation i: position base + i), then every invocation folds them
// into (m, l) (computed identically by all) and its own acc[j]. Call from uniform control flow.
fn fold_range(lo: u32, hi: u32, g: u32, j: u32, m: ptr<function, f32>, l: ptr<function, f32>,
              acc: ptr<function, f32>) {
    for (var b = lo; b < hi; b = b + HD) {
        if (b + j < hi) { sc[j] = score((b + j - w.buf_base) * p.n_kv + g, b + j); }
        workgroupBarrier();
        let nb = min(HD, hi - b);
        for (var i = 0u; i < nb; i = i + 1u) {
            let s = sc[i];
            let m_new = max(*m, s);
            let c_old = exp(*m - m_new);
            let e = exp(s - m_new);
            *l = *l * c_old + e;
            *acc = *acc * c_old + e * v_elem(w.v_off + ((b + i - w.buf_base) * p.n_kv + g) * V_WORDS, j);
            *m = m_new;
        }
        workgroupBarrier();  // the scores are read by all before the next round overwrites them
    }
}
