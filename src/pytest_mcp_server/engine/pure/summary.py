"""The summary builder: the twin of ``rust/core/src/summary.rs``, rule for rule.

It must write the same bytes as the native builder (docs/ENGINE.md, *The builder*,
*Summary JSON*); ``tests/engine/test_rules_parity.py`` runs both.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from .cut import (
    WHITESPACE,
    DeepestFrames,
    Frame,
    capped,
    chomp,
    cut_traceback,
    failure_frames,
    failure_frames_of_data,
    fixture_location,
    parse_location,
    says_message,
    shown_traceback,
    syntax_position,
)
from .doctest import doctest_view
from .group import (
    OTHER_GROUP_ID,
    fold_values,
    group_id,
    key_hash,
    normalize_capped,
)
from .project import ProjectCode, display_path
from .record import CollectionErrorRecord, ReprFrames, TestRecord
from .reportlog import CollectedFacts, SessionFacts
from .select import Selection
from .text import U64_MAX

_SUBTESTS_MARKER = re.compile(r"contains [0-9]+ failed subtests?")
"""pytest's failure of a test whose subtests failed, and only that (docs/ENGINE.md,
*Subtests*); a test that says only this joins its last failed subtest's group."""

# Distinct group keys tracked; a failure with a new key past this joins ``gother``.
MAX_TRACKED_GROUPS = 2_000
# Distinct group keys of ``gother`` counted, at most: its message says how many causes it
# folded (``N other causes``, or ``more than N`` past this; docs/ENGINE.md, *Groups*).
OTHER_CAUSES_COUNTED = 10_000

# ASCII classes of the exception-name rules.
_DIGITS = frozenset("0123456789")
_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_IDENT = _IDENT_START | _DIGITS | {"."}

# Messages and exceptions (docs/ENGINE.md, *Messages and exceptions*).


def _first_meaningful_line(s: str) -> str | None:
    return _past_syntax_position(line.strip(WHITESPACE) for line in s.split("\n") if line.strip(WHITESPACE))


def _first_e_line(s: str) -> str | None:
    stripped = (line.strip(WHITESPACE) for line in s.split("\n"))
    return _past_syntax_position(t[2:].strip(WHITESPACE) for t in stripped if t.startswith("E "))


def _past_syntax_position(lines: Iterator[str]) -> str | None:
    """The first of ``lines``; when that is a syntax error's position (``File "p", line
    N``: Python's report of a ``SyntaxError``, its source line and caret follow), the
    first later one that names an exception (``SyntaxError: '(' was never closed``)
    instead, if any."""
    first = next(lines, None)
    if first is None or syntax_position(first) is None:
        return first
    return next((line for line in lines if _split_exception_prefix(line) is not None), first)


def _split_exception_prefix(line: str) -> tuple[str, str] | None:
    """``^([A-Za-z_][A-Za-z0-9_.]*): (.*)$`` -> (exception, rest)."""
    if not line or line[0] not in _IDENT_START:
        return None
    i = 1
    n = len(line)
    while i < n and line[i] in _IDENT:
        i += 1
    if line[i : i + 2] == ": ":
        return line[:i], line[i + 2 :]
    return None


def _is_identifier(s: str) -> bool:
    return bool(s) and s[0] in _IDENT_START and all(c in _IDENT for c in s[1:])


def _trailing_exception(line: str) -> str | None:
    """pytest's final location line ``^\\S.*:[0-9]+: ([A-Za-z_][A-Za-z0-9_.]*)$``."""
    if not line or line[0] in WHITESPACE:
        return None
    sep = line.rfind(": ")
    if sep == -1:
        return None
    name = line[sep + 2 :]
    if not _is_identifier(name):
        return None
    digits_start = sep
    while digits_start > 0 and line[digits_start - 1] in _DIGITS:
        digits_start -= 1
    colon = digits_start - 1
    if digits_start < sep and colon >= 1 and line[colon] == ":":
        return name
    return None


def describe(exception: str | None, message: str | None, text: str | None) -> tuple[str | None, str]:
    """(exception, message line) of a failure or collection error (docs/ENGINE.md,
    *Messages and exceptions*); the line is not capped yet. ``""`` counts as no
    exception."""
    text = text or ""
    line = None
    if message is not None:
        line = _first_e_line(message) or _first_meaningful_line(message)
    if line is None:
        line = _first_e_line(text) or _first_meaningful_line(text) or ""
    if exception:
        prefix = exception + ": "
        if line.startswith(prefix):
            line = line[len(prefix) :]
    else:
        split = _split_exception_prefix(line)
        if split is not None:
            exception, line = split
        else:
            exception = None
            for raw in reversed(text.split("\n")):
                found = _trailing_exception(chomp(raw))
                if found is not None:
                    exception = found
                    break
    # A bare `raise ValueError` / `<failure type="java.lang.AssertionError"/>`: the line
    # only repeats the exception.
    if exception is not None and line == exception:
        return exception, ""
    return exception, line


def _location_from_text(text: str) -> dict[str, str | int | None] | None:
    """``{path, line}`` from the last location line of ``text`` (``cut.parse_location``)."""
    for raw in reversed(text.split("\n")):
        loc = parse_location(chomp(raw))
        if loc is not None:
            return {"path": loc[0], "line": loc[1]}
    return None


# --------------------------------------------------------------------------------------
# The builder.


# A listed failure: (sequence number, its JSON dict, traceback lines omitted).
_Listed = tuple[int, dict[str, Any], int]


class _Site:
    """The failures of one assertion site of the suspect's group: how many, the first
    one's sequence number, their exception (``""`` for none) and the first one's
    normalised message (the group's when it is the lead). The twin of ``SiteTally`` in
    ``summary.rs`` (which works the message out from the lead's record)."""

    __slots__ = ("count", "first_seq", "exception", "message")

    def __init__(self, first_seq: int, exception: str, message: str) -> None:
        self.count = 1
        self.first_seq = first_seq
        self.exception = exception
        self.message = message


class _Group:
    __slots__ = ("id", "exception", "message", "count", "first_seq", "examples", "representative", "sites", "leads")

    def __init__(self, group_id: str, exception: str | None, message: str, first_seq: int) -> None:
        self.id = group_id
        # Its label: its lead's exception and normalised message (the lead's location is
        # its representative's).
        self.exception = exception
        self.message = message
        self.count = 0
        self.first_seq = first_seq
        self.examples: list[str] = []
        # The group's lead (its first failure, unless its sites say another: `lead_site`),
        # listed ahead of the others (None for an empty gother).
        self.representative: _Listed | None = None
        # The suspect's group: its assertion sites by key hash (at most SITES_TRACKED),
        # and the first failure of each of the first ones, named first among its examples.
        self.sites: dict[int, _Site] | None = None
        self.leads: list[str] = []

    def lead_site(self) -> _Site | None:
        """The site whose first failure labels the group (docs/ENGINE.md, *Groups*,
        label): the one with the most failures among those of the exception most of the
        sites' failures have (``DocTestFailure`` only when no failure has another), ties
        going to the one seen first; None without sites. The twin of ``Sites::lead_seq``
        in ``summary.rs``."""
        if not self.sites:
            return None
        exceptions: dict[str, list[int]] = {}  # exception -> [failures, first sequence number]
        for site in self.sites.values():
            tally = exceptions.setdefault(site.exception, [0, site.first_seq])
            tally[0] += site.count
            tally[1] = min(tally[1], site.first_seq)
        others = any(e != DOCTEST_FAILURE for e in exceptions)
        label = max(
            (e for e in exceptions if not others or e != DOCTEST_FAILURE),
            key=lambda e: (exceptions[e][0], -exceptions[e][1]),
        )
        return max(
            (site for site in self.sites.values() if site.exception == label),
            key=lambda site: (site.count, -site.first_seq),
        )

    def listed_examples(self, max_examples: int) -> list[str]:
        """Its examples as listed: each assertion site's first failure first (the suspect's
        group), then the others in report order."""
        if not self.leads:
            return self.examples
        return list(dict.fromkeys([*self.leads, *self.examples]))[:max_examples]


SITES_TRACKED = 10_000
"""Assertion sites of the suspect's group told apart (docs/ENGINE.md, *Groups*); beyond,
a new site's failure is an example like the others."""


DOCTEST_FAILURE = "DocTestFailure"
"""The exception of a doctest's wrong value (pytest's ``doctest`` plugin; *Doctests*)."""


class SuspectGroup(NamedTuple):
    """A cause found outside the report (docs/ENGINE.md, *Groups*, the suspect): the
    changed code that ``node_ids``, the failing tests, all ran. A failure of one of them
    with no frame of the project's code under test, or a doctest's wrong value, joins one
    group keyed by ``key``, whatever its message. The twin of ``summary.rs``'s."""

    key: str
    node_ids: frozenset[str]


class SummaryBuilder:
    """Accumulates records, in input order, into a summary (docs/ENGINE.md, *The
    builder*); the twin of ``SummaryBuilder`` in ``rust/core/src/summary.rs``.

    ``budgets``: a dict with the nine budget names of ``models.Budgets`` (ints).
    Memory stays bounded by the budgets: counts, the first ``failures_listed`` failures
    and the first failure of each group (only these get their traceback cut), at most ``group_limit`` groups (default
    2,000) each with ``max_examples`` node ids, the ``max_slowest`` slowest tests, the
    first ``max_collection_errors`` collection errors. There is no ``merge``: several
    files are fed one after the other.

    ``selection``: None lists every test; else counts and the duration stay the whole
    report's while failures, groups, collection errors, slowest and ``omitted`` only take
    what it selects, and ``unmatched`` names its entries that selected no failing or
    erroring test and no collection error (docs/ENGINE.md, *Selection*).

    ``project``: the project's own code (docs/ENGINE.md, *Project code*); None uses the
    path-pattern rule for library code.

    ``collected_page``: (offset, limit, max_files) of the report logs' collected node ids
    to keep (``collected``, which each file's reader adds to; the session's
    ``collected_ids``: docs/ENGINE.md, *Session*); None keeps none.
    """

    def __init__(
        self,
        budgets: dict[str, int],
        group_limit: int = MAX_TRACKED_GROUPS,
        selection: Selection | None = None,
        project: ProjectCode | None = None,
        suspect: SuspectGroup | None = None,
        collected_page: tuple[int, int, int] | None = None,
    ) -> None:
        self._suspect = suspect
        self._failures_listed = budgets["failures_listed"]
        self._max_traceback_lines = budgets["max_traceback_lines"]
        self._max_line_chars = budgets["max_line_chars"]
        self._context_lines = budgets["max_frame_context_lines"]
        self._max_message_chars = budgets["max_message_chars"]
        self._max_groups = budgets["max_groups"]
        self._max_examples = budgets["max_examples"]
        self._max_slowest = budgets["max_slowest"]
        self._max_collection_errors = budgets["max_collection_errors"]
        self._group_limit = group_limit
        self._seq = 0
        self._counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0, "xfailed": 0, "xpassed": 0}
        self._flaky = 0
        self._subtests_passed = 0
        self._subtests_failed = 0
        self._passed_with_failed_subtests = 0
        self._duration_us = 0
        # pytest's session times of the files that have one, and their tests' sum (the
        # others count their tests' sum: docs/ENGINE.md, *Summary JSON*)
        self._known_session_us = 0
        self._known_tests_us = 0
        self._file_start_us = 0
        self._failures_total = 0
        self._failures: list[_Listed] = []
        self._project = project
        self._groups: dict[tuple[str, str | None, str], _Group] = {}
        self._normalized_cache: dict[str, str] = {}
        self._other = _Group(OTHER_GROUP_ID, None, "", 0)
        # The key hashes of the causes ``gother`` folded (its message counts them).
        self._other_causes: set[int] = set()
        self._more_other_causes = False
        # The node id and group of the last failed subtest listed (a parent that only says
        # its subtests failed joins that group).
        self._last_subtest: tuple[str, _Group] | None = None
        self._collection_total = 0
        self._collection_traceback_omitted = 0
        self._collection_errors: list[dict[str, Any]] = []
        # (-duration_us, seq, node_id), ascending = largest first, ties by input order.
        self._slowest: list[tuple[int, int, str]] = []
        # A test must last longer than this to enter the list (0 durations never do;
        # with max_slowest 0 nothing does).
        self._slow_floor = 0 if self._max_slowest > 0 else U64_MAX
        self._text_bytes_omitted = 0
        self._output_bytes_omitted = 0
        self._selection = selection
        self._truncated: list[str] = []
        # One flag per select entry: it selected a failing/erroring test or a collection error.
        self._matched = [False] * len(selection.entries) if selection is not None else []
        self._budgets = budgets
        # Leads read again (``recover``): sequence number -> its group, then its listing.
        self._wanted: dict[int, _Group] = {}
        self._recovered: dict[int, _Listed] = {}
        # What the report logs said of their sessions (None: no report log).
        self._session: SessionFacts | None = None
        # Each test's outcome by node id, in report order, the first max_outcomes tests.
        self._max_outcomes = budgets["max_outcomes"]
        self._outcomes: dict[str, str] = {}
        # The report logs' collected ids read for the page (offset, limit, max_files)
        # asked for (None: none); each file's reader adds its ids to it, in input order.
        self.collected = CollectedFacts(*collected_page) if collected_page is not None else None

    @property
    def project(self) -> ProjectCode | None:
        """The project this builder decides library code by (None: the path-pattern rule)."""
        return self._project

    def add_session(self, facts: SessionFacts) -> None:
        """What the file just pushed (a report log) said of its session, after the
        earlier files'."""
        if self._session is None:
            self._session = facts
        else:
            self._session.merge(facts)

    def begin_file(self) -> None:
        """A file's records come next (its own tests' sum is measured from here)."""
        self._file_start_us = min(self._duration_us, U64_MAX)

    def end_file(self, session_us: int | None) -> None:
        """The file pushed since ``begin_file`` ran for ``session_us`` microseconds
        (pytest's session time; None when the report does not say: then its tests' sum
        counts). ``duration_s`` adds up the files' times (docs/ENGINE.md, *Summary
        JSON*); a builder never told counts the sum of all durations."""
        if session_us is not None:
            self._known_session_us += session_us
            self._known_tests_us += min(self._duration_us, U64_MAX) - self._file_start_us

    def note_truncated(self, path: str) -> None:
        """Say that the file ``path`` ended in the middle of a line (listed in ``truncated``)."""
        self._truncated.append(path)

    def _mark_matched(self, index: int) -> None:
        self._matched[index] = True

    def _select_marking(self, node_id: str) -> bool:
        """True when ``node_id`` is listed: no selection, or some entry selects it (and
        then every such entry is marked matched)."""
        return self._selection is None or self._selection.visit_matches(node_id, self._mark_matched)

    def push(self, item: TestRecord | CollectionErrorRecord) -> None:
        """Add one record, in report order (cheap for a passing test: a few counters
        and one comparison)."""
        seq = self._seq
        self._seq = seq + 1
        if isinstance(item, CollectionErrorRecord):
            self._push_collection_error(item)
            return
        outcome = item.outcome
        if item.subtest is not None:
            self._push_subtest(item, seq)
            return
        if item.passed_with_failed_subtests:
            self._passed_with_failed_subtests += 1
        if self._max_outcomes and (item.node_id in self._outcomes or len(self._outcomes) < self._max_outcomes):
            self._outcomes[item.node_id] = outcome
        self._counts[outcome] += 1
        if item.flaky:
            self._flaky += 1
        duration = item.duration_us
        self._duration_us += duration
        if outcome == "failed" or outcome == "error":
            if not self._select_marking(item.node_id):
                return  # counted above, listed nowhere
            self._push_failure(item, seq)
        elif self._selection is not None and duration > self._slow_floor and not self._selection.selects(item.node_id):
            return  # an unselected test is never among the slowest
        if duration > self._slow_floor:
            self._add_slow(duration, seq, item.node_id)

    def _push_subtest(self, record: TestRecord, seq: int) -> None:
        """One subtest report (docs/ENGINE.md, *Subtests*): counted apart from the tests; a
        failed one is listed like a failure of its test, never among the slowest."""
        if record.outcome not in ("failed", "error"):
            self._subtests_passed += 1
            return
        self._subtests_failed += 1
        self._duration_us += record.duration_us
        if self._select_marking(record.node_id):
            self._push_failure(record, seq)

    def _add_slow(self, duration_us: int, seq: int, node_id: str) -> None:
        """Insert a test longer than ``_slow_floor`` (later tests lose ties, so a full
        list only admits a strictly longer one)."""
        slowest = self._slowest
        bisect.insort(slowest, (-duration_us, seq, node_id))
        cap = self._max_slowest
        if len(slowest) >= cap:
            del slowest[cap:]
            self._slow_floor = -slowest[-1][0]

    def _push_failure(self, record: TestRecord, seq: int) -> None:
        self._failures_total += 1
        view = doctest_view(record.text) if record.text else None
        if view is not None:  # a doctest's failure, read as any failure (docs/ENGINE.md, *Doctests*)
            record.text, record.exception, record.message = view.text, view.exception, view.message
            record.frames = None  # they were the replaced text's
        self._text_bytes_omitted += record.text_bytes_omitted
        self._output_bytes_omitted += record.output_bytes_omitted
        exception, line, frames = self._described(record)
        last = self._last_subtest
        if (
            last is not None
            and record.subtest is None
            and exception is None
            and last[0] == record.node_id
            and _SUBTESTS_MARKER.fullmatch(line)
        ):
            # a test whose failure only says its subtests failed: the cause is theirs
            group = last[1]
            group.count += 1
            if len(group.examples) < self._max_examples:
                group.examples.append(record.node_id)
        else:
            group = self._add_to_group(exception, line, frames, seq, record.node_id)
        if record.subtest is not None:
            self._last_subtest = (record.node_id, group)
        listed: _Listed | None = None
        if group.representative is None:
            listed = group.representative = self._listed(record, seq, exception, line, frames, group.id)
        if len(self._failures) < self._failures_listed:
            self._failures.append(listed or self._listed(record, seq, exception, line, frames, group.id))

    def _described(self, record: TestRecord) -> tuple[str | None, str, DeepestFrames]:
        """A failure's exception, message line and the frames it is located and grouped
        by: all of its root cause when the root has a frame of project code and names
        its exception (docs/ENGINE.md, *Chained exceptions*), else of the record."""
        text = record.text or ""
        if record.frames is not None:
            frames, root = failure_frames_of_data(record.frames, text, self._project)
        else:
            frames, root = failure_frames(text, self._project)
        if root is not None:
            exception, line = describe(None, None, root)
            if exception is not None:
                return exception, line, frames
        exception, line = describe(record.exception, record.message, record.text)
        return exception, line, frames

    def _located_and_cut(
        self,
        text: str,
        code: tuple[str, int] | None,
        reported: tuple[str, int | None] | None,
        failure: tuple[str, str | None, ReprFrames | None] | None,
    ) -> tuple[dict[str, str | int | None] | None, str, int]:
        """Where a failure or collection error happened and its cut traceback (text, lines
        omitted): the deepest project frame ``code``, else the report's own ``reported``
        path and line, else the text's last location line, else a fixture lookup error's
        closing line (``fixture_location``); the path as shown
        (``display_path``). ``failure``: a failure's (node id, exception, frames as data), whose
        traceback is also tidied by the shown-traceback rules (``shown_traceback``); None
        for a collection error (its traceback is only cut)."""
        location: dict[str, str | int | None] | None
        if code is not None:
            location = {"path": display_path(code[0], self._project), "line": code[1]}
        elif reported is not None:
            location = {"path": display_path(reported[0], self._project), "line": reported[1]}
        else:
            location = _location_from_text(text)
            if location is None and (fixture := fixture_location(text)) is not None:
                location = {"path": fixture[0], "line": fixture[1]}
            if location is not None:
                location["path"] = display_path(str(location["path"]), self._project)
        if failure is None:
            traceback, omitted = cut_traceback(
                text, self._max_traceback_lines, self._max_line_chars, self._project, self._context_lines
            )
        else:
            where = None
            if location is not None:
                line = location["line"]
                where = (str(location["path"]), line if isinstance(line, int) else None)
            traceback, omitted = shown_traceback(
                text,
                self._max_traceback_lines,
                self._max_line_chars,
                self._project,
                self._context_lines,
                failure[0],
                where,
                failure[1],
                failure[2],
            )
        return location, traceback, omitted

    def _listed(
        self, record: TestRecord, seq: int, exception: str | None, line: str, frames: DeepestFrames, group_id: str
    ) -> _Listed:
        """A failure as listed: its location (the deepest frame of project code, else the
        record's, else the text's last location line) and its cut traceback."""
        text = record.text or ""
        reported = (record.path, record.line) if record.path is not None else None
        location, traceback, omitted = self._located_and_cut(
            text, frames.code, reported, (record.node_id, exception, record.frames)
        )
        message = capped(line, self._max_message_chars)
        entry = {
            "node_id": record.node_id,
            "subtest": record.subtest,
            "outcome": record.outcome,
            "phase": record.phase,
            "exception": exception,
            "message": message,
            "message_in_traceback": says_message(traceback, exception, message),
            "location": location,
            "traceback": traceback,
            "traceback_lines_omitted": omitted,
            "stdout": record.stdout or None,
            "stderr": record.stderr or None,
            "log": record.log or None,
            "text_bytes_omitted": record.text_bytes_omitted,
            "output_bytes_omitted": record.output_bytes_omitted,
            "group": group_id,
        }
        return seq, entry, omitted

    def _where(self, frame: Frame) -> str:
        return f"{display_path(frame[0], self._project)}:{frame[1]}"

    def _add_to_group(
        self, exception: str | None, message: str, frames: DeepestFrames, seq: int, node_id: str
    ) -> _Group:
        # The key (docs/ENGINE.md, *Groups*) is a fingerprint: the exception and the
        # innermost frame of the project's code under test, else of its tests; without a
        # frame, the normalised message with its values folded. The group lists its first
        # failure's normalised message.
        cache = self._normalized_cache
        normalized = cache.get(message)
        if normalized is None:
            if len(cache) >= 4096:  # bounded: repeated messages are usually close together
                cache.clear()
            normalized = cache[message] = normalize_capped(message, self._max_message_chars)
        frame = frames.non_test if frames.non_test is not None else frames.test
        key: tuple[str, str | None, str]
        if frame is not None:
            key = (exception or "", self._where(frame), "")
        else:
            key = (exception or "", None, fold_values(normalized))
        site: int | None = None
        suspect = self._suspect
        if (
            suspect is not None
            and (frames.non_test is None or exception == DOCTEST_FAILURE)
            and node_id in suspect.node_ids
        ):
            # the suspect's group, whatever its message or assertion site (the key it had)
            site = key_hash(key[0], key[2], key[1])
            key = ("", "\0suspect " + suspect.key, "")
        group = self._groups.get(key)
        if group is None:
            if len(self._groups) < self._group_limit:
                group = _Group(group_id(key_hash(key[0], key[2], key[1])), exception or None, normalized, seq)
                self._groups[key] = group
            else:
                group = self._other
                if group.count == 0:
                    group.first_seq = seq
                self._fold_cause(key_hash(key[0], key[2], key[1]))
        group.count += 1
        if len(group.examples) < self._max_examples:
            group.examples.append(node_id)
        if site is not None and group is not self._other:
            sites = group.sites if group.sites is not None else {}
            group.sites = sites
            tally = sites.get(site)
            if tally is not None:
                tally.count += 1
            elif len(sites) < SITES_TRACKED:
                sites[site] = _Site(seq, exception or "", normalized)
                if len(group.leads) < self._max_examples:
                    group.leads.append(node_id)
        return group

    def _fold_cause(self, hash_: int) -> None:
        # Count the distinct keys ``gother`` folds, up to OTHER_CAUSES_COUNTED.
        if len(self._other_causes) < OTHER_CAUSES_COUNTED:
            self._other_causes.add(hash_)
        elif hash_ not in self._other_causes:
            self._more_other_causes = True

    def _other_message(self) -> str:
        """``N other causes`` (``1 other cause``; ``more than N other causes`` past the
        count kept)."""
        n = len(self._other_causes)
        more = "more than " if self._more_other_causes else ""
        plural = "" if n == 1 and not self._more_other_causes else "s"
        return f"{more}{n} other cause{plural}"

    def _push_collection_error(self, record: CollectionErrorRecord) -> None:
        self._counts["error"] += 1
        if not self._select_marking(record.path):
            return
        self._collection_total += 1
        self._text_bytes_omitted += record.text_bytes_omitted
        if len(self._collection_errors) < self._max_collection_errors:
            # described, located and cut like a failure (its text is pytest's short-style
            # traceback): a chained one by its root cause (docs/ENGINE.md, *Chained exceptions*)
            text = record.text or ""
            frames, root = failure_frames(text, self._project)
            described = describe(None, None, root) if root is not None else (None, "")
            if described[0] is None:
                described = describe(record.exception, record.message, text)
            exception, line = described
            message = capped(line, self._max_message_chars)
            code = frames.code
            location, traceback, omitted = self._located_and_cut(text, code, None, None)
            self._collection_traceback_omitted += omitted
            self._collection_errors.append(
                {
                    "path": record.path,
                    "exception": exception,
                    "message": message,
                    "location": location,
                    "traceback": traceback,
                    "traceback_lines_omitted": omitted,
                    "text_bytes_omitted": record.text_bytes_omitted,
                }
            )

    def _session_json(self) -> dict[str, Any] | None:
        """The summary's ``session``: what the report logs said, with the collected ids."""
        if self._session is None:
            return None
        session = self._session.json()
        session["collected_ids"] = self.collected.json() if self.collected is not None else None
        return session

    def _listed_groups(self) -> tuple[list[_Group], int]:
        """The groups a summary lists, in order (largest first, ties by first appearance;
        ``gother`` takes part), and how many there are in all."""
        groups = list(self._groups.values())
        if self._other.count:
            self._other.message = self._other_message()
            groups.append(self._other)
        groups.sort(key=lambda g: (-g.count, g.first_seq))
        return groups[: self._max_groups], len(groups)

    def _kept_lead(self, group: _Group) -> tuple[_Site | None, _Listed | None]:
        """A listed group's lead site when its lead is not its first failure (else
        None), and the lead's listing when this builder has it: one of the first
        ``failures_listed`` failures, or read again (``recover``)."""
        lead = group.lead_site()
        if lead is None or group.representative is None or lead.first_seq == group.representative[0]:
            return None, None
        kept = next((f for f in self._failures if f[0] == lead.first_seq), None)
        return lead, kept or self._recovered.get(lead.first_seq)

    def missing_leads(self) -> bool:
        """True when a listed group's lead (docs/ENGINE.md, *Groups*, label) is not its
        first failure nor one of the first ``failures_listed`` failures, which this
        builder keeps: then feed every file again, in order, to ``recover`` before
        ``finish`` (the twin of ``missing_representatives`` in ``summary.rs``)."""
        for group in self._listed_groups()[0]:
            lead, listed = self._kept_lead(group)
            if lead is not None and listed is None:
                self._wanted[lead.first_seq] = group
        return bool(self._wanted)

    def recover(self, seq: int, item: TestRecord | CollectionErrorRecord) -> None:
        """The ``seq``-th record of the input again (counting from 0 over all files, as
        pushed): a listed group's lead that ``missing_leads`` asked for is listed from it."""
        group = self._wanted.get(seq)
        if group is None or not isinstance(item, TestRecord):
            return
        view = doctest_view(item.text) if item.text else None
        if view is not None:  # read as when it was pushed (docs/ENGINE.md, *Doctests*)
            item.text, item.exception, item.message = view.text, view.exception, view.message
            item.frames = None
        exception, line, frames = self._described(item)
        self._recovered[seq] = self._listed(item, seq, exception, line, frames, group.id)

    def _settle_leads(self, listed_groups: list[_Group]) -> None:
        """Label each listed group with sites by its lead (docs/ENGINE.md, *Groups*,
        label): its listing, exception and normalised message replace its first
        failure's. A lead this builder was not given again (no ``recover``) leaves the
        first failure."""
        for group in listed_groups:
            lead, listed = self._kept_lead(group)
            if lead is None or listed is None:
                continue
            group.representative = listed
            group.exception = listed[1]["exception"]
            group.message = lead.message

    def finish(self, format: str, files: list[str]) -> bytes:
        """The canonical summary JSON bytes (docs/ENGINE.md, *Summary JSON*).

        ``format``: ``junit``, ``pytest-json`` or ``reportlog``; ``files``: the input paths as given.
        """
        c = self._counts
        listed_groups, groups_total = self._listed_groups()
        self._settle_leads(listed_groups)
        # Failures: one representative per listed group (largest first), then the others
        # in report order, within failures_listed.
        failures = [g.representative for g in listed_groups if g.representative is not None][: self._failures_listed]
        shown = {listed[0] for listed in failures}
        room = self._failures_listed - len(failures)
        failures += [listed for listed in self._failures if listed[0] not in shown][:room]
        summary = {
            "format": format,
            "files": list(files),
            "counts": {
                "total": sum(c.values()),
                "passed": c["passed"],
                "failed": c["failed"],
                "errors": c["error"],
                "skipped": c["skipped"],
                "xfailed": c["xfailed"],
                "xpassed": c["xpassed"],
                "flaky": self._flaky,
                "subtests_passed": self._subtests_passed,
                "subtests_failed": self._subtests_failed,
                "passed_with_failed_subtests": self._passed_with_failed_subtests,
            },
            "duration_s": min(self._known_session_us + min(self._duration_us, U64_MAX) - self._known_tests_us, U64_MAX)
            / 1e6,
            "tests_duration_s": min(self._duration_us, U64_MAX) / 1e6,
            "failures": _with_repeats_marked([listed[1] for listed in failures]),
            "groups": [
                {
                    "id": g.id,
                    "count": g.count,
                    "exception": g.exception,
                    "message": g.message,
                    "location": g.representative[1]["location"] if g.representative is not None else None,
                    "examples": g.listed_examples(self._max_examples),
                }
                for g in listed_groups
            ],
            "collection_errors": self._collection_errors,
            "slowest": [{"node_id": node_id, "duration_s": -neg / 1e6} for neg, _seq, node_id in self._slowest],
            "omitted": {
                "failures": self._failures_total - len(failures),
                "groups": groups_total - len(listed_groups),
                "collection_errors": self._collection_total - len(self._collection_errors),
                "traceback_lines": sum(listed[2] for listed in failures) + self._collection_traceback_omitted,
                "output_bytes": min(self._output_bytes_omitted, U64_MAX),
                "text_bytes": min(self._text_bytes_omitted, U64_MAX),
            },
            "unmatched": self._selection.unmatched(self._matched) if self._selection is not None else [],
            "truncated": self._truncated,
            "session": self._session_json(),
            "outcomes": self._outcomes if self._max_outcomes else None,
        }
        return orjson.dumps(summary)


# Repeated failures (docs/ENGINE.md, *Failures*, ``same_as``).

_DIGIT_RUN = re.compile(r"[0-9]+")
"""A run of ASCII digits: ``[0-9]``, not ``\\d``, which in a ``str`` pattern also matches
other Unicode digits (the native backend's ``is_ascii_digit``)."""


def _with_repeats_marked(failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``failures`` (the listed failures, in order) each with ``same_as`` last: for the
    first failure of its group in the list whose shown texts (``_shown_shape``) are those
    of an earlier such failure, that failure's node id (the first one with the shape),
    unless it is the failure's own (another subtest of the same test: a pointer to
    itself says nothing); else None. A later failure of a group is never marked: a
    reader names it by its group's entry. New dicts: a listed entry is not changed."""
    groups_seen: set[str] = set()
    first_by_shape: dict[tuple[str | None, ...], str] = {}
    marked = []
    for failure in failures:
        same_as = None
        if failure["group"] not in groups_seen:
            groups_seen.add(failure["group"])
            first = first_by_shape.setdefault(_shown_shape(failure), failure["node_id"])
            if first != failure["node_id"]:
                same_as = first
        marked.append({**failure, "same_as": same_as})
    return marked


def _shown_shape(failure: dict[str, Any]) -> tuple[str | None, ...]:
    """What a reader shows in full of a failure, with what differs between copies of one
    test body left out: ``exception``, ``message``, ``traceback``, ``stdout``, ``stderr``
    and ``log``, each (None stays None) with the failure's own file (its node id before
    the first ``::``) written ``<file>``, then each run of ASCII digits written ``N``.
    Compared as a whole, field by field, so no text can pass for another field's."""
    own_file = failure["node_id"].partition("::")[0]

    def shape(text: str | None) -> str | None:
        if text is None:
            return None
        if own_file:
            text = text.replace(own_file, "<file>")
        return _DIGIT_RUN.sub("N", text)

    return tuple(shape(failure[name]) for name in ("exception", "message", "traceback", "stdout", "stderr", "log"))
