"""Write tiny random llama / qwen3 GGUF models (with a tiny byte-level BPE vocab) for tests.

Usage (from any test; run pytest from the repo root so `tests` is importable):
    from tests.helpers.synthetic import write_tiny_gguf
    path = write_tiny_gguf(tmp_path / "tiny.gguf", arch="qwen3", weight_type="Q8_0")

Defaults: 2 layers, dim 64, 4 heads, 2 KV heads, head_dim 32, ffn 128, ~300-token vocab, tied output.
Matrices use `weight_type` (F32, F16, Q4_0, Q4_1, Q8_0, Q1_0), the embedding `embed_type` (defaults to
`weight_type`), norms are F32. Q1_0 needs every matrix's input width to be a multiple of 128 (use
dim=128). The same seed gives the same file, byte for byte.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import gguf
import gguf.quants
import numpy as np

from bonsai.gguf import BLOCK_SIZES, GGMLType
from bonsai.reference.quants import quantize_q1_0
from bonsai.tokenizer.bytelevel import BYTE_TO_CHAR, encode_bytelevel
from bonsai.tokenizer.chat_template import CHATML_TEMPLATE
from bonsai.tokenizer.pretokenize import PRE_TOKENIZERS

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
BPE_CORPUS = (
    "The capital of France is Paris. The quick brown fox jumps over the lazy dog. "
    "def main():\n    return 0\n\nHello, world! 1234567890 the then there these this that "
    "<tool_call> weather in Paris today is sunny and the temperature is twenty degrees. "
) * 3


def tiny_vocab(n_merges: int = 45, pre: str = "gpt2") -> tuple[list[str], list[int], list[str]]:
    """(tokens, token_types, merges): 3 specials, the 256 byte tokens, then `n_merges` learnt merges."""
    words = Counter(encode_bytelevel(p) for p in PRE_TOKENIZERS[pre](BPE_CORPUS))
    splits = {w: list(w) for w in words}
    merges: list[str] = []
    merged_tokens: list[str] = []
    for _ in range(n_merges):
        pairs: Counter[tuple[str, str]] = Counter()
        for w, count in words.items():
            syms = splits[w]
            for a, b in zip(syms, syms[1:], strict=False):
                pairs[(a, b)] += count
        if not pairs:
            break
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))  # most frequent, then lexical
        merges.append(f"{a} {b}")
        merged_tokens.append(a + b)
        for w, syms in splits.items():
            out, i = [], 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            splits[w] = out
    tokens = SPECIAL_TOKENS + [BYTE_TO_CHAR[b] for b in range(256)] + merged_tokens
    types = [3] * len(SPECIAL_TOKENS) + [1] * (len(tokens) - len(SPECIAL_TOKENS))
    return tokens, types, merges


def _encode(x: np.ndarray, ggml_type: GGMLType) -> tuple[np.ndarray, gguf.GGMLQuantizationType | None]:
    """float32 [rows, cols] -> (array to store, raw dtype for GGUFWriter.add_tensor)."""
    if ggml_type == GGMLType.F32:
        return x.astype(np.float32), None
    if ggml_type == GGMLType.F16:
        return x.astype(np.float16), None
    block = BLOCK_SIZES[ggml_type][0]
    if x.shape[-1] % block:
        raise ValueError(
            f"{ggml_type.name} needs row widths that are multiples of {block}, got {x.shape[-1]}"
        )
    if ggml_type == GGMLType.Q1_0:
        return quantize_q1_0(x), gguf.GGMLQuantizationType.Q1_0
    qtype = gguf.GGMLQuantizationType(ggml_type.value)
    return gguf.quants.quantize(x.astype(np.float32), qtype), qtype


def write_tiny_gguf(
    path: str | Path,
    arch: str = "qwen3",
    *,
    weight_type: str | GGMLType = GGMLType.Q8_0,
    embed_type: str | GGMLType | None = None,
    n_layers: int = 2,
    dim: int = 64,
    n_heads: int = 4,
    n_kv_heads: int = 2,
    head_dim: int = 32,
    ffn_dim: int = 128,
    tied: bool = True,
    rope_theta: float = 10000.0,
    rms_eps: float = 1e-6,
    context_length: int = 512,
    seed: int = 0,
) -> Path:
    """Write a tiny random model; returns its path."""
    path = Path(path)
    wtype = GGMLType[weight_type] if isinstance(weight_type, str) else weight_type
    etype = (
        wtype if embed_type is None else GGMLType[embed_type] if isinstance(embed_type, str) else embed_type
    )
    pre = "qwen2" if arch == "qwen3" else "smollm"
    tokens, types, merges = tiny_vocab(pre=pre)
    vocab = len(tokens)
    rng = np.random.default_rng(seed)

    def matrix(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w = gguf.GGUFWriter(path, arch)
    w.add_block_count(n_layers)
    w.add_context_length(context_length)
    w.add_embedding_length(dim)
    w.add_feed_forward_length(ffn_dim)
    w.add_head_count(n_heads)
    w.add_head_count_kv(n_kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(rope_theta)
    w.add_layer_norm_rms_eps(rms_eps)
    w.add_vocab_size(vocab)
    w.add_file_type(int(wtype))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)
    w.add_chat_template(CHATML_TEMPLATE)

    def add(name: str, x: np.ndarray, gtype: GGMLType) -> None:
        data, raw = _encode(x, gtype)
        w.add_tensor(name, data, raw_dtype=raw)

    q_dim, kv_dim = n_heads * head_dim, n_kv_heads * head_dim
    add("token_embd.weight", rng.standard_normal((vocab, dim)).astype(np.float32), etype)
    for i in range(n_layers):
        add(f"blk.{i}.attn_norm.weight", norm(dim), GGMLType.F32)
        add(f"blk.{i}.attn_q.weight", matrix(q_dim, dim), wtype)
        add(f"blk.{i}.attn_k.weight", matrix(kv_dim, dim), wtype)
        add(f"blk.{i}.attn_v.weight", matrix(kv_dim, dim), wtype)
        add(f"blk.{i}.attn_output.weight", matrix(dim, q_dim), wtype)
        if arch == "qwen3":
            add(f"blk.{i}.attn_q_norm.weight", norm(head_dim), GGMLType.F32)
            add(f"blk.{i}.attn_k_norm.weight", norm(head_dim), GGMLType.F32)
        add(f"blk.{i}.ffn_norm.weight", norm(dim), GGMLType.F32)
        add(f"blk.{i}.ffn_gate.weight", matrix(ffn_dim, dim), wtype)
        add(f"blk.{i}.ffn_up.weight", matrix(ffn_dim, dim), wtype)
        add(f"blk.{i}.ffn_down.weight", matrix(dim, ffn_dim), wtype)
    add("output_norm.weight", norm(dim), GGMLType.F32)
    if not tied:
        add("output.weight", matrix(vocab, dim), etype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
