"""Model hyperparameters (ModelConfig) read from a GGUF file's metadata and checked against its tensors.

API:
    reader = bonsai.gguf.GGUFReader(path)
    cfg = ModelConfig.from_gguf(reader)      # UnsupportedArchitectureError / MissingKeyError / ...
    cfg.arch            "llama" | "qwen3"
    cfg.n_layers, cfg.dim, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.ffn_dim, cfg.vocab_size
    cfg.rope_theta, cfg.rope_neox (False: GGML "normal" adjacent pairs, llama; True: NEOX halves, qwen3)
    cfg.rms_eps, cfg.context_length, cfg.qk_norm (qwen3), cfg.tied_output (no output.weight tensor)
    cfg.bos_id, cfg.eos_id (None when absent), cfg.add_bos
    cfg.q_dim == n_heads * head_dim, cfg.kv_dim == n_kv_heads * head_dim
    layer_tensor_names(cfg, i) -> {"attn_q": "blk.i.attn_q.weight", ...}  (the per-layer weights)
    check_tensors(reader, cfg)               # every needed tensor present, shaped right, runnable type

Tensor shapes are in ggml order (contiguous dimension first), as `TensorInfo.shape` gives them:
    token_embd.weight  (dim, vocab)           output.weight (dim, vocab), absent when tied
    attn_q (dim, q_dim)  attn_k / attn_v (dim, kv_dim)  attn_output (q_dim, dim)
    ffn_gate / ffn_up (dim, ffn_dim)  ffn_down (ffn_dim, dim)
    attn_norm / ffn_norm / output_norm (dim,)  attn_q_norm / attn_k_norm (head_dim,) (qwen3)
"""

from __future__ import annotations

from dataclasses import dataclass

from .gguf import RUNTIME_TYPES, GGUFError, GGUFReader

SUPPORTED_ARCHITECTURES = ("llama", "qwen3")


class UnsupportedArchitectureError(GGUFError):
    """`general.architecture` names a model family Bonsai cannot run."""


class UnsupportedTensorTypeError(GGUFError):
    """A tensor is stored in a ggml type Bonsai's kernels do not read."""


class TensorShapeError(GGUFError):
    """A weight tensor is missing or its shape disagrees with the metadata."""


@dataclass(frozen=True)
class ModelConfig:
    """The hyperparameters a forward pass needs, from GGUF metadata."""

    # Model family: "llama" or "qwen3".
    arch: str
    # Number of transformer blocks.
    n_layers: int
    # Residual stream width (embedding length).
    dim: int
    # Query heads.
    n_heads: int
    # Key/value heads (GQA: n_heads is a multiple of it).
    n_kv_heads: int
    # Width of one attention head (qwen3 sets it apart from dim / n_heads).
    head_dim: int
    # Hidden width of the SwiGLU feed-forward.
    ffn_dim: int
    # Number of tokens (rows of token_embd).
    vocab_size: int
    # RoPE base frequency.
    rope_theta: float
    # RoPE pairing: False = GGML "normal" (x[2i], x[2i+1]), True = NEOX (x[i], x[i + head_dim/2]).
    rope_neox: bool
    # Epsilon of every RMSNorm.
    rms_eps: float
    # Context length the model was trained for.
    context_length: int
    # Per-head RMSNorm on Q and K before RoPE (qwen3).
    qk_norm: bool
    # The output projection is the token embedding (no output.weight tensor).
    tied_output: bool
    # Beginning/end-of-sequence token ids; None when the file has none.
    bos_id: int | None
    eos_id: int | None
    # Whether the tokenizer prepends BOS to a prompt.
    add_bos: bool

    @property
    def q_dim(self) -> int:
        """Width of all query heads together."""
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of all key (or value) heads together."""
        return self.n_kv_heads * self.head_dim

    @classmethod
    def from_gguf(cls, reader: GGUFReader) -> ModelConfig:
        """Read the config from `reader`'s metadata; errors name the file and the key."""
        arch = reader.require("general.architecture", str)
        if arch not in SUPPORTED_ARCHITECTURES:
            raise UnsupportedArchitectureError(
                reader.path,
                "general.architecture",
                f"architecture {arch!r} is not supported; Bonsai runs {', '.join(SUPPORTED_ARCHITECTURES)}",
            )

        def key(name: str, kind: type = int):
            return reader.require(f"{arch}.{name}", kind)

        dim = key("embedding_length")
        n_heads = key("attention.head_count")
        n_kv_heads = reader.get(f"{arch}.attention.head_count_kv", n_heads)
        head_dim = reader.get(f"{arch}.attention.key_length", dim // n_heads)
        if n_kv_heads <= 0 or n_heads % n_kv_heads:
            raise GGUFError(
                reader.path,
                f"{arch}.attention.head_count_kv",
                f"{n_kv_heads} does not divide the {n_heads} query heads",
            )
        value_length = reader.get(f"{arch}.attention.value_length", head_dim)
        if value_length != head_dim:
            raise GGUFError(
                reader.path,
                f"{arch}.attention.value_length",
                f"{value_length} differs from key_length {head_dim}; Bonsai needs them equal",
            )
        rope_dim = reader.get(f"{arch}.rope.dimension_count", head_dim)
        if rope_dim != head_dim:
            raise GGUFError(
                reader.path,
                f"{arch}.rope.dimension_count",
                f"partial RoPE ({rope_dim} of {head_dim} dims) is not supported",
            )
        scaling = reader.get(f"{arch}.rope.scaling.type", "none")
        if scaling != "none":
            raise GGUFError(
                reader.path, f"{arch}.rope.scaling.type", f"RoPE scaling {scaling!r} is not supported"
            )
        tokens = reader.get("tokenizer.ggml.tokens")
        vocab_size = reader.get(f"{arch}.vocab_size") or (len(tokens) if tokens else None)
        if vocab_size is None and "token_embd.weight" in reader.tensors:
            vocab_size = reader.tensors["token_embd.weight"].shape[1]
        if vocab_size is None:
            raise GGUFError(reader.path, f"{arch}.vocab_size", "absent, and no tokenizer.ggml.tokens either")
        return cls(
            arch=arch,
            n_layers=key("block_count"),
            dim=dim,
            n_heads=n_heads,
            n_kv_heads=n_kv_heads,
            head_dim=head_dim,
            ffn_dim=key("feed_forward_length"),
            vocab_size=vocab_size,
            rope_theta=float(reader.get(f"{arch}.rope.freq_base", 10000.0)),
            rope_neox=arch == "qwen3",
            rms_eps=float(key("attention.layer_norm_rms_epsilon", float)),
            context_length=key("context_length"),
            qk_norm=arch == "qwen3",
            tied_output="output.weight" not in reader.tensors,
            bos_id=reader.get("tokenizer.ggml.bos_token_id"),
            eos_id=reader.get("tokenizer.ggml.eos_token_id"),
            add_bos=bool(reader.get("tokenizer.ggml.add_bos_token", False)),
        )


def layer_tensor_names(cfg: ModelConfig, layer: int) -> dict[str, str]:
    """Short role -> tensor name of every weight of block `layer`."""
    roles = [
        "attn_norm",
        "attn_q",
        "attn_k",
        "attn_v",
        "attn_output",
        "ffn_norm",
        "ffn_gate",
        "ffn_up",
        "ffn_down",
    ]
    if cfg.qk_norm:
        roles += ["attn_q_norm", "attn_k_norm"]
    return {role: f"blk.{layer}.{role}.weight" for role in roles}


def expected_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a forward pass reads, with its ggml-order shape."""
    shapes: dict[str, tuple[int, ...]] = {
        "token_embd.weight": (cfg.dim, cfg.vocab_size),
        "output_norm.weight": (cfg.dim,),
    }
    if not cfg.tied_output:
        shapes["output.weight"] = (cfg.dim, cfg.vocab_size)
    per_role = {
        "attn_norm": (cfg.dim,),
        "attn_q": (cfg.dim, cfg.q_dim),
        "attn_k": (cfg.dim, cfg.kv_dim),
        "attn_v": (cfg.dim, cfg.kv_dim),
        "attn_output": (cfg.q_dim, cfg.dim),
        "ffn_norm": (cfg.dim,),
        "ffn_gate": (cfg.dim, cfg.ffn_dim),
        "ffn_up": (cfg.dim, cfg.ffn_dim),
        "ffn_down": (cfg.ffn_dim, cfg.dim),
        "attn_q_norm": (cfg.head_dim,),
        "attn_k_norm": (cfg.head_dim,),
    }
    for layer in range(cfg.n_layers):
        for role, name in layer_tensor_names(cfg, layer).items():
            shapes[name] = per_role[role]
    return shapes


def check_tensors(reader: GGUFReader, cfg: ModelConfig) -> None:
    """Raise a named error unless every tensor the model needs is present, shaped right and runnable."""
    supported = ", ".join(sorted(t.name for t in RUNTIME_TYPES))
    for name, shape in expected_shapes(cfg).items():
        info = reader.tensors.get(name)
        if info is None:
            raise TensorShapeError(reader.path, f"tensor {name!r}", f"missing; a {cfg.arch} model needs it")
        if info.shape != shape:
            raise TensorShapeError(
                reader.path,
                f"tensor {name!r}",
                f"shape {info.shape} but the metadata implies {shape} (ggml order)",
            )
        if info.ggml_type not in RUNTIME_TYPES:
            raise UnsupportedTensorTypeError(
                reader.path,
                f"tensor {name!r}",
                f"type {info.type_name} is not supported; Bonsai's kernels read {supported}"
                " (re-quantise the model to one of them)",
            )
