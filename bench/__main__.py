"""`python -m bench WORKLOAD [flags] [-- script flags]`: one benchmark workload, one markdown table, JSON out.

Every row is stamped with the commit, the device and the UTC date (`stamp.py`). The workloads (`workloads.py`)
wrap the scripts beside this file; flags after `--` go to the script itself (`python bench/SCRIPT.py --help`).

    python -m bench decode --kv q4res --context 1024 --peers hf,llama.cpp --llama /root/ll/llama
    python -m bench prefill --context 512
    python -m bench kv-stream --kv f32,q4res --context 32768 -- --window 4096 --layers 30
    python -m bench sync | tenant-load | browser
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the scripts import their neighbours by name (results_file, prefill_timing, ...)

from peers import llama_rows  # noqa: E402
from stamp import host_device, markdown, stamp  # noqa: E402
from workloads import WORKLOADS  # noqa: E402


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The entry point's arguments, and what follows `--` (the script's own)."""
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="workload", required=True, metavar="WORKLOAD")
    for w in WORKLOADS.values():
        s = sub.add_parser(w.name, help=w.help, description=f"{w.help} (bench/{w.script}.py)")
        if "model" in w.flags:
            s.add_argument("--model", help="a GGUF file (default: the default model)")
        if "kv" in w.flags:
            s.add_argument("--kv", help="KV cache mode(s), comma-separated where the workload takes several")
        if "context" in w.flags:
            s.add_argument("--context", type=int, help="prompt / cached positions")
        if "peers" in w.flags:
            s.add_argument("--peers", default="", help=f"comma-separated, of {', '.join((*w.peers, 'llama.cpp'))}")
            s.add_argument("--llama", default="/root/ll/llama", help="llama.cpp's multi-call binary (peer llama.cpp)")
        s.add_argument("--json", type=Path, help=f"where the stamped rows go (default bench/results/{w.name}.json)")
    args = p.parse_args(argv)
    args.peers = set(filter(None, getattr(args, "peers", "").split(",")))
    unknown = args.peers - {*WORKLOADS[args.workload].peers, "llama.cpp"}
    if unknown:
        p.error(f"--peers: {', '.join(sorted(unknown))} is not a peer of {args.workload}")
    return args, extra


def run(args: argparse.Namespace, extra: list[str]) -> list[dict]:
    """Run the workload's script in this process and return its stamped rows (peers' rows after)."""
    w = WORKLOADS[args.workload]
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        raw = Path(tmp) / f"{w.script}.json"
        argv = [f"bench/{w.script}.py", *w.argv(args), *extra, "--out", str(raw)]
        print("$", " ".join(argv), flush=True)
        saved, sys.argv = sys.argv, argv
        try:
            importlib.import_module(w.script).main()
        finally:
            sys.argv = saved
        payload = json.loads(raw.read_text())
    device = w.device(payload) or host_device()
    rows = stamp(w.rows(payload), w.name, device)
    if "llama.cpp" in args.peers:
        model = args.model or str(_default_model())
        tokens = args.context or 512
        peer = llama_rows(args.llama, model, 512 if w.name == "decode" else tokens, 128 if w.name == "decode" else 0,
                          tokens if w.name == "decode" else 0)
        rows += stamp(peer, w.name, peer[0].get("device") or device if peer else device)
    return rows


def _default_model() -> Path:
    from bonsai.models import resolve_model

    return Path(resolve_model(None))


def main(argv: list[str] | None = None) -> None:
    args, extra = parse(sys.argv[1:] if argv is None else argv)
    rows = run(args, extra)
    print()
    print(markdown(rows, ["commit", "device", "date", *WORKLOADS[args.workload].columns, "test"]
                   if WORKLOADS[args.workload].columns else None))
    out = args.json or HERE / "results" / f"{args.workload}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"workload": args.workload, "extra": extra, "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
