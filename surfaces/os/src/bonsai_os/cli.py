"""The `bonsai-os` command: ask once (`bonsai-os "question"`) or chat on stdin, with tools."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__
from ._vendor.bonsai.errors import BonsaiError
from .model import LoadedModel
from .session import Session, ToolUse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bonsai-os",
        description="The Bonsai assistant: a chat with tools on the local GPU (wgpu). "
        "Without a prompt it reads questions from stdin, one per line. "
        "Exit codes: 0 ok, 2 bad input or configuration.",
    )
    p.add_argument("prompt", nargs="*", help="ask this and exit")
    p.add_argument("--version", action="version", version=f"bonsai-os {__version__}")
    p.add_argument("--model", type=Path, help="a GGUF file (default: SmolLM2-135M-Instruct, carried in the bundle)")
    p.add_argument("--max-tokens", type=int, default=128, help="most tokens per reply (default 128)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--tools", default="calculator,clock",
                   help="comma-separated built-in tools: calculator, clock, read_file ('' for none)")
    p.add_argument("--root", type=Path, help="the one directory read_file may read (enables read_file)")
    p.add_argument("--max-steps", type=int, default=4, help="generations per question, tool steps included")
    p.add_argument("--unconstrained", action="store_true",
                   help="do not constrain decoding inside <tool_call> (parse only)")
    return p


def _registry(args: argparse.Namespace):
    from ._vendor.bonsai.toolcall import builtin_registry

    names = [n for n in args.tools.split(",") if n.strip()]
    if args.root is not None and "read_file" not in names:
        names.append("read_file")
    return builtin_registry(names, root=args.root)


BUNDLED_MODELS = Path(__file__).resolve().parent / "models"  # the OS bundle carries the default model here


def default_model() -> Path:
    """The default model: the one inside the bundle, else the runtime's (the model cache)."""
    from ._vendor.bonsai.models import DEFAULT_MODEL, default_model_path

    bundled = BUNDLED_MODELS / DEFAULT_MODEL.file
    return bundled if bundled.is_file() else default_model_path()


def _model(args: argparse.Namespace) -> LoadedModel:
    from .model import load_model

    path = args.model if args.model is not None else default_model()
    if not path.is_file():
        raise BonsaiError(f"{path}: no such model file")
    try:
        return load_model(path, max_tokens=args.max_tokens, temperature=args.temperature)
    except ImportError as exc:
        raise BonsaiError(f"the GPU runtime cannot load here ({exc}); this bundle needs the Python version "
                          f"and platform it was built for (this is Python {sys.version.split()[0]})") from exc


def _print_tool(use: ToolUse) -> None:
    print(f"[{use.name}({json.dumps(use.arguments)}) -> {use.result}]", file=sys.stderr, flush=True)


def _answer(session: Session, question: str) -> None:
    session.ask(question, on_text=lambda t: print(t, end="", flush=True), on_tool=_print_tool)
    print(flush=True)


def run(args: argparse.Namespace, model: LoadedModel | None = None) -> int:
    """Answer the prompt, or each stdin line until EOF / "exit"; `model` defaults to the engine."""
    for name in ("max_tokens", "max_steps"):
        if getattr(args, name) < 1:
            raise BonsaiError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    registry = _registry(args)
    session = Session(model if model is not None else _model(args), registry, max_steps=args.max_steps,
                      constrained=not args.unconstrained)
    if args.prompt:
        _answer(session, " ".join(args.prompt))
        return 0
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            print("> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line or line.strip() in ("exit", "quit"):
            return 0
        if line.strip():
            try:
                _answer(session, line.strip())
            except BonsaiError as exc:  # one bad question does not end the chat
                print(f"bonsai-os: error: {exc}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return run(args)
    except BonsaiError as exc:
        print(f"bonsai-os: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
