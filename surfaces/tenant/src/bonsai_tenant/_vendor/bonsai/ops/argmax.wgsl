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

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32) {
    let n = p[0];
    var best = -3.4e38;
    var idx = 0xffffffffu;
    for (var i = li; i < n; i += WG) {
        let v = x[p[1] + i];
        if (v > best || idx == 0xffffffffu) { best = v; idx = i; }
    }
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
