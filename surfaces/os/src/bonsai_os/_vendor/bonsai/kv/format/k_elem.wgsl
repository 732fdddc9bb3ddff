// Shared by the attention kernels (//#include): decode one K value; expects `kword` (words_buffer.wgsl or words_texture.wgsl), `p` and row_format.wgsl.
// K value j of the row at word kb; gb = word of the same head's row at the start of its group (c4).
fn k_elem(kb: u32, gb: u32, j: u32) -> f32 {
    if (K_BITS == 32u) { return bitcast<f32>(kword(kb + j)); }
    let code = (kword(kb + j / K_PER) >> (K_BITS * (j % K_PER))) & K_MASK;
    if (K_C4 && K_ASYM) {
        let sm = kword(gb + (j / CPR) * p.n_kv * K_WORDS + K_VW + j % CPR);
        return f32(code) * h2f(sm & 0xffffu) + h2f_signed(sm >> 16u);
    }
    var sw: u32;
    var half: u32;
    if (K_C4) {
        sw = gb + (j / CPR) * p.n_kv * K_WORDS + K_VW + (j % CPR) / 2u;
        half = j & 1u;
    } else {
        let b = j / K_BLOCK;
        sw = kb + K_VW + b / 2u;
        half = b & 1u;
    }
    let s = h2f((kword(sw) >> (16u * half)) & 0xffffu);
    return f32(i32(code) - K_OFF) * s;
}
