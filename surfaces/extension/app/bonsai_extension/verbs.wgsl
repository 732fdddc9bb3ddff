// The GPU verbs check's kernel: out[i] = inp[i] * 2 + u.add (storage in, storage out, a uniform).

struct U { add: u32, n: u32, pad0: u32, pad1: u32 }

@group(0) @binding(0) var<uniform> u: U;
@group(0) @binding(1) var<storage, read> inp: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size({{WG}})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < u.n) { out[gid.x] = inp[gid.x] * 2u + u.add; }
}
