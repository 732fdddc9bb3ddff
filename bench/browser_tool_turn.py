"""Browser tool turn: the side panel's tool loop in the page (SwiftShader) and natively, token for token.

The panel's own `bonsai_extension.session.Session` (warm-up, then each question in a new chat) runs the
same Python in the extension's diagnostics page on `BrowserGpu` and here on wgpu-py's `Gpu`; every
step's generated ids, calls and results must be equal. For settings the panel does not expose (several
calls per reply: `--parallel-calls`). Prints each step's calls on both sides and whether the tokens are
equal; writes bench/results/browser_tool_turn.json. Needs Chromium and the fetched Pyodide.

    python bench/browser_tool_turn.py [--kv q4res] [--parallel-calls] [--question TEXT ...] [--max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from browser_profile import REPO, both_sides
from results_file import write_results

TURNS = textwrap.dedent('''
    import json
    from bonsai.config import ModelConfig
    from bonsai.engine import Engine
    from bonsai_extension.session import Session, Settings

    engine = Engine(reader, ModelConfig.from_gguf(reader), gpu, kv=KV, progress=False, max_positions=2048)
    settings = Settings(max_new_tokens=MAX_NEW, tools=tuple(TOOLS), tool_choice="required", parallel_calls=PARALLEL)
    session = Session(engine, emit=lambda kind, data: None, should_stop=lambda: False, read_tab=lambda: {})
    out = {"adapter": gpu.description, "warm_tokens": session.warm_up(settings), "turns": []}
    for question in QUESTIONS:
        session.new_chat()
        turn = session.send(question, settings)
        out["turns"].append({"question": question, "steps": turn["steps"], "step_tokens": turn["step_tokens"],
                             "answer": turn["answer"], "positions": engine.pos})
    __profile = json.dumps(out)
''')


def calls(turn: dict) -> list[str]:
    return [f"{c['name']}({c['arguments']})" if "error" not in c else "malformed" for s in turn["steps"] for c in s["calls"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kv", default="q4res")
    parser.add_argument("--parallel-calls", action="store_true", help="several calls per reply (the panel's default is one)")
    parser.add_argument("--question", nargs="+", default=["What is 12 * 7? Use the calculator."])
    parser.add_argument("--tools", nargs="+", default=["calculator", "clock"])
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "browser_tool_turn.json"))
    args = parser.parse_args()

    sys.path.insert(0, str(REPO / "surfaces/extension/app"))  # bonsai_extension natively
    browser, native = both_sides(TURNS, KV=args.kv, TOOLS=args.tools, PARALLEL=args.parallel_calls,
                                 QUESTIONS=args.question, MAX_NEW=args.max_new_tokens)
    rows = []
    for b, n in zip(browser["turns"], native["turns"], strict=True):
        same = b["step_tokens"] == n["step_tokens"]
        print(f"{b['question']!r} (kv {args.kv}, several calls {args.parallel_calls}): {b['positions']} positions, "
              f"steps of {[len(s) for s in b['step_tokens']]} tokens in the browser, {[len(s) for s in n['step_tokens']]} "
              f"natively; tokens equal: {same}")
        print(f"  browser calls: {calls(b)}\n  native calls:  {calls(n)}")
        rows.append({"question": b["question"], "same_tokens": same, "browser": b, "native": n})
    write_results(args.out, {"bench": "browser_tool_turn", "kv": args.kv, "parallel_calls": args.parallel_calls,
                             "browser_adapter": browser["adapter"], "native_adapter": native["adapter"], "rows": rows})


if __name__ == "__main__":
    main()
