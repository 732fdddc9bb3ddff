"""Peers timed beside the engine: llama.cpp's `llama bench` on the same model (Vulkan), as stamped rows."""

from __future__ import annotations

import json
import subprocess
from typing import Any


def llama_rows(binary: str, model: str, prompt: int, gen: int, depth: int, reps: int = 3) -> list[dict[str, Any]]:
    """llama.cpp's pp`prompt` and tg`gen` at `depth` on Vulkan0 (`llama bench -o json`), one row per test:
    tok/s as its mean over `reps` with the standard deviation. Raises with llama.cpp's stderr on failure."""
    cmd = [binary, "bench", "-m", model, "-p", str(prompt), "-n", str(gen), "-d", str(depth), "-ngl", "99",
           "-r", str(reps), "-dev", "Vulkan0", "-o", "json"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {run.returncode}: {run.stderr.strip()[-500:]}")
    rows = []
    for test in json.loads(run.stdout):
        kind = f"pp{test['n_prompt']}" if test.get("n_prompt") else f"tg{test['n_gen']}"
        tok_s = test["avg_ts"]
        rows.append({"engine": f"llama.cpp {test.get('build_commit', '')} {test.get('backends', '')}".strip(),
                     "test": f"{kind} d{test.get('n_depth', depth)}",
                     "prefill_tok_s" if kind.startswith("pp") else "decode_tok_s": tok_s,
                     "stddev_tok_s": test.get("stddev_ts"), "device": test.get("gpu_info")})
    return rows
