// A plain copy, dst[i] = src[i] in vec4 words: the bandwidth a kernel that only streams memory reaches (q1_probe.py).
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;

const WG: u32 = {{WG}}u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i = gid.x + gid.y * nw.x * WG;
    if (i < arrayLength(&src)) { dst[i] = src[i]; }
}
