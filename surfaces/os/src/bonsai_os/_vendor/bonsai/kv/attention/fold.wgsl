// Used by blocks.wgsl (//#include): scores and the one-position-at-a-
// time fold. Expects `p`, `w`, `kword`/`vword` (../format/words_buffer.wgsl), workgroup arrays `qs` (the query), `sc` (HD scores), `vs`
// and `vm` (their V rows' scales and mins), `ks` and `km` (K_GROUP_CACHE), format/row_format.wgsl, format/k_elem.wgsl and format/v_elem.wgsl; one workgroup of HD
// invocations; BLOCK (block_state.wgsl); RESIDUAL and the f32 rows `rc` (see pos_score).

// Per-channel asymmetric K (c4a: q4res's K) whose groups are the blocks: every quantised position a
// workgroup scores shares one group, so its channels' scales and mins are decoded once per fold_range
// (into `ks`, `km`; load_group_scales) instead of once per value per position; the values of k_elem.
const K_GROUP_CACHE: bool = K_BITS < 32u && K_C4 && K_ASYM && GROUP == BLOCK;

// Channel c's scale and min word of the group whose first row is at word gb.
fn group_sm(gb: u32, c: u32) -> u32 { return kword(gb + (c / CPR) * p.n_kv * K_WORDS + K_VW + c % CPR); }

// Invocation j < HD / 4: channels 4j .. 4j + 3's scales and mins of the group holding quantised position pos
// (K_GROUP_CACHE), four to a vector (read a vector at a time).
fn load_group_scales(pos: u32, g: u32, j: u32) {
    if (j >= HD / 4u) { return; }
    let gb = w.k_off + ((pos - pos % GROUP - w.buf_base) * p.n_kv + g) * K_WORDS;  // the group's first row
    let c = 4u * j;
    let s0 = group_sm(gb, c);
    let s1 = group_sm(gb, c + 1u);
    let s2 = group_sm(gb, c + 2u);
    let s3 = group_sm(gb, c + 3u);
    ks[j] = vec4<f32>(h2f(s0 & 0xffffu), h2f(s1 & 0xffffu), h2f(s2 & 0xffffu), h2f(s3 & 0xffffu));
    km[j] = vec4<f32>(h2f_signed(s0 >> 16u), h2f_signed(s1 >> 16u), h2f_signed(s2 >> 16u), h2f_signed(s3 >> 16u));
}

// The query's value i, the group's scale and min of channel d (the workgroup arrays hold vectors).
fn qv(i: u32) -> f32 { return qs[i / 4u][i % 4u]; }
fn ksv(d: u32) -> f32 { return ks[d / 4u][d % 4u]; }
fn kmv(d: u32) -> f32 { return km[d / 4u][d % 4u]; }

// K_GROUP_CACHE: the scales and mins of the group holding the quantised positions [lo, hi) into `ks`, `km` for the
// workgroup (load_group_scales: invocation j < HD / 4, channels 4j .. 4j + 3). lo and hi - 1 lie in one block, so in
// one group. Call from uniform control flow (lo and hi uniform): it waits at a barrier.
fn stage_group_scales(lo: u32, hi: u32, g: u32, j: u32) {
    if (K_GROUP_CACHE) {
        if (lo < hi && !in_residual(lo)) { load_group_scales(lo, g, j); }
        workgroupBarrier();
    }
}

// dot + q[d .. d+7] . (a, b), one product at a time in order: the one order of every eight-value round of
// `score`, whichever way its K values were loaded.
fn add8(dot: f32, d: u32, a: vec4<f32>, b: vec4<f32>) -> f32 {
    let qa = qs[d / 4u];  // d is a multiple of 8: two vectors of the query
    let qb = qs[d / 4u + 1u];
    var s = dot;
    s = s + qa.x * a.x;
    s = s + qa.y * a.y;
    s = s + qa.z * a.z;
    s = s + qa.w * a.w;
    s = s + qb.x * b.x;
    s = s + qb.y * b.y;
    s = s + qb.z * b.z;
    s = s + qb.w * b.w;
    return s;
}

// Sixty-four f32 K values of one row as sixteen vectors, all loaded before any is summed (add64). Loads in a
// loop wait one memory round trip per iteration on the H200 (the top of ops/matmul.wgsl): eight at a time left a
// decode fold at 1K 1.2-1.5 us slower (bench/NOTES.md, commit c9baca6). Vectors, not an array: an array indexed in a
// loop was kept in memory, and the f32 prompt's fold ran at half speed.
struct Row64 {
    k0: vec4<f32>, k1: vec4<f32>, k2: vec4<f32>, k3: vec4<f32>, k4: vec4<f32>, k5: vec4<f32>, k6: vec4<f32>, k7: vec4<f32>,
    k8: vec4<f32>, k9: vec4<f32>, k10: vec4<f32>, k11: vec4<f32>, k12: vec4<f32>, k13: vec4<f32>, k14: vec4<f32>, k15: vec4<f32>,
}

// The sixty-four values from vector i of `kc4` (f32 K rows, see `score`).
fn kc4_row64(i: u32) -> Row64 {
    return Row64(
        bitcast<vec4<f32>>(kc4[i]),
        bitcast<vec4<f32>>(kc4[i + 1u]),
        bitcast<vec4<f32>>(kc4[i + 2u]),
        bitcast<vec4<f32>>(kc4[i + 3u]),
        bitcast<vec4<f32>>(kc4[i + 4u]),
        bitcast<vec4<f32>>(kc4[i + 5u]),
        bitcast<vec4<f32>>(kc4[i + 6u]),
        bitcast<vec4<f32>>(kc4[i + 7u]),
        bitcast<vec4<f32>>(kc4[i + 8u]),
        bitcast<vec4<f32>>(kc4[i + 9u]),
        bitcast<vec4<f32>>(kc4[i + 10u]),
        bitcast<vec4<f32>>(kc4[i + 11u]),
        bitcast<vec4<f32>>(kc4[i + 12u]),
        bitcast<vec4<f32>>(kc4[i + 13u]),
        bitcast<vec4<f32>>(kc4[i + 14u]),
        bitcast<vec4<f32>>(kc4[i + 15u]));
}

// The sixty-four values from vector i of the residual rows `rc` (see pos_score).
fn rc_row64(i: u32) -> Row64 {
    return Row64(
        bitcast<vec4<f32>>(rc[i]),
        bitcast<vec4<f32>>(rc[i + 1u]),
        bitcast<vec4<f32>>(rc[i + 2u]),
        bitcast<vec4<f32>>(rc[i + 3u]),
        bitcast<vec4<f32>>(rc[i + 4u]),
        bitcast<vec4<f32>>(rc[i + 5u]),
        bitcast<vec4<f32>>(rc[i + 6u]),
        bitcast<vec4<f32>>(rc[i + 7u]),
        bitcast<vec4<f32>>(rc[i + 8u]),
        bitcast<vec4<f32>>(rc[i + 9u]),
        bitcast<vec4<f32>>(rc[i + 10u]),
        bitcast<vec4<f32>>(rc[i + 11u]),
        bitcast<vec4<f32>>(rc[i + 12u]),
        bitcast<vec4<f32>>(rc[i + 13u]),
        bitcast<vec4<f32>>(rc[i + 14u]),
        bitcast<vec4<f32>>(rc[i + 15u]));
}

// dot + q[d .. d+63] . k, in add8's order (d: the query's first value in `qs`).
fn add64(dot: f32, d: u32, k: Row64) -> f32 {
    var s = dot;
    s = add8(s, d, k.k0, k.k1);
    s = add8(s, d + 8u, k.k2, k.k3);
    s = add8(s, d + 16u, k.k4, k.k5);
    s = add8(s, d + 24u, k.k6, k.k7);
    s = add8(s, d + 32u, k.k8, k.k9);
    s = add8(s, d + 40u, k.k10, k.k11);
    s = add8(s, d + 48u, k.k12, k.k13);
    s = add8(s, d + 56u, k.k14, k.k15);
    return s;
}

// dot + q[d] * (code d * ks[d] + km[d]) over the K_PER codes of K word wd (`word`), in order (K_GROUP_CACHE; the
// query's values in `qs` from qo on).
fn add_codes(dot0: f32, qo: u32, wd: u32, word: u32) -> f32 {
    var dot = dot0;
    for (var e = 0u; e < K_PER; e = e + 1u) {
        let d = wd * K_PER + e;
        dot = dot + qv(qo + d) * (f32((word >> (K_BITS * e)) & K_MASK) * ksv(d) + kmv(d));
    }
    return dot;
}

// The eight code words of a K row (K_VW == 8), all loaded before any is summed (add64's reason): one round trip.
struct Words8 { w0: u32, w1: u32, w2: u32, w3: u32, w4: u32, w5: u32, w6: u32, w7: u32 }

fn k_words8(kb: u32) -> Words8 {
    let w0 = kword(kb);
    let w1 = kword(kb + 1u);
    let w2 = kword(kb + 2u);
    let w3 = kword(kb + 3u);
    let w4 = kword(kb + 4u);
    let w5 = kword(kb + 5u);
    let w6 = kword(kb + 6u);
    let w7 = kword(kb + 7u);
    return Words8(w0, w1, w2, w3, w4, w5, w6, w7);
}

// Score of the position at buffer row r (absolute position pos): a sequential dot product over d with the
// query whose values start at qo in `qs`.
// f32 K is loaded four values at a time (`kc4`, the K words as 16-byte vectors): each invocation reads a
// row of its own, so a warp's load touches 32 rows, and four values per load cut those touches by four
// (the H200's prompt fold: 371-378 -> 148-231 us per layer, bench/NOTES.md, commit 9d069a5). The same sum.
fn score(r: u32, pos: u32, qo: u32) -> f32 {
    let kb = w.k_off + r * K_WORDS;
    var dot = 0.0;
    if (K_GROUP_CACHE) {  // each word's K_PER codes with the group's cached scales; k_elem's values and order
        // 4-bit rows of 64: the values decoded with the codes' shifts written out (codes_row64, fold_lanes.wgsl), then
        // add64's sum; add_codes' loop keeps its shifts and loads rolled on the driver (bench/NOTES.md, commit debaad2)
        if (K_VW == 8u && K_BITS == 4u) { return add64(dot, qo, codes_row64(k_words8(kb))) * p.qk_scale; }
        for (var wd = 0u; wd < K_VW; wd = wd + 1u) { dot = add_codes(dot, qo, wd, kword(kb + wd)); }
        return dot * p.qk_scale;
    }
    if (K_BITS == 32u || K_C4 || K_ASYM) {
        let gb = w.k_off + (r - (pos % GROUP) * p.n_kv) * K_WORDS;  // c4: the group's first row (buf_base group-aligned)
        if (K_BITS == 32u && HD % 64u == 0u && (kb & 3u) == 0u) {  // f32 rows at 16-byte boundaries: see kc4
            for (var d = 0u; d < HD; d = d + 64u) { dot = add64(dot, qo + d, kc4_row64((kb + d) / 4u)); }
            return dot * p.qk_scale;
        }
        if (HD % 8u == 0u) {  // eight K values loaded before they are summed (as in fold_range); same sum
            for (var d = 0u; d < HD; d = d + 8u) {
                let k0 = k_elem(kb, gb, d);
                let k1 = k_elem(kb, gb, d + 1u);
                let k2 = k_elem(kb, gb, d + 2u);
                let k3 = k_elem(kb, gb, d + 3u);
                let k4 = k_elem(kb, gb, d + 4u);
                let k5 = k_elem(kb, gb, d + 5u);
                let k6 = k_elem(kb, gb, d + 6u);
                let k7 = k_elem(kb, gb, d + 7u);
                dot = add8(dot, qo + d, vec4<f32>(k0, k1, k2, k3), vec4<f32>(k4, k5, k6, k7));
            }
            return dot * p.qk_scale;
        }
        for (var d = 0u; d < HD; d = d + 1u) { dot = dot + qv(qo + d) * k_elem(kb, gb, d); }
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
            dot = dot + qv(qo + wd * K_PER + e) * (f32(i32(code) - K_OFF) * s);
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

// Word i of the residual rows `rc` (bound as 16-byte vectors for pos_score's loads).
fn rword(i: u32) -> u32 { return rc[i / 4u][i % 4u]; }

// Score of the position pos of KV head g with the query from qo in `qs`: a sequential dot product over d,
// as `score` does for f32 K. A residual row's K is loaded four values at a time, as f32 K's: each invocation
// reads a row of its own, and the newest group's block (up to GROUP residual positions) is the slowest of a
// decode fold's blocks. The same sum.
fn pos_score(pos: u32, g: u32, qo: u32) -> f32 {
    if (in_residual(pos)) {
        let kb = ((pos - w.w0) * p.n_kv + g) * HD;
        var dot = 0.0;
        if (HD % 64u == 0u) {  // as f32 K's (add64)
            for (var d = 0u; d < HD; d = d + 64u) { dot = add64(dot, qo + d, rc_row64((kb + d) / 4u)); }
            return dot * p.qk_scale;
        }
        for (var d = 0u; d < HD; d = d + 1u) { dot = dot + qv(qo + d) * bitcast<f32>(rword(kb + d)); }
        return dot * p.qk_scale;
    }
    return score((pos - w.buf_base) * p.n_kv + g, pos, qo);
}

// First word of the V row of position pos (a quantised position), head g.
fn v_row(pos: u32, g: u32) -> u32 { return w.v_off + ((pos - w.buf_base) * p.n_kv + g) * V_WORDS; }

// Asymmetric row-scaled V codes (q4a: q4res's V): each position's scale and min are decoded once, by
// the invocation that scores it (into `vs`, `vm`), not by every invocation; the values of v_elem.
const V_ROW_MIN: bool = V_BITS < 32u && V_ASYM;

// Round position i's V row scale (V_ROW_SCALE; into vs[i]) or scale and min (V_ROW_MIN; vs[i], vm[i]), for the
// position pos it holds: decoded once, by the invocation that scores it (pos_v and dq read them).
fn load_v_scale(pos: u32, g: u32, i: u32) {
    if (V_ROW_SCALE && !in_residual(pos)) { vs[i] = v_row_scale(v_row(pos, g)); }
    if (V_ROW_MIN && !in_residual(pos)) {
        let sm = vword(v_row(pos, g) + V_VW);
        vs[i] = h2f(sm & 0xffffu);
        vm[i] = h2f_signed(sm >> 16u);
    }
}

// V value j of position pos, head g (s: its row scale, where V_ROW_SCALE or V_ROW_MIN; mn: its min).
fn pos_v(pos: u32, g: u32, j: u32, s: f32, mn: f32) -> f32 {
    if (in_residual(pos)) { return bitcast<f32>(rword(w.w1 + ((pos - w.w0) * p.n_kv + g) * HD + j)); }
    if (V_ROW_SCALE) { return v_scaled(v_row(pos, g), j, s); }
    if (V_ROW_MIN) {
        let code = (vword(v_row(pos, g) + j / V_PER) >> (V_BITS * (j % V_PER))) & V_MASK;
        return f32(code) * s + mn;
    }
    return v_elem(v_row(pos, g), j);
}

// RESIDUAL's boundary w.w0 is a multiple of GROUP (or at most the window's first position), so where
// GROUP is a multiple of BLOCK a block, and with it a fold_range, lies wholly in the quantised part or
// wholly in the residual: fold_range then decides once whether its V values are all codes.
const RES_BY_BLOCK: bool = !RESIDUAL || GROUP % BLOCK == 0u;
const V_QUICK: bool = V_ROW_MIN && RES_BY_BLOCK;

// Eight V values (positions i .. i + 7 of a round of HD).
struct V8 { a: vec4<f32>, b: vec4<f32> }

// The V value of code word `word` shifted by sh, with round position k's scale and min (pos_v's value).
fn dq(word: u32, sh: u32, k: u32) -> f32 { return f32((word >> sh) & V_MASK) * vs[k] + vm[k]; }

// V value j of the eight quantised positions pos .. pos + 7 (round positions k .. k + 7), V_QUICK: the
// word's address and shift once, then eight word loads written out (pos_v works both out per value,
// and asks in_residual of each; the q4res fold at 1K on the H200: 22.8-23.5 -> 15.0-15.7 us per layer,
// bench/NOTES.md, commit d30614d).
fn v8_quick(pos: u32, g: u32, j: u32, k: u32) -> V8 {
    let base = v_row(pos, g) + j / V_PER;
    let st = p.n_kv * V_WORDS;
    let sh = V_BITS * (j % V_PER);
    let c0 = vword(base);
    let c1 = vword(base + st);
    let c2 = vword(base + 2u * st);
    let c3 = vword(base + 3u * st);
    let c4 = vword(base + 4u * st);
    let c5 = vword(base + 5u * st);
    let c6 = vword(base + 6u * st);
    let c7 = vword(base + 7u * st);
    return V8(vec4<f32>(dq(c0, sh, k), dq(c1, sh, k + 1u), dq(c2, sh, k + 2u), dq(c3, sh, k + 3u)),
              vec4<f32>(dq(c4, sh, k + 4u), dq(c5, sh, k + 5u), dq(c6, sh, k + 6u), dq(c7, sh, k + 7u)));
}

// V value j of the eight positions pos .. pos + 7 (round positions k .. k + 7), any mode.
fn v8_any(pos: u32, g: u32, j: u32, k: u32) -> V8 {
    let v0 = pos_v(pos + 0u, g, j, vs[k + 0u], vm[k + 0u]);
    let v1 = pos_v(pos + 1u, g, j, vs[k + 1u], vm[k + 1u]);
    let v2 = pos_v(pos + 2u, g, j, vs[k + 2u], vm[k + 2u]);
    let v3 = pos_v(pos + 3u, g, j, vs[k + 3u], vm[k + 3u]);
    let v4 = pos_v(pos + 4u, g, j, vs[k + 4u], vm[k + 4u]);
    let v5 = pos_v(pos + 5u, g, j, vs[k + 5u], vm[k + 5u]);
    let v6 = pos_v(pos + 6u, g, j, vs[k + 6u], vm[k + 6u]);
    let v7 = pos_v(pos + 7u, g, j, vs[k + 7u], vm[k + 7u]);
    return V8(vec4<f32>(v0, v1, v2, v3), vec4<f32>(v4, v5, v6, v7));
}

// One position folded into (m, l, acc[j]): score s, V value v.
fn fold_one(s: f32, v: f32, m: ptr<function, f32>, l: ptr<function, f32>, acc: ptr<function, f32>) {
    let m_new = max(*m, s);
    let c_old = exp(*m - m_new);
    let e = exp(s - m_new);
    *l = *l * c_old + e;
    *acc = *acc * c_old + e * v;
    *m = m_new;
}

// Round positions k .. k + 7 (scores sc[k ..], V values v) folded in order.
fn fold8(k: u32, v: V8, m: ptr<function, f32>, l: ptr<function, f32>, acc: ptr<function, f32>) {
    fold_one(sc[k + 0u], v.a.x, m, l, acc);
    fold_one(sc[k + 1u], v.a.y, m, l, acc);
    fold_one(sc[k + 2u], v.a.z, m, l, acc);
    fold_one(sc[k + 3u], v.a.w, m, l, acc);
    fold_one(sc[k + 4u], v.b.x, m, l, acc);
    fold_one(sc[k + 5u], v.b.y, m, l, acc);
    fold_one(sc[k + 6u], v.b.z, m, l, acc);
    fold_one(sc[k + 7u], v.b.w, m, l, acc);
}

// Fold positions [lo, hi) of KV head g into (m, l, acc[j]), one position at a time in increasing
// order: scores HD at a time (invocation i: position base + i), then every invocation folds them
// into (m, l) (computed identically by all) and its own acc[j]. Call from uniform control flow.
// The V values of eight positions are loaded (written out, not in a loop or an array) before any
// of them is folded: the H200 then waits for one memory round trip per eight positions instead of
// one per position (bench/NOTES.md, commit 38216dc: 25.4 us per layer at 1K context before, 12.6 us after);
// full rounds of sixteen load two eights before folding the first (commit c9baca6). The values and the
// order of the operations are those of one position at a time.
fn fold_range(lo: u32, hi: u32, g: u32, j: u32, m: ptr<function, f32>, l: ptr<function, f32>,
              acc: ptr<function, f32>) {
    stage_group_scales(lo, hi, g, j);
    let quick = V_QUICK && !in_residual(lo);  // every position of [lo, hi) quantised (RES_BY_BLOCK)
    for (var b = lo; b < hi; b = b + HD) {
        if (b + j < hi) {
            sc[j] = pos_score(b + j, g, 0u);
            load_v_scale(b + j, g, j);
        }
        workgroupBarrier();
        let nb = min(HD, hi - b);
        var i = 0u;
        for (; i + 16u <= nb; i = i + 16u) {  // sixteen positions' V loaded before either eight is folded
            if (quick) {
                let va = v8_quick(b + i, g, j, i);
                let vb = v8_quick(b + i + 8u, g, j, i + 8u);
                fold8(i, va, m, l, acc);
                fold8(i + 8u, vb, m, l, acc);
            } else {
                let va = v8_any(b + i, g, j, i);
                let vb = v8_any(b + i + 8u, g, j, i + 8u);
                fold8(i, va, m, l, acc);
                fold8(i + 8u, vb, m, l, acc);
            }
        }
        for (; i + 8u <= nb; i = i + 8u) {
            if (quick) { fold8(i, v8_quick(b + i, g, j, i), m, l, acc); } else { fold8(i, v8_any(b + i, g, j, i), m, l, acc); }
        }
        for (; i < nb; i = i + 1u) { fold_one(sc[i], pos_v(b + i, g, j, vs[i], vm[i]), m, l, acc); }
        workgroupBarrier();  // the scores are read by all before the next round overwrites them
    }
}
