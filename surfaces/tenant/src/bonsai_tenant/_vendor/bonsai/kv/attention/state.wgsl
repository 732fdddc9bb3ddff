// The online-softmax state between dispatches (//#include; expects HD): per (query token, head) idx,
// FOLDS folds of FOLD floats, each (m, l, acc[HD]) at M_AT, L_AT, ACC_AT. The serial variant keeps one
// fold (MAIN); the blocks variant two: MAIN (the blocks merged so far), then PARTIAL (the open block's
// fold, see merge_blocks.wgsl). `Attention.state_bytes` sizes the buffer from the same layout.
const FOLDS: u32 = {{FOLDS}}u;
const FOLD: u32 = HD + 2u;
const M_AT: u32 = 0u;
const L_AT: u32 = 1u;
const ACC_AT: u32 = 2u;

fn main_fold(idx: u32) -> u32 { return idx * FOLDS * FOLD; }

fn partial_fold(idx: u32) -> u32 { return main_fold(idx) + FOLD; }
