// A kernel that only takes time (a dependent multiply-add chain per invocation) for map_order_probe.py.
@group(0) @binding(0) var<storage, read_write> b: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    var s = b[g.x];
    for (var i = 0u; i < {{ITERS}}u; i = i + 1u) { s = s * 1.0000001 + 0.5; }
    b[g.x] = s;
}
