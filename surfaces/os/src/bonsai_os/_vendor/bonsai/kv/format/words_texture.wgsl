// K and V words from word textures `kt`, `vt` (//#include; the CPU kernels, bonsai.gpu.backend.WordTexture:
// word i is component i % 4 of texel i / 4, texel j at (j % 1024, j / 1024)). On a CPU adapter a texel
// fetch costs a fraction of a storage-buffer load; kword4 fetches four words at once (i % 4 == 0).
fn kword4(i: u32) -> vec4<u32> { return textureLoad(kt, vec2<u32>((i >> 2u) & 1023u, i >> 12u), 0); }

fn vword4(i: u32) -> vec4<u32> { return textureLoad(vt, vec2<u32>((i >> 2u) & 1023u, i >> 12u), 0); }

fn kword(i: u32) -> u32 { return kword4(i)[i & 3u]; }

fn vword(i: u32) -> u32 { return vword4(i)[i & 3u]; }
