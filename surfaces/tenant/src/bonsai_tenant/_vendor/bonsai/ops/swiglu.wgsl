// SwiGLU: y[t, i] = silu(g[t, i]) * u[t, i], silu(g) = g / (1 + exp(-g)); input rows are [gate | up].
const WG: u32 = {{WG}}u;

// params (u32): t, f (ffn width), x_stride, y_stride
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let t = gid.y;
    let f = p[1];
    if (i >= f || t >= p[0]) { return; }
    let g = x[t * p[2] + i];
    let u = x[t * p[2] + f + i];
    y[t * p[3] + i] = g / (1.0 + exp(-g)) * u;
}
