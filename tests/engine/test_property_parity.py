"""Differential fuzzing of the two backends: random documents, the same answer from both.

Hypothesis builds JUnit XML and pytest-json-report documents (``tests/helpers/strategies.py``):

* valid ones, with every dialect feature: both backends must write the same bytes, and
  the summary must say what the generator knows is in the document (counts, durations,
  failing tests and phases, collection errors, slowest, omitted counts);
* damaged ones (truncated, bytes flipped, tags unbalanced, attributes or keys duplicated,
  encodings mixed, DOCTYPEs, wrong JSON types, ...): the same bytes, or the same error
  kind, and never a crash.

Budgets are drawn at random too. A normal run checks a bounded number of examples per
test; ``--soak=MINUTES`` (tests/conftest.py) runs them for as long as asked. Every
divergence found lives on below as a concrete regression test.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from helpers import backends
from helpers.backends import needs_native, result_in_both, run_backend
from helpers.strategies import (
    Doc,
    budgets_dicts,
    check_invariants,
    check_truth,
    copied_failures_docs,
    fuzz_settings,
    json_docs,
    junit_docs,
    mutated_docs,
    prefixed_noise,
    valid_docs,
)
from hypothesis import event, given
from hypothesis import strategies as st

from pytest_mcp_server.engine.models import SuspectGroup

pytestmark = needs_native


class Scratch:
    """Files for the examples, in one temporary directory (rewritten per example)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._names = itertools.count()

    def write(self, data: bytes, name: str = "report") -> str:
        path = self.root / name
        path.write_bytes(data)
        return str(path)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Scratch:
    return Scratch(tmp_path_factory.mktemp("fuzz"))


def _events(doc: Doc) -> None:
    for feature in sorted(doc.features):
        event(feature)


# --------------------------------------------------------------------------------------
# Valid documents: identical bytes and the truth


@pytest.mark.fuzz
@fuzz_settings(60)
@given(doc=junit_docs(), budgets=budgets_dicts())
def test_valid_junit_gives_identical_bytes_and_the_truth(scratch, doc, budgets):
    _events(doc)
    path = scratch.write(doc.data)
    result = result_in_both([path], budgets)
    assert result[0] == "ok", f"a valid JUnit document was refused: {result}"
    check_truth(result[1], doc.truth, budgets, [path])


@pytest.mark.fuzz
@fuzz_settings(60)
@given(doc=json_docs(), budgets=budgets_dicts())
def test_valid_pytest_json_gives_identical_bytes_and_the_truth(scratch, doc, budgets):
    _events(doc)
    path = scratch.write(doc.data)
    result = result_in_both([path], budgets)
    assert result[0] == "ok", f"a valid pytest-json document was refused: {result}"
    check_truth(result[1], doc.truth, budgets, [path])


@pytest.mark.fuzz
@fuzz_settings(60)
@given(doc=copied_failures_docs(), budgets=st.one_of(st.just({}), budgets_dicts()))
def test_copied_test_bodies_point_at_their_first_copy_alike_in_both_backends(scratch, doc, budgets):
    """Failures whose texts are copies of a few test bodies in several files, with other
    numbers (some written in non-ASCII digits, which are not numbers to the rule): both
    backends write the same bytes, and each failure's ``same_as`` is the rule's
    (``check_truth`` checks it, with the rest of the truth). The default budgets half
    the time: small ones cut messages and tracebacks at lengths the numbers change."""
    _events(doc)
    path = scratch.write(doc.data)
    result = result_in_both([path], budgets)
    assert result[0] == "ok", f"a valid document was refused: {result}"
    check_truth(result[1], doc.truth, budgets, [path])
    event(f"same_as:{sum(f['same_as'] is not None for f in json.loads(result[1])['failures'])}")


def _shards(make):
    return st.integers(1, 3).flatmap(lambda n: st.tuples(*[make(f"s{i}_") for i in range(n)]))


@pytest.mark.fuzz
@fuzz_settings(40)
@given(docs=st.one_of(_shards(junit_docs), _shards(json_docs)), budgets=budgets_dicts(), data=st.data())
def test_a_suspect_groups_alike_in_both_backends_one_file_or_shards(scratch, docs, budgets, data):
    """With a suspect (a cause found outside the report), both backends write the same
    bytes, whether the files are read one after the other (pure) or in parallel and
    merged (native): its failures without a cause frame in one group, each assertion
    site's first failure first among its examples; the counts stay the report's."""
    paths = [scratch.write(d.data, f"shard{i}") for i, d in enumerate(docs)]
    plain = result_in_both(paths, budgets)
    assert plain[0] == "ok", plain
    summary = json.loads(plain[1])
    failing = sorted(
        {f["node_id"] for f in summary["failures"]} | {e for g in summary["groups"] for e in g["examples"]}
    )
    chosen = data.draw(st.lists(st.sampled_from(failing), unique=True) if failing else st.just([]))
    suspect = SuspectGroup(key="pkg/mod.py:3", node_ids=frozenset(chosen))
    grouped = result_in_both(paths, budgets, suspect=suspect)
    assert grouped[0] == "ok", grouped
    assert json.loads(grouped[1])["counts"] == summary["counts"]


@pytest.mark.fuzz
@fuzz_settings(25)
@given(docs=st.one_of(_shards(junit_docs), _shards(json_docs)), budgets=budgets_dicts())
def test_shards_summarise_like_one_report(scratch, docs, budgets):
    """Several files merge in input order: the truth of all of them, identical bytes
    (the native backend parses them in parallel threads)."""
    paths = [scratch.write(d.data, f"shard{i}") for i, d in enumerate(docs)]
    result = result_in_both(paths, budgets)
    assert result[0] == "ok", result
    truth = docs[0].truth
    for d in docs[1:]:
        truth = truth + d.truth
    check_truth(result[1], truth, budgets, paths)


@pytest.mark.fuzz
@fuzz_settings(20)
@given(junit=junit_docs(), pytest_json=json_docs(), order=st.permutations([0, 1, 2]), data=st.data())
def test_mixed_formats_are_refused_by_both(scratch, junit, pytest_json, order, data):
    docs = [junit, pytest_json, data.draw(st.sampled_from([junit, pytest_json]))]
    paths = [scratch.write(docs[i].data, f"mixed{i}") for i in order]
    result = result_in_both(paths, {})
    assert result[:2] == ("error", "mixed_formats")


@pytest.mark.fuzz
@fuzz_settings(20)
@given(doc=valid_docs(), budgets=budgets_dicts())
def test_explicit_format_matches_auto_and_refuses_the_other(scratch, doc, budgets):
    path = scratch.write(doc.data)
    auto = result_in_both([path], budgets)
    same = result_in_both([path], budgets, fmt=doc.format)
    assert same == auto
    other = "pytest-json" if doc.format == "junit" else "junit"
    assert result_in_both([path], budgets, fmt=other)[:2] == ("error", "not_a_report")


# --------------------------------------------------------------------------------------
# Damaged documents: identical bytes or the same error kind, never a crash


@pytest.mark.fuzz
@fuzz_settings(150)
@given(
    doc=st.one_of(mutated_docs(), mutated_docs(), prefixed_noise()),
    budgets=budgets_dicts(),
    fmt=st.sampled_from(["auto", "auto", "junit", "pytest-json"]),
)
def test_damaged_documents_give_identical_bytes_or_the_same_error_kind(scratch, doc, budgets, fmt):
    _events(doc)
    path = scratch.write(doc.data)
    result = result_in_both([path], budgets, fmt=fmt)
    event(f"result:{result[0]}:{result[1] if result[0] == 'error' else doc.format}")
    if result[0] == "ok":
        check_invariants(result[1], budgets, [path])


@pytest.mark.fuzz
@fuzz_settings(30)
@given(docs=st.lists(st.one_of(valid_docs(), mutated_docs()), min_size=2, max_size=3), budgets=budgets_dicts())
def test_the_first_failing_shard_decides_in_both(scratch, docs, budgets):
    paths = [scratch.write(d.data, f"any{i}") for i, d in enumerate(docs)]
    result = result_in_both(paths, budgets)
    event(f"result:{result[0]}:{result[1] if result[0] == 'error' else 'ok'}")
    if result[0] == "ok":
        check_invariants(result[1], budgets, paths)


# --------------------------------------------------------------------------------------
# Regressions: every divergence the fuzzers found, as a concrete input:
# (id, bytes, expected result of both backends: "ok" or the error kind, reason if the
# fix is still pending in the owner's module -> strict xfail until it lands).

REGRESSIONS: list[tuple[str, bytes, str, str | None]] = [
    # pure said forbidden where expat sees broken markup first (found by replaying the
    # cargo-fuzz corpus, fuzz/replay_parity.py)
    ("declaration-after-broken-markup", b'<!<!ENTITY x "y">', "malformed", None),
    ("declaration-in-an-attribute-value", b'<testsuite><testcase name="<!DOCTYPE x>"/></testsuite>', "malformed", None),
    ("declaration-inside-a-tag", b"<testsuite><x <!DOCTYPE/></testsuite>", "malformed", None),
    ("declaration-after-broken-markup-after-the-root", b"<testsuite/><!<!DOCTYPE x>", "malformed", None),
    ("declaration-after-a-broken-comment", b"<testsuite><!-<!DOCTYPE x></testsuite>", "malformed", None),
    ("declaration-after-a-bare-ampersand", b"<testsuite>&<!DOCTYPE x></testsuite>", "malformed", None),
    ("declaration-after-a-prolog-comment", b"<!-- c --><!ENTITY a 'b'><testsuite/>", "forbidden", None),
    ("declaration-after-an-epilog-comment", b"<testsuite/><!-- c --><!DOCTYPE x>", "forbidden", None),
    # pure said ok: expat skipped a second U+FEFF, transcoded from UTF-16, as if it were a
    # UTF-8 byte order mark (found by the "bom" mutation on a UTF-16 document)
    (
        "utf16le-bom-then-feff",
        b"\xff\xfe\xff\xfe" + '<testsuite><testcase name="a"/></testsuite>'.encode("utf-16-le"),
        "malformed",
        None,
    ),
    (
        "utf16be-bom-then-feff",
        b"\xfe\xff\xfe\xff" + '<?xml version="1.0" encoding="UTF-16"?><testsuite/>'.encode("utf-16-be"),
        "malformed",
        None,
    ),
    (
        "utf16le-bom-then-zwnbsp-in-the-root",
        b"\xff\xfe" + '<testsuite>\ufeff<testcase name="a"/></testsuite>'.encode("utf-16-le"),
        "ok",
        None,
    ),
    ("declaration-in-a-comment", b"<testsuite><!-- <!DOCTYPE x> --></testsuite>", "ok", None),
    ("declaration-in-cdata", b"<testsuite><![CDATA[<!DOCTYPE]]></testsuite>", "ok", None),
    ("declaration-in-a-pi", b"<?pi <!DOCTYPE x?><testsuite/>", "ok", None),
    ("declaration-in-text", b"<testsuite>text <!DOCTYPE x></testsuite>", "forbidden", None),
    ("declaration-after-the-root", b"<testsuite/><!ATTLIST x y CDATA #IMPLIED>", "forbidden", None),
    # pure said malformed for a DOCTYPE cut before its end (found by test_corpus_truncation:
    # testXxe-xxe.xml cut at byte 55)
    ("doctype-name-then-eof", b"<!DOCTYPE x", "forbidden", None),
    ("doctype-space-then-eof", b'<?xml version="1.0"?>\n<!DOCTYPE ', "forbidden", None),
    ("doctype-keyword-only", b"<!DOCTYPE", "forbidden", None),
    ("doctype-with-subset-open", b"<!DOCTYPE r [", "forbidden", None),
    # ENGINE.md: a start tag has at most 1024 attributes (`name` is one of them)
    (
        "attributes-at-the-limit",
        b"<testsuite><testcase name='a'" + b"".join(b" a%d='v'" % i for i in range(1023)) + b"/></testsuite>",
        "ok",
        None,
    ),
    (
        "attributes-above-the-limit",
        b"<testsuite><testcase name='a'" + b"".join(b" a%d='v'" % i for i in range(1024)) + b"/></testsuite>",
        "malformed",
        None,
    ),
    (
        "attributes-above-the-limit-before-the-root-check",
        b"<html" + b"".join(b" a%d='v'" % i for i in range(1025)) + b"/>",
        "malformed",
        None,
    ),
    (
        "attributes-at-the-limit-on-another-root",
        b"<html" + b"".join(b" a%d='v'" % i for i in range(1024)) + b"/>",
        "not_a_report",
        None,
    ),
]


def _regression_params():
    for name, data, expected, pending in REGRESSIONS:
        marks = [pytest.mark.xfail(strict=True, reason=pending)] if pending else []
        yield pytest.param(data, expected, id=name, marks=marks)


@pytest.mark.parametrize(("data", "expected"), list(_regression_params()))
def test_regression(tmp_path, data, expected):
    path = str(tmp_path / "report")
    Path(path).write_bytes(data)
    result = result_in_both([path], {})
    assert (result[0] if result[0] == "ok" else result[1]) == expected
    if result[0] == "ok":
        check_invariants(result[1], {}, [path])


def test_differential_detects_a_divergence(tmp_path, monkeypatch):
    """The checker itself can fail: a backend answering differently is caught."""
    path = str(tmp_path / "r.xml")
    Path(path).write_bytes(b'<testsuite><testcase name="a"/></testsuite>')
    real = backends.run_backend

    def lying(paths, backend, budgets, fmt="auto", project=None, select=None, suspect=None, collected_page=None):
        out = real(paths, backend, budgets, fmt, project, select, suspect, collected_page)
        return out if backend == "native" else ("ok", out[1].replace(b'"passed":1', b'"passed":2'))

    monkeypatch.setattr(backends, "run_backend", lying)
    with pytest.raises(AssertionError, match="different summaries"):
        result_in_both([path], {})
    assert run_backend([path], "pure", {})[0] == "ok"
