"""GPU access for the runtime: one small seam (`Gpu`) the rest of the code talks to."""

from .device import Gpu, Kernel

__all__ = ["Gpu", "Kernel"]
