"""Model weights on the GPU: raw GGML blocks uploaded as-is from a memory-mapped GGUF file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import ModelConfig, check_tensors, layer_tensor_names
from ..gguf import GGUFReader
from ..ops.matmul import QMatrix, interleave_rows, upload_matrix
from ..ops.qtypes import qtype
from .norms import f32_bytes
from .progress import Progress


@dataclass
class LayerWeights:
    """One transformer block. Matrices are (out rows, in cols); norms are f32 vectors."""

    attn_norm: Any      # (dim,) f32
    qkv: list[QMatrix]  # [(q_dim + 2 kv_dim, dim)] rows Q, K, V in one matrix when their types agree,
                        # else [wq (q_dim, dim), wk (kv_dim, dim), wv (kv_dim, dim)]
    wo: QMatrix         # (dim, q_dim)
    ffn_norm: Any       # (dim,) f32
    w_gate_up: QMatrix  # (2 * ffn_dim, dim): rows gate_0, up_0, gate_1, up_1, ... (fused SwiGLU matmul)
    w_down: QMatrix     # (dim, ffn_dim)
    qk_norm: Any        # (2 * head_dim,) f32: [q_norm | k_norm] (qwen3), else a dummy buffer


@dataclass
class Weights:
    embed: QMatrix      # (vocab, dim), also the output matrix when tied
    layers: list[LayerWeights]
    out_norm: Any       # (dim,) f32
    output: QMatrix     # (vocab, dim)
    nbytes: int


def _matrix(gpu: Any, reader: GGUFReader, name: str, bar: Progress) -> QMatrix:
    info = reader.tensor(name)
    cols, rows = info.shape[0], (info.shape[1] if len(info.shape) > 1 else 1)
    data = reader.tensor_data(name)
    m = upload_matrix(gpu, data, qtype(info.type_name, tensor=name), rows, cols, name)
    bar.advance(len(data))
    return m


def _concat_rows(gpu: Any, reader: GGUFReader, names: list[str], bar: Progress, interleave: bool = False) -> QMatrix:
    """Stack matrices of one type by rows into one buffer (Q|K|V, or gate/up interleaved row by row)."""
    infos = [reader.tensor(n) for n in names]
    data = b"".join(bytes(reader.tensor_data(n)) for n in names)
    if interleave:
        data = interleave_rows(data, infos[0].shape[1])
    rows = sum(i.shape[1] for i in infos)
    m = upload_matrix(gpu, data, qtype(infos[0].type_name, tensor=names[0]), rows, infos[0].shape[0], "+".join(names))
    bar.advance(len(data))
    return m


def _vector(gpu: Any, reader: GGUFReader, name: str, bar: Progress) -> Any:
    info = reader.tensor(name)
    buf = gpu.upload(_f32(reader, name))
    bar.advance(info.n_bytes)
    return buf


def _f32(reader: GGUFReader, name: str) -> Any:
    """A vector tensor's weights as f32 bytes (F32 tensors as their mapped bytes, no copy)."""
    info = reader.tensor(name)
    data = reader.tensor_data(name)
    return data if info.type_name == "F32" else f32_bytes(data, qtype(info.type_name, tensor=name))


def upload_weights(gpu: Any, reader: GGUFReader, cfg: ModelConfig, progress: bool = True) -> Weights:
    """Check every tensor, then upload them all, drawing a progress bar on stderr."""
    check_tensors(reader, cfg)
    total = sum(i.n_bytes for i in reader.tensors.values())
    with Progress("loading weights", total, enabled=progress) as bar:
        embed = _matrix(gpu, reader, "token_embd.weight", bar)
        layers = []
        for i in range(cfg.n_layers):
            n = layer_tensor_names(cfg, i)
            if cfg.qk_norm:  # [q_norm | k_norm] in one buffer
                qk = gpu.upload(b"".join(bytes(_f32(reader, n[x])) for x in ("attn_q_norm", "attn_k_norm")))
            else:
                qk = gpu.buffer(16)
            layers.append(LayerWeights(
                attn_norm=_vector(gpu, reader, n["attn_norm"], bar),
                qkv=_qkv(gpu, reader, n, bar),
                wo=_matrix(gpu, reader, n["attn_output"], bar),
                ffn_norm=_vector(gpu, reader, n["ffn_norm"], bar),
                w_gate_up=_gate_up(gpu, reader, n, bar),
                w_down=_matrix(gpu, reader, n["ffn_down"], bar),
                qk_norm=qk,
            ))
        out_norm = _vector(gpu, reader, "output_norm.weight", bar)
        output = embed if cfg.tied_output else _matrix(gpu, reader, "output.weight", bar)
    return Weights(embed, layers, out_norm, output, total)


def _gate_up(gpu: Any, reader: GGUFReader, n: dict[str, str], bar: Progress) -> QMatrix:
    if reader.tensor(n["ffn_gate"]).type_name != reader.tensor(n["ffn_up"]).type_name:
        from ..errors import BonsaiError

        raise BonsaiError(f"{reader.path}: {n['ffn_gate']} and {n['ffn_up']} have different types; "
                          "Bonsai needs them equal to fuse the gate/up matmul")
    return _concat_rows(gpu, reader, [n["ffn_gate"], n["ffn_up"]], bar, interleave=True)


def _qkv(gpu: Any, reader: GGUFReader, n: dict[str, str], bar: Progress) -> list[QMatrix]:
    names = [n["attn_q"], n["attn_k"], n["attn_v"]]
    if len({reader.tensor(x).type_name for x in names}) == 1:
        return [_concat_rows(gpu, reader, names, bar)]
    return [_matrix(gpu, reader, x, bar) for x in names]
