"""The per-test line recorder of pytest-mcp-server's plugin (``--mcp-map-data=DIR``).

Not for users: ``pytest_mcp_server_events`` starts it in every pytest process of an
``affected`` run (an xdist worker and its controller alike), before the project's
conftest files are imported. It records, per test (from the start of its
``pytest_runtest_protocol`` to its end), the lines of the project's own files that ran,
and apart from any test (the empty context) the lines run outside tests: imports at
collection, module-level code.

Two recorders, one output:

* ``MonitoringRecorder``, on Python 3.12+: ``sys.monitoring`` (PEP 669) under tool ids
  of its own (``TOOL_IDS``: ids no convention reserves; a debugger's, coverage.py's,
  a profiler's and an optimizer's are never taken). ``PY_START`` (the first tool's,
  global) finds each of the project's code objects the first time it runs (then it is
  disabled for good, code object by code object) and switches its events on:

  - a function (a ``def``: its code object's name is not ``<...>``) that ``LINE_SPANS_FILE``
    does not name (its file is not there, or its ``co_firstlineno`` lies in none of the
    file's spans), when the second tool id is free: ``PY_START`` and ``PY_RESUME``
    of the second tool (and its global ``PY_THROW``, a generator thrown into). The first
    of them in a test records the function's entry, written as the negative of its
    ``co_firstlineno`` (its ``def`` line, or its first decorator's: where the server
    finds that function's block), and returns ``DISABLE``. A function's block is what
    the map keeps, and one callback per function per test costs far less than one per
    line (a test of a command-line library runs some 75 functions and 500 lines);
  - any other code object (a module, a class body, a lambda, a generator expression),
    every function ``LINE_SPANS_FILE`` names (the changed code, whose lines a failure's
    suspects are ranked by), and every one when the second tool id is taken: ``LINE``
    events; each callback records the line and returns ``DISABLE``, so a line costs one
    callback per test.

  When a test ends, the code objects that recorded something have those events switched
  off and on again, which re-arms what their callbacks disabled.
  ``sys.monitoring.restart_events()`` is not used: it would re-arm every tool's disabled
  events in every code object (pytest's own functions' ``PY_START`` each test, a
  coverage.py on sys.monitoring beside it). Code run in another thread during a test is
  that test's. Outside tests, what runs while a project module is being imported is that
  import's (``IMPORTING``: the innermost project ``<module>`` frame on the stack, found at
  each project module's start and return, where the events are re-armed as at a test's
  end); what runs with no project module on the stack (collection hooks,
  ``pytest_generate_tests``) is the empty context's.
* ``CoverageRecorder``, before 3.12: coverage.py's C tracer through its API, one dynamic
  context per test, no data file; configured so that the project's settings cannot break
  the run (``COVERAGE_CORE=ctrace``, every coverage.py warning disabled and none raised
  while it starts or stops). The project's ``source``, ``include`` and ``omit`` still
  decide which files are measured.

Each process writes ``DIR/map.<pid>.jsonl``, JSON lines (``MapFile``):

* first ``{"format": FORMAT, "recorder": "sys.monitoring" | "coverage.py", "pid": N}``
  (``FORMAT``: ``pytest_mcp_server_shared.RECORDER_FORMAT``);
* ``{"file": I, "path": P}`` before the first use of file number ``I`` (``P`` absolute);
* ``{"context": C, "lines": [[I, [line, ...]], ...]}``: the lines of context ``C`` (a
  test's node id, written when the test ends; ``IMPORTING`` + a module's absolute
  path: outside tests, while that module was being imported (sys.monitoring only),
  and ``""``: outside any test otherwise, written last), sorted; a negative number
  ``-N`` is a function entered whose ``co_firstlineno`` is ``N`` (sys.monitoring only);
* ``{"fixtures": C, "names": [name, ...]}``: test ``C``'s fixture closure (pytest's
  ``item.fixturenames``), before its lines;
* ``{"unrecorded": C, "why": TEXT}`` when test ``C``'s lines are incomplete (before
  3.12, a test that replaced the trace function): its entry leaves the map;
* ``{"problem": TEXT}`` when the recording cannot be trusted (a test freed the
  recorder's tool id, another coverage.py took over the tracer, an error inside the
  recorder): the server then leaves the map as it was and says so;
* last ``{"end": true}``.

A recorder never fails a test: its errors become a ``problem`` line. A forked child
writes nothing (the file belongs to the process that opened it).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

try:
    import pytest_mcp_server_shared as shared  # type: ignore[import-not-found]  # beside this file, on the child's path
except ImportError:  # imported as part of the server's package (the server's own tests)
    from . import pytest_mcp_server_shared as shared

FORMAT: int = shared.RECORDER_FORMAT
"""The map file's format number (its first line)."""
TOOL_NAME = "pytest-mcp-server"
"""The name the recorder registers its sys.monitoring tool id under."""
TOOL_IDS = (3, 4)
"""The sys.monitoring tool ids the recorder may take, in order: PEP 669 names 0 (debugger),
1 (coverage), 2 (profiler) and 5 (optimizer); 3 and 4 are no one's by convention. The
first free one records lines; the second, when free too, functions' entries."""
COVERAGE_WARNINGS = (
    "no-sysmon",
    "no-ctracer",
    "no-data-collected",
    "module-not-measured",
    "module-not-imported",
    "module-not-python",
    "already-imported",
    "include-ignored",
    "dynamic-conflict",
    "couldnt-parse",
)
"""coverage.py's warning slugs (its docs, *Messages*), all disabled for the recorder."""
CO_OPTIMIZED = 0x1
"""The code flag of a function's code object (``inspect.CO_OPTIMIZED``): a module's and a
class body's code lack it."""
IMPORT_CONTEXT = ""
"""The context of lines run outside any test (and outside any project module's import,
where the recorder can tell)."""
IMPORTING: str = shared.IMPORTING
"""The prefix of the context of lines run outside tests while a project module was
being imported: ``IMPORTING`` + the module's absolute path (no node id starts with ``<``)."""
if TYPE_CHECKING:  # annotations only: the project's interpreter may be older than the server's
    # LINE_SPANS_FILE as the recorder reads it: absolute path -> None (every function's
    # lines) or the (first, last) spans whose functions' lines are recorded
    LineSpans = dict[str, tuple[tuple[int, int], ...] | None]


class MapFile:
    """The JSON-lines file ``DIR/map.<pid>.jsonl`` one process writes (module docstring).
    Writes from a forked child are dropped."""

    def __init__(self, directory: str, recorder: str) -> None:
        self.pid = os.getpid()
        self.path = os.path.join(directory, f"{shared.MAP_FILE_PREFIX}{self.pid}.jsonl")
        self.file = open(self.path, "w", encoding="utf-8")
        self.numbers: dict[str, int] = {}
        self.closed = False
        self._write({"format": FORMAT, "recorder": recorder, "pid": self.pid})

    def _write(self, record: dict[str, Any]) -> None:
        if os.getpid() == self.pid and not self.closed:
            self.file.write(json.dumps(record, separators=(",", ":")) + "\n")

    def context(self, name: str, lines: Mapping[str, Iterable[int]]) -> None:
        """Write the lines of context ``name``: absolute path -> line numbers."""
        pairs = []
        for path, numbers in lines.items():
            number = self.numbers.get(path)
            if number is None:
                number = self.numbers[path] = len(self.numbers)
                self._write({"file": number, "path": path})
            pairs.append([number, sorted(numbers)])
        self._write({"context": name, "lines": pairs})

    def fixtures(self, context: str, names: Iterable[str]) -> None:
        """Write test ``context``'s fixture closure (pytest's ``item.fixturenames``)."""
        self._write({"fixtures": context, "names": sorted(set(names))})

    def unrecorded(self, context: str, why: str) -> None:
        """Say that the lines of test ``context`` are incomplete, and why: the server then
        drops its entry from the map (it runs again next time) and keeps the others."""
        self._write({"unrecorded": context, "why": why})

    def problem(self, text: str) -> None:
        """Say that the recording cannot be trusted, and why."""
        self._write({"problem": text})

    def close(self) -> None:
        """Write the end line and close the file."""
        if os.getpid() != self.pid or self.closed:
            return
        self._write({"end": True})
        self.closed = True
        self.file.close()


class ProjectFiles:
    """Which source files are the project's: under ``root``, outside the server's plugin
    directory, any ``site-packages``/``dist-packages`` and any virtualenv (a directory
    holding ``pyvenv.cfg``). ``absolute(filename)`` is the file's absolute path when it
    is the project's (relative names are the working directory's), else None; cached."""

    def __init__(self, root: str, plugin_dir: str) -> None:
        self.root = os.path.join(os.path.normpath(root), "")
        self.plugin_dir = os.path.join(os.path.normpath(plugin_dir), "")
        self.known: dict[str, str | None] = {}
        self.venvs: dict[str, bool] = {}

    def absolute(self, filename: str) -> str | None:
        known = self.known
        if filename in known:
            return known[filename]
        path: str | None = None
        if not filename.startswith("<"):
            candidate = os.path.normpath(os.path.join(os.getcwd(), filename))
            if candidate.startswith(self.root) and not candidate.startswith(self.plugin_dir):
                parts = candidate[len(self.root) :].split(os.sep)
                if not any(p in ("site-packages", "dist-packages") for p in parts) and not self._in_venv(parts):
                    path = candidate
        known[filename] = path
        return path

    def _in_venv(self, parts: list[str]) -> bool:
        directory = self.root
        for part in parts[:-1]:
            directory = os.path.join(directory, part)
            found = self.venvs.get(directory)
            if found is None:
                found = self.venvs[directory] = os.path.exists(os.path.join(directory, "pyvenv.cfg"))
            if found:
                return True
        return False


class MonitoringRecorder:
    """The sys.monitoring recorder (Python 3.12+; module docstring). ``start`` raises
    ``RuntimeError`` when every tool id of ``TOOL_IDS`` is taken."""

    name = "sys.monitoring"

    def __init__(self, files: ProjectFiles, out: MapFile, line_spans: LineSpans | None = None) -> None:
        self.files = files
        self.out = out
        # absolute path -> None (every function's lines) or the spans whose functions' lines are recorded
        self.line_spans: LineSpans = dict(line_spans or {})
        self.tool: int | None = None
        self.entry_tool: int | None = None  # the tool id of functions' entries (None: lines only)
        self.context = IMPORT_CONTEXT
        # (id of a code object, line): code objects are keyed by id, never by value (two
        # equal code objects of two files would be one), and kept alive in ``seen``
        self.hits: set[tuple[int, int]] = set()
        # outside tests, per importing module (IMPORT_CONTEXT: none), written once at the end
        self.outside: dict[str, dict[str, set[int]]] = {}
        self.importing = IMPORT_CONTEXT  # the context of the lines run outside tests now
        # id -> (code object, its project path or None, its local events, their tool id)
        self.seen: dict[int, tuple[Any, str | None, int, int]] = {}
        self.failed = False
        self.pending: str | None = None  # a problem met inside a callback, for the next switch

    def start(self) -> None:
        mon = sys.monitoring  # type: ignore[attr-defined]
        free = [tool for tool in TOOL_IDS if mon.get_tool(tool) is None]
        if not free:
            raise RuntimeError(f"every sys.monitoring tool id it may take ({', '.join(map(str, TOOL_IDS))}) is in use")
        tool = self.tool = free[0]
        mon.use_tool_id(tool, TOOL_NAME)
        events = mon.events
        disable = mon.DISABLE
        line_event = events.LINE
        set_local_events = mon.set_local_events
        seen = self.seen
        absolute = self.files.absolute
        line_spans = self.line_spans
        add = self.hits.add

        module_events = line_event | events.PY_RETURN
        entry_events = events.PY_START | events.PY_RESUME
        boundary = self._import_boundary
        entry_tool = -1
        if len(free) > 1:
            try:
                mon.use_tool_id(free[1], TOOL_NAME)
                entry_tool = self.entry_tool = free[1]
            except ValueError:  # taken since: lines only
                pass

        def py_start(code: Any, offset: int) -> Any:
            key = id(code)
            if key not in seen:
                path = absolute(code.co_filename)
                module = code.co_name == "<module>"
                wanted, by = (module_events if module else line_event), tool
                # a def's code (a class body's is not optimized; a lambda's name is <lambda>)
                function = code.co_flags & CO_OPTIMIZED and not code.co_name.startswith("<")
                if entry_tool >= 0 and function and not _lines_asked(line_spans, path, code.co_firstlineno):
                    wanted, by = entry_events, entry_tool
                seen[key] = (code, path, wanted, by)
                if path is not None:
                    try:
                        set_local_events(by, code, wanted)
                    except ValueError:  # the tool id was freed under it (3.12 keeps calling back)
                        seen[key] = (code, None, 0, by)
                        return disable
                    if by == entry_tool:  # this start: the entry tool's events were not on yet
                        add((key, -code.co_firstlineno))
                    elif module and self.context == IMPORT_CONTEXT:
                        boundary(IMPORTING + path)
            return disable

        def py_return(code: Any, offset: int, value: Any) -> Any:
            if self.context == IMPORT_CONTEXT:
                boundary(self._importing_from(sys._getframe(1).f_back))
            return disable

        def line(code: Any, number: int) -> Any:
            add((id(code), number))
            return disable

        def entered(code: Any, offset: int) -> Any:
            add((id(code), -code.co_firstlineno))
            return disable

        def thrown(code: Any, offset: int, exception: BaseException) -> None:
            # a generator or coroutine thrown into runs on without PY_RESUME (cannot be disabled)
            known = seen.get(id(code))
            if known is not None and known[3] == entry_tool and known[1] is not None:
                add((id(code), -code.co_firstlineno))

        mon.register_callback(tool, events.PY_START, py_start)
        mon.register_callback(tool, events.PY_RETURN, py_return)
        mon.register_callback(tool, events.LINE, line)
        mon.set_events(tool, events.PY_START)
        if entry_tool >= 0:
            mon.register_callback(entry_tool, events.PY_START, entered)
            mon.register_callback(entry_tool, events.PY_RESUME, entered)
            mon.register_callback(entry_tool, events.PY_THROW, thrown)
            mon.set_events(entry_tool, events.PY_THROW)

    def _importing_from(self, frame: Any) -> str:
        """The context of the innermost project module being imported at ``frame`` and
        above (``IMPORTING`` + its path), else ``IMPORT_CONTEXT``."""
        absolute = self.files.absolute
        while frame is not None:
            code = frame.f_code
            if code.co_name == "<module>":
                path = absolute(code.co_filename)
                if path is not None:
                    return IMPORTING + path
            frame = frame.f_back
        return IMPORT_CONTEXT

    def _import_boundary(self, importing: str) -> None:
        """Outside tests, a project module starts or ends its import: the lines run so far
        are the current import's, re-armed so that what runs next is recorded again for
        ``importing``."""
        if self.failed:
            return
        try:  # inside a callback: an error here would be raised in the project's import
            into = self.outside.setdefault(self.importing, {})
            for path, numbers in self._lines().items():
                into.setdefault(path, set()).update(numbers)
            self.importing = importing
        except Exception as exc:  # noqa: BLE001 - reported at the next switch, never raised
            self.failed = True
            self.hits.clear()
            self.pending = f"{type(exc).__name__} while recording an import: {exc}"

    def boundary(self) -> None:
        """Called by the plugin after each collector: a module whose import raised never
        returned, so which import runs now is found again from the stack."""
        if self.context == IMPORT_CONTEXT:
            self._import_boundary(self._importing_from(sys._getframe(1)))

    def _lines(self) -> dict[str, set[int]]:
        # a copy first: another thread may add while this one reads. Each code object that
        # ran a line has its line events switched off and on again: that re-arms the lines
        # its callbacks disabled, and only those (restart_events() would re-arm every
        # tool's disabled events in every code object: pytest's own ~1,250 PY_STARTs per
        # test, and a coverage.py on sys.monitoring beside it)
        hits = self.hits.copy()
        self.hits.clear()
        seen = self.seen
        mon = sys.monitoring  # type: ignore[attr-defined]
        out: dict[str, set[int]] = {}
        rearm: set[int] = set()
        for key, number in hits:
            path = seen[key][1]
            if path is not None:
                out.setdefault(path, set()).add(number)
                rearm.add(key)
        for key in rearm:
            code, _, wanted, by = seen[key]
            mon.set_local_events(by, code, 0)
            mon.set_local_events(by, code, wanted)
        return out

    def _still_ours(self) -> str | None:
        mon = sys.monitoring  # type: ignore[attr-defined]
        for tool, events in ((self.tool, mon.events.PY_START), (self.entry_tool, mon.events.PY_THROW)):
            if tool is None:
                continue
            if mon.get_tool(tool) != TOOL_NAME:
                return f"its sys.monitoring tool id {tool} was freed or taken by other code"
            if mon.get_events(tool) != events:
                return f"the events of its sys.monitoring tool id {tool} were changed by other code"
        return None

    def switch(self, context: str) -> str | None:
        """End the current context (its lines written, or kept for the import context)
        and start ``context`` (a node id, or ``IMPORT_CONTEXT`` after a test). Returns a
        problem when the recorder was disturbed (it then stops), else None."""
        if self.failed:
            problem, self.pending = self.pending, None
            return problem
        problem = self._still_ours()
        if problem is not None:
            self.failed = True
            self.hits.clear()
            return problem
        lines = self._lines()
        if self.context == IMPORT_CONTEXT:
            into = self.outside.setdefault(self.importing, {})
            for path, numbers in lines.items():
                into.setdefault(path, set()).update(numbers)
        else:
            self.out.context(self.context, lines)
        self.context = context
        self.importing = self._importing_from(sys._getframe(1)) if context == IMPORT_CONTEXT else IMPORT_CONTEXT
        return None

    def finish(self) -> str | None:
        """Write the last lines and release the tool id; a problem as ``switch``'s."""
        problem = self.switch(IMPORT_CONTEXT)
        mon = sys.monitoring  # type: ignore[attr-defined]
        for tool in (self.tool, self.entry_tool):
            if tool is not None and mon.get_tool(tool) == TOOL_NAME:
                mon.set_events(tool, 0)
                for event in (mon.events.PY_START, mon.events.PY_RETURN, mon.events.PY_RESUME, mon.events.LINE):
                    mon.register_callback(tool, event, None)
                mon.register_callback(tool, mon.events.PY_THROW, None)
                mon.free_tool_id(tool)
        if not self.failed:
            for importing, lines in self.outside.items():
                if importing != IMPORT_CONTEXT:
                    self.out.context(importing, lines)
            self.out.context(IMPORT_CONTEXT, self.outside.get(IMPORT_CONTEXT, {}))
        return problem


class CoverageRecorder:
    """The coverage.py recorder (before Python 3.12; module docstring). ``start`` raises
    what coverage.py raises (the caller reports it as a problem)."""

    name = "coverage.py"

    def __init__(self, files: ProjectFiles, out: MapFile) -> None:
        self.files = files
        self.out = out
        self.cov: Any = None
        self.failed = False

    def start(self) -> None:
        # the project's configuration file says what is measured; these settings would
        # break the map or the run: a core without dynamic contexts, warnings turned into
        # errors by pytest's filterwarnings, a data file in the project
        try:
            import coverage.tracer  # noqa: F401

            os.environ["COVERAGE_CORE"] = "ctrace"
        except ImportError:
            os.environ["COVERAGE_CORE"] = "pytrace"
        import coverage

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cov: Any = coverage.Coverage(data_file=None, config_file=True)
            for option, value in (
                ("run:dynamic_context", None),
                ("run:parallel", False),
                ("run:branch", False),
                ("run:disable_warnings", list(COVERAGE_WARNINGS)),
            ):
                cov.set_option(option, value)
            cov.start()
        self.cov = cov
        self.tracer = sys.gettrace()
        self.context = IMPORT_CONTEXT

    def switch(self, context: str) -> str | None:
        """Start ``context``; a problem (the recorder then stops) when another coverage.py
        measurement took over this process's tracer (pytest-cov's, say). When code of the
        context that ends replaced the trace function (``sys.settrace``), its lines are
        incomplete: a test's are marked unrecorded, lines outside tests are a problem; the
        tracer is then started again for what follows."""
        if self.failed:
            return None
        import coverage

        if id(coverage.Coverage.current()) != id(self.cov):  # ids: no narrowing of the Any
            self.failed = True
            return "another coverage.py measurement started in the same process and paused the recorder's"
        if sys.gettrace() is not self.tracer:
            if self.context == IMPORT_CONTEXT:
                self.failed = True
                return "code outside the tests replaced the trace function (sys.settrace)"
            self.out.unrecorded(self.context, "it replaced the trace function (sys.settrace)")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.cov.stop()
                self.cov.start()
            self.tracer = sys.gettrace()
        self.context = context
        self.cov.switch_context(context)
        return None

    def finish(self) -> str | None:
        """Stop measuring and write every context's lines."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.cov.stop()
            if self.failed:
                return None
            data = self.cov.get_data()
            by_context: dict[str, dict[str, set[int]]] = {}
            for measured in data.measured_files():
                path = self.files.absolute(measured)
                if path is None:
                    continue
                for number, contexts in data.contexts_by_lineno(measured).items():
                    for context in contexts:
                        by_context.setdefault(context, {}).setdefault(path, set()).add(number)
        outside = by_context.pop(IMPORT_CONTEXT, {})
        for context, lines in by_context.items():
            self.out.context(context, lines)
        self.out.context(IMPORT_CONTEXT, outside)
        return None


def _lines_asked(line_spans: LineSpans, path: str | None, first_line: int) -> bool:
    """Whether ``LINE_SPANS_FILE`` asks for the lines of the function whose code starts
    on ``first_line`` of ``path``: its file is named with None (every function), or one of
    the file's spans holds that line."""
    if path is None or path not in line_spans:
        return False
    spans = line_spans[path]
    return spans is None or any(first <= first_line <= last for first, last in spans)


def _line_spans(directory: str) -> LineSpans:
    """The spans of ``LINE_SPANS_FILE`` in ``directory`` by normalized absolute path (none
    when it is missing or not of its shape: then functions' entries are recorded
    everywhere, which the server reads as well; only a failure's suspects lose line
    detail)."""
    try:
        with open(os.path.join(directory, shared.LINE_SPANS_FILE), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    out: LineSpans = {}
    for path, spans in data.items():
        if spans is None:
            out[os.path.normpath(path)] = None
        elif isinstance(spans, list) and all(
            isinstance(span, list) and len(span) == 2 and all(type(n) is int for n in span) for span in spans
        ):
            out[os.path.normpath(path)] = tuple((first, last) for first, last in spans)
        else:
            return {}
    return out


class Recording:
    """One process's recording: the recorder for this Python, its map file, and the
    rule that nothing it does fails a test (every error becomes the file's
    ``problem``, and the recorder stops)."""

    def __init__(self, directory: str, root: str, plugin_dir: str) -> None:
        files = ProjectFiles(root, plugin_dir)
        monitoring = sys.version_info >= (3, 12)
        name = MonitoringRecorder.name if monitoring else CoverageRecorder.name
        self.out = MapFile(directory, name)
        self.recorder: MonitoringRecorder | CoverageRecorder | None = (
            MonitoringRecorder(files, self.out, _line_spans(directory))
            if monitoring
            else CoverageRecorder(files, self.out)
        )
        try:
            self.recorder.start()
        except Exception as exc:  # noqa: BLE001 - any failure of the recorder is reported, never raised
            self._fail(f"the {name} recorder could not start: {type(exc).__name__}: {exc}")

    def _fail(self, problem: str) -> None:
        self.out.problem(problem)
        self.recorder = None

    def switch(self, context: str, where: str) -> None:
        """Record into ``context`` from now on (``where``: the test, for a problem's text)."""
        if self.recorder is None:
            return
        try:
            problem = self.recorder.switch(context)
        except Exception as exc:  # noqa: BLE001
            problem = f"{type(exc).__name__}: {exc}"
        if problem is not None:
            self._fail(f"the {self.recorder.name} recorder stopped at {where}: {problem}")

    def fixtures(self, context: str, names: Iterable[str]) -> None:
        """Write test ``context``'s fixture closure (kept even when the recorder stopped:
        the closure is pytest's, not the recorder's)."""
        self.out.fixtures(context, names)

    def boundary(self, where: str) -> None:
        """A collector has finished (``where``: its node id, for a problem's text): the
        recorder finds again which import runs (sys.monitoring only)."""
        if isinstance(self.recorder, MonitoringRecorder):
            try:
                self.recorder.boundary()
            except Exception as exc:  # noqa: BLE001
                self._fail(f"the {self.recorder.name} recorder stopped after collecting {where}: {exc}")

    def finish(self) -> None:
        """Write what is left and close the file."""
        if self.recorder is not None:
            try:
                problem = self.recorder.finish()
            except Exception as exc:  # noqa: BLE001
                problem = f"{type(exc).__name__}: {exc}"
            if problem is not None:
                self._fail(f"the {self.recorder.name} recorder failed at the session's end: {problem}")
        self.out.close()
