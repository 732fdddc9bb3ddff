"""`bonsai doctor`: the GPU adapter, its memory, the default model, and a VRAM budget to start from."""

from __future__ import annotations

import click

# of the adapter's memory, what a suggested KV budget may take: the weights, activations, other programs
# (a browser's other tabs) share the rest
BUDGET_SHARE = 4


@click.command()
def doctor() -> None:
    """Show the GPU adapter, its memory, the default model, and a --vram-budget to start from."""
    from ..config import ModelConfig
    from ..gguf import GGUFReader
    from ..gpu.device import Gpu
    from ..gpu.memory import adapter_memory
    from ..kv import default_mode
    from ..kv.format.modes import get_mode
    from ..kv.layout import STREAM_WINDOW, Layout
    from ..kv.residency import human_size
    from ..models import default_model_path

    gpu = Gpu.create()
    click.echo(f"gpu:    {gpu.description}")
    memory = adapter_memory(gpu)
    click.echo(f"memory: {human_size(memory[0])} ({memory[1]})" if memory else
               "memory: not reported (WebGPU does not say, and no driver tool answered)")
    path = default_model_path()
    click.echo(f"model:  {path} ({path.stat().st_size / 1e6:.1f} MB)")
    cfg = ModelConfig.from_gguf(GGUFReader(path))
    mode = get_mode(default_mode(gpu))
    positions = cfg.context_length
    whole = cfg.n_layers * Layout(mode, cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, positions, positions).slot_bytes
    cache = f"the default model's whole KV cache at {positions:,} positions in {mode.name} is {human_size(whole)}"
    if memory is None:
        click.echo(f"budget: {cache}; with less free GPU memory than that, set --vram-budget")
        return
    share = memory[0] // BUDGET_SHARE
    if whole <= share:
        click.echo(f"budget: none needed ({cache}, under a quarter of the memory)")
        return
    slot = Layout(mode, cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, positions, STREAM_WINDOW).slot_bytes  # streams by these
    click.echo(f"budget: --vram-budget {share // slot * slot} (a quarter of the memory; {cache}: the rest "
               f"streams from host RAM)")
