// A batch's window decoded to f32 once, before its fold (driver.py's DECODE_BATCHES; modes with a V residual: q4res).
//
// Window `w`'s positions [w.start, w.end) become f32 rows of `rows`: row (pos - w.start) * n_kv + g, K rows first,
// V rows from row count (w.end - w.start) * n_kv on. Quantised positions go through k_elem and v_elem (the values
// every fold reads from the codes: fold_lanes' codes4 and dq, fold.wgsl's pos_v); residual positions (from w.w0 on)
// are copied from `rc`. f32's fold_lanes then folds the window from these rows (its descriptor: buf_base = w.start):
// the same values summed in the same order (the codes' bits on lavapipe; NVIDIA's compiler contracts k_elem's
// multiply-add differently in the two kernels: driver.py's DECODE_BATCHES), but each row decoded once instead of
// once for every workgroup of four query tokens that reads it (a 512-token prompt: 128 tiles x the query heads of a KV head), and a
// fold kernel without the codes' paths (on the H100 the q4res kernel folding residual rows only ran at its codes'
// speed, 93 us a layer against f32's 73, bench/NOTES.md, commit debaad2). One invocation per (row, KV head, four
// dimensions).

//#include "query.wgsl"

@group(0) @binding(0) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> w: Window;
@group(0) @binding(2) var<storage, read> kc: array<u32>;   // quantised rows [pos, n_kv, K_WORDS] (as the fold's kc)
@group(0) @binding(3) var<storage, read> vc: array<u32>;   // ... [pos, n_kv, V_WORDS]
@group(0) @binding(4) var<storage, read> rc: array<u32>;   // f32 residual rows from w.w0 on, V from word w.w1
@group(0) @binding(5) var<storage, read_write> rows: array<vec4<f32>>;

//#include "../format/row_format.wgsl"

//#include "../format/words_buffer.wgsl"

//#include "../format/k_elem.wgsl"

//#include "../format/v_elem.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = (wid.y * 65535u + wid.x) * 64u + lid.x;
    let n_rows = (w.end - w.start) * p.n_kv;
    if (i >= n_rows * (HD / 4u)) { return; }
    let r = i / (HD / 4u);  // (pos - w.start) * n_kv + g
    let d = (i % (HD / 4u)) * 4u;
    let g = r % p.n_kv;
    let pos = w.start + r / p.n_kv;
    var k = vec4<f32>(0.0);
    var v = vec4<f32>(0.0);
    if (pos >= w.w0) {
        let kb = ((pos - w.w0) * p.n_kv + g) * HD + d;
        k = vec4<f32>(bitcast<f32>(rc[kb]), bitcast<f32>(rc[kb + 1u]), bitcast<f32>(rc[kb + 2u]), bitcast<f32>(rc[kb + 3u]));
        let vb = w.w1 + kb;
        v = vec4<f32>(bitcast<f32>(rc[vb]), bitcast<f32>(rc[vb + 1u]), bitcast<f32>(rc[vb + 2u]), bitcast<f32>(rc[vb + 3u]));
    } else {
        let kb = w.k_off + ((pos - w.buf_base) * p.n_kv + g) * K_WORDS;
        let gb = w.k_off + ((pos - pos % GROUP - w.buf_base) * p.n_kv + g) * K_WORDS;  // c4: the group's first row
        k = vec4<f32>(k_elem(kb, gb, d), k_elem(kb, gb, d + 1u), k_elem(kb, gb, d + 2u), k_elem(kb, gb, d + 3u));
        let vb = w.v_off + ((pos - w.buf_base) * p.n_kv + g) * V_WORDS;
        v = vec4<f32>(v_elem(vb, d), v_elem(vb, d + 1u), v_elem(vb, d + 2u), v_elem(vb, d + 3u));
    }
    rows[i] = k;
    rows[n_rows * (HD / 4u) + i] = v;
}
