"""Deterministic synthetic pytest reports (JUnit XML and pytest-json-report) of any size.

``generate(path, fmt, target_bytes, seed=DEFAULT_SEED)`` streams one report to disk
(it never holds the file: chunks of about 4 MB are written as they fill) and returns the
*truth*: the exact numbers the generator wrote, which every parser's result is checked
against. The truth is also written beside the report as ``<path>.truth.json``.

What a report holds (the same test stream for both formats, cut at each file's size):

* Modules ``tests/<pkg>/test_<topic>_<n>.py`` with 3 to 25 test functions each, half of
  them in ``Test*`` classes, 40 % parametrized (2 to 40 ids; some ids carry characters
  that must be escaped: ``a<b&"c"``, quotes, ``\\u00e9``-style escapes as pytest writes
  them, URLs with ``&``).
* Outcomes per test (``Mix``): 2 % failed with pytest long-format tracebacks of 30 to
  200 lines (test source, ``>`` line, ``E   `` assertion diffs, ``_ _ _`` frame
  separators, site-packages / stdlib frames); 1 % errors (70 % in setup, 30 % in
  teardown, pytest's ``failed on setup with "..."`` messages); 3 % skipped; 0.5 %
  xfailed; 0.2 % xpassed (pytest-json-report only: JUnit XML has no xpass, pytest writes
  a passing ``testcase``, so the JUnit truth counts them as passed); 0.2 % of modules
  fail to collect (a collection error: one ``errors``, the module's tests are absent).
* Captured output (stdout/stderr, log lines, ANSI colour codes, non-ASCII text) on 5 %
  of passing tests and 60 % of failures; in JUnit XML as ``<system-out>`` /
  ``<system-err>`` (pytest ``junit_logging=all``), where characters XML 1.0 forbids
  become ``#x1B`` as pytest's ``bin_xml_escape`` writes them.
* JUnit XML is pytest's ``xunit2`` family (the default):
  ``<testsuites name="pytest tests"><testsuite name="pytest" ...>``, classnames like
  ``tests.api.test_users_0007.TestCreate``, no whitespace between elements (as pytest
  writes it). The ``testsuite`` counts are patched in at the end (the start tag is padded
  with spaces, which XML allows before ``>``).
* pytest-json-report keys in the plugin's order (``created, duration, exitcode, root,
  environment, summary, collectors, tests``), ``json.dump`` separators, ASCII-only
  escapes; tests with ``setup``/``call``/``teardown`` phases (``call`` absent after a
  setup error or a skip), ``crash``, ``traceback`` entries, ``longrepr``,
  ``stdout``/``stderr`` and sometimes ``log``. The collectors precede the tests, so the
  two sections are streamed to temporary files and joined at the end
  (``os.copy_file_range`` when available).

Sizes: a file ends at the first test boundary at or after ``target_bytes`` minus the
closing bytes, so a JUnit file is ``target_bytes`` plus at most one test (a few KB); a
pytest-json-report file also ends with the package collectors (about 60 bytes per module),
so it can be up to 0.1 % larger (1 GB: +0.7 MB).
Determinism: the same ``(fmt, target_bytes, seed, module_offset, GENERATOR_VERSION)``
gives the same bytes on every machine (``random.Random(seed)`` only; no clock, no
hash-seed dependence). Speed (one core of the 2-core bench machine, otherwise quiet):
37 MB/s for JUnit XML and 45 MB/s for pytest-json-report, so 1 GB in 22-27 s, in about
60 MB of memory (benches/RESULTS.md).

Truth (``Truth`` dict, also the sidecar JSON): ``format``, ``seed``, ``target_bytes``,
``bytes`` (actual file size), ``generator_version``, ``module_offset``, ``modules``,
``tests`` (testcase elements / ``tests`` entries), ``counts`` (``total, passed, failed,
errors, skipped, xfailed, xpassed, flaky`` with the engine's semantics, docs/ENGINE.md
*Counts*: a collection error counts as one ``errors``), ``collection_errors``,
``duration_us`` (the sum of test durations converted by the engine's rule, docs/ENGINE.md
*Durations*), ``first_failure`` (node id of the first failed/error test or None).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

GENERATOR_VERSION = 1
DEFAULT_SEED = 20240611
FORMATS = ("junit", "pytest-json")

_CHUNK_CHARS = 4 << 20  # flush the write buffer at ~4 MB


@dataclass(frozen=True)
class Mix:
    """Shares of outcomes (per test, except ``collection_error``: per module)."""

    failed: float = 0.02
    error: float = 0.01
    setup_share_of_errors: float = 0.7
    skipped: float = 0.03
    xfailed: float = 0.005
    xpassed: float = 0.002
    output_passed: float = 0.05
    output_failed: float = 0.6
    collection_error: float = 0.002
    slow: float = 0.001


DEFAULT_MIX = Mix()

# ---------------------------------------------------------------------------------------
# Escaping (the same rules the real writers use)

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _bin_xml_escape(s: str) -> str:
    """pytest's junitxml ``bin_xml_escape``: chars XML 1.0 forbids become ``#xHH``."""
    return _XML_INVALID.sub(lambda m: f"#x{ord(m.group()):02X}", s)


def xml_text(s: str) -> str:
    """Escape character data as ``xml.etree`` does (``&``, ``<``, ``>``)."""
    s = _bin_xml_escape(s)
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def xml_attr(s: str) -> str:
    """Escape an attribute value as ``xml.etree`` does (also ``"``, newline, tab, CR)."""
    s = _bin_xml_escape(s)
    return (
        s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\r", "&#13;")
        .replace("\n", "&#10;")
        .replace("\t", "&#09;")
    )


def jstr(s: str) -> str:
    """A JSON string literal as ``json.dump`` writes it (ASCII-only escapes)."""
    return json.dumps(s)


def duration_us(x: float) -> int:
    """The engine's duration rule for a finite, non-negative double below 1e9 seconds:
    ``floor(x * 1e6 + 0.5)`` (docs/ENGINE.md, *Durations*)."""
    return math.floor(x * 1e6 + 0.5)


# ---------------------------------------------------------------------------------------
# Vocabulary

_PKGS = [
    "api",
    "core",
    "models",
    "utils",
    "db",
    "auth",
    "billing",
    "search",
    "cli",
    "io",
    "net",
    "storage",
    "sched",
    "ui",
    "plugins",
    "reports",
]
_TOPICS = [
    "users",
    "orders",
    "invoices",
    "parser",
    "config",
    "cache",
    "session",
    "tokens",
    "migrations",
    "queries",
    "render",
    "upload",
    "retry",
    "limits",
    "webhooks",
    "permissions",
    "export",
    "import",
    "timezone",
    "currency",
    "search_index",
    "pagination",
    "serializers",
    "validators",
    "middleware",
    "signals",
]
_VERBS = [
    "create",
    "update",
    "delete",
    "parse",
    "render",
    "validate",
    "load",
    "save",
    "merge",
    "split",
    "resolve",
    "encode",
    "decode",
    "retry",
    "refresh",
    "list",
    "filter",
    "sort",
    "lock",
    "sync",
]
_NOUNS = [
    "user",
    "order",
    "invoice",
    "token",
    "payload",
    "row",
    "record",
    "schema",
    "page",
    "header",
    "timestamp",
    "amount",
    "config",
    "path",
    "query",
    "batch",
]
_CLASSES = [
    "TestCreate",
    "TestUpdate",
    "TestValidation",
    "TestEdgeCases",
    "TestApi",
    "TestSerializer",
    "TestPermissions",
    "TestRetry",
    "TestRegression",
    "TestCli",
]
# Parameter ids as pytest writes them: non-ASCII escaped to \\uXXXX text, special
# characters kept (they must be escaped by the report writers).
_PARAM_BASES = [
    'a<b&"c"',
    "x>y",
    "'quoted'",
    "http://h/p?a=1&b=2",
    "\\u00fcn\\u00efc\\u00f6d\\u00e9",
    "None",
    "True",
    "0.5",
    "-1",
    "empty",
    "utf8-\\u2713",
    "tab\\t",
    "a b",
    "<tag/>",
    "1e-09",
    "path/to/file.py",
    "{'k': [1, 2]}",
    "int",
    "str",
]
_FIXTURES = [
    "db_session",
    "client",
    "tmp_path",
    "settings",
    "user_factory",
    "api_token",
    "event_loop",
    "redis",
    "monkeypatch",
    "caplog",
]
_SITE = [
    ("/usr/lib/python3.11/site-packages/requests/sessions.py", 589, "request", "resp = self.send(prep, **send_kwargs)"),
    (
        "/usr/lib/python3.11/site-packages/requests/adapters.py",
        519,
        "send",
        "raise ConnectionError(e, request=request)",
    ),
    (
        "/usr/lib/python3.11/site-packages/sqlalchemy/engine/base.py",
        1412,
        "execute",
        "return meth(self, distilled_params, execution_options)",
    ),
    (
        "/usr/lib/python3.11/site-packages/sqlalchemy/engine/default.py",
        922,
        "do_execute",
        "cursor.execute(statement, parameters)",
    ),
    (
        "/usr/lib/python3.11/site-packages/pydantic/main.py",
        212,
        "__init__",
        "validated_self = self.__pydantic_validator__.validate_python(data, self_instance=self)",
    ),
    (
        "/usr/lib/python3.11/json/decoder.py",
        355,
        "raw_decode",
        'raise JSONDecodeError("Expecting value", s, err.value) from None',
    ),
    ("/usr/lib/python3.11/site-packages/_pytest/python_api.py", 952, "raises", "func(*args[1:], **kwargs)"),
    (
        "/usr/lib/python3.11/site-packages/httpx/_client.py",
        1015,
        "_send_single_request",
        "response = transport.handle_request(request)",
    ),
    ("/usr/lib/python3.11/asyncio/base_events.py", 653, "run_until_complete", "return future.result()"),
    ("/usr/lib/python3.11/site-packages/django/db/models/query.py", 637, "get", "raise self.model.DoesNotExist("),
]
_APP = [
    "app/services/orders.py",
    "app/models/user.py",
    "app/api/views.py",
    "app/db/session.py",
    "app/utils/dates.py",
    "app/billing/invoice.py",
    "app/search/index.py",
    "app/core/config.py",
]

# Failure causes: (exception, crash message template, is_assertion). "@N@" becomes a
# number, so messages differ while normalising to the same group.
_CAUSES = [
    ("AssertionError", "assert @N@ == @M@", True),
    ("AssertionError", "assert 'active' == 'pending'", True),
    ("AssertionError", "assert {'id': @N@, 'status': 'ok'} == {'id': @N@, 'status': 'failed'}", True),
    ("AssertionError", "assert [1, 2, 3] == [1, 2, 4]", True),
    ("AssertionError", "assert response.status_code == 200", True),
    ("AssertionError", "assert None is not None", True),
    ("AssertionError", "Regex pattern did not match.\n Regex: 'invalid token'\n Input: 'expired token @N@'", False),
    ("KeyError", "KeyError: 'user_@N@'", False),
    ("ValueError", "ValueError: invalid literal for int() with base 10: 'abc@N@'", False),
    ("TypeError", "TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'", False),
    ("AttributeError", "AttributeError: 'NoneType' object has no attribute 'id'", False),
    (
        "requests.exceptions.ConnectionError",
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='10.0.0.@N@', port=8080): "
        "Max retries exceeded with url: /api/v1/orders/@N@",
        False,
    ),
    ("TimeoutError", "TimeoutError: operation timed out after @N@.5 seconds", False),
    (
        "json.decoder.JSONDecodeError",
        "json.decoder.JSONDecodeError: Expecting value: line 1 column @N@ (char @M@)",
        False,
    ),
    (
        "sqlalchemy.exc.IntegrityError",
        "sqlalchemy.exc.IntegrityError: (psycopg2.errors.UniqueViolation) duplicate key value violates "
        'unique constraint "users_email_key"\nDETAIL:  Key (email)=(user@N@@example.com) already exists.',
        False,
    ),
    (
        "UnicodeDecodeError",
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position @N@: invalid continuation byte",
        False,
    ),
    ("AssertionError", "assert 'caf\u00e9 \u2713' == 'cafe \u2713'", True),
    (
        "pydantic_core._pydantic_core.ValidationError",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for Order\namount\n"
        "  Input should be greater than 0 [type=greater_than, input_value=-@N@, input_type=int]",
        False,
    ),
]
_ERROR_CAUSES = [
    (
        "sqlalchemy.exc.OperationalError",
        "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) "
        'connection to server at "10.0.0.5", port 5432 failed: Connection refused',
    ),
    (
        "FileNotFoundError",
        "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/pytest-of-ci/pytest-@N@/fixtures/data.json'",
    ),
    ("RuntimeError", "RuntimeError: Event loop is closed"),
    ("PermissionError", "PermissionError: [Errno 13] Permission denied: '/var/run/app-@N@.sock'"),
    (
        "redis.exceptions.ConnectionError",
        "redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.",
    ),
    ("AssertionError", "AssertionError: leaked @N@ open file handles"),
]
_SKIP_REASONS = [
    "needs a GPU",
    "requires Python < 3.11",
    "flaky on CI (see #@N@)",
    "network access disabled",
    "not implemented on win32",
    "slow test: run with --runslow",
    "postgres not available",
    "feature flag 'new_billing' is off",
]
_XFAIL_REASONS = [
    "bug #@N@",
    "known issue with timezone handling",
    "upstream regression in 2.@N@",
    "not supported yet",
    "race condition (see #@N@)",
]
_LOG_LINES = [
    "2024-06-11 12:00:@N@,123 INFO     app.db:session.py:88 connected to 10.0.0.5:5432",
    "2024-06-11 12:00:@N@,456 DEBUG    app.api:views.py:212 GET /api/v1/orders/@N@ -> 200 (12.3 ms)",
    "2024-06-11 12:00:@N@,789 WARNING  app.cache:redis.py:40 cache miss for key 'user:@N@'",
    "\x1b[32mPASSED\x1b[0m step @N@ \u2713",
    "caf\u00e9 r\u00e9sum\u00e9 na\u00efve \u65e5\u672c\u8a9e \u2014 \U0001f680 done",
    "processing batch @N@/128 ...",
    'payload = {"id": @N@, "name": "O\'Brien & <Sons>", "tags": ["a", "b"]}',
    "\x1b[31mERROR\x1b[0m retrying in @N@ ms (attempt 2 of 5)",
    "\tindented with a tab; trailing spaces   ",
]

_SEP = "_ " * 39 + "_"


def _fill(s: str, rng: random.Random) -> str:
    if "@N@" in s:
        s = s.replace("@N@", str(rng.randrange(1, 9999)))
    if "@M@" in s:
        s = s.replace("@M@", str(rng.randrange(1, 9999)))
    return s


# ---------------------------------------------------------------------------------------
# Pools of long texts, built once per seed. Texts hold the placeholders "@@PATH@@"
# (module path) and "@@FUNC@@" (function name), which survive both escapings; they are
# filled per test with str.replace.


@dataclass
class _Failure:
    exception: str
    crash: str  # crash message (JUnit message attribute, pytest-json crash.message)
    text: str  # the long representation
    frames: list[tuple[str, int, str]]  # (path, lineno, message) for pytest-json "traceback"; the last is the crash


def _source_lines(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        k = rng.randrange(8)
        v, o = rng.choice(_VERBS), rng.choice(_NOUNS)
        if k == 0:
            out.append(f'        {o} = {o}_factory(name="{o}-{rng.randrange(100)}", active=True)')
        elif k == 1:
            out.append(f'        result = client.post("/api/v1/{o}s", json={{"{o}": {o}.id}})')
        elif k == 2:
            out.append(f"        # {v} the {o} and check the side effects")
        elif k == 3:
            out.append(f'        with pytest.raises(ValueError, match="invalid {o}"):')
        elif k == 4:
            out.append(f"            {v}_{o}({o}, strict=True)")
        elif k == 5:
            out.append("")
        elif k == 6:
            out.append(f'        expected = {{"id": {rng.randrange(1000)}, "status": "ok", "{o}": [1, 2, 3]}}')
        else:
            out.append(f"        assert {o}.{v}d_at is not None")
    return out


def _assert_diff(rng: random.Random, n: int) -> list[str]:
    lines = ["E         ", "E         Full diff:"]
    lines.append("E           {")
    for i in range(max(0, n - 4)):
        key = rng.choice(_NOUNS)
        if rng.random() < 0.3:
            lines.append(f"E         -     '{key}_{i}': {rng.randrange(1000)},")
            lines.append(f"E         +     '{key}_{i}': {rng.randrange(1000)},")
        else:
            lines.append(f"E               '{key}_{i}': 'value {i} \u2713',")
    lines.append("E           }")
    return lines


def _make_failure(rng: random.Random, target_lines: int, setup: bool) -> _Failure:
    """One pytest long-format traceback of exactly ``target_lines`` lines (30..200)."""
    if setup:
        exc, crash = rng.choice(_ERROR_CAUSES)
        is_assert = False
    else:
        exc, crash, is_assert = rng.choice(_CAUSES)
    crash = _fill(crash, rng)
    # pytest's reprcrash message: "Exception: message" ("AssertionError: assert ...")
    crash_msg = crash if crash.startswith(exc + ":") else f"{exc}: {crash}"
    crash_lines = crash_msg.split("\n")
    lines: list[str] = []
    frames: list[tuple[str, int, str]] = []
    fixture = rng.choice(_FIXTURES)
    test_line = rng.randrange(20, 900)
    if setup:
        lines.append(f"request = <SubRequest '{fixture}' for <Function @@FUNC@@>>")
        lines.append("")
        lines.append("    @pytest.fixture")
        lines.append(f"    def {fixture}(request):")
    else:
        lines.append(
            f"self = <@@MOD@@.TestCase object at 0x7f{rng.randrange(16**10):010x}>, "
            f"{fixture} = <{fixture.title()} id={rng.randrange(10**6)}>"
        )
        lines.append("")
        lines.append(f"    def @@FUNC@@(self, {fixture}):")
    if is_assert:
        diff = "{" in crash or "[" in crash or "'" in crash
        tail = 3 + len(crash_lines)  # ">", "E" lines, blank, location
        room = target_lines - len(lines) - tail
        n_src = rng.randrange(3, max(4, room // 3)) if diff else room
        n_src = max(0, min(n_src, room))
        lines.extend(_source_lines(rng, n_src))
        lines.append(f">       {crash}")
        lines.extend(f"E       {c}" for c in crash_lines)
        room = target_lines - len(lines) - 2
        if room > 0:
            lines.extend(_assert_diff(rng, room)[:room])
        lines.append("")
        lines.append(f"@@PATH@@:{test_line}: AssertionError")
        frames.append(("@@PATH@@", test_line, "AssertionError"))
        return _Failure(exc, crash_msg, "\n".join(lines), frames)
    last_path, last_ln, last_fn, last_src = rng.choice(_SITE)
    tail = 6 + len(crash_lines)  # separator, blank, def, ">", E lines, blank, location
    room = target_lines - len(lines) - 3 - tail
    lines.extend(_source_lines(rng, rng.randrange(min(3, room), max(4, min(room, 30)))))
    call = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
    lines.append(f">       result = {call}({fixture}, timeout=30)")
    lines.append("")
    lines.append(f"@@PATH@@:{test_line}: ")
    frames.append(("@@PATH@@", test_line, ""))
    # app frames (long form, with source) and library frames (short form) in between
    while True:
        room = target_lines - len(lines) - tail
        if room < 3:
            break
        if room >= 8 and rng.random() < 0.4:
            app = rng.choice(_APP)
            ln = rng.randrange(10, 700)
            fn = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
            lines.append(_SEP)
            lines.append("")
            lines.append(f"    def {fn}(self, *args, **kwargs):")
            lines.extend(_source_lines(rng, rng.randrange(0, min(12, room - 6) + 1)))
            lines.append(f">       return self._{fn}(*args, **kwargs)")
            lines.append("")
            lines.append(f"{app}:{ln}: ")
            frames.append((app, ln, f"in {fn}"))
        else:
            path, ln, fn, src = rng.choice(_SITE)
            lines.append(_SEP)
            lines.append(f"{path}:{ln}: in {fn}")
            lines.append(f"    {src}")
            frames.append((path, ln, f"in {fn}"))
    # pad with short-form library lines to the exact length
    while target_lines - len(lines) - tail >= 2:
        path, ln, fn, src = rng.choice(_SITE)
        lines.append(f"{path}:{ln + 3}: in _{fn}")
        lines.append(f"    return self.{fn}(*args, **kwargs)")
        frames.append((path, ln + 3, f"in _{fn}"))
    if target_lines - len(lines) - tail == 1:
        lines.append("")
    lines.append(_SEP)
    lines.append("")
    lines.append(f"    def {last_fn}(self, *args, **kwargs):")
    lines.append(f">       {last_src}")
    lines.extend(f"E       {c}" for c in crash_lines)
    lines.append("")
    lines.append(f"{last_path}:{last_ln}: {exc.rsplit('.', 1)[-1]}")
    frames.append((last_path, last_ln, exc.rsplit(".", 1)[-1]))
    return _Failure(exc, crash_msg, "\n".join(lines), frames)


def _make_output(rng: random.Random) -> str:
    n = rng.choice((1, 1, 2, 3, 5, 8, 20, 40))
    return "\n".join(_fill(rng.choice(_LOG_LINES), rng) for _ in range(n)) + "\n"


def _make_collection_error(rng: random.Random) -> tuple[str, str]:
    missing = f"app.{rng.choice(_PKGS)}.{rng.choice(_NOUNS)}_utils"
    text = (
        "ImportError while importing test module '/ci/work/@@PATH@@'.\n"
        "Hint: make sure your test modules/packages have valid Python names.\n"
        "Traceback:\n"
        "/usr/lib/python3.11/importlib/__init__.py:126: in import_module\n"
        "    return _bootstrap._gcd_import(name[level:], package, level)\n"
        f"@@PATH@@:{rng.randrange(1, 30)}: in <module>\n"
        f"    from {missing} import {rng.choice(_VERBS)}_{rng.choice(_NOUNS)}\n"
        f"E   ModuleNotFoundError: No module named '{missing}'"
    )
    return "ModuleNotFoundError", text


class _Pools:
    """Pre-built and pre-escaped long texts (built once per seed, reused by index)."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed ^ 0x5EED)
        self.failures = [_make_failure(rng, rng.randrange(30, 201), False) for _ in range(256)]
        self.errors = [_make_failure(rng, rng.randrange(30, 120), True) for _ in range(64)]
        self.outputs = [_make_output(rng) for _ in range(128)]
        self.collection = [_make_collection_error(rng) for _ in range(16)]
        self.skip_reasons = [_fill(r, rng) for r in _SKIP_REASONS]
        self.xfail_reasons = [_fill(r, rng) for r in _XFAIL_REASONS]
        self.out_xml = [xml_text(o) for o in self.outputs]
        self.out_json = [jstr(o) for o in self.outputs]
        # JUnit: (message attribute, body text), escaped
        self.fail_xml = [(xml_attr(f.crash), xml_text(f.text)) for f in self.failures]
        self.err_xml = [
            (
                xml_attr(f'failed on setup with "{f.crash}"'),
                xml_attr(f'failed on teardown with "{f.crash}"'),
                xml_text(f.text),
            )
            for f in self.errors
        ]
        self.fail_json = [self._json_phase(f) for f in self.failures]
        self.err_json = [self._json_phase(f) for f in self.errors]
        self.coll_xml = [xml_text(t) for _, t in self.collection]
        self.coll_json = [jstr(t) for _, t in self.collection]

    @staticmethod
    def _json_phase(f: _Failure) -> tuple[str, str]:
        """(``"crash": {...}, "traceback": [...]``, longrepr JSON string) of a failed
        phase; the crash is the last traceback entry, relative paths get the root."""
        path, lineno, _ = f.frames[-1]
        crash_path = path if path.startswith("/") else "/ci/work/" + path
        tb = ", ".join(f'{{"path": {jstr(p)}, "lineno": {ln:d}, "message": {jstr(m)}}}' for p, ln, m in f.frames)
        head = (
            f'"crash": {{"path": {jstr(crash_path)}, "lineno": {lineno}, "message": {jstr(f.crash)}}}, '
            f'"traceback": [{tb}]'
        )
        return head, jstr(f.text)


# ---------------------------------------------------------------------------------------
# The test stream (shared by both formats)

# kinds
PASSED, FAILED, ERR_SETUP, ERR_TEARDOWN, SKIPPED, XFAILED, XPASSED = range(7)


@dataclass(slots=True)
class _Test:
    kind: int
    classname: str  # dotted, JUnit classname
    name: str  # JUnit name (function + [param])
    nodeid: str
    lineno: int
    setup_s: float
    call_s: float
    teardown_s: float
    detail: int  # pool index (failure/error/reason)
    out: int  # output pool index or -1
    err: int  # stderr pool index or -1
    number: int  # the @N@ of this test's messages


@dataclass
class _Module:
    path: str  # tests/api/test_users_0007.py
    dotted: str  # tests.api.test_users_0007
    pkg: str
    tests: list[_Test]
    classes: list[str]
    collection_error: int  # pool index or -1


def _modules(rng: random.Random, mix: Mix, module_offset: int) -> Iterator[_Module]:
    n = module_offset
    rnd = rng.random
    randrange = rng.randrange
    p_fail = mix.failed
    p_err = p_fail + mix.error
    p_skip = p_err + mix.skipped
    p_xfail = p_skip + mix.xfailed
    p_xpass = p_xfail + mix.xpassed
    while True:
        pkg = _PKGS[randrange(len(_PKGS))]
        topic = _TOPICS[randrange(len(_TOPICS))]
        path = f"tests/{pkg}/test_{topic}_{n:04d}.py"
        dotted = f"tests.{pkg}.test_{topic}_{n:04d}"
        n += 1
        if rnd() < mix.collection_error:
            yield _Module(path, dotted, pkg, [], [], randrange(16))
            continue
        tests: list[_Test] = []
        classes: list[str] = []
        lineno = 10
        used: set[tuple[str, str]] = set()
        for _ in range(randrange(3, 26)):
            cls = _CLASSES[randrange(len(_CLASSES))] if rnd() < 0.5 else ""
            if cls and cls not in classes:
                classes.append(cls)
            func = f"test_{_VERBS[randrange(len(_VERBS))]}_{_NOUNS[randrange(len(_NOUNS))]}"
            while (cls, func) in used:
                func += f"_{randrange(10)}"
            used.add((cls, func))
            lineno += randrange(4, 40)
            if rnd() < 0.4:
                base = _PARAM_BASES[randrange(len(_PARAM_BASES))]
                names = [f"{func}[{base}-{j}]" for j in range(randrange(2, 41))]
            else:
                names = [func]
            classname = f"{dotted}.{cls}" if cls else dotted
            prefix = f"{path}::{cls}::" if cls else f"{path}::"
            for name in names:
                r = rnd()
                setup_s = 0.00005 + rnd() * 0.0005
                teardown_s = 0.00003 + rnd() * 0.0003
                call_s = rnd() ** 6 * 0.8
                if rnd() < mix.slow:
                    call_s = 2.0 + rnd() * 40.0
                if r >= p_xpass:
                    kind, detail = PASSED, 0
                    out = randrange(128) if rnd() < mix.output_passed else -1
                    err = -1
                elif r < p_fail:
                    kind, detail = FAILED, randrange(256)
                    out = randrange(128) if rnd() < mix.output_failed else -1
                    err = randrange(128) if rnd() < 0.2 else -1
                elif r < p_err:
                    kind = ERR_SETUP if rnd() < mix.setup_share_of_errors else ERR_TEARDOWN
                    detail = randrange(64)
                    out = randrange(128) if rnd() < 0.3 else -1
                    err = -1
                elif r < p_skip:
                    kind, detail, out, err = SKIPPED, randrange(len(_SKIP_REASONS)), -1, -1
                elif r < p_xfail:
                    kind, detail, out, err = XFAILED, randrange(len(_XFAIL_REASONS)), -1, -1
                else:
                    kind, detail, out, err = XPASSED, 0, -1, -1
                tests.append(
                    _Test(
                        kind,
                        classname,
                        name,
                        prefix + name,
                        lineno,
                        setup_s,
                        call_s,
                        teardown_s,
                        detail,
                        out,
                        err,
                        randrange(1, 9999),
                    )
                )
        yield _Module(path, dotted, pkg, tests, classes, -1)


# ---------------------------------------------------------------------------------------
# Writers


def _empty_counts() -> dict[str, int]:
    """The summary's ``counts`` keys, zero (the generated reports have no subtests)."""
    counts = ("total", "passed", "failed", "errors", "skipped", "xfailed", "xpassed", "flaky")
    subtests = ("subtests_passed", "subtests_failed", "passed_with_failed_subtests")
    return dict.fromkeys(counts + subtests, 0)


class _Out:
    """Buffered UTF-8 writer that knows how many bytes it has written."""

    def __init__(self, f: BinaryIO, progress: Callable[[int], None] | None) -> None:
        self.f = f
        self.parts: list[str] = []
        self.chars = 0
        self.written = 0
        self.progress = progress

    def add(self, s: str) -> None:
        self.parts.append(s)
        self.chars += len(s)
        if self.chars >= _CHUNK_CHARS:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            data = "".join(self.parts).encode("utf-8", "surrogatepass")
            self.f.write(data)
            self.written += len(data)
            self.parts = []
            self.chars = 0
            if self.progress is not None:
                self.progress(len(data))

    @property
    def approx(self) -> int:
        """Bytes written so far plus the pending characters (== bytes for ASCII)."""
        return self.written + self.chars


_SUITE_PAD = 240  # bytes reserved for the <testsuite ...> start tag


def _write_junit(
    path: str, target: int, seed: int, mix: Mix, module_offset: int, progress: Callable[[int], None] | None
) -> dict[str, Any]:
    pools = _Pools(seed)
    rng = random.Random(seed)
    counts = _empty_counts()
    total_us = 0
    n_tests = n_modules = n_coll = 0
    first_failure: str | None = None
    head = '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">'
    tail = "</testsuite></testsuites>"
    fail_xml, err_xml, out_xml = pools.fail_xml, pools.err_xml, pools.out_xml
    skip_xml = [xml_attr(r) for r in pools.skip_reasons]
    xfail_xml = [xml_attr(r) for r in pools.xfail_reasons]
    stop_at = target - len(tail)
    with open(path, "wb") as f:
        out = _Out(f, progress)
        out.add(head)
        out.flush()
        suite_offset = out.written
        out.add(" " * _SUITE_PAD)
        add = out.add
        for mod in _modules(rng, mix, module_offset):
            if out.approx >= stop_at:
                break
            n_modules += 1
            if mod.collection_error >= 0:
                text = pools.coll_xml[mod.collection_error].replace("@@PATH@@", mod.path)
                add(
                    f'<testcase classname="" name="{mod.dotted}" time="0.000">'
                    f'<error message="collection failure">{text}</error></testcase>'
                )
                counts["errors"] += 1
                n_coll += 1
                n_tests += 1
                if first_failure is None:
                    first_failure = mod.path
                continue
            for t in mod.tests:
                if out.approx >= stop_at:
                    break
                n_tests += 1
                time_s = "%.3f" % (t.setup_s + t.call_s + t.teardown_s)
                total_us += duration_us(float(time_s))
                open_tag = f'<testcase classname="{t.classname}" name="{xml_attr(t.name)}" time="{time_s}"'
                kind = t.kind
                if kind == PASSED or kind == XPASSED:
                    counts["passed"] += 1
                    if t.out >= 0:
                        add(f"{open_tag}><system-out>{out_xml[t.out]}</system-out></testcase>")
                    else:
                        add(open_tag + " />")
                    continue
                if kind == FAILED:
                    counts["failed"] += 1
                    msg, body = fail_xml[t.detail]
                    body = (
                        body.replace("@@PATH@@", mod.path)
                        .replace("@@FUNC@@", t.name.split("[", 1)[0])
                        .replace("@@MOD@@", mod.dotted)
                    )
                    inner = f'<failure message="{msg}">{body}</failure>'
                elif kind == ERR_SETUP or kind == ERR_TEARDOWN:
                    counts["errors"] += 1
                    msg_setup, msg_teardown, body = err_xml[t.detail]
                    body = body.replace("@@PATH@@", mod.path).replace("@@FUNC@@", xml_text(t.name))
                    inner = f'<error message="{msg_setup if kind == ERR_SETUP else msg_teardown}">{body}</error>'
                elif kind == SKIPPED:
                    counts["skipped"] += 1
                    reason = skip_xml[t.detail]
                    add(
                        f'{open_tag}><skipped type="pytest.skip" message="{reason}">'
                        f"/ci/work/{mod.path}:{t.lineno}: {reason}</skipped></testcase>"
                    )
                    continue
                else:  # XFAILED
                    counts["xfailed"] += 1
                    add(f'{open_tag}><skipped type="pytest.xfail" message="{xfail_xml[t.detail]}" /></testcase>')
                    continue
                if first_failure is None:
                    first_failure = t.nodeid
                if t.out >= 0:
                    inner += f"<system-out>{out_xml[t.out]}</system-out>"
                if t.err >= 0:
                    inner += f"<system-err>{out_xml[t.err]}</system-err>"
                add(f"{open_tag}>{inner}</testcase>")
        add(tail)
        out.flush()
        counts["total"] = sum(counts[k] for k in ("passed", "failed", "errors", "skipped", "xfailed", "xpassed"))
        suite = (
            f'<testsuite name="pytest" errors="{counts["errors"]}" failures="{counts["failed"]}" '
            f'skipped="{counts["skipped"] + counts["xfailed"]}" tests="{counts["total"]}" '
            f'time="{total_us / 1e6:.3f}" timestamp="2024-06-11T12:00:00.000000+00:00" hostname="ci-runner-7"'
        )
        assert len(suite) + 1 <= _SUITE_PAD
        f.seek(suite_offset)
        f.write((suite + " " * (_SUITE_PAD - len(suite) - 1) + ">").encode())
        size = out.written
    return _truth(
        "junit", path, target, seed, module_offset, size, n_modules, n_tests, counts, n_coll, total_us, first_failure
    )


def _copy_into(dst: BinaryIO, src_path: str) -> None:
    with open(src_path, "rb") as src:
        dst.flush()
        size = os.fstat(src.fileno()).st_size
        copy_range = getattr(os, "copy_file_range", None)
        done = 0
        if copy_range is not None:
            try:
                while done < size:
                    n = copy_range(src.fileno(), dst.fileno(), size - done)
                    if n == 0:
                        break
                    done += n
                dst.seek(0, os.SEEK_END)
                return
            except OSError:
                src.seek(done)
                dst.seek(0, os.SEEK_END)
        while chunk := src.read(8 << 20):
            dst.write(chunk)


_PASSED = '"outcome": "passed"'
_LOG_RECORD = (
    ', "log": [{"name": "app.db", "msg": "query took %d ms", "args": null, "levelname": "WARNING", '
    '"levelno": 30, "pathname": "/ci/work/app/db/session.py", "filename": "session.py", '
    '"module": "session", "exc_info": null, "exc_text": null, "stack_info": null, "lineno": 88, '
    '"funcName": "execute", "created": 1718107200.5, "msecs": 500.0, "relativeCreated": 1234.5, '
    '"thread": 140000000000000, "threadName": "MainThread", "processName": "MainProcess", '
    '"process": 4242, "asctime": "2024-06-11 12:00:00,500"}]'
)


def _write_pytest_json(
    path: str, target: int, seed: int, mix: Mix, module_offset: int, progress: Callable[[int], None] | None
) -> dict[str, Any]:
    pools = _Pools(seed)
    rng = random.Random(seed)
    counts = _empty_counts()
    total_us = 0
    n_tests = n_modules = n_coll = 0
    first_failure: str | None = None
    root = "/ci/work"
    fail_json, err_json, out_json = pools.fail_json, pools.err_json, pools.out_json
    skip_reasons, xfail_reasons = pools.skip_reasons, pools.xfail_reasons
    header_estimate = 1200
    tests_tmp = path + ".tests.tmp"
    coll_tmp = path + ".collectors.tmp"
    dirs: dict[str, list[str]] = {}
    rd = repr
    with open(tests_tmp, "wb") as ft, open(coll_tmp, "wb") as fc:
        to = _Out(ft, progress)
        co = _Out(fc, progress)
        add = to.add
        first_test = True
        first_coll = [True]

        def cadd(item: str) -> None:  # one collector, comma-separated
            if first_coll[0]:
                first_coll[0] = False
                co.add(item)
            else:
                co.add(", " + item)

        stop_at = target - header_estimate - 40

        for mod in _modules(rng, mix, module_offset):
            if to.approx + co.approx >= stop_at:
                break
            n_modules += 1
            dirs.setdefault(f"tests/{mod.pkg}", []).append(mod.path)
            if mod.collection_error >= 0:
                text = pools.coll_json[mod.collection_error].replace("@@PATH@@", mod.path)
                cadd(f'{{"nodeid": {jstr(mod.path)}, "outcome": "failed", "result": [], "longrepr": {text}}}')
                counts["errors"] += 1
                n_coll += 1
                if first_failure is None:
                    first_failure = mod.path
                continue
            results: list[str] = []
            class_results: dict[str, list[str]] = {}
            for t in mod.tests:
                if to.approx + co.approx >= stop_at:
                    break
                n_tests += 1
                nid = jstr(t.nodeid)
                entry = f'{{"nodeid": {nid}, "type": "Function", "lineno": {t.lineno}}}'
                cls = t.nodeid[len(mod.path) + 2 :].split("::")[0] if t.nodeid.count("::") == 2 else ""
                if cls:
                    class_results.setdefault(cls, []).append(entry)
                else:
                    results.append(entry)
                kind = t.kind
                func = t.name.split("[", 1)[0]
                kw = (
                    f'[{jstr(t.name)}, {jstr(mod.path.rsplit("/", 1)[1])}, "work", ""]'
                    if "[" not in t.name
                    else f'[{jstr(t.name)}, "parametrize", "pytestmark", {jstr(t.name[len(func) + 1 : -1])}, '
                    f'{jstr(mod.path.rsplit("/", 1)[1])}, "work", ""]'
                )
                s_setup = t.setup_s
                s_td = t.teardown_s
                us = duration_us(s_setup) + duration_us(s_td)
                setup_extra = call_part = td_extra = ""
                if kind == PASSED or kind == XPASSED or kind == FAILED:
                    us += duration_us(t.call_s)
                if kind == PASSED or kind == XPASSED:
                    outcome = "passed" if kind == PASSED else "xpassed"
                    counts[outcome] += 1
                    extra = f', "stdout": {out_json[t.out]}' if t.out >= 0 else ""
                    call_part = f', "call": {{"duration": {rd(t.call_s)}, "outcome": "passed"{extra}}}'
                elif kind == FAILED:
                    outcome = "failed"
                    counts["failed"] += 1
                    crash_tb, longrepr = fail_json[t.detail]
                    extra = ""
                    if t.out >= 0:
                        extra += f', "stdout": {out_json[t.out]}'
                    if t.err >= 0:
                        extra += f', "stderr": {out_json[t.err]}'
                    if t.number % 50 == 0:
                        extra += _LOG_RECORD % t.number
                    phase = (
                        f', "call": {{"duration": {rd(t.call_s)}, "outcome": "failed", {crash_tb}{extra}, '
                        f'"longrepr": {longrepr}}}'
                    )
                    call_part = (
                        phase.replace("@@PATH@@", mod.path).replace("@@FUNC@@", func).replace("@@MOD@@", mod.dotted)
                    )
                elif kind == ERR_SETUP or kind == ERR_TEARDOWN:
                    outcome = "error"
                    counts["errors"] += 1
                    crash_tb, longrepr = err_json[t.detail]
                    failed_phase = f'"outcome": "failed", {crash_tb}, "longrepr": {longrepr}'
                    failed_phase = failed_phase.replace("@@PATH@@", mod.path).replace("@@FUNC@@", nid[1:-1])
                    if kind == ERR_SETUP:
                        setup_extra = failed_phase
                    else:
                        us += duration_us(t.call_s)
                        call_part = f', "call": {{"duration": {rd(t.call_s)}, "outcome": "passed"}}'
                        td_extra = failed_phase
                elif kind == SKIPPED:
                    outcome = "skipped"
                    counts["skipped"] += 1
                    longrepr = repr((f"{root}/{mod.path}", t.lineno, "Skipped: " + skip_reasons[t.detail]))
                    setup_extra = f'"outcome": "skipped", "longrepr": {jstr(longrepr)}'
                else:  # XFAILED
                    outcome = "xfailed"
                    counts["xfailed"] += 1
                    us += duration_us(t.call_s)
                    longrepr = (
                        f"@pytest.mark.xfail(reason={xfail_reasons[t.detail]!r})\n    def {func}():\n"
                        f">       assert False\nE       assert False\n\n{mod.path}:{t.lineno + 2}: AssertionError"
                    )
                    call_part = (
                        f', "call": {{"duration": {rd(t.call_s)}, "outcome": "skipped", "longrepr": {jstr(longrepr)}}}'
                    )
                if kind not in (PASSED, XPASSED, SKIPPED, XFAILED) and first_failure is None:
                    first_failure = t.nodeid
                total_us += us
                setup = f'"setup": {{"duration": {rd(s_setup)}, {setup_extra or _PASSED}}}'
                teardown = f'"teardown": {{"duration": {rd(s_td)}, {td_extra or _PASSED}}}'
                add(
                    f'{"" if first_test else ", "}{{"nodeid": {nid}, "lineno": {t.lineno}, "outcome": "{outcome}", '
                    f'"keywords": {kw}, {setup}{call_part}, {teardown}}}'
                )
                first_test = False
            for cls, entries in class_results.items():
                results.append(f'{{"nodeid": {jstr(mod.path + "::" + cls)}, "type": "Class"}}')
                cadd(
                    f'{{"nodeid": {jstr(mod.path + "::" + cls)}, "outcome": "passed", '
                    f'"result": [{", ".join(entries)}]}}'
                )
            cadd(f'{{"nodeid": {jstr(mod.path)}, "outcome": "passed", "result": [{", ".join(results)}]}}')
        for d, mods in dirs.items():
            module_entries = ", ".join(f'{{"nodeid": {jstr(m)}, "type": "Module"}}' for m in mods)
            cadd(f'{{"nodeid": {jstr(d)}, "outcome": "passed", "result": [{module_entries}]}}')
        cadd(
            '{{"nodeid": "tests", "outcome": "passed", "result": [{}]}}'.format(
                ", ".join(f'{{"nodeid": {jstr(d)}, "type": "Package"}}' for d in dirs)
            )
        )
        cadd('{"nodeid": "", "outcome": "passed", "result": [{"nodeid": "tests", "type": "Dir"}]}')
        to.flush()
        co.flush()
        tests_bytes, coll_bytes = to.written, co.written
    counts["total"] = sum(counts[k] for k in ("passed", "failed", "errors", "skipped", "xfailed", "xpassed"))
    summary = {
        k: counts[v]
        for k, v in (
            ("passed", "passed"),
            ("failed", "failed"),
            ("xfailed", "xfailed"),
            ("xpassed", "xpassed"),
            ("error", "errors"),
            ("skipped", "skipped"),
        )
        if counts[v]
    }
    summary["total"] = counts["total"]
    summary["collected"] = n_tests
    env = {
        "Python": "3.11.9",
        "Platform": "Linux-6.1.0-18-amd64-x86_64-with-glibc2.36",
        "Packages": {"pytest": "8.2.2", "pluggy": "1.5.0"},
        "Plugins": {"json-report": "1.5.0", "metadata": "3.1.1", "xdist": "3.6.1", "cov": "5.0.0"},
        "CI": "true",
        "GITHUB_RUN_ID": "9467283411",
    }
    head = (
        f'{{"created": 1718107200.123456, "duration": {total_us / 1e6 + 3.5}, '
        f'"exitcode": {1 if counts["failed"] or counts["errors"] else 0}, "root": {jstr(root)}, '
        f'"environment": {json.dumps(env)}, "summary": {json.dumps(summary)}, "collectors": ['
    )
    with open(path, "wb") as f:
        f.write(head.encode())
        _copy_into(f, coll_tmp)
        f.write(b'], "tests": [')
        _copy_into(f, tests_tmp)
        f.write(b"]}")
        f.flush()
        size = f.tell()
    os.unlink(coll_tmp)
    os.unlink(tests_tmp)
    assert size == len(head) + coll_bytes + tests_bytes + 15, "byte accounting"
    return _truth(
        "pytest-json",
        path,
        target,
        seed,
        module_offset,
        size,
        n_modules,
        n_tests,
        counts,
        n_coll,
        total_us,
        first_failure,
    )


def _truth(
    fmt: str,
    path: str,
    target: int,
    seed: int,
    module_offset: int,
    size: int,
    n_modules: int,
    n_tests: int,
    counts: dict[str, int],
    n_coll: int,
    total_us: int,
    first_failure: str | None,
) -> dict[str, Any]:
    return {
        "format": fmt,
        "path": os.fspath(path),
        "seed": seed,
        "target_bytes": target,
        "bytes": size,
        "generator_version": GENERATOR_VERSION,
        "module_offset": module_offset,
        "modules": n_modules,
        "tests": n_tests,
        "counts": counts,
        "collection_errors": n_coll,
        "duration_us": total_us,
        "first_failure": first_failure,
    }


def truth_path(path: str | os.PathLike[str]) -> str:
    """The sidecar of a generated report: ``<path>.truth.json``."""
    return os.fspath(path) + ".truth.json"


def generate(
    path: str | os.PathLike[str],
    fmt: str,
    target_bytes: int,
    seed: int = DEFAULT_SEED,
    *,
    module_offset: int = 0,
    mix: Mix = DEFAULT_MIX,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Write one synthetic report of about ``target_bytes`` bytes and return its truth.

    ``fmt``: ``"junit"`` or ``"pytest-json"``. ``module_offset``: the number of the first
    module (CI shards use distinct offsets so their node ids differ). ``progress``: called
    with the number of bytes of each chunk written (for a progress bar; the
    pytest-json-report writer reports its two temporary sections, then copies them).

    The file is written to ``<path>.part`` and renamed when complete, so a cached file is
    never a half-written one; the truth goes to ``<path>.truth.json``. Raises
    ``ValueError`` for an unknown format or a target below 1 KB; ``OSError`` from the
    filesystem.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, not {fmt!r}")
    if target_bytes < 1024:
        raise ValueError(f"target_bytes must be at least 1024, not {target_bytes}")
    path = os.fspath(path)
    part = path + ".part"
    writer = _write_junit if fmt == "junit" else _write_pytest_json
    truth = writer(part, int(target_bytes), int(seed), mix, int(module_offset), progress)
    os.replace(part, path)
    truth["path"] = path
    with open(truth_path(path), "w", encoding="utf-8") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    return truth


def load_truth(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The truth sidecar of ``path``, or None when it is missing, unreadable, from another
    generator version, or does not match the file's size."""
    try:
        with open(truth_path(path), encoding="utf-8") as f:
            truth: dict[str, Any] = json.load(f)
        if truth.get("generator_version") != GENERATOR_VERSION:
            return None
        if os.path.getsize(path) != truth["bytes"]:
            return None
        return truth
    except (OSError, ValueError, KeyError):
        return None


_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgG]?)(i?)[bB]?\s*$")


def parse_size(text: str) -> int:
    """``"10MB"`` -> 10_000_000, ``"1GB"`` -> 10**9, ``"64KiB"`` -> 65536, ``"5000"`` -> 5000.

    Units are decimal (kB, MB, GB = 10^3, 10^6, 10^9 bytes) unless written with ``i``
    (KiB, MiB, GiB). Raises ``ValueError`` for anything else.
    """
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 10MB, 100MB, 1GB, 512KiB)")
    number, unit, binary = m.groups()
    base = 1024 if binary else 1000
    power = {"": 0, "k": 1, "m": 2, "g": 3}[unit.lower()]
    return int(float(number) * base**power)


def format_size(n: int) -> str:
    """The inverse of ``parse_size`` for round decimal sizes: 10**8 -> ``"100MB"``."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_mcp_server.bench.generate OUT --format junit --size 100MB``."""
    import argparse
    import time

    p = argparse.ArgumentParser(prog="python -m pytest_mcp_server.bench.generate", description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--format", choices=FORMATS, default="junit")
    p.add_argument("--size", type=parse_size, default=parse_size("10MB"))
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--module-offset", type=int, default=0)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    truth = generate(args.out, args.format, args.size, args.seed, module_offset=args.module_offset)
    dt = time.perf_counter() - t0
    print(json.dumps(truth))
    print(f"{truth['bytes'] / 1e6:.1f} MB in {dt:.1f} s ({truth['bytes'] / 1e6 / dt:.0f} MB/s)", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
