// Argmax over a logits row (greedy decoding reads back only the token id). One workgroup; ties go to
// the lowest index, like numpy.argmax. The id lands in out[0] (what the next step's embedding reads on
// the GPU-resident decode loop) and in out[1 + h[0]]: the loop's tokens, read back together.
const WG: u32 = {{WG}}u;

// params (u32): n, x_offset
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read> p: array<u32>;
@group(0) @binding(3) var<storage, read> h: array<u32>;   // (1,) this step's place in the history

var<workgroup> bv: array<f32, WG>;
var<workgroup> bi: array<u32, WG>;

// Value v at index i against the invocation's best so far (indices come in increasing order).
fn take(v: f32, i: u32, best: ptr<function, f32>, idx: ptr<function, u32>) {
    if (v > *best || *idx == 0xffffffffu) { *best = v; *idx = i; }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32) {
    let n = p[0];
    let o = p[1];
    var best = -3.4e38;
    var idx = 0xffffffffu;
    // Sixteen values loaded (written out, not in a loop) before they are compared: one memory round trip
    // per sixteen instead of one per value (the 49,152-logit row on the H200: 44.6 us one at a time, 11.9 us
    // eight at a time, bench/NOTES.md).
    var i = li;
    for (; i + 15u * WG < n; i += 16u * WG) {
        let v0 = x[o + i + 0u * WG];
        let v1 = x[o + i + 1u * WG];
        let v2 = x[o + i + 2u * WG];
        let v3 = x[o + i + 3u * WG];
        let v4 = x[o + i + 4u * WG];
        let v5 = x[o + i + 5u * WG];
        let v6 = x[o + i + 6u * WG];
        let v7 = x[o + i + 7u * WG];
        let v8 = x[o + i + 8u * WG];
        let v9 = x[o + i + 9u * WG];
        let v10 = x[o + i + 10u * WG];
        let v11 = x[o + i + 11u * WG];
        let v12 = x[o + i + 12u * WG];
        let v13 = x[o + i + 13u * WG];
        let v14 = x[o + i + 14u * WG];
        let v15 = x[o + i + 15u * WG];
        take(v0, i + 0u * WG, &best, &idx);
        take(v1, i + 1u * WG, &best, &idx);
        take(v2, i + 2u * WG, &best, &idx);
        take(v3, i + 3u * WG, &best, &idx);
        take(v4, i + 4u * WG, &best, &idx);
        take(v5, i + 5u * WG, &best, &idx);
        take(v6, i + 6u * WG, &best, &idx);
        take(v7, i + 7u * WG, &best, &idx);
        take(v8, i + 8u * WG, &best, &idx);
        take(v9, i + 9u * WG, &best, &idx);
        take(v10, i + 10u * WG, &best, &idx);
        take(v11, i + 11u * WG, &best, &idx);
        take(v12, i + 12u * WG, &best, &idx);
        take(v13, i + 13u * WG, &best, &idx);
        take(v14, i + 14u * WG, &best, &idx);
        take(v15, i + 15u * WG, &best, &idx);
    }
    for (; i < n; i += WG) { take(x[o + i], i, &best, &idx); }
    bv[li] = best; bi[li] = idx;
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        workgroupBarrier();
        if (li < stride) {
            let ov = bv[li + stride]; let oi = bi[li + stride];
            if (oi != 0xffffffffu && (ov > bv[li] || (ov == bv[li] && oi < bi[li]) || bi[li] == 0xffffffffu)) {
                bv[li] = ov; bi[li] = oi;
            }
        }
    }
    if (li == 0u) { out[0] = bi[0]; out[1u + h[0]] = bi[0]; }
}
