"""The newest, still-filling K group of a grouped-K mode (kc4*, q4res), kept in f32 until it fills.

On the GPU each layer has a residual buffer [G, n_kv, hd] f32 of K (then V, when V has a residual
too): the store kernel writes appended rows as f32, a scatter dispatch copies them in, and when the group's last
position arrives the group kernel quantises it into the window slot (a batch's groups that lie wholly in it
are quantised straight from its staged rows, a window's in one dispatch). The same dispatch writes the
quantised rows into staging too, so the host master receives the kernel's own output at the next sync: the host
never quantises (one codec, the WGSL one, which also lets the browser run these modes). The host
keeps the same residual rows in f32 (read back with the other rows) to rebuild the GPU buffer after
a device loss. Appending into a group that was already quantised (a rewind) decodes it back to f32
on the GPU with the attention kernels' decoders: exactly the values attention read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..gpu.limits import workgroups
from ..gpu.params import ParamCache, StepParams
from .errors import KVError
from .format.rows import decode_constants
from .layout import Kind, Layout
from .mirrors import Mirrors
from .staging import Entry, Staging
from .store.scatter import Scatter
from .store.store import GroupStore

RESIDUAL_ROLE = "residual"  # the step-parameter role of the scatter into the residual buffer
FIRST_ROLE = "residual_first"  # ... of a batch's rows that complete the group the residual holds (`record_batch`)
# a one-position step's group kernel (K group and V rows) reads where the group lies in its slot from a step
# parameter of this role, so a step that fills a group replays the tape of the last one that did (`step_kind`);
# batches keep one cached buffer per window of groups
GROUP_ROLE = "group"


class Residual:
    """Host and GPU copies of every layer's residual, and the kernels that fill and empty it."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.v_res = layout.mode.v_residual
        size = layout.group * layout.f32_row_bytes
        self.host_k = [bytearray(size) for _ in range(layout.n_layers)]
        self.host_v = [bytearray(size) for _ in range(layout.n_layers)]
        self.host_start = [0] * layout.n_layers  # the group start the host rows hold
        self.gpu_start = [0] * layout.n_layers  # the group start the GPU buffer holds (ahead until a sync)

    def bind(self, gpu: Any, params: ParamCache, step: StepParams, mirrors: Mirrors, scatter: Scatter) -> None:
        """(Re)create the GPU side on `gpu` from the host rows; writes are marked in `mirrors`; appended rows
        are copied in by `scatter` (a dispatch, so a decode step stays one compute pass and can be taped)."""
        lay, m = self.layout, self.layout.mode
        self.gpu, self.params, self.step, self.mirrors, self.scatter = gpu, params, step, mirrors, scatter
        # quantises a group's K (and with a V residual its V rows, in the same dispatch)
        self.group_store = GroupStore(gpu, lay.n_kv, lay.head_dim, params, m.k, v_rows=m.v if self.v_res else None)
        self.dequantise = gpu.kernel(f"{__package__}.store", "dequantise.wgsl", V_RES=self.v_res,
                                     **decode_constants(m.kf, m.vf, lay.head_dim),
                                     MUT_NORMALISE=False, MUT_GQA=False, MUT_CAUSAL=False)
        self.bufs = [gpu.upload(self.host_words(layer)) for layer in range(lay.n_layers)]
        self.gpu_start = list(self.host_start)

    def host_words(self, layer: int) -> bytes:
        """What the GPU buffer holds: K rows [G, n_kv, hd] f32, then V rows when V has a residual."""
        return bytes(self.host_k[layer]) + (bytes(self.host_v[layer]) if self.v_res else b"")

    def size_bytes(self) -> int:
        return int(self.bufs[0].size)

    # ---- GPU side, while recording ---------------------------------------------------------
    def record_append(self, layer: int, e: Entry, staging: Staging, slot: Any, copied: bool = False) -> None:
        """Copy the entry's f32 rows into the residual (copied=True: the store kernel already wrote them
        there); quantise every group they fill into `slot(win)` and into staging."""
        G = self.layout.group
        p = e.pos
        while p < e.pos + e.n:
            g0 = p - p % G
            end = min(e.pos + e.n, g0 + G)
            self._to_residual(layer, e, staging, p, end, copied)
            if end == g0 + G:
                self._quantise(layer, g0, slot(g0 // self.layout.window), staging, one_step=e.n == 1)
                self.gpu_start[layer] = end
            p = end

    def _to_residual(self, layer: int, e: Entry, staging: Staging, p: int, end: int, copied: bool = False,
                     role: str = RESIDUAL_ROLE) -> None:
        """Positions [p, end) of entry `e` (within one group) into the residual (copied: they are there already);
        the destination is a step parameter of `role`."""
        lay = self.layout
        G, rb = lay.group, lay.f32_row_bytes
        rw = rb // 4  # words of one position's f32 rows
        g0 = p - p % G
        if not copied:
            self.scatter.record(staging.buffer, e.word + (p - e.pos) * rw, (end - p) * rw,
                                e.word + e.n * e.k_words + (p - e.pos) * rw, (end - p) * rw if self.v_res else 0,
                                self.bufs[layer], *self.dst_words(p), role=role)
        self.mirrors.mark(self.bufs[layer], (p - g0) * rb, (end - g0) * rb)
        if self.v_res:
            self.mirrors.mark(self.bufs[layer], (G + p - g0) * rb, (G + end - g0) * rb)

    # ---- a batch: every group it completes, a few dispatches per window -----------------------------
    def completed_runs(self, pos: int, n: int) -> list[tuple[int, int]]:
        """The positions [start, end) of the groups that appending [pos, pos+n) completes (the group holding
        pos from its start), one run per window."""
        lay = self.layout
        first, last = pos - pos % lay.group, (pos + n) - (pos + n) % lay.group
        return [(start, end) for _, start, end in lay.runs(Kind.K, first, last)]

    def record_batch(self, layer: int, e: Entry, runs: list[tuple[int, int]], outs: list[Entry], staging: Staging,
                     slot: Callable[[int], Any]) -> None:
        """A batch's rows, stored in staging entry `e`, into the groups: each run of `completed_runs` quantised
        into its window's slot and into its group entry in `outs` (booked before `e`: the host takes
        the groups first, then the rows left in the residual). The group the residual holds is completed there
        and quantised from it; the groups wholly inside the batch straight from staging, a window's all in one
        dispatch per kernel (bench/NOTES.md, commit 9c5abea: a dispatch per group made q4res's prefill 1.8x f32's
        GPU time). The rows after the last completed group are copied into the residual."""
        lay = self.layout
        G, rw = lay.group, lay.f32_row_bytes // 4
        v_rows = e.word + e.n * e.k_words  # the entry's f32 V rows (V residual)
        done = e.pos
        for (start, end), out in zip(runs, outs, strict=True):
            win_slot = slot(start // lay.window)
            whole = start
            if start < e.pos:  # the group the residual holds: its last rows in, quantised from there
                self._to_residual(layer, e, staging, e.pos, start + G, role=FIRST_ROLE)
                self._from_residual(layer, start, win_slot, staging, out)
                whole = start + G
            if whole < end:
                at = (whole - e.pos) * rw
                self._group_kernels(staging.buffer, e.word + at, v_rows + at, whole, (end - whole) // G, win_slot,
                                    staging, out)
            self.gpu_start[layer] = done = end
        if done < e.pos + e.n:
            self._to_residual(layer, e, staging, done, e.pos + e.n)

    def _from_residual(self, layer: int, g0: int, slot: Any, staging: Staging, out: Entry, params: Any = None) -> None:
        """Quantise group g0 from `layer`'s residual buffer (K rows, then V rows after the group's K) into `slot` and
        its place in the staging group entry `out`."""
        self._group_kernels(self.bufs[layer], 0, self.layout.group * self.layout.f32_row_bytes // 4, g0, 1, slot,
                            staging, out, params)

    def _slot_words(self, g0: int) -> tuple[int, int]:
        """(K word, V word) of the groups from g0 on in their window's slot (V: 0 unless V has a residual)."""
        lay = self.layout
        return lay.slot_word(Kind.K, g0), lay.slot_word(Kind.V, g0) if self.v_res else 0

    def _staged_words(self, g0: int, out: Entry) -> tuple[int, int]:
        """(K word, V word) of the groups from g0 on in their staging group entry `out` (its K block, then its V block;
        V: 0 unless V has a residual)."""
        staged_k = out.word + (g0 - out.pos) * out.k_words
        return staged_k, out.word + out.n * out.k_words + (g0 - out.pos) * out.v_words if self.v_res else 0

    def _group_kernels(self, src: Any, k_word: int, v_word: int, g0: int, groups: int, slot: Any, staging: Staging,
                       out: Entry, params: Any = None) -> None:
        """Quantise `groups` groups from g0 on into `slot` and into their place in the staging group entry `out`
        (one dispatch): f32 K rows [G, n_kv, hd] per group from src word k_word, and (V residual) V rows from v_word;
        params: their step parameter (None: cached by value)."""
        lay = self.layout
        n = groups * lay.group
        (dst_k, dst_v), (staged_k, staged_v) = self._slot_words(g0), self._staged_words(g0, out)
        self.group_store.record(src, k_word, slot, dst_k, staging.buffer, staged_k, params=params, groups=groups,
                                v_src=v_word if self.v_res else 0, v_dst=dst_v, staged_v=staged_v)
        self.mirrors.mark(slot, dst_k * 4, (dst_k + n * lay.k_words) * 4)
        if self.v_res:
            self.mirrors.mark(slot, dst_v * 4, (dst_v + n * lay.v_words) * 4)

    def step_kind(self, pos: int) -> str | None:
        """What a one-position step at `pos` does in every layer's residual: "append" (copies its rows in),
        "fill" (they complete the group: it is quantised into its slot and into staging), or None: the
        GPU residual does not hold the group (a rewind or a restore: `restart`, recorded afresh)."""
        g0 = pos - pos % self.layout.group
        if not all(start == g0 for start in self.gpu_start):
            return None
        return "fill" if pos + 1 - g0 == self.layout.group else "append"

    def prepare(self, pos: int, n: int) -> None:
        """Before recording a step that appends [pos, pos+n) in every layer: write the destinations of its
        scatters into the residual now, and (a one-position step that fills a group) the group kernels' step
        parameters, so recording writes nothing (and a fill's tape replays for the next fill)."""
        G = self.layout.group
        if n == 1:
            self.scatter.dst_words(*self.dst_words(pos), role=RESIDUAL_ROLE)
            if self.step_kind(pos) == "fill":
                self._group_params(pos - pos % G, one_step=True)
            return
        # a batch: its rows after the last group it completes, and those completing the group the residual holds
        self.scatter.dst_words(*self.dst_words(max(pos, pos + n - (pos + n) % G)), role=RESIDUAL_ROLE)
        if pos % G and pos + n - (pos + n) % G > pos:
            self.scatter.dst_words(*self.dst_words(pos), role=FIRST_ROLE)

    def _group_params(self, g0: int, one_step: bool) -> Any:
        """The parameters of quantising group g0 from the residual into its slot (where it lies in staging is a
        parameter cached by value): a step parameter (`GROUP_ROLE`) for one-position steps, else cached by value."""
        lay = self.layout
        rw = lay.f32_row_bytes // 4  # the V rows start where the residual's G K rows end
        dst_k, dst_v = self._slot_words(g0)
        words = (0, dst_k, lay.group * rw if self.v_res else 0, dst_v)
        return self.step.get((GROUP_ROLE,), *words) if one_step else self.params.get(*words)

    def dst_words(self, pos: int) -> tuple[int, int]:
        """Where position `pos`'s K and V rows land in its layer's residual buffer (words): the per-step
        destination of the residual scatter (`KVCache.prepare` writes it before a step is recorded)."""
        rw = self.layout.f32_row_bytes // 4
        at = pos % self.layout.group
        return at * rw, (self.layout.group + at) * rw

    def _quantise(self, layer: int, g0: int, slot: Any, staging: Staging, one_step: bool) -> None:
        """Quantise group g0 from the residual into `slot` and into staging (a group entry booked now)."""
        params = self._group_params(g0, one_step)
        self._from_residual(layer, g0, slot, staging, staging.book_group(layer, g0), params)

    def replay_fill(self, layer: int, g0: int, staging: Staging) -> None:
        """The bookkeeping of quantising group g0 of `layer`, for a replayed step that fills it (its taped
        dispatch quantises into the slot and staging): the staging entry `_quantise` books, and the residual's new start."""
        staging.book_group(layer, g0)
        self.gpu_start[layer] = g0 + self.layout.group

    def restart(self, layer: int, pos: int, slot: Any) -> None:
        """Appending at `pos`, in group g0 = pos - pos % G, which the GPU residual does not hold (a rewind,
        or the first append after a restore). Call with this layer's rows synced to the host; `slot` holds
        g0's window."""
        lay = self.layout
        g0 = pos - pos % lay.group
        if g0 > self.host_start[layer]:
            raise KVError(f"layer {layer}: append at position {pos} skips positions {self.host_start[layer]}.."
                          f"{g0 - 1} of a grouped-K cache; append in order")
        if pos == g0:  # the append starts the group: no earlier row of it is kept, nothing to bring back
            self.host_start[layer] = g0
        elif g0 < self.host_start[layer]:  # a quantised group: decode it back, as attention read it
            params = self.params.get(lay.slot_word(Kind.K, g0), lay.slot_word(Kind.V, g0), lay.n_kv, 0)
            self.gpu.dispatch(self.dequantise, [params, slot, slot, self.bufs[layer]],
                              (workgroups(lay.group * lay.n_kv),))
            raw = self.gpu.read(self.bufs[layer])
            size = len(self.host_k[layer])
            self.host_k[layer][:] = raw[:size]
            if self.v_res:
                self.host_v[layer][:] = raw[size: 2 * size]
            self.host_start[layer] = g0
        else:
            self.gpu.write(self.bufs[layer], self.host_words(layer))
        self.mirrors.mark_all(self.bufs[layer])
        self.gpu_start[layer] = g0

    # ---- host side, at sync ----------------------------------------------------------------
    def commit_rows(self, layer: int, pos: int, n: int, k_rows: memoryview, v_rows: memoryview | None) -> None:
        """f32 rows of positions [pos, pos+n) as read back, into the host residual: those of the group it holds
        (rows of groups that already reached the master quantised are left out: a batch books the groups it
        completes before its rows)."""
        lay = self.layout
        start, rb = self.host_start[layer], lay.f32_row_bytes
        if pos + n <= start:
            return
        lo = max(pos, start)
        if lo - lo % lay.group != start or pos + n > start + lay.group:
            raise KVError(f"layer {layer}: rows for positions {pos}..{pos + n - 1} reached the master out of order "
                          f"(its residual holds the group from {start})")
        self.host_k[layer][(lo - start) * rb: (pos + n - start) * rb] = k_rows[(lo - pos) * rb:]
        if v_rows is not None:
            self.host_v[layer][(lo - start) * rb: (pos + n - start) * rb] = v_rows[(lo - pos) * rb:]

    def commit_group(self, layer: int, g0: int, n: int | None = None) -> None:
        """Groups from g0 on (n positions, default one group) reached the master quantised: the host residual
        moves on past them."""
        if g0 != self.host_start[layer]:
            raise KVError(f"layer {layer}: group {g0} reached the master out of order")
        self.host_start[layer] = g0 + (self.layout.group if n is None else n)
        self.host_k[layer][:] = bytes(len(self.host_k[layer]))
        self.host_v[layer][:] = bytes(len(self.host_v[layer]))
