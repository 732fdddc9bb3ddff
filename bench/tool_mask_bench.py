"""Constrained-decoding mask cost on the real SmolLM2 vocabulary: trie build, cold and cached ms/step.

Feeds a recorded tool-call response token by token (the real tokenizer's split) through
ToolCallConstraint and times `mask()` at every step, first with empty caches, then again (cached).
Prints a table and writes bench/results/tool_mask.json.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from bonsai.gguf import GGUFReader
from bonsai.models import default_model_path
from bonsai.tokenizer import Tokenizer
from bonsai.toolcall import builtin_registry
from bonsai.toolcall.constrain import ToolCallConstraint, vocabulary
from bonsai.toolcall.trie import TokenTrie

RESPONSE = (
    "I will use the calculator.\n<tool_call>\n"
    '{"name": "calculator", "arguments": {"expression": "(17 * 23) + 4 ** 2 - 1000 / 8"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "clock", "arguments": {"timezone": "Europe/Paris"}}\n</tool_call>'
)


def timed_pass(constraint: ToolCallConstraint, ids: list[int]) -> list[float]:
    constraint.reset()
    out = []
    for tid in ids:
        t = time.perf_counter()
        mask = constraint.mask()
        out.append((time.perf_counter() - t) * 1e3)
        assert mask is None or mask[tid]
        constraint.accept(tid)
    return out


def main() -> None:
    tok = Tokenizer.from_gguf(GGUFReader(default_model_path()))
    vocab = vocabulary(tok)
    t = time.perf_counter()
    trie = TokenTrie(vocab)
    build_ms = (time.perf_counter() - t) * 1e3
    constraint = ToolCallConstraint(builtin_registry("calculator,clock"), vocab, trie=trie)
    ids = tok.encode(RESPONSE)
    cold, warm = timed_pass(constraint, ids), timed_pass(constraint, ids)
    rows = {
        "vocab_size": len(vocab),
        "trie_nodes": len(trie.children),
        "trie_build_ms": round(build_ms, 1),
        "steps": len(ids),
        "cold_mean_ms_per_step": round(statistics.mean(cold), 3),
        "cold_max_ms_per_step": round(max(cold), 3),
        "cached_mean_ms_per_step": round(statistics.mean(warm), 3),
        "cached_max_ms_per_step": round(max(warm), 3),
    }
    width = max(map(len, rows))
    for key, value in rows.items():
        print(f"{key:<{width}}  {value}")
    out = Path(__file__).parent / "results" / "tool_mask.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
