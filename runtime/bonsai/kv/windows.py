"""Attention over the cache: the windows a layer folds (slots and the residual), resolved and folded in order."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..gpu.backend import TEXTURE_ROW_BYTES
from ..gpu.params import ParamCache, StepParams
from .attention.driver import Attention, Window
from .errors import KVError
from .layout import Kind, Layout
from .mirrors import Mirrors
from .residual import Residual
from .slots import Slots


class Windows:
    """What `KVCache.attend` folds: window descriptors over the resident slots and the f32 residual, the
    attention driver per head count (made on first use), and the state buffer they share."""

    def __init__(self, gpu: Any, layout: Layout, slots: Slots, mirrors: Mirrors, residual: Residual | None,
                 params: ParamCache, step: StepParams, variant: str) -> None:
        self.gpu, self.layout, self.slots, self.mirrors, self.residual = gpu, layout, slots, mirrors, residual
        self._params, self._step = params, step
        self.variant = variant  # attention kernel variant ("auto": serial on CPU adapters)
        self.drivers: dict[int, Attention] = {}  # n_heads -> driver
        self._state: Any = None  # the (m, l, acc) state buffer, grown to the largest call so far

    def driver(self, n_heads: int) -> Attention:
        """The attention driver for queries of `n_heads` heads over this cache (made once)."""
        att = self.drivers.get(n_heads)
        if att is None:
            lay = self.layout
            if n_heads % lay.n_kv:
                raise KVError(f"n_heads={n_heads} is not a multiple of the cache's n_kv_heads={lay.n_kv}")
            att = self.drivers[n_heads] = Attention(self.gpu, n_heads, lay.n_kv, lay.head_dim, lay.mode,
                                                    params=self._params, variant=self.variant, step=self._step)
        return att

    def attend(self, layer: int, q_buf: Any, out_buf: Any, pos_base: int, n_q: int, n_heads: int) -> None:
        """Record out[t] = causal GQA attention of q[t] (position pos_base + t) over positions <= it."""
        att = self.driver(n_heads)
        need = att.state_bytes(n_q)
        if self._state is None or self._state.size < need:
            self._state = self.gpu.buffer(need)
        q_end, wins = self.descriptors(layer, pos_base + n_q)
        last = len(att.plan(wins, pos_base, n_q)) - 1  # parameter buffers first, so recording is not split
        q = att.begin(q_buf, pos_base, n_q)
        i = 0
        # where attention folds the residual with the window before it (`Attention.combines`), both are
        # resolved first, the residual's slot before the window's, so the slot folded is the one resident
        groups = [[desc] for desc in wins]
        if att.combines and len(wins) > 1 and wins[-1].residual:
            groups[-2:] = [wins[-2:]]
        window = self.layout.window
        for group in groups:
            slots = {desc.start // window: None for desc in group}
            for w in reversed(slots):
                slots[w] = self.slots.get(layer, w)
            resolved = [self._window(layer, desc.start // window, slots[desc.start // window], q_end,
                                     residual=desc.residual) for desc in group]
            if att.variant == "serial":  # the CPU kernel reads K and V through texture copies
                resolved = [dataclasses.replace(win, k=self.mirrors.texture(win.k), v=self.mirrors.texture(win.v))
                            for win in resolved]
            for piece in att.pieces(resolved, n_q):
                att.fold_window(q, self._state, pos_base, n_q, piece, i == 0, i, out_buf, i == last)
                i += 1
        att.finish(self._state, out_buf, pos_base, n_q)

    def plan(self, pos: int, n: int, n_heads: int) -> None:
        """Write the parameters of attending from [pos, pos+n) in every layer now (see `KVCache.prepare`)."""
        self.driver(n_heads).plan(self._after_appends(pos + n), pos, n)

    def _after_appends(self, kv_len: int) -> list[Window]:
        """The windows a step attends once it has appended up to kv_len in every layer (before it does): a
        grouped mode's residual then starts at the group holding kv_len, past a group the step fills."""
        q_end = kv_len - kv_len % self.layout.group if self.residual is not None else kv_len
        return self.descriptors(0, kv_len, q_end)[1]

    def replay_key(self, pos: int, n: int, n_heads: int) -> tuple | None:
        """Attention's part of `KVCache.step_key` for a step attending from [pos, pos+n): the fold
        dispatches' shapes (and, in the serial variant, the texture rows its mirrors refresh); None when
        the step's mirror copies depend on more than the key says (a residual, rows still pending)."""
        att = self.driver(n_heads)
        rows: tuple = ()
        if att.variant == "serial":  # the step refreshes the mirrors' rows holding position pos
            if self.residual is not None:  # and the residual's, which move with pos too
                return None
            lay, win = self.layout, pos // self.layout.window
            if any(self.mirrors.pending_rows(self.slots.resident[(layer, win)]) for layer in range(lay.n_layers)):
                return None
            rows = tuple((lay.slot_word(kind, pos) * 4 // TEXTURE_ROW_BYTES,  # first and last texture row
                          ((lay.slot_word(kind, pos) + words) * 4 - 1) // TEXTURE_ROW_BYTES)
                         for kind, words in ((Kind.K, lay.k_words), (Kind.V, lay.v_words)))
        # each piece's shape and what it binds: its own rows, joined to the residual's, or the residual's alone
        return rows, tuple((att.fold_shape(w, n), w.residual, w.res is None, w.res is w.k)
                           for w in att.pieces(self._after_appends(pos + n), n))

    def descriptors(self, layer: int, kv_len: int, q_end: int | None = None) -> tuple[int, list[Window]]:
        """(q_end, descriptors of the windows attention folds over [0, kv_len)); slots as resident now.
        q_end: where a grouped mode's residual starts (default: where it starts on the GPU now)."""
        # grouped K: positions from the residual's group start on are f32 rows in the residual buffer
        if q_end is None:
            q_end = min(kv_len, self.residual.gpu_start[layer]) if self.residual is not None else kv_len
        resident, window = self.slots.resident, self.layout.window
        wins = [self._window(layer, w, resident.get((layer, w)), q_end) for w in range(-(-q_end // window))]
        if q_end < kv_len:
            w = q_end // window
            wins.append(self._window(layer, w, resident.get((layer, w)), q_end, residual=True))
        return q_end, wins

    def _window(self, layer: int, w: int, slot: Any, q_end: int, residual: bool = False) -> Window:
        lay = self.layout
        lo = w * lay.window
        if residual:
            assert self.residual is not None
            res = self.residual.bufs[layer]
            group = lay.group
            if lay.mode.v_residual:  # K and V rows from the residual buffer (row 0 = q_end)
                return Window(res, res, q_end, q_end + group, q_end, 0, group * lay.n_kv * lay.head_dim, True)
            # K rows from the residual buffer (row 0 = q_end), V rows from the slot
            return Window(res, slot, q_end, q_end + group, q_end, 0, lay.slot_word(Kind.V, q_end), True)
        return Window(slot, slot, lo, min(lo + lay.window, q_end), lo, 0, lay.window * lay.k_words)
