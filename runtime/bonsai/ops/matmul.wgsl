// Quantised matmul y[t, r] (+)= sum_c W[r, c] * x[t, c], reading GGML blocks straight from u32 words,
// and (entry point `embed`) the embedding lookup y[t, :] = W[id_t, :] sharing the same dequantiser.
// Both entries live here to share the dequantiser. Work split: a workgroup owns ROWS = WG / LANES
// rows x TT tokens; LANES threads stride over a row's 32-weight chunks, then reduce in shared memory.
// f16 is unpacked with unpack2x16float (no shader-f16). 18/34-byte blocks are only 2-byte aligned,
// so 32-bit words are assembled from two halves (`word_at`); buffers carry >= 1 word of padding.
// Loads in a loop are written out where it matters (Q4_1, Q8_0 chunks; the norm's sum of squares): on
// the H200 the driver left such loops rolled, so each iteration waited for its own memory round trip.

const QTYPE: u32 = {{QTYPE}}u;   // GGML type id: 0 F32, 1 F16, 2 Q4_0, 3 Q4_1, 8 Q8_0, 41 Q1_0
const WG: u32 = {{WG}}u;
const LANES: u32 = {{LANES}}u;   // threads per row (power of two dividing WG)
const ROWS: u32 = WG / LANES;
const TT: u32 = {{TT}}u;         // tokens per workgroup
const ACCUM: bool = {{ACCUM}};   // add into y (fused residual) instead of overwriting it
// OUT 0: y[t, y_off + r]. OUT 1 (SwiGLU): rows come in (gate_i, up_i) pairs 2i, 2i+1 and
// y[t, y_off + i] = silu(gate_i) * up_i. OUT 2 (split): rows [0, n1) -> y (t, n1),
// [n1, n1 + n2) -> y2 (t, n2), the rest -> y3 (t, n - n1 - n2): Q, K and V from one dispatch.
const OUT: u32 = {{OUT}}u;
// NORM: x is the residual stream and the kernel multiplies by RMSNorm(x) * nw instead (the norm that
// used to be its own dispatch): each workgroup sums x^2 per token exactly as rmsnorm.wgsl does (WG = 64
// invocations, the same strided partial sums and the same tree), so the normed values are the bits the
// norm kernel wrote, and (x * scale) * nw is its expression. eps is p[10] (f32 bits).
const NORM: bool = {{NORM}};
// ROPE (OUT 2 only): GGML-normal RoPE of the Q and K rows in the epilogue, as rope.wgsl computes it
// (pairs 2i, 2i + 1 of each ROPE_HD-wide head; cos/sin from `rp`, rope.wgsl's parameter block), so the
// step needs no RoPE dispatch. A pair's two rows are in one workgroup (ROWS is even).
const ROPE: bool = {{ROPE}};
const ROPE_HD: u32 = max({{ROPE_HD}}u, 2u);  // never 0: Tint (Chrome) rejects a constant zero divisor even where ROPE leaves it dead
// SPREAD (Q1_0, one token per workgroup): every invocation takes a share of the row's 32-weight chunks for all
// ROWS rows of the workgroup, so each chunk of x is loaded once for ROWS rows (one bit of weight per 32 bits of
// x: re-reading x for every row bound the kernel by x's loads, not by the weights'). The ROWS x WG partial
// sums meet in `red`; then each row's LANES invocations add a segment of them and the usual tree below finishes.
const SPREAD: bool = {{SPREAD}};
const RED: u32 = {{RED}}u;       // `red`'s size: ROWS * (WG + 1) with SPREAD (a padded row per ROWS row), else 1

// params (u32): n rows, k cols, t tokens, row_bytes, x_stride (floats, multiple of 4),
//               y_stride (floats), y_offset (floats), x_offset (floats, multiple of 4), n1, n2
@group(0) @binding(0) var<storage, read> w: array<u32>;         // (n, row_bytes) raw blocks
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;   // (t, x_stride); embed: token ids
@group(0) @binding(2) var<storage, read_write> y: array<f32>;   // (t, y_stride), rows at y_offset
@group(0) @binding(3) var<storage, read> p: array<u32>;
@group(0) @binding(4) var<storage, read_write> y2: array<f32>;  // OUT 2 only
@group(0) @binding(5) var<storage, read_write> y3: array<f32>;  // OUT 2 only
@group(0) @binding(6) var<storage, read> nw: array<vec4<f32>>;  // NORM: the norm's weights (k)
@group(0) @binding(7) var<storage, read> rp: array<u32>;        // ROPE: header, then each token's (cos, sin)

var<workgroup> part: array<f32, WG * TT>;
var<workgroup> red: array<f32, RED>;

//#include "raw_blocks.wgsl"
//#include "quant_lanes.wgsl"

// The 32 weights of chunk c (weights 32c .. 32c+31) of the row starting at byte rb.
fn chunk(rb: u32, c: u32) -> array<vec4<f32>, 8> {
    var o: array<vec4<f32>, 8>;
    if (QTYPE == 0u) {
        let i = (rb >> 2u) + c * 32u;
        for (var v = 0u; v < 8u; v++) {
            o[v] = bitcast<vec4<f32>>(vec4<u32>(w[i + 4u * v], w[i + 4u * v + 1u], w[i + 4u * v + 2u], w[i + 4u * v + 3u]));
        }
    } else if (QTYPE == 1u) {
        let i = (rb >> 2u) + c * 16u;
        for (var v = 0u; v < 8u; v++) {
            o[v] = vec4<f32>(unpack2x16float(w[i + 2u * v]), unpack2x16float(w[i + 2u * v + 1u]));
        }
    } else if (QTYPE == 2u) {
        let b = rb + c * 18u;
        let d = half_at(b);
        for (var v = 0u; v < 4u; v++) {
            let q = word_at(b + 2u + 4u * v);
            o[v] = (nib_lo(q) - 8.0) * d;
            o[v + 4u] = (nib_lo(q >> 4u) - 8.0) * d;
        }
    } else if (QTYPE == 3u) {
        let i = (rb >> 2u) + c * 5u;
        let dm = unpack2x16float(w[i]);
        let q0 = w[i + 1u];  // written out: the four loads leave together (see the top of this file)
        let q1 = w[i + 2u];
        let q2 = w[i + 3u];
        let q3 = w[i + 4u];
        o[0] = nib_lo(q0) * dm.x + dm.y;
        o[4] = nib_lo(q0 >> 4u) * dm.x + dm.y;
        o[1] = nib_lo(q1) * dm.x + dm.y;
        o[5] = nib_lo(q1 >> 4u) * dm.x + dm.y;
        o[2] = nib_lo(q2) * dm.x + dm.y;
        o[6] = nib_lo(q2 >> 4u) * dm.x + dm.y;
        o[3] = nib_lo(q3) * dm.x + dm.y;
        o[7] = nib_lo(q3 >> 4u) * dm.x + dm.y;
    } else if (QTYPE == 8u) {
        let b = rb + c * 34u;
        let d = half_at(b);
        let q0 = word_at(b + 2u);  // written out: the eight loads leave together
        let q1 = word_at(b + 6u);
        let q2 = word_at(b + 10u);
        let q3 = word_at(b + 14u);
        let q4 = word_at(b + 18u);
        let q5 = word_at(b + 22u);
        let q6 = word_at(b + 26u);
        let q7 = word_at(b + 30u);
        o[0] = i8x4(q0) * d;
        o[1] = i8x4(q1) * d;
        o[2] = i8x4(q2) * d;
        o[3] = i8x4(q3) * d;
        o[4] = i8x4(q4) * d;
        o[5] = i8x4(q5) * d;
        o[6] = i8x4(q6) * d;
        o[7] = i8x4(q7) * d;
    } else if (QTYPE == 41u) {
        let b = rb + (c >> 2u) * 18u;
        let d = half_at(b);
        let q = word_at(b + 2u + 4u * (c & 3u));
        for (var v = 0u; v < 8u; v++) {
            o[v] = bits4(q >> (4u * v), d);
        }
    }
    return o;
}

// Four weights of a Q1_0 chunk against x: xv with its sign flipped where the weight's bit is 0 (nq holds the
// inverted bits; bit sh + j moves to the sign bit), so the sum times d is the product (w = +-d).
fn q1_signed(xv: vec4<f32>, nq: u32, sh: u32) -> vec4<f32> {
    let m = (vec4<u32>(nq) << (vec4<u32>(31u, 30u, 29u, 28u) - sh)) & vec4<u32>(0x80000000u);
    return bitcast<vec4<f32>>(bitcast<vec4<u32>>(xv) ^ m);
}

// SPREAD: this invocation's share of row li / LANES's product for token wid.y (the normed x where NORM, with
// the token's norm scale `sc`): all ROWS rows over chunks li, li + WG, ..., then the row's segment of `red`.
fn spread_partial(wid: vec3<u32>, li: u32, sc: f32) -> f32 {
    let n = p[0]; let k = p[1]; let row_bytes = p[3];
    let xs = p[4] / 4u; let xo = p[7] / 4u;
    let r0 = wid.x * ROWS;
    var acc: array<f32, ROWS>;
    for (var c = li; c < k / 32u; c += WG) {
        let xb = wid.y * xs + xo + c * 8u;
        var xv: array<vec4<f32>, 8>;
        for (var v = 0u; v < 8u; v++) {
            if (NORM) { xv[v] = (x[xb + v] * sc) * nw[c * 8u + v]; } else { xv[v] = x[xb + v]; }
        }
        let off = (c >> 2u) * 18u;
        let wo = off + 2u + 4u * (c & 3u);
        for (var j = 0u; j < ROWS; j++) {
            let rb = min(r0 + j, n - 1u) * row_bytes;  // rows past n repeat the last one; never stored
            let d = half_at(rb + off);
            let nq = ~word_at(rb + wo);
            let s = (q1_signed(xv[0], nq, 0u) + q1_signed(xv[1], nq, 4u)) + (q1_signed(xv[2], nq, 8u) + q1_signed(xv[3], nq, 12u))
                  + ((q1_signed(xv[4], nq, 16u) + q1_signed(xv[5], nq, 20u)) + (q1_signed(xv[6], nq, 24u) + q1_signed(xv[7], nq, 28u)));
            acc[j] += d * ((s.x + s.y) + (s.z + s.w));
        }
    }
    for (var j = 0u; j < ROWS; j++) { red[j * (WG + 1u) + li] = acc[j]; }
    workgroupBarrier();
    let base = (li / LANES) * (WG + 1u) + (li % LANES) * ROWS;  // LANES segments of ROWS partials per row
    var s = 0.0;
    for (var i = 0u; i < ROWS; i++) { s += red[base + i]; }
    return s;
}

// The products of the workgroup's ROWS rows x TT tokens (the norm first where NORM), summed over the
// row's lanes: part[li * TT + t] for the first lane of each row. Every entry point starts with it.
fn product(wid: vec3<u32>, li: u32) {
    let n = p[0]; let k = p[1]; let nt = p[2]; let row_bytes = p[3];
    let xs = p[4] / 4u; let xo = p[7] / 4u;
    let lane = li % LANES;
    let r = wid.x * ROWS + li / LANES;
    let t0 = wid.y * TT;
    var acc: array<f32, TT>;
    var scale: array<f32, TT>;
    if (NORM) {
        for (var t = 0u; t < TT; t++) {
            var s = 0.0;
            if (t0 + t < nt) {
                let fb = ((t0 + t) * xs + xo) * 4u;
                var i = li;
                for (; i + 3u * WG < k; i += 4u * WG) {  // four loads written out, summed in the same order
                    let v0 = x[(fb + i) / 4u][(fb + i) % 4u];
                    let v1 = x[(fb + i + WG) / 4u][(fb + i + WG) % 4u];
                    let v2 = x[(fb + i + 2u * WG) / 4u][(fb + i + 2u * WG) % 4u];
                    let v3 = x[(fb + i + 3u * WG) / 4u][(fb + i + 3u * WG) % 4u];
                    s += v0 * v0;
                    s += v1 * v1;
                    s += v2 * v2;
                    s += v3 * v3;
                }
                for (; i < k; i += WG) { let v = x[(fb + i) / 4u][(fb + i) % 4u]; s += v * v; }
            }
            part[li * TT + t] = s;
        }
        for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
            workgroupBarrier();
            if (li < stride) {
                for (var t = 0u; t < TT; t++) { part[li * TT + t] += part[(li + stride) * TT + t]; }
            }
        }
        workgroupBarrier();
        for (var t = 0u; t < TT; t++) { scale[t] = 1.0 / sqrt(part[t] / f32(k) + bitcast<f32>(p[10])); }
        workgroupBarrier();  // every invocation has read part before it is reused below
    }
    if (SPREAD) {
        acc[0] = spread_partial(wid, li, scale[0]);
    } else if (r < n) {
        let rb = r * row_bytes;
        for (var c = lane; c < k / 32u; c += LANES) {
            let wv = chunk(rb, c);
            for (var t = 0u; t < TT; t++) {
                if (t0 + t < nt) {
                    let xb = (t0 + t) * xs + xo + c * 8u;
                    if (NORM) {  // the normed x, as rmsnorm.wgsl writes it: (x * scale) * w
                        let sc = scale[t];
                        let nb = c * 8u;
                        var s = dot(wv[0], (x[xb] * sc) * nw[nb]) + dot(wv[1], (x[xb + 1u] * sc) * nw[nb + 1u]);
                        s += dot(wv[2], (x[xb + 2u] * sc) * nw[nb + 2u]) + dot(wv[3], (x[xb + 3u] * sc) * nw[nb + 3u]);
                        s += dot(wv[4], (x[xb + 4u] * sc) * nw[nb + 4u]) + dot(wv[5], (x[xb + 5u] * sc) * nw[nb + 5u]);
                        s += dot(wv[6], (x[xb + 6u] * sc) * nw[nb + 6u]) + dot(wv[7], (x[xb + 7u] * sc) * nw[nb + 7u]);
                        acc[t] += s;
                    } else {
                        var s = dot(wv[0], x[xb]) + dot(wv[1], x[xb + 1u]);
                        s += dot(wv[2], x[xb + 2u]) + dot(wv[3], x[xb + 3u]);
                        s += dot(wv[4], x[xb + 4u]) + dot(wv[5], x[xb + 5u]);
                        s += dot(wv[6], x[xb + 6u]) + dot(wv[7], x[xb + 7u]);
                        acc[t] += s;
                    }
                }
            }
        }
    }
    for (var t = 0u; t < TT; t++) { part[li * TT + t] = acc[t]; }
    for (var stride = LANES / 2u; stride > 0u; stride /= 2u) {
        workgroupBarrier();
        if (lane < stride) {
            for (var t = 0u; t < TT; t++) { part[li * TT + t] += part[(li + stride) * TT + t]; }
        }
    }
}

//#include "rope_pair.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    product(wid, li);
    let n = p[0]; let nt = p[2]; let ys = p[5]; let yo = p[6];
    let lane = li % LANES;
    let r = wid.x * ROWS + li / LANES;
    let t0 = wid.y * TT;
    if (OUT == 1u) {
        workgroupBarrier();
        if (lane == 0u && (li / LANES) % 2u == 0u && r + 1u < n) {
            for (var t = 0u; t < TT; t++) {
                if (t0 + t < nt) {
                    let g = part[li * TT + t];
                    let u = part[(li + LANES) * TT + t];
                    y[(t0 + t) * ys + yo + r / 2u] = g / (1.0 + exp(-g)) * u;
                }
            }
        }
        return;
    }
    if (OUT == 2u && ROPE) {
        workgroupBarrier();  // the pair's second row is summed by the next LANES invocations
        if (lane == 0u && (li / LANES) % 2u == 0u && r + 1u < n) {
            let n1 = p[8]; let n2 = p[9];
            for (var t = 0u; t < TT; t++) {
                if (t0 + t < nt) {
                    let a = part[li * TT + t];
                    let b = part[(li + LANES) * TT + t];
                    if (r < n1 + n2) {  // a Q or K row pair: rotated as rope.wgsl does
                        let ab = rotated(r, n1, t0 + t, a, b);
                        store_split(r, t0 + t, ab.x);
                        store_split(r + 1u, t0 + t, ab.y);
                    } else {
                        store_split(r, t0 + t, a);
                        store_split(r + 1u, t0 + t, b);
                    }
                }
            }
        }
        return;
    }
    if (lane == 0u && r < n) {
        for (var t = 0u; t < TT; t++) {
            if (t0 + t < nt) {
                let v = part[li * TT + t];
                if (OUT == 2u) {
                    store_split(r, t0 + t, v);
                } else {
                    let yi = (t0 + t) * ys + yo + r;
                    if (ACCUM) { y[yi] += v; } else { y[yi] = v; }
                }
            }
        }
    }
}

// Embedding lookup: workgroup (chunk group, token). x holds the token ids (as u32 bits).
@compute @workgroup_size(WG)
fn embed(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = p[1]; let nt = p[2]; let row_bytes = p[3]; let ys = p[5];
    let c = gid.x;
    let t = gid.y;
    if (c >= k / 32u || t >= nt) { return; }
    let id = bitcast<vec4<u32>>(x[t / 4u])[t % 4u];
    let wv = chunk(id * row_bytes, c);
    for (var v = 0u; v < 8u; v++) {
        let yi = t * ys + c * 32u + 4u * v;
        y[yi] = wv[v].x; y[yi + 1u] = wv[v].y; y[yi + 2u] = wv[v].z; y[yi + 3u] = wv[v].w;
    }
}

//#include "matmul_kv.wgsl"
