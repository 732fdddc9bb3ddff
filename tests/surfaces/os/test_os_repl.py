"""The chat on a real terminal (a pty): Ctrl-C stops only the reply, the slash commands, Ctrl-D and /bye."""

from __future__ import annotations

import os
import pty
import select
import sys
import time
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "surfaces" / "os" / "src"
SCRIPT = """
import sys
from bonsai_os._vendor.bonsai.toolcall import builtin_registry
from bonsai_os.repl import StopFlag, repl
from bonsai_os.session import Session
from slow_model import slow_model
stop = StopFlag()
session = Session(slow_model(stop), builtin_registry("calculator"), constrained=False)
sys.exit(repl(session, stop, max_tokens=64, interactive=True))
"""


class Terminal:
    """The child's terminal: what it printed so far, and keys typed into it."""

    def __init__(self, fd: int) -> None:
        self.fd, self.seen = fd, ""

    def expect(self, text: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} did not appear; the terminal shows:\n{self.seen}")
            if select.select([self.fd], [], [], left)[0]:
                try:
                    self.seen += os.read(self.fd, 4096).decode(errors="replace")
                except OSError:  # the child closed the terminal
                    break
        assert text in self.seen, self.seen
        self.seen = self.seen[self.seen.index(text) + len(text):]

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())


@contextmanager
def chat_on_a_pty():
    """The chat in a child process whose controlling terminal is a pty: (its pid, the Terminal)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)]), "TERM": "dumb"}
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-c", SCRIPT], env)
    try:
        yield pid, Terminal(fd)
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.close(fd)


def exit_code(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_ctrl_c_stops_the_reply_and_the_chat_goes_on_with_its_history():
    with chat_on_a_pty() as (pid, term):
        term.expect("> ")
        term.type("hello\r")
        term.expect("turns=1")
        term.type("slow\r")
        term.expect("xxxxx")
        term.type("\x03")  # Ctrl-C while the reply streams
        term.expect("[stopped]")
        term.type("again\r")
        term.expect("turns=2")  # hello and again: the stopped turn is not in the history
        term.type("/tools\r")
        term.expect("tools: calculator")
        term.type("/clear\r")
        term.expect("[conversation cleared]")
        term.type("fresh\r")
        term.expect("turns=1")
        term.type("/bye\r")
        assert exit_code(pid) == 0


def test_ctrl_d_leaves_with_exit_0():
    with chat_on_a_pty() as (pid, term):
        term.expect("> ")
        term.type("\x04")
        assert exit_code(pid) == 0


def test_ctrl_c_at_the_prompt_clears_the_line_and_the_chat_stays():
    import io

    from bonsai_os._vendor.bonsai.toolcall import ToolRegistry
    from bonsai_os.repl import StopFlag, repl
    from bonsai_os.session import Session
    from slow_model import slow_model

    keys = iter(["hello", KeyboardInterrupt, "again", "/bye"])

    def read(prompt: str) -> str:
        key = next(keys)
        if key is KeyboardInterrupt:
            raise KeyboardInterrupt
        return key

    stop = StopFlag()
    out, err = io.StringIO(), io.StringIO()
    code = repl(Session(slow_model(stop), ToolRegistry(), constrained=False), stop, max_tokens=64, interactive=True,
                read=read, out=out, err=err)
    assert code == 0 and out.getvalue().splitlines() == ["turns=1", "turns=2"]
    assert "(Ctrl-D or /bye to leave)" in err.getvalue()
