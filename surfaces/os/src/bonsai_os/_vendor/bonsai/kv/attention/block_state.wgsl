// Shared by the blocks variant (//#include): block size and the window's blocks.
// Expects `w` (Window), format/row_format.wgsl and state.wgsl.
const BLOCK: u32 = {{BLOCK}}u;    // positions per block, aligned to absolute positions

// Blocks the window [w.start, w.end) touches (the dispatch's x size; the layout of `part`).
fn window_blocks() -> u32 {
    return (w.end + BLOCK - 1u) / BLOCK - w.start / BLOCK;
}
