// Shared by the blocks variant (//#include): block size, state stride, and the merge of two folds.
// Expects `w` (Window) and format/row_format.wgsl.
const BLOCK: u32 = {{BLOCK}}u;    // positions per block, aligned to absolute positions
const STATE: u32 = 2u * (HD + 2u);  // floats of state per (token, head): MAIN (m, l, acc), PARTIAL (m, l, acc)

// Blocks the window [w.start, w.end) touches (the dispatch's x size; the layout of `part`).
fn window_blocks() -> u32 {
    return (w.end + BLOCK - 1u) / BLOCK - w.start / BLOCK;
}
