"""The GPU engine: GGUF weights on the GPU, prefill/decode forward, sampling, generation, recovery.

API:
    engine = Engine.load(path=None, *, gpu=None, kv="f32" | "q4" | "q4r", window=256, vram_budget=None,
                         max_positions=2048, batch=128, progress=True)   # None -> the default model
    gen = engine.generate(prompt_ids, max_tokens=64, sampling=Sampling(temperature=0.0, top_k=0,
                          top_p=1.0, seed=0), stop_ids=None (-> {eos}), stop_strings=(),
                          decode=engine.tokenizer.decode, on_token=fn(id, text_piece), on_step=fn(i))
        # -> Generation(tokens, text, stop_reason "eos"|"stop_string"|"length", prefill_s, decode_s,
        #               recoveries [seconds per device-loss recovery], decode_tokens_per_s)
        # feeds prompt_ids at engine.pos (call engine.reset() first for a new sequence)
    logits = engine.forward(ids)          # numpy (len(ids), vocab) logits of every token, fed at engine.pos
    engine.prefill(ids, want="logits" | "token")    # last row's logits, or its GPU argmax id
    engine.reset() / engine.rewind(pos)   # positions [pos, ...) are overwritten by what comes next
    engine.continue_with(ids) -> ids left to feed after rewinding to the common prefix (chat turns)
    engine.recover() -> seconds           # new device, pipelines, weights, KV windows from the host master
    engine.tokenizer, engine.cfg (ModelConfig), engine.gpu, engine.cache (bonsai.kv.KVCache)
Device loss is detected inside every step (wgpu raises "Parent device is lost"; a probe confirms)
and the step is retried once on the rebuilt device.
"""

from .engine import Engine, Generation
from .sampler import Sampling, sample

__all__ = ["Engine", "Generation", "Sampling", "sample"]
