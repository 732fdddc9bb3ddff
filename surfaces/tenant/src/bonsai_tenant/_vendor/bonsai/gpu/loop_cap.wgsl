// Runs one loop for p[0] iterations and writes how many it completed (`bonsai.gpu.probe.loop_cap`).
// Each iteration adds p[1] (= 1) read from the buffer, so no compiler can replace the loop by its count.
@group(0) @binding(0) var<storage, read> p: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(1)
fn main() {
    var done = 0u;
    for (var i = 0u; i < p[0]; i = i + 1u) { done = done + p[1]; }
    out[0] = done;
}
