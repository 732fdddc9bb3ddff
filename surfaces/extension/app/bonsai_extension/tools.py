"""The tools the chat panel offers: the runtime's calculator and clock, and `read_page` (the active tab's text)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bonsai.toolcall import Tool, ToolRegistry, builtin_tool, tool
from bonsai.toolcall.errors import ToolDefinitionError

PANEL_TOOLS = ("calculator", "clock", "read_page")
MAX_PAGE_CHARS = 3000  # a page's text beyond this is cut (the model's context is small)


def make_read_page(read_tab: Callable[[], dict]) -> Tool:
    """The `read_page` tool over `read_tab()`: {"url", "title", "text"} of the active tab, or it raises."""

    def read_page() -> str:
        """Read the text of the web page open in the browser's current tab."""
        page = read_tab()
        lines = (" ".join(line.split()) for line in str(page.get("text", "")).splitlines())
        text = "\n".join(line for line in lines if line)
        if len(text) > MAX_PAGE_CHARS:
            text = text[:MAX_PAGE_CHARS] + f" [... {len(text) - MAX_PAGE_CHARS} more characters]"
        return f"{page.get('title', '')} ({page.get('url', '')})\n{text}"

    return tool(read_page)


def registry_for(names: Sequence[str], read_tab: Callable[[], dict]) -> ToolRegistry:
    """A registry of the named panel tools, in PANEL_TOOLS order; unknown names are errors naming them."""
    unknown = sorted(set(names) - set(PANEL_TOOLS))
    if unknown:
        raise ToolDefinitionError(f"unknown tool(s) {', '.join(unknown)}; the panel offers {', '.join(PANEL_TOOLS)}")
    return ToolRegistry(make_read_page(read_tab) if name == "read_page" else builtin_tool(name)
                        for name in PANEL_TOOLS if name in names)
