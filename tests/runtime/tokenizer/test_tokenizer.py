"""The pure-Python BPE tokenizer matches Hugging Face `tokenizers` built from the same vocab and merges."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

from bonsai.gguf import GGUFReader
from bonsai.models import default_model_path
from bonsai.tokenizer import BYTE_TO_CHAR, Tokenizer, TokenizerError
from bonsai.tokenizer.bytelevel import encode_bytelevel
from bonsai.tokenizer.pretokenize import split_gpt2, split_qwen2, split_smollm

QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# A fixed corpus of awkward strings: whitespace runs, digits, code, unicode, emoji, specials.
CORPUS = [
    "",
    " ",
    "   ",
    "\n",
    "\n\n\n",
    " \n ",
    "\t\tindented\n\t",
    "Hello, world!",
    "The capital of France is Paris.",
    "  leading and trailing  ",
    "a  b   c    d",
    "x\u00a0y\u3000z\u2003w",
    "don't I'll we've they're she'd it's I'm DON'T 'S",
    "''quoted'' \"double\" `tick`",
    "12345 3.14159 -42 1e10 0x1F 1,000,000",
    "٣٤٥ ²³ Ⅻ ½ ⑦",
    "def f(x):\n    return x**2 + 1  # comment\n",
    "for (int i = 0; i < n; ++i) { a[i] += b[i]; }",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|><|im_end|><|endoftext|>",
    "<|im_start",
    "naïve café résumé Zürich Ærøskøbing",
    "Привет, мир! Γειά σου Κόσμε",
    "日本語のテキスト、中文文本。한국어 텍스트",
    "مرحبا بالعالم עברית",
    "हिन्दी தமிழ் ไทย",
    "emoji 😀🎉👍🏽 👨‍👩‍👧‍👦 🇫🇷",
    "\x00\x01\x1c\x1d\x1e\x1f\x7f",
    "a\r\nb\rc\n\rd",
    "!!!???...,,,;;;",
    " !@#$%^&*()_+-=[]{}|;':\",./<>?",
    "https://example.com/path?q=1&r=two#frag",
    "e\u0301 combining \u0301\u0302 marks",
    "\ufeffBOM and \u200bzero\u200dwidth",
    "ﬁ ligature ﬀ",
    "Mixed123Digits456and789",
    "         many spaces then text",
    "tabs\t\t\tbetween\twords",
    "CamelCaseIdentifier snake_case_identifier kebab-case",
    "SELECT * FROM users WHERE id = 7;",
]


def hf_tokenizer(tok: Tokenizer, pre_tokenizer) -> HFTokenizer:
    """The independent oracle: HF BPE over the same vocabulary and merges."""
    vocab = {t: i for i, t in enumerate(tok.tokens)}
    merges = [(a, b) for (a, b), _ in sorted(tok._ranks.items(), key=lambda kv: kv[1])]
    hf = HFTokenizer(models.BPE(vocab=vocab, merges=merges))
    hf.pre_tokenizer = pre_tokenizer
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens(
        [AddedToken(tok.tokens[i], special=True, normalized=False) for i in sorted(tok.special_ids)]
    )
    return hf


def representable(tok: Tokenizer, text: str) -> bool:
    """Whether every byte of `text` has a token (SmolLM2 lacks a few, e.g. 0x04, 0x1d, 0xf5..0xff)."""
    return all(tok.token_id(BYTE_TO_CHAR[b]) is not None for b in text.encode())


def smollm_pre():
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )


@pytest.fixture(scope="module")
def smollm() -> Tokenizer:
    return Tokenizer.from_gguf(GGUFReader(default_model_path()))


@pytest.fixture(scope="module")
def oracle(smollm) -> HFTokenizer:
    return hf_tokenizer(smollm, smollm_pre())


def test_default_model_tokenizer_metadata(smollm):
    assert smollm.vocab_size == 49152 and smollm.pre == "smollm"
    assert (smollm.bos_id, smollm.eos_id) == (1, 2)
    assert smollm.token_id("<|im_start|>") == 1 and smollm.token_id("<|im_end|>") == 2
    assert smollm.token_bytes(smollm.token_id("Ġthe")) == b" the"


@pytest.mark.parametrize("text", CORPUS)
def test_fixed_corpus_matches_hf(smollm, oracle, text):
    ids = smollm.encode(text)
    assert ids == oracle.encode(text, add_special_tokens=False).ids
    assert smollm.decode(ids) == oracle.decode(ids, skip_special_tokens=False)
    if representable(smollm, text):
        assert smollm.decode(ids) == text


def _random_texts(n: int, seed: int) -> list[str]:
    """Strings stitched from corpus fragments, random code points and whitespace runs."""
    rng = random.Random(seed)
    pool = "".join(CORPUS)
    ranges = [(0x20, 0x7E), (0x00, 0x20), (0xA0, 0x2FF), (0x370, 0x52F), (0x600, 0x6FF), (0x900, 0x97F),
              (0x2000, 0x206F), (0x2150, 0x218F), (0x3000, 0x30FF), (0x4E00, 0x4EFF), (0xAC00, 0xAC80),
              (0x1F300, 0x1F64F), (0xFF00, 0xFFEF)]  # fmt: skip
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 8)):
            kind = rng.random()
            if kind < 0.35:
                start = rng.randrange(len(pool))
                parts.append(pool[start : start + rng.randint(1, 30)])
            elif kind < 0.7:
                lo, hi = rng.choice(ranges)
                parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 6))))
            elif kind < 0.9:
                parts.append("".join(rng.choice(" \t\n\r\u00a0") for _ in range(rng.randint(1, 6))))
            else:
                parts.append(rng.choice(["<|im_start|>", "<|im_end|>", "'s", "'LL", "123", "٣"]))
        out.append("".join(parts))
    return out


def test_thousands_of_random_strings_match_hf(smollm, oracle):
    texts = _random_texts(3000, seed=5)
    theirs = oracle.encode_batch(texts, add_special_tokens=False)
    mismatches = [t for t, enc in zip(texts, theirs, strict=True) if smollm.encode(t) != enc.ids]
    assert mismatches == []


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cn"), max_codepoint=0x2FFFF), max_size=40))
def test_hypothesis_strings_match_hf(smollm, oracle, text):
    ids = smollm.encode(text)
    assert ids == oracle.encode(text, add_special_tokens=False).ids
    if representable(smollm, text):
        assert smollm.decode(ids) == text


def test_allow_special_false_spells_special_tokens_out(smollm, oracle):
    text = "<|im_start|>user"
    ids = smollm.encode(text, allow_special=False)
    assert 1 not in ids and smollm.decode(ids) == text
    assert smollm.encode(text) == [1] + smollm.encode("user")


def test_token_bytes_concatenate_to_the_text_even_mid_character(smollm):
    text = "emoji 😀 naïve 日本"
    ids = smollm.encode(text)
    assert b"".join(smollm.token_bytes(i) for i in ids) == text.encode()
    assert any(len(smollm.token_bytes(i).decode("utf-8", errors="ignore")) == 0 for i in ids)  # split char


def test_bytes_without_a_token_are_dropped_like_hf(smollm, oracle):
    text = '"\x16:'  # one piece; HF drops the tokenless byte before merging, so '":' merges
    assert not representable(smollm, text)
    assert smollm.encode(text) == oracle.encode(text, add_special_tokens=False).ids == smollm.encode('":')
    assert len(smollm.encode(text)) == 1


def test_add_bos_and_skip_special(smollm):
    assert smollm.encode("hi", add_bos=True)[0] == smollm.bos_id
    assert smollm.decode(smollm.encode("<|im_start|>hi"), skip_special=True) == "hi"


# -- pre-tokenizers against their HF counterparts ----------------------------------------------------


def _hf_pieces(pre, text):
    return [p for p, _ in pre.pre_tokenize_str(text)]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cn"), max_codepoint=0x2FFFF), max_size=30))
def test_gpt2_and_smollm_pieces_match_hf(text):
    bytelevel = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    assert [encode_bytelevel(p) for p in split_gpt2(text)] == _hf_pieces(bytelevel, text)
    assert [encode_bytelevel(p) for p in split_smollm(text)] == _hf_pieces(smollm_pre(), text)


@pytest.mark.parametrize("text", CORPUS + _random_texts(500, seed=9))
def test_qwen2_pieces_match_hf(text):
    split = pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated")
    assert split_qwen2(text) == _hf_pieces(split, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cn"), max_codepoint=0x2FFFF), max_size=30))
def test_qwen2_pieces_match_hf_hypothesis(text):
    split = pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated")
    assert split_qwen2(text) == _hf_pieces(split, text)


def test_oracle_catches_a_wrong_whitespace_rule(smollm, oracle, monkeypatch):
    """Mutation: treating U+001C..U+001F as whitespace (Python's isspace) must be caught."""
    import bonsai.tokenizer.pretokenize as pre

    monkeypatch.setattr(pre, "WHITE_SPACE", pre.WHITE_SPACE | set("\x1c\x1d\x1e\x1f"))
    monkeypatch.setattr(pre, "_CLASS_CACHE", {})
    text = "a  \x1c"  # true: "a", " ", " \x1c"; mutant: "a", "  \x1c" (merges "ĠĠ")
    assert smollm.encode(text) != oracle.encode(text, add_special_tokens=False).ids


def test_oracle_catches_merge_order_ignored(smollm, oracle, monkeypatch):
    """Mutation: applying merges in reverse priority must disagree with the oracle."""
    bad = Tokenizer(smollm.tokens, [f"{a} {b}" for (a, b), _ in sorted(smollm._ranks.items(), key=lambda kv: -kv[1])],
                    smollm.token_types, pre="smollm")  # fmt: skip
    texts = CORPUS[7:20]
    assert any(bad.encode(t) != oracle.encode(t, add_special_tokens=False).ids for t in texts)


def test_unknown_pre_tokenizer_is_named():
    with pytest.raises(
        TokenizerError, match=r"tokenizer\.ggml\.pre: pre-tokenizer 'llama-bpe' is not supported"
    ):
        Tokenizer(["a"], [], pre="llama-bpe", source="m.gguf")


def test_qwen2_tokenizer_of_the_synthetic_model_matches_hf(tmp_path):
    from tests.helpers.synthetic import write_tiny_gguf

    tok = Tokenizer.from_gguf(GGUFReader(write_tiny_gguf(tmp_path / "tiny.gguf", "qwen3")))
    assert tok.pre == "qwen2" and tok.vocab_size > 256
    pre = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf = hf_tokenizer(tok, pre)
    texts = CORPUS + _random_texts(500, seed=11)
    assert [tok.encode(t) for t in texts] == [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    assert tok.decode(tok.encode("The capital of France is Paris.")) == "The capital of France is Paris."
