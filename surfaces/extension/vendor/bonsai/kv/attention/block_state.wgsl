// Shared by the blocks variant (//#include): block size, the window's blocks, and `part`'s layout.
// Expects `w` (Window), `part` (array<atomic<u32>>), format/row_format.wgsl and state.wgsl.
const BLOCK: u32 = {{BLOCK}}u;    // positions per block, aligned to absolute positions

// Blocks the window [w.start, w.end) touches (the dispatch's x size; the layout of `part`).
fn window_blocks() -> u32 {
    return (w.end + BLOCK - 1u) / BLOCK - w.start / BLOCK;
}

// `part`: the window's block folds [n_q * n_heads, blocks, FOLD] as f32 bits from word 0, and at its end one
// counter word per (token, head) idx, the last word idx 0's (blocks.wgsl's fold_merge counts there the window's
// blocks folded so far; every count is back at 0 when its dispatch ends; the driver keeps folds out of every
// counter it has used, `Attention._part_for`). Its words are atomics (relaxed loads and stores of the same
// bits) because fold_merge hands them from one workgroup to another inside a dispatch (see there).
fn counter(idx: u32) -> u32 { return arrayLength(&part) - 1u - idx; }

// First word of the fold of the window's k-th block for idx.
fn block_fold(idx: u32, k: u32) -> u32 { return (idx * window_blocks() + k) * FOLD; }

fn part_f32(i: u32) -> f32 { return bitcast<f32>(atomicLoad(&part[i])); }

fn part_put(i: u32, x: f32) { atomicStore(&part[i], bitcast<u32>(x)); }
