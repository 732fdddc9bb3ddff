// The blocks variant, step 1 of 2: fold every position block a window touches, in parallel.
//
// INVARIANT (why windowed attention stays bit-identical to whole-cache attention): positions are
// grouped in blocks aligned to ABSOLUTE positions, block b = [b*BLOCK, (b+1)*BLOCK). Per (token t,
// head h) the state holds two folds (merge_blocks.wgsl): MAIN, the blocks completed so far merged in
// increasing block order, and PARTIAL, the open block's positions folded one at a time from a fresh
// start. A block's fold is the same sequence of f32 operations whether it is computed in one
// dispatch or stopped at a window end and continued from PARTIAL in the next window (the state is
// kept in f32 between dispatches), and blocks are merged in the same order whatever the windows;
// so any split into windows gives the same bits. Nothing divides by l before finalize.wgsl.
//
// Workgroup (k, idx): block w.start / BLOCK + k of the window for (token, head) idx, HD invocations
// (k < window_blocks(): a decode step's dispatch may have more, `Attention.fold_shape`, which return).
// Scores are computed HD positions at a time (invocation i: position base + i, a sequential dot
// product over d), then every invocation folds them one at a time into (m, l) and its own acc[j].
// It writes the block's fold to `part`; merge.wgsl decides what it means (see there). Three entry points:
// `main` folds only, and merge_blocks.wgsl merges in a dispatch of its own; `fold_merge` also merges, in
// the window's last workgroup per (token, head) to finish its block (one dispatch per window instead of
// two; it binds 10 storage buffers, so only where the adapter allows that many); `fold_lanes` folds a
// batch's blocks four tokens a workgroup (fold_lanes.wgsl), with `main`'s bits.
// RESIDUAL (q4res): the window may end in the f32 residual (positions from w.w0 on, fold.wgsl), so the
// newest group is folded in the same dispatch as the quantised blocks before it, each position by the
// same operations as in a window of its own: the invariant holds across that boundary too.

//#include "query.wgsl"

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> w: Window;
@group(0) @binding(2) var<storage, read> q: array<f32>;        // [n_q, n_heads, HD]
@group(0) @binding(3) var<storage, read> kc: array<u32>;       // rows [pos, n_kv, K_WORDS]
@group(0) @binding(4) var<storage, read> vc: array<u32>;       // rows [pos, n_kv, V_WORDS]
@group(0) @binding(5) var<storage, read_write> state: array<f32>;  // [n_q, n_heads, 2 x (2 + HD)]: MAIN, PARTIAL
@group(0) @binding(6) var<storage, read_write> part: array<atomic<u32>>;  // block_state.wgsl's layout
@group(0) @binding(7) var<storage, read> rc: array<vec4<u32>>; // RESIDUAL: f32 rows from w.w0 on, four words a vector (fold.wgsl); else V's rows (fold_lanes' f32 V)
@group(0) @binding(8) var<storage, read> kc4: array<vec4<u32>>; // kc's words four at a time (f32 K, fold.wgsl)
@group(0) @binding(9) var<storage, read_write> out: array<f32>;  // fold_merge: [n_q, n_heads, HD], the last window

const RESIDUAL: bool = {{RESIDUAL}};

//#include "../format/row_format.wgsl"

//#include "state.wgsl"

//#include "block_state.wgsl"

// Q_TILE queries' values and scores (fold_lanes: 4; the other entry points: 1), query s from s * HD on.
var<workgroup> qs: array<vec4<f32>, {{Q_TILE}} * {{HEAD_DIM}} / 4>;
var<workgroup> sc: array<f32, {{Q_TILE}} * {{HEAD_DIM}}>;
var<workgroup> vs: array<f32, {{HEAD_DIM}}>;
var<workgroup> vm: array<f32, {{HEAD_DIM}}>;
var<workgroup> ks: array<vec4<f32>, {{HEAD_DIM}} / 4>;
var<workgroup> km: array<vec4<f32>, {{HEAD_DIM}} / 4>;

//#include "../format/words_buffer.wgsl"

//#include "../format/k_elem.wgsl"

//#include "../format/v_elem.wgsl"

//#include "fold.wgsl"

//#include "fold_lanes.wgsl"

//#include "merge.wgsl"

// Fold block k of the window for (token, head) idx into `part` (invocation j: acc[j]).
fn fold_block(k: u32, idx: u32, j: u32) {
    let t = idx / p.n_heads;
    let g = kv_head(idx % p.n_heads);
    let bb = w.start / BLOCK + k;
    let lo = max(w.start, bb * BLOCK);
    let hi = min(min(w.end, causal_end(t)), (bb + 1u) * BLOCK);

    var m = NEG_BIG;
    var l = 0.0;
    var acc = 0.0;
    if (lo != bb * BLOCK && (w.first & 1u) == 0u) {  // the window starts inside this block: continue its fold
        let pb = partial_fold(idx);
        m = state[pb + M_AT];
        l = state[pb + L_AT];
        acc = state[pb + ACC_AT + j];
    }
    if (j % 4u == 0u) {
        let qb = idx * HD + j;
        qs[j / 4u] = vec4<f32>(q[qb], q[qb + 1u], q[qb + 2u], q[qb + 3u]);
    }
    workgroupBarrier();

    fold_range(lo, hi, g, j, &m, &l, &acc);
    let ob = block_fold(idx, k);
    if (j == 0u) {
        part_put(ob + M_AT, m);
        part_put(ob + L_AT, l);
    }
    part_put(ob + ACC_AT + j, acc);
}

@compute @workgroup_size({{HEAD_DIM}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    if (wid.y >= p.n_q * p.n_heads || wid.x >= window_blocks()) { return; }  // the driver pads decode's blocks
    fold_block(wid.x, wid.y, lid.x);
}

// A batch's folds four query tokens a workgroup (fold_lanes.wgsl; built with Q_TILE 4): the dispatch is (blocks,
// n_heads x the tiles of four tokens), and merge_blocks.wgsl merges, as after `main`.
@compute @workgroup_size({{HEAD_DIM}})
fn fold_lanes(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    if (wid.y >= (p.n_q + 3u) / 4u * p.n_heads || wid.x >= window_blocks()) { return; }
    fold_tile(wid.x, wid.y / p.n_heads, wid.y % p.n_heads, lid.x);
}

var<workgroup> last_s: u32;  // fold_merge: 1 in the workgroup that merges

// The fold, then the merge by whichever workgroup of (token, head) idx finishes its block last: each one
// makes its fold visible on the device (storageBarrier: a device-scope release, and every invocation's
// stores done) before counting itself in idx's counter (an atomic word of `part`); the one that counts the window's last
// block resets the count for the next dispatch, makes the others' folds visible to itself (a device-scope
// acquire) and merges all of them, in block order: the operations of merge_blocks.wgsl, whichever
// workgroup runs them.
@compute @workgroup_size({{HEAD_DIM}})
fn fold_merge(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let idx = wid.y;  // the dispatch is (blocks, n_q * n_heads): every idx is a real one
    if (wid.x >= window_blocks()) { return; }  // past the window's blocks (the driver pads decode's): no fold, no count
    fold_block(wid.x, idx, lid.x);
    storageBarrier();
    if (lid.x == 0u) {
        let last = atomicAdd(&part[counter(idx)], 1u) + 1u == window_blocks();
        if (last) { atomicStore(&part[counter(idx)], 0u); }
        last_s = select(0u, 1u, last);
    }
    if (workgroupUniformLoad(&last_s) == 0u) { return; }
    storageBarrier();
    merge_window(idx, lid.x);
}
