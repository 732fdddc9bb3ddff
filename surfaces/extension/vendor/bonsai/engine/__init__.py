"""The GPU engine: GGUF weights on the GPU, prefill/decode forward, sampling, generation, recovery.

API (the package import is pure Python and backend-free, so it runs under Pyodide; `.native` wires
the native backend and is never imported from here):
    from bonsai.engine.native import load_engine      # native Gpu + NumpyKVCache
    engine = load_engine(path=None, *, gpu=None, kv="auto" (q4res on a GPU, f32 on a CPU adapter: bonsai.kv.default_mode)
                         | "f32" | "q4res" | "q8" | ..., window=2048, vram_budget=None,
                         max_positions=2048, batch=None (512 on a GPU, 128 on a CPU adapter),
                         progress=True, cache_factory=None,
                         resident_steps=16, blocks_ahead=None (1 on a GPU, 0 on a CPU adapter),
                         warm_up=False)  # None -> default model; warm_up=True
                         # compiles every kernel a request needs at load (warmup.py; the CLI does)
    engine = Engine(reader, cfg, gpu, **same options)  # any GpuBackend (e.g. bonsai.gpu.browser.BrowserGpu);
                                                       # cache_factory None -> bonsai.kv.cache.KVCache
    gen = engine.generate(prompt_ids, max_tokens=64, sampling=Sampling(temperature=0.0, top_k=0,
                          top_p=1.0, seed=0), stop_ids=None (-> {eos}), stop_strings=(),
                          decode=engine.tokenizer.decode, on_token=fn(id, text_piece), on_step=fn(i))
        # -> Generation(tokens, text, stop_reason "eos"|"stop_string"|"length", prefill_s, decode_s,
        #               recoveries [seconds per device-loss recovery], decode_tokens_per_s)
        # feeds prompt_ids at engine.pos (call engine.reset() first for a new sequence)
    logits = engine.forward(ids)          # (len(ids), vocab) f32 memoryview of every token's logits, fed at
                                          # engine.pos (np.asarray(logits) wraps it without a copy)
    engine.prefill(ids) / engine.prefill_argmax(ids) # last row's logits (1, vocab) / its GPU argmax id
    sample(last_row(logits), sampling, sampling.rng())   # host sampling, pure Python (random.Random(seed))
    engine.reset() / engine.rewind(pos)   # positions [pos, ...) are overwritten by what comes next
    engine.continue_with(ids) -> ids left to feed after rewinding to the common prefix (chat turns)
    engine.recover() -> seconds           # new device, pipelines, weights, KV windows from the host master
    engine.tokenizer, engine.cfg (ModelConfig), engine.gpu, engine.cache (bonsai.kv.KVCache)
Device loss is detected inside every step (the error says so, or the backend's `is_lost()` confirms)
and the step is retried once on a new device of the same backend (`type(engine.gpu).create()`).
Greedy `generate` decodes `resident_steps` steps per readback where the cache allows it (no VRAM
budget): each step embeds the id the previous argmax left on the GPU, the KV rows wait on the GPU
(`KVCache.park`), a stop inside a block rewinds exactly, and a loss re-runs the block from the master.
With `blocks_ahead=1` the next block is recorded before the last one's readback is waited for
(`resident.ResidentBlocks`): the GPU keeps working while the host takes the rows; a stop then rewinds
up to 2 x resident_steps - 1 steps decoded past it.
"""

from .engine import Engine, Generation
from .sampler import Sampling, last_row, sample

__all__ = ["Engine", "Generation", "Sampling", "last_row", "sample"]
