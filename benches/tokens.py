"""o200k token counts for the benchmarks: what an answer costs a model, next to its bytes.

The vocabulary is OpenAI's ``o200k_base`` (the GPT-4o family), as bundled by the
``bpe-openai`` package (PyPI; a Rust BPE with a tiktoken-compatible API): nothing is
fetched at run time. Text is counted as ordinary text: a special token's spelling such
as ``<|endoftext|>`` in a test's output counts as the plain text it is, never raises.
"""

from __future__ import annotations

import warnings
from functools import cache

with warnings.catch_warnings():
    # bpe-openai 0.1.4 reads its bundled vocabularies at import with importlib.resources.open_binary
    warnings.simplefilter("ignore", DeprecationWarning)
    import bpe_openai

ENCODING = "o200k_base"
# bpe-openai refuses one input of 1,000,000 characters or more and, by default, a result
# above 200,000 tokens; longer texts are counted in pieces cut after a newline, where
# o200k's pre-tokenizer starts a new piece anyway (a run of blank lines cut in two may
# differ by a token).
CHUNK_CHARS = 100_000


@cache
def _encoding() -> bpe_openai.Encoding:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return bpe_openai.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Number of o200k tokens of ``text`` (0 for ``""``); any length, pieces of <= CHUNK_CHARS."""
    encoding = _encoding()
    total, start = 0, 0
    while start < len(text):
        end = start + CHUNK_CHARS
        if end < len(text):
            cut = text.rfind("\n", start, end)
            end = cut + 1 if cut > start else end
        total += len(encoding.encode_ordinary(text[start:end]))
        start = end
    return total
