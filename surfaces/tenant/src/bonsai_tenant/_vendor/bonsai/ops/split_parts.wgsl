// Split K's last step, shared by split_sum.wgsl and matmul_tiled.wgsl's main_sum (one order of the sums, so one set of
// bits whichever adds them): output i's SPLIT parts, part z at part_at(z * count + i) (count: the t x n outputs), added
// in part order into y[yi] (+= where ACCUM). The including file has SPLIT, ACCUM, y and part_at.
fn add_parts(i: u32, count: u32, yi: u32) {
    var s = part_at(i);
    for (var z = 1u; z < SPLIT; z++) { s = s + part_at(z * count + i); }
    if (ACCUM) { y[yi] = y[yi] + s; } else { y[yi] = s; }
}
