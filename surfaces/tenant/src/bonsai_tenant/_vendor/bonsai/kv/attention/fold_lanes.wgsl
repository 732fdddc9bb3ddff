// Used by blocks.wgsl (//#include) for its `fold_lanes` entry: a batch's block folds with register tiles. Expects
// fold.wgsl (and what it expects), with `qs` and `sc` holding Q_TILE = 4 queries' values (query s from s * HD on).
//
// Workgroup (k, tile, head h): block k of the window for the four query tokens 4 tile .. 4 tile + 3 of head h (one
// KV head, so one set of K and V rows for all four). Invocation i scores position base + i for all four queries
// from one load of its K row (each score the sequential dot product of pos_score). Then invocation (s, lane) =
// (i / LANES, i % LANES) folds query s's positions into its (m, l) and four accumulators acc[4 lane .. 4 lane + 3]:
// each position's two exponentials serve four dimensions, where fold_block's invocations compute them for one
// each (a 512-token prompt's fold was the largest kernel of its step, bench/NOTES.md, commit 9e2e462). Every (m, l,
// acc[j]) sees fold_one's operations in fold_range's order, so each block's fold has fold_block's bits, and the
// merge (merge_blocks.wgsl) reads them from the same place.

const LANES: u32 = HD / 4u;  // invocations per query token

// Scores of position pos (KV head g) with the workgroup's four queries: pos_score's sums, K loaded once for all four.
fn score4(pos: u32, g: u32) -> vec4<f32> {
    var dot = vec4<f32>(0.0);
    if (in_residual(pos)) {
        if (HD % 64u == 0u) {
            let kb = ((pos - w.w0) * p.n_kv + g) * HD;
            for (var d = 0u; d < HD; d = d + 64u) { dot = add64x4(dot, d, rc_row64((kb + d) / 4u)); }
            return dot * p.qk_scale;
        }
    } else {
        let kb = w.k_off + ((pos - w.buf_base) * p.n_kv + g) * K_WORDS;
        if (K_BITS == 32u && HD % 64u == 0u && (kb & 3u) == 0u) {  // score's f32 path
            for (var d = 0u; d < HD; d = d + 64u) { dot = add64x4(dot, d, kc4_row64((kb + d) / 4u)); }
            return dot * p.qk_scale;
        }
        if (K_GROUP_CACHE && K_VW == 8u && K_BITS == 4u) {  // score's grouped-codes path, K values decoded once
            return add64x4(dot, 0u, codes_row64(k_words8(kb))) * p.qk_scale;
        }
    }
    return vec4<f32>(pos_score(pos, g, 0u), pos_score(pos, g, HD), pos_score(pos, g, 2u * HD), pos_score(pos, g, 3u * HD));
}

// Channels d .. d + 3 of 4-bit codes from bit sh of `word`, decoded with the group's cached scales and mins: the K
// values add_codes multiplies (K_GROUP_CACHE).
fn codes4(word: u32, sh: u32, d: u32) -> vec4<f32> {
    let s = ks[d / 4u];
    let mn = km[d / 4u];
    return vec4<f32>(f32((word >> sh) & K_MASK) * s.x + mn.x,
                     f32((word >> (sh + 4u)) & K_MASK) * s.y + mn.y,
                     f32((word >> (sh + 8u)) & K_MASK) * s.z + mn.z,
                     f32((word >> (sh + 12u)) & K_MASK) * s.w + mn.w);
}

// The sixty-four K values of a row of 4-bit codes (K_GROUP_CACHE, HD 64): decoded once for the four queries.
// (add_codes decodes each value where it multiplies it; four queries sharing one load of the words that way ran
// 1.4x slower than one query a workgroup on the H100, bench/NOTES.md, commit 33c3353.)
fn codes_row64(k: Words8) -> Row64 {
    return Row64(codes4(k.w0, 0u, 0u), codes4(k.w0, 16u, 4u), codes4(k.w1, 0u, 8u), codes4(k.w1, 16u, 12u),
                 codes4(k.w2, 0u, 16u), codes4(k.w2, 16u, 20u), codes4(k.w3, 0u, 24u), codes4(k.w3, 16u, 28u),
                 codes4(k.w4, 0u, 32u), codes4(k.w4, 16u, 36u), codes4(k.w5, 0u, 40u), codes4(k.w5, 16u, 44u),
                 codes4(k.w6, 0u, 48u), codes4(k.w6, 16u, 52u), codes4(k.w7, 0u, 56u), codes4(k.w7, 16u, 60u));
}

// dot + the four queries' values d .. d + 63 . k (add64 for each).
fn add64x4(dot: vec4<f32>, d: u32, k: Row64) -> vec4<f32> {
    return vec4<f32>(add64(dot.x, d, k), add64(dot.y, HD + d, k), add64(dot.z, 2u * HD + d, k), add64(dot.w, 3u * HD + d, k));
}

// Four V codes share a word (dimensions j0 .. j0 + 3, j0 a multiple of four).
const V_QUICK4: bool = V_QUICK && V_PER % 4u == 0u;

// V values j0 .. j0 + 3 of position pos (round position k), head g: pos_v's values (`quick`: all codes, V_QUICK4).
fn v4(pos: u32, g: u32, j0: u32, k: u32, quick: bool) -> vec4<f32> {
    if (V_QUICK4 && quick) {
        let word = vword(v_row(pos, g) + j0 / V_PER);
        let sh = V_BITS * (j0 % V_PER);
        return vec4<f32>(dq(word, sh, k), dq(word, sh + V_BITS, k), dq(word, sh + 2u * V_BITS, k), dq(word, sh + 3u * V_BITS, k));
    }
    if (V_BITS == 32u && !RESIDUAL) {  // f32 V: the four words in one load (`rc` is bound to V's rows, the driver)
        let vb = v_row(pos, g) + j0;
        if ((vb & 3u) == 0u) { return bitcast<vec4<f32>>(rc[vb / 4u]); }
    }
    return vec4<f32>(pos_v(pos, g, j0, vs[k], vm[k]), pos_v(pos, g, j0 + 1u, vs[k], vm[k]),
                     pos_v(pos, g, j0 + 2u, vs[k], vm[k]), pos_v(pos, g, j0 + 3u, vs[k], vm[k]));
}

// fold_one for four accumulators: one position (score s, V values v) into (m, l, acc).
fn fold_one4(s: f32, v: vec4<f32>, m: ptr<function, f32>, l: ptr<function, f32>, acc: ptr<function, vec4<f32>>) {
    let m_new = max(*m, s);
    let c_old = exp(*m - m_new);
    let e = exp(s - m_new);
    *l = *l * c_old + e;
    *acc = *acc * c_old + e * v;
    *m = m_new;
}

// Fold positions [lo, hi) into query s's (m, l, acc) (dimensions j0 ..), as fold_range does for one dimension;
// the workgroup scores [lo, hi_all), hi_all the largest hi of its queries. Call from uniform control flow.
// Eight positions' V values are loaded before any of them is folded (fold_range's reason).
fn fold_range4(lo: u32, hi_all: u32, hi: u32, g: u32, s: u32, j0: u32, i: u32, m: ptr<function, f32>,
               l: ptr<function, f32>, acc: ptr<function, vec4<f32>>) {
    stage_group_scales(lo, hi_all, g, i);
    let quick = V_QUICK4 && !in_residual(lo);
    let so = s * HD;
    for (var b = lo; b < hi_all; b = b + HD) {
        if (b + i < hi_all) {
            let s4 = score4(b + i, g);
            sc[i] = s4.x;
            sc[HD + i] = s4.y;
            sc[2u * HD + i] = s4.z;
            sc[3u * HD + i] = s4.w;
            load_v_scale(b + i, g, i);
        }
        workgroupBarrier();
        let nb = select(0u, min(HD, hi - b), hi > b);
        var k = 0u;
        for (; k + 8u <= nb; k = k + 8u) {
            let p0 = b + k;
            let v0 = v4(p0, g, j0, k, quick);
            let v1 = v4(p0 + 1u, g, j0, k + 1u, quick);
            let v2 = v4(p0 + 2u, g, j0, k + 2u, quick);
            let v3 = v4(p0 + 3u, g, j0, k + 3u, quick);
            let v4_ = v4(p0 + 4u, g, j0, k + 4u, quick);
            let v5 = v4(p0 + 5u, g, j0, k + 5u, quick);
            let v6 = v4(p0 + 6u, g, j0, k + 6u, quick);
            let v7 = v4(p0 + 7u, g, j0, k + 7u, quick);
            fold_one4(sc[so + k], v0, m, l, acc);
            fold_one4(sc[so + k + 1u], v1, m, l, acc);
            fold_one4(sc[so + k + 2u], v2, m, l, acc);
            fold_one4(sc[so + k + 3u], v3, m, l, acc);
            fold_one4(sc[so + k + 4u], v4_, m, l, acc);
            fold_one4(sc[so + k + 5u], v5, m, l, acc);
            fold_one4(sc[so + k + 6u], v6, m, l, acc);
            fold_one4(sc[so + k + 7u], v7, m, l, acc);
        }
        for (; k < nb; k = k + 1u) { fold_one4(sc[so + k], v4(b + k, g, j0, k, quick), m, l, acc); }
        workgroupBarrier();  // the scores are read by all before the next round overwrites them
    }
}

// Fold block k of the window for the four query tokens of `tile`, head h, into `part` (invocation i: see the top).
fn fold_tile(k: u32, tile: u32, h: u32, i: u32) {
    let s = i / LANES;
    let j0 = (i % LANES) * 4u;
    let t = tile * 4u + s;
    let valid = t < p.n_q;
    let idx = t * p.n_heads + h;
    let g = kv_head(h);
    let bb = w.start / BLOCK + k;
    let lo = max(w.start, bb * BLOCK);
    let top = min(w.end, (bb + 1u) * BLOCK);
    let hi_all = min(top, causal_end(min(tile * 4u + 3u, p.n_q - 1u)));  // the tile's last token sees the most
    var hi = lo;
    var m = NEG_BIG;
    var l = 0.0;
    var acc = vec4<f32>(0.0);
    var q4 = vec4<f32>(0.0);
    if (valid) {
        hi = min(top, causal_end(t));
        if (lo != bb * BLOCK && (w.first & 1u) == 0u) {  // the window starts inside this block: continue its fold
            let pb = partial_fold(idx);
            m = state[pb + M_AT];
            l = state[pb + L_AT];
            acc = vec4<f32>(state[pb + ACC_AT + j0], state[pb + ACC_AT + j0 + 1u], state[pb + ACC_AT + j0 + 2u],
                            state[pb + ACC_AT + j0 + 3u]);
        }
        let qb = idx * HD + j0;
        q4 = vec4<f32>(q[qb], q[qb + 1u], q[qb + 2u], q[qb + 3u]);
    }
    let qo = s * HD + j0;
    qs[qo / 4u] = q4;
    workgroupBarrier();

    fold_range4(lo, hi_all, hi, g, s, j0, i, &m, &l, &acc);
    if (valid) {
        let ob = block_fold(idx, k);
        if (j0 == 0u) {
            part_put(ob + M_AT, m);
            part_put(ob + L_AT, l);
        }
        part_put(ob + ACC_AT + j0, acc.x);
        part_put(ob + ACC_AT + j0 + 1u, acc.y);
        part_put(ob + ACC_AT + j0 + 2u, acc.z);
        part_put(ob + ACC_AT + j0 + 3u, acc.w);
    }
}
