// Shared by the attention kernels (//#include): the K/V row-format constants and f16 decoding.
// Expects nothing; declares HD, the K_/V_ format constants, the MUT_ flags, h2f and h2f_signed.
const HD: u32 = {{HEAD_DIM}}u;
// Row formats (bonsai/kv/format/codec.py): bits 32 = f32; otherwise offset-binary codes, K_PER per word,
// then f16 scales two per word. K_BLOCK values share a scale; K_C4: one scale per channel per
// GROUP positions, carried by the group's rows (channel d's in row d / CPR of the group).
const K_BITS: u32 = {{K_BITS}}u;
const K_BLOCK: u32 = {{K_BLOCK}}u;
const K_WORDS: u32 = {{K_WORDS}}u;
const K_C4: bool = {{K_C4}};
const K_ASYM: bool = {{K_ASYM}};  // asymmetric: value = code * scale + min (c4a: one word per channel)
const V_BITS: u32 = {{V_BITS}}u;
const V_BLOCK: u32 = {{V_BLOCK}}u;
const V_WORDS: u32 = {{V_WORDS}}u;
const V_ASYM: bool = {{V_ASYM}};  // asymmetric per row: one word = scale | min << 16
const GROUP: u32 = {{GROUP}}u;
const CPR: u32 = HD / GROUP;
const K_PER: u32 = 32u / K_BITS;
const V_PER: u32 = 32u / V_BITS;
const K_VW: u32 = HD / K_PER;
const K_QB: u32 = min(K_BITS, 16u);  // (f32 rows never reach the code path below)
const K_MASK: u32 = (1u << K_QB) - 1u;
const K_OFF: i32 = i32(1u << (K_QB - 1u));
const V_VW: u32 = HD / V_PER;
const V_QB: u32 = min(V_BITS, 16u);
const V_MASK: u32 = (1u << V_QB) - 1u;
const V_OFF: i32 = i32(1u << (V_QB - 1u));
const NEG_BIG: f32 = -3.0e38;
// Mutations for the test suite only (bonsai.kv.attention.Mutations); all false in the runtime.
const MUT_NORMALISE: bool = {{MUT_NORMALISE}};
const MUT_GQA: bool = {{MUT_GQA}};
const MUT_CAUSAL: bool = {{MUT_CAUSAL}};

//#include "f16.wgsl"
