// What the buffer matmul kernels (matmul.wgsl, matmul_tiled.wgsl) share (//#include): reading GGML
// blocks from the u32 words of binding `w`, and the OUT 2 (split) store into y, y2, y3 (params in p).

fn word_at(b: u32) -> u32 {   // 4 bytes at an even byte offset
    let i = b >> 2u;
    if ((b & 3u) == 0u) { return w[i]; }
    return (w[i] >> 16u) | (w[i + 1u] << 16u);
}

fn half_at(b: u32) -> f32 {   // the f16 at an even byte offset
    return unpack2x16float((w[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu).x;
}

fn store_split(r: u32, t: u32, v: f32) {
    let n1 = p[8]; let n2 = p[9]; let n3 = p[0] - n1 - n2;
    if (r < n1) { y[t * n1 + r] = v; } else if (r < n1 + n2) { y2[t * n2 + r - n1] = v; } else { y3[t * n3 + r - n1 - n2] = v; }
}
