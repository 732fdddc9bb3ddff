// The fused QKV product of one token with the KV store in its epilogue (entry `main_kv` of matmul.wgsl:
// OUT 2, ROPE, TT 1): the Q rows go to y as `main` writes them; the K rows (rotated) and V rows go
//   - to y2, the staging area, from word p[11]: K block then V block, as store.wgsl's main_f32 writes one
//     position (f32 rows: row i of K/V is word p[11] + i);
//   - to y3, the window slot or the f32 residual: K from word d2[0] on, V from word d2[1] on (a per-step
//     parameter: the words store.wgsl's ALSO copy and scatter.wgsl take);
//   - and each K/V head row's flag, store.wgsl's: 0 ok, 1 a non-finite value, else 2 a value at or above
//     the limit (f32 bits: p[14] for K, p[15] for V; 0: no limit) into flags[p[12] + h], h = the K heads
//     then the V heads.
// A head row spans HD / ROWS workgroups (ROWS divides HD and n1, so a workgroup's rows lie in one head).
// Each adds (1 << 16) | non-finite | over-limit << 8 of its rows to the scratch word flags[p[13] + h]; the
// add that completes the count writes the flag and zeroes the word for the next dispatch. One atomic word
// per row: every add sees all the earlier ones, so no other dispatch has to zero anything.
// Bindings 8 and 9 make it 10 storage buffers: used where the adapter allows that many (matmul.py).

@group(0) @binding(8) var<storage, read_write> flags: array<atomic<u32>>;
@group(0) @binding(9) var<storage, read> d2: array<u32>;
var<workgroup> kv_bad: array<atomic<u32>, 2>;  // the workgroup's rows: [0] a non-finite value, [1] over the limit

fn kv_value(r: u32, v: f32) {
    let i = r - p[8];  // K rows [0, n2), then V rows
    let n2 = p[9];
    y2[p[11] + i] = v;
    var limit = bitcast<f32>(p[14]);
    if (i < n2) {
        y3[d2[0] + i] = v;
    } else {
        y3[d2[1] + i - n2] = v;
        limit = bitcast<f32>(p[15]);
    }
    if ((bitcast<u32>(v) & 0x7fffffffu) >= 0x7f800000u) { atomicOr(&kv_bad[0], 1u); }
    if (limit > 0.0 && abs(v) >= limit) { atomicOr(&kv_bad[1], 1u); }
}

@compute @workgroup_size(WG)
fn main_kv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    if (li == 0u) {
        atomicStore(&kv_bad[0], 0u);
        atomicStore(&kv_bad[1], 0u);
    }
    product(wid, li);
    let n = p[0]; let n1 = p[8]; let n2 = p[9];
    let lane = li % LANES;
    let r = wid.x * ROWS + li / LANES;
    workgroupBarrier();  // the pair's second row is summed by the next LANES invocations
    if (lane == 0u && (li / LANES) % 2u == 0u && r + 1u < n) {
        let a = part[li * TT];
        let b = part[(li + LANES) * TT];
        var u = a;
        var w2 = b;
        if (r < n1 + n2) {  // a Q or K row pair: rotated as rope.wgsl does (and `main`)
            let ab = rotated(r, n1, 0u, a, b);
            u = ab.x;
            w2 = ab.y;
        }
        if (r < n1) {
            y[r] = u;
            y[r + 1u] = w2;
        } else {
            kv_value(r, u);
            kv_value(r + 1u, w2);
        }
    }
    workgroupBarrier();
    let r0 = wid.x * ROWS;
    if (li == 0u && r0 >= n1 && r0 < n) {
        let h = (r0 - n1) / ROPE_HD;
        let mine = (1u << 16u) | atomicLoad(&kv_bad[0]) | (atomicLoad(&kv_bad[1]) << 8u);
        let before = atomicAdd(&flags[p[13] + h], mine);
        if ((before >> 16u) + 1u == ROPE_HD / ROWS) {
            let all = before + mine;
            var bad = 0u;
            if ((all & 0xff00u) != 0u) { bad = 2u; }
            if ((all & 0xffu) != 0u) { bad = 1u; }
            atomicStore(&flags[p[12] + h], bad);
            atomicStore(&flags[p[13] + h], 0u);
        }
    }
}
