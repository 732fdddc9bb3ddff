"""Engine: load a GGUF onto the GPU, then prefill + decode with sampling, stops, streaming, recovery."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from ..config import ModelConfig
from ..gguf import GGUFReader
from ..gpu.backend import GpuBackend
from ..kv import AUTO, resolve_mode
from ..kv.api import KVCacheAPI
from . import warmup
from .forward import HISTORY, GpuModel, default_batch, fit_batch
from .recovery import LossWatch, is_device_lost
from .resident import ResidentBlocks
from .sampler import Sampling, last_row, sample
from .weights import Weights, upload_weights

T = TypeVar("T")


@dataclass
class Generation:
    """What `generate` produced: new token ids, their text, why it stopped, and timings."""

    tokens: list[int]
    text: str = ""
    stop_reason: str = "length"  # "eos" | "stop_string" | "length"
    prefill_s: float = 0.0
    decode_s: float = 0.0
    recoveries: list[float] = field(default_factory=list)  # seconds spent per device recovery

    @property
    def decode_tokens_per_s(self) -> float:
        return max(0, len(self.tokens) - 1) / self.decode_s if self.decode_s > 0 else 0.0


class Engine:
    """A model on the GPU with its KV cache. Positions advance as tokens are fed in.

    `gpu` is any `GpuBackend` (native `Gpu`, browser `BrowserGpu`); `bonsai.engine.native.load_engine`
    opens a GGUF file on the native one.
    """

    def __init__(self, reader: GGUFReader, cfg: ModelConfig, gpu: GpuBackend, *, kv: str = AUTO, window: int | None = None,
                 vram_budget: int | None = None, max_positions: int = 2048, batch: int | None = None,
                 progress: bool = True, cache_factory: Callable[..., KVCacheAPI] | None = None,
                 resident_steps: int = 16, blocks_ahead: int | None = None, warm_up: bool = False) -> None:
        self.reader, self.cfg = reader, cfg
        # greedy decoding runs this many steps on the GPU between readbacks (1: one readback per token)
        if not 1 <= resident_steps <= HISTORY:
            raise ValueError(f"resident_steps must be in 1..{HISTORY}, got {resident_steps}")
        self.resident_steps = resident_steps
        self.cache_factory = cache_factory
        # kv "auto": the adapter's default (bonsai.kv.default_mode: q4res on a GPU, f32 on a CPU adapter)
        self.kv_mode, self.vram_budget = resolve_mode(kv, gpu), vram_budget
        self.max_positions = min(max_positions, cfg.context_length)
        # positions per KV window (None: `kv.layout.default_window`, the whole context on a GPU without a budget)
        self.window = self._window_for(window, gpu)
        # tokens per step (None: `forward.default_batch`, 512 on a GPU, 128 on a CPU adapter)
        self.requested_batch = self.batch = batch if batch is not None else default_batch(gpu)
        self.progress = progress
        self.pos = 0
        self.fed: list[int] = []  # the token ids at positions [0, pos): what the KV cache holds
        self.recoveries: list[float] = []
        self._tokenizer: Any = None
        self._watch = LossWatch()
        self._build(gpu, cache=None)
        # greedy blocks recorded before the last one's readback is waited for (0 or 1; None: 1 on GPUs,
        # 0 on CPU adapters, where a block recorded ahead only adds wasted steps at a stop: `resident.py`)
        if blocks_ahead not in (None, 0, 1):
            raise ValueError(f"blocks_ahead must be 0 or 1, got {blocks_ahead}")
        self.blocks_ahead = int(not gpu.is_cpu) if blocks_ahead is None else blocks_ahead
        # compile every kernel a request needs now (`warmup.py`), not in the first request's prefill
        self.warm = warm_up
        self.warmed_kernels = warmup.warm_up(self) if warm_up else 0

    @property
    def tokenizer(self) -> Any:
        """The model's byte-level BPE tokenizer (built on first use)."""
        if self._tokenizer is None:
            from ..tokenizer import Tokenizer

            self._tokenizer = Tokenizer.from_gguf(self.reader)
        return self._tokenizer

    def _build(self, gpu: GpuBackend, cache: KVCacheAPI | None) -> None:
        self.gpu = gpu
        self.weights: Weights = upload_weights(gpu, self.reader, self.cfg, progress=self.progress)
        if cache is None:
            cache = self._new_cache()
        else:
            cache.restore(gpu)
        self.cache = cache
        # tokens per forward step: the caller's batch, or fewer where logits would not fit one binding
        self.batch = fit_batch(self.requested_batch, self.cfg, gpu.max_binding_bytes)
        self.model = GpuModel(gpu, self.cfg, self.weights, cache, batch=self.batch)

    def _new_cache(self) -> KVCacheAPI:
        if self.cache_factory is None:
            from ..kv.cache import KVCache

            self.cache_factory = KVCache
        return self.cache_factory(self.gpu, self.cfg.n_layers, self.cfg.n_kv_heads, self.cfg.head_dim,
                                  self.max_positions, mode=self.kv_mode, window=self.window,
                                  vram_budget=self.vram_budget)

    def _window_for(self, window: int | None, gpu: GpuBackend) -> int:
        """`window`, or the default for this mode, adapter, context and budget (`kv.layout.default_window`)."""
        if window is not None:
            return window
        from ..kv.format.modes import get_mode
        from ..kv.layout import default_window

        return default_window(get_mode(self.kv_mode), self.cfg.n_kv_heads, self.cfg.head_dim, self.max_positions,
                              cpu=gpu.is_cpu, budget=self.vram_budget is not None,
                              max_binding_bytes=gpu.max_binding_bytes)

    def use_cache(self, *, kv: str, window: int | None = None) -> None:
        """Start over with a new, empty KV cache in mode `kv` with `window`-position windows (None: the default
        for the mode, `_window_for`; weights kept)."""
        self.kv_mode = resolve_mode(kv, self.gpu)
        self.window = self._window_for(window, self.gpu)
        self.cache = cache = self._new_cache()
        self.model = GpuModel(self.gpu, self.cfg, self.weights, cache, batch=self.batch)
        self.reset()
        if self.warm:  # the new mode's kernels
            self.warmed_kernels += warmup.warm_up(self)

    # ---- recovery ------------------------------------------------------------------------
    def recover(self) -> float:
        """Open a new device of the same backend; rebuild pipelines, weights and KV windows (from the host master).

        No warm-up here: it runs steps at the first positions, which now hold the conversation; kernels
        compile as the retried step needs them."""
        t0 = time.perf_counter()
        print("bonsai: GPU device lost; rebuilding on a new device", file=sys.stderr)
        backend: Any = type(self.gpu)  # every backend class has `create()` (not part of the instance Protocol)
        self._build(backend.create(), cache=self.cache)
        took = time.perf_counter() - t0
        self.recoveries.append(took)
        return took

    def with_recovery(self, run: Callable[[], T], after: Callable[[], None] | None = None) -> T:
        """`run()`, and once more on a new device (`recover`, then `after()`) if the device was lost in it."""
        for attempt in (0, 1):
            try:
                return run()
            except Exception as exc:
                if attempt or not is_device_lost(self.gpu, exc):
                    raise
                self.recover()
                if after is not None:
                    after()
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _step(self, ids: list[int], *, all_logits: bool = False, argmax: bool = False) -> Any:
        """One forward at self.pos (retried once on a new device if the device is lost): the logits
        (all rows, or the last), or with argmax=True the last row's argmax id, computed on the GPU."""
        def run() -> Any:
            self._watch.check()  # a loss logged since the last step: the cache may be stale
            self.model.record(ids, self.pos, all_logits=all_logits)
            out: Any
            if argmax:  # the id rides along with the host-master readback
                out = self.model.token_from(self.cache.sync_host(also=(self.model.act.token, 4)))
            else:
                self.cache.sync_host()
                out = self.model.read_logits(len(ids) if all_logits else 1)
            self._watch.check()  # reads may return zeros rather than raise on a lost device
            return out

        out = self.with_recovery(run)
        self.fed[self.pos :] = ids
        self.pos += len(ids)
        return out

    def _steps_on_gpu(self, tok: int, n: int, before: Callable[[int], None]) -> list[int]:
        """n greedy decode steps from `tok` at self.pos as one GPU-resident block (`ResidentBlocks`, none
        recorded ahead), read back once; `before(j)` runs before step j is recorded."""
        return ResidentBlocks(self, n, before, ahead=0).take(tok, 0)

    def _end_blocks(self, ahead: list[int], blocks: ResidentBlocks | None) -> None:
        """After decoding: commit a block still in flight, and forget the positions fed past the last token
        kept (decoded ahead inside a block, or in the block in flight)."""
        unused = len(ahead) + (blocks.close() if blocks is not None else 0)
        if unused:
            self.rewind(self.exact_prefix(self.pos - unused))

    # ---- verbs ---------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the conversation: the next token goes to position 0."""
        self.rewind(0)

    def rewind(self, pos: int) -> None:
        """Keep positions [0, pos); later tokens overwrite the rest (attention is causal)."""
        self.pos = min(pos, self.pos)
        del self.fed[self.pos :]

    def exact_prefix(self, pos: int) -> int:
        """The longest prefix [0, p), p <= pos, that the cache holds as a fresh engine fed it would.

        In a grouped-K mode a group is quantised once its last position is fed; a fresh engine holds the
        positions of a group still filling in f32. Keeping part of a quantised group would leave its rows as
        their 4-bit decoding, so the tokens that follow would differ from a fresh run's: a rewind into such
        a group goes back to its start (at most a group's positions are fed again).
        """
        pos = min(pos, self.pos)
        layout = getattr(self.cache, "layout", None)
        if layout is None or not layout.mode.grouped:
            return pos
        g0 = pos - pos % layout.group
        return g0 if pos > g0 and self.pos >= g0 + layout.group else pos

    def continue_with(self, ids: list[int]) -> list[int]:
        """Rewind to the longest common prefix of `ids` and what was fed (`exact_prefix` of it); return the
        ids left to feed. At least one token is always left, so a prompt that was fully fed is re-fed from its
        last token. What follows is the same as a fresh engine's, bit for bit, in every KV mode.
        """
        n = 0
        limit = min(len(ids), len(self.fed), len(ids) - 1)
        while n < limit and ids[n] == self.fed[n]:
            n += 1
        n = self.exact_prefix(n)
        self.rewind(n)
        return ids[n:]

    def forward(self, ids: list[int]) -> memoryview[float]:
        """Feed `ids` at the current position; (len(ids), vocab) f32 logits of every token.

        A read-only memoryview shaped (len(ids), vocab); `np.asarray(...)` wraps it without a copy.
        """
        rows = []
        for i in range(0, len(ids), self.batch):
            rows.append(self._step(list(ids[i : i + self.batch]), all_logits=True))
        if len(rows) == 1:
            return rows[0]
        return memoryview(b"".join(r.cast("B") for r in rows)).cast("f", (len(ids), self.cfg.vocab_size))

    def prefill(self, ids: list[int]) -> memoryview[float]:
        """Feed `ids`; the last token's logits, a (1, vocab) f32 memoryview."""
        return cast("memoryview[float]", self._prefill(ids, argmax=False))

    def prefill_argmax(self, ids: list[int]) -> int:
        """Feed `ids`; the argmax id of the last token's logits (computed on the GPU, 4 bytes read)."""
        return cast(int, self._prefill(ids, argmax=True))

    def _prefill(self, ids: list[int], *, argmax: bool) -> Any:
        out = None
        for i in range(0, len(ids), self.batch):
            last = i + self.batch >= len(ids)
            out = self._step(list(ids[i : i + self.batch]), argmax=argmax or not last)
        return out

    def generate(self, prompt_ids: list[int], max_tokens: int = 64, sampling: Sampling | None = None, *,
                 stop_ids: set[int] | None = None, stop_strings: tuple[str, ...] = (),
                 decode: Callable[[list[int]], str] | None = None,
                 on_token: Callable[[int, str], None] | None = None,
                 on_step: Callable[[int], None] | None = None) -> Generation:
        """Prefill the prompt, then decode up to `max_tokens` new tokens.

        Stops on a token in `stop_ids` (default: EOS), or when the decoded text contains a stop string
        (the text is cut before it). `on_token(id, text_piece)` streams; `on_step(i)` runs before step i.
        """
        s = sampling or Sampling()
        rng = s.rng()
        stops = stop_ids if stop_ids is not None else ({self.cfg.eos_id} if self.cfg.eos_id is not None else set())
        greedy = s.greedy
        # greedy: several steps per readback where the cache lets rows wait on the GPU (`ResidentBlocks`)
        resident = greedy and self.resident_steps > 1 and bool(getattr(self.cache, "can_park", False))
        blocks: ResidentBlocks | None = None
        start = len(self.recoveries)
        t0 = time.perf_counter()
        out = self._prefill(list(prompt_ids), argmax=greedy)
        gen = Generation(tokens=[], prefill_s=time.perf_counter() - t0)
        t1 = time.perf_counter()
        text = ""
        tok = out if greedy else sample(last_row(out), s, rng)
        ahead: list[int] = []  # ids the GPU decoded past `tok` (fed positions run len(ahead) beyond)
        called = [-1]  # the last i `on_step` ran for (a block re-run after a device loss does not repeat it)

        def before(i: int) -> None:
            if on_step and i > called[0]:
                called[0] = i
                on_step(i)

        try:
            for i in range(max_tokens):
                if tok in stops:
                    gen.stop_reason = "eos"
                    break
                gen.tokens.append(tok)
                if decode is not None:
                    new_text = decode(gen.tokens)
                    if new_text.endswith("\ufffd") and i + 1 < max_tokens:
                        new_text = text  # an unfinished UTF-8 sequence: wait for its next bytes
                    piece, text = new_text[len(text):], new_text
                    hit = [text.index(x) for x in stop_strings if x in text]
                    if hit:
                        cut = min(hit)
                        piece = piece[: max(0, len(piece) - (len(text) - cut))]
                        text = text[:cut]
                        if on_token and piece:
                            on_token(tok, piece)
                        gen.stop_reason = "stop_string"
                        break
                    if on_token:
                        on_token(tok, piece)
                elif on_token:
                    on_token(tok, "")
                decoded = self.pos - len(ahead) - (blocks.steps_in_flight if blocks is not None else 0)
                if i + 1 == max_tokens or decoded >= self.max_positions:
                    break
                if not ahead and resident:
                    if blocks is None:
                        blocks = ResidentBlocks(self, max_tokens - 1 - i, before)
                    ahead = blocks.take(tok, i)  # before(i + j) runs before the block's step j
                elif not ahead:
                    before(i)
                    out = self._step([tok], argmax=greedy)
                    ahead = [out if greedy else sample(last_row(out), s, rng)]
                tok = ahead.pop(0)
        except BaseException:  # the caller's callback, or a second device loss: the cache stays consistent
            with contextlib.suppress(Exception):
                self._end_blocks(ahead, blocks)
            raise
        self._end_blocks(ahead, blocks)
        gen.decode_s = time.perf_counter() - t1
        gen.text = text
        gen.recoveries = self.recoveries[start:]
        return gen
