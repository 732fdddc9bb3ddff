"""The numpy reference forward pass: real-model sanity (" Paris", perplexity) and an independent naive oracle."""

from __future__ import annotations

import dataclasses

import gguf
import gguf.quants
import numpy as np
import pytest

from bonsai.gguf import GGMLType
from bonsai.reference import ReferenceModel, dequantize_q1_0, perplexity, quantize_q1_0
from tests.helpers.synthetic import write_tiny_gguf

PARAGRAPH = (
    "The Industrial Revolution began in Great Britain in the late eighteenth century and spread to other "
    "parts of Europe and North America. It marked a major turning point in history, as almost every aspect "
    "of daily life was influenced in some way. In particular, average income and population began to "
    "exhibit unprecedented sustained growth. Some economists have said the most important effect of the "
    "Industrial Revolution was that the standard of living for the general population in the western world "
    "began to increase consistently for the first time in history."
)


# -- the real default model -------------------------------------------------------------------------


def test_greedy_capital_of_france_is_paris(default_reference, default_tokenizer):
    ids = default_tokenizer.encode("The capital of France is")
    out = default_reference.greedy(ids, 2)
    assert default_tokenizer.decode(out).startswith(" Paris")


def test_perplexity_of_real_english_is_sane_and_wrong_rope_mode_is_caught(
    default_reference, default_tokenizer
):
    ids = default_tokenizer.encode(PARAGRAPH)
    ppl = perplexity(default_reference, ids)
    assert 1.0 < ppl < 40.0
    # Mutation: NEOX RoPE on a llama GGUF (whose Q/K rows were permuted for "normal" mode) must hurt.
    good_config = default_reference.config
    default_reference.config = dataclasses.replace(good_config, rope_neox=True)
    try:
        wrong = perplexity(default_reference, ids)
    finally:
        default_reference.config = good_config
    assert wrong > 2 * ppl


# -- the independent naive oracle on tiny synthetic models --------------------------------------------


def _q1_0_scalar(raw: bytes, n: int) -> np.ndarray:
    """Q1_0 decoded one bit at a time, straight from the layout description."""
    out = np.empty(n, np.float64)
    for b in range(n // 128):
        block = raw[b * 18 : (b + 1) * 18]
        d = float(np.frombuffer(block[:2], np.float16)[0])
        for j in range(128):
            out[b * 128 + j] = d if (block[2 + j // 8] >> (j % 8)) & 1 else -d
    return out


def _weights_via_gguf_package(path) -> dict[str, np.ndarray]:
    """Every tensor dequantised by the gguf package (Q1_0 by the scalar decoder), float64, numpy order."""
    out = {}
    for t in gguf.GGUFReader(path).tensors:
        shape = tuple(int(d) for d in reversed(t.shape))
        if t.tensor_type == gguf.GGMLQuantizationType.Q1_0:
            out[t.name] = _q1_0_scalar(t.data.tobytes(), int(t.n_elements)).reshape(shape)
        else:
            out[t.name] = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64).reshape(shape)
    return out


def naive_forward(path, ids, *, neox: bool, qk_norm: bool, cfg) -> np.ndarray:
    """Token by token, head by head, RoPE as complex rotation; float64. Shares no code with bonsai.reference."""
    w = _weights_via_gguf_package(path)
    hd, group = cfg.head_dim, cfg.n_heads // cfg.n_kv_heads

    def norm(x, weight):
        return x / np.sqrt(np.mean(x * x) + cfg.rms_eps) * weight

    def rotate(vec, pos):
        half = hd // 2
        z = vec[:half] + 1j * vec[half:] if neox else vec[0::2] + 1j * vec[1::2]
        z = z * np.exp(1j * pos * cfg.rope_theta ** (-np.arange(half) * 2.0 / hd))
        return np.concatenate([z.real, z.imag]) if neox else np.stack([z.real, z.imag], axis=1).reshape(-1)

    keys = [[] for _ in range(cfg.n_layers)]
    values = [[] for _ in range(cfg.n_layers)]
    logits = []
    for pos, tok in enumerate(ids):
        x = w["token_embd.weight"][tok].copy()
        for layer in range(cfg.n_layers):
            p = f"blk.{layer}."
            h = norm(x, w[p + "attn_norm.weight"])
            q = (w[p + "attn_q.weight"] @ h).reshape(cfg.n_heads, hd)
            k = (w[p + "attn_k.weight"] @ h).reshape(cfg.n_kv_heads, hd)
            v = (w[p + "attn_v.weight"] @ h).reshape(cfg.n_kv_heads, hd)
            if qk_norm:
                q = np.stack([norm(r, w[p + "attn_q_norm.weight"]) for r in q])
                k = np.stack([norm(r, w[p + "attn_k_norm.weight"]) for r in k])
            q = np.stack([rotate(r, pos) for r in q])
            k = np.stack([rotate(r, pos) for r in k])
            keys[layer].append(k)
            values[layer].append(v)
            heads = []
            for hq in range(cfg.n_heads):
                kvh = hq // group
                scores = np.array([q[hq] @ kk[kvh] for kk in keys[layer]]) / np.sqrt(hd)
                prob = np.exp(scores - scores.max())
                prob /= prob.sum()
                heads.append(sum(pi * vv[kvh] for pi, vv in zip(prob, values[layer], strict=True)))
            x = x + w[p + "attn_output.weight"] @ np.concatenate(heads)
            h = norm(x, w[p + "ffn_norm.weight"])
            gate, up = w[p + "ffn_gate.weight"] @ h, w[p + "ffn_up.weight"] @ h
            x = x + w[p + "ffn_down.weight"] @ (gate / (1 + np.exp(-gate)) * up)
        x = norm(x, w["output_norm.weight"])
        logits.append(w.get("output.weight", w["token_embd.weight"]) @ x)
    return np.array(logits)


TINY_CASES = [
    ("qwen3", "Q8_0", {}),
    ("qwen3", "F32", {"tied": False}),
    ("llama", "Q4_1", {}),
    ("llama", "F16", {"n_kv_heads": 1}),
    ("qwen3", "Q1_0", {"dim": 128, "embed_type": "Q8_0"}),
    ("llama", "Q4_0", {"n_heads": 4, "n_kv_heads": 4}),
]


@pytest.mark.parametrize(("arch", "wtype", "extra"), TINY_CASES)
def test_tiny_model_matches_naive_oracle(tmp_path, arch, wtype, extra):
    path = write_tiny_gguf(tmp_path / "tiny.gguf", arch, weight_type=wtype, **extra)
    model = ReferenceModel(path)
    cfg = model.config
    ids = [5, 80, 17, 200, 3, 3, 150, 299, 42, 7]
    ours = model.forward(ids)
    theirs = naive_forward(path, ids, neox=arch == "qwen3", qk_norm=arch == "qwen3", cfg=cfg)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("flip", ["rope_neox", "qk_norm", "gqa"])
def test_naive_oracle_catches_mutations(tmp_path, flip, monkeypatch):
    path = write_tiny_gguf(tmp_path / "tiny.gguf", "qwen3", weight_type="F32")
    model = ReferenceModel(path)
    cfg = model.config
    ids = [5, 80, 17, 200, 3, 150]
    theirs = naive_forward(path, ids, neox=True, qk_norm=True, cfg=cfg)
    if flip == "gqa":  # query head h reads KV head h % n_kv instead of h // group
        import bonsai.reference.forward as ref_model

        real_attention = ref_model.attention

        wrong_kv_head = [h % cfg.n_kv_heads for h in range(cfg.n_heads)]  # right: h // group

        def wrong_gqa(q, k, v, start):
            return real_attention(q, k[:, wrong_kv_head], v[:, wrong_kv_head], start)

        monkeypatch.setattr(ref_model, "attention", wrong_gqa)
    else:
        model.config = dataclasses.replace(cfg, **{flip: not getattr(cfg, flip)})
    assert not np.allclose(model.forward(ids), theirs, rtol=1e-4, atol=2e-3)


def test_q1_0_codec_matches_the_layout():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 256)).astype(np.float32)
    raw = quantize_q1_0(x)
    assert raw.shape == (3, 2 * 18) and raw.dtype == np.uint8
    decoded = dequantize_q1_0(raw.reshape(-1, 18)).reshape(3, 256)
    assert np.array_equal(decoded, _q1_0_scalar(raw.tobytes(), 768).reshape(3, 256).astype(np.float32))
    assert np.array_equal(np.sign(decoded), np.where(x >= 0, 1.0, -1.0))
    d = np.abs(x.reshape(-1, 128)).mean(axis=1).astype(np.float16).astype(np.float32)
    assert np.array_equal(np.abs(decoded).reshape(-1, 128).max(axis=1), d)


def test_synthetic_writer_is_deterministic_and_typed(tmp_path):
    a = write_tiny_gguf(tmp_path / "a.gguf", "qwen3", weight_type=GGMLType.Q4_1)
    b = write_tiny_gguf(tmp_path / "b.gguf", "qwen3", weight_type="Q4_1")
    assert a.read_bytes() == b.read_bytes()
    model = ReferenceModel(a)
    types = {info.ggml_type for info in model.reader.tensors.values()}
    assert types == {GGMLType.Q4_1, GGMLType.F32}
    assert model.config.arch == "qwen3" and model.config.head_dim == 32 and model.config.q_dim == 128
    with pytest.raises(ValueError, match="Q1_0 needs row widths that are multiples of 128"):
        write_tiny_gguf(tmp_path / "c.gguf", weight_type="Q1_0")


# -- the reference's KV cache and hooks, on tiny synthetic models -----------------------------------


def test_kv_cache_incremental_matches_one_batch(tmp_path):
    model = ReferenceModel(write_tiny_gguf(tmp_path / "tiny.gguf", "llama", weight_type="Q4_1"))
    ids = [5, 80, 17, 200, 3, 3, 150]
    full = model.forward(ids)
    cache = model.new_cache()
    parts = [model.forward(ids[:3], cache=cache)]
    parts += [model.forward([t], cache=cache) for t in ids[3:]]
    assert cache.length == len(ids)
    np.testing.assert_allclose(np.concatenate(parts), full, rtol=1e-4, atol=1e-3)


def test_kv_hook_and_capture(tmp_path):
    model = ReferenceModel(write_tiny_gguf(tmp_path / "tiny.gguf", "qwen3", weight_type="Q8_0"))
    cfg = model.config
    ids = [5, 80, 17, 200]
    plain = model.forward(ids)
    seen: list[int] = []

    def identity(layer, k, v):
        seen.append(layer)
        assert k.shape == v.shape == (len(ids), cfg.n_kv_heads, cfg.head_dim)
        return k, v

    captured: list[tuple[np.ndarray, np.ndarray]] = []
    same = model.forward(ids, kv_transform=identity, capture_kv=captured)
    assert np.array_equal(same.view(np.uint32), plain.view(np.uint32))
    assert seen == list(range(cfg.n_layers)) and len(captured) == cfg.n_layers
    assert captured[0][0].shape == (len(ids), cfg.n_kv_heads, cfg.head_dim)

    # A transform that degrades V in the last layer must change the logits.
    def zero_last_v(layer, k, v):
        return (k, np.zeros_like(v)) if layer == cfg.n_layers - 1 else (k, v)

    assert not np.allclose(model.forward(ids, kv_transform=zero_last_v), plain)
