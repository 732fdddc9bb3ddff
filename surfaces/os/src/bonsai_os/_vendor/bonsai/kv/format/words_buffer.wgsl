// K and V words from storage buffers `kc`, `vc` (//#include; the GPU kernels): kword(i) is word i.
fn kword(i: u32) -> u32 { return kc[i]; }

fn vword(i: u32) -> u32 { return vc[i]; }
