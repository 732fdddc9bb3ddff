// The blocks variant's merge (//#include; merge_blocks.wgsl runs it as a dispatch of its own, blocks.wgsl's
// fold_merge in the fold's last workgroup per (token, head)): the window's block folds merged into the state,
// in block order.
//
// Per (token t, head h) and block b the window touched (its positions for t: [lo, hi), see
// blocks.wgsl): if the block is complete (hi == its end) its fold is merged into MAIN
//     m' = max(M, m_b);  a = exp(M - m');  c = exp(m_b - m');  L = L a + l_b c;  ACC = ACC a + acc_b c
// and PARTIAL is emptied; otherwise (the window or the causal bound ends inside it) its fold becomes
// PARTIAL, which the next window continues or the last merge merges last. l > 0 for any fold
// of at least one position (its largest score contributes exp(0) = 1), so PARTIAL is empty iff l == 0.
// One workgroup per (token, head), HD invocations: invocation j owns acc[j]; m and l are computed
// identically by all. The call's last window (bit 1 of w.first) also finishes the call: PARTIAL, when
// not empty, merged into MAIN as above, then out = acc / l, the one and only normalisation (the
// operations of finalize.wgsl, which the serial variant runs; one dispatch fewer per call).
// Expects `p`, `w`, `state` (read_write), `part` (block_state.wgsl's layout, read with part_f32) and `out`
// (read_write), query.wgsl, format/row_format.wgsl, state.wgsl and block_state.wgsl. Call from uniform control
// flow: it has barriers.

// Blocks merged per round (8 KB of their acc in workgroup memory, within WebGPU's default 16 KB).
const ROUND: u32 = min(HD, 2048u / HD);
var<workgroup> bm_s: array<f32, ROUND>;       // a round's block maxima
var<workgroup> bl_s: array<f32, ROUND>;       // ... their sums
var<workgroup> ba_s: array<f32, ROUND * HD>;  // ... and their acc, block-major

fn merge_window(idx: u32, j: u32) {
    let sb = main_fold(idx);
    let pb = partial_fold(idx);
    var mm = NEG_BIG;
    var ll = 0.0;
    var aa = 0.0;
    var pm = NEG_BIG;
    var pl = 0.0;
    var pa = 0.0;
    if ((w.first & 1u) == 0u) {
        mm = state[sb + M_AT];
        ll = state[sb + L_AT];
        aa = state[sb + ACC_AT + j];
        pm = state[pb + M_AT];
        pl = state[pb + L_AT];
        pa = state[pb + ACC_AT + j];
    }
    workgroupBarrier();  // every invocation has read m and l before invocation 0 overwrites them
    let end = min(w.end, causal_end(idx / p.n_heads));
    let b0 = w.start / BLOCK;
    let nblocks = window_blocks();
    // ROUND blocks per round: their folds are first loaded into workgroup memory, eight loads written out
    // at a time (a loop of loads waits one memory round trip per iteration on the H200, bench/NOTES.md
    // commit 38216dc), then merged one block at a time in block order: the same operations as one block
    // loaded per iteration.
    for (var r0 = 0u; r0 < nblocks; r0 = r0 + ROUND) {
        let cnt = min(ROUND, nblocks - r0);
        if (j < cnt) {
            let ob = block_fold(idx, r0 + j);
            bm_s[j] = part_f32(ob + M_AT);
            bl_s[j] = part_f32(ob + L_AT);
        }
        var k = 0u;
        for (; k + 16u <= cnt; k = k + 16u) {  // sixteen in flight at once: one wait for a round of 16 blocks
            let a0 = part_f32(block_fold(idx, r0 + k) + ACC_AT + j);
            let a1 = part_f32(block_fold(idx, r0 + k + 1u) + ACC_AT + j);
            let a2 = part_f32(block_fold(idx, r0 + k + 2u) + ACC_AT + j);
            let a3 = part_f32(block_fold(idx, r0 + k + 3u) + ACC_AT + j);
            let a4 = part_f32(block_fold(idx, r0 + k + 4u) + ACC_AT + j);
            let a5 = part_f32(block_fold(idx, r0 + k + 5u) + ACC_AT + j);
            let a6 = part_f32(block_fold(idx, r0 + k + 6u) + ACC_AT + j);
            let a7 = part_f32(block_fold(idx, r0 + k + 7u) + ACC_AT + j);
            let a8 = part_f32(block_fold(idx, r0 + k + 8u) + ACC_AT + j);
            let a9 = part_f32(block_fold(idx, r0 + k + 9u) + ACC_AT + j);
            let a10 = part_f32(block_fold(idx, r0 + k + 10u) + ACC_AT + j);
            let a11 = part_f32(block_fold(idx, r0 + k + 11u) + ACC_AT + j);
            let a12 = part_f32(block_fold(idx, r0 + k + 12u) + ACC_AT + j);
            let a13 = part_f32(block_fold(idx, r0 + k + 13u) + ACC_AT + j);
            let a14 = part_f32(block_fold(idx, r0 + k + 14u) + ACC_AT + j);
            let a15 = part_f32(block_fold(idx, r0 + k + 15u) + ACC_AT + j);
            ba_s[k * HD + j] = a0;
            ba_s[(k + 1u) * HD + j] = a1;
            ba_s[(k + 2u) * HD + j] = a2;
            ba_s[(k + 3u) * HD + j] = a3;
            ba_s[(k + 4u) * HD + j] = a4;
            ba_s[(k + 5u) * HD + j] = a5;
            ba_s[(k + 6u) * HD + j] = a6;
            ba_s[(k + 7u) * HD + j] = a7;
            ba_s[(k + 8u) * HD + j] = a8;
            ba_s[(k + 9u) * HD + j] = a9;
            ba_s[(k + 10u) * HD + j] = a10;
            ba_s[(k + 11u) * HD + j] = a11;
            ba_s[(k + 12u) * HD + j] = a12;
            ba_s[(k + 13u) * HD + j] = a13;
            ba_s[(k + 14u) * HD + j] = a14;
            ba_s[(k + 15u) * HD + j] = a15;
        }
        for (; k + 8u <= cnt; k = k + 8u) {
            let a0 = part_f32(block_fold(idx, r0 + k) + ACC_AT + j);
            let a1 = part_f32(block_fold(idx, r0 + k + 1u) + ACC_AT + j);
            let a2 = part_f32(block_fold(idx, r0 + k + 2u) + ACC_AT + j);
            let a3 = part_f32(block_fold(idx, r0 + k + 3u) + ACC_AT + j);
            let a4 = part_f32(block_fold(idx, r0 + k + 4u) + ACC_AT + j);
            let a5 = part_f32(block_fold(idx, r0 + k + 5u) + ACC_AT + j);
            let a6 = part_f32(block_fold(idx, r0 + k + 6u) + ACC_AT + j);
            let a7 = part_f32(block_fold(idx, r0 + k + 7u) + ACC_AT + j);
            ba_s[k * HD + j] = a0;
            ba_s[(k + 1u) * HD + j] = a1;
            ba_s[(k + 2u) * HD + j] = a2;
            ba_s[(k + 3u) * HD + j] = a3;
            ba_s[(k + 4u) * HD + j] = a4;
            ba_s[(k + 5u) * HD + j] = a5;
            ba_s[(k + 6u) * HD + j] = a6;
            ba_s[(k + 7u) * HD + j] = a7;
        }
        for (; k < cnt; k = k + 1u) { ba_s[k * HD + j] = part_f32(block_fold(idx, r0 + k) + ACC_AT + j); }
        workgroupBarrier();
        for (var i = 0u; i < cnt; i = i + 1u) {
            let bb = b0 + r0 + i;
            let lo = max(w.start, bb * BLOCK);
            let hi = min(end, (bb + 1u) * BLOCK);
            if (lo >= hi) { break; }  // this token sees nothing of the window from here on
            let bm = bm_s[i];
            let bl = bl_s[i];
            let ba = ba_s[i * HD + j];
            if (hi == (bb + 1u) * BLOCK) {
                let m_new = max(mm, bm);
                let a = exp(mm - m_new);
                let c = exp(bm - m_new);
                ll = ll * a + bl * c;
                aa = aa * a + ba * c;
                mm = m_new;
                pm = NEG_BIG;
                pl = 0.0;
                pa = 0.0;
            } else {
                pm = bm;
                pl = bl;
                pa = ba;
            }
        }
        workgroupBarrier();  // every invocation has merged this round before the next overwrites it
    }
    if (MUT_NORMALISE) {  // bug (3): normalise the carried folds at the window boundary and carry on
        if (ll > 0.0) {
            aa = aa / ll;
            ll = 1.0;
        }
        if (pl > 0.0) {
            pa = pa / pl;
            pl = 1.0;
        }
    }
    if ((w.first & 2u) != 0u) {  // the last window: out = acc / l (PARTIAL merged first where not empty)
        if (pl == 0.0) {
            out[idx * HD + j] = aa / ll;
            return;
        }
        let m_new = max(mm, pm);
        let a = exp(mm - m_new);
        let c = exp(pm - m_new);
        out[idx * HD + j] = (aa * a + pa * c) / (ll * a + pl * c);
        return;
    }
    if (j == 0u) {
        state[sb + M_AT] = mm;
        state[sb + L_AT] = ll;
        state[pb + M_AT] = pm;
        state[pb + L_AT] = pl;
    }
    state[sb + ACC_AT + j] = aa;
    state[pb + ACC_AT + j] = pa;
}
