"""A benchmark's own WGSL file (next to it in bench/) compiled into a `Kernel` that `Gpu.dispatch` records."""

from __future__ import annotations

from pathlib import Path

from bonsai.gpu.backend import Kernel
from bonsai.gpu.device import Gpu
from bonsai.gpu.shaders import render


def load_kernel(gpu: Gpu, filename: str, **constants: object) -> Kernel:
    """bench/`filename` with its `{{NAME}}` constants filled (strictly, as the runtime's kernels), compiled."""
    code = render((Path(__file__).parent / filename).read_text(), constants, name=filename)
    module = gpu.device.create_shader_module(label=filename, code=code)
    pipeline = gpu.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    return Kernel(filename, pipeline)
