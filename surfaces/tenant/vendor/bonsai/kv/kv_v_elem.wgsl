// Shared by the attention kernels (//#include): decode one V value; expects `vc` and kv_format.wgsl.
fn v_elem(vb: u32, j: u32) -> f32 {
    if (V_BITS == 32u) { return bitcast<f32>(vc[vb + j]); }
    let code = (vc[vb + j / V_PER] >> (V_BITS * (j % V_PER))) & V_MASK;
    if (V_ASYM) {
        let sm = vc[vb + V_VW];
        return f32(code) * h2f(sm & 0xffffu) + h2f_signed(sm >> 16u);
    }
    let b = j / V_BLOCK;
    let s = h2f((vc[vb + V_VW + b / 2u] >> (16u * (b & 1u))) & 0xffffu);
    return f32(i32(code) - V_OFF) * s;
}
