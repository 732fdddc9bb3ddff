"""What `bonsai run` tells about a VRAM budget: the cache's size, what stays on the GPU, what a step streams."""

from __future__ import annotations

from bonsai.kv.format.modes import get_mode
from bonsai.kv.layout import Layout
from bonsai.kv.residency import Residency
from bonsai.kv.slots import Slots


def layout(mode="f32"):
    return Layout(get_mode(mode), n_layers=2, n_kv=1, head_dim=64, max_positions=512, window=64)


def test_without_a_budget_everything_is_resident_and_nothing_streams():
    lay = layout()
    r = Residency.of(lay, Slots.count(lay, None))
    assert (r.windows, r.slots, r.streamed_per_token) == (16, 16, 0)
    assert r.total_bytes == r.resident_bytes == 16 * lay.slot_bytes == 2 * 512 * 2 * 64 * 4
    assert "\n" not in r.describe() and "16 of 16 windows" in r.describe()


def test_a_budget_keeps_all_slots_but_one_and_streams_the_rest_each_step():
    lay = layout("q4res")
    r = Residency.of(lay, Slots.count(lay, 4 * lay.slot_bytes + 100))
    assert r.slots == 4 and r.streamed_per_token == (16 - 4 + 1) * lay.slot_bytes
    line, warning = r.describe().splitlines()
    assert "4 of 16 windows of 64 positions" in line and "(q4res)" in line
    assert warning.startswith("warning: a decode step at full context streams")
    assert f"--vram-budget {16 * lay.slot_bytes} keeps the whole cache" in warning
