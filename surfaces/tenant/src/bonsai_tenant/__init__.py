"""bonsai_tenant: the stable API tenant products embed — Assistant, tools, and the OpenAI-compatible server."""

from ._vendor.bonsai.toolcall import Tool, tool
from .assistant import Assistant, Chunk, Reply
from .errors import ApiError, ConfigError, TenantError, ToolError
from .events import Backend, Finish, TextDelta, ToolCall

__version__ = "0.1.0"

__all__ = [
    "ApiError", "Assistant", "Backend", "Chunk", "ConfigError", "Finish", "Reply", "TenantError",
    "TextDelta", "Tool", "ToolCall", "ToolError", "__version__", "tool",
]
