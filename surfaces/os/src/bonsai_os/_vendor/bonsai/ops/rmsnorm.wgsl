// RMSNorm over rows: y[r, :] = x[r, :] * (1 / sqrt(mean(x[r, :]^2) + eps)) * w. One workgroup per row.
const WG: u32 = {{WG}}u;

// params (u32): rows, dim, x_stride, y_stride, eps (f32 bits)
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> p: array<u32>;

var<workgroup> part: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let dim = p[1];
    let xb = wid.x * p[2];
    let yb = wid.x * p[3];
    var s = 0.0;
    for (var i = li; i < dim; i += WG) { let v = x[xb + i]; s += v * v; }
    part[li] = s;
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        workgroupBarrier();
        if (li < stride) { part[li] += part[li + stride]; }
    }
    workgroupBarrier();
    let scale = 1.0 / sqrt(part[0] / f32(dim) + bitcast<f32>(p[4]));
    for (var i = li; i < dim; i += WG) { y[yb + i] = (x[xb + i] * scale) * w[i]; }
}
