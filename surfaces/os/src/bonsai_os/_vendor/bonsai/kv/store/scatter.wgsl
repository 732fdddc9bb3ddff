// Copy a new position's K rows and V rows from the staging area into their window slot: the
// compute-pass replacement of two copy_buffer_to_buffer calls (a copy ends the compute pass, so a
// decode step was cut into one pass per layer). Words are copied verbatim: the slot holds exactly
// the bits the store kernel wrote.

struct Src { src_k: u32, n_k: u32, src_v: u32, n_v: u32 }   // per append: staging words and counts
struct Dst { dst_k: u32, dst_v: u32, d0: u32, d1: u32 }     // per step: where in the slot they land

@group(0) @binding(0) var<storage, read> s: Src;
@group(0) @binding(1) var<storage, read> d: Dst;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i = gid.y * nw.x * 64u + gid.x;
    if (i < s.n_k) {
        dst[d.dst_k + i] = src[s.src_k + i];
    } else if (i < s.n_k + s.n_v) {
        let k = i - s.n_k;
        dst[d.dst_v + k] = src[s.src_v + k];
    }
}
