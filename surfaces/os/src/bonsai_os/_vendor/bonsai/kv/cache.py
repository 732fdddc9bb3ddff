"""KVCache: per-layer K/V in a cache mode, a host-RAM master copy, and GPU windows under a VRAM budget.

The pieces, each in its own module: `layout` (row words, window slots), `master` (the host copy,
bytes laid out as slots), `staging` (rows on their way back from the GPU, one readback per sync),
`slots` (resident windows and streaming), `residual` (grouped modes' newest, f32 group), `append`
(recording appended rows: the store kernel, or a QKV matmul's epilogue, and the scatter into slots) and
the attention driver (`attention.driver`). This class orders them: append records the rows, attend
folds the windows, sync_host commits what came back.

Pure Python, so the browser runs it too: the host only moves bytes, every row is quantised by the
GPU kernels (grouped modes included). The API the engine uses is `bonsai.kv.KVCacheAPI`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..gpu.params import ParamCache, StepParams
from .append import Appender
from .epilogue import EpilogueRows
from .errors import KVError
from .format.modes import MODES, get_mode
from .handover import Handover
from .layout import Kind, Layout
from .master import HostMaster
from .mirrors import Mirrors
from .residual import Residual
from .slots import Slots
from .staging import Entry, Rows, Staging, coalesce
from .store.scatter import Scatter
from .store.store import Store
from .windows import Windows


class SyncInFlight:
    """A sync whose readback is on its way (`KVCache.sync_host_soon`): `finish()` commits its rows, and every
    sync started before it, and returns its `also` bytes."""

    def __init__(self, cache: KVCache, entries: list[Entry], take: Callable[[], tuple[list[Rows], bytes]] | None,
                 extra: bytes | None) -> None:
        self.cache, self.entries, self.take, self.extra = cache, entries, take, extra

    def finish(self) -> bytes:
        if self.extra is None:
            self.cache._finish_in_flight(self)
        if self.extra is None:  # dropped: lost with its device (`restore`), or an earlier sync failed
            raise KVError("a started sync was dropped (its device was lost, or a sync before it failed); its rows "
                          "are not in the host master")
        return self.extra


class KVCache:
    """Per-layer K/V in a `bonsai.kv.format.modes` mode: host master + GPU windows (see `bonsai.kv`)."""

    def __init__(self, gpu: Any, n_layers: int, n_kv_heads: int, head_dim: int, max_positions: int,
                 mode: str = "f32", window: int = 64, vram_budget: int | None = None,
                 staging_positions: int = 512, variant: str = "auto", handover_steps: int = 32) -> None:
        if mode not in MODES:
            raise KVError(f"KVCache mode must be one of {', '.join(MODES)}, got {mode!r}")
        if staging_positions < 1:
            raise KVError("KVCache staging_positions must be >= 1")
        self.mode = mode
        self.layout = lay = Layout(get_mode(mode), n_layers, n_kv_heads, head_dim, max_positions, window)
        self.n_layers, self.n_kv, self.head_dim, self.max_positions, self.window = (
            n_layers, n_kv_heads, head_dim, max_positions, window)
        self.slot_bytes = lay.slot_bytes
        self.max_slots = Slots.count(lay, vram_budget)
        self.master = HostMaster(lay)
        self.residual = Residual(lay) if lay.mode.grouped else None
        self.requested_staging_positions = staging_positions
        self._variant = variant
        self.handover_steps = handover_steps  # decode steps that may be parked between syncs (`park`)
        self.fuse_store = True  # f32 rows within a window: the store kernel writes the slot/residual copy too
        self._bind(gpu)

    @property
    def length(self) -> list[int]:
        """Positions committed to the host master, per layer."""
        return self.master.length

    @property
    def streamed_windows(self) -> int:
        """Windows written up from the master so far (streaming or restore)."""
        return self._slots.streamed

    @property
    def staging_positions(self) -> int:
        return self._staging.positions

    @property
    def variant(self) -> str:
        """The attention kernel variant ("auto": serial on CPU adapters); set it to drop the drivers made so far."""
        return self._variant

    @variant.setter
    def variant(self, value: str) -> None:
        self._variant = self._windows.variant = value
        self._windows.drivers.clear()

    # ---- GPU side -------------------------------------------------------------------------
    def _bind(self, gpu: Any) -> None:
        """(Re)create every GPU object on `gpu`; the host master is untouched."""
        lay = self.layout
        limit = gpu.max_binding_bytes
        if lay.slot_bytes > limit:
            raise KVError(f"a window of {lay.window} positions takes {lay.slot_bytes} bytes per layer, above this "
                          f"adapter's maxStorageBufferBindingSize ({limit} bytes); lower the window to at most "
                          f"{limit * lay.window // lay.slot_bytes} positions")
        self.gpu = gpu
        self._params = ParamCache(gpu)
        self._step = StepParams(gpu)  # per-step words (positions) in buffers that keep their bind groups
        self._scatter = Scatter(gpu, self._params, self._step)
        self._store = Store(gpu, lay.n_kv, lay.head_dim, lay.mode, self._params)
        self._staging = Staging(gpu, lay, self.requested_staging_positions)
        self._mirrors = Mirrors(gpu)  # texture copies of slots for the serial (CPU) attention kernel
        self._slots = Slots(gpu, lay, self.master, self.max_slots, lambda: self._staging.pending, self.sync_host,
                            self._mirrors.mark_all)
        self._windows = Windows(gpu, lay, self._slots, self._mirrors, self.residual, self._params, self._step,
                                self._variant)
        self._handover: Handover | None = None  # made by the first `park`
        self._in_flight: list[SyncInFlight] = []  # started syncs (`sync_host_soon`), oldest first: lost with the device
        if self.residual is not None:
            self.residual.bind(gpu, self._params, self._step, self._mirrors, self._scatter)
        self._appender = Appender(lay, self._staging, self._store, self._scatter, self._slots, self._mirrors,
                                  self.residual, self.sync_host, self._unsynced)

    def append(self, layer: int, k_buf: Any, v_buf: Any, pos: int, n: int, stored: EpilogueRows | None = None) -> None:
        """Store rows [pos, pos+n) from GPU buffers k_buf/v_buf ([n, n_kv, hd] f32) into the cache.

        stored: what `epilogue_rows(layer, pos, n)` returned, whose destinations the caller's QKV matmul
        has written (k_buf and v_buf are not read then): only the bookkeeping after the store is left."""
        if stored is None:
            self._check_range(layer, pos, n)
        self._appender.append(layer, k_buf, v_buf, pos, n, self.fuse_store, stored)

    def epilogue_rows(self, layer: int, pos: int, n: int) -> EpilogueRows | None:
        """Book the staging entry of appending [pos, pos+n) to `layer` and say where its rows and flags go,
        for a QKV matmul that writes them in its epilogue (`bonsai.ops.qkv_store`) before `append(...,
        stored=...)`; None (nothing booked) where the store kernel must run: not f32 rows with a second copy
        (`fuse_store`)."""
        self._check_range(layer, pos, n)
        return self._appender.epilogue_rows(layer, pos, n, self.fuse_store)

    # ---- replaying a recorded step --------------------------------------------------------
    @property
    def step_params(self) -> StepParams:
        """The per-step parameter slots this cache's kernels bind (the model's step parameters share them: one
        write a step, `StepParams.deferred`)."""
        return self._step

    def step_key(self, pos: int, n: int, n_heads: int) -> tuple | None:
        """What decides the dispatches of a step that appends [pos, pos+n) in every layer and attends,
        when a recording of it may be replayed with only the step's parameters rewritten (`prepare`):
        equal keys, equal dispatch lists. None when the step may do more than record dispatches (a VRAM
        budget, rows not synced, a window slot still to be made; grouped modes: a step that appends into a
        group the residual does not hold)."""
        if n != 1 or self._staging.pending or not self._slots.all_resident:
            return None
        # the residual scatter's destination, the windows' residual start and (a step that fills the group)
        # where the group kernels write it are step parameters (`prepare`): a step in the next group replays
        # this group's tape where the windows bind the same buffers, and a fill the last fill's tape
        kind = None
        if self.residual is not None:
            kind = self.residual.step_kind(pos)
            if kind is None:
                return None
        win = pos // self.window
        if not all((layer, win) in self._slots.resident for layer in range(self.n_layers)):
            return None  # the step makes a slot (without a budget nothing is evicted: earlier ones exist)
        attention = self._windows.replay_key(pos, n, n_heads)
        return None if attention is None else (win, kind, *attention)

    def replay_appends(self, pos: int, n: int) -> None:
        """The bookkeeping `append` does for [pos, pos+n) in every layer, for a replayed step (whose
        taped dispatches write the rows): the same staging entries, in the same order, and (a step that
        fills a group) the residual's new start."""
        res = self.residual
        self._check_range(0, pos, n)
        if res is None or res.step_kind(pos) != "fill":
            self._staging.book_layers(self.n_layers, pos, n)
            return
        for layer in range(self.n_layers):  # each layer's rows, then the group they fill
            self._staging.book_rows(layer, pos, n)
            res.replay_fill(layer, pos + 1 - self.layout.group, self._staging)

    def prepare(self, pos: int, n: int, n_heads: int, *, park: bool = False) -> None:
        """Before recording a step that appends [pos, pos+n) and attends from pos in every layer: write
        its per-step parameters now, so recording the step writes nothing and stays one compute pass.

        Optional: without it the same writes happen during recording (correct, one more submit each).
        park=True: the step will be followed by `park`; its destinations are written now too.
        """
        self._check_range(0, pos, n)
        if park:
            self._parking().prepare()
        self._scatter.dst_words(self.layout.slot_word(Kind.K, pos), self.layout.slot_word(Kind.V, pos))
        if self.residual is not None:
            self.residual.prepare(pos, n)
        self._windows.plan(pos, n, n_heads)

    # ---- parking: rows that wait on the GPU for several decode steps -------------------------
    @property
    def can_park(self) -> bool:
        """Without a VRAM budget no window is ever streamed or evicted, so rows may wait on the GPU."""
        return bool(self._slots.all_resident)

    def park(self) -> None:
        """Record moving the rows staged by the step just recorded (one position in every layer) into the
        handover (`bonsai.kv.handover`): staging is empty again and the next step replays the same tape.
        `sync_host` takes every parked step back in one read."""
        if not self.can_park:
            raise KVError("park: a cache under a VRAM budget streams windows from the host master, which must be "
                          "synced every step")
        self._parking().park()

    def _parking(self) -> Handover:
        if self._handover is None:
            self._handover = Handover(self.gpu, self.layout, self._staging, self._scatter, self.handover_steps)
        return self._handover

    # ---- the host master --------------------------------------------------------------------
    def _unsynced(self, layer: int) -> bool:
        """Whether rows of `layer` were staged or parked since the last sync (its host copy is behind)."""
        parked = [e for entries, _ in self._handover.parked for e in entries] if self._handover is not None else []
        parked += [e for sync in self._in_flight for e in sync.entries]
        return any(e.layer == layer for e in [*self._staging.pending, *parked])

    def sync_host(self, also: tuple[Any, int] | None = None) -> bytes:
        """One readback of every row appended since the last sync into the host master (parked steps
        first: two reads when rows were also staged after the last park).

        also=(buffer, nbytes), nbytes <= 256: the first nbytes of `buffer` come back in the same
        readback and are returned (the engine's sampled tokens: one GPU round trip, not two).
        Raises NonFiniteKVError (naming layer and position) for rows with NaN/inf, or whose scale (or
        min) overflows f16; nothing of that read is committed then (rows read ahead before it may be:
        `Staging.readback`).
        """
        self._finish_in_flight(None)
        rows: list[Rows] = []
        extra = b""
        if self._handover is not None and self._handover.parked:
            rows, extra = self._handover.readback(also)
            also = None

        parked = [rows]  # committed with the first of the staged reads (every read is validated before it)

        def commit(more: list[Rows]) -> None:  # the staged rows are views of the read-back memory: commit now
            self._commit(parked.pop() + more if parked else more)

        if also is not None or self._staging.pending or not rows:
            extra = self._staging.readback(also, commit) or extra
        else:
            commit([])
        return extra

    def read_ahead(self) -> bool:
        """Start reading the rows recorded so far (a batch's first layers: `Staging.read_ahead`) so that the next
        sync commits them while the GPU still works on the rest; False where nothing new was booked. Only where
        reads can be in flight (`reads_in_flight`): elsewhere the read would wait for the GPU now."""
        return self._staging.read_ahead()

    def sync_host_soon(self, also: tuple[Any, int] | None = None) -> SyncInFlight:
        """`sync_host` whose readback is started now and committed by the answer's `finish()` (which returns
        the `also` bytes), so the next steps can be recorded while it is on its way. Only parked steps read
        this way (rows staged since the last park sync now). Syncs finish in the order they started; a
        plain `sync_host` finishes every one first."""
        if self._handover is None or not self._handover.parked or self._staging.pending:
            return SyncInFlight(self, [], None, self.sync_host(also))
        entries, take = self._handover.start_readback(also)
        sync = SyncInFlight(self, entries, take, None)
        self._in_flight.append(sync)
        return sync

    def _finish_in_flight(self, upto: SyncInFlight | None) -> None:
        """Commit started syncs, oldest first, up to `upto` (None: all)."""
        while self._in_flight:
            sync = self._in_flight.pop(0)
            assert sync.take is not None  # only started syncs are in flight
            try:
                rows, sync.extra = sync.take()
            except BaseException:  # refused rows (NonFiniteKVError) or a lost device: the later syncs'
                self._in_flight.clear()  # rows follow these, so none of them is committed either
                raise
            self._commit(rows)
            if sync is upto:
                return

    def _commit(self, rows: list[Rows]) -> None:
        """Read-back rows into the host master, in order; their windows' host pages marked stale."""
        for entry, k_rows, v_rows in coalesce(rows):
            self._slots.mark_stale(entry.layer, self.master.commit(entry, k_rows, v_rows, self.residual))

    def _put(self, layer: int, kind: Kind, pos: int, rows: Any) -> None:
        """Stored rows into the master, their windows' host pages marked stale (`NumpyKVCache.append_host`)."""
        self._slots.mark_stale(layer, self.master.put(layer, kind, pos, rows))

    # ---- attention ----------------------------------------------------------------------------
    def attend(self, layer: int, q_buf: Any, out_buf: Any, pos_base: int, n_q: int, n_heads: int) -> None:
        """out[t] = causal GQA attention of q[t] (absolute position pos_base + t) over positions <= it."""
        self._check_range(layer, pos_base, n_q)
        self._windows.attend(layer, q_buf, out_buf, pos_base, n_q, n_heads)

    # ---- device loss and sizes ----------------------------------------------------------------
    def restore(self, new_gpu: Any) -> None:
        """Rebuild every GPU object on `new_gpu` from the host master (after device loss).

        Rows appended since the last `sync_host()` are lost: sync once per step.
        """
        keys = list(self._slots.resident)
        self._bind(new_gpu)
        for layer, win in keys[-self.max_slots:]:
            self._slots.get(layer, win)

    def bytes_per_position(self) -> int:
        """GPU bytes one position takes in one layer (K and V), measured on an actual slot buffer.

        Grouped-K modes also hold one f32 residual buffer per layer (`residual_bytes`), a fixed cost.
        """
        buf = next(iter(self._slots.resident.values()), None)
        if buf is None:
            buf = self.gpu.buffer(self.slot_bytes)
        return int(buf.size) // self.window

    def residual_bytes(self) -> int:
        """GPU bytes of one layer's f32 residual buffer (0 unless the mode groups K)."""
        return self.residual.size_bytes() if self.residual is not None else 0

    def _check_range(self, layer: int, pos: int, n: int) -> None:
        if not 0 <= layer < self.n_layers:
            raise KVError(f"layer {layer} out of range (cache has {self.n_layers} layers)")
        if n < 1 or pos < 0 or pos + n > self.max_positions:
            raise KVError(f"positions [{pos}, {pos + n}) outside the cache (max_positions={self.max_positions})")
