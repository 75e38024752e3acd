"""The pytest-json-report parsers (native ``pytest_json.rs`` and pure ``pure/pytest_json/``).

1. Corpora (tests/helpers/corpus.py): the in-repo ``dialects/json/pytest-json-report.json`` and,
   when the shared corpus is present, the plugin's ``sample_report.json``, with counts and
   failures worked out by reading them; every other JSON file of the corpora (mocha, jest,
   dart, rspec, go, CI result summaries, empty, malformed, not JSON) is refused with the
   right kind by both backends.
2. Real pytest runs with ``--json-report`` on a project with every outcome, with
   several ``--json-report-omit`` combinations and ``--json-report-summary``, checked
   against pytest's own summary line and the node ids the fixture project defines.
3. Hand-built documents following the plugin's shape: pytest-rerunfailures' ``rerun``
   entries, huge texts (capped while streaming), malformed snippets (the same kind in
   both backends), and the memory of the native parser on a large file.

Everywhere, the native and pure summaries must be the same bytes.
"""

from __future__ import annotations

import io
import json
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import corpus, peak_memory
from helpers.backends import kind_in_both, needs_native, summary_in_both

from pytest_mcp_server.engine.models import Budgets, ReportError
from pytest_mcp_server.engine.pure.pytest_json import parse_pytest_json as pure_parse
from pytest_mcp_server.engine.pure.record import CollectionErrorRecord, TestRecord

# Real pytest-json-report files: the one written for this repository (always) and the
# plugin's own sample report in the shared corpus (when present), by corpus id.
OWN_REPORT = "dialects/json/pytest-json-report.json"
PLUGIN_SAMPLE = "shared/pytest-json-report/sample_report.json"
SAMPLES = [rel for rel in (OWN_REPORT, PLUGIN_SAMPLE) if corpus.available(rel)]


def pure_records(data: bytes, max_output_bytes: int = 2048) -> list[TestRecord | CollectionErrorRecord]:
    records: list = []
    budgets = {**Budgets().model_dump(), "max_output_bytes": max_output_bytes}
    pure_parse(io.BytesIO(data), "r.json", budgets, records.append)
    return records


# --------------------------------------------------------------------------------------
# 1. Corpus


NO_SUBTEST_COUNTS = {"subtests_passed": 0, "subtests_failed": 0, "passed_with_failed_subtests": 0}

# What each real report must give, worked out by reading it.
SAMPLE_EXPECTED = {
    # The project's own run: pytest's line was "3 failed, 4 passed, 1 skipped, 1 xfailed,
    # 1 xpassed, 3 errors" (test_receipt's teardown error counts twice there: its call
    # passed); the file's "summary" says passed 3, failed 3, error 2 of 11 tests, and one
    # collector (test_shipping.py) failed: one more error.
    OWN_REPORT: {
        "counts": {
            "total": 12, "passed": 3, "failed": 3, "errors": 3, "skipped": 1, "xfailed": 1, "xpassed": 1,
            "flaky": 0, **NO_SUBTEST_COUNTS,
        },
        "failures": [
            ("test_cart.py::test_total_with_output", "failed", "call"),
            ("test_cart.py::test_checkout", "error", "setup"),
            ("test_cart.py::test_receipt", "error", "teardown"),
            ("test_cart.py::test_discount_chain", "failed", "call"),
            ("test_cart.py::test_quantity[2]", "failed", "call"),
        ],
        # crash.path "/home/dev/shop/test_cart.py" under root "/home/dev/shop"
        "first_location": {"path": "test_cart.py", "line": 13},
        # the fixture "noisy" prints in setup and teardown, the test in its call
        "first_stdout": "opening cart\nadding apples\nclosing cart\n",
        "first_stderr": "cart warning\nprice list is stale\ncart closed late\n",
        "nested": (3, "KeyError", 37),
        "collection_errors": [("test_shipping.py", "ModuleNotFoundError")],
    },
    # The plugin's sample: its own "summary" says passed 2, failed 3, xfailed 1, xpassed
    # 1, error 2, skipped 1 (total 10); checked against its ten test entries by reading them.
    PLUGIN_SAMPLE: {
        "counts": {
            "total": 10, "passed": 2, "failed": 3, "errors": 2, "skipped": 1, "xfailed": 1, "xpassed": 1,
            "flaky": 0, **NO_SUBTEST_COUNTS,
        },
        "failures": [
            ("test_create_report.py::test_fail_with_fixture", "failed", "call"),
            ("test_create_report.py::test_fail_during_setup", "error", "setup"),
            ("test_create_report.py::test_fail_during_teardown", "error", "teardown"),
            ("test_create_report.py::test_fail_nested", "failed", "call"),
            ("test_create_report.py::test_parametrized[2]", "failed", "call"),
        ],
        # crash.path "/tmp/pytest-of-user/pytest-40/test_create_report0/test_create_report.py"
        # and root "/tmp/pytest-of-user/pytest-40/test_create_report0": the prefix goes.
        "first_location": {"path": "test_create_report.py", "line": 32},
        # stdout/stderr of setup, call and teardown, in phase order.
        "first_stdout": "setup\ncall\nteardown\n",
        "first_stderr": "setuperr\ncallerr\nteardownerr\n",
        "nested": (3, "TypeError", 55),
        "collection_errors": [],
    },
}  # fmt: skip


@needs_native
@pytest.mark.parametrize("rel", SAMPLES)
def test_real_report_counts_failures_and_details(rel):
    want = SAMPLE_EXPECTED[rel]
    summary = summary_in_both(corpus.path(rel))
    assert summary["counts"] == want["counts"]
    assert [(f["node_id"], f["outcome"], f["phase"]) for f in summary["failures"]] == want["failures"]
    first = summary["failures"][0]
    assert first["location"] == want["first_location"]
    assert (first["stdout"], first["stderr"]) == (want["first_stdout"], want["first_stderr"])
    index, exception, line = want["nested"]
    nested = summary["failures"][index]
    assert (nested["exception"], nested["location"]["line"]) == (exception, line)
    assert [(e["path"], e["exception"]) for e in summary["collection_errors"]] == want["collection_errors"]


@pytest.mark.parametrize("rel", SAMPLES)
def test_real_report_records_match_a_reference_reading_with_the_json_module(rel):
    """The pure parser's records against an independent whole-file reading of the spec."""
    data = corpus.path(rel).read_bytes()
    doc = json.loads(data)
    root = doc["root"] + "/"
    records = pure_records(data)
    tests = [r for r in records if isinstance(r, TestRecord)]
    errors = [r for r in records if isinstance(r, CollectionErrorRecord)]
    failed_collectors = [c for c in doc.get("collectors", []) if c["outcome"] == "failed"]
    assert [(e.path, e.text) for e in errors] == [(c["nodeid"], c["longrepr"]) for c in failed_collectors]
    assert [r.node_id for r in tests] == [t["nodeid"] for t in doc["tests"]]
    for record, test in zip(tests, doc["tests"], strict=True):
        phases = [test[p] for p in ("setup", "call", "teardown") if p in test]
        assert record.outcome == test["outcome"]
        assert record.duration_us == sum(int(p["duration"] * 1e6 + 0.5) for p in phases)
        failed = next((p for p in phases if p["outcome"] == "failed"), None)
        if test["outcome"] in ("failed", "error"):
            assert record.text == failed["longrepr"]
            assert record.message == failed["crash"]["message"]
            assert record.path == failed["crash"]["path"].removeprefix(root)
            assert record.line == failed["crash"]["lineno"]
            assert record.stdout == ("".join(p["stdout"] for p in phases if "stdout" in p) or None)
        else:
            assert (record.text, record.message, record.stdout) == (None, None, None)


def _other_json_files() -> list[Path]:
    return [p for p in corpus.files("*.json") if corpus.relative(p) not in SAMPLES]


# What each other JSON file of the corpora must give (by reading the files), by corpus id.
# Every file not listed must be not_a_report: valid JSON of another tool (mocha, jest,
# rspec objects without "exitcode"; Go and Dart write one object per line, and the first
# object is no report), an empty file, or plain text.
EXPECTED_KIND = {
    # `{"exitcode": 1, "summary": {}, unquoted: "key"}`: invalid JSON (an unquoted key).
    "dialects/json/malformed.json": "malformed",
    # The same run as pytest-json-report.json with --json-report-summary: no tests, accepted.
    "dialects/json/pytest-json-report-summary-only.json": "ok",
    # `{"key": "val", malformed: "key"}`: invalid JSON (an unquoted key).
    "shared/publish-unit-test-result-action/python/test/files/json/malformed-json.json": "malformed",
}


@needs_native
@pytest.mark.parametrize("path", corpus.params(_other_json_files()))
def test_other_corpus_json_files_are_refused_with_the_right_kind(path):
    assert kind_in_both(path) == EXPECTED_KIND.get(corpus.relative(path), "not_a_report")


# The files each corpus must hold for the refusal test to mean something.
EXPECTED_OTHER_JSON = {
    "dialects": (
        "mocha-reporter-json.json",
        "jest-json.json",
        "rspec-json.json",
        "publish-results-summary.json",
        "go-test-ndjson.json",
        "dart-json-reporter.json",
        "malformed.json",
        "plain-text.json",
        "empty.json",
        "pytest-json-report-summary-only.json",
    ),
    "shared": (
        "mocha-json.json",
        "golang-json.json",
        "dart-json.json",
        "rspec-json.json",
        "empty.json",
        "malformed-json.json",
        "non-json.json",
        "jest-junit.results.json",
    ),
}


@pytest.mark.parametrize("name", sorted(corpus.ROOTS))
def test_the_corpus_has_the_files_the_refusal_test_expects(name):
    assert all(corpus.path(rel).is_file() for rel in SAMPLES if rel.startswith(f"{name}/"))
    names = {p.name for p in _other_json_files() if corpus.relative(p).startswith(f"{name}/")}
    assert set(EXPECTED_OTHER_JSON[name]) <= names
    assert all(corpus.path(rel).is_file() for rel in EXPECTED_KIND if rel.startswith(f"{name}/"))


# --------------------------------------------------------------------------------------
# 2. Real pytest runs

PROJECT = {
    "conftest.py": """
        import pytest

        @pytest.fixture
        def broken_setup():
            raise RuntimeError("database unavailable")

        @pytest.fixture
        def broken_teardown():
            yield
            raise OSError("cleanup failed")
    """,
    "test_outcomes.py": """
        import sys
        import pytest

        def test_pass():
            assert True

        def test_list_diff():
            assert [1, 2, 3] == [1, 2, 4]

        def test_output_then_fail():
            print("to stdout")
            print("to stderr", file=sys.stderr)
            assert 1 + 1 == 3

        def test_setup_error(broken_setup):
            pass

        def test_fail_then_teardown_error(broken_teardown):
            assert "call" == "fails"

        def test_teardown_error_only(broken_teardown):
            pass

        def test_skip():
            pytest.skip("not today")

        @pytest.mark.skipif(True, reason="never here")
        def test_skipif():
            pass

        @pytest.mark.xfail(reason="known bug")
        def test_xfail():
            raise ValueError("still broken")

        @pytest.mark.xfail(reason="fixed?")
        def test_xpass():
            pass

        @pytest.mark.xfail(reason="must fail", strict=True)
        def test_strict_xpass():
            pass

        @pytest.mark.parametrize("n", [1, 2, 3])
        def test_param(n):
            assert n != 2

        class TestGroup:
            def test_method_ok(self):
                assert "a" in "abc"

            def test_method_fails(self):
                assert {"k": 1} == {"k": 2}
    """,
    "test_collect_broken.py": """
        import module_that_does_not_exist  # a collection error

        def test_never_runs():
            pass
    """,
}

# Tests that fail or error, in report order, with the phase of the failure; written
# from the project above (not from a parser's output).
EXPECTED_FAILURES = [
    ("test_outcomes.py::test_list_diff", "failed", "call"),
    ("test_outcomes.py::test_output_then_fail", "failed", "call"),
    ("test_outcomes.py::test_setup_error", "error", "setup"),
    # pytest-json-report sets the test's outcome to that of its last bad report: the
    # teardown error; the first failed phase is still the call.
    ("test_outcomes.py::test_fail_then_teardown_error", "error", "call"),
    ("test_outcomes.py::test_teardown_error_only", "error", "teardown"),
    ("test_outcomes.py::test_strict_xpass", "failed", "call"),
    ("test_outcomes.py::test_param[2]", "failed", "call"),
    ("test_outcomes.py::TestGroup::test_method_fails", "failed", "call"),
]

OMIT_VARIANTS = {
    "full": [],
    "omit-collectors": ["--json-report-omit", "collectors"],
    "omit-streams-traceback-log": ["--json-report-omit", "streams", "traceback", "log"],
    "omit-all": ["--json-report-omit", "collectors", "log", "traceback", "streams", "warnings", "keywords"],
    "summary-only": ["--json-report-summary"],
    "indented": ["--json-report-indent", "2"],
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("jsonproj")
    for name, text in PROJECT.items():
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def run_pytest(project: Path, extra: list[str], report: Path) -> dict[str, int]:
    """Run the real pytest on ``project``; returns the counts of its summary line."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--continue-on-collection-errors",
        "--json-report",
        f"--json-report-file={report}",
        *extra,
        str(project),
    ]
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=120)
    last = proc.stdout.strip().splitlines()[-1]
    assert " in " in last, proc.stdout[-3000:] + proc.stderr[-3000:]
    counts = {
        word.replace("error", "errors").replace("errorss", "errors"): int(n)
        for n, word in re.findall(r"(\d+) (\w+)", last.split(" in ")[0])
    }
    assert report.is_file(), proc.stdout[-2000:]
    return counts


@pytest.fixture(scope="module")
def reports(project, tmp_path_factory) -> dict[str, tuple[Path, dict[str, int]]]:
    out = tmp_path_factory.mktemp("jsonreports")
    return {
        name: (out / f"{name}.json", run_pytest(project, extra, out / f"{name}.json"))
        for name, extra in OMIT_VARIANTS.items()
    }


@needs_native
@pytest.mark.parametrize("variant", [v for v in OMIT_VARIANTS if v != "summary-only"])
def test_real_pytest_report_matches_pytest_summary_line(reports, variant):
    path, line = reports[variant]
    summary = summary_in_both(path)
    counts = summary["counts"]
    # pytest's line counts reports, not tests: a teardown error is one more "error" on
    # top of the call's "failed" (test_fail_then_teardown_error) or "passed"
    # (test_teardown_error_only); here each is one test, an error. The collection error
    # is one error in both, unless the collectors were omitted from the report.
    collection_errors = 0 if "collectors" in OMIT_VARIANTS[variant] else 1
    assert (line["failed"], line["passed"], line["errors"]) == (6, 5, 4), line  # the fixture as written
    assert counts["failed"] == line["failed"] - 1
    assert counts["passed"] == line["passed"] - 1
    assert counts["errors"] == line["errors"] - 1 + collection_errors
    for key in ("skipped", "xfailed", "xpassed"):
        assert counts[key] == line[key], key
    assert counts["total"] == 16 + collection_errors  # the 16 tests of test_outcomes.py
    assert [(f["node_id"], f["outcome"], f["phase"]) for f in summary["failures"]] == EXPECTED_FAILURES
    paths = [c["path"] for c in summary["collection_errors"]]
    assert paths == (["test_collect_broken.py"] if collection_errors else [])
    if collection_errors:
        assert summary["collection_errors"][0]["exception"] == "ModuleNotFoundError"


@needs_native
def test_real_pytest_report_details(reports):
    summary = summary_in_both(reports["full"][0])
    by_id = {f["node_id"]: f for f in summary["failures"]}
    out = by_id["test_outcomes.py::test_output_then_fail"]
    assert (out["stdout"], out["stderr"]) == ("to stdout\n", "to stderr\n")
    assert out["location"] == {"path": "test_outcomes.py", "line": 13}
    setup = by_id["test_outcomes.py::test_setup_error"]
    assert (setup["exception"], setup["message"]) == ("RuntimeError", "database unavailable")
    assert by_id["test_outcomes.py::test_teardown_error_only"]["exception"] == "OSError"
    diff = by_id["test_outcomes.py::test_list_diff"]
    assert diff["exception"] == "AssertionError" and "assert [1, 2, 3] == [1, 2, 4]" in diff["message"]
    # Streams omitted from the report: no captured output in the summary.
    no_streams = summary_in_both(reports["omit-streams-traceback-log"][0])
    assert all(f["stdout"] is None and f["stderr"] is None for f in no_streams["failures"])


@needs_native
def test_summary_only_report_has_no_tests_but_is_accepted(reports):
    path, line = reports["summary-only"]
    assert "tests" not in json.loads(path.read_bytes())
    summary = summary_in_both(path)
    assert summary["counts"]["total"] == 0 and summary["failures"] == []
    assert line["passed"] > 0


# --------------------------------------------------------------------------------------
# 3. Hand-built documents


def write(tmp_path: Path, doc: dict | bytes, name: str = "report.json") -> Path:
    path = tmp_path / name
    path.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    return path


def phase(outcome: str, duration: float = 0.5, **extra) -> dict:
    return {"duration": duration, "outcome": outcome, **extra}


def report(tests: list[dict], **top) -> dict:
    return {
        "created": 1.0,
        "duration": 2.0,
        "exitcode": 1,
        "root": "/proj",
        "environment": {},
        "summary": {},
        "tests": tests,
        **top,
    }


@needs_native
def test_rerun_entries_follow_the_retry_rule(tmp_path):
    # pytest-rerunfailures' outcome "rerun" for the earlier attempts, as the plugin's
    # report shape has it (one entry per attempt here; one entry left at "rerun" when
    # pytest-json-report keeps a single entry and the last attempt passed).
    fail = phase(
        "failed", 1.0, longrepr="E   assert 0", crash={"path": "/proj/t.py", "lineno": 3, "message": "assert 0"}
    )
    doc = report(
        [
            {"nodeid": "t.py::flaky", "outcome": "rerun", "call": fail},
            {"nodeid": "t.py::flaky", "outcome": "passed", "call": phase("passed", 2.0)},
            {"nodeid": "t.py::broken", "outcome": "rerun", "call": fail},
            {"nodeid": "t.py::broken", "outcome": "failed", "call": fail},
            {"nodeid": "t.py::single_entry", "outcome": "rerun", "call": phase("passed", 0.25)},
            {"nodeid": "t.py::plain", "outcome": "passed", "call": phase("passed", 0.125)},
        ]
    )
    summary = summary_in_both(write(tmp_path, doc))
    assert summary["counts"] == {
        "total": 4,
        "passed": 3,
        "failed": 1,
        "errors": 0,
        "skipped": 0,
        "xfailed": 0,
        "xpassed": 0,
        "flaky": 2,
        "subtests_passed": 0,
        "subtests_failed": 0,
        "passed_with_failed_subtests": 0,
    }
    assert [f["node_id"] for f in summary["failures"]] == ["t.py::broken"]
    assert summary["tests_duration_s"] == 3.0 + 2.0 + 0.25 + 0.125
    assert summary["duration_s"] == 2.0  # the report's own (pytest's session time)
    assert summary["slowest"][0] == {"node_id": "t.py::flaky", "duration_s": 3.0}


@needs_native
def test_huge_texts_are_capped_while_streaming(tmp_path):
    longrepr = (
        "".join(f"line {i} " + "x" * 90 + "\n" for i in range(5000))
        + "E   AssertionError: boom\nt.py:9: AssertionError"
    )
    stdout = "é" * 300_000  # 600,000 bytes, 2-byte characters
    message = "m" * (70 * 1024)
    doc = report(
        [
            {
                "nodeid": "t.py::big",
                "outcome": "failed",
                "call": phase(
                    "failed",
                    longrepr=longrepr,
                    stdout=stdout,
                    crash={"path": "/proj/t.py", "lineno": 9, "message": message},
                ),
            }
        ]
    )
    summary = summary_in_both(write(tmp_path, doc), max_output_bytes=1001)
    failure = summary["failures"][0]
    # The tail of 1001 bytes starts inside an 'é': it moves forward to 1000 bytes.
    assert failure["stdout"] == "é" * 500
    assert summary["omitted"]["output_bytes"] == 600_000 - 1000
    # longrepr is ASCII: 64 KiB head + 64 KiB tail kept; the message keeps 64 KiB.
    assert summary["omitted"]["text_bytes"] == (len(longrepr) - 128 * 1024) + (70 - 64) * 1024
    assert failure["location"] == {"path": "t.py", "line": 9}


@needs_native
@pytest.mark.parametrize(
    "doc",
    [
        b'{"exitcode": 0, "summary": {}, "tests": [1, 2,]}',
        b'{"exitcode": 0, "summary": {},}',
        b'{"exitcode": NaN, "summary": {}}',
        b'{"exitcode": 0, "summary": {"a": Infinity}}',
        b"{'exitcode': 0, 'summary': {}}",
        b'{"exitcode": 0, "summary": {}',
        b'{"exitcode": 0, "summary": {"a": "abc',
        b'{"exitcode": 0, "summary": {"a": "\xff"}}',
        b'{"exitcode": 0, "summary": {"a": "\xc0\xaf"}}',
        b'{"exitcode": 0, "summary": {"a": "\xed\xa0\x80"}}',
        b'{"exitcode": 0, "summary": {"a": "\\ud800"}}',
        b'{"exitcode": 0, "summary": {"a": "\\udc00x"}}',
        b'{"exitcode": 0, "summary": {"a": "\\ud800\\ud800"}}',
        b'{"exitcode": 0, "summary": {"a": "\\\\\\ud800"}}',
        b'{"exitcode": 0, "summary": {}} x',
        b'{"exitcode": 0, "summary": {}} {}',
        b'{"exitcode": 0, "summary": {"a": "a\x01b"}}',
        b'{"exitcode": 0, "summary": {"a": "a\nb"}}',
        b'{"exitcode": 0, "summary": {"a": "\\x"}}',
        b'{"exitcode": 01, "summary": {}}',
        b'{"exitcode": 1., "summary": {}}',
        b'{"exitcode": +1, "summary": {}}',
        b'{"exitcode": 0, "summary": {"a": tru}}',
        b'{"exitcode": 0, "summary": {}}\x0c',
        b'{"exitcode": 0, "summary": {} /* c */}',
        b'{"exitcode": 0, "summary": {"a": 1e400}}',
        b'{"exitcode": 0, "summary": {"a": 9223372036854775808}}',
        b'{"exitcode": 0, "summary": {"a": -9223372036854775808}}',
        b'{"exitcode": 0, "summary": {"a": ' + b"[" * 1024 + b"]" * 1024 + b"}}",
        # Structural errors in a report (duplicate keys: test_hostile_reports.py).
        b'{"exitcode": "1", "summary": {}}',
        b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "a", "outcome": "weird"}]}',
        b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "a", "outcome": "passed", "call": null}]}',
        b'{"tests": [{"nodeid": "a"}], "summary": {}, "exitcode": 0}',
        b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "a", "outcome": "passed",'
        b' "call": {"outcome": "passed"}}]}',
        b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "a", "outcome": "failed", "call": {"duration": 1,'
        b' "outcome": "failed", "crash": {"lineno": 3.0}}}]}',
        b'{"exitcode": 0, "summary": {}, "collectors": [{"nodeid": "c.py", "outcome": "failed", "longrepr": null}]}',
    ],
)
def test_malformed_snippets_are_malformed_in_both_backends(tmp_path, doc):
    assert kind_in_both(write(tmp_path, doc)) == "malformed"


@needs_native
@pytest.mark.parametrize(
    "doc",
    [
        b'{"stats": {"tests": 1}, "tests": [{"title": "mocha"}]}',
        b'{"summary": "1 test", "tests": 3}',
        b'{"Action": "run"}\n{"Action": "pass"}\n',
        b'{"exitcode": 0}',
        b"[]",
    ],
)
def test_other_json_documents_are_not_reports(tmp_path, doc):
    assert kind_in_both(write(tmp_path, doc)) == "not_a_report"


@needs_native
def test_valid_edge_cases_give_the_same_bytes(tmp_path):
    doc = (
        b'\xef\xbb\xbf {"exitcode": 0, "summary": {"n": [1e-400, -0, 9223372036854775807, 1.5E+2]},'
        b' "root": "C:\\\\proj", "tests": [{"nodeid": "t.py::caf\\u00e9[\\ud83d\\ude00]", "outcome": "failed",'
        b' "call": {"outcome": "failed", "duration": 1.5, "longrepr": "\\"q\\" \\\\ \\/ \\b\\f\\n\\r\\t \\u0000",'
        b' "crash": {"path": "C:\\\\proj\\\\t.py", "lineno": 7, "message": "E \\u2603"}}}]} \r\n'
    )
    summary = summary_in_both(write(tmp_path, doc))
    failure = summary["failures"][0]
    assert failure["node_id"] == "t.py::café[😀]"
    assert failure["location"] == {"path": "t.py", "line": 7}
    assert summary["duration_s"] == 1.5


@needs_native
@pytest.mark.parametrize(
    "number",
    [
        "0.00013637542724609375",
        "9.918212890625e-05",
        "1" + "0" * 30 + "e-30",
        "0." + "0" * 400 + "15e400",
        "1." + "9" * 900,
        "2.5000000000000000000000000000000000000000000000000000000000001e-6",
        "1e-400",
        "12345678901234567",
        "-0.5",
    ],
)
def test_long_and_odd_duration_numbers_convert_the_same(tmp_path, number):
    doc = (
        '{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "t", "outcome": "passed", '
        '"call": {"outcome": "passed", "duration": ' + number + "}}]}"
    ).encode()
    summary = summary_in_both(write(tmp_path, doc))
    x = float(number)  # correctly rounded, as docs/ENGINE.md *Durations* asks
    expected_us = int(x * 1e6 + 0.5) if 0 <= x < 1e9 else 0
    assert summary["tests_duration_s"] == expected_us / 1e6
    # the report has no duration of its own: the session time is the tests' sum
    assert summary["duration_s"] == expected_us / 1e6


@needs_native
def test_nesting_up_to_the_limit_is_fine_in_both_backends(tmp_path):
    # The root object is level 1: 1023 arrays inside it reach the limit of 1024.
    doc = b'{"exitcode": 0, "summary": {}, "x": ' + b"[" * 1023 + b"]" * 1023 + b"}"
    assert summary_in_both(write(tmp_path, doc))["counts"]["total"] == 0
    deeper = b'{"exitcode": 0, "summary": {}, "x": ' + b"[" * 1024 + b"]" * 1024 + b"}"
    assert kind_in_both(write(tmp_path, deeper)) == "malformed"


@needs_native
def test_root_applies_to_the_tests_after_it(tmp_path):
    crash = {"path": "/proj/t.py", "lineno": 1, "message": "assert 0"}
    entry = {"nodeid": "t.py::x", "outcome": "failed", "call": phase("failed", crash=crash)}
    before = write(tmp_path, {"exitcode": 1, "root": "/proj", "summary": {}, "tests": [entry]}, "before.json")
    after = write(tmp_path, {"exitcode": 1, "summary": {}, "tests": [entry], "root": "/proj"}, "after.json")
    assert summary_in_both(before)["failures"][0]["location"]["path"] == "t.py"
    assert summary_in_both(after)["failures"][0]["location"]["path"] == "/proj/t.py"


def test_pure_capping_of_one_huge_string_equals_the_streaming_head_tail():
    """``_capped`` encodes only the ends of a huge string; it must cut like ``HeadTail``."""
    from pytest_mcp_server.engine.pure.pytest_json import _capped
    from pytest_mcp_server.engine.pure.text import HeadTail

    rng = random.Random(5)
    pieces = ["a", "é", "€", "😀", "\n", "xyz"]
    for _ in range(300):
        s = "".join(rng.choice(pieces) for _ in range(rng.choice([0, 3, 5000, 40_000, 100_000])))
        head_cap, tail_cap = rng.choice([(64 * 1024, 64 * 1024), (0, 2048), (0, 0), (0, 1), (7, 5), (0, 70_000)])
        reference = HeadTail(head_cap, tail_cap)
        reference.push(s)
        assert _capped(s, head_cap, tail_cap) == reference.finish()


@pytest.mark.parametrize("chunk", [1, 5, 4096])
def test_pure_reader_gives_the_same_records_whatever_the_read_size(chunk):
    """Surrogate pairs and backslash runs cut across reads are judged the same."""

    class Trickle(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self._data = data

        def read(self, n: int = -1) -> bytes:
            out, self._data = self._data[:chunk], self._data[chunk:]
            return out

    text = "\\\\ud800 \\ud83d\\ude00 \\\\\\u00e9 é"
    data = ('{"exitcode": 1, "summary": {}, "tests": [{"nodeid": "' + text + '", "outcome": "passed"}]}').encode()
    records: list = []
    pure_parse(Trickle(data), "r.json", {**Budgets().model_dump(), "max_output_bytes": 10}, records.append)
    assert [r.node_id for r in records] == [json.loads('"' + text + '"')]
    with pytest.raises(ReportError) as info:
        pure_parse(
            Trickle(data.replace(b"\\\\\\u00e9", b"\\\\\\ud800")),
            "r.json",
            {**Budgets().model_dump(), "max_output_bytes": 10},
            records.append,
        )
    assert info.value.kind == "malformed"


@needs_native
def test_native_memory_stays_flat_on_a_large_report(tmp_path):
    """~200 MB with one 64 MB longrepr: the native parser's peak RSS grows by far less."""
    path = tmp_path / "large.json"
    block = json.dumps(
        {
            "nodeid": "tests/test_m.py::TestC::test_case[p]",
            "lineno": 3,
            "outcome": "failed",
            "keywords": ["a", "b"],
            "setup": phase("passed", 0.001),
            "teardown": phase("passed", 0.001),
            "call": phase(
                "failed",
                0.5,
                longrepr='    frame line with "quotes" and \\backslashes\\\n' * 40,
                stdout="captured\n" * 50,
                crash={"path": "/proj/tests/test_m.py", "lineno": 9, "message": "assert 0"},
            ),
        }
    ).encode()
    with open(path, "wb") as f:
        f.write(b'{"exitcode": 1, "root": "/proj", "summary": {}, "tests": [')
        f.write(
            json.dumps(
                {"nodeid": "big", "outcome": "failed", "call": phase("failed", longrepr="y" * (64 << 20))}
            ).encode()
        )
        for _ in range(60_000):
            f.write(b", " + block)
        f.write(b"]}")
    assert path.stat().st_size > 150 << 20
    measured = peak_memory.measure([str(path)], "native", bound_mb=32)
    assert measured.summary["counts"]["failed"] == 60_001
    assert measured.growth_kb < 32 * 1024, f"peak RSS grew by {measured.growth_kb} KiB"


# --------------------------------------------------------------------------------------
# 4. Strings too long to be kept whole: the pure reader cuts their middle before ijson
#    sees it (``_CheckedReader``); the records and summaries must be those of the whole.

# Raw JSON string content units whose escapes / characters the cuts must not split:
# a surrogate pair escape, \u and one-letter escapes, 2/3/4-byte UTF-8, escaped
# backslashes and quotes.
CUT_UNITS = {
    "pair-escape": rb"\ud83d\ude00",
    "u-escapes": rb"x\u00e9\u20ac\n",
    "utf8": "é€😀".encode(),
    "backslashes-and-quotes": rb"\\\"\/\t",
}
CUT_LEN = 1_300_000  # raw bytes: over the reader's cut threshold (~1.05 MB by default)


def _raw_content(unit: bytes, pad: int, size: int = CUT_LEN) -> bytes:
    """``pad`` ASCII bytes, then ``unit`` repeated to about ``size`` raw bytes."""
    return b"p" * pad + unit * (size // len(unit))


def _cut_doc(contents: list[bytes], root: bytes = b"/proj") -> bytes:
    """A report with one failed test per raw content, used as node id suffix, longrepr,
    stdout, stderr and crash message."""
    tests = []
    for i, raw in enumerate(contents):
        tests.append(
            b'{"nodeid": "t.py::t%d-' % i
            + raw
            + b'", "outcome": "failed", "call": {"duration": 0.5, "outcome": "failed",'
            b' "longrepr": "' + raw + b'", "stdout": "' + raw + b'", "stderr": "x' + raw + b'",'
            b' "crash": {"path": "/proj/t.py", "lineno": 3, "message": "' + raw + b'"}}}'
        )
    return b'{"exitcode": 1, "root": "' + root + b'", "summary": {}, "tests": [' + b", ".join(tests) + b"]}"


def _expected_records(doc: bytes, max_output_bytes: int) -> list[tuple]:
    """What the records of ``_cut_doc`` must hold, from the whole strings (json module)."""
    from pytest_mcp_server.engine.pure.text import ATTR_CAP, HeadTail

    def head(s: str) -> tuple[str, int]:
        data = s.encode()
        if len(data) <= ATTR_CAP:
            return s, 0
        cut = ATTR_CAP
        while data[cut] & 0xC0 == 0x80:
            cut -= 1
        return data[:cut].decode(), len(data) - cut

    out = []
    for t in json.loads(doc)["tests"]:
        call = t["call"]
        text = HeadTail.for_text()
        text.push(call["longrepr"])
        text, text_omitted = text.finish()
        message, message_dropped = head(call["crash"]["message"])
        streams = []
        for name in ("stdout", "stderr"):
            tail = HeadTail.for_output(max_output_bytes)
            tail.push(call[name])
            streams.append(tail.finish())
        out.append(
            (
                head(t["nodeid"])[0],
                text,
                text_omitted + message_dropped,
                message,
                streams[0][0],
                streams[1][0],
                streams[0][1] + streams[1][1],
            )
        )
    return out


def _records_as_tuples(records) -> list[tuple]:
    return [
        (r.node_id, r.text, r.text_bytes_omitted, r.message, r.stdout, r.stderr, r.output_bytes_omitted)
        for r in records
    ]


@needs_native
@pytest.mark.parametrize("unit", list(CUT_UNITS), ids=list(CUT_UNITS))
def test_cut_strings_keep_exact_heads_tails_and_counts(tmp_path, unit):
    """Every alignment of the cuts against the unit (one pad per byte of it): the pure
    records equal those of the whole strings, and both backends write the same bytes."""
    raw_unit = CUT_UNITS[unit]
    doc = _cut_doc([_raw_content(raw_unit, pad) for pad in range(len(raw_unit))])
    assert _records_as_tuples(pure_records(doc)) == _expected_records(doc, 2048)
    summary = summary_in_both(write(tmp_path, doc), failures_listed=100)
    assert summary["counts"]["failed"] == len(raw_unit)
    assert summary["omitted"]["text_bytes"] > len(raw_unit) * (CUT_LEN // 6 - 128 * 1024)


@needs_native
@pytest.mark.parametrize(
    "raw",
    [
        # long backslash runs where the head and tail cuts fall (even and odd before '"')
        pytest.param(b"a" + b"\\\\" * 700_000 + b"b", id="escaped-backslash-run"),
        # ... and one that runs up to the closing quote, across reads (a regex that
        # backtracked through each partial run took minutes here)
        pytest.param(b"\\\\" * 1_500_000, id="backslash-run-to-the-quote"),
        pytest.param((b"\\\\" * 1000 + b'\\"') * 700, id="odd-runs-before-quotes"),
        # a huge string of one 4-byte character: few characters for many bytes
        pytest.param("😀".encode() * 400_000, id="four-byte-characters"),
        # the dropped middle spans several pieces of the validation (1 MB each)
        pytest.param(b"E   x\\n" * 600_000 + "é".encode() * 3, id="several-pieces"),
        pytest.param(rb"\u0041" * 400_000, id="six-raw-bytes-per-byte"),
    ],
)
def test_cut_strings_with_odd_content_are_exact(tmp_path, raw):
    doc = _cut_doc([raw])
    for max_output_bytes in (0, 1, 2048, 1_048_576):
        assert _records_as_tuples(pure_records(doc, max_output_bytes)) == _expected_records(doc, max_output_bytes)
        summary_in_both(write(tmp_path, doc), max_output_bytes=max_output_bytes)


@needs_native
def test_a_cut_root_is_not_used_and_cut_keys_are_ignored(tmp_path):
    crash = {"path": "/proj/t.py", "lineno": 1, "message": "m"}
    entry = {"nodeid": "t.py::x", "outcome": "failed", "call": phase("failed", crash=crash)}
    long_root = "/proj" * 400_000
    doc = {
        "exitcode": 1,
        "root": long_root,
        "summary": {},
        "tests": [entry],
        "k" * 3_000_000: 1,
        "collectors": [{"nodeid": "c.py", "outcome": "failed", "longrepr": "L" * 2_000_000}],
    }
    summary = summary_in_both(write(tmp_path, doc))
    assert summary["failures"][0]["location"]["path"] == "/proj/t.py"
    assert summary["omitted"]["text_bytes"] == 2_000_000 - 128 * 1024


def _middle_doc(middle: bytes, at: int, size: int = 3_000_000, tail: bytes = b'"}}]}') -> bytes:
    """A report whose one longrepr has ``middle`` at raw offset ``at`` of ``size`` bytes."""
    head = (
        b'{"exitcode": 1, "summary": {}, "tests": [{"nodeid": "a", "outcome": "failed",'
        b' "call": {"duration": 1, "outcome": "failed", "longrepr": "'
    )
    return head + b"x" * at + middle + b"y" * (size - at) + tail


# Where the dropped middle starts and ends in _middle_doc (default budgets): about the
# kept head (~384 KiB raw) and the kept tail (~384 KiB raw before the end).
_HEAD_CUT = 6 * (64 * 1024 + 1) + 64
_NEAR = [_HEAD_CUT - 30, _HEAD_CUT - 6, _HEAD_CUT + 3, 1_500_000, 3_000_000 - (6 * 64 * 1024 + 64) - 4]


@needs_native
@pytest.mark.parametrize("at", _NEAR)
@pytest.mark.parametrize(
    "middle",
    [
        pytest.param(b"\\q", id="invalid-escape"),
        pytest.param(b"\\u12g4", id="invalid-u-escape"),
        pytest.param(b"\x01", id="raw-control"),
        pytest.param(b"\x0b", id="raw-vertical-tab"),
        pytest.param(b"\xff", id="invalid-utf8"),
        pytest.param(b"\xc0\xaf", id="overlong-utf8"),
        pytest.param(b"\xed\xa0\x80", id="utf8-surrogate"),
        pytest.param(b"\\ud800x", id="lone-high-escape"),
        pytest.param(b"\\udc00", id="lone-low-escape"),
        pytest.param(b"\\ud800\\ud800", id="two-high-escapes"),
        pytest.param(b"\\ud83d\\u0041", id="high-then-other-escape"),
    ],
)
def test_invalid_content_in_a_cut_string_is_malformed_in_both(tmp_path, middle, at):
    path = write(tmp_path, _middle_doc(middle, at))
    assert kind_in_both(path) == "malformed"
    # Not a report, but the syntax error is found first.
    path = write(tmp_path, _middle_doc(middle, at).replace(b'"exitcode": 1, ', b""), "other.json")
    assert kind_in_both(path) == "malformed"


@needs_native
@pytest.mark.parametrize("at", _NEAR)
def test_valid_escapes_around_the_cuts_give_the_same_bytes(tmp_path, at):
    for middle in (b"\\ud83d\\ude00", b"\\\\\\ud83d\\ude00", b"\\\\ud800", "😀".encode(), b'\\\\\\"\\\\'):
        doc = _middle_doc(middle, at)
        summary = summary_in_both(write(tmp_path, doc))
        whole = json.loads(doc)["tests"][0]["call"]["longrepr"]
        assert summary["omitted"]["text_bytes"] == len(whole.encode()) - 128 * 1024
    # A long string in a document that is not a report: not_a_report in both.
    other = write(tmp_path, _middle_doc(b"\\n", at).replace(b'"exitcode": 1, ', b""), "other.json")
    assert kind_in_both(other) == "not_a_report"


@needs_native
@pytest.mark.parametrize("end", [100_000, _HEAD_CUT + 10, 1_200_000, 1_500_001, 2_999_000, 3_000_000])
@pytest.mark.parametrize("last", [b"", b"\\", b"\\u00", "€".encode()[:2], b"\\ud83d"])
def test_a_cut_string_ended_by_the_end_of_file_is_malformed_in_both(tmp_path, end, last):
    doc = _middle_doc(b"", 0)
    path = write(tmp_path, doc[: doc.index(b'"longrepr": "') + 13 + end] + last)
    assert kind_in_both(path) == "malformed"


def test_pure_cut_boundaries_never_split_a_character_or_an_escape():
    """``_boundary`` on random valid content: both sides decode, and to the whole."""
    from pytest_mcp_server.engine.pure.pytest_json.lexer import _boundary, _decoded_size

    rng = random.Random(7)
    tokens = [
        b"a",
        b"\\\\",
        b'\\"',
        b"\\n",
        b"\\u00e9",
        b"\\ud83d\\ude00",
        "é".encode(),
        "€".encode(),
        "😀".encode(),
        b"\\/",
    ]
    for _ in range(2000):
        raw = b"".join(rng.choice(tokens) for _ in range(rng.randint(1, 40)))
        whole, error = _decoded_size(raw)
        assert error is None
        cuts = [0]
        for i in sorted(rng.sample(range(1, len(raw)), min(5, len(raw) - 1))):
            if i > cuts[-1]:
                p = _boundary(raw, cuts[-1], i)
                assert cuts[-1] <= p <= i and i - p <= 21
                cuts.append(p)
        pieces = [raw[a:b] for a, b in zip(cuts, cuts[1:] + [len(raw)], strict=False)]
        sizes = [_decoded_size(piece) for piece in pieces]
        assert all(error is None for _, error in sizes), (raw, cuts)
        assert sum(size for size, _ in sizes) == whole
