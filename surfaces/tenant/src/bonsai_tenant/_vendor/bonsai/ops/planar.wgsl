// Repack raw GGML blocks into the planar layout the CPU matmul reads through a word texture
// (matmul_cpu.wgsl): a value plane, VT texels (4 words each) per value block of BLK weights, in
// row-major block order, then a scale plane of one word per block from word p.scale_base (f16 d in the
// low half; Q4_1: d | m << 16). Every block's values start on a texel, so a kernel fetches a block's
// weights in whole texels and never picks words out of two. One invocation per (row, block).
// Raw blocks (18/34-byte ones are only 2-byte aligned) are read as matmul.wgsl reads them.

const QTYPE: u32 = {{QTYPE}}u;  // GGML type id: 0 F32, 1 F16, 2 Q4_0, 3 Q4_1, 8 Q8_0, 41 Q1_0
const VT: u32 = {{VT}}u;        // value texels per block
const BLK: u32 = {{BLK}}u;      // weights per block (32; Q1_0: 128)

// params (u32): rows, cols, row_bytes, scale_base (words)
@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

fn word_at(b: u32) -> u32 {   // 4 bytes at an even byte offset
    let i = b >> 2u;
    if ((b & 3u) == 0u) { return w[i]; }
    return (w[i] >> 16u) | (w[i + 1u] << 16u);
}

fn half_bits(b: u32) -> u32 {  // the f16 at an even byte offset, in the low half
    return (w[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i = gid.y * nw.x * 64u + gid.x;  // block index, row-major
    let nb = p[1] / BLK;
    if (i >= p[0] * nb) { return; }
    let r = i / nb;
    let c = i % nb;
    let rb = r * p[2];
    let o = i * VT * 4u;  // first value word
    var scale = 0u;
    if (QTYPE == 0u) {
        for (var j = 0u; j < 32u; j++) { out[o + j] = w[(rb >> 2u) + c * 32u + j]; }
    } else if (QTYPE == 1u) {
        for (var j = 0u; j < 16u; j++) { out[o + j] = w[(rb >> 2u) + c * 16u + j]; }
    } else if (QTYPE == 2u) {
        let b = rb + c * 18u;
        scale = half_bits(b);
        for (var j = 0u; j < 4u; j++) { out[o + j] = word_at(b + 2u + 4u * j); }
    } else if (QTYPE == 3u) {
        let b = (rb >> 2u) + c * 5u;
        scale = w[b];
        for (var j = 0u; j < 4u; j++) { out[o + j] = w[b + 1u + j]; }
    } else if (QTYPE == 8u) {
        let b = rb + c * 34u;
        scale = half_bits(b);
        for (var j = 0u; j < 8u; j++) { out[o + j] = word_at(b + 2u + 4u * j); }
    } else if (QTYPE == 41u) {
        let b = rb + c * 18u;
        scale = half_bits(b);
        for (var j = 0u; j < 4u; j++) { out[o + j] = word_at(b + 2u + 4u * j); }
    }
    out[p[3] + i] = scale;
}
