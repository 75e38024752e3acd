"""The MCP tools' domain: parameters, results, validation and the ``ToolFailure`` error.

Nothing here imports the MCP SDK. ``mcp_adapter`` turns MCP arguments into these
parameter models (``from_mcp_*``) and these results into MCP results (``to_mcp_*``);
the tools' input and output schemas are generated from the models below
(``input_schema``/``output_schema``), never written by hand.

The agent is untrusted. Every string it sends is checked here before anything reaches
an argv or a path: node ids and report paths (``check_node_id_syntax``,
``resolve_inside``), ``-m``/``-k`` expressions (``check_expression``, pytest's own
grammar), sizes of lists and strings (field limits), unknown arguments
(``extra="forbid"``). A refusal is a ``ToolFailure`` of kind ``invalid_argument``
naming the field (``node_ids[2]``) and the reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from .models import Budgets, CollectionError, ReportSummary

# --------------------------------------------------------------------------------------
# Limits (the answer to "oversized lists or strings")

MAX_NODE_IDS = 500
MAX_NODE_ID_CHARS = 1000
MAX_EXPRESSION_CHARS = 1000
MAX_REPORT_PATHS = 64
MAX_PATH_CHARS = 4096

FailureKind = Literal[
    "invalid_argument",
    "timeout",
    "usage_error",
    "internal_error",
    "crashed",
    "pytest_missing",
    "report_error",
]
"""Why a tool call did not produce a result.

* ``invalid_argument``: refused before any process started (``field`` names the argument).
* ``timeout``: pytest ran longer than ``timeout_s``; its process group was killed.
* ``usage_error``: pytest exited 4 (bad option or node id it could not find).
* ``internal_error``: pytest exited 3, or the server itself failed.
* ``crashed``: pytest died from a signal, exited with a code pytest never uses, or wrote no report.
* ``pytest_missing``: the project's interpreter cannot import pytest.
* ``report_error``: a report file cannot be summarised (``report_error_kind`` says why).
"""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Params(BaseModel):
    # strict: a JSON string is never coerced into an int or a bool.
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


# --------------------------------------------------------------------------------------
# Server configuration


class ServerConfig(_Frozen):
    """The server's own options (from the command line, never from an agent).

    ``root``: the project directory; every path an agent gives must resolve inside it
    (made absolute and symlink-free here). ``python``: the interpreter that runs the
    project's tests, or None to find one (``<root>/.venv``, ``<root>/venv``,
    ``$VIRTUAL_ENV``, else the server's own). ``max_timeout_s``: the largest
    ``timeout_s`` an agent may get, seconds. ``max_concurrent``: pytest processes at
    once. ``artifacts_dir``: where run reports are kept (None: the user cache
    directory); it must not be inside ``root``.

    Raises ``pydantic.ValidationError`` when ``root`` is not a directory, ``python`` does
    not exist, or ``artifacts_dir`` is inside ``root``.
    """

    root: Path
    python: Path | None = None
    max_timeout_s: float = Field(600.0, gt=0, le=7 * 24 * 3600)
    max_concurrent: int = Field(2, ge=1, le=64)
    artifacts_dir: Path | None = None

    @field_validator("root")
    @classmethod
    def _root_is_a_directory(cls, value: Path) -> Path:
        resolved = value.expanduser().resolve()
        if not resolved.is_dir():
            raise ValueError(f"{value} is not a directory; pass the project directory with --root")
        return resolved

    @field_validator("python")
    @classmethod
    def _python_exists(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        path = value.expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
        if not path.is_file() or not os.access(path, os.X_OK):
            raise ValueError(f"{value} is not an executable file; pass the project's Python with --python")
        return path  # not resolved: a venv's python is a symlink whose location matters

    @field_validator("artifacts_dir")
    @classmethod
    def _artifacts_outside_root(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is None:
            return None
        resolved = value.expanduser().resolve()
        root = info.data.get("root")
        if root is not None and (resolved == root or root in resolved.parents):
            raise ValueError(
                f"{resolved} is inside the project {root}; choose a directory outside it "
                "(reports must not land in the project)"
            )
        return resolved


def default_artifacts_base() -> Path:
    """The user cache directory for run reports: ``$XDG_CACHE_HOME/pytest-mcp-server``
    (``~/.cache`` when unset), ``~/Library/Caches/pytest-mcp-server`` on macOS,
    ``%LOCALAPPDATA%\\pytest-mcp-server`` on Windows."""
    import sys

    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "pytest-mcp-server"


# --------------------------------------------------------------------------------------
# Failures


class ToolFailureDetail(_Frozen):
    """The structured content of a failed tool call (``is_error``).

    ``kind``: see ``FailureKind``. ``message``: what happened, where, what to do.
    ``field``: the refused argument (``invalid_argument``), e.g. ``node_ids[2]``.
    ``exit_code``: pytest's exit status, or ``None`` when it was killed or never ran;
    ``signal``: the signal that ended it (e.g. ``SIGKILL``). ``command``: the argv run.
    ``stdout_tail``/``stderr_tail``: the last bytes pytest wrote (bounded).
    ``report_error_kind``: the report engine's error kind (``report_error``).
    """

    kind: FailureKind
    message: str
    field: str | None = None
    exit_code: int | None = None
    signal: str | None = None
    command: list[str] | None = None
    duration_s: float | None = None
    stdout_tail: str | None = None
    stderr_tail: str | None = None
    report_error_kind: str | None = None


class ToolFailure(Exception):
    """A tool call that produced no result; carries a ``ToolFailureDetail``.

    Raised by the workflows in ``runner`` and by the validation here; the adapter turns
    it into an MCP tool error (``is_error``) with ``detail`` as structured content.
    """

    def __init__(self, kind: FailureKind, message: str, **fields: Any) -> None:
        self.detail = ToolFailureDetail(kind=kind, message=message, **fields)
        super().__init__(message)

    @property
    def kind(self) -> FailureKind:
        return self.detail.kind


def invalid(field: str, reason: str) -> ToolFailure:
    """A refusal of one argument: ``ToolFailure('invalid_argument', '<field>: <reason>')``."""
    return ToolFailure("invalid_argument", f"{field}: {reason}", field=field)


# --------------------------------------------------------------------------------------
# Syntax checks (no filesystem access)

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_plain_text(value: str, what: str = "value") -> str:
    """Refuse NUL and control characters (``ValueError``); returns ``value``."""
    m = _CONTROL.search(value)
    if m:
        raise ValueError(f"contains the control character {m.group()!r} at index {m.start()}; {what}s are plain text")
    return value


def check_node_id_syntax(value: str) -> str:
    """Check the form of a node id or path an agent gave (``ValueError`` with the reason).

    Refused: empty, control characters (NUL included), a leading ``-`` (pytest would read
    an option) or ``@`` (pytest reads arguments from ``@file``), an absolute path, a
    ``..`` segment in the path part (the part before the first ``::``). Whether the path
    exists inside the root is checked by ``resolve_inside``.
    """
    if not value.strip():
        raise ValueError("is empty; give a path or node id relative to the project root")
    check_plain_text(value, "node id")
    if value[0] in "-@":
        raise ValueError(
            f"starts with {value[0]!r}, which pytest would read as "
            + ("an option" if value[0] == "-" else "an @argument-file")
            + "; give a path relative to the project root"
        )
    path = value.split("::", 1)[0]
    if os.path.isabs(path) or path.startswith("~") or re.match(r"^[A-Za-z]:", path):
        raise ValueError("is an absolute path; give a path relative to the project root")
    if ".." in re.split(r"[\\/]", path):
        raise ValueError("contains '..'; give a path inside the project root")
    return value


# pytest's match-expression grammar (_pytest/mark/expression.py, pytest 8.3-9.x):
#   expression: expr? EOF
#   expr:       and_expr ('or' and_expr)*
#   and_expr:   not_expr ('and' not_expr)*
#   not_expr:   'not' not_expr | '(' expr ')' | ident kwargs?
#   ident:      (\w|:|\+|-|\.|\[|\]|\\|/)+
#   kwargs:     ('(' name '=' value ( ', ' name '=' value )*  ')')
#   value:      (unescaped) string literal | (-)?[0-9]+ | 'False' | 'True' | 'None'
_IDENT = re.compile(r"(:?\w|:|\+|-|\.|\[|\]|\\|/)+")


def _lex(expr: str) -> list[tuple[str, str, int]]:
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(expr):
        ch = expr[pos]
        if ch in " \t":
            pos += 1
        elif ch in "()=,":
            tokens.append((ch, ch, pos))
            pos += 1
        elif ch in "'\"":
            end = expr.find(ch, pos + 1)
            if end == -1:
                raise ValueError(f"closing quote {ch} is missing (column {pos + 1})")
            value = expr[pos : end + 1]
            if "\\" in value:
                raise ValueError(f"escaping with '\\' is not supported (column {pos + value.index(chr(92)) + 1})")
            tokens.append(("string", value, pos))
            pos = end + 1
        else:
            m = _IDENT.match(expr, pos)
            if not m:
                raise ValueError(f"unexpected character {ch!r} (column {pos + 1})")
            word = m.group(0)
            tokens.append((word if word in ("or", "and", "not") else "ident", word, pos))
            pos = m.end()
    tokens.append(("eof", "", pos))
    return tokens


class _ExprParser:
    def __init__(self, expr: str, allow_kwargs: bool) -> None:
        self.tokens = _lex(expr)
        self.i = 0
        self.allow_kwargs = allow_kwargs

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def accept(self, kind: str) -> tuple[str, str, int] | None:
        tok = self.tokens[self.i]
        if tok[0] == kind:
            if kind != "eof":
                self.i += 1
            return tok
        return None

    def expect(self, kind: str, label: str) -> tuple[str, str, int]:
        tok = self.accept(kind)
        if tok is None:
            got = self.peek()
            raise ValueError(f"expected {label}, got {got[1] or 'end of input'!r} (column {got[2] + 1})")
        return tok

    def parse(self) -> None:
        if self.accept("eof"):
            return
        self.expr()
        self.expect("eof", "end of input")

    def expr(self) -> None:
        self.and_expr()
        while self.accept("or"):
            self.and_expr()

    def and_expr(self) -> None:
        self.not_expr()
        while self.accept("and"):
            self.not_expr()

    def not_expr(self) -> None:
        if self.accept("not"):
            self.not_expr()
            return
        if self.accept("("):
            self.expr()
            self.expect(")", "')'")
            return
        if self.accept("ident"):
            if self.peek()[0] == "(":
                if not self.allow_kwargs:
                    raise ValueError(f"keyword expressions take no arguments (column {self.peek()[2] + 1})")
                self.accept("(")
                self.kwarg()
                while self.accept(","):
                    self.kwarg()
                self.expect(")", "')'")
            return
        got = self.peek()
        raise ValueError(f"expected 'not', '(' or a name, got {got[1] or 'end of input'!r} (column {got[2] + 1})")

    def kwarg(self) -> None:
        import keyword

        name = self.expect("ident", "an argument name")
        if not name[1].isidentifier() or keyword.iskeyword(name[1]):
            raise ValueError(f"{name[1]!r} is not a valid argument name (column {name[2] + 1})")
        self.expect("=", "'='")
        if self.accept("string"):
            return
        value = self.expect("ident", "a value")
        v = value[1]
        if not (v.isdigit() or (v.startswith("-") and v[1:].isdigit()) or v in ("True", "False", "None")):
            raise ValueError(f"{v!r} is not a string, integer, True, False or None (column {value[2] + 1})")


def check_expression(expr: str, *, markers: bool) -> str:
    """Check a ``-m`` (``markers=True``) or ``-k`` expression against pytest's grammar.

    Names, ``and``/``or``/``not``, parentheses; ``-m`` names may take keyword arguments
    (``slow(reason="x")``). Also refused: control characters, a leading ``-`` or ``@``
    (pytest would read an option; wrap the name in parentheses: ``(-x)``).
    Returns the stripped expression; raises ``ValueError`` with the reason and column.
    """
    check_plain_text(expr.replace("\t", " "), "expression")
    stripped = expr.strip(" \t")
    if stripped[:1] in ("-", "@"):
        raise ValueError(
            f"starts with {stripped[0]!r}, which pytest would read as an option; write ({stripped}) instead"
        )
    _ExprParser(stripped, allow_kwargs=markers).parse()
    return stripped


# --------------------------------------------------------------------------------------
# Filesystem checks


def resolve_inside(value: str, bases: list[Path], field: str, *, must_be_file: bool = False) -> Path:
    """Resolve a path an agent gave and require it to exist inside one of ``bases``.

    Relative paths are relative to ``bases[0]`` (the project root). Symlinks are
    resolved before the check, so a link that points outside is refused. Returns the
    resolved path; raises ``ToolFailure(invalid_argument)`` naming ``field``.
    """
    try:
        check_plain_text(value, "path")
    except ValueError as exc:
        raise invalid(field, str(exc)) from None
    raw = Path(value)
    candidate = raw if raw.is_absolute() else bases[0] / raw
    try:
        resolved = candidate.resolve(strict=True)
    except FileNotFoundError:
        raise invalid(field, f"{value!r} does not exist (looked for {candidate})") from None
    except (OSError, RuntimeError) as exc:  # symlink loops, permission denied
        raise invalid(field, f"{value!r} cannot be resolved: {exc}") from None
    if not any(resolved == base or base in resolved.parents for base in bases):
        allowed = " or ".join(str(b) for b in bases)
        raise invalid(field, f"{value!r} resolves to {resolved}, outside {allowed}; give a path inside it")
    if must_be_file and not resolved.is_file():
        raise invalid(field, f"{value!r} is not a regular file")
    return resolved


def check_node_ids_exist(node_ids: tuple[str, ...] | list[str], root: Path, field: str = "node_ids") -> None:
    """Require the path part of every node id to exist inside ``root`` (after resolving
    symlinks). Raises ``ToolFailure(invalid_argument)`` naming ``node_ids[i]``."""
    for i, node_id in enumerate(node_ids):
        resolve_inside(node_id.split("::", 1)[0], [root], f"{field}[{i}]")


# --------------------------------------------------------------------------------------
# Parameters


def _node_id(value: str) -> str:
    if len(value) > MAX_NODE_ID_CHARS:
        raise ValueError(f"is longer than {MAX_NODE_ID_CHARS} characters")
    return check_node_id_syntax(value)


def _report_path(value: str) -> str:
    if len(value) > MAX_PATH_CHARS:
        raise ValueError(f"is longer than {MAX_PATH_CHARS} characters")
    if not value.strip():
        raise ValueError("is empty; give a report file")
    check_plain_text(value, "path")
    if value[0] in "-@":
        raise ValueError(f"starts with {value[0]!r}; give a report file path")
    return value


def _filter_node_id(value: str) -> str:
    if len(value) > MAX_NODE_ID_CHARS:
        raise ValueError(f"is longer than {MAX_NODE_ID_CHARS} characters")
    return check_plain_text(value, "node id")


NodeId = Annotated[str, AfterValidator(_node_id)]
"""A node id or path from an agent, checked by ``check_node_id_syntax``."""
ReportPath = Annotated[str, AfterValidator(_report_path)]
FilterNodeId = Annotated[str, AfterValidator(_filter_node_id)]

_NODE_IDS_HELP = "paths or node ids (file::Class::test[param]); default: testpaths"


class _SelectionParams(_Params):
    node_ids: list[NodeId] = Field(default_factory=list, max_length=MAX_NODE_IDS, description=_NODE_IDS_HELP)
    markers: str | None = Field(None, max_length=MAX_EXPRESSION_CHARS, description="-m expression, e.g. 'not slow'")
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


class ExecuteParams(_SelectionParams):
    """Arguments of ``execute_tests``. Budgets shape the answer, not the run."""

    max_failures: int | None = Field(None, ge=1, le=100_000, description="stop after N failures (--maxfail)")
    failfast: bool = Field(False, description="stop at the first failure (-x)")
    last_failed: bool = Field(False, description="only tests that failed last run (--lf)")
    workers: int | None = Field(None, ge=1, le=64, description="parallel workers (pytest-xdist -n)")
    timeout_s: float | None = Field(None, gt=0, le=7 * 24 * 3600, description="seconds before the run is killed")
    failures_listed: int = Field(20, ge=0, le=1000)
    traceback_lines: int = Field(30, ge=3, le=2000)
    output_bytes: int = Field(1024, ge=0, le=262_144, description="captured output kept per failure")

    def budgets(self) -> Budgets:
        """The report engine's budgets for this call."""
        return Budgets(
            max_failures=self.failures_listed,
            max_traceback_lines=self.traceback_lines,
            max_output_bytes=self.output_bytes,
        )


class DiscoverParams(_SelectionParams):
    """Arguments of ``discover_tests``: the selection, and a page of node ids."""

    offset: int = Field(0, ge=0, le=10_000_000)
    limit: int = Field(100, ge=0, le=2000, description="node ids per page")


FULL_STORY = Budgets(
    max_failures=20, max_traceback_lines=400, max_line_chars=1000, max_message_chars=4000, max_output_bytes=32_768
)
"""``summarize_report``'s defaults when ``node_ids`` is given: one test's full story."""


class SummarizeParams(_Params):
    """Arguments of ``summarize_report``. Without ``node_ids`` the engine's default budgets
    apply; with ``node_ids`` the defaults are ``FULL_STORY`` (long tracebacks, output)."""

    paths: list[ReportPath] = Field(
        min_length=1, max_length=MAX_REPORT_PATHS, description="report files (a run's report_path, or in the project)"
    )
    node_ids: list[FilterNodeId] | None = Field(
        None, max_length=MAX_NODE_IDS, description="only failures of these tests (or tests under these paths)"
    )
    failures_listed: int | None = Field(None, ge=0, le=1000, description="default 20")
    traceback_lines: int | None = Field(None, ge=3, le=10_000, description="default 40; 400 with node_ids")
    output_bytes: int | None = Field(None, ge=0, le=1_048_576, description="default 2048; 32768 with node_ids")

    def budgets(self) -> Budgets:
        """The budgets for this call (``FULL_STORY`` defaults when ``node_ids`` is given)."""
        base = FULL_STORY if self.node_ids else Budgets()
        changes = {
            "max_failures": self.failures_listed,
            "max_traceback_lines": self.traceback_lines,
            "max_output_bytes": self.output_bytes,
        }
        return base.model_copy(update={k: v for k, v in changes.items() if v is not None})


def parse_params(model: type[_Params], arguments: Mapping[str, Any] | None) -> Any:
    """Validate a tool's raw arguments into its parameter model.

    Raises ``ToolFailure(invalid_argument)`` naming the first bad field (``node_ids[3]``,
    ``env``) and the reason; an unknown argument lists the ones the tool takes.
    """
    try:
        return model.model_validate(dict(arguments or {}))
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        field = "".join(
            f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(err["loc"])
        )
        field = field or "arguments"
        if err["type"] == "extra_forbidden":
            reason = f"unknown argument; {_tool_name(model)} takes {', '.join(model.model_fields)}"
        elif err["type"] == "missing":
            reason = "is required"
        else:
            msg = err["msg"]
            reason = msg[len("Value error, ") :] if msg.startswith("Value error, ") else msg
            if err["type"] != "value_error" and "input" in err:
                shown = repr(err["input"])
                reason += f" (got {shown[:80] + '…' if len(shown) > 80 else shown})"
        raise invalid(field, reason) from None


def _tool_name(model: type[BaseModel]) -> str:
    return {ExecuteParams: "execute_tests", DiscoverParams: "discover_tests", SummarizeParams: "summarize_report"}.get(
        model, "the tool"
    )


# --------------------------------------------------------------------------------------
# Results

RunStatus = Literal["passed", "failed", "no_tests", "interrupted"]


class ExecuteResult(_Frozen):
    """The answer of ``execute_tests``.

    ``status``: ``passed`` (exit 0), ``failed`` (exit 1), ``no_tests`` (exit 5: nothing
    ran, never green), ``interrupted`` (exit 2: collection errors or an interrupt; the
    summary lists them). ``exit_code``: pytest's. ``duration_s``: wall time of the
    pytest process, seconds. ``command``: the exact argv run (cwd = the project root).
    ``report_path``: the report file the summary came from, for ``summarize_report``.
    ``summary``: the report engine's summary.
    """

    status: RunStatus
    exit_code: int
    duration_s: float
    command: list[str]
    report_path: str
    summary: ReportSummary


class DiscoverResult(_Frozen):
    """The answer of ``discover_tests`` (collection only, nothing runs).

    ``total``: tests collected (after ``-m``/``-k``). ``files``: tests per file, in
    collection order (at most 500 files; ``files_omitted`` counts the rest).
    ``node_ids``: the page ``[offset, offset+limit)``; ``next_offset``: where the next
    page starts, or None at the end. ``collection_errors``: files that failed to import.
    ``duration_s``: wall time of the collect run, seconds.
    """

    total: int
    files: dict[str, int]
    files_omitted: int
    node_ids: list[str]
    next_offset: int | None
    collection_errors: list[CollectionError]
    duration_s: float


class SummarizeResult(_Frozen):
    """The answer of ``summarize_report``: the engine's ``summary`` (with ``node_ids``,
    only those tests' failures are listed; counts stay the whole report's) and
    ``not_failing``: requested node ids that matched no failure (they passed, were
    skipped, or are not in the report)."""

    summary: ReportSummary
    not_failing: list[str]


# --------------------------------------------------------------------------------------
# Tool catalogue and schemas


class ToolSpec(_Frozen):
    """One tool: its name, description, parameter and result models, and hints."""

    name: str
    description: str
    params: type[_Params]
    result: type[BaseModel]
    read_only: bool


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="execute_tests",
        description=(
            "Run pytest; returns exact counts, failures grouped by cause with cut-down tracebacks "
            "(passing tests never listed) and report_path."
        ),
        params=ExecuteParams,
        result=ExecuteResult,
        read_only=False,
    ),
    ToolSpec(
        name="discover_tests",
        description="Collect without running: total, tests per file, a page of node ids, collection errors.",
        params=DiscoverParams,
        result=DiscoverResult,
        read_only=True,
    ),
    ToolSpec(
        name="summarize_report",
        description=(
            "Summarise JUnit XML / pytest-json-report files, e.g. a run's report_path; "
            "with node_ids, those tests' full story without re-running."
        ),
        params=SummarizeParams,
        result=SummarizeResult,
        read_only=True,
    ),
)

INSTRUCTIONS = (
    "Runs this project's pytest suite. A run with 0 tests (status no_tests) is not green: check node_ids, "
    "markers and keywords. To see more of a failure, call summarize_report on the run's report_path "
    "(node_ids=[...]) instead of re-running the suite verbose. Failures are grouped by cause: fix a group, not each test."
)


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a parameter model, compacted for ``tools/list``.

    From pydantic's schema: titles and the model's docstring dropped (the tool has a
    description); an optional field (``X | None = None``) becomes plain ``X`` without its
    null default (omit it rather than send null; null is still accepted); the abuse
    limits (``maxItems``, ``maxLength``, a ``maximum`` of 100,000 or more) are enforced
    but not published. Descriptions,
    defaults, numeric bounds and ``additionalProperties: false`` stay.
    """
    schema = _strip_titles(model.model_json_schema())
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        variants = prop.get("anyOf")
        if variants and len(variants) == 2 and {"type": "null"} in variants:
            (kept,) = [v for v in variants if v != {"type": "null"}]
            del prop["anyOf"]
            prop.update(kept)
            if prop.get("default", 0) is None:
                del prop["default"]
        prop.pop("maxItems", None)
        prop.pop("maxLength", None)
        if prop.get("maximum", 0) >= 100_000:
            del prop["maximum"]
    return schema


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a result model, compacted for ``tools/list``.

    The top-level properties keep their JSON types (nullable ones as
    ``["integer", "null"]``); nested models are given as ``object``/``array`` (their
    fields are documented in ``docs/SERVER.md`` and ``models.py``); every field is
    always present, so ``required`` is left out. Every result the server sends
    validates against it; the full schema would not fit the 4 KB budget of
    ``tools/list``.
    """
    full = model.model_json_schema()
    props: dict[str, Any] = {}
    for name, prop in full["properties"].items():
        props[name] = {"type": _json_type(prop, full.get("$defs", {}))}
    return {"type": "object", "properties": props}


def _json_type(prop: dict[str, Any], defs: dict[str, Any]) -> str | list[str]:
    if "$ref" in prop:
        return "object"
    if "anyOf" in prop:
        types: list[str] = []
        for variant in prop["anyOf"]:
            t = _json_type(variant, defs)
            types.extend(t if isinstance(t, list) else [t])
        return types
    if "enum" in prop and "type" not in prop:
        return "string"
    return prop["type"]


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


# --------------------------------------------------------------------------------------
# Text for the model (the structure is for programs; the text never repeats it as JSON)

VERDICTS: dict[str, str] = {
    "passed": "PASSED",
    "failed": "FAILED",
    "no_tests": "NO TESTS",
    "interrupted": "INTERRUPTED",
}


def render_execute(result: ExecuteResult) -> str:
    """The text block of ``execute_tests``: ``render.render_text`` with a verdict that
    reflects ``status`` (``PASSED``/``FAILED``/``NO TESTS``/``INTERRUPTED``) and the
    run's wall time, then, when not green, a hint and where the report is."""
    from .render import render_text

    # the verdict line's time is the run's wall time, as in pytest's own summary line
    shown = result.summary.model_copy(update={"duration_s": result.duration_s})
    text = render_text(shown, verdict=VERDICTS[result.status], failures_budget="failures_listed")
    tail: list[str] = []
    if result.status == "no_tests":
        tail.append(
            f"No tests ran (pytest exit {result.exit_code}): this is not a pass. Check node_ids, markers and "
            "keywords; discover_tests shows what is collected."
        )
    elif result.status == "interrupted":
        tail.append(f"pytest stopped early (exit {result.exit_code}); fix the collection errors above and run again.")
    if result.status != "passed":
        tail.append(f"Report: {result.report_path} (summarize_report with node_ids for one test's full story)")
    return text + ("\n" + "\n".join(tail) + "\n" if tail else "")


def render_discover(result: DiscoverResult, *, files_shown: int = 30) -> str:
    """The text block of ``discover_tests``: a verdict line, collection errors, tests
    per file (the largest ``files_shown``), and the page of node ids."""
    n_files = len(result.files) + result.files_omitted
    errors = len(result.collection_errors)
    head = "COLLECTED" if result.total and not errors else ("COLLECTION ERRORS" if errors else "NO TESTS")
    line = (
        f"{head} {result.total} test{'s' if result.total != 1 else ''} in {n_files} file{'s' if n_files != 1 else ''}"
    )
    if errors:
        line += f", {errors} collection error{'s' if errors != 1 else ''}"
    lines = [f"{line} in {result.duration_s:.2f}s"]
    if result.collection_errors:
        lines += ["", "Collection errors:"]
        for ce in result.collection_errors:
            what = f"{ce.exception}: {ce.message}" if ce.exception else ce.message
            lines.append(f"- {ce.path}: {what}")
    if result.files:
        lines += ["", "Tests per file:"]
        biggest = sorted(result.files.items(), key=lambda kv: -kv[1])[:files_shown]
        lines += [f"  {count:6d}  {path}" for path, count in biggest]
        more = n_files - len(biggest)
        if more:
            lines.append(f"  ... {more} more files")
    if result.node_ids:
        last = result.next_offset or result.total
        lines += ["", f"Node ids {last - len(result.node_ids) + 1}-{last} of {result.total}:"]
        lines += result.node_ids
    if result.next_offset is not None:
        lines += ["", f"More: call again with offset={result.next_offset}."]
    return "\n".join(lines) + "\n"


def render_summarize(result: SummarizeResult) -> str:
    """The text block of ``summarize_report``: ``render.render_text`` of the summary, and
    the requested node ids that matched no failure."""
    from .render import render_text

    text = render_text(result.summary, failures_budget="failures_listed")
    if result.not_failing:
        text += "\nNo failure for: " + ", ".join(result.not_failing) + " (passed, skipped, or not in the report)\n"
    return text


def render_failure(detail: ToolFailureDetail) -> str:
    """The text block of a failed call: ``ERROR <kind>: <message>``, then the command,
    the exit, and the tails of pytest's output."""
    lines = [f"ERROR {detail.kind}: {detail.message}"]
    if detail.command:
        import shlex

        lines.append("Command: " + shlex.join(detail.command))
    if detail.exit_code is not None or detail.signal:
        how = f"exit code {detail.exit_code}" if detail.exit_code is not None else f"killed by {detail.signal}"
        took = f" after {detail.duration_s:g}s" if detail.duration_s is not None else ""
        lines.append(f"Ended: {how}{took}")
    for name, tail in (("stdout", detail.stdout_tail), ("stderr", detail.stderr_tail)):
        if tail:
            lines += ["", f"{name} (tail):", tail.rstrip("\n")]
    return "\n".join(lines) + "\n"
