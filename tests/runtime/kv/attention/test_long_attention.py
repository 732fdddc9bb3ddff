"""Attention over caches of several default-size windows at the real model's shapes (9/3 heads, hd 64).

Regression for wrong tokens past ~500 positions on lavapipe: Mesa's llvmpipe ends every loop of a
shader invocation once 65535 iterations have run in all of them together, silently. The serial fold
then ran 2 * head_dim + 2 iterations per position, so one dispatch over a 2,048-position window
stopped folding after ~500 positions. The driver now cuts windows into pieces of `Attention.max_span`
positions (bonsai.kv.attention.driver.LOOP_BUDGET); the invariant keeps the pieces bit-identical to one fold.
"""

from __future__ import annotations

import pytest

from bonsai.diagnostics.exactness import Case, long_cases, run_case, run_long
from bonsai.gpu.probe import loop_cap
from bonsai.kv.attention.driver import LOOP_BUDGET, Attention


@pytest.mark.parametrize("mode", ["f32", "q4res"])
def test_long_caches_are_exact_with_the_serial_kernel(gpu, mode):
    results = run_long(gpu, long_cases(modes=(mode,)), variant="serial")
    bad = [r.describe() for r in results if not r.ok]
    assert len(results) == 2 and not bad, "\n".join(bad)


def test_long_caches_are_exact_with_the_blocks_kernel(gpu):
    results = run_long(gpu, long_cases(modes=("q4",), prefill=4), variant="blocks")
    bad = [r.describe() for r in results if not r.ok]
    assert len(results) == 2 and not bad, "\n".join(bad)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["serial", "blocks"])
def test_long_caches_every_mode(gpu, variant):
    from bonsai.kv.format.modes import MODES

    results = run_long(gpu, long_cases(modes=tuple(MODES)), variant=variant)
    bad = [r.describe() for r in results if not r.ok]
    assert not bad, "\n".join(bad)


def test_lavapipe_caps_loops_and_the_budget_is_that_cap(gpu):
    cap = loop_cap(gpu)
    if "llvmpipe" not in gpu.description:
        pytest.skip(f"not lavapipe ({gpu.description}): loop cap {cap}")
    # Mesa 22.3 (Debian 12, CI) caps; later Mesa releases dropped the cap
    assert cap in (None, LOOP_BUDGET)


def test_without_cutting_folds_a_loop_capped_driver_gets_long_caches_wrong(gpu, monkeypatch):
    """Mutation: one dispatch per window again (the bug). Seen only on a driver that caps loops."""
    if loop_cap(gpu) is None:
        pytest.skip(f"{gpu.description} does not cap loops: the bug cannot show here")
    monkeypatch.setattr(Attention, "max_span", lambda self, n_q: 1 << 30)
    # past the cap even if the compiler unrolls the loops over head_dim: 70,000 trips of the position loop
    result = run_case(gpu, Case(9, 3, 64, "f32", 70_000, 1), [70_000], variant="serial")
    assert not result.ok and result.rel_err > 0.1, result.describe()


@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_a_serial_fold_of_max_span_positions_stays_under_the_measured_cap(gpu, head_dim):
    cap = loop_cap(gpu) or LOOP_BUDGET
    att = Attention(gpu, 2, 1, head_dim, "f32", variant="serial")
    span = att.max_span(1)
    assert (head_dim // 2 + 2) * span + head_dim <= cap
    result = run_case(gpu, Case(2, 1, head_dim, "f32", 2 * span + 3, 1), [span, span + 1], variant="serial")
    assert result.ok, result.describe()
