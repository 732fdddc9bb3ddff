// The matmul for CPU adapters (lavapipe, SwiftShader): y[t, r] (+)= sum_c W[r, c] * x[t, c] with the
// weights (planar.wgsl's layout) and x read through word textures, and (entry `embed`) the embedding
// lookup. On a CPU a texel fetch costs a fraction of a storage-buffer load (bench/NOTES.md), so every
// invocation owns a tile of R rows x TT tokens: each x texel it fetches serves R rows, each weight
// texel TT tokens. No workgroup memory and no barriers (both are slow on a CPU); the same outputs
// (OUT, ACCUM) as matmul.wgsl. Entries: `main` (any R x TT tile), and the default 8-row tiles of one
// token (`main1`, decode) and four (`main4`, batches) written with no private array in the loop (for
// SwiftShader); all three sum every product in one order, so they give the same bits.

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

// The 32 weights of chunk c (weights 32c .. 32c+31) of row r, as eight named vectors: no private
// array is indexed here. SwiftShader (the browser's CPU WebGPU) keeps a dynamically indexed private
// array in memory, one lane at a time, and runs such code 2-3x slower (bench/NOTES.md).
struct W8 { a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, d: vec4<f32>, e: vec4<f32>, f: vec4<f32>, g: vec4<f32>, h: vec4<f32> }

fn chunk8(r: u32, c: u32) -> W8 {
    let nb = p[1] / BLK;
    let b = r * nb + c * 32u / BLK;  // the block holding the chunk
    if (QTYPE == 0u) {
        let i = b * 8u;
        return W8(bitcast<vec4<f32>>(texel(wt, i)), bitcast<vec4<f32>>(texel(wt, i + 1u)),
                  bitcast<vec4<f32>>(texel(wt, i + 2u)), bitcast<vec4<f32>>(texel(wt, i + 3u)),
                  bitcast<vec4<f32>>(texel(wt, i + 4u)), bitcast<vec4<f32>>(texel(wt, i + 5u)),
                  bitcast<vec4<f32>>(texel(wt, i + 6u)), bitcast<vec4<f32>>(texel(wt, i + 7u)));
    }
    if (QTYPE == 1u) {
        let q0 = texel(wt, b * 4u); let q1 = texel(wt, b * 4u + 1u);
        let q2 = texel(wt, b * 4u + 2u); let q3 = texel(wt, b * 4u + 3u);
        return W8(vec4<f32>(unpack2x16float(q0.x), unpack2x16float(q0.y)), vec4<f32>(unpack2x16float(q0.z), unpack2x16float(q0.w)),
                  vec4<f32>(unpack2x16float(q1.x), unpack2x16float(q1.y)), vec4<f32>(unpack2x16float(q1.z), unpack2x16float(q1.w)),
                  vec4<f32>(unpack2x16float(q2.x), unpack2x16float(q2.y)), vec4<f32>(unpack2x16float(q2.z), unpack2x16float(q2.w)),
                  vec4<f32>(unpack2x16float(q3.x), unpack2x16float(q3.y)), vec4<f32>(unpack2x16float(q3.z), unpack2x16float(q3.w)));
    }
    let sw = p[3] + b;
    let s = texel(wt, sw >> 2u)[sw & 3u];
    let dm = unpack2x16float(s);
    if (QTYPE == 2u || QTYPE == 3u) {
        let q = texel(wt, b);
        let m = select(-8.0 * dm.x, dm.y, QTYPE == 3u);  // Q4_0: (code - 8) * d = code * d - 8 d
        return W8(nib_lo(q.x) * dm.x + m, nib_lo(q.y) * dm.x + m, nib_lo(q.z) * dm.x + m, nib_lo(q.w) * dm.x + m,
                  nib_lo(q.x >> 4u) * dm.x + m, nib_lo(q.y >> 4u) * dm.x + m,
                  nib_lo(q.z >> 4u) * dm.x + m, nib_lo(q.w >> 4u) * dm.x + m);
    }
    if (QTYPE == 8u) {
        let q0 = texel(wt, b * 2u);
        let q1 = texel(wt, b * 2u + 1u);
        return W8(i8x4(q0.x) * dm.x, i8x4(q0.y) * dm.x, i8x4(q0.z) * dm.x, i8x4(q0.w) * dm.x,
                  i8x4(q1.x) * dm.x, i8x4(q1.y) * dm.x, i8x4(q1.z) * dm.x, i8x4(q1.w) * dm.x);
    }
    // QTYPE 41 (Q1_0)
    let q = texel(wt, b)[c & 3u];
    return W8(bits4(q, dm.x), bits4(q >> 4u, dm.x), bits4(q >> 8u, dm.x), bits4(q >> 12u, dm.x),
              bits4(q >> 16u, dm.x), bits4(q >> 20u, dm.x), bits4(q >> 24u, dm.x), bits4(q >> 28u, dm.x));
}

// The 32 values of x from texel xb on.
fn x8(xb: u32) -> W8 {
    return W8(bitcast<vec4<f32>>(texel(xt, xb)), bitcast<vec4<f32>>(texel(xt, xb + 1u)),
              bitcast<vec4<f32>>(texel(xt, xb + 2u)), bitcast<vec4<f32>>(texel(xt, xb + 3u)),
              bitcast<vec4<f32>>(texel(xt, xb + 4u)), bitcast<vec4<f32>>(texel(xt, xb + 5u)),
              bitcast<vec4<f32>>(texel(xt, xb + 6u)), bitcast<vec4<f32>>(texel(xt, xb + 7u)));
}

// sum_j w_j x_j over one chunk, summed in the one order every entry point uses (the same bits).
fn dot8(w: W8, x: W8) -> f32 {
    var s = dot(w.a, x.a) + dot(w.b, x.b);
    s += dot(w.c, x.c) + dot(w.d, x.d);
    s += dot(w.e, x.e) + dot(w.f, x.f);
    s += dot(w.g, x.g) + dot(w.h, x.h);
    return s;
}

fn chunk(r: u32, c: u32) -> array<vec4<f32>, 8> {
    let w = chunk8(r, c);
    return array<vec4<f32>, 8>(w.a, w.b, w.c, w.d, w.e, w.f, w.g, w.h);
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
    var xv: array<W8, TT>;
    for (var c = 0u; c < p[1] / 32u; c++) {
        for (var t = 0u; t < TT; t++) {
            let xb = min(t0 + t, nt - 1u) * xs + xo + c * 8u;  // past the last token: a real row, never stored
            xv[t] = x8(xb);
        }
        for (var i = 0u; i < R; i++) {
            let wv = chunk8(min(r0 + i, n - 1u), c);
            for (var t = 0u; t < TT; t++) {
                acc[i * TT + t] += dot8(wv, xv[t]);
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

// One token (decode): `main`'s sums with R = 8 and TT = 1, every value in a named variable (no private
// array in the loop: SwiftShader runs this 2-3x faster than `main`; bench/NOTES.md). Same bits as main.
// 16 invocations a workgroup (ops/matmul.py CPU_DECODE_WG): a decode matmul of 576 rows is 72
// invocations, which 64-wide workgroups split 64 + 8 between a CPU's threads (bench/NOTES.md, commit 7709cec).
@compute @workgroup_size(16)
fn main1(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = p[0];
    let r0 = gid.x * 8u;
    if (r0 >= n) { return; }
    let xo = p[7] / 4u;
    let rl = n - 1u;  // rows past the last: a real row, never stored
    var a = vec4<f32>(0.0);  // rows r0 .. r0 + 3
    var b = vec4<f32>(0.0);  // rows r0 + 4 .. r0 + 7
    for (var c = 0u; c < p[1] / 32u; c++) {
        let x = x8(xo + c * 8u);
        a += vec4<f32>(dot8(chunk8(r0, c), x), dot8(chunk8(min(r0 + 1u, rl), c), x),
                       dot8(chunk8(min(r0 + 2u, rl), c), x), dot8(chunk8(min(r0 + 3u, rl), c), x));
        b += vec4<f32>(dot8(chunk8(min(r0 + 4u, rl), c), x), dot8(chunk8(min(r0 + 5u, rl), c), x),
                       dot8(chunk8(min(r0 + 6u, rl), c), x), dot8(chunk8(min(r0 + 7u, rl), c), x));
    }
    let acc = array<f32, 8>(a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
    if (OUT == 1u) {  // as main: rows (r0 + i, r0 + i + 1) -> y[y_off + (r0 + i) / 2]
        for (var i = 0u; i < 8u; i += 2u) {
            if (r0 + i + 1u < n) {
                let g = acc[i];
                let u = acc[i + 1u];
                y[p[6] + (r0 + i) / 2u] = g / (1.0 + exp(-g)) * u;
            }
        }
        return;
    }
    for (var i = 0u; i < 8u; i++) {
        if (r0 + i < n) { store(r0 + i, 0u, acc[i]); }
    }
}

// Four tokens (batches): `main`'s sums with R = 8 and TT = 4, in named variables as `main1` (row i's
// four tokens in one vec4). Same bits as main.
fn tile_x(t0: u32, t: u32, nt: u32, xs: u32, xo: u32, c: u32) -> W8 {
    return x8(min(t0 + t, nt - 1u) * xs + xo + c * 8u);  // past the last token: a real row, never stored
}

fn dot4(w: W8, x0: W8, x1: W8, x2: W8, x3: W8) -> vec4<f32> {
    return vec4<f32>(dot8(w, x0), dot8(w, x1), dot8(w, x2), dot8(w, x3));
}

@compute @workgroup_size(64)
fn main4(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = p[0]; let nt = p[2];
    let r0 = gid.x * 8u;
    let t0 = gid.y * 4u;
    if (r0 >= n) { return; }
    let xs = p[4] / 4u; let xo = p[7] / 4u;
    let rl = n - 1u;
    var a0 = vec4<f32>(0.0); var a1 = vec4<f32>(0.0); var a2 = vec4<f32>(0.0); var a3 = vec4<f32>(0.0);
    var a4 = vec4<f32>(0.0); var a5 = vec4<f32>(0.0); var a6 = vec4<f32>(0.0); var a7 = vec4<f32>(0.0);
    for (var c = 0u; c < p[1] / 32u; c++) {
        let x0 = tile_x(t0, 0u, nt, xs, xo, c); let x1 = tile_x(t0, 1u, nt, xs, xo, c);
        let x2 = tile_x(t0, 2u, nt, xs, xo, c); let x3 = tile_x(t0, 3u, nt, xs, xo, c);
        a0 += dot4(chunk8(r0, c), x0, x1, x2, x3);
        a1 += dot4(chunk8(min(r0 + 1u, rl), c), x0, x1, x2, x3);
        a2 += dot4(chunk8(min(r0 + 2u, rl), c), x0, x1, x2, x3);
        a3 += dot4(chunk8(min(r0 + 3u, rl), c), x0, x1, x2, x3);
        a4 += dot4(chunk8(min(r0 + 4u, rl), c), x0, x1, x2, x3);
        a5 += dot4(chunk8(min(r0 + 5u, rl), c), x0, x1, x2, x3);
        a6 += dot4(chunk8(min(r0 + 6u, rl), c), x0, x1, x2, x3);
        a7 += dot4(chunk8(min(r0 + 7u, rl), c), x0, x1, x2, x3);
    }
    let acc = array<vec4<f32>, 8>(a0, a1, a2, a3, a4, a5, a6, a7);
    for (var t = 0u; t < 4u; t++) {
        if (t0 + t >= nt) { break; }
        if (OUT == 1u) {  // as main
            for (var i = 0u; i < 8u; i += 2u) {
                if (r0 + i + 1u < n) {
                    let g = acc[i][t];
                    let u = acc[i + 1u][t];
                    y[(t0 + t) * p[5] + p[6] + (r0 + i) / 2u] = g / (1.0 + exp(-g)) * u;
                }
            }
            continue;
        }
        for (var i = 0u; i < 8u; i++) {
            if (r0 + i < n) { store(r0 + i, t0 + t, acc[i][t]); }
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
