"""The `bonsai-os` command: ask once (`bonsai-os "question"`) or chat (a REPL on a terminal, lines on a pipe)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from . import __version__
from ._vendor.bonsai.errors import BonsaiError
from .interpreter import check_interpreter
from .model import LoadedModel
from .repl import StopFlag, answer, repl
from .session import Session


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bonsai-os",
        description="The Bonsai assistant: a chat with tools on the local GPU (wgpu). "
        "Without a prompt it chats: on a terminal a prompt with line editing, /clear, /tools, /bye, and "
        "Ctrl-C that stops the reply; on a pipe one question per line. "
        "Exit codes: 0 ok, 2 bad input or configuration, 130 interrupted.",
    )
    p.add_argument("prompt", nargs="*", help="ask this and exit")
    p.add_argument("--version", action="version", version=f"bonsai-os {__version__}")
    p.add_argument("--model", type=Path, help="a GGUF file (default: SmolLM2-135M-Instruct, carried in the bundle)")
    p.add_argument("--max-tokens", type=int, default=128, help="most tokens per reply (default 128)")
    p.add_argument("--max-positions", type=int, default=None,
                   help="positions in the context (default: the model's own context length); the oldest turns "
                        "of a longer chat are left out")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--seed", type=int, default=0, help="the sampler's seed when --temperature > 0 (default 0)")
    p.add_argument("--tools", default="calculator,clock",
                   help="comma-separated built-in tools: calculator, clock, read_file ('' for none)")
    p.add_argument("--root", type=Path, help="the one directory read_file may read (enables read_file)")
    p.add_argument("--max-steps", type=int, default=4, help="generations per question, tool steps included")
    p.add_argument("--tool-choice", choices=("auto", "required"), default="auto",
                   help="required: every question starts with a tool call (small models rarely call one unasked)")
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


def _model(args: argparse.Namespace, stop: StopFlag) -> LoadedModel:
    from .model import load_model

    path = args.model if args.model is not None else default_model()
    if not path.is_file():
        raise BonsaiError(f"{path}: no such model file")
    try:
        return load_model(path, max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed,
                          max_positions=args.max_positions, should_stop=stop,
                          on_progress=lambda msg: print(f"bonsai-os: {msg}", file=sys.stderr, flush=True))
    except ImportError as exc:
        raise BonsaiError(f"the GPU runtime cannot load here ({exc}); this bundle needs the Python version "
                          f"and platform it was built for (this is Python {sys.version.split()[0]})") from exc


def validate(args: argparse.Namespace) -> None:
    """Every option checked before the model loads: one error naming the option."""
    for name in ("max_tokens", "max_steps"):
        if getattr(args, name) < 1:
            raise BonsaiError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.max_positions is not None and args.max_positions <= args.max_tokens:
        raise BonsaiError(f"--max-positions must be more than --max-tokens ({args.max_tokens}), "
                          f"got {args.max_positions}")
    if not math.isfinite(args.temperature) or args.temperature < 0:
        raise BonsaiError(f"--temperature must be a finite number >= 0, got {args.temperature}")
    if args.root is not None and not args.root.is_dir():
        raise BonsaiError(f"--root {args.root}: no such directory")
    if args.tool_choice == "required" and (args.unconstrained or not [n for n in args.tools.split(",") if n.strip()]
                                           and args.root is None):
        raise BonsaiError("--tool-choice required needs tools (--tools) and constrained decoding (no --unconstrained)")
    if args.prompt and not " ".join(args.prompt).strip():
        raise BonsaiError("the prompt is empty: ask something, or leave it out to chat")


def run(args: argparse.Namespace, model: LoadedModel | None = None, stop: StopFlag | None = None) -> int:
    """Answer the prompt, or chat until /bye or EOF; `model` defaults to the engine (with `stop` as its stop)."""
    validate(args)
    registry = _registry(args)
    stop = stop or StopFlag()
    session = Session(model if model is not None else _model(args, stop), registry, max_steps=args.max_steps,
                      constrained=not args.unconstrained, reply_room=args.max_tokens, tool_choice=args.tool_choice)
    if args.prompt:
        answer(session, " ".join(args.prompt).strip(), stop, max_tokens=args.max_tokens)
        if session.finish in ("length", "context"):
            print(f"[reply cut: {'--max-tokens' if session.finish == 'length' else 'the context is full'}]",
                  file=sys.stderr, flush=True)
        return 0
    return repl(session, stop, max_tokens=args.max_tokens, interactive=sys.stdin.isatty())


def main(argv: list[str] | None = None) -> int:
    try:
        check_interpreter()
        args = parser().parse_args(argv)
        return run(args)
    except BonsaiError as exc:
        print(f"bonsai-os: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
