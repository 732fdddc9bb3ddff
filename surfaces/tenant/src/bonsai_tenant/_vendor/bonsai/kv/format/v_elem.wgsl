// Shared by the attention kernels (//#include): decode one V value; expects `vword` (words_buffer.wgsl or words_texture.wgsl) and row_format.wgsl.
fn v_elem(vb: u32, j: u32) -> f32 {
    if (V_BITS == 32u) { return bitcast<f32>(vword(vb + j)); }
    let code = (vword(vb + j / V_PER) >> (V_BITS * (j % V_PER))) & V_MASK;
    if (V_ASYM) {
        let sm = vword(vb + V_VW);
        return f32(code) * h2f(sm & 0xffffu) + h2f_signed(sm >> 16u);
    }
    let b = j / V_BLOCK;
    let s = h2f((vword(vb + V_VW + b / 2u) >> (16u * (b & 1u))) & 0xffffu);
    return f32(i32(code) - V_OFF) * s;
}

// Row-scaled V codes (one f16 scale per row, symmetric): the fold decodes each position's scale once
// (v_row_scale) and every invocation its own value with it (v_scaled); the same values as v_elem.
const V_ROW_SCALE: bool = V_BITS < 32u && !V_ASYM && V_BLOCK == HD;

fn v_row_scale(vb: u32) -> f32 {
    return h2f(vword(vb + V_VW) & 0xffffu);
}

fn v_scaled(vb: u32, j: u32, s: f32) -> f32 {
    let code = (vword(vb + j / V_PER) >> (V_BITS * (j % V_PER))) & V_MASK;
    return f32(i32(code) - V_OFF) * s;
}
