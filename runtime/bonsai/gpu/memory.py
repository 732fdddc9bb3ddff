"""How much memory the GPU adapter has, where the system can tell (WebGPU itself does not say)."""

from __future__ import annotations

import glob
import shutil
import subprocess
from typing import Any


def adapter_memory(gpu: Any) -> tuple[int, str] | None:
    """(bytes, where the figure came from) for `gpu`'s memory, or None when nothing reports it.

    A CPU adapter (lavapipe, SwiftShader) uses host RAM: MemAvailable of /proc/meminfo. An NVIDIA card: the
    driver's `nvidia-smi` (total memory of the first card). An AMD card on Linux: the kernel's
    mem_info_vram_total. WebGPU exposes no memory size, so other adapters report none.
    """
    if gpu.is_cpu:
        try:
            with open("/proc/meminfo", encoding="ascii") as handle:
                for line in handle:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024, "host RAM available (/proc/meminfo; a CPU adapter)"
        except (OSError, ValueError, IndexError):
            return None
        return None
    name = gpu.description.lower()
    if "nvidia" in name and shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=10).stdout.split()
            return int(out[0]) << 20, "nvidia-smi"
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            return None
    for path in sorted(glob.glob("/sys/class/drm/card*/device/mem_info_vram_total")):
        try:
            with open(path, encoding="ascii") as handle:
                return int(handle.read().strip()), path
        except (OSError, ValueError):
            continue
    return None
