// Tiled quantised matmul for batches (prefill): y[t, r] (+)= sum_c W[r, c] * x[t, c], the buffer kernel's
// bindings, params and OUT modes (matmul.wgsl) with another work split. A workgroup owns a BM-row x
// BN-token tile of y and walks K in steps of 32 weights (one chunk, so K needs no edge case: it is a
// multiple of 32 for every format). Each step it dequantises the tile's BM x 32 weights once into
// workgroup memory (`ws`) and copies BN x 32 activations beside them (`xs`), then every invocation
// multiplies them into its own TM rows x 4 tokens of y: a weight is decoded once per workgroup instead
// of once per token group, and each value read from workgroup memory feeds 4 (x) or TM (w) products.
// The next chunk's items are fetched into registers while this one is multiplied (no idle wait on
// global memory between chunks), and staged with stores written out (a loop indexing a value by its
// counter kept the value in memory on the H200: matmul.wgsl's top comment).
// Rows past n are decoded as zeros and tokens past t read as zeros (never loaded), and neither is stored.
// Sums are f32, in chunk order, each chunk's 32 products in k order (another order than matmul.wgsl's:
// results agree within the op tests' bound, not bit for bit).
// Workgroup memory: (BM + BN) * 32 * 4 bytes (16 KiB for 64 + 64: WebGPU's guaranteed minimum).
// NORM: x is the residual stream and y = RMSNorm(x) * nw times W (the norm's own dispatch folded in): each
// activation is staged times its norm weight, the tokens' sums of x^2 are gathered from the values staged (no
// load of x beyond the tile's own), and each token's products are scaled by 1 / sqrt(mean x^2 + eps) in the
// epilogue. Not rmsnorm.wgsl's bits (the scale comes after the sum, and x^2 is summed in another order):
// within the op tests' bound, as the tiled product is. eps is p[10] (f32 bits).
// ROPE (OUT 2 only): GGML-normal RoPE of the Q and K rows in the epilogue (rope_pair.wgsl: rope.wgsl's
// arithmetic, so the bits of the product, then rope.wgsl); a pair's rows are one invocation's (4 | TM).

const QTYPE: u32 = {{QTYPE}}u;   // GGML type id: 0 F32, 1 F16, 2 Q4_0, 3 Q4_1, 8 Q8_0, 41 Q1_0
const BM: u32 = {{BM}}u;         // rows of y per workgroup (a multiple of TM)
const BN: u32 = {{BN}}u;         // tokens of y per workgroup (a multiple of 4)
const TM: u32 = {{TM}}u;         // rows per invocation: 4 or 8
const RT: u32 = BM / TM;         // invocations along the rows
const WG: u32 = RT * (BN / 4u);  // invocations per workgroup; each owns TM rows x 4 tokens
const NW: u32 = 4u * BM / WG;    // weight items (a row's quarter chunk) each invocation stages per chunk: 1 or 2
const NX: u32 = 8u * BN / WG;    // activation items (a token's vec4) each invocation stages per chunk: 2 or 4
const ACCUM: bool = {{ACCUM}};   // add into y (fused residual) instead of overwriting it
const OUT: u32 = {{OUT}}u;       // as matmul.wgsl: 0 plain, 1 SwiGLU (rows gate_i, up_i), 2 split into y, y2, y3
const SPLIT: u32 = {{SPLIT}}u;   // parts of K (OUT 0 only): workgroup z sums chunks [z nc / SPLIT, (z + 1) nc / SPLIT)
                                 // into part z of y2 ([SPLIT, t, n]); split_sum.wgsl adds the parts into y
const NORM: bool = {{NORM}};
const ROPE: bool = {{ROPE}};
const ROPE_HD: u32 = max({{ROPE_HD}}u, 2u);  // never 0: Tint (Chrome) rejects a constant zero divisor even where ROPE leaves it dead

// params (u32), as matmul.wgsl: n rows, k cols, t tokens, row_bytes, x_stride (floats, multiple of 4),
//               y_stride (floats), y_offset (floats), x_offset (floats, multiple of 4), n1, n2, eps (NORM)
@group(0) @binding(0) var<storage, read> w: array<u32>;         // (n, row_bytes) raw blocks
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;   // (t, x_stride)
@group(0) @binding(2) var<storage, read_write> y: array<f32>;   // (t, y_stride), rows at y_offset
@group(0) @binding(3) var<storage, read> p: array<u32>;
@group(0) @binding(4) var<storage, read_write> y2: array<f32>;  // OUT 2, or SPLIT's parts
@group(0) @binding(5) var<storage, read_write> y3: array<f32>;  // OUT 2 only
@group(0) @binding(6) var<storage, read> nw: array<vec4<f32>>;  // NORM: the norm's weights (k)
@group(0) @binding(7) var<storage, read> rp: array<u32>;        // ROPE: header, then each token's (cos, sin)

var<workgroup> ws: array<vec4<f32>, 8u * BM>;  // [32 k][BM / 4 rows]: w of rows 4i .. 4i+3 at one k
var<workgroup> xs: array<vec4<f32>, 8u * BN>;  // [32 k][BN / 4 tokens]

//#include "raw_blocks.wgsl"
//#include "quant_lanes.wgsl"
//#include "rope_pair.wgsl"

// Weights 32c + 8e .. 32c + 8e + 7 (quarter e of chunk c, as matmul.wgsl's `chunk` lays the chunk out)
// of the row starting at byte rb: the same f32 values, expression for expression.
fn quarter(rb: u32, c: u32, e: u32) -> array<vec4<f32>, 2> {
    var o: array<vec4<f32>, 2>;
    let h = e & 1u;                      // nibble formats: which 8 bytes of the 16
    let s = select(0u, 4u, e >= 2u);     // nibble formats: low nibbles (weights 0..15) or high (16..31)
    if (QTYPE == 0u) {
        let i = (rb >> 2u) + c * 32u + e * 8u;
        o[0] = bitcast<vec4<f32>>(vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u]));
        o[1] = bitcast<vec4<f32>>(vec4<u32>(w[i + 4u], w[i + 5u], w[i + 6u], w[i + 7u]));
    } else if (QTYPE == 1u) {
        let i = (rb >> 2u) + c * 16u + e * 4u;
        o[0] = vec4<f32>(unpack2x16float(w[i]), unpack2x16float(w[i + 1u]));
        o[1] = vec4<f32>(unpack2x16float(w[i + 2u]), unpack2x16float(w[i + 3u]));
    } else if (QTYPE == 2u) {
        let b = rb + c * 18u;
        let d = half_at(b);
        o[0] = (nib_lo(word_at(b + 2u + 8u * h) >> s) - 8.0) * d;
        o[1] = (nib_lo(word_at(b + 6u + 8u * h) >> s) - 8.0) * d;
    } else if (QTYPE == 3u) {
        let i = (rb >> 2u) + c * 5u;
        let dm = unpack2x16float(w[i]);
        o[0] = nib_lo(w[i + 1u + 2u * h] >> s) * dm.x + dm.y;
        o[1] = nib_lo(w[i + 2u + 2u * h] >> s) * dm.x + dm.y;
    } else if (QTYPE == 8u) {
        let b = rb + c * 34u;
        let d = half_at(b);
        o[0] = i8x4(word_at(b + 2u + 8u * e)) * d;
        o[1] = i8x4(word_at(b + 6u + 8u * e)) * d;
    } else if (QTYPE == 41u) {
        let b = rb + (c >> 2u) * 18u;
        let d = half_at(b);
        let q = word_at(b + 2u + 4u * (c & 3u));
        o[0] = bits4(q >> (8u * e), d);
        o[1] = bits4(q >> (8u * e + 4u), d);
    }
    return o;
}

// Item i of the weight tile (row i % BM, quarter i / BM of chunk c): zeros past row n.
fn load_w(i: u32, c: u32, r0: u32, n: u32, row_bytes: u32) -> array<vec4<f32>, 2> {
    let row = i % BM;
    if (r0 + row >= n) { return array<vec4<f32>, 2>(vec4<f32>(0.0), vec4<f32>(0.0)); }
    return quarter((r0 + row) * row_bytes, c, i / BM);
}

fn put_w(i: u32, v: array<vec4<f32>, 2>) {  // k-major: ws[k][row / 4][row % 4]
    let row = i % BM;
    let at = 8u * (i / BM) * (BM / 4u) + row / 4u;  // k = 8 e, the row's vec4
    let r = row % 4u;
    let lo = v[0];  // the eight stores written out: a loop indexing v by its counter kept v in memory
    let hi = v[1];
    ws[at][r] = lo.x;
    ws[at + BM / 4u][r] = lo.y;
    ws[at + 2u * (BM / 4u)][r] = lo.z;
    ws[at + 3u * (BM / 4u)][r] = lo.w;
    ws[at + 4u * (BM / 4u)][r] = hi.x;
    ws[at + 5u * (BM / 4u)][r] = hi.y;
    ws[at + 6u * (BM / 4u)][r] = hi.z;
    ws[at + 7u * (BM / 4u)][r] = hi.w;
}

// Item i of the activation tile (token i / 8, vec4 i % 8 of chunk c): zeros past token t.
fn load_x(i: u32, c: u32, t0: u32, nt: u32, xs_: u32, xo: u32) -> vec4<f32> {
    let tok = i / 8u;
    if (t0 + tok >= nt) { return vec4<f32>(0.0); }
    return x[(t0 + tok) * xs_ + xo + c * 8u + i % 8u];
}

fn put_x(i: u32, v: vec4<f32>) {  // k-major: xs[k][token / 4][token % 4]
    let tok = i / 8u;
    let at = 4u * (i % 8u) * (BN / 4u) + tok / 4u;  // k = 4 q, the token's vec4
    let t = tok % 4u;
    xs[at][t] = v.x;  // written out, as put_w
    xs[at + BN / 4u][t] = v.y;
    xs[at + 2u * (BN / 4u)][t] = v.z;
    xs[at + 3u * (BN / 4u)][t] = v.w;
}

// What invocation li stages of one chunk: NW weight items (w1 unused when NW is 1) and NX activation
// items (x2, x3 unused when NX is 2), items li, li + WG, ... of the tiles; `Tile.check` allows 1-2 and 2-4.
// Named fields, not arrays indexed by a counter (the top of this file).
struct Items { w0: array<vec4<f32>, 2>, w1: array<vec4<f32>, 2>, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32> }

fn fetch(li: u32, c: u32, r0: u32, n: u32, row_bytes: u32, t0: u32, nt: u32, xs_: u32, xo: u32) -> Items {
    var it: Items;
    it.w0 = load_w(li, c, r0, n, row_bytes);
    if (NW == 2u) { it.w1 = load_w(li + WG, c, r0, n, row_bytes); }
    it.x0 = load_x(li, c, t0, nt, xs_, xo);
    it.x1 = load_x(li + WG, c, t0, nt, xs_, xo);
    if (NX == 4u) {
        it.x2 = load_x(li + 2u * WG, c, t0, nt, xs_, xo);
        it.x3 = load_x(li + 3u * WG, c, t0, nt, xs_, xo);
    }
    return it;
}

// Activation item i of chunk c as staged: times its norm weights where NORM.
fn normed(i: u32, c: u32, v: vec4<f32>) -> vec4<f32> {
    if (NORM) { return v * nw[c * 8u + i % 8u]; }
    return v;
}

fn stage(li: u32, c: u32, it: Items) {
    put_w(li, it.w0);
    if (NW == 2u) { put_w(li + WG, it.w1); }
    put_x(li, normed(li, c, it.x0));
    put_x(li + WG, normed(li + WG, c, it.x1));
    if (NX == 4u) {
        put_x(li + 2u * WG, normed(li + 2u * WG, c, it.x2));
        put_x(li + 3u * WG, normed(li + 3u * WG, c, it.x3));
    }
}

// NORM: the sums of x^2 of the activation items an invocation stages (x2, x3 only where NX is 4).
fn squares(it: Items) -> vec4<f32> {
    return vec4<f32>(dot(it.x0, it.x0), dot(it.x1, it.x1), dot(it.x2, it.x2), dot(it.x3, it.x3));
}

// NORM: activation item i's sum of x^2 (token i / 8, slot i % 8, as put_x) into xs, which the products no longer
// read after the last chunk: token tok's eight slots at xs[2 tok], xs[2 tok + 1].
fn put_square(i: u32, v: f32) {
    let slot = i % 8u;
    xs[2u * (i / 8u) + slot / 4u][slot % 4u] = v;
}

// NORM, after the last chunk: invocation li's sums (its items, as `stage` puts them). Call from uniform control flow.
fn gather_squares(li: u32, sq: vec4<f32>) {
    put_square(li, sq.x);
    put_square(li + WG, sq.y);
    if (NX == 4u) {
        put_square(li + 2u * WG, sq.z);
        put_square(li + 3u * WG, sq.w);
    }
    workgroupBarrier();
}

// NORM: token tok's (of the tile) 1 / sqrt(mean x^2 + eps), after gather_squares; 1 without NORM.
fn inv_rms(tok: u32) -> f32 {
    if (!NORM) { return 1.0; }
    let a = xs[2u * tok];
    let b = xs[2u * tok + 1u];
    return 1.0 / sqrt(((a.x + a.y + a.z + a.w) + (b.x + b.y + b.z + b.w)) / f32(p[1]) + bitcast<f32>(p[10]));
}

fn store(r: u32, t: u32, v: f32, z: u32) {
    if (SPLIT > 1u) {
        y2[(z * p[2] + t) * p[0] + r] = v;
        return;
    }
    if (OUT == 2u) {
        store_split(r, t, v);
        return;
    }
    let yi = t * p[5] + p[6] + r;
    if (ACCUM) { y[yi] += v; } else { y[yi] = v; }
}

// An invocation's accumulators: row 4g + i, token j in a(4g + i)[j] (a4..a7 only with TM 8).
struct Acc { a0: vec4<f32>, a1: vec4<f32>, a2: vec4<f32>, a3: vec4<f32>, a4: vec4<f32>, a5: vec4<f32>, a6: vec4<f32>, a7: vec4<f32> }

// Two k (kk, kk + 1) of the staged chunk into the accumulators, their loads first (the same sums in k order).
fn round2(acc: Acc, kk: u32, tr: u32, tc: u32) -> Acc {
    var a = acc;
    let xv = xs[kk * (BN / 4u) + tc];
    let wv = ws[kk * (BM / 4u) + tr];
    let xv2 = xs[(kk + 1u) * (BN / 4u) + tc];
    let wv2 = ws[(kk + 1u) * (BM / 4u) + tr];
    a.a0 += wv.x * xv; a.a1 += wv.y * xv; a.a2 += wv.z * xv; a.a3 += wv.w * xv;
    a.a0 += wv2.x * xv2; a.a1 += wv2.y * xv2; a.a2 += wv2.z * xv2; a.a3 += wv2.w * xv2;
    if (TM == 8u) {
        let wh = ws[kk * (BM / 4u) + tr + RT];
        let wh2 = ws[(kk + 1u) * (BM / 4u) + tr + RT];
        a.a4 += wh.x * xv; a.a5 += wh.y * xv; a.a6 += wh.z * xv; a.a7 += wh.w * xv;
        a.a4 += wh2.x * xv2; a.a5 += wh2.y * xv2; a.a6 += wh2.z * xv2; a.a7 += wh2.w * xv2;
    }
    return a;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let n = p[0]; let k = p[1]; let nt = p[2]; let row_bytes = p[3];
    let xs_ = p[4] / 4u; let xo = p[7] / 4u;
    let r0 = wid.x * BM;
    let t0 = wid.y * BN;
    let tr = li % RT;   // this invocation's rows: r0 + 4 (tr + g RT) + i, g < TM / 4, i < 4
    let tc = li / RT;   // its tokens: t0 + 4 tc + j, j < 4
    // acc row 4g + i, token j: named vectors (a0..a3 g = 0, a4..a7 g = 1), not a private array indexed in the
    // loop: the H200's driver kept such an array in memory, and the tiled matmul ran 4-7x slower
    // (bench/roofline_probe.py, bench/NOTES.md, commit 1063e54)
    var acc = Acc(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0),
                  vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    // Chunk c + 1's items are fetched into registers while chunk c is multiplied, so the workgroup does not
    // stand idle waiting for global memory between chunks. The same values land in ws and xs.
    let nc = k / 32u;
    let c0 = wid.z * nc / SPLIT;  // this workgroup's part of K: chunks [c0, c1)
    let c1 = (wid.z + 1u) * nc / SPLIT;
    var items = fetch(li, c0, r0, n, row_bytes, t0, nt, xs_, xo);
    var sq = vec4<f32>(0.0);  // NORM: the sums of x^2 of this invocation's activation items
    for (var c = c0; c < c1; c++) {
        if (NORM) { sq += squares(items); }
        stage(li, c, items);
        workgroupBarrier();
        if (c + 1u < c1) { items = fetch(li, c + 1u, r0, n, row_bytes, t0, nt, xs_, xo); }
        // the chunk's sixteen rounds written out: the driver keeps WGSL loops rolled, and a loop step costs about six
        // FMAs' issue slots (bench/probes/fma_probe.py); on the H100 the products ran 0-24% faster than with a loop of one
        // round a step, and a loop of four rounds a step ran QKV and wo 1.6x slower at four rows an invocation
        // (bench/NOTES.md, commit bd8ccea)
        acc = round2(acc, 0u, tr, tc);
        acc = round2(acc, 2u, tr, tc);
        acc = round2(acc, 4u, tr, tc);
        acc = round2(acc, 6u, tr, tc);
        acc = round2(acc, 8u, tr, tc);
        acc = round2(acc, 10u, tr, tc);
        acc = round2(acc, 12u, tr, tc);
        acc = round2(acc, 14u, tr, tc);
        acc = round2(acc, 16u, tr, tc);
        acc = round2(acc, 18u, tr, tc);
        acc = round2(acc, 20u, tr, tc);
        acc = round2(acc, 22u, tr, tc);
        acc = round2(acc, 24u, tr, tc);
        acc = round2(acc, 26u, tr, tc);
        acc = round2(acc, 28u, tr, tc);
        acc = round2(acc, 30u, tr, tc);
        workgroupBarrier();  // every invocation is done with ws and xs before the next chunk overwrites them
    }
    if (NORM) { gather_squares(li, sq); }
    let out = array<vec4<f32>, 8>(acc.a0, acc.a1, acc.a2, acc.a3, acc.a4, acc.a5, acc.a6, acc.a7);  // the epilogue runs once: an array is fine
    // each of the invocation's four tokens' norm scale (1 without NORM), once for its TM rows
    let scales = vec4<f32>(inv_rms(4u * tc), inv_rms(4u * tc + 1u), inv_rms(4u * tc + 2u), inv_rms(4u * tc + 3u));
    for (var g = 0u; g < TM / 4u; g++) {
        let rb = r0 + 4u * (tr + g * RT);
        for (var j = 0u; j < 4u; j++) {
            let t = t0 + 4u * tc + j;
            if (t >= nt) { continue; }
            let scale = scales[j];
            if (OUT == 1u) {  // rows rb, rb + 2 are gates, rb + 1, rb + 3 their ups (n is even)
                for (var i = 0u; i < 4u; i += 2u) {
                    if (rb + i + 1u < n) {
                        let gate = out[4u * g + i][j] * scale;
                        y[t * p[5] + p[6] + (rb + i) / 2u] = gate / (1.0 + exp(-gate)) * (out[4u * g + i + 1u][j] * scale);
                    }
                }
            } else if (OUT == 2u && ROPE) {  // pairs (rb, rb + 1), (rb + 2, rb + 3); Q and K rows rotated
                let n1 = p[8]; let n2 = p[9];
                for (var i = 0u; i < 4u; i += 2u) {
                    if (rb + i + 1u < n) {
                        let a = out[4u * g + i][j] * scale;
                        let b = out[4u * g + i + 1u][j] * scale;
                        let ab = select(vec2<f32>(a, b), rotated(rb + i, n1, t, a, b), rb + i < n1 + n2);
                        store_split(rb + i, t, ab.x);
                        store_split(rb + i + 1u, t, ab.y);
                    }
                }
            } else {
                for (var i = 0u; i < 4u; i++) {
                    if (rb + i < n) { store(rb + i, t, out[4u * g + i][j] * scale, wid.z); }
                }
            }
        }
    }
}
