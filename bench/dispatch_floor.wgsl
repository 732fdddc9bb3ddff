// bench/dispatch_floor_probe.py: the least a dispatch can do. Invocation 0 adds one to a[0] (a read and a
// write, so two dispatches on the same buffer are ordered by a barrier); the others only start and end.
@group(0) @binding(0) var<storage, read_write> a: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x == 0u) { a[0] = a[0] + 1u; }
}
