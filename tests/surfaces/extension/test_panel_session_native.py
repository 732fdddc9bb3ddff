"""The chat panel's Python (app/bonsai_extension) on the native GPU with a tiny model: the same calls as `bonsai`.

A turn must produce what the native commands produce from the same conversation: a plain turn what
`bonsai run --chat` does (its own helpers are the oracle), a turn with tools what the runtime's
ToolLoop over `engine_generate` does on a fresh engine; the warm-up that compiles the shaders must
not change either. Stop, new chat and the read_page tool are pinned here too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bonsai.config import ModelConfig
from bonsai.engine import Engine, Sampling
from bonsai.gguf import GGUFReader
from bonsai.tokenizer.chat_template import ChatTemplate
from bonsai.toolcall.engine_generate import engine_generate
from bonsai.toolcall.loop import ToolLoop
from bonsai.toolcall.prompt import ToolPrompt

APP = Path(__file__).resolve().parents[3] / "surfaces" / "extension" / "app"
PAGE = {"url": "http://example.test/a", "title": "A page", "text": "First line.\n\n  Second   line. "}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from tests.helpers.synthetic import write_tiny_gguf

    # head_dim 64: every KV mode (q4res groups K by 64 channels) runs on it; an output matrix of its own:
    # with tied embeddings a random model only repeats its last token, whatever came before
    return write_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny.gguf", "llama", dim=128, n_heads=2, n_kv_heads=1,
                           head_dim=64, ffn_dim=256, context_length=2048, tied=False)


@pytest.fixture
def app(monkeypatch):
    monkeypatch.syspath_prepend(str(APP))
    from bonsai_extension import session, tools

    return session, tools


def _engine(gpu, path: Path, kv: str = "f32") -> Engine:
    reader = GGUFReader(path)
    return Engine(reader, ModelConfig.from_gguf(reader), gpu, kv=kv, progress=False, max_positions=2048)


def _session(app, engine, stop_after: int | None = None, read_tab=lambda: PAGE):
    session_mod, _ = app
    events: list[tuple[str, dict]] = []
    count = iter(range(1 << 30))

    def should_stop() -> bool:
        return stop_after is not None and next(count) + 1 >= stop_after

    return session_mod.Session(engine, emit=lambda kind, data: events.append((kind, data)), should_stop=should_stop,
                               read_tab=read_tab), events


def _plain_turn_mismatch(gpu, tiny, app, kv: str) -> list[str]:
    """What differs between the panel's plain turn (after the warm-up) and `bonsai run --chat`'s steps."""
    from bonsai.cli.run import _chat_ids, _stop_ids  # the native command's own steps: the oracle

    settings = app[0].Settings(max_new_tokens=6, tools=())
    session, events = _session(app, _engine(gpu, tiny, kv))
    assert session.warm_up(settings) >= 2  # the system turn was prefilled (batched and one-token kernels)
    turn = session.send("The capital of France is", settings)
    native = _engine(gpu, tiny, kv)
    ids = _chat_ids(native, [{"role": "user", "content": "The capital of France is"}])
    gen = native.generate(ids, max_tokens=6, sampling=Sampling(), stop_ids=_stop_ids(native),
                          decode=native.tokenizer.decode)
    checks = {"prompt_ids": turn["prompt_ids"] == ids, "tokens": turn["tokens"] == gen.tokens,
              "text": turn["text"] == gen.text,
              "streamed": "".join(d["text"] for k, d in events if k == "token") == gen.text,
              "remembered": session.messages[-1] == {"role": "assistant", "content": gen.text}}
    return [name for name, ok in checks.items() if not ok]


@pytest.mark.parametrize("kv", ["f32", "q4res"])
def test_a_plain_turn_after_the_warm_up_is_what_bonsai_run_chat_generates(gpu, tiny, app, kv):
    assert _plain_turn_mismatch(gpu, tiny, app, kv) == []


def test_the_plain_turn_comparison_catches_a_prompt_rendered_unlike_bonsai_run(gpu, tiny, app, monkeypatch):
    """Mutation: the template's special tokens encoded as plain text (allow_special forgotten)."""

    def as_text(self, messages, settings):
        return self.engine.tokenizer.encode(self.template.render(messages), allow_special=False)

    monkeypatch.setattr(app[0].Session, "prompt_ids", as_text)
    assert "prompt_ids" in _plain_turn_mismatch(gpu, tiny, app, "f32")


def test_a_turn_with_tools_is_the_runtime_tool_loop(gpu, tiny, app):
    settings = app[0].Settings(max_new_tokens=40, tools=("read_page", "calculator"), tool_choice="required")
    session, events = _session(app, _engine(gpu, tiny))
    session.warm_up(settings)
    turn = session.send("What does this page say?", settings)

    native = _engine(gpu, tiny)
    registry = app[1].registry_for(["read_page", "calculator"], lambda: PAGE)
    recorded: list[list[int]] = []
    generate = engine_generate(native, 40)
    loop = ToolLoop(lambda ids, proc, on: recorded.append(generate(ids, proc, on)) or recorded[-1],
                    native.tokenizer, registry, ToolPrompt.from_chat_template(ChatTemplate.from_gguf(native.reader,
                                                                                                     native.tokenizer)),
                    tool_choice="required", parallel_calls=False)
    result = loop.run("What does this page say?")
    assert turn["step_tokens"] == recorded and turn["answer"] == result.answer, (turn, recorded)
    first = turn["steps"][0]
    assert first["calls"] and first["results"], turn  # required: the first reply is a call, and it ran
    assert [s for k, s in events if k == "step"] == turn["steps"]  # every step was shown as it finished


def test_the_read_page_tool_returns_the_tabs_text_and_names_refusals(app):
    _, tools = app
    registry = tools.registry_for(["read_page"], lambda: PAGE)
    result = registry.run("c0", "read_page", {})
    assert result.ok and result.content == "A page (http://example.test/a)\nFirst line.\nSecond line.", result

    long = {**PAGE, "text": "x" * (tools.MAX_PAGE_CHARS + 10)}
    cut = tools.registry_for(["read_page"], lambda: long).run("c1", "read_page", {}).content
    assert cut == f"A page (http://example.test/a)\n{'x' * tools.MAX_PAGE_CHARS} [... 10 more characters]"

    def refuse() -> dict:
        from bonsai.toolcall.errors import ToolExecutionError

        raise ToolExecutionError("Bonsai may not read this tab")

    refused = tools.registry_for(["read_page"], refuse).run("c2", "read_page", {})
    assert not refused.ok and refused.content == "error: Bonsai may not read this tab", refused


def test_an_unknown_tool_is_named(app):
    from bonsai.toolcall.errors import ToolDefinitionError

    with pytest.raises(ToolDefinitionError, match="unknown tool.*web_search.*calculator, clock, read_page"):
        app[1].registry_for(["calculator", "web_search"], lambda: PAGE)


def test_stop_ends_the_turn_with_what_was_generated(gpu, tiny, app):
    settings = app[0].Settings(max_new_tokens=20)
    session, events = _session(app, _engine(gpu, tiny), stop_after=4)  # a check before the prompt's one batch
    turn = session.send("Hello", settings)
    assert turn["stop_reason"] == "stopped" and len(turn["tokens"]) == 3, turn
    assert session.messages == [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": turn["text"]}]


def test_new_chat_forgets_the_conversation(gpu, tiny, app):
    settings = app[0].Settings(max_new_tokens=2)
    session, _ = _session(app, _engine(gpu, tiny))
    first = session.send("Hello", settings)
    second = session.send("Again", settings)
    assert len(second["prompt_ids"]) > len(first["prompt_ids"])  # the second prompt carries the first turn
    session.new_chat()
    fresh = session.send("Again", settings)
    assert fresh["prompt_ids"] == session.prompt_ids([{"role": "user", "content": "Again"}], settings)
    assert len(fresh["prompt_ids"]) < len(second["prompt_ids"])


LONG = "Tell me everything about " + " and ".join(f"the city number {i}" for i in range(12)) + "."


def _batched(gpu, path: Path, kv: str, batch: int) -> Engine:
    reader = GGUFReader(path)
    return Engine(reader, ModelConfig.from_gguf(reader), gpu, kv=kv, progress=False, max_positions=2048, batch=batch)


def test_stop_is_seen_between_prompt_batches_before_any_token(gpu, tiny, app):
    """Stop pressed while the prompt is read: the turn ends after the batch in flight, with no token."""
    settings = app[0].Settings(max_new_tokens=20)
    engine = _batched(gpu, tiny, "f32", 8)
    session, _ = _session(app, engine, stop_after=2)  # the second check: after the prompt's first batch
    turn = session.send(LONG, settings)
    assert len(turn["prompt_ids"]) > 3 * 8, turn  # several batches to stop between
    assert turn["stop_reason"] == "stopped" and turn["tokens"] == [] and engine.pos == 8, (turn, engine.pos)


def test_reading_the_prompt_reports_each_batch(gpu, tiny, app):
    settings = app[0].Settings(max_new_tokens=2)
    session_mod, _ = app
    reports: list[tuple[str, float, str]] = []
    session = session_mod.Session(_batched(gpu, tiny, "f32", 8), emit=lambda kind, data: None,
                                  should_stop=lambda: False, read_tab=lambda: PAGE,
                                  progress=lambda *args: reports.append(args))
    turn = session.send(LONG, settings)
    total = len(turn["prompt_ids"])
    done = [int(detail.split(": ")[1].split(" of ")[0]) for _, _, detail in reports]
    assert {phase for phase, _, _ in reports} == {"prompt"}, reports
    assert done == list(range(0, (total - 1) // 8 * 8 + 1, 8)), (done, total)  # every batch before the last
    assert reports[-1][2] == f"Reading the prompt: {done[-1]} of {total} tokens", reports[-1]


@pytest.mark.parametrize("kv", ["f32", "q4res"])
def test_a_prompt_read_batch_by_batch_generates_what_one_prefill_does(gpu, tiny, app, kv):
    """The batches fed ahead (to stop and report between them) keep the engine's boundaries: same tokens."""
    from bonsai.cli.run import _chat_ids, _stop_ids

    settings = app[0].Settings(max_new_tokens=6)
    session, _ = _session(app, _batched(gpu, tiny, kv, 8))
    turn = session.send(LONG, settings)
    native = _batched(gpu, tiny, kv, 8)
    ids = _chat_ids(native, [{"role": "user", "content": LONG}])
    gen = native.generate(ids, max_tokens=6, sampling=Sampling(), stop_ids=_stop_ids(native),
                          decode=native.tokenizer.decode)
    assert turn["prompt_ids"] == ids and len(ids) > 3 * 8 and turn["tokens"] == gen.tokens, (turn, gen)


def _scripted_tool_turn(gpu, tiny, app, monkeypatch, answer_tokens: int, limit: int) -> dict:
    """A tool turn whose model answers (no call) with `answer_tokens` tokens under a limit of `limit`."""
    session_mod, _ = app
    session, _ = _session(app, _engine(gpu, tiny))
    word = session.engine.tokenizer.encode("the", allow_special=False)[0]

    def scripted(engine, max_tokens, sampling):
        def generate(prompt_ids, processor, on_token):
            out = [word] * min(answer_tokens, max_tokens)
            for tok in out:
                on_token(tok)
            return out

        return generate

    monkeypatch.setattr(session_mod, "engine_generate", scripted)
    return session.send("Hi", session_mod.Settings(max_new_tokens=limit, tools=("calculator",)))


def test_a_tool_turn_cut_at_the_token_limit_says_so(gpu, tiny, app, monkeypatch):
    cut = _scripted_tool_turn(gpu, tiny, app, monkeypatch, answer_tokens=60, limit=6)
    assert cut["finished"] and len(cut["step_tokens"][-1]) == 6 and cut["stop_reason"] == "length", cut
    whole = _scripted_tool_turn(gpu, tiny, app, monkeypatch, answer_tokens=3, limit=6)
    assert whole["finished"] and whole["stop_reason"] == "answer", whole


def test_a_stopped_tool_turn_keeps_the_steps_it_finished(gpu, tiny, app):
    settings = app[0].Settings(max_new_tokens=40, tools=("read_page",), tool_choice="required")
    full, _ = _session(app, _engine(gpu, tiny))
    done = full.send("What does this page say?", settings)
    assert done["steps"] and len(done["step_tokens"]) >= 2, done  # a call, then another generation
    events: list[tuple[str, dict]] = []
    # stop as soon as the first step was shown: the second generation ends at once, the first step is kept
    session = app[0].Session(_engine(gpu, tiny), emit=lambda kind, data: events.append((kind, data)),
                             should_stop=lambda: any(kind == "step" for kind, _ in events), read_tab=lambda: PAGE)
    stopped = session.send("What does this page say?", settings)
    assert stopped["stop_reason"] == "stopped" and stopped["steps"] == done["steps"][:1], stopped
