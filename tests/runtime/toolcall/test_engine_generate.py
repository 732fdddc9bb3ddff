"""engine_generate on the GPU engine: why a generation ended, and a stop between steps that keeps the cache usable."""

from __future__ import annotations

import pytest

from bonsai.engine.native import load_engine
from bonsai.toolcall.engine_generate import GenerationStopped, engine_generate
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)
PROMPT = [5, 17, 200, 3, 99, 42, 7, 150, 8, 64, 33, 12, 77, 91, 23, 4, 61, 18, 120, 31]


@pytest.fixture(scope="module")
def tiny(gpu, tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("eg") / "t.gguf", "qwen3", **TINY)


def engine_for(tiny, gpu, **options):
    # batch 8: the 20-token prompt takes three prompt steps, so a stop can fall between them
    return load_engine(tiny, gpu=gpu, kv="f32", batch=8, progress=False, **options)


def run(generate, prompt=PROMPT):
    seen: list[int] = []
    out = generate(list(prompt), None, seen.append)
    assert out == seen
    return out


def test_a_stop_in_the_prompt_or_in_the_reply_leaves_an_engine_that_gives_the_fresh_tokens(tiny, gpu):
    want = run(engine_generate(engine_for(tiny, gpu), max_tokens=12))
    engine = engine_for(tiny, gpu)
    asked = []

    def stop_on_second_batch() -> bool:
        asked.append(engine.pos)
        return len(asked) == 2  # after the prompt's first batch of 8

    generate = engine_generate(engine, max_tokens=12, should_stop=stop_on_second_batch)
    with pytest.raises(GenerationStopped):
        run(generate)
    assert generate.finish == "stopped" and engine.pos == 8
    generate.should_stop = None
    assert run(generate) == want

    seen: list[int] = []
    generate.should_stop = lambda: len(seen) >= 5  # five reply tokens out, then stop
    with pytest.raises(GenerationStopped):
        generate(list(PROMPT), None, seen.append)
    assert seen == want[:5]
    generate.should_stop = None
    assert run(generate) == want
    assert generate.finish == "length"


def test_the_reply_ends_with_the_reason_length_or_context(tiny, gpu):
    generate = engine_generate(engine_for(tiny, gpu), max_tokens=6)
    assert len(run(generate)) == 6 and generate.finish == "length"
    full = engine_generate(engine_for(tiny, gpu, max_positions=len(PROMPT) + 4), max_tokens=50)
    # positions 20..23 take four reply tokens; the fifth is sampled from the last position's logits
    assert len(run(full)) == 5 and full.finish == "context"
