// Used by blocks.wgsl (//#include): scores and the one-position-at-a-
// time fold. Expects `p`, `w`, `kword`/`vword` (../format/words_buffer.wgsl), workgroup arrays `qs` (the query), `sc` (HD scores) and `vs`
// (their V rows' scales), format/row_format.wgsl, format/k_elem.wgsl and format/v_elem.wgsl; one workgroup of HD
// invocations; RESIDUAL and the f32 rows `rc` (see pos_score).

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

// RESIDUAL kernels (modes keeping the newest group's K and V in f32: q4res) fold a window whose
// positions from w.w0 on are f32 rows of `rc` (row (pos - w.w0) * n_kv + g; K rows first, V rows from
// word w.w1): the quantised part and the residual in one dispatch, every residual position through
// this one code path (a window holding only the residual has w.w0 = its buf_base). w.w0 = 0xffffffff:
// none. Elsewhere RESIDUAL is false and `rc` is never read.
fn in_residual(pos: u32) -> bool { return RESIDUAL && pos >= w.w0; }

// Score of the position pos of KV head g: a sequential dot product over d, as `score` does for f32 K.
fn pos_score(pos: u32, g: u32) -> f32 {
    if (in_residual(pos)) {
        let kb = ((pos - w.w0) * p.n_kv + g) * HD;
        var dot = 0.0;
        for (var d = 0u; d < HD; d = d + 1u) { dot = dot + qs[d] * bitcast<f32>(rc[kb + d]); }
        return dot * p.qk_scale;
    }
    return score((pos - w.buf_base) * p.n_kv + g, pos);
}

// First word of the V row of position pos (a quantised position), head g.
fn v_row(pos: u32, g: u32) -> u32 { return w.v_off + ((pos - w.buf_base) * p.n_kv + g) * V_WORDS; }

// V value j of position pos, head g (s: its row scale, where V_ROW_SCALE).
fn pos_v(pos: u32, g: u32, j: u32, s: f32) -> f32 {
    if (in_residual(pos)) { return bitcast<f32>(rc[w.w1 + ((pos - w.w0) * p.n_kv + g) * HD + j]); }
    if (V_ROW_SCALE) { return v_scaled(v_row(pos, g), j, s); }
    return v_elem(v_row(pos, g), j);
}

// Fold positions [lo, hi) of KV head g into (m, l, acc[j]), one position at a time in increasing
// order: scores HD at a time (invocation i: position base + i), then every invocation folds them
// into (m, l) (computed identically by all) and its own acc[j]. Call from uniform control flow.
fn fold_range(lo: u32, hi: u32, g: u32, j: u32, m: ptr<function, f32>, l: ptr<function, f32>,
              acc: ptr<function, f32>) {
    for (var b = lo; b < hi; b = b + HD) {
        if (b + j < hi) {
            sc[j] = pos_score(b + j, g);
            if (V_ROW_SCALE && !in_residual(b + j)) { vs[j] = v_row_scale(v_row(b + j, g)); }
        }
        workgroupBarrier();
        let nb = min(HD, hi - b);
        for (var i = 0u; i < nb; i = i + 1u) {
            let s = sc[i];
            let m_new = max(*m, s);
            let c_old = exp(*m - m_new);
            let e = exp(s - m_new);
            *l = *l * c_old + e;
            let v = pos_v(b + i, g, j, vs[i]);
            *acc = *acc * c_old + e * v;
            *m = m_new;
        }
        workgroupBarrier();  // the scores are read by all before the next round overwrites them
    }
}
