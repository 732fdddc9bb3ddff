// GGML-normal RoPE of one row pair in a QKV product's epilogue (//#include; matmul.wgsl, matmul_tiled.wgsl): as
// rope.wgsl computes it. Expects the rope parameter block `rp` (rope.wgsl's: a 12-word header, then each token's
// (cos, sin) per pair) and ROPE_HD, the head width.

// Rows r, r + 1 (a Q or K pair; rows from n1 on are K) of token t, rotated by the token's cos/sin.
fn rotated(r: u32, n1: u32, t: u32, a: f32, b: f32) -> vec2<f32> {
    let pair = (select(r - n1, r, r < n1) % ROPE_HD) / 2u;
    let row = 12u + 2u * (t * (ROPE_HD / 2u) + pair);
    let c = bitcast<f32>(rp[row]); let s = bitcast<f32>(rp[row + 1u]);
    return vec2<f32>(a * c - b * s, a * s + b * c);
}
