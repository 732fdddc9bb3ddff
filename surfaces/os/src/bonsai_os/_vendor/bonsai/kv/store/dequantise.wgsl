// Decode one group of a grouped-K cache's stored rows back to f32 (a rewind into a quantised group):
// reads the GROUP positions' K rows at kc[p.k_word ..] (and, V_RES, their V rows at vc[p.v_word ..])
// through the attention kernels' own decoders (../format/k_elem.wgsl, v_elem.wgsl: the values
// attention read), writes f32 rows [GROUP, n_kv, HD] of K, then of V, into `res` (the residual).
// One invocation per (row, KV head).

struct Params { k_word: u32, v_word: u32, n_kv: u32, p0: u32 }

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> kc: array<u32>;
@group(0) @binding(2) var<storage, read> vc: array<u32>;
@group(0) @binding(3) var<storage, read_write> res: array<f32>;

const V_RES: bool = {{V_RES}};

//#include "../format/row_format.wgsl"

//#include "../format/words_buffer.wgsl"

//#include "../format/k_elem.wgsl"

//#include "../format/v_elem.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x;  // row i * n_kv + head g of the group
    if (r >= GROUP * p.n_kv) { return; }
    let g = r % p.n_kv;
    let kb = p.k_word + r * K_WORDS;
    let gb = p.k_word + g * K_WORDS;  // the head's row at the group's start (c4: it carries scales)
    for (var j = 0u; j < HD; j = j + 1u) { res[r * HD + j] = k_elem(kb, gb, j); }
    if (V_RES) {
        let vb = p.v_word + r * V_WORDS;
        for (var j = 0u; j < HD; j = j + 1u) { res[(GROUP * p.n_kv + r) * HD + j] = v_elem(vb, j); }
    }
}
