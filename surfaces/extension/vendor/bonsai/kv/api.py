"""What the engine calls on a KV cache, as a Protocol (`KVCache` implements it; tests may fake it)."""

from __future__ import annotations

from typing import Any, Protocol


class KVCacheAPI(Protocol):
    """A KV cache the forward pass records into. Buffers are the GPU backend's; shapes row-major f32."""

    n_layers: int

    def append(self, layer: int, k_buf: Any, v_buf: Any, pos: int, n: int, stored: Any = None) -> None:
        """Store rows [pos, pos+n) from k_buf/v_buf ([n, n_kv, hd]) (recorded; the host catches up at sync);
        stored: `epilogue_rows`' answer, whose destinations the caller has written instead."""

    def epilogue_rows(self, layer: int, pos: int, n: int) -> Any:
        """Book the rows' staging entry and say where a QKV matmul's epilogue writes them (`ops.qkv_store.KVRows`),
        or None where the store kernel must run (`append` then)."""

    def attend(self, layer: int, q_buf: Any, out_buf: Any, pos_base: int, n_q: int, n_heads: int) -> None:
        """Record out[t] = causal attention of q[t] (position pos_base + t) over positions <= it."""

    def sync_host(self, also: tuple[Any, int] | None = None) -> bytes:
        """Read back every row appended since the last sync into the host master (plus `also`'s bytes)."""

    def read_ahead(self) -> bool:
        """Start reading the rows recorded so far (a batch's first layers), taken first by the next sync;
        False where nothing new was recorded."""

    def sync_host_soon(self, also: tuple[Any, int] | None = None) -> Any:
        """`sync_host` started now; the answer's `finish()` commits it and returns `also`'s bytes."""

    def prepare(self, pos: int, n: int, n_heads: int, *, park: bool = False) -> None:
        """Write a step's position-dependent parameters before it is recorded (one compute pass); park=True
        also the destination of the `park` that follows the step."""

    @property
    def can_park(self) -> bool:
        """Whether `park` may be used (rows can wait on the GPU for several steps)."""

    def park(self) -> None:
        """Record moving a one-position step's staged rows aside on the GPU; the next sync takes them."""

    @property
    def step_params(self) -> Any:
        """The cache's `StepParams`: a step's parameters, the caller's too, in one write (`begin_step`, `deferred`)."""

    def step_key(self, pos: int, n: int, n_heads: int) -> tuple | None:
        """Equal keys: a recording of the step may be replayed; None: record it afresh."""

    def replay_appends(self, pos: int, n: int) -> None:
        """The bookkeeping `append` does, for a step whose taped dispatches are replayed."""

    def restore(self, new_gpu: Any) -> None:
        """Rebuild every GPU object on a new device from the host master (after device loss)."""
