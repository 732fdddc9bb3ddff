"""A small directed graph with node and edge data, in insertion order: the closure's graph without
importing networkx (a cold `check` cannot afford its import); `to_networkx` for `why` and `graph`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class _Nodes:
    """`graph.nodes[n]` (its data), `graph.nodes(data=True)`, iteration and `len`, as networkx has them."""

    def __init__(self, data: dict[str, dict[str, Any]]) -> None:
        self._data = data

    def __getitem__(self, node: str) -> dict[str, Any]:
        return self._data[node]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __call__(self, data: bool = False) -> list[Any]:
        return list(self._data.items()) if data else list(self._data)


class _Edges:
    """`graph.edges[a, b]` (its data) and `graph.edges(data=True)`, as networkx has them."""

    def __init__(self, data: dict[tuple[str, str], dict[str, Any]]) -> None:
        self._data = data

    def __getitem__(self, edge: tuple[str, str]) -> dict[str, Any]:
        return self._data[edge]

    def __len__(self) -> int:
        return len(self._data)

    def __call__(self, data: bool = False) -> list[Any]:
        return [(a, b, d) for (a, b), d in self._data.items()] if data else list(self._data)


class DiGraph:
    """Nodes and edges with attribute dicts; adding an existing node or edge updates its data."""

    def __init__(self) -> None:
        self._node: dict[str, dict[str, Any]] = {}
        self._edge: dict[tuple[str, str], dict[str, Any]] = {}
        self.nodes = _Nodes(self._node)
        self.edges = _Edges(self._edge)

    def __contains__(self, node: object) -> bool:
        return node in self._node

    def add_node(self, node: str, **attrs: Any) -> None:
        if node not in self._node:
            self._node[node] = {}
        self._node[node].update(attrs)

    def add_edge(self, a: str, b: str, **attrs: Any) -> None:
        for node in (a, b):
            if node not in self._node:
                self.add_node(node)
        data = self._edge.get((a, b))
        if data is None:
            self._edge[(a, b)] = data = {}
        data.update(attrs)

    def has_edge(self, a: str, b: str) -> bool:
        return (a, b) in self._edge

    def to_networkx(self) -> Any:
        """The same graph as a networkx DiGraph, built in the same order (so its searches break ties alike)."""
        import networkx as nx

        graph = nx.DiGraph()
        for node, data in self._node.items():
            graph.add_node(node, **data)
        for (a, b), data in self._edge.items():
            graph.add_edge(a, b, **data)
        return graph
