// Used by blocks.wgsl (//#include): scores and the one-position-at-a-
// time fold. Expects `p`, `w`, `kword`/`vword` (../format/words_buffer.wgsl), workgroup arrays `qs` (the query), `sc` (HD scores) and `vs`
// (their V rows' scales), format/row_format.wgsl, format/k_elem.wgsl and format/v_elem.wgsl; one workgroup of HD
// invocations.

// Score of the position at buffer row r (absolute position pos): a sequential dot product over d.
fn score(r: u32, pos: u32) -> f32 {
    let kb = w.k_off + r * K_WORDS;
    var dot = 0.0;
    if (K_BITS == 32u || K_C4 || K_ASYM) {
        let gb = w.k_off + (r - (pos % GROUP) * p.n_kv) * K_WORDS;  // c4: the group's first row (buf_base group-aligned)
        for (var d = 0u; d < HD; d = d + 1u) { dot = dot + qs[d] * k_elem(kb, gb, d); }
        return dot * p.qk_scale;
    }
    // row- and block-scaled codes: the values and the order of k_elem's loop above, but each word and
    // its block's scale are loaded once (k_elem loads both for every value)
    for (var wd = 0u; wd < K_VW; wd = wd + 1u) {
        let word = kword(kb + wd);
        let b = wd * K_PER / K_BLOCK;
        let s = h2f((kword(kb + K_VW + b / 2u) >> (16u * (b & 1u))) & 0xffffu);
        for (var e = 0u; e < K_PER; e = e + 1u) {
            let code = (word >> (K_BITS * e)) & K_MASK;
            dot = dot + qs[wd * K_PER + e] * (f32(i32(code) - K_OFF) * s);
        }
    }
    return dot * p.qk_scale;
}

// Fold positions [lo, hi) of KV head g into (m, l, acc[j]), one position at a time in increasing
// order: scores HD at a time (invocation i: position base + i), then every invocation folds them
// into (m, l) (computed identically by all) and its own acc[j]. Call from uniform control flow.
fn fold_range(lo: u32, hi: u32, g: u32, j: u32, m: ptr<function, f32>, l: ptr<function, f32>,
              acc: ptr<function, f32>) {
    for (var b = lo; b < hi; b = b + HD) {
        if (b + j < hi) {
            sc[j] = score((b + j - w.buf_base) * p.n_kv + g, b + j);
            if (V_ROW_SCALE) { vs[j] = v_row_scale(w.v_off + ((b + j - w.buf_base) * p.n_kv + g) * V_WORDS); }
        }
        workgroupBarrier();
        let nb = min(HD, hi - b);
        for (var i = 0u; i < nb; i = i + 1u) {
            let s = sc[i];
            let m_new = max(*m, s);
            let c_old = exp(*m - m_new);
            let e = exp(s - m_new);
            *l = *l * c_old + e;
            let vb = w.v_off + ((b + i - w.buf_base) * p.n_kv + g) * V_WORDS;
            var v: f32;
            if (V_ROW_SCALE) { v = v_scaled(vb, j, vs[i]); } else { v = v_elem(vb, j); }
            *acc = *acc * c_old + e * v;
            *m = m_new;
        }
        workgroupBarrier();  // the scores are read by all before the next round overwrites them
    }
}
