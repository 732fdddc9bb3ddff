"""The runtime's one base exception and its direct subclasses."""


class BonsaiError(Exception):
    """Base of every error the runtime raises on purpose; the CLI prints these without a traceback."""


class GpuUnavailableError(BonsaiError):
    """No wgpu adapter could be found (install a Vulkan driver, e.g. mesa-vulkan-drivers)."""


class DeviceLostError(BonsaiError):
    """The GPU device was lost mid-work; the engine rebuilds it from host state."""


class ShaderError(BonsaiError):
    """A WGSL kernel could not be loaded, templated or compiled; names the shader."""


class GpuLimitError(BonsaiError):
    """Work would exceed a limit the adapter reports (binding size, buffer size, workgroups); names it."""
