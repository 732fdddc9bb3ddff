"""`bonsai info [MODEL]`: what a GGUF model is (architecture, sizes, tensor types, tokenizer, template)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click

from ..config import ModelConfig, check_tensors
from ..gguf import GGUFReader
from ..models import resolve_model
from ..tokenizer import Tokenizer


def describe(path: str | Path) -> dict[str, Any]:
    """A summary of the model at `path`; raises a BonsaiError naming the file and field if it can't run."""
    reader = GGUFReader(path)
    cfg = ModelConfig.from_gguf(reader)
    check_tensors(reader, cfg)
    tok = Tokenizer.from_gguf(reader)
    types = Counter(info.type_name for info in reader.tensors.values())
    n_params = sum(info.n_elements for info in reader.tensors.values())
    template = reader.get("tokenizer.chat_template") or ""
    return {
        "path": str(path),
        "file_bytes": Path(path).stat().st_size,
        "name": reader.get("general.name", ""),
        "gguf_version": reader.version,
        "config": {**cfg.__dict__, "q_dim": cfg.q_dim, "kv_dim": cfg.kv_dim},
        "parameters": n_params,
        "tensors": len(reader.tensors),
        "tensor_types": dict(types.most_common()),
        "tokenizer": {
            "model": reader.get("tokenizer.ggml.model"),
            "pre": tok.pre,
            "tokens": tok.vocab_size,
            "merges": len(reader.get("tokenizer.ggml.merges", [])),
            "special_tokens": len(tok.special_ids),
            "bos": None if tok.bos_id is None else [tok.bos_id, tok.tokens[tok.bos_id]],
            "eos": None if tok.eos_id is None else [tok.eos_id, tok.tokens[tok.eos_id]],
        },
        "chat_template_chars": len(template),
    }


def format_info(d: dict[str, Any]) -> str:
    """The summary as aligned `key: value` lines."""
    c, t = d["config"], d["tokenizer"]

    def tok_str(pair):
        return "none" if pair is None else f"{pair[0]} {pair[1]}"

    types = ", ".join(f"{name} {count}" for name, count in d["tensor_types"].items())
    rows = [
        ("model", f"{d['path']} ({d['file_bytes'] / 1e6:.1f} MB, GGUF v{d['gguf_version']})"),
        ("name", d["name"] or "-"),
        ("architecture", c["arch"]),
        ("parameters", f"{d['parameters'] / 1e6:.1f} M"),
        ("layers", c["n_layers"]),
        ("dim", c["dim"]),
        ("heads", f"{c['n_heads']} query, {c['n_kv_heads']} key/value, head_dim {c['head_dim']}"),
        ("ffn", c["ffn_dim"]),
        ("vocab", c["vocab_size"]),
        ("context", c["context_length"]),
        ("rope", f"theta {c['rope_theta']:g}, {'NEOX' if c['rope_neox'] else 'normal'} pairs"),
        ("qk norm", "yes" if c["qk_norm"] else "no"),
        ("rms eps", f"{c['rms_eps']:g}"),
        ("tied output", "yes" if c["tied_output"] else "no"),
        ("tensors", f"{d['tensors']} ({types})"),
        (
            "tokenizer",
            f"{t['model']} BPE, pre-tokenizer {t['pre']}, {t['tokens']} tokens, {t['merges']} merges, "
            f"{t['special_tokens']} special",
        ),
        ("bos / eos", f"{tok_str(t['bos'])} / {tok_str(t['eos'])}"),
        (
            "chat template",
            f"present ({d['chat_template_chars']} chars)"
            if d["chat_template_chars"]
            else "absent (ChatML used)",
        ),
    ]
    width = max(len(k) for k, _ in rows) + 1
    return "\n".join(f"{k + ':':<{width}} {v}" for k, v in rows)


@click.command("info")
@click.argument("model", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def info(model: Path | None, as_json: bool) -> None:
    """Describe MODEL (a GGUF file; the default model if omitted)."""
    d = describe(resolve_model(model))
    click.echo(json.dumps(d, indent=2) if as_json else format_info(d))
