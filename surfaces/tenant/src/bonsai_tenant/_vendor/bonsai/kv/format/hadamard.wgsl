// The normalised Sylvester Hadamard transform of one row in place: q4r rotates K with it when storing
// (store.wgsl) and the query with it before attention (rotate.wgsl). One function, so the two
// cannot drift apart; its butterfly order is `bonsai.kv.format.rotate.hadamard`'s, the numpy oracle.
// Expects the template constants HEAD_DIM and INV_SQRT_HD.
fn hadamard(x: ptr<function, array<f32, {{HEAD_DIM}}>>) {
    for (var h = 1u; h < {{HEAD_DIM}}u; h = h * 2u) {
        for (var i = 0u; i < {{HEAD_DIM}}u; i = i + 1u) {
            if ((i & h) == 0u) {
                let a = (*x)[i];
                let b = (*x)[i + h];
                (*x)[i] = a + b;
                (*x)[i + h] = a - b;
            }
        }
    }
    for (var j = 0u; j < {{HEAD_DIM}}u; j = j + 1u) { (*x)[j] = (*x)[j] * {{INV_SQRT_HD}}; }
}
