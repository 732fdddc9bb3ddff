"""bonsai_sync's modules import one way: a step never imports the workspace that composes it, and
the tree digest never imports the stat memo that feeds it (grimp reads every import, lazy or typing-only)."""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp")


@pytest.mark.parametrize(("lower", "upper"), [
    ("bonsai_sync.freshness", "bonsai_sync.pipeline"),
    ("bonsai_sync.digest", "bonsai_sync.statmemo"),
])
def test_a_lower_module_never_reaches_the_one_above_it(lower, upper):
    graph = grimp.build_graph("bonsai_sync")
    assert graph.find_shortest_chain(importer=upper, imported=lower) is not None  # the way it is meant to go
    assert graph.find_shortest_chain(importer=lower, imported=upper) is None
