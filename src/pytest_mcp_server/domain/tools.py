"""What each tool takes and answers: the parameter models (validated arguments of an
agent) and the result models (a workflow's result: the answer text and the structured
content are shaped from it by the MCP adapter, ``adapters.mcp``).

Every string an agent sends is checked by a field validator (``validation``,
``expressions``) before anything reaches an argv or a path; lists and strings have
size limits; unknown arguments are refused (``extra="forbid"``); nothing is coerced
(``strict``: a JSON string never becomes an int). The tools' input and output schemas
are generated from these models (``adapters.mcp.catalogue.input_schema`` and
``output_schema``).

Budget defaults come from the presets in ``domain.policy`` (``EXECUTE_BUDGETS``,
``FULL_STORY``) and ``Budgets()``, and their lower bounds from ``Budgets`` itself.
No MCP import.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from pytest_mcp_server.domain.coverage_answer import CoverageSummary
from pytest_mcp_server.domain.expressions import check_expression
from pytest_mcp_server.domain.flaky import FlakyTest
from pytest_mcp_server.domain.policy import (
    DEFAULT_DISCOVER_LIMIT,
    EXECUTE_BUDGETS,
    EXECUTE_MAX_OUTPUT_BYTES,
    EXECUTE_MAX_TRACEBACK_LINES,
    FULL_STORY,
    MAX_DISCOVER_LIMIT,
    MAX_DISCOVER_OFFSET,
    MAX_EXPRESSION_CHARS,
    MAX_FAILURES_LISTED,
    MAX_NODE_IDS,
    MAX_REPEAT,
    MAX_REPORT_PATHS,
    MAX_WORKERS,
    TIMEOUT_LIMIT_S,
)
from pytest_mcp_server.domain.selection import Selection
from pytest_mcp_server.domain.suspects import Suspect
from pytest_mcp_server.domain.validation import check_filter_node_id, check_node_id_syntax, check_report_path
from pytest_mcp_server.engine.models import (
    Budgets,
    CollectionError,
    ReportSummary,
    WarningsSummary,
    _Frozen,
    budget_bounds,
)


class ParamsModel(BaseModel):
    """Base of the parameter models: frozen, unknown arguments refused, and strict (a
    JSON string is never coerced into an int or a bool)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


NodeId = Annotated[str, AfterValidator(check_node_id_syntax)]
"""A node id or path from an agent that reaches pytest's argv (``check_node_id_syntax``)."""
ReportPath = Annotated[str, AfterValidator(check_report_path)]
"""A report file path from an agent (``check_report_path``)."""
FilterNodeId = Annotated[str, AfterValidator(check_filter_node_id)]
"""A node id that only filters a report (``check_filter_node_id``)."""


def _summarize_default(budget: str, what: str) -> str:
    """``summarize_report``'s description of a budget: ``what`` it bounds and its
    default, from the presets: ``"lines per traceback; default 40, 400 with node_ids"``."""
    plain, story = getattr(Budgets(), budget), getattr(FULL_STORY, budget)
    return f"{what}; default {plain}" + ("" if plain == story else f", {story} with node_ids")


class SelectionParams(ParamsModel):
    """What to run or collect: node ids or paths, a ``-m`` and a ``-k`` expression
    (shared by ``execute_tests`` and ``discover_tests``)."""

    node_ids: list[NodeId] = Field(
        default_factory=list,
        max_length=MAX_NODE_IDS,
        description="paths or node ids; default: testpaths",
    )
    markers: str | None = Field(None, max_length=MAX_EXPRESSION_CHARS, description="-m expression")
    keywords: str | None = Field(None, max_length=MAX_EXPRESSION_CHARS, description="-k expression")

    @field_validator("markers")
    @classmethod
    def _markers(cls, value: str | None) -> str | None:
        return _optional_expression(value, markers=True)

    @field_validator("keywords")
    @classmethod
    def _keywords(cls, value: str | None) -> str | None:
        return _optional_expression(value, markers=False)


def _optional_expression(value: str | None, *, markers: bool) -> str | None:
    if value is None:
        return None
    stripped = check_expression(value, markers=markers)
    return stripped or None


class ExecuteParams(SelectionParams):
    """Arguments of ``execute_tests``. Budgets shape the answer, not the run; their
    defaults are ``EXECUTE_BUDGETS``."""

    max_failures: int | None = Field(None, ge=1, le=100_000, description="stop after N failures (--maxfail)")
    failfast: bool = Field(False, description="stop at the first failure (-x)")
    last_failed: bool = Field(False, description="only tests that failed last run (--lf)")
    workers: int | None = Field(None, ge=1, le=MAX_WORKERS, description="parallel workers (pytest-xdist -n)")
    repeat: int = Field(1, ge=1, le=MAX_REPEAT, description="run N times, find flaky tests")
    timeout_s: float | None = Field(None, gt=0, le=TIMEOUT_LIMIT_S, description="seconds before the run is killed")
    coverage: bool = Field(False, description="line coverage via pytest-cov")
    affected: bool = Field(False, description="run only the tests changes can affect")
    failures_listed: int = Field(
        EXECUTE_BUDGETS.failures_listed,
        ge=budget_bounds("failures_listed")[0],
        le=MAX_FAILURES_LISTED,
        description="failures shown",
    )
    traceback_lines: int = Field(
        EXECUTE_BUDGETS.max_traceback_lines,
        ge=budget_bounds("max_traceback_lines")[0],
        le=EXECUTE_MAX_TRACEBACK_LINES,
        description="lines kept per traceback",
    )
    output_bytes: int = Field(
        EXECUTE_BUDGETS.max_output_bytes,
        ge=budget_bounds("max_output_bytes")[0],
        le=EXECUTE_MAX_OUTPUT_BYTES,
        description="captured output kept per failure",
    )

    @field_validator("repeat")
    @classmethod
    def _repeat(cls, value: int, info: ValidationInfo) -> int:
        if value > 1 and info.data.get("last_failed"):
            raise ValueError(
                "last_failed would change the selection between runs (each run rewrites the record of failures); "
                "give the failing tests as node_ids to repeat them, or use repeat 1"
            )
        return value

    @field_validator("affected")
    @classmethod
    def _affected(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("repeat", 1) > 1:
            raise ValueError(
                "affected with repeat is not supported: the affected tests would change between runs; "
                "run affected once, then repeat the tests it ran as node_ids"
            )
        if value and info.data.get("coverage"):
            raise ValueError(
                "affected with coverage is not supported yet (both measure with coverage.py in one process); "
                "use one of them"
            )
        return value

    def budgets(self) -> Budgets:
        """The report engine's budgets for this call: ``EXECUTE_BUDGETS`` with the
        three budgets given here."""
        return EXECUTE_BUDGETS.model_copy(
            update={
                "failures_listed": self.failures_listed,
                "max_traceback_lines": self.traceback_lines,
                "max_output_bytes": self.output_bytes,
            }
        )


class DiscoverParams(SelectionParams):
    """Arguments of ``discover_tests``: the selection, and a page of node ids."""

    offset: int = Field(0, ge=0, le=MAX_DISCOVER_OFFSET)
    limit: int = Field(DEFAULT_DISCOVER_LIMIT, ge=0, le=MAX_DISCOVER_LIMIT, description="node ids per page")
    affected: bool = Field(False, description="the plan of execute_tests affected=true, with reasons")


class SummarizeParams(ParamsModel):
    """Arguments of ``summarize_report``. Without ``node_ids`` the engine's default
    budgets (``Budgets()``) apply; with ``node_ids`` the defaults are ``FULL_STORY``
    (long tracebacks, output)."""

    paths: list[ReportPath] = Field(
        default_factory=list,
        max_length=MAX_REPORT_PATHS,
        description="report files in the project, or a run's report_path",
    )
    node_ids: list[FilterNodeId] | None = Field(
        None, max_length=MAX_NODE_IDS, description="only failures of these tests (or tests under these paths)"
    )
    failures_listed: int | None = Field(
        None,
        ge=budget_bounds("failures_listed")[0],
        le=MAX_FAILURES_LISTED,
        description=_summarize_default("failures_listed", "failures shown"),
    )
    traceback_lines: int | None = Field(
        None,
        ge=budget_bounds("max_traceback_lines")[0],
        le=budget_bounds("max_traceback_lines")[1],
        description=_summarize_default("max_traceback_lines", "lines per traceback"),
    )
    output_bytes: int | None = Field(
        None,
        ge=budget_bounds("max_output_bytes")[0],
        le=budget_bounds("max_output_bytes")[1],
        description=_summarize_default("max_output_bytes", "output bytes per failure"),
    )

    def budgets(self) -> Budgets:
        """The budgets for this call: ``FULL_STORY`` when ``node_ids`` is given, else
        ``Budgets()``, with the budgets given here."""
        base = FULL_STORY if self.node_ids else Budgets()
        changes = {
            "failures_listed": self.failures_listed,
            "max_traceback_lines": self.traceback_lines,
            "max_output_bytes": self.output_bytes,
        }
        return base.model_copy(update={k: v for k, v in changes.items() if v is not None})


RunStatus = Literal["passed", "failed", "no_tests", "interrupted"]
"""How a run ended: pytest's exits 0, 1, 5 and 2 (see ``ExecuteResult``)."""


class ExecuteResult(_Frozen):
    """The answer of ``execute_tests``.

    ``status``: ``passed`` (exit 0), ``failed`` (exit 1), ``no_tests`` (exit 5: nothing
    ran, never green), ``interrupted`` (exit 2: collection errors or an interrupt; the
    summary lists them). ``exit_code``: pytest's. ``duration_s``: pytest's session time,
    seconds, as its last line gives it (``in 8.53s``; the process's wall time when the
    session did not finish). ``command``: the exact argv run (cwd = the project root).
    ``report_path``: the report file the summary came from, for ``summarize_report``.
    ``summary``: the report engine's summary. The MCP adapter shapes the structured
    content from it (the answer views' typed fields: ``adapters.mcp.structured.execute_fields``;
    the ``typed`` view: ``adapters.mcp.structured.execute_structured``).
    ``runs``: how many runs the call made (``repeat``); with more than one, every field
    above describes the last run, except ``summary.counts.flaky``: the number of tests
    whose outcome changed between runs, and ``flaky``: those tests (the first
    ``failures_listed``, in the order first seen), each with its pattern and the
    failure of its last failing run (``flaky.FlakyTest``; serialised like the summary's
    failures, without traceback and output tails).
    ``warnings``: the warnings pytest recorded (see ``WarningsSummary``).
    ``deselected``: collected tests that ``-m``/``-k`` (the agent's or the project's
    ``addopts``) or ``--lf`` deselected.
    ``coverage``: with ``coverage: true``, the line coverage of the run
    (``domain.coverage_answer.CoverageSummary``; its ``data_path`` written with ``{run_dir}``);
    else None.
    ``suspects``: in a run that records what each test ran (``coverage: true``, or
    ``affected``; with ``repeat``, the last run's failing tests) with failing tests in
    a git work tree, the changed code the failing tests ran, best first
    (``domain.suspects.Suspect``, at most ``SUSPECTS_LISTED``; [] when they ran none of
    it); in a plain call with failing tests and the test map an earlier affected call
    left, the same as the map last recorded them (``app.map_suspects``); else None.
    ``selection``: with ``affected: true``, which tests were affected and why
    (``domain.selection.Selection``); else None. When none was, no test ran: ``status``
    ``no_tests``, ``exit_code`` 5, ``command`` and ``report_path`` those of the pytest
    run that collected and deselected every test, or, when the server proved that
    nothing can fail without starting pytest (``app.collection_proof``), the argv pytest
    would have run and the record file written in its place.
    ``cold_start``: why the run started cold though a warm spare was there (it could
    have differed from a cold process: ``run.warm``), one phrase; else None.
    """

    status: RunStatus
    exit_code: int
    duration_s: float
    command: list[str]
    report_path: str
    summary: ReportSummary
    warnings: WarningsSummary = Field(default_factory=WarningsSummary)
    runs: int = 1
    flaky: list[FlakyTest] = Field(default_factory=list)
    deselected: int = 0
    coverage: CoverageSummary | None = None
    suspects: list[Suspect] | None = None
    selection: Selection | None = None
    cold_start: str | None = None


class DiscoverResult(_Frozen):
    """The answer of ``discover_tests`` (collection only, nothing runs).

    ``total``: tests collected (after ``-m``/``-k``). ``files``: tests per file, in
    collection order (at most ``policy.MAX_FILES_LISTED`` files; ``files_omitted``
    counts the rest). ``node_ids``: the page ``[offset, offset+limit)``;
    ``next_offset``: where the next page starts, or None at the end.
    ``collection_errors``: files that failed to import. ``duration_s``: pytest's session
    time of the collect run, seconds.
    With ``affected``: ``selection`` (``affected.Selection``, its ``tests`` the page
    with each test's reason), and ``node_ids`` and ``next_offset`` page over the
    selected tests, not all collected ones; else ``selection`` is None.
    ``cold_start``: as ``ExecuteResult``'s.
    """

    total: int
    files: dict[str, int]
    files_omitted: int
    node_ids: list[str]
    next_offset: int | None
    collection_errors: list[CollectionError]
    duration_s: float
    selection: Selection | None = None
    cold_start: str | None = None


class SummarizeResult(_Frozen):
    """The answer of ``summarize_report``: the engine's ``summary`` (with ``node_ids``,
    its failures, groups, collection errors, slowest tests and ``omitted`` cover only
    those tests; counts stay the whole report's) and ``not_failing``: requested node ids
    that matched no failure nor collection error (they passed, were skipped, or are not
    in the report; the same as ``summary.unmatched``). ``full_story``: node ids were
    given, so the text lists every listed failure in full, each its own entry (no
    ``also in`` folding, no group table). ``coverage``: for coverage reports (coverage.py
    JSON, Cobertura XML) their line coverage, and ``summary`` None; else None."""

    summary: ReportSummary | None
    not_failing: list[str]
    full_story: bool = False
    coverage: CoverageSummary | None = None
