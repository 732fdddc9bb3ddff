"""A stand-in model for the REPL tests: one character a token, slow on request, and it asks `should_stop`."""

from __future__ import annotations

import time

from bonsai_os._vendor.bonsai.toolcall.engine_generate import GenerationStopped
from bonsai_os._vendor.bonsai.toolcall.prompt import ToolPrompt
from bonsai_os.model import LoadedModel
from test_os_session import CharTokenizer, render


class SlowScripted:
    """Answers "slow" with a long reply, a token every 20 ms; anything else with the user turns it was shown."""

    def __init__(self, should_stop) -> None:
        self.should_stop = should_stop
        self.finish: str | None = None

    def __call__(self, prompt_ids, processor, on_token):
        prompt = "".join(map(chr, prompt_ids))
        last = prompt.rsplit("<user>", 1)[-1].removesuffix("<assistant>")
        reply = "x" * 500 if last == "slow" else f"turns={prompt.count('<user>')}"
        out = []
        for ch in reply:
            if self.should_stop():
                self.finish = "stopped"
                raise GenerationStopped("generation stopped")
            if last == "slow":
                time.sleep(0.02)
            on_token(ord(ch))
            out.append(ord(ch))
        self.finish = "stop"
        return out


def slow_model(should_stop) -> LoadedModel:
    return LoadedModel(SlowScripted(should_stop), CharTokenizer(), ToolPrompt(render, ""), None)
