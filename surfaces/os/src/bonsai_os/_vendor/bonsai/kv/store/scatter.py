"""GPU driver of `scatter.wgsl`: staged K/V rows -> their window slot, inside the compute pass."""

from __future__ import annotations

from typing import Any

from ...gpu.limits import grid, workgroups
from ...gpu.params import ParamCache, StepParams


class Scatter:
    """Records one dispatch copying K words and V words (either count may be 0) between buffers."""

    def __init__(self, gpu: Any, params: ParamCache, step: StepParams) -> None:
        self.gpu, self.params, self.step = gpu, params, step
        self.kernel = gpu.kernel(__package__, "scatter.wgsl")

    def record(self, src: Any, src_k: int, n_k: int, src_v: int, n_v: int, dst: Any, dst_k: int, dst_v: int,
               role: str = "scatter") -> None:
        """src[src_k : src_k + n_k] -> dst[dst_k:], src[src_v : src_v + n_v] -> dst[dst_v:] (u32 words).

        The destination is a per-step parameter of `role` (one buffer per role, rewritten when it moves):
        a step's scatters of one role must share their destination."""
        if n_k + n_v:
            self._dispatch(src, src_k, n_k, src_v, n_v, dst, self.step.get((role,), dst_k, dst_v, 0, 0))

    def _dispatch(self, src: Any, src_k: int, n_k: int, src_v: int, n_v: int, dst: Any, dst_params: Any) -> None:
        """The copy to the destination words in buffer `dst_params` (tests pass one of their own)."""
        sp = self.params.get(src_k, n_k, src_v, n_v)
        self.gpu.dispatch(self.kernel, [sp, dst_params, src, dst], grid(workgroups(n_k + n_v)))

    def dst_words(self, dst_k: int, dst_v: int, role: str = "scatter") -> Any:
        """Write the per-step destination now (before recording), so recording does not split the pass;
        returns the role's buffer (which the store kernel's `also` copy reads as well)."""
        return self.step.get((role,), dst_k, dst_v, 0, 0)
