"""The report summary: pydantic models shared by the engine, the CLI and the MCP server.

These models are the public shape of a summary (field names are a contract, see
``docs/ENGINE.md``). They import nothing of the MCP SDK, so the CLI stays light.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
Phase = Literal["setup", "call", "teardown"]
ReportFormat = Literal["junit", "pytest-json", "reportlog"]
ErrorKind = Literal[
    "not_found",
    "unreadable",
    "not_a_report",
    "malformed",
    "forbidden",
    "unsupported_encoding",
    "mixed_formats",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Budgets(_Frozen):
    """How much of a report a summary keeps; everything cut is counted in ``Omitted``.

    All values are integers. Defaults are chosen so a summary of a large failing suite
    stays within a few kilobytes of text (see ``docs/ENGINE.md``, *Budgets*).
    """

    failures_listed: int = Field(20, ge=0, le=10_000, description="failures listed")
    max_traceback_lines: int = Field(40, ge=3, le=10_000, description="lines per traceback")
    max_line_chars: int = Field(200, ge=8, le=100_000, description="characters per traceback line")
    max_message_chars: int = Field(300, ge=8, le=100_000, description="characters per message")
    max_output_bytes: int = Field(2048, ge=0, le=1_048_576, description="bytes of stdout/stderr tail per failure")
    max_groups: int = Field(10, ge=0, le=10_000, description="failure groups listed")
    max_examples: int = Field(3, ge=0, le=1_000, description="example node ids per group")
    max_slowest: int = Field(5, ge=0, le=1_000, description="slowest tests listed")
    max_collection_errors: int = Field(20, ge=0, le=10_000, description="collection errors listed")
    max_log_bytes: int = Field(2048, ge=0, le=1_048_576, description="bytes of captured log records tail per failure")
    max_frame_context_lines: int = Field(
        3,
        ge=0,
        le=10_000,
        description="non-blank source lines kept before a traceback frame's `>` line (0: each frame on one line)",
    )
    max_warning_groups: int = Field(5, ge=0, le=10_000, description="warning groups listed")
    max_warning_locations: int = Field(3, ge=0, le=1_000, description="distinct locations listed per warning group")
    max_warning_chars: int = Field(200, ge=8, le=100_000, description="characters of a warning's message line")
    max_warning_frames: int = Field(3, ge=0, le=1_000, description="frames kept of an exception warning's traceback")
    max_outcomes: int = Field(
        0, ge=0, le=10_000_000, description="tests whose outcome is listed by node id, in report order (0: none)"
    )


def budget_bounds(name: str) -> tuple[int, int]:
    """The (smallest, largest) value ``Budgets`` accepts for the field ``name``
    (e.g. ``budget_bounds("max_traceback_lines") == (3, 10_000)``), read from the model
    so that the tool parameters that set a budget share its bounds.
    Raises ``KeyError`` for an unknown field."""
    low: int | None = None
    high: int | None = None
    for item in Budgets.model_fields[name].metadata:
        low = getattr(item, "ge", low)
        high = getattr(item, "le", high)
    if low is None or high is None:
        raise TypeError(f"Budgets.{name} has no ge/le bounds; give the field both")
    return low, high


class Counts(_Frozen):
    """Tests by outcome (pytest semantics). ``total`` is the sum of the six outcomes;
    a collection error counts as one ``errors``; ``flaky`` tests are also counted by
    their final outcome.

    Subtests (unittest's ``subTest``, pytest 9's ``subtests`` fixture) are counted apart:
    ``subtests_passed``, ``subtests_failed``. A test with failed subtests is counted
    ``failed``; ``passed_with_failed_subtests`` of those pytest itself counts as passed
    (unittest's). pytest's summary line is then: ``failed + subtests_failed -
    passed_with_failed_subtests`` failed, ``passed + passed_with_failed_subtests`` passed,
    ``subtests_passed`` subtests passed (docs/ENGINE.md, *Subtests*)."""

    total: int
    passed: int
    failed: int
    errors: int
    skipped: int
    xfailed: int
    xpassed: int
    flaky: int
    subtests_passed: int = 0
    subtests_failed: int = 0
    passed_with_failed_subtests: int = 0


class Location(_Frozen):
    """Where a failure happened: ``path`` as the report gives it, ``line`` 1-based."""

    path: str
    line: int | None


class Failure(_Frozen):
    """One failed or errored test, with its traceback cut down to what matters.

    ``subtest``: set when the entry is one failed subtest of the test ``node_id``: its
    label as pytest prints it (``[msg] (i=1)``), ``""`` when the report does not name it.
    ``log``: the test's captured log records, one per line (``LEVEL    logger:file:N msg``).
    ``traceback``: the text to show, final (cut and tidied by the engine: docs/ENGINE.md,
    *Traceback cutting*); ``traceback_lines_omitted``: the lines of the report's text the
    cut left out of it (its ``... [N lines omitted]`` markers, as a number);
    ``message_in_traceback``: an ``E`` line of ``traceback`` says ``exception: message``
    (an entry in full then writes no message line of its own). ``text_bytes_omitted`` and
    ``output_bytes_omitted``: UTF-8 bytes the report reader's caps dropped from this
    failure's text and message, and from its captured output and log
    (docs/ENGINE.md, *Text capping*). ``same_as``: for the first listed failure of its
    group, the node id of an earlier such failure whose exception, message, traceback,
    output and log are the same but for runs of ASCII digits and its own test file (the
    same test body copied into another module, the same check on other values), else
    None (docs/ENGINE.md, *Failures*): a reader that shows each group's first failure
    in full can point at that failure instead of repeating its traceback.
    """

    node_id: str
    subtest: str | None = None
    outcome: Literal["failed", "error"]
    phase: Phase | None
    exception: str | None
    message: str
    message_in_traceback: bool = False
    location: Location | None
    traceback: str = ""
    traceback_lines_omitted: int = 0
    stdout: str | None = None
    stderr: str | None = None
    log: str | None = None
    text_bytes_omitted: int = 0
    output_bytes_omitted: int = 0
    group: str
    same_as: str | None = None


class Group(_Frozen):
    """Failures that share a cause, by fingerprint: the same exception type raised at the
    same innermost frame of the project's code under test, else of its tests (of the root
    cause when chained); without a frame, the same normalised message with its values
    folded (docs/ENGINE.md, *Groups*). ``message`` and ``location`` are those of its first
    failure (listed first among the failures)."""

    id: str
    count: int
    exception: str | None
    message: str
    location: Location | None
    examples: list[str] = Field(default_factory=list)


TEST_DIRS = frozenset(("tests", "test"))
"""Directory names whose files are test code (``is_test_path``)."""


SNIFF_BYTES = 4096
"""The leading bytes of a file that format sniffing reads (docs/ENGINE.md, *Sniffing*), for
test reports and coverage reports alike (``SNIFF_BYTES`` in ``rust/core/src/lib.rs``)."""


def is_test_path(relative: str) -> bool:
    """Whether a ``/``-separated path (relative to the project root) is the project's
    test code: a basename ``test_*.py``, ``*_test.py`` or ``conftest.py``, or a directory
    part ``tests``/``test`` (docs/ENGINE.md, *Project code*; the twin of ``is_test_file``
    in ``rust/core/src/project.rs``)."""
    parts = relative.split("/")
    name = parts[-1]
    if (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py") or name == "conftest.py":
        return True
    return any(part in TEST_DIRS for part in parts[:-1])


class ProjectCode(_Frozen):
    """The project whose code an answer is about (docs/ENGINE.md, *Project code*):
    ``root``, its absolute root directory, and ``packages``, the top-level import names
    it installs (packages or single modules, e.g. ``["mypkg", "helpers"]``). A frame
    under ``root`` (outside site-packages) or inside ``site-packages/<package>`` is the
    project's own code; every other frame is library code.

    Raises ``pydantic.ValidationError`` for a relative root or a package name that is not
    a Python identifier.
    """

    root: str = Field(min_length=1, max_length=4096)
    packages: tuple[str, ...] = Field((), max_length=10_000)

    @field_validator("root")
    @classmethod
    def _absolute_root(cls, root: str) -> str:
        if not (root.startswith(("/", "\\")) or (len(root) >= 3 and root[1] == ":" and root[2] in "/\\")):
            raise ValueError(f"root must be an absolute path, not {root!r}")
        return root

    @field_validator("packages")
    @classmethod
    def _identifiers(cls, packages: tuple[str, ...]) -> tuple[str, ...]:
        bad = [p for p in packages if not p.isidentifier()]
        if bad:
            raise ValueError(f"package names must be Python identifiers (import names), not {bad[:3]!r}")
        return tuple(sorted(set(packages)))


class CollectionError(_Frozen):
    """A module or file that failed to collect; ``location`` is the innermost frame of
    its traceback (``path:line``), ``traceback`` cut like a failure's (not tidied: the
    shown-traceback rules are for failures), ``traceback_lines_omitted`` the lines the cut
    left out of it, ``text_bytes_omitted`` the UTF-8 bytes the reader's cap dropped from
    its text (docs/ENGINE.md, *Text capping*)."""

    path: str
    exception: str | None
    message: str
    location: Location | None = None
    traceback: str = ""
    traceback_lines_omitted: int = 0
    text_bytes_omitted: int = 0


class SlowTest(_Frozen):
    """A slow test; ``duration_s`` in seconds."""

    node_id: str
    duration_s: float


class Omitted(_Frozen):
    """What the budgets cut, so that truncation is never silent (counts of items,
    lines and bytes)."""

    failures: int = 0
    groups: int = 0
    collection_errors: int = 0
    traceback_lines: int = 0
    output_bytes: int = 0
    text_bytes: int = 0


class WarningGroup(_Frozen):
    """Warnings of one cause: same ``category`` (e.g. ``DeprecationWarning``) and
    ``message`` (its first line, capped). ``count``: how many were recorded.
    ``locations``: the first few distinct ``path:line`` where they were raised (paths as
    the summaries show frames: relative below the root, ``<site-packages>/pkg/mod.py``
    for an installed file, ``<stdlib>/re/_parser.py``, else ``.../`` and the last three
    components: docs/ENGINE.md, *Project code*). ``traceback``: for an exception in a
    thread or in ``__del__`` (``PytestUnhandledThreadExceptionWarning``,
    ``PytestUnraisableExceptionWarning``), the end of its traceback (the last frames,
    preferring the project's, and the exception line); else None."""

    category: str
    message: str
    count: int
    locations: list[str]
    traceback: str | None = None


class WarningsSummary(_Frozen):
    """The warnings pytest recorded during a run (``pytest_warning_recorded``).

    ``total``: warnings recorded. ``groups``: the first few distinct ones (in the order
    first seen), at most the budget ``max_warning_groups``; ``omitted``: distinct ones
    not listed (docs/ENGINE.md, *Warnings*)."""

    total: int = 0
    groups: list[WarningGroup] = Field(default_factory=list)
    omitted: int = 0


class SuspectGroup(_Frozen):
    """A cause found outside the report (docs/ENGINE.md, *Groups*, the suspect), e.g. the
    changed lines all the failing tests ran: a failure of one of ``node_ids`` with no
    frame of the project's code under test (its location test code, or none) or a
    doctest's wrong value joins one group keyed by ``key`` (``"src/pkg/mod.py:12-14"``),
    whatever its message or assertion site: one wrong value caught at several sites is
    one cause."""

    key: str
    node_ids: frozenset[str]


class RunningTest(_Frozen):
    """A test that started and whose teardown report never came: ``node_id``, and
    ``started``, when it started (unix time, seconds)."""

    node_id: str
    started: float


class CollectedPage(_Frozen):
    """A page of the node ids a collect-only run wrote (the server plugin's
    ``CollectedIds`` lines), asked of ``read_report`` (docs/ENGINE.md, *Session*): the ids
    ``[offset, offset + limit)``, counted over the files in input order, and the first
    ``max_files`` files (in collection order) listed with their test counts. Memory is
    the page's ids and the files' paths, whatever the number of ids.

    Raises ``pydantic.ValidationError`` for a negative number or one beyond its bound."""

    offset: int = Field(ge=0, le=2**63 - 1, description="node ids before the page")
    limit: int = Field(ge=0, le=10_000_000, description="node ids in the page at most")
    max_files: int = Field(ge=0, le=10_000_000, description="files listed with their test counts")


class CollectedIds(_Frozen):
    """The node ids a collect-only run wrote, for a ``CollectedPage`` (docs/ENGINE.md,
    *Session*). ``total``: the ids (strings of the ``nodeids`` arrays; other values are
    skipped). ``files``: tests per file (a node id's path, before its first ``::``), the
    first ``max_files`` files in collection order; ``files_omitted``: the distinct files
    not listed. ``page``: the ids ``[offset, offset + limit)``, whole, in order (fewer at
    the end; none beyond it)."""

    total: int = 0
    files: dict[str, int] = Field(default_factory=dict)
    files_omitted: int = 0
    page: list[str] = Field(default_factory=list)


class Session(_Frozen):
    """What a report log says of its session beyond its tests (docs/ENGINE.md,
    *Session*; the server's plugin writes all of it, pytest-reportlog some).

    ``exit_status``: pytest's exit status from SessionFinish (None: the session never
    finished). ``collected``: tests collected (None: collection never finished).
    ``deselected``: tests deselected. ``running``: tests started and not finished, in
    start order (with xdist, several). ``stack_dump_armed``: the plugin armed its stack
    dump. ``warnings``: the warnings recorded, grouped. ``collected_ids``: with a
    ``CollectedPage`` asked for, the collected node ids' page and counts, else None.
    Several files: the highest exit status, counts added up, running tests and warnings
    in file order, the collected ids counted over the files in input order."""

    exit_status: int | None = None
    collected: int | None = None
    deselected: int = 0
    running: list[RunningTest] = Field(default_factory=list)
    stack_dump_armed: bool = False
    warnings: WarningsSummary = Field(default_factory=WarningsSummary)
    collected_ids: CollectedIds | None = None


class ReportSummary(_Frozen):
    """A compact summary of one or more JUnit XML, pytest-json-report or pytest report-log files.

    ``duration_s``: pytest's session time in seconds when the report says it
    (pytest-json-report's ``duration``; a report log's SessionFinish ``duration``, else
    its last report ``stop`` minus its first ``start``), else the sum of the test
    durations; several files add up. ``tests_duration_s``: the sum of the test durations
    in seconds (tests run in parallel count each).
    ``files`` lists the input paths in the order given. ``unmatched``: with a node-id
    selection, its entries (as given, in order) that selected no failing/erroring test
    and no collection error; always ``[]`` without one. See ``docs/ENGINE.md``.
    """

    format: ReportFormat
    files: list[str]
    counts: Counts
    duration_s: float
    tests_duration_s: float
    failures: list[Failure]
    groups: list[Group]
    collection_errors: list[CollectionError] = Field(default_factory=list)
    slowest: list[SlowTest] = Field(default_factory=list)
    omitted: Omitted = Field(default_factory=Omitted)
    unmatched: list[str] = Field(default_factory=list)
    truncated: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no test failed or errored (0 tests is ok here; callers that run
        tests treat an empty run separately)."""
        return self.counts.failed == 0 and self.counts.errors == 0


class RunReport(ReportSummary):
    """The engine's whole reading of report files: the summary, and what a report log
    says of its run (the record file of a server run: docs/ENGINE.md, *Session*).

    ``session``: None for other formats. ``outcomes``: with the budget ``max_outcomes``
    above 0, the first that many tests' outcomes by node id, in report order (the
    outcome each is counted with), else None."""

    session: Session | None = None
    outcomes: dict[str, Outcome] | None = None

    def summary(self) -> ReportSummary:
        """The summary alone (what answers carry)."""
        return ReportSummary.model_construct(**{name: getattr(self, name) for name in ReportSummary.model_fields})

    def to_json(self) -> bytes:
        """The canonical JSON bytes (the same bytes both backends write)."""
        import orjson

        return orjson.dumps(self.model_dump(mode="json"))


class ReportError(Exception):
    """A report that cannot be summarised.

    ``kind`` is one of ``ErrorKind``; ``path`` the file; ``position`` where reading
    stopped (``"line 3, column 7"``, ``"byte 1042"``) or None; ``message`` says what
    happened and what to do.
    """

    def __init__(self, kind: str, path: str, message: str, position: str | None = None) -> None:
        self.kind = kind
        self.path = path
        self.position = position
        self.message = message
        where = f"{path}" + (f" ({position})" if position else "")
        super().__init__(f"{where}: {message}")

    @classmethod
    def from_os_error(cls, path: str, exc: OSError) -> ReportError:
        """The error for a file that could not be opened or read: ``not_found`` for a
        missing file, else ``unreadable`` (the twin of ``ReportError::from_io`` in
        ``rust/core/src/error.rs``)."""
        if isinstance(exc, FileNotFoundError):
            return cls("not_found", path, "no such file; check the path")
        reason = exc.strerror or exc
        return cls("unreadable", path, f"cannot read the file ({reason}); check that it is a readable regular file")
