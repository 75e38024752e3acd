"""Every report of the corpora (tests/helpers/corpus.py: the in-repo dialects, and the shared
corpus of real-world reports when present), cut at many offsets.

Each cut is fed to both backends: no crash, no hang (a backend call stuck for
``backends.HANG_SECONDS`` kills the run with a stack dump), the same bytes or the same
error kind. Beyond parity, a cut that removes part of a report that is valid in full
must be refused (a truncated report is never summarised as if it were whole), and a cut
that removes only trailing whitespace gives the full report's summary.

Offsets: a normal run takes the first bytes (BOM and sniffing edges), the last bytes,
cuts inside multi-byte UTF-8 characters, an even spread and a few seeded random ones
(fewer for the large files). ``--soak`` takes every offset of files up to 4 KiB, about
1,000 offsets of files up to 64 KiB and about 250 of each larger file.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers import corpus, strategies
from helpers.backends import needs_native, result_in_both, run_backend
from helpers.strategies import check_invariants

pytestmark = needs_native


def offsets(data: bytes, seed: str) -> list[int]:
    """Where to cut ``data`` (sorted, unique, each in ``0..len``)."""
    n = len(data)
    if strategies.SOAK_MINUTES > 0:
        if n <= 4096:
            return list(range(n + 1))
        step = max(1, n // (1000 if n <= 64 * 1024 else 250))
        return sorted(set(range(0, n + 1, step)) | set(range(0, 64)) | set(range(max(0, n - 64), n + 1)))
    rnd = random.Random(seed)
    spread = 12 if n > 100_000 else 24
    picks = set(range(min(n, 6))) | {max(n - k, 0) for k in (0, 1, 2, 3)}
    picks |= {n * k // spread for k in range(spread)}
    picks |= {rnd.randrange(n + 1) for _ in range(4 if n > 100_000 else 8)}
    # inside multi-byte characters (continuation bytes), a few of them
    inside = [i for i in range(min(n, 200_000)) if 0x80 <= data[i] < 0xC0]
    picks |= set(rnd.sample(inside, min(len(inside), 4)))
    return sorted(picks)


def _complete_until(data: bytes) -> int:
    """Cuts at or before this offset remove part of the document itself: the ``>`` that
    ends the XML root element (trailing comments, PIs and whitespace may follow it) or
    the JSON root's last ``}``; later cuts only drop what follows the root."""
    stripped = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] == b"{":
        return data.rfind(b"}")
    end = len(data.rstrip(b" \t\r\n"))
    while True:  # peel trailing comments and processing instructions off
        if data[:end].endswith(b"-->") and data.rfind(b"<!--", 0, end) >= 0:
            end = len(data[: data.rfind(b"<!--", 0, end)].rstrip(b" \t\r\n"))
        elif data[:end].endswith(b"?>") and data.rfind(b"<?", 0, end) > 0:
            end = len(data[: data.rfind(b"<?", 0, end)].rstrip(b" \t\r\n"))
        else:
            return data.rfind(b">", 0, end)


# Files whose cuts expose a bug still pending in its owner's module, by corpus id
# (strict xfail: the mark must go when the fix lands). Reproducers are in
# test_property_parity.REGRESSIONS.
PENDING: dict[str, str] = {}


@pytest.mark.parametrize(
    "path",
    corpus.params(
        corpus.files(), marks={rel: pytest.mark.xfail(strict=True, reason=why) for rel, why in PENDING.items()}
    ),
)
def test_every_cut_gives_the_same_answer_in_both_backends(tmp_path, path):
    data = path.read_bytes()
    target = str(tmp_path / "cut")
    Path(target).write_bytes(data)
    full = run_backend([target], "native", {})
    last = _complete_until(data)
    tail_is_blank = lambda k: not data[k:].strip(b" \t\r\n")  # noqa: E731
    accepted_truncated = []
    for k in offsets(data, path.name):
        Path(target).write_bytes(data[:k])
        result = result_in_both([target], {})
        if result[0] == "ok":
            check_invariants(result[1], {}, [target])
        if full[0] == "ok":
            if k <= last:
                if result[0] == "ok":
                    accepted_truncated.append(k)
            elif tail_is_blank(k):
                assert result == full, (
                    f"cut at {k} of {len(data)} (only trailing whitespace removed) changed the summary"
                )
    assert not accepted_truncated, (
        f"truncated copies were summarised as if whole, cut at bytes {accepted_truncated[:20]} of {len(data)}"
    )
