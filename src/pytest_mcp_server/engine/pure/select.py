"""Node-id selection: which tests and collection errors a summary lists when the caller
names some; the twin of ``rust/core/src/select.rs`` (docs/ENGINE.md, *Selection*).

An entry, trailing ``/``s stripped, selects an id equal to it or starting with it
followed by ``::``, ``[`` or ``/``. A lookup costs one dict probe per distinct entry
length (plus one for the whole id), whatever the number of entries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


class Selection:
    """Compiled select entries (node ids, files, directories, classes; may be empty, then
    nothing is selected)."""

    __slots__ = ("entries", "_index", "_lengths")

    def __init__(self, entries: Sequence[str]) -> None:
        self.entries = list(entries)
        # Entry with trailing `/`s stripped -> indices in `entries`.
        self._index: dict[str, list[int]] = {}
        for i, entry in enumerate(self.entries):
            self._index.setdefault(entry.rstrip("/"), []).append(i)
        self._lengths = sorted({len(key) for key in self._index})

    def visit_matches(self, node_id: str, on_match: Callable[[int], None]) -> bool:
        """Call ``on_match`` with the index of every entry that selects ``node_id``;
        returns whether any does."""
        found = False
        index = self._index
        hit = index.get(node_id)
        if hit is not None:
            found = True
            for i in hit:
                on_match(i)
        n = len(node_id)
        for length in self._lengths:
            if length >= n:
                break
            after = node_id[length]
            if after == "/" or after == "[" or (after == ":" and node_id.startswith("::", length)):
                hit = index.get(node_id[:length])
                if hit is not None:
                    found = True
                    for i in hit:
                        on_match(i)
        return found

    def selects(self, node_id: str) -> bool:
        """True when some entry selects ``node_id``."""
        return self.visit_matches(node_id, _ignore)

    def unmatched(self, matched: Sequence[bool]) -> list[str]:
        """The entries whose flag in ``matched`` (one per entry) is false, as given, in
        input order."""
        return [entry for entry, m in zip(self.entries, matched, strict=True) if not m]


def _ignore(_index: int) -> None:
    pass
