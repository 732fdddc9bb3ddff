"""GPU access for the runtime: backends (`device.Gpu` native, `browser.BrowserGpu` in Pyodide) and shaders.

This package imports nothing eagerly: the browser surface's closure reaches `bonsai.gpu.browser` and
`bonsai.gpu.shaders` through this `__init__`, and must not pull in wgpu. Import the backend you need
from its module (`from bonsai.gpu.device import Gpu`).
"""
