// The matmul for CPU adapters (lavapipe, SwiftShader): y[t, r] (+)= sum_c W[r, c] * x[t, c] with the
// weights (planar.wgsl's layout) and x read through word textures, and (entry `embed`) the embedding
// lookup. On a CPU a texel fetch costs a fraction of a storage-buffer load (bench/NOTES.md), so every
// invocation owns a tile of R rows x TT tokens: each x texel it fetches serves R rows, each weight
// texel TT tokens. No workgroup memory and no barriers (both are slow on a CPU); the same outputs
// (OUT, ACCUM) as matmul.wgsl.

const QTYPE: u32 = {{QTYPE}}u;   // GGML type id: 0 F32, 1 F16, 2 Q4_0, 3 Q4_1, 8 Q8_0, 41 Q1_0
const VT: u32 = {{VT}}u;         // value texels per block (planar.wgsl)
const BLK: u32 = {{BLK}}u;       // weights per block (32; Q1_0: 128)
const R: u32 = {{R}}u;           // rows per invocation
const TT: u32 = {{TT}}u;         // tokens per invocation
const ACCUM: bool = {{ACCUM}};
const OUT: u32 = {{OUT}}u;       // 0 plain, 1 SwiGLU (rows in (gate, up) pairs; R even), 2 split into y/y2/y3

// params (u32): n rows, k cols, t tokens, scale_base (words), x_stride (floats, multiple of 4),
//               y_stride, y_offset, x_offset (floats, multiple of 4), n1, n2
@group(0) @binding(0) var wt: texture_2d<u32>;
@group(0) @binding(1) var xt: texture_2d<u32>;                 // x (t, x_stride) f32 bits; embed: token ids
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> p: array<u32>;
@group(0) @binding(4) var<storage, read_write> y2: array<f32>;  // OUT 2 only
@group(0) @binding(5) var<storage, read_write> y3: array<f32>;  // OUT 2 only

fn texel(t: texture_2d<u32>, i: u32) -> vec4<u32> {
    return textureLoad(t, vec2<u32>(i & 1023u, i >> 10u), 0);
}

//#include "quant_lanes.wgsl"

// The 32 weights of chunk c (weights 32c .. 32c+31) of row r.
fn chunk(r: u32, c: u32) -> array<vec4<f32>, 8> {
    var o: array<vec4<f32>, 8>;
    let nb = p[1] / BLK;
    let b = r * nb + c * 32u / BLK;  // the block holding the chunk
    if (QTYPE == 0u) {
        for (var v = 0u; v < 8u; v++) { o[v] = bitcast<vec4<f32>>(texel(wt, b * 8u + v)); }
        return o;
    }
    if (QTYPE == 1u) {
        for (var v = 0u; v < 4u; v++) {
            let q = texel(wt, b * 4u + v);
            o[2u * v] = vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y));
            o[2u * v + 1u] = vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w));
        }
        return o;
    }
    let sw = p[3] + b;
    let s = texel(wt, sw >> 2u)[sw & 3u];
    let dm = unpack2x16float(s);
    if (QTYPE == 2u || QTYPE == 3u) {
        let q = texel(wt, b);
        let m = select(-8.0 * dm.x, dm.y, QTYPE == 3u);  // Q4_0: (code - 8) * d = code * d - 8 d
        o[0] = nib_lo(q.x) * dm.x + m; o[1] = nib_lo(q.y) * dm.x + m; o[2] = nib_lo(q.z) * dm.x + m; o[3] = nib_lo(q.w) * dm.x + m;
        o[4] = nib_lo(q.x >> 4u) * dm.x + m; o[5] = nib_lo(q.y >> 4u) * dm.x + m;
        o[6] = nib_lo(q.z >> 4u) * dm.x + m; o[7] = nib_lo(q.w >> 4u) * dm.x + m;
    } else if (QTYPE == 8u) {
        let q0 = texel(wt, b * 2u);
        let q1 = texel(wt, b * 2u + 1u);
        o[0] = i8x4(q0.x) * dm.x; o[1] = i8x4(q0.y) * dm.x; o[2] = i8x4(q0.z) * dm.x; o[3] = i8x4(q0.w) * dm.x;
        o[4] = i8x4(q1.x) * dm.x; o[5] = i8x4(q1.y) * dm.x; o[6] = i8x4(q1.z) * dm.x; o[7] = i8x4(q1.w) * dm.x;
    } else if (QTYPE == 41u) {
        let q = texel(wt, b)[c & 3u];
        for (var v = 0u; v < 8u; v++) { o[v] = bits4(q >> (4u * v), dm.x); }
    }
    return o;
}

fn store(r: u32, t: u32, v: f32) {
    let n1 = p[8]; let n2 = p[9];
    if (OUT == 2u) {
        let n3 = p[0] - n1 - n2;
        if (r < n1) { y[t * n1 + r] = v; } else if (r < n1 + n2) { y2[t * n2 + r - n1] = v; } else { y3[t * n3 + r - n1 - n2] = v; }
        return;
    }
    let yi = t * p[5] + p[6] + r;
    if (ACCUM) { y[yi] += v; } else { y[yi] = v; }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = p[0]; let nt = p[2];
    let r0 = gid.x * R;
    let t0 = gid.y * TT;
    if (r0 >= n) { return; }
    let xs = p[4] / 4u; let xo = p[7] / 4u;
    var acc: array<f32, R * TT>;
    var xv: array<array<vec4<f32>, 8>, TT>;
    for (var c = 0u; c < p[1] / 32u; c++) {
        for (var t = 0u; t < TT; t++) {
            let xb = min(t0 + t, nt - 1u) * xs + xo + c * 8u;  // past the last token: a real row, never stored
            for (var v = 0u; v < 8u; v++) { xv[t][v] = bitcast<vec4<f32>>(texel(xt, xb + v)); }
        }
        for (var i = 0u; i < R; i++) {
            let wv = chunk(min(r0 + i, n - 1u), c);
            for (var t = 0u; t < TT; t++) {
                var s = dot(wv[0], xv[t][0]) + dot(wv[1], xv[t][1]);
                s += dot(wv[2], xv[t][2]) + dot(wv[3], xv[t][3]);
                s += dot(wv[4], xv[t][4]) + dot(wv[5], xv[t][5]);
                s += dot(wv[6], xv[t][6]) + dot(wv[7], xv[t][7]);
                acc[i * TT + t] += s;
            }
        }
    }
    for (var t = 0u; t < TT; t++) {
        if (t0 + t >= nt) { break; }
        if (OUT == 1u) {  // rows r0 + 2j (gate), r0 + 2j + 1 (up) -> y[t, y_off + (r0 + 2j) / 2]
            for (var i = 0u; i + 1u < R; i += 2u) {
                if (r0 + i + 1u < n) {
                    let g = acc[i * TT + t];
                    let u = acc[(i + 1u) * TT + t];
                    y[(t0 + t) * p[5] + p[6] + (r0 + i) / 2u] = g / (1.0 + exp(-g)) * u;
                }
            }
            continue;
        }
        for (var i = 0u; i < R; i++) {
            if (r0 + i < n) { store(r0 + i, t0 + t, acc[i * TT + t]); }
        }
    }
}

// Embedding lookup: invocation (chunk c, token t) writes y[t, 32c .. 32c+31] = W[id_t, 32c ..].
@compute @workgroup_size(64)
fn embed(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let t = gid.y;
    if (c >= p[1] / 32u || t >= p[2]) { return; }
    let id = texel(xt, t >> 2u)[t & 3u];
    let wv = chunk(id, c);
    for (var v = 0u; v < 8u; v++) {
        let yi = t * p[5] + c * 32u + 4u * v;
        y[yi] = wv[v].x; y[yi + 1u] = wv[v].y; y[yi + 2u] = wv[v].z; y[yi + 3u] = wv[v].w;
    }
}
