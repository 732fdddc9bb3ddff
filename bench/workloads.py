"""The workloads `python -m bench` runs: each wraps one benchmark script, its flags, and where its rows are."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Workload:
    """One subcommand: `script`'s main() run with `argv(args)`; `rows` picks the rows out of its JSON."""

    name: str
    script: str  # a module in bench/ with a main() that parses sys.argv and honours --out
    help: str
    argv: Callable[[argparse.Namespace], list[str]]
    rows: Callable[[dict[str, Any]], list[dict[str, Any]]]
    columns: list[str]  # the markdown table's columns (the JSON keeps every field)
    flags: tuple[str, ...] = ()  # which shared flags it takes: model, kv, context, peers
    device: Callable[[dict[str, Any]], str | None] = field(default=lambda payload: None)
    peers: tuple[str, ...] = ()  # peers it times itself (the engine's own process)


def _opt(flag: str, value: Any) -> list[str]:
    return [] if value is None else [flag, str(value)]


def _kvs(args: argparse.Namespace) -> list[str]:
    return args.kv.split(",") if args.kv else []


def _decode_argv(args: argparse.Namespace) -> list[str]:
    # the engine's own prefill kernel (decode_bench times the matvec first unless told); flags after `--` win
    out = _opt("--model", args.model) + _opt("--prompt-tokens", args.context) + ["--prefill-kernels", "tiled"]
    out += _opt("--kv", args.kv)
    if "reference" not in args.peers:
        out.append("--no-reference")
    if "hf" in args.peers:
        out.append("--hf")
    return out


def _prefill_argv(args: argparse.Namespace) -> list[str]:
    tokens = args.context or 512
    out = _opt("--model", args.model) + ["--prompt-tokens", "64", "--new-tokens", "16", "--batch", str(tokens),
                                         "--prefill-tokens", str(tokens), "--prefill-kernels", "tiled",
                                         "--prefill-repeats", "5", "--no-reference"] + _opt("--kv", args.kv)
    return out + (["--hf"] if "hf" in args.peers else [])


def _decode_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "prefill_kernels"} for r in payload["rows"]]


def _prefill_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for r in payload["rows"]:
        rows.append({"engine": r["engine"], "prefill_tokens": r.get("prefill_tokens"),
                     "prefill_tok_s": r["prefill_tok_s"], "first_prefill_tok_s": r.get("first_prefill_tok_s")})
        for k in r.get("prefill_kernels", []):
            rows.append({"engine": f"{r['engine']}: {k['kernel']}", "prefill_tokens": r.get("prefill_tokens"),
                         "prefill_tok_s": k["prefill_tok_s"], "prefill_tok_s_median": k["prefill_tok_s_median"]})
    return rows


def _engine_device(payload: dict[str, Any]) -> str | None:
    """The adapter decode_bench names in its engine row: 'bonsai GPU (DESCRIPTION, kv MODE, ...)'."""
    engine = payload["rows"][0].get("engine", "") if payload.get("rows") else ""
    found = re.match(r"(?:.*: )?bonsai GPU \((.*?), kv ", engine)
    return found[1] if found else None


def _kv_argv(args: argparse.Namespace) -> list[str]:
    return _opt("--context", args.context) + _opt("--modes", args.kv)


def _browser_argv(args: argparse.Namespace) -> list[str]:
    return ["--kv", *_kvs(args)] if args.kv else []


def _tenant_argv(args: argparse.Namespace) -> list[str]:
    return _opt("--model", args.model)


WORKLOADS: dict[str, Workload] = {w.name: w for w in [
    Workload("decode", "decode_bench", "prefill and decode tok/s of the GPU engine (peers: reference, hf)",
             _decode_argv, _decode_rows,
             ["engine", "prefill_tok_s", "decode_tok_s", "context_at_decode", "dispatches_per_token",
              "submits_per_token"], ("model", "kv", "context", "peers"), _engine_device, ("reference", "hf")),
    Workload("prefill", "decode_bench", "a prompt of --context tokens (512) in one batch, best of 5, and the first one",
             _prefill_argv, _prefill_rows,
             ["engine", "prefill_tokens", "prefill_tok_s", "prefill_tok_s_median", "first_prefill_tok_s"],
             ("model", "kv", "context", "peers"), _engine_device, ("hf",)),
    Workload("kv-stream", "kv_bench", "attention per KV mode, resident and streamed windows; upload paths",
             _kv_argv, lambda p: p["rows"],
             ["kind", "mode", "windows", "window", "variant", "seconds_per_call", "cache_GBps", "path", "GBps"],
             ("kv", "context"), lambda p: p.get("device")),
    Workload("sync", "sync_bench", "bonsai-sync: cold sync, cold and warm check, an edit, beside libcst and grimp",
             lambda a: [], lambda p: p["results"],
             ["tree", "files", "cold_sync.wall_s", "cold_check_no_cache.wall_s", "warm_check.wall_s",
              "check_after_one_edit.wall_s", "sync_after_one_edit.wall_s", "libcst_parse_only.wall_s",
              "grimp_build_graph.wall_s", "cold_check_over_grimp", "cold_sync_over_parse"]),
    Workload("tenant-load", "tenant_load_bench", "the tenant server under 2 tenants x 8 clients: fairness, 429s, RSS",
             _tenant_argv, lambda p: p["tenants"],
             ["tenant", "answered", "refused_429", "hung_up", "errors", "p50_s", "p95_s", "max_s"], ("model",)),
    Workload("browser", "browser_bench", "decode in headless Chromium (Pyodide, WebGPU) beside native",
             _browser_argv, lambda p: p["rows"],
             ["kv", "native.adapter", "native.decode_tokens_per_s", "browser.adapter", "browser.decode_tokens_per_s",
              "native_over_browser", "same_tokens"], ("kv",)),
]}
