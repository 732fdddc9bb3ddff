"""Write Bonsai-shaped GGUFs: Qwen3 architecture, every matrix Q1_0 (embedding and output head too), seeded weights.

The shapes are Qwen3's published configs (head dim 128); the weights are random sign bits with one f16 scale per
128 weights, written as raw Q1_0 blocks (no quantising), so even the 8B shape is written in seconds. The
tokenizer is a GGUF's (the default model's) or a JSON dump of its tokenizer keys (`dump-tokenizer`, small
enough to travel where the GGUF cannot), padded with control tokens up to `--vocab`.

    python bench/bonsai_gguf.py write 8B OUT.gguf [--vocab 151936] [--tokenizer MODEL.gguf|TOK.json] [--seed 0]
    python bench/bonsai_gguf.py dump-tokenizer MODEL.gguf TOK.json
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf
import numpy as np

Q1_BLOCK, Q1_BYTES = 128, 18
REAL_VOCAB = 151_936  # Qwen3's (and Bonsai's) vocabulary


@dataclass(frozen=True)
class Shape:
    """A Qwen3 shape: layers, hidden width, query / KV heads (head dim 128), FFN width, tied output head."""

    layers: int
    dim: int
    heads: int
    kv_heads: int
    ffn: int
    tied: bool
    head_dim: int = 128


SHAPES = {
    "1.7B": Shape(28, 2048, 16, 8, 6144, tied=True),
    "4B": Shape(36, 2560, 32, 8, 9728, tied=True),
    "8B": Shape(36, 4096, 32, 8, 12288, tied=False),
}
TOKENIZER_KEYS = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                  "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                  "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.chat_template")


def read_tokenizer(path: str | Path) -> dict[str, Any]:
    """The tokenizer keys of a GGUF, or of a JSON file written by `dump-tokenizer`."""
    path = Path(path)
    if path.suffix == ".json":
        out: dict[str, Any] = json.loads(path.read_text())
        return out
    r = gguf.GGUFReader(path)
    out = {}
    for key in TOKENIZER_KEYS:
        f = r.fields.get(key)
        if f is not None:
            out[key] = f.contents()
    if "tokenizer.ggml.tokens" not in out:
        raise ValueError(f"{path}: no tokenizer.ggml.tokens (not a model with a tokenizer)")
    return out


def q1_matrix(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Raw Q1_0 rows (rows, cols / 128 * 18) uint8: random bits, scales ~ 1 / sqrt(cols) (unit-ish outputs)."""
    if cols % Q1_BLOCK:
        raise ValueError(f"Q1_0 needs widths that are multiples of {Q1_BLOCK}, got {cols}")
    blocks = cols // Q1_BLOCK
    out = np.empty((rows, blocks, Q1_BYTES), np.uint8)
    out[:, :, 2:] = rng.integers(0, 256, (rows, blocks, 16), dtype=np.uint8)
    d = (rng.uniform(0.5, 1.5, (rows, blocks)) / np.sqrt(cols)).astype(np.float16)
    out[:, :, :2] = d.view(np.uint8).reshape(rows, blocks, 2)
    return out.reshape(rows, blocks * Q1_BYTES)


def write(path: str | Path, shape: Shape, tokenizer: dict[str, Any], vocab: int | None = None, seed: int = 0,
          context: int = 32768) -> Path:
    """Write the model; vocab: the tokenizer's size padded with control tokens (default: the tokenizer's own)."""
    path = Path(path)
    tokens = list(tokenizer["tokenizer.ggml.tokens"])
    types = list(tokenizer.get("tokenizer.ggml.token_type", [1] * len(tokens)))
    vocab = vocab or len(tokens)
    if vocab < len(tokens):
        raise ValueError(f"--vocab {vocab} is below the tokenizer's {len(tokens)} tokens")
    tokens += [f"<|pad_{i}|>" for i in range(vocab - len(tokens))]
    types += [3] * (vocab - len(types))
    rng = np.random.default_rng(seed)
    s = shape
    w = gguf.GGUFWriter(path, "qwen3")
    w.add_name(f"bonsai-shaped qwen3 {s.layers}x{s.dim} q1_0 seed {seed}")
    w.add_block_count(s.layers)
    w.add_context_length(context)
    w.add_embedding_length(s.dim)
    w.add_feed_forward_length(s.ffn)
    w.add_head_count(s.heads)
    w.add_head_count_kv(s.kv_heads)
    w.add_key_length(s.head_dim)
    w.add_value_length(s.head_dim)
    w.add_rope_dimension_count(s.head_dim)
    w.add_rope_freq_base(1_000_000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(vocab)
    w.add_file_type(int(gguf.LlamaFileType.MOSTLY_Q1_0))
    w.add_tokenizer_model(tokenizer.get("tokenizer.ggml.model", "gpt2"))
    w.add_tokenizer_pre(tokenizer.get("tokenizer.ggml.pre", "default"))
    w.add_token_list(tokens)
    w.add_token_types(types)
    if tokenizer.get("tokenizer.ggml.merges"):
        w.add_token_merges(list(tokenizer["tokenizer.ggml.merges"]))
    for key, add in (("tokenizer.ggml.bos_token_id", w.add_bos_token_id),
                     ("tokenizer.ggml.eos_token_id", w.add_eos_token_id),
                     ("tokenizer.ggml.padding_token_id", w.add_pad_token_id)):
        if key in tokenizer:
            add(int(tokenizer[key]))
    w.add_add_bos_token(bool(tokenizer.get("tokenizer.ggml.add_bos_token", False)))
    if "tokenizer.chat_template" in tokenizer:
        w.add_chat_template(tokenizer["tokenizer.chat_template"])

    def q1(name: str, rows: int, cols: int) -> None:
        w.add_tensor(name, q1_matrix(rng, rows, cols), raw_dtype=gguf.GGMLQuantizationType.Q1_0)

    def norm(name: str, n: int) -> None:
        w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32))

    q_dim, kv_dim = s.heads * s.head_dim, s.kv_heads * s.head_dim
    q1("token_embd.weight", vocab, s.dim)
    for i in range(s.layers):
        norm(f"blk.{i}.attn_norm.weight", s.dim)
        q1(f"blk.{i}.attn_q.weight", q_dim, s.dim)
        q1(f"blk.{i}.attn_k.weight", kv_dim, s.dim)
        q1(f"blk.{i}.attn_v.weight", kv_dim, s.dim)
        q1(f"blk.{i}.attn_output.weight", s.dim, q_dim)
        norm(f"blk.{i}.attn_q_norm.weight", s.head_dim)
        norm(f"blk.{i}.attn_k_norm.weight", s.head_dim)
        norm(f"blk.{i}.ffn_norm.weight", s.dim)
        q1(f"blk.{i}.ffn_gate.weight", s.ffn, s.dim)
        q1(f"blk.{i}.ffn_up.weight", s.ffn, s.dim)
        q1(f"blk.{i}.ffn_down.weight", s.dim, s.ffn)
    norm("output_norm.weight", s.dim)
    if not s.tied:
        q1("output.weight", vocab, s.dim)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    wp = sub.add_parser("write", help="write one Bonsai-shaped model")
    wp.add_argument("shape", choices=sorted(SHAPES))
    wp.add_argument("out")
    wp.add_argument("--tokenizer", required=True, help="a GGUF (the default model) or a dump-tokenizer JSON")
    wp.add_argument("--vocab", type=int, default=None, help=f"pad the vocabulary to this size (real: {REAL_VOCAB})")
    wp.add_argument("--seed", type=int, default=0)
    dp = sub.add_parser("dump-tokenizer", help="write a GGUF's tokenizer keys as JSON")
    dp.add_argument("gguf")
    dp.add_argument("out")
    a = p.parse_args()
    if a.cmd == "dump-tokenizer":
        Path(a.out).write_text(json.dumps(read_tokenizer(a.gguf)))
        return
    print(write(a.out, SHAPES[a.shape], read_tokenizer(a.tokenizer), a.vocab, a.seed))


if __name__ == "__main__":
    main()
