"""On this adapter, with the real model: do the speed paths give the bits of the plain ones?

Compares (strict equality) the logits of a prompt and of greedy decode steps with the RMSNorm folded
into the matmuls against the separate norm dispatches, and the tokens of GPU-resident greedy decoding
(blocks of steps per readback) against one readback per step. The tests prove both on lavapipe (CI);
this runs the same comparison where the GPU's compiler may treat the kernels differently.
Prints a table and writes JSON.

    python bench/exactness_probe.py [--model PATH] [--kv f32] [--steps 64]
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import numpy as np

from bonsai.engine.native import load_engine
from bonsai.kv.format.modes import MODES

PROMPT = "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg"


def _logits(engine, ids: list[int], steps: int, fuse: bool) -> np.ndarray:
    engine.reset()
    engine.model.fuse_norm = fuse
    rows = [np.asarray(engine.forward(ids)).view(np.uint32).copy()]
    tok = int(rows[0].view(np.float32)[-1].argmax())
    for _ in range(steps):
        row = np.asarray(engine.forward([tok]))
        rows.append(row.view(np.uint32).copy())
        tok = int(row[-1].argmax())
    engine.model.fuse_norm = True
    return np.concatenate(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--kv", default="f32", choices=sorted(MODES))
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "exactness_probe.json"))
    a = p.parse_args()
    engine = load_engine(a.model, kv=a.kv, progress=False)
    ids = engine.tokenizer.encode(PROMPT)
    plain, fused = _logits(engine, ids, a.steps, False), _logits(engine, ids, a.steps, True)
    gens = {}
    for k in (1, 16):
        engine.reset()
        engine.resident_steps = k
        gens[k] = engine.generate(ids, max_tokens=a.steps, stop_ids=set()).tokens
    rows = [
        {"check": f"fused RMSNorm == norm dispatch (logits of {len(ids)} + {a.steps} steps)",
         "equal": bool(np.array_equal(plain, fused)), "differing_words": int((plain != fused).sum())},
        {"check": f"resident 16 steps/readback == 1 ({a.steps} greedy tokens)", "equal": gens[1] == gens[16],
         "differing_words": sum(x != y for x, y in zip(gens[1], gens[16], strict=True))},
    ]
    print(f"{engine.gpu.description}, kv {a.kv}")
    for r in rows:
        print(f"{r['check']:64} {'equal' if r['equal'] else 'DIFFERENT'} ({r['differing_words']} differ)")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"host": platform.node(), "kv": a.kv, "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
