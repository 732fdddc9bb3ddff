"""The interactive chat: line editing and history, slash commands, and Ctrl-C that stops only the reply."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable
from typing import Any, TextIO

from ._vendor.bonsai.errors import BonsaiError
from ._vendor.bonsai.toolcall.engine_generate import GenerationStopped
from .session import Session, ToolUse

HELP = ("/clear  forget the conversation    /tools  list the tools    /bye  leave (or Ctrl-D)\n"
        "Ctrl-C stops a reply and keeps the chat; at the prompt it clears the line.")


class StopFlag:
    """Set by Ctrl-C while a reply is generated; the generate function asks it between steps."""

    def __init__(self) -> None:
        self.raised = False

    def __call__(self) -> bool:
        return self.raised


def print_tool(use: ToolUse, err: TextIO) -> None:
    print(f"[{use.name}({json.dumps(use.arguments)}) -> {use.result}]", file=err, flush=True)


def _notices(session: Session, seen_drop: bool, max_tokens: int, err: TextIO) -> bool:
    finish = session.finish
    if finish == "length":
        print(f"[reply cut at {max_tokens} tokens: raise --max-tokens]", file=err, flush=True)
    elif finish == "context":
        print("[reply cut: the context is full (raise --max-positions, or /clear)]", file=err, flush=True)
    if session.dropped_turns and not seen_drop:
        print(f"[the conversation outgrew the context ({session.model.max_positions} positions): its oldest "
              f"turns are left out from now on; /clear starts afresh]", file=err, flush=True)
        return True
    return seen_drop


def answer(session: Session, question: str, stop: StopFlag, *, max_tokens: int,
           out: TextIO | None = None, err: TextIO | None = None) -> None:
    """One question, streamed to `out` (stdout). A first SIGINT during the reply stops it between two steps
    (the chat goes on, its history as before the question); a second one raises KeyboardInterrupt."""
    out, err = out or sys.stdout, err or sys.stderr
    def on_sigint(_signum: int, _frame: Any) -> None:
        if stop.raised:
            raise KeyboardInterrupt
        stop.raised = True

    stop.raised = False
    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        session.ask(question, on_text=lambda t: print(t, end="", flush=True, file=out),
                    on_tool=lambda use: print_tool(use, err))
        print(file=out, flush=True)
    except GenerationStopped:
        print(file=out, flush=True)
        print("[stopped]", file=err, flush=True)
    finally:
        signal.signal(signal.SIGINT, previous)
        stop.raised = False


def repl(session: Session, stop: StopFlag, *, max_tokens: int, interactive: bool,
         read: Callable[[str], str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Questions until /bye, EOF (Ctrl-D) or "exit"; the exit code (0). `out`/`err`: stdout/stderr."""
    out, err = out or sys.stdout, err or sys.stderr
    if interactive:
        try:
            import readline  # noqa: F401  (line editing and history for input())
        except ImportError:  # pragma: no cover - Python built without readline
            pass
        print(f"bonsai-os chat. {HELP}", file=err, flush=True)
    ask = read or (input if interactive else _read_line)
    seen_drop = False
    while True:
        try:
            line = ask("> " if interactive else "").strip()
        except EOFError:
            if interactive:
                print(file=out)
            return 0
        except KeyboardInterrupt:
            if not interactive:
                raise
            print("\n(Ctrl-D or /bye to leave)", file=err, flush=True)
            continue
        if line in ("/bye", "exit", "quit"):
            return 0
        if line in ("/help", "/?"):
            print(HELP, file=err, flush=True)
        elif line == "/clear":
            session.clear()
            print("[conversation cleared]", file=err, flush=True)
        elif line == "/tools":
            names = [spec["function"]["name"] for spec in session.registry.specs()]
            print("tools: " + (", ".join(names) if names else "none (--tools)"), file=err, flush=True)
        elif line.startswith("/"):
            print(f"unknown command {line.split()[0]}; /help lists them", file=err, flush=True)
        elif line:
            try:
                answer(session, line, stop, max_tokens=max_tokens, out=out, err=err)
                seen_drop = _notices(session, seen_drop, max_tokens, err)
            except BonsaiError as exc:  # one bad question does not end the chat
                print(f"bonsai-os: error: {exc}", file=err, flush=True)


def _read_line(_prompt: str) -> str:
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line
