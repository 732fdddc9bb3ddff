"""Byte-level BPE tokenizer from GGUF metadata, pure Python (runs under Pyodide: no numpy, no `regex`).

API:
    tok = Tokenizer.from_gguf(reader)              # bonsai.gguf.GGUFReader
    tok.encode(text, allow_special=True, add_bos=False) -> list[int]
    tok.decode(ids, skip_special=False) -> str     # invalid UTF-8 -> U+FFFD
    tok.token_bytes(id) -> bytes                   # raw bytes of one token, for streaming and
                                                   # constrained decoding (specials: their text)
    tok.bos_id, tok.eos_id, tok.vocab_size, tok.token_id("<|im_end|>"), tok.is_special(id)
    tok.special_ids                                # control + user-defined token ids
Pre-tokenizers: gpt2, smollm (= starcoder), qwen2 (see pretokenize.py for the exact patterns).
Errors: TokenizerError (a GGUFError) naming the file and the tokenizer.ggml.* key.
"""

from .bpe import Tokenizer, TokenizerError
from .bytelevel import BYTE_TO_CHAR, CHAR_TO_BYTE
from .pretokenize import PRE_TOKENIZERS

__all__ = ["BYTE_TO_CHAR", "CHAR_TO_BYTE", "PRE_TOKENIZERS", "Tokenizer", "TokenizerError"]
