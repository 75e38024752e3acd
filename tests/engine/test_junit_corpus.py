"""The JUnit XML parsers (native ``junit.rs`` and pure ``pure/junit/``) on real files.

1. Every XML file of the corpora (tests/helpers/corpus.py: the in-repo dialects, and the shared
   corpus when present) through both backends: the same bytes, or the same error kind;
   the refusals are exactly the expected ones.
2. Exact counts and details for every in-repo dialect file and a set of shared corpus
   files, worked out by reading them (the comment on each entry says why).
3. A real pytest run with ``--junitxml`` on a project with every outcome, checked
   against pytest's own summary line and node ids.
4. Large and malformed input: a 20 MB text node is capped while streaming, in bounded
   memory; malformed snippets get the same kind in both backends, wherever they fall
   against the read boundaries. (Entity expansion and other attacks are in
   test_hostile_reports.py.)
"""

from __future__ import annotations

import codecs
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from helpers import corpus, peak_memory
from helpers.backends import kind_in_both, needs_native, result_in_both, summary_in_both

from pytest_mcp_server.engine import summarize
from pytest_mcp_server.engine.models import Budgets
from pytest_mcp_server.engine.pure.junit import parse_junit as pure_parse_junit

XML_FILES = corpus.files("*.xml")


# --- 1. every corpus file, both backends ----------------------------------------------

# Counts of a report without subtests (none of the corpus files has pytest subtests).
NO_SUBTESTS = dict(subtests_passed=0, subtests_failed=0, passed_with_failed_subtests=0)

D = "dialects/junit/"
JP = "shared/junit-plugin/src/test/resources/hudson/tasks/junit/"
AJR = "shared/action-junit-report/test_results/"
PUT = "shared/publish-unit-test-result-action/python/test/files/junit-xml/"
TR = "shared/test-reporter/__tests__/fixtures/"

# Files refused, and why (read from the files themselves), by corpus id.
EXPECTED_REFUSALS = {
    # The CDATA section of the last <system-out> is never closed: the file was cut off.
    D + "truncated-cdata.xml": "malformed",
    # Ends inside the text of a <skipped>, four elements still open.
    D + "truncated-mid-element.xml": "malformed",
    # time="<<computed>>": a literal '<' inside an attribute value.
    D + "unescaped-lt-in-attribute.xml": "malformed",
    # A DOCTYPE declaring an external entity (file:///etc/passwd) used in a failure: XXE.
    D + "xxe-external-entity.xml": "forbidden",
    # Starts with '<!ENTITY % remote SYSTEM ...>': an out-of-band XXE probe.
    D + "xxe-parameter-entity.xml": "forbidden",
    # Nested internal entities (billion laughs), refused before any expansion.
    D + "billion-laughs.xml": "forbidden",
    # NUnit 3 <test-run>; and <suites>, which holds <testcase> elements but is no JUnit root.
    D + "nunit-test-run.xml": "not_a_report",
    D + "other-root.xml": "not_a_report",
    # Zero bytes; plain text (a unittest summary) named .xml.
    D + "empty.xml": "not_a_report",
    D + "plain-text.xml": "not_a_report",
    # The shared corpus (checked when present).
    # The CDATA section of <system-out> is never closed: the file was cut off.
    AJR + "corrupt-junit/e2e-tests/corrupt/target/sf-reports/TEST-test.CorruptTest.xml": "malformed",
    # time="<<computed>>": a literal '<' inside an attribute value.
    AJR + "junit-web-test/expected.xml": "malformed",
    AJR + "junit-web-test/expectedRetries.xml": "malformed",
    # Starts with '<!ENTITY % param1 ...>': an out-of-band XXE probe.
    JP + "testXxe-oob.xml": "forbidden",
    # A DOCTYPE with external parameter entities (classic XXE).
    JP + "testXxe-xxe.xml": "forbidden",
    # Root <suites>, not a JUnit report.
    PUT + "non-junit.xml": "not_a_report",
    # Ends in the middle of a <skipped> text: truncated.
    PUT + "pytest/corrupt-xml.xml": "malformed",
    # Zero bytes.
    "shared/publish-unit-test-result-action/python/test/files/xml/empty.xml": "not_a_report",
    # Plain text "this is not an xml file".
    "shared/publish-unit-test-result-action/python/test/files/xml/non-xml.xml": "not_a_report",
    # NUnit 3 <test-run> documents.
    TR + "dotnet-nunit.xml": "not_a_report",
    TR + "external/nunit-sample.xml": "not_a_report",
}


@needs_native
@pytest.mark.parametrize("path", corpus.params(XML_FILES))
def test_backends_agree_on_every_corpus_file(path: Path) -> None:
    result = result_in_both(path)
    rel = corpus.relative(path)
    if result[0] == "error":
        assert EXPECTED_REFUSALS.get(rel) == result[1], f"unexpected refusal {result[1]}: {result[2]}"
    else:
        assert rel not in EXPECTED_REFUSALS, f"expected {EXPECTED_REFUSALS[rel]}, got a summary"
        assert orjson.loads(result[1])["format"] == "junit"


# Fewest XML files each corpus must hold (so that a glob that finds nothing cannot pass).
MIN_XML_FILES = {"dialects": 25, "shared": 100}


@pytest.mark.parametrize("name", sorted(corpus.ROOTS))
def test_the_corpus_has_the_expected_refusals(name: str) -> None:
    mine = [rel for rel in EXPECTED_REFUSALS if rel.startswith(f"{name}/")]
    missing = [rel for rel in mine if not corpus.path(rel).is_file()]
    xml_files = [p for p in XML_FILES if corpus.relative(p).startswith(f"{name}/")]
    assert mine and not missing and len(xml_files) >= MIN_XML_FILES[name]


def test_every_dialect_file_has_exact_expectations_and_a_readme_line() -> None:
    """Each in-repo XML file is either an expected refusal or has exact counts below, and
    README.md there names every file (file -> feature)."""
    xml = {corpus.relative(p) for p in XML_FILES if corpus.relative(p).startswith("dialects/")}
    covered = {rel for rel in [*EXPECTED_REFUSALS, *EXPECTED] if rel.startswith("dialects/")}
    assert xml == covered
    readme = (corpus.DIALECTS / "README.md").read_text()
    unlisted = [p.name for p in corpus.files() if p.is_relative_to(corpus.DIALECTS) and f"`{p.name}`" not in readme]
    assert not unlisted, f"not described in tests/fixtures/dialects/README.md: {unlisted}"


# --- 2. exact counts, read from the files -----------------------------------------------


def counts(**nonzero: int) -> dict[str, int]:
    """A counts object with the given non-zero fields (``total`` is their sum unless
    given: only ``flaky`` overlaps the outcomes)."""
    outcomes = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")
    total = nonzero.pop("total", sum(nonzero.get(k, 0) for k in outcomes))
    zero = dict.fromkeys(("failed", "errors", "skipped", "xfailed", "xpassed", "flaky", "passed"), 0)
    return dict(total=total, **{**zero, **nonzero}, **NO_SUBTESTS)


# relative path -> (counts, {failure node id: (outcome, phase)}, extra checks). The
# dialect files are all here (test above); the shared ones are checked when present.
DIALECT_EXPECTED = {
    # Surefire's rerun elements: two <flakyFailure> -> passed, flaky; a <failure> with two
    # <rerunFailure> -> failed on every run, not flaky; a <flakyError> -> passed, flaky; a
    # plain pass. Details from the <failure>, stdout from the case's own <system-out>
    # (not the one inside <flakyFailure>). 0.412 + 1.250 + 2.006 + 0.550 s.
    D + "surefire-flaky-reruns.xml": (
        counts(passed=3, failed=1, flaky=2),
        {"org.example.inventory.StockTest::releasesStock": ("failed", "call")},
        {
            "duration_s": 4.218,
            "first_message": "stock went negative: -2",
            "first_exception": "java.lang.IllegalStateException",
            "first_stdout": "releasing 7 units\n",
            "slowest_first": ("org.example.inventory.StockTest::loadsWarehouse", 2.006),
        },
    ),
    # Consecutive cases with one id are retries: test_upload fails then passes (passed,
    # flaky, 1.0 + 0.5 s); test_download fails twice then errors in teardown (error, not
    # flaky: no pass); test_delete passes. pytest suite -> ids by rule 2.
    D + "retries-consecutive.xml": (
        counts(passed=2, errors=1, flaky=1),
        {"tests/test_sync.py::test_download": ("error", "teardown")},
        {
            "duration_s": 3.75,
            "first_message": "socket still open",
            "first_location": ("tests/conftest.py", 9),
            "slowest_first": ("tests/test_sync.py::test_upload", 1.5),
        },
    ),
    # Suites three deep with lying count attributes: five cases (the <testcase> inside a
    # <failure> is an element, not a test; its text joins the failure's). classname=""
    # gives the bare name. 0.125 + 0.125 + 0.25 + 0.5 + 1 s.
    D + "nested-suites.xml": (
        counts(passed=2, failed=2, errors=1),
        {
            "api.orders.create::rejects an empty basket": ("failed", "call"),
            "health check": ("error", None),
            "ui.cart::shows the total": ("failed", "call"),
        },
        {"duration_s": 2.0, "failure_count": 3, "slowest_first": ("ui.cart::shows the total", 1.0)},
    ),
    # Decimal comma "0,250" -> 0.25; "1,234.5" (both marks) -> 1234.5; " 3.5 " -> 3.5;
    # "n/a" and "-2" -> 0; "1e0" -> 1. Suite times ("1.239,25") are not read.
    D + "comma-decimal-times.xml": (
        counts(passed=6),
        {},
        {"duration_s": 1239.25, "slowest_first": ("Locale.Durations::thousandsSeparator", 1234.5)},
    ),
    # jest-junit: classname == name == "describe test"; the failure has no message
    # attribute, so message and exception come from its text; an empty suite.
    D + "jest-junit.xml": (
        counts(passed=2, failed=1, skipped=1),
        {"Cart applies a coupon::Cart applies a coupon": ("failed", "call")},
        {
            "duration_s": 0.02,
            "first_exception": "Error",
            "first_message": "expect(received).toBe(expected) // Object.is equality",
        },
    ),
    # mocha-junit-reporter: an empty "Root Suite", classname = test title, name = full title.
    D + "mocha-junit.xml": (
        counts(passed=1, failed=1, skipped=1),
        {"rejects a bad header::parser rejects a bad header": ("failed", "call")},
        {"duration_s": 0.061, "first_exception": "AssertionError"},
    ),
    # Catch2: suite properties, status="run"; a REQUIRE failure, an unexpected exception
    # (<error>, no setup/teardown prefix: no phase), a SKIP.
    D + "catch2.xml": (
        counts(passed=1, failed=1, errors=1, skipped=1),
        {
            "geometry_tests.global::vector normalise/zero vector": ("failed", "call"),
            "geometry_tests.global::vector parse": ("error", None),
        },
        {"duration_s": 0.006, "first_exception": "REQUIRE", "first_message": "std::isfinite(n.x)"},
    ),
    # CUnit: no classname (bare names), exponent times (2.1e-05 + 0.000305 + 6.4e-05).
    D + "cunit.xml": (
        counts(passed=2, failed=1),
        {"push_When_FullOverwritesOldest": ("failed", "call")},
        {"duration_s": 0.00039, "first_message": "rb_peek(&rb) == 7", "first_exception": "ERROR"},
    ),
    # A <testsuites> with no suite; suites with no case (one with properties and output).
    D + "cunit-empty.xml": (counts(), {}, {"duration_s": 0.0}),
    D + "empty-suites.xml": (counts(), {}, {"duration_s": 0.0}),
    # googletest: a DISABLED_ case without <skipped> (status="notrun") counts as passed
    # (only result elements decide); one with <skipped>, and a GTEST_SKIP, are skipped.
    D + "googletest-skipped-disabled.xml": (
        counts(passed=3, skipped=2),
        {},
        {"duration_s": 0.004, "slowest_first": ("ParserTest::ReadsComments", 0.003)},
    ),
    # Several results in one case: three <failure> -> failed, details from the first;
    # (skipped, failure, error) -> error; (skipped, failure) -> failed; skipped; passed.
    D + "multiple-results-per-case.xml": (
        counts(passed=1, failed=2, errors=1, skipped=1),
        {
            "org.example.calc.MultiTest::threeFailures": ("failed", "call"),
            "org.example.calc.MultiTest::skippedThenFailedThenErrored": ("error", None),
            "org.example.calc.MultiTest::skippedThenFailed": ("failed", "call"),
        },
        {"first_message": "first: expected 1 but was 2", "first_exception": "java.lang.AssertionError"},
    ),
    # Case and suite <properties> are ignored; the failing case's two <system-out> join,
    # its <system-err> is kept, the suite's output is not. xunit1 file/line: rule 1; the
    # location is the traceback's last line (23), not the case's line attribute (20).
    D + "properties-and-output.xml": (
        counts(passed=2, failed=1),
        {"tests/test_api.py::TestUsers::test_delete": ("failed", "call")},
        {
            "duration_s": 0.9,
            "first_stdout": "DELETE /users/1\nsecond block\n",
            "first_stderr": "WARNING pool exhausted\n",
            "first_location": ("tests/test_api.py", 23),
            "first_message": "assert 500 == 204",
        },
    ),
    # pytest xunit1 on one line: every outcome pytest writes (pass, failure, setup error,
    # skip, xfail, XPASS marker, strict XPASS failure, collection failure, teardown error
    # with a Captured Log). The collection error counts as one error and lists its path.
    D + "pytest-xunit1.xml": (
        counts(passed=2, failed=2, errors=3, skipped=1, xfailed=1, xpassed=1),
        {
            "pkg/test_models.py::TestOrder::test_total[2-3]": ("failed", "call"),
            "pkg/test_models.py::test_db": ("error", "setup"),
            "pkg/test_models.py::test_strict_fixed": ("failed", "call"),
            "pkg/test_models.py::test_cleanup": ("error", "teardown"),
        },
        {
            "duration_s": 1.205,
            "first_location": ("pkg/test_models.py", 15),
            "first_message": "assert 5 == 6",
            "collection_errors": ["pkg/test_broken.py"],
        },
    ),
    # pytest xunit2 (no file attribute): rule 2 splits the classname at its capitalised
    # segments (nested classes), "custom.Label" -> custom.py::Label.
    D + "pytest-xunit2.xml": (
        counts(passed=2, failed=1, skipped=1),
        {"tests/unit/test_parse.py::TestQuoted::TestEscapes::test_backslash": ("failed", "call")},
        {
            "duration_s": 0.25,
            "first_location": ("tests/unit/test_parse.py", 31),
            "slowest_first": ("custom.py::Label::test_custom_classname", 0.22),
        },
    ),
    # Predefined and character entities in names and messages, CDATA inside a failure,
    # an empty CDATA in <skipped>, non-ASCII names.
    D + "xml-entities-and-cdata.xml": (
        counts(passed=1, failed=1, errors=1, skipped=1),
        {
            'Entities::name with & and <angle> and "quotes"': ("failed", "call"),
            "Entities::unicode name café ☕": ("error", None),
        },
        {
            "first_message": "message with 'apostrophes' and é and 😀",
            "first_traceback": "text with <tags> & entities and a CDATA <section> & raw ampersand",
        },
    ),
}

SHARED_EXPECTED = {
    # Five testcases with classname="" in suites nested four deep; ids are the bare names
    # A, B, A, B, A (never two equal in a row, so no retries). Failures: A (TestA),
    # B (TestB), A (directly in "packet"). Durations 10+20+30+40+50 s.
    AJR + "nested/junit.xml": (
        dict(total=5, passed=2, failed=3, errors=0, skipped=0, xfailed=0, xpassed=0, flaky=0, **NO_SUBTESTS),
        {"A": ("failed", "call"), "B": ("failed", "call")},
        {"duration_s": 150.0, "failure_count": 3},
    ),
    # Eight passing cases in suites up to two deep; suite time "2,503.1" is ignored (only
    # cases count): 10+11+10+12+13+13+12+20 = 101 s.
    JP + "junit-report-testsuite-time-attrs.xml": (
        dict(total=8, passed=8, failed=0, errors=0, skipped=0, xfailed=0, xpassed=0, flaky=0, **NO_SUBTESTS),
        {},
        {"duration_s": 101.0, "slowest_first": ("test.Rest.cleanup::testFinish", 20.0)},
    ),
    # Five cases at three levels (suite in suite in suite, suite in suite, directly in the
    # outer suite); classname "someName", no .py file -> "someName::TestCaseN".
    PUT + "testsuite-in-testsuite.xml": (
        dict(total=5, passed=5, failed=0, errors=0, skipped=0, xfailed=0, xpassed=0, flaky=0, **NO_SUBTESTS),
        {},
        {"slowest_first": ("someName::TestCase1", 1.32159)},
    ),
    # One test written three times in a row (passed, failure, error): one test, last
    # attempt wins (error, "later error"), flaky (a pass and a failure), 3 x 1 s.
    AJR + "flaky_retries/flaky_success_first.xml": (
        dict(total=1, passed=0, failed=0, errors=1, skipped=0, xfailed=0, xpassed=0, flaky=1, **NO_SUBTESTS),
        {"test_order.TestOrder::test_success_first": ("error", None)},
        {"duration_s": 3.0, "first_message": "later error"},
    ),
    # Three attempts that all fail (failure, failure, error): one error test, not flaky.
    AJR + "flaky_retries/flaky_all_failures.xml": (
        dict(total=1, passed=0, failed=0, errors=1, skipped=0, xfailed=0, xpassed=0, flaky=0, **NO_SUBTESTS),
        {"test_always_fails.TestAlwaysFails::test_always_fails": ("error", None)},
        {"first_message": "third error"},
    ),
    # Surefire: one case with a <flakyFailure> only -> passed, flaky.
    AJR + "maven_surefire_flaky/surefire-report.xml": (
        dict(total=1, passed=1, failed=0, errors=0, skipped=0, xfailed=0, xpassed=0, flaky=1, **NO_SUBTESTS),
        {},
        {},
    ),
    # One flaky case (flakyFailure) and two plain passes.
    AJR + "junit_flaky_failure/mixed_flaky_and_passed.xml": (
        dict(total=3, passed=3, failed=0, errors=0, skipped=0, xfailed=0, xpassed=0, flaky=1, **NO_SUBTESTS),
        {},
        {},
    ),
    # Surefire rerun: <failure> plus three <rerunFailure>: failed on every run, not flaky.
    JP + "gh-237/TEST-io.olamy.AlwaysFailTest.xml": (
        dict(total=1, passed=0, failed=1, errors=0, skipped=0, xfailed=0, xpassed=0, flaky=0, **NO_SUBTESTS),
        {"io.olamy.AlwaysFailTest::testApp": ("failed", "call")},
        {"first_exception": "junit.framework.AssertionFailedError", "first_message": "built to fail"},
    ),
    # Two <flakyFailure> and no failure: passed, flaky.
    JP + "gh-237/TEST-io.olamy.FlakyTest.xml": (
        dict(total=1, passed=1, failed=0, errors=0, skipped=0, xfailed=0, xpassed=0, flaky=1, **NO_SUBTESTS),
        {},
        {},
    ),
    # Several results per case: (skipped, failure, error) -> error; (skipped, failure) ->
    # failed; skipped; passed. The error's message is "test teardown failure" (no
    # "failed on teardown" prefix, so no phase).
    PUT + "junit.multiresult.xml": (
        dict(total=4, passed=1, failed=1, errors=1, skipped=1, xfailed=0, xpassed=0, flaky=0, **NO_SUBTESTS),
        {"test class::test that errors": ("error", None), "test class::test that fails": ("failed", "call")},
        {"first_message": "test teardown failure"},
    ),
    # Three <failure> in one case: one failed test, details from the first failure;
    # one single failure, one skipped, one pass.
    AJR + "multiple_failures/test_multiple_failures.xml": (
        dict(total=4, passed=1, failed=2, errors=0, skipped=1, xfailed=0, xpassed=0, flaky=0, **NO_SUBTESTS),
        {
            "com.example.MultipleFailuresTest::testWithMultipleFailures": ("failed", "call"),
            "com.example.MultipleFailuresTest::testWithSingleFailure": ("failed", "call"),
        },
        {"first_message": "First assertion failed", "first_exception": "AssertionError"},
    ),
    # Entities in names, messages and text: skipped, failure, error, skipped.
    PUT + "with-xml-entities.xml": (
        dict(total=4, passed=0, failed=1, errors=1, skipped=2, xfailed=0, xpassed=0, flaky=0, **NO_SUBTESTS),
        {
            "Test with 'apostrophe' in the test name": ("failed", "call"),
            "Test with & in the test name": ("error", None),
        },
        {"first_message": "A message with 'apostrophes'", "first_traceback": "Content with 'apostrophes'"},
    ),
    # pytest (suite "pytest", xunit2: no file attribute): 10 cases: 6 pass (incl. the
    # custom classname and the one with properties), a skip, two failures, an xfail.
    TR + "python-xunit-pytest.xml": (
        dict(total=10, passed=6, failed=2, errors=0, skipped=1, xfailed=1, xpassed=0, flaky=0, **NO_SUBTESTS),
        {
            "tests/test_lib.py::test_always_fail": ("failed", "call"),
            "tests/test_lib.py::test_error": ("failed", "call"),
        },
        {"first_message": "assert False"},
    ),
    # pytest xunit1 (file + line attributes): rule 1 gives path::Class::name; 3 pass, a
    # skip, a failure at line 819 whose multi-line message attribute is normalised to one
    # line (newlines in attribute values become spaces).
    PUT + "pytest/junit.fail.xml": (
        dict(total=5, passed=3, failed=1, errors=0, skipped=1, xfailed=0, xpassed=0, flaky=0, **NO_SUBTESTS),
        {"test/test_spark.py::SparkTests::test_rsh_events": ("failed", "call")},
        {"first_location": ("test/test_spark.py", 819), "first_message_prefix": "self = <test_spark.SparkTests "},
    ),
    # pytest, one line: pass, two failures, pass; ids from rule 2 (python.test_sample).
    AJR + "python/report_flaky.xml": (
        dict(total=4, passed=2, failed=2, errors=0, skipped=0, xfailed=0, xpassed=0, flaky=0, **NO_SUBTESTS),
        {
            "python/test_sample.py::test_which_fails": ("failed", "call"),
            "python/test_sample.py::test_with_error": ("failed", "call"),
        },
        {"first_exception": "AssertionError"},
    ),
}


EXPECTED = {**DIALECT_EXPECTED, **{rel: want for rel, want in SHARED_EXPECTED.items() if corpus.available(rel)}}


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_exact_counts_on_chosen_corpus_files(rel: str, backend: str) -> None:
    want_counts, failures, extra = EXPECTED[rel]
    s = summarize(str(corpus.path(rel)), backend=backend, budgets=Budgets(max_traceback_lines=10_000))
    assert s.counts.model_dump() == want_counts
    assert {f.node_id: (f.outcome, f.phase) for f in s.failures} == failures
    first = s.failures[0] if s.failures else None
    for key, want in extra.items():
        if key == "duration_s":
            assert s.duration_s == pytest.approx(want)
        elif key == "failure_count":
            assert len(s.failures) == want
        elif key == "slowest_first":
            assert (s.slowest[0].node_id, s.slowest[0].duration_s) == (want[0], pytest.approx(want[1]))
        elif key == "first_message":
            assert first.message == want
        elif key == "first_message_prefix":
            assert first.message.startswith(want) and "\n" not in first.message
        elif key == "first_exception":
            assert first.exception == want
        elif key == "first_traceback":
            assert first.traceback == want
        elif key == "first_location":
            assert (first.location.path, first.location.line) == want
        elif key == "first_stdout":
            assert first.stdout == want
        elif key == "first_stderr":
            assert first.stderr == want
        elif key == "collection_errors":
            assert [e.path for e in s.collection_errors] == want
        else:  # pragma: no cover - a typo in the table
            raise AssertionError(key)


# --- 3. a real pytest run ---------------------------------------------------------------

FIXTURE_PROJECT = {
    "pytest.ini": "[pytest]\n",
    "test_mod.py": """
        import pytest

        def test_pass():
            pass

        def test_fail():
            assert 1 + 1 == 3

        @pytest.fixture
        def broken_setup():
            raise RuntimeError("setup boom")

        def test_setup_error(broken_setup):
            pass

        @pytest.fixture
        def broken_teardown():
            yield
            raise RuntimeError("teardown boom")

        def test_teardown_error(broken_teardown):
            pass

        def test_skip():
            pytest.skip("not today")

        @pytest.mark.xfail(reason="known bug")
        def test_xfail():
            assert False

        @pytest.mark.xfail(reason="maybe fixed")
        def test_xpass():
            pass

        @pytest.mark.xfail(reason="must fail", strict=True)
        def test_xpass_strict():
            pass

        @pytest.mark.parametrize("n", [1, 2, 3])
        def test_param(n):
            print("output of", n)
            assert n != 2

        class TestGroup:
            def test_in_class(self):
                pass

            def test_in_class_fails(self):
                assert "a" == "b"
        """,
    "sub/test_nested.py": """
        def test_deep():
            pass
        """,
    "test_broken_import.py": """
        import not_a_module_anywhere_xyz
        """,
}


@pytest.fixture(scope="module")
def pytest_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Run the real pytest on the fixture project with --junitxml and --json-report."""
    root = tmp_path_factory.mktemp("project")
    for name, body in FIXTURE_PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q", "-rN",
            "--continue-on-collection-errors", "--junitxml=report.xml", "-o", "junit_logging=system-out",
            "--json-report", "--json-report-file=report.json",
        ],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    last = proc.stdout.strip().splitlines()[-1]
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}
    return {"root": root, "summary_line": last, "pytest_counts": counts, "stdout": proc.stdout}


def test_real_pytest_junitxml_matches_pytest_summary(pytest_run: dict, backend: str) -> None:
    pc = pytest_run["pytest_counts"]
    # pytest's own line for this project (checked so the expectations below mean something).
    assert pc == {"failed": 4, "passed": 6, "skipped": 1, "xfailed": 1, "xpassed": 1, "errors": 3}, pytest_run[
        "summary_line"
    ]
    s = summarize(str(pytest_run["root"] / "report.xml"), backend=backend)
    c = s.counts
    # JUnit can say less than pytest's terminal: a non-strict XPASS is written as a plain
    # passing <testcase> (append_pass), and a passing test whose teardown errors is one
    # <testcase> with an <error>, which pytest counts as 1 passed + 1 error.
    assert c.failed == pc["failed"]
    assert c.errors == pc["errors"]
    assert c.skipped == pc["skipped"]
    assert c.xfailed == pc["xfailed"]
    assert c.xpassed == 0
    assert c.passed == pc["passed"] + pc["xpassed"] - 1
    assert c.total == 14 + 1  # 14 tests and the collection error
    failures = {f.node_id: (f.outcome, f.phase) for f in s.failures}
    assert failures == {
        "test_mod.py::test_fail": ("failed", "call"),
        "test_mod.py::test_setup_error": ("error", "setup"),
        "test_mod.py::test_teardown_error": ("error", "teardown"),
        "test_mod.py::test_xpass_strict": ("failed", "call"),
        "test_mod.py::test_param[2]": ("failed", "call"),
        "test_mod.py::TestGroup::test_in_class_fails": ("failed", "call"),
    }
    by_id = {f.node_id: f for f in s.failures}
    assert by_id["test_mod.py::test_fail"].exception == "AssertionError"
    assert by_id["test_mod.py::test_setup_error"].exception == "RuntimeError"
    # pytest's message attribute wraps the crash line: 'failed on setup with "RuntimeError: setup boom"';
    # the wrapper is removed so setup errors of different causes do not share one group.
    assert by_id["test_mod.py::test_setup_error"].message == "setup boom"
    assert [e.path for e in s.collection_errors] == ["test_broken_import.py"]
    assert s.collection_errors[0].exception == "ModuleNotFoundError"
    assert s.collection_errors[0].message == "No module named 'not_a_module_anywhere_xyz'"


def test_real_pytest_node_ids_match_pytest_json_report(pytest_run: dict) -> None:
    """Every node id the JUnit records give is pytest's own (from pytest-json-report)."""
    report = orjson.loads((pytest_run["root"] / "report.json").read_bytes())
    pytest_ids = {t["nodeid"] for t in report["tests"]}
    records = []
    with open(pytest_run["root"] / "report.xml", "rb") as f:
        pure_parse_junit(f, "report.xml", Budgets().model_dump(), records.append)
    tests = [r for r in records if hasattr(r, "node_id")]
    assert {r.node_id for r in tests} == pytest_ids
    assert len(tests) == len(pytest_ids) == 14
    assert [r.path for r in records if not hasattr(r, "node_id")] == [
        c["nodeid"] for c in report["collectors"] if c["outcome"] == "failed"
    ]
    param2 = next(r for r in tests if r.node_id == "test_mod.py::test_param[2]")
    assert "output of 2" in (param2.stdout or "")


# --- 4. large and malformed input -----------------------------------------------------


@needs_native
def test_a_20_mb_text_node_is_capped_with_the_marker(tmp_path: Path) -> None:
    line = "x" * 99 + "\n"
    body = line * (20 * 1024 * 1024 // len(line))
    path = tmp_path / "big.xml"
    path.write_text(f'<testsuite><testcase name="big"><failure message="m">{body}</failure></testcase></testsuite>')
    omitted = len(body) - 2 * 64 * 1024
    s = summary_in_both(path, max_traceback_lines=10_000)
    assert s["omitted"]["text_bytes"] == omitted
    assert f"... [{omitted} bytes omitted]" in s["failures"][0]["traceback"]


@needs_native
def test_native_memory_stays_bounded_on_a_huge_text_node(tmp_path: Path) -> None:
    """A 200 MB <system-out>: the native parser keeps its 2 KiB tail while streaming, so
    its peak RSS grows by less than 16 MiB."""
    path = tmp_path / "huge.xml"
    with open(path, "w") as f:
        f.write('<testsuite><testcase name="big"><system-out>')
        chunk = "o" * 1024 * 1024
        for _ in range(200):
            f.write(chunk)
        f.write('</system-out><failure message="m"/></testcase></testsuite>')
    measured = peak_memory.measure([str(path)], "native", bound_mb=16)
    assert measured.summary["omitted"]["output_bytes"] == 200 * 1024 * 1024 - 2048
    assert measured.growth_kb < 16 * 1024, f"peak RSS grew by {measured.growth_kb} KiB on a 200 MB text node"


def test_pure_memory_stays_bounded_on_a_huge_text_node(tmp_path: Path) -> None:
    """A 30 MB failure text: the pure parser keeps 64 KiB at each end while streaming, so
    its peak RSS grows by less than 8 MiB."""
    path = tmp_path / "huge.xml"
    with open(path, "w") as f:
        f.write('<testsuite><testcase name="big"><failure message="m">')
        for _ in range(30):
            f.write("e" * 1024 * 1024)
        f.write("</failure></testcase></testsuite>")
    measured = peak_memory.measure([str(path)], "pure", bound_mb=8)
    assert measured.summary["omitted"]["text_bytes"] == 30 * 1024 * 1024 - 128 * 1024
    assert measured.growth_kb < 8 * 1024, f"pure parser's peak RSS grew by {measured.growth_kb} KiB"


def _utf16(text: str, codec: str, bom: bytes) -> bytes:
    return bom + text.encode(codec)


UTF16_DOC = (
    '<?xml version="1.0" encoding="UTF-16"?><testsuite><testcase name="é𝄞"><failure>x</failure></testcase></testsuite>'
)

# (snippet, kind or None for a valid report). Each was checked against expat by hand;
# the point of the test is that the native lexer agrees with it.
SNIPPETS: list[tuple[bytes, str | None]] = [
    (b"<testsuites/>", None),
    (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n<testsuites/>\r\n', None),
    (b"<?xml version='1.0'?><!-- c --><?pi data?><testsuites><!-- x-y --></testsuites><!-- end --><?e?>\n", None),
    (b"\xef\xbb\xbf<testsuites/>", None),
    (
        b"<testsuites><testsuite><testcase name='a'><![CDATA[<!DOCTYPE html>]]></testcase></testsuite></testsuites>",
        None,
    ),
    (b"<testsuites><!-- <!DOCTYPE html> --></testsuites>", None),
    (b'<testsuites a="]]>" b=\'"\' c="&#60;&#x3c;&lt;"/>', None),
    (b"<testsuites>]]</testsuites>", None),
    (b"<testsuites >x</testsuites\n>", None),
    (b"<testsuites><a:b x:y='1'/><\xc3\x80\xc2\xb7/><a\xcc\x80/></testsuites>", None),
    (b"<testsuites>&#x10FFFF;&#00000065;&#x7F;\x7f\xc2\x85</testsuites>", None),
    (b'<?xml version="1.0" encoding="latin1"?><testsuites name="caf\xe9"/>', None),
    (b'<?xml version="1.0" encoding="US-ASCII"?><testsuites/>', None),
    (_utf16(UTF16_DOC, "utf-16-le", codecs.BOM_UTF16_LE), None),
    (_utf16(UTF16_DOC, "utf-16-be", codecs.BOM_UTF16_BE), None),
    (
        b"<testsuite name='pytest'><testcase classname='a.test_b' name='outer'><testcase name='inner'>"
        b"<failure>deep</failure></testcase><failure message='m'>x<testcase name='in-failure'>y</testcase>z</failure>"
        b"</testcase></testsuite>",
        None,
    ),  # fmt: skip
    (b"<testsuite><testcase name='n' file='x.py' line='99999999999999999999'><error/></testcase></testsuite>", None),
    (
        b"<testsuite><testcase name='t'><skipped message='xfail-marked test passes unexpectedly' type='pytest.xfail'/>"
        b"</testcase></testsuite>",
        None,
    ),  # fmt: skip
    # forbidden: markup declarations wherever markup may start
    (b"<!DOCTYPE testsuites><testsuites/>", "forbidden"),
    (b"<!DOCTYPE>", "forbidden"),
    (b"<!DOCTYPE", "forbidden"),
    (b"<!DOCTYPE testsuites", "forbidden"),
    (b"<?xml version='1.0'?>\n<!-- c -->\n<!DOCTYPE x SYSTEM 'http://evil/x.dtd'><testsuites/>", "forbidden"),
    (b'<!ENTITY % p "x"><testsuites/>', "forbidden"),
    (b"<!ELEMENT x ANY>", "forbidden"),
    (b"<testsuites><!DOCTYPE x></testsuites>", "forbidden"),
    (b"<testsuites><!ATTLIST x></testsuites>", "forbidden"),
    (b"<testsuites/><!DOCTYPE x>", "forbidden"),
    (b"<testsuites/>\n<!NOTATION", "forbidden"),
    # not a report
    (b"<test-run/>", "not_a_report"),
    (b'<TestRun id="1" xmlns="http://microsoft.com/schemas/VisualStudio/TeamTest/2010"/>', "not_a_report"),
    (b'<assemblies><assembly name="x.dll"/></assemblies>', "not_a_report"),
    (b"<ns:testsuites xmlns:ns='u'/>", "not_a_report"),
    (b"<test-run><unclosed>", "not_a_report"),
    # unsupported encoding
    (b'<?xml version="1.0" encoding="windows-1252"?><testsuites/>', "unsupported_encoding"),
    (b'<?xml version="1.0" encoding="EBCDIC"?><testsuites/>', "unsupported_encoding"),
    # malformed
    (b"<!doctype testsuites><testsuites/>", "malformed"),
    (b"<!-- a -- b --><!DOCTYPE x>", "malformed"),
    (b"<testsuites><!DOCT", "malformed"),
    (b"<testsuites><!D", "malformed"),
    (b"<testsuites><!", "malformed"),
    (b"<testsuites><!x></testsuites>", "malformed"),
    (b"<![CDATA[x]]><testsuites/>", "malformed"),
    (b"<testsuites/><![CDATA[x]]>", "malformed"),
    (b"<testsuites><![cdata[x]]></testsuites>", "malformed"),
    (b"<testsuites>", "malformed"),
    (b"<testsuites><testsuite>", "malformed"),
    (b"<testsuites></testsuite>", "malformed"),
    (b"<testsuites><a></testsuites></a>", "malformed"),
    (b"<testsuites></ testsuites>", "malformed"),
    (b"<testsuites></testsuites x>", "malformed"),
    (b"<testsuites/>x", "malformed"),
    (b"\n<testsuites/>x", "malformed"),
    (b"<testsuites/><testsuites/>", "malformed"),
    (b"<testsuites/></testsuites>", "malformed"),
    (b"<testsuites/>\x0c", "malformed"),
    (b" <?xml version='1.0'?><testsuites/>", "malformed"),
    (b"<?xml version='1.0'?><?xml version='1.0'?><testsuites/>", "malformed"),
    (b"<testsuites><?xml x?></testsuites>", "malformed"),
    (b"<testsuites><?XmL x?></testsuites>", "malformed"),
    (b"<testsuites><? pi?></testsuites>", "malformed"),
    (b"<testsuites><?pi?x?></testsuites>", "malformed"),
    (b"<testsuites><?1x?></testsuites>", "malformed"),
    (b'<?xml encoding="utf-8"?><testsuites/>', "malformed"),
    (b'<?xml version="1.0" standalone="yes" encoding="utf-8"?><testsuites/>', "malformed"),
    (b'<?xml version="1.0"encoding="utf-8"?><testsuites/>', "malformed"),
    (b'<?xml version="1 0"?><testsuites/>', "malformed"),
    (b'<?xml version="1.0" standalone="maybe"?><testsuites/>', "malformed"),
    (b'<?xml version="1.0" encoding=""?><testsuites/>', "malformed"),
    (b"<?xml?><testsuites/>", "malformed"),
    (b'<?xml version="1.0"', "malformed"),
    (b'<?xml version="1.0" encoding="UTF-16"?><testsuites/>', "malformed"),
    (b'\xef\xbb\xbf<?xml version="1.0" encoding="latin-1"?><testsuites/>', "malformed"),
    (b'<?xml version="1.0" encoding="US-ASCII"?><testsuites>\xc3\xa9</testsuites>', "malformed"),
    (codecs.BOM_UTF16_LE + '<?xml version="1.0" encoding="UTF-8"?><testsuites/>'.encode("utf-16-le"), "malformed"),
    (
        codecs.BOM_UTF16_LE + "<testsuites>".encode("utf-16-le") + b"\x00\xdc" + "</testsuites>".encode("utf-16-le"),
        "malformed",
    ),  # fmt: skip
    (codecs.BOM_UTF16_LE + "<testsuites/>".encode("utf-16-le") + b"\x20", "malformed"),
    ("<testsuites/>".encode("utf-16-le"), "malformed"),  # UTF-16 needs its byte order mark
    (b"<testsuites a='1' a='2'/>", "malformed"),
    (b"<testsuites a=1/>", "malformed"),
    (b"<testsuites a='1'b='2'/>", "malformed"),
    (b"<testsuites a/>", "malformed"),
    (b"<testsuites ='x'/>", "malformed"),
    (b"<testsuites a='<'/>", "malformed"),
    (b"<testsuites a='&'/>", "malformed"),
    (b"<testsuites a='&amp'/>", "malformed"),
    (b"<testsuites a='&foo;'/>", "malformed"),
    (b"<testsuites a='&#0;'/>", "malformed"),
    (b"<testsuites a='&#X41;'/>", "malformed"),
    (b"<testsuites a='\x0b'/>", "malformed"),
    (b"<testsuites/ >", "malformed"),
    (b"< testsuites/>", "malformed"),
    (b"<testsuites><1a/></testsuites>", "malformed"),
    (b"<testsuites><-a/></testsuites>", "malformed"),
    (b"<testsuites><\xc2\xb7a/></testsuites>", "malformed"),
    (b"<testsuites><a\xc2\x85/></testsuites>", "malformed"),
    (b"<testsuites><\xe3\x80\x80/></testsuites>", "malformed"),
    (b"<testsuites><\xf0\x90\x80\x80/></testsuites>", "malformed"),
    (b"<testsuites>]]></testsuites>", "malformed"),
    (b"<testsuites>]]]></testsuites>", "malformed"),
    (b"<testsuites>&nbsp;</testsuites>", "malformed"),
    (b"<testsuites>&Amp;</testsuites>", "malformed"),
    (b"<testsuites>&1;</testsuites>", "malformed"),
    (b"<testsuites>& </testsuites>", "malformed"),
    (b"<testsuites>&#;</testsuites>", "malformed"),
    (b"<testsuites>&#x;</testsuites>", "malformed"),
    (b"<testsuites>&#12a;</testsuites>", "malformed"),
    (b"<testsuites>&#65</testsuites>", "malformed"),
    (b"<testsuites>&#xD800;</testsuites>", "malformed"),
    (b"<testsuites>&#xFFFE;</testsuites>", "malformed"),
    (b"<testsuites>&#x1F;</testsuites>", "malformed"),
    (b"<testsuites>&#x110000;</testsuites>", "malformed"),
    (b"<testsuites>&#99999999999999999999;</testsuites>", "malformed"),
    (b"<testsuites>\x01</testsuites>", "malformed"),
    (b"<testsuites>\x00</testsuites>", "malformed"),
    (b"<testsuites>\xff</testsuites>", "malformed"),
    (b"<testsuites>\xc3</testsuites>", "malformed"),
    (b"<testsuites>\xc0\xaf</testsuites>", "malformed"),
    (b"<testsuites>\xed\xa0\x80</testsuites>", "malformed"),
    (b"<testsuites>\xef\xbf\xbe</testsuites>", "malformed"),
    (b"<testsuites>\xef\xbf\xbf</testsuites>", "malformed"),
    (b"<testsuites>\xf4\x90\x80\x80</testsuites>", "malformed"),
    (b"<testsuites>\xc3\xa9", "malformed"),
    (b"<testsuites>\xc3", "malformed"),
    (b"<testsuites><!-- a -- b --></testsuites>", "malformed"),
    (b"<testsuites><!-- a ---></testsuites>", "malformed"),
    (b"<testsuites><!---></testsuites>", "malformed"),
    (b"<testsuites><!-----></testsuites>", "malformed"),
    (b"<testsuites><!-- \x01 --></testsuites>", "malformed"),
    (b"<testsuites><![CDATA[\x00]]></testsuites>", "malformed"),
    (b"<testsuites><![CDATA[x", "malformed"),
    (b"<testsuites><!-- x", "malformed"),
    (b"<testsuites><?pi x", "malformed"),
    (b"<testsuites a='x", "malformed"),
    (b"<testsuites a", "malformed"),
    (b"<testsuites><testcase name='a'>&lt", "malformed"),
    (b"<testsuites><testcase name='a'/", "malformed"),
    (b"<testsuites></", "malformed"),
    (b"<", "malformed"),
    (b"<?xml version='1.0'?>", "malformed"),
    (b"<?xml version='1.0'?>   \n", "malformed"),
]


@needs_native
@pytest.mark.parametrize("snippet,kind", SNIPPETS, ids=[repr(s[:60]) for s, _ in SNIPPETS])
def test_snippets_get_the_same_kind_in_both_backends(tmp_path: Path, snippet: bytes, kind: str | None) -> None:
    path = tmp_path / "s.xml"
    path.write_bytes(snippet)
    assert kind_in_both(path) == (kind or "ok")


def _boundary_cases() -> list[tuple[str, bytes, str | None]]:
    """Documents with something delicate just around the 256 KiB read boundary (and the
    4 KiB head), at every offset of a small window."""
    cases = []
    for chunk_end in (4096, 256 * 1024, 4096 + 256 * 1024):
        for shift in range(-6, 3):
            for label, piece, kind in (
                ("doctype", b"<!DOCTYPE x>", "forbidden"),
                ("entity", b"<!ENTITY x 'y'>", "forbidden"),
                ("crlf", b"\r\n", None),
                ("cdata-end", b"<![CDATA[a]]]]>", None),
                ("bad-utf8", b"\xc3(", "malformed"),
                ("comment-dashes", b"<!-- a--b -->", "malformed"),
                ("split-char", "é€𝄞".encode(), None),
            ):
                prefix = b"<testsuites><testsuite name='pytest'><testcase classname='m' name='t'><failure>"
                filler = chunk_end + shift - len(prefix)
                doc = prefix + b"y" * filler + piece + b"</failure></testcase></testsuite></testsuites>"
                cases.append((f"{label}@{chunk_end}{shift:+d}", doc, kind))
    return cases


BOUNDARY_CASES = _boundary_cases()


@needs_native
@pytest.mark.parametrize("doc,kind", [c[1:] for c in BOUNDARY_CASES], ids=[c[0] for c in BOUNDARY_CASES])
def test_chunk_boundaries_do_not_change_the_result(tmp_path: Path, doc: bytes, kind: str | None) -> None:
    path = tmp_path / "b.xml"
    path.write_bytes(doc)
    assert kind_in_both(path) == (kind or "ok")


@needs_native
def test_name_characters_agree_with_expat(tmp_path: Path) -> None:
    """A sample of non-ASCII code points as name start and name characters: the native
    tables (generated from expat) must agree with the running expat."""
    import random

    rng = random.Random(20240611)
    points = [cp for cp in rng.sample(range(0x80, 0x30000), 300) if not 0xD800 <= cp <= 0xDFFF]
    points += [0xB7, 0x300, 0x387, 0x640, 0x3005, 0x3007, 0x3021, 0x309D, 0xFFFD, 0x10000]
    for cp in points:
        for form in ("<testsuites><{c}/></testsuites>", "<testsuites><a{c}/></testsuites>"):
            path = tmp_path / "n.xml"
            path.write_bytes(form.format(c=chr(cp)).encode())
            result_in_both(path)  # asserts that both backends agree


@needs_native
def test_node_ids_cap_and_normalise_attributes(tmp_path: Path) -> None:
    long_message = "é" * 40_000  # 80,000 bytes: capped to 65,536 (whole characters)
    path = tmp_path / "attrs.xml"
    path.write_text(
        '<testsuite name="pytest">'
        '<testcase classname="pkg.test_m.TestA" name="t[a\tb]" file="./pkg/test_m.py" line="7x">'
        f'<failure message="{long_message}" type="ValueError">text</failure></testcase>'
        '<testcase classname="" name="pkg.test_broken" time="1e-3">'
        '<error message="collection failure">ImportError: boom</error></testcase>'
        "</testsuite>",
        encoding="utf-8",
    )
    s = summary_in_both(path, max_message_chars=100_000)
    f = s["failures"][0]
    assert f["node_id"] == "pkg/test_m.py::TestA::t[a b]"
    assert f["location"] == {"path": "pkg/test_m.py", "line": None}
    assert f["message"] == "é" * 32_768
    assert s["omitted"]["text_bytes"] == 80_000 - 65_536
    assert [e["path"] for e in s["collection_errors"]] == ["pkg/test_broken.py"]
