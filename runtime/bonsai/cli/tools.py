"""`bonsai tools`: list the built-ins, parse a recorded response, run one call, chat with tools."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from ..errors import BonsaiError
from ..kv import AUTO, MODE_NAMES
from ..toolcall.builtin import BUILTIN_NAMES, builtin_registry
from ..toolcall.events import TextEvent, ToolCallEvent
from ..toolcall.parser import parse_text

TOOLS_OPTION = click.option(
    "--tools",
    "tool_names",
    default="calculator,clock",
    show_default=True,
    help=f"Comma-separated built-in tools ({', '.join(BUILTIN_NAMES)}).",
)
ROOT_OPTION = click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="The only directory read_file may read.",
)


@click.group("tools")
def tools_group() -> None:
    """Tool calling: built-in tools, the streaming parser, and chat with tools."""


@tools_group.command("list")
@TOOLS_OPTION
@ROOT_OPTION
def list_tools(tool_names: str, root: Path | None) -> None:
    """Print each tool's JSON spec, one per line (what goes into the <tools> block)."""
    for spec in builtin_registry(tool_names, root).specs():
        click.echo(json.dumps(spec, ensure_ascii=False))


@tools_group.command("parse")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@TOOLS_OPTION
@ROOT_OPTION
def parse(file, tool_names: str, root: Path | None) -> None:
    """Parse a model response (FILE, or - for stdin) into events, one JSON object per line."""
    for event in parse_text(file.read(), builtin_registry(tool_names, root)):
        click.echo(
            json.dumps({"event": type(event).__name__, **dataclasses.asdict(event)}, ensure_ascii=False)
        )


@tools_group.command("call")
@click.argument("name")
@click.argument("arguments", default="{}")
@ROOT_OPTION
def call(name: str, arguments: str, root: Path | None) -> None:
    """Run one built-in tool with ARGUMENTS (a JSON object); exit 1 if the tool reports an error."""
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise BonsaiError(
            f"ARGUMENTS is not valid JSON ({exc.msg} at char {exc.pos}): {arguments!r}"
        ) from None
    result = builtin_registry([name], root).run("call_0", name, args)
    click.echo(result.content)
    if not result.ok:
        raise SystemExit(1)


def show_step(step) -> None:
    """Print a loop step's calls, malformed calls and results (the streamed text is already out)."""
    click.echo("")
    for event in step.events:
        if isinstance(event, ToolCallEvent):
            click.echo(f"[step {step.index}] call {event.id}: {event.name}({json.dumps(event.arguments)})")
        elif not isinstance(event, TextEvent):
            click.echo(f"[step {step.index}] malformed call {event.id}: {event.message}")
    for result in step.results:
        click.echo(f"[step {step.index}] result {result.id}: {result.content}")


def with_tools_option(command: click.Command) -> click.Command:
    """Give `bonsai chat` a `--tools NAMES` option: with it, every turn runs through the tool loop
    (constrained decoding on); without it, the command is unchanged."""
    original = command.callback
    assert original is not None
    command.params.append(
        click.Option(
            ["--tools", "tool_names"], default=None, help="Built-in tools to offer, e.g. calculator,clock."
        )
    )
    command.params.append(
        click.Option(
            ["--root"],
            type=click.Path(file_okay=False, exists=True, path_type=Path),
            default=None,
            help="The only directory read_file may read (with --tools read_file).",
        )
    )

    command.params.append(
        click.Option(["--tool-choice"], type=click.Choice(["auto", "required"]), default="auto", show_default=True,
                     help="required: each answer must begin with a tool call (small models rarely call unasked).")
    )  # fmt: skip

    command.params.append(
        click.Option(["--parallel-calls/--no-parallel-calls"], default=True, show_default=True,
                     help="Allow several tool calls in one reply.")
    )  # fmt: skip

    def callback(
        tool_names: str | None, root: Path | None, tool_choice: str, parallel_calls: bool, **options
    ):
        if not tool_names:
            return original(**options)
        registry = builtin_registry(tool_names, root)
        return interactive_tool_chat(
            registry, tool_choice=tool_choice, parallel_calls=parallel_calls, **options
        )

    command.callback = callback
    return command


def interactive_tool_chat(registry, *, tool_choice="auto", parallel_calls=True, model, kv, window, vram_budget, max_positions, max_tokens, temperature,
                          top_k, top_p, seed, system) -> None:  # fmt: skip
    """`bonsai chat --tools ...`: read a line, answer it through the tool loop, until an empty line."""
    import sys

    from ..engine import Sampling
    from ..tokenizer.chat_template import ChatTemplate
    from ..toolcall.engine_generate import engine_generate
    from ..toolcall.loop import ToolLoop
    from ..toolcall.prompt import ToolPrompt
    from .options import load_engine

    engine = load_engine(model, kv, window, vram_budget, max_positions)
    prompt = ToolPrompt.from_chat_template(ChatTemplate.from_gguf(engine.reader, engine.tokenizer))
    sampling = Sampling(temperature, top_k, top_p, seed)
    loop = ToolLoop(engine_generate(engine, max_tokens, sampling), engine.tokenizer, registry, prompt,
                    tool_choice=tool_choice, parallel_calls=parallel_calls,
                    on_text=lambda piece: click.echo(piece, nl=False),
                    on_step=show_step)  # fmt: skip
    messages: list[dict] = [{"role": "system", "content": system}] if system else []
    while True:
        click.echo(">>> ", nl=False, err=True)
        line = sys.stdin.readline()
        if not line or line.strip() in ("", "/exit"):
            return
        result = loop.run([*messages, {"role": "user", "content": line.rstrip("\n")}])
        messages = result.messages
        click.echo(f"answer: {result.answer}" if result.finished else "[no answer within the step limit]")


@tools_group.command("chat")
@click.argument("message")
@TOOLS_OPTION
@ROOT_OPTION
@click.option("--model", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None)
@click.option("--max-steps", default=4, show_default=True, help="Generations before giving up.")
@click.option("--max-tokens", default=128, show_default=True, help="New tokens per generation.")
@click.option("--required", is_flag=True, help="The first reply must be a tool call.")
@click.option("--unconstrained", is_flag=True, help="Do not mask logits inside <tool_call> (parse only).")
@click.option(
    "--parallel-calls/--no-parallel-calls",
    default=True,
    show_default=True,
    help="Allow several calls in one reply (constrained only).",
)
@click.option("--kv", type=click.Choice((AUTO, *MODE_NAMES)), default=AUTO, show_default=True,
              help="KV cache mode (as `bonsai run`).")
def chat(
    message: str,
    tool_names: str,
    root: Path | None,
    model: Path | None,
    max_steps: int,
    max_tokens: int,
    required: bool,
    unconstrained: bool,
    parallel_calls: bool,
    kv: str,
) -> None:
    """Answer MESSAGE with the model, calling tools as needed; every step is printed."""
    from ..engine.native import load_engine
    from ..tokenizer.chat_template import ChatTemplate
    from ..toolcall.engine_generate import engine_generate
    from ..toolcall.loop import ToolLoop
    from ..toolcall.prompt import ToolPrompt

    registry = builtin_registry(tool_names, root)
    engine = load_engine(model, kv=kv, progress=False)
    prompt = ToolPrompt.from_chat_template(ChatTemplate.from_gguf(engine.reader, engine.tokenizer))

    loop = ToolLoop(
        engine_generate(engine, max_tokens=max_tokens),
        engine.tokenizer,
        registry,
        prompt,
        max_steps,
        constrained=not unconstrained,
        tool_choice="required" if required else "auto",
        parallel_calls=parallel_calls,
        on_text=lambda piece: click.echo(piece, nl=False),
        on_step=show_step,
    )
    result = loop.run(message)
    if not result.finished:
        raise BonsaiError(f"no final answer within {max_steps} steps (raise --max-steps)")
    click.echo(f"answer: {result.answer}")
