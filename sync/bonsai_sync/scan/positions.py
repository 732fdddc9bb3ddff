"""Line and column of a few chosen libcst nodes, from one early-stopping pass of libcst's codegen."""

from __future__ import annotations

from typing import Any

from libcst import Module
from libcst._nodes.internal import CodegenState


class _Done(Exception):
    """Every wanted node has its position; stop generating code."""


class _Locator(CodegenState):
    """A codegen state that notes where wanted nodes start, without tracking every node
    (libcst's PositionProvider does that and costs more than parsing)."""

    def setup(self, wanted: set[int]) -> None:
        self.wanted = wanted
        self.found: dict[int, tuple[int, int]] = {}
        self.done = 0
        self.line = 1
        self.col = 1

    def before_codegen(self, node: Any) -> None:
        key = id(node)
        if key not in self.wanted or key in self.found:
            return
        text = "".join(self.tokens[self.done :])
        self.done = len(self.tokens)
        newlines = text.count("\n")
        if newlines:
            self.line += newlines
            self.col = len(text) - text.rfind("\n")
        else:
            self.col += len(text)
        self.found[key] = (self.line, self.col)
        if len(self.found) == len(self.wanted):
            raise _Done


def locate(module: Module, nodes: list[Any]) -> dict[int, tuple[int, int]]:
    """`id(node) -> (line, col)`, both 1-based, for each node in `nodes` (nodes of `module`)."""
    if not nodes:
        return {}
    state = _Locator(default_indent=module.default_indent, default_newline=module.default_newline)
    state.setup({id(n) for n in nodes})
    try:
        module._codegen(state)
    except _Done:
        pass
    return state.found
