// Busy work for overlap_probe.py: each invocation runs a dependent chain of ITER multiply-adds on
// its own word of `work` (no memory traffic to speak of), so the dispatch's time is set by ITER.

struct P { iters: u32, a: u32, b: u32, c: u32 }

@group(0) @binding(0) var<storage, read> p: P;
@group(0) @binding(1) var<storage, read_write> work: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var x = work[gid.x];
    for (var i = 0u; i < p.iters; i++) {
        x = x * 0.999999 + 1e-7;
    }
    work[gid.x] = x;
}
