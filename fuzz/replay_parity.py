"""Replay libFuzzer's corpus and crash artifacts through both Python backends.

cargo-fuzz only sees the Rust core; this feeds every input it found interesting (byte 0
is the budgets selector of the ``summarize`` target and is dropped) to the native and
the pure backend and checks they agree (same bytes or same error kind, as
``tests/helpers/backends.py`` compares them), with the invariants of
``tests/helpers/strategies.py``. Usage, from the repository root:

    python fuzz/replay_parity.py [fuzz/corpus/summarize fuzz/artifacts/summarize ...]

Prints one line per divergence and a total; exits 1 when any was found.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from backends import result_in_both  # noqa: E402
from strategies import check_invariants  # noqa: E402


def main(argv: list[str]) -> int:
    dirs = [Path(a) for a in argv] or [HERE / "corpus" / "summarize", HERE / "artifacts" / "summarize"]
    files = sorted(f for d in dirs if d.is_dir() for f in d.iterdir() if f.is_file())
    failures = replayed = 0
    with tempfile.TemporaryDirectory() as tmp:
        target = str(Path(tmp) / "report")
        for f in files:
            try:
                data = f.read_bytes()[1:]
            except FileNotFoundError:  # libFuzzer reduced its corpus meanwhile
                continue
            replayed += 1
            Path(target).write_bytes(data)
            try:
                result = result_in_both([target], {})
                if result[0] == "ok":
                    check_invariants(result[1], {}, [target])
            except AssertionError as exc:
                failures += 1
                print(f"DIVERGENCE {f}: {str(exc).splitlines()[0][:300]}")
    print(f"replayed {replayed} inputs from {', '.join(map(str, dirs))}: {failures} divergence(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
