"""The engine's project-code rules in both backends (docs/ENGINE.md, *Project code*,
*Groups*, *Failures*): which frames are the project's own code wherever it is installed,
how a traceback keeps and shows them, where a failure is located, how failures group by
cause, and the order failures are listed in.

Concrete cases are worked out by hand from the rules; hypothesis runs feed the same
random frame paths to both backends (in a failure's traceback: the native rules are read
off summaries, see ``rule_probes``) and demand identical results.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import orjson
import pytest
from helpers.backends import needs_native, summary_in_both
from helpers.rule_probes import native_cut, summaries_agree
from helpers.rule_probes import pure_cut as pure_summary_cut
from helpers.strategies import budgets_dicts, check_invariants, fuzz_settings, valid_docs
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mcp_server.engine import BACKEND_ENV, native_available, resolve_backend, summarize_bytes
from pytest_mcp_server.engine.models import Budgets, ProjectCode
from pytest_mcp_server.engine.pure import group as pure_group
from pytest_mcp_server.engine.pure import project as pure_project

ROOT = "/work/app"
PROJECT = ProjectCode(root=ROOT, packages=["pkg", "single"])
PAIR = (PROJECT.root, list(PROJECT.packages))
KINDS = {pure_project.LIBRARY: "library", pure_project.PROJECT: "project", pure_project.TEST: "test"}


def pure_classify(path: str, project: tuple[str, list[str]] | None) -> str:
    return KINDS[pure_project.classify(path, pure_project.ProjectCode(*project) if project else None)]


def frame_at(path: str, then_test: bool = False) -> str:
    """A traceback whose one frame is at ``path`` (Python's native format), raising
    ``ValueError: x``; with ``then_test``, a frame of a test file follows it (innermost).
    Its summary tells the frame's kind apart: alone, a library frame gives no location;
    followed by the test frame, the group is keyed by ``path`` when it is the project's
    code under test, else by the test frame (docs/ENGINE.md, *Groups*)."""
    test = '  File "tests/test_probe.py", line 9, in t\n    h()\n' if then_test else ""
    return f'Traceback (most recent call last):\n  File "{path}", line 7, in f\n    g()\n{test}ValueError: x'


def native_classify(path: str, project: tuple[str, list[str]] | None) -> str:
    """What the native backend's summary of a failure framed at ``path`` says the frame
    is (asserting that the pure backend writes the same summary)."""
    summary = orjson.loads(summaries_agree(frame_at(path), "ValueError: x", project))
    if summary["failures"][0]["location"] is None:
        return "library"
    summary = orjson.loads(summaries_agree(frame_at(path, then_test=True), "ValueError: x", project))
    assert summary["failures"][0]["location"]["line"] == 9  # the innermost project frame: the test's
    by_test_frame = pure_group.group_key("ValueError", "", "tests/test_probe.py:9")[0]
    return "test" if summary["groups"][0]["id"] == by_test_frame else "project"


def classify_in_both(path: str, project: tuple[str, list[str]] | None) -> str:
    """What both backends say a frame path is (native skipped when not built)."""
    pure = pure_classify(path, project)
    if native_available():
        assert native_classify(path, project) == pure, path
    return pure


# --------------------------------------------------------------------------------------
# Frame classification.


@pytest.mark.parametrize(
    "path, with_project, without_project",
    [
        # The project installed with `pip install .`: its frames are its own code.
        ("/venv/lib/python3.11/site-packages/pkg/__init__.py", "project", "library"),
        ("../../venv/lib/python3.11/site-packages/single.py", "project", "library"),
        ("/venv/lib/python3.11/site-packages/pkg/tests/test_x.py", "test", "library"),
        ("/usr/lib/python3/dist-packages/pkg/core.py", "project", "library"),
        # Third-party packages, the standard library, pytest: library code.
        ("/venv/lib/python3.11/site-packages/requests/api.py", "library", "library"),
        ("/venv/lib/python3.11/site-packages/pkgx/a.py", "library", "library"),
        ("/venv/lib/python3.11/site-packages/_pytest/python.py", "library", "library"),
        ("/usr/lib/python3.11/random.py", "library", "library"),
        ("/usr/lib/python3.11/unittest/case.py", "library", "library"),
        ("<frozen _collections_abc>", "library", "library"),
        ("<string>", "library", "project"),
        # The source tree: relative paths are read against the root.
        ("src/pkg/core.py", "project", "project"),
        ("tests/test_core.py", "test", "test"),
        ("pkg/checks_test.py", "test", "test"),
        ("conftest.py", "test", "test"),
        ("test/helpers.py", "test", "test"),
        ("/work/app/src/pkg/core.py", "project", "project"),
        ("/work/app/./src/../tests/test_a.py", "test", "test"),
        ("/work/application/x.py", "library", "project"),
        ("../elsewhere/x.py", "library", "project"),
        ("/work/app/.venv/lib/python3.11/site-packages/requests/api.py", "library", "library"),
        ("C:\\venv\\Lib\\site-packages\\pkg\\core.py", "project", "library"),
    ],
)
def test_frames_are_classified_by_the_project_not_by_where_it_is_installed(path, with_project, without_project):
    assert classify_in_both(path, PAIR) == with_project
    assert classify_in_both(path, None) == without_project


_PATH_PARTS = ["site-packages", "dist-packages", "pkg", "single.py", "work", "app", "..", ".", "", "tests", "x.py"]
_PATH_PARTS += ["test_a.py", "a_test.py", "conftest.py", "lib", "python3.11", "_pytest", "<frozen x>", "C:", "é"]
_PATH_PARTS += ["Lib", "lib64", "python3.13t", "python3.", "python311"]
paths = st.builds(
    lambda lead, parts, sep: lead + sep.join(parts),
    st.sampled_from(["", "/", "C:\\", "../", "<"]),
    st.lists(st.one_of(st.sampled_from(_PATH_PARTS), st.text(max_size=4)), max_size=8),
    st.sampled_from(["/", "\\"]),
)
# absolute roots only: ProjectCode refuses a relative one
roots = st.sampled_from(["/work/app", "/work/app/", "/", "C:\\work\\app", "/w/../work/./app"])


@needs_native
@settings(max_examples=2000, deadline=None)
@given(path=paths, root=roots, packages=st.lists(st.sampled_from(["pkg", "single", "x"]), max_size=3))
def test_classification_parity(path, root, packages):
    summaries_agree(frame_at(path), "ValueError: x", (root, packages))
    summaries_agree(frame_at(path), "ValueError: x", None)


@needs_native
@pytest.mark.parametrize(
    "path, shown, project",
    [
        ("/root/.pyenv/versions/3.11.7/lib/python3.11/re/_parser.py", "<stdlib>/re/_parser.py", False),
        ("/opt/py/lib64/python3.13t/json/decoder.py", "<stdlib>/json/decoder.py", False),
        ("C:\\Python311\\Lib\\re\\_parser.py", "<stdlib>/re\\_parser.py", False),
        ("/home/ada/src/vendored/lib/tool.py", ".../vendored/lib/tool.py", False),
        ("/work/app/src/pkg/core.py", "src/pkg/core.py", True),
        ("/venv/lib/python3.11/site-packages/requests/api.py", "<site-packages>/requests/api.py", False),
    ],
)
def test_an_answer_spells_out_no_directory_of_the_machine(path, shown, project):
    """The frame where the exception was raised stays in the cut traceback whatever code
    it is; its path is shown without the interpreter's install prefix or the user's
    directories (the standard library as ``<stdlib>/``, elsewhere the last three
    components), the same in both backends."""
    separator = "_ " * 20
    longrepr = (
        f"    def test_x():\n>       h()\n\ntests/test_probe.py:9: \n{separator}\n\n"
        f"    def f():\n>       g()\nE       ValueError: x\n\n{path}:7: ValueError"
    )
    failure = orjson.loads(summaries_agree(longrepr, "ValueError: x", PAIR))["failures"][0]
    text = failure["traceback"]
    if project:  # the project's frame is the failure's location
        assert failure["location"] == {"path": shown, "line": 7}, failure
    else:  # a library frame's crash line stays in the text; the location is the test's call
        assert f"{shown}:7: ValueError" in text, text
        assert failure["location"] == {"path": "tests/test_probe.py", "line": 9}, failure
    directory = path.replace("\\", "/").rsplit("/", 3)[0]
    assert directory not in text.replace("\\", "/"), text


# --------------------------------------------------------------------------------------
# Cutting with a project: the frame at the bug stays, with its header, shown short.

# pytest's --tb=auto shape for a test calling an installed package that calls the
# standard library, which raises.
INSTALLED_BUG = "\n".join(
    [
        "    def test_popitem():",
        "        cache = pkg.Cache()",
        ">       cache.popitem()",
        "",
        "tests/test_cache.py:12: ",
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ ",
        "/venv/lib/python3.11/site-packages/pkg/__init__.py:426: in popitem",
        "    key = self.__choice(list(self.__data))",
        "/venv/lib/python3.11/site-packages/other/helpers.py:3: in wrapped",
        "    return f(*args)",
        "/usr/lib/python3.11/random.py:373: in choice",
        "    return seq[self._randbelow(len(seq))]",
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ ",
        "",
        "self = <random.Random object at 0x55d5>, n = 0",
        "",
        "    def _randbelow_with_getrandbits(self, n):",
        "        k = n.bit_length()",
        ">       r = getrandbits(k)",
        "E       ValueError: number of bits must be non-negative",
        "",
        "/usr/lib/python3.11/random.py:239: ValueError",
    ]
)


@pytest.fixture
def cut_impl(backend: str):
    """``cut_traceback(text, max_lines, max_line_chars, project=None)`` of the backend
    under test, ``project`` as (root, packages); the native one as its summaries cut."""
    return native_cut if backend == "native" else pure_summary_cut


def test_cut_keeps_the_installed_project_frame_with_its_header(cut_impl):
    cut, omitted = cut_impl(INSTALLED_BUG, 2000, 200, PAIR)
    separator = "_ _ _ _ _"  # shown short: its width says nothing
    # The project's frame keeps its header and source line, its path shown short; the
    # third-party and standard-library frames after it go; the raising frame stays.
    assert cut.split("\n") == [
        "    def test_popitem():",
        "        cache = pkg.Cache()",
        ">       cache.popitem()",
        "",
        "tests/test_cache.py:12: ",
        separator,
        "<site-packages>/pkg/__init__.py:426: in popitem",
        "    key = self.__choice(list(self.__data))",
        "... [4 lines omitted]",
        separator,
        "",
        "self = <random.Random object at 0x55d5>, n = 0",
        "",
        "    def _randbelow_with_getrandbits(self, n):",
        "        k = n.bit_length()",
        ">       r = getrandbits(k)",
        "E       ValueError: number of bits must be non-negative",
        "",
        "<stdlib>/random.py:239: ValueError",  # the interpreter's install prefix left out
    ]
    assert omitted == 0  # the library frames' 4 lines: marked, not counted (no budget shows them)
    # Without a project the installed package is library code: its frame is dropped.
    plain, _ = cut_impl(INSTALLED_BUG, 2000, 200)
    assert "pkg/__init__.py:426" not in plain


@needs_native
@settings(max_examples=500, deadline=None)
@given(
    lines=st.lists(
        st.sampled_from(
            INSTALLED_BUG.split("\n")
            + ['  File "/venv/lib/python3.11/site-packages/pkg/a.py", line 3, in f', '  File "x.py", line 1, in g']
        ),
        max_size=30,
    ),
    max_lines=st.integers(3, 40),
    root=roots,
)
def test_cut_parity_with_a_project(lines, max_lines, root):
    text = "\n".join(lines)
    project = (root, ["pkg"])
    assert native_cut(text, max_lines, 60, project) == pure_summary_cut(text, max_lines, 60, project)


# --------------------------------------------------------------------------------------
# Summaries: locations, groups by cause, listing order (both backends, byte-identical).


def _case(name: str, message: str, text: str, file: str = "tests/test_cache.py") -> str:
    return (
        f"<testcase classname={quoteattr(file[:-3].replace('/', '.'))} name={quoteattr(name)} "
        f'file={quoteattr(file)} line="1" time="0.01">'
        f"<failure message={quoteattr(message)}>{escape(text)}</failure></testcase>"
    )


def _junit(path: Path, cases: list[str], passing: int = 0) -> Path:
    ok = "".join(f'<testcase classname="tests.test_ok" name="test_{i}" time="0.001"/>' for i in range(passing))
    path.write_text(
        f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{ok}{"".join(cases)}</testsuite></testsuites>'
    )
    return path


def _installed_bug(value: str) -> str:
    return INSTALLED_BUG.replace("number of bits must be non-negative", f"bad value {value}")


def test_one_bug_in_the_installed_project_is_one_group_located_at_the_bug(tmp_path):
    reprs = ["Point(x=1)", "<pkg.Node object at 0x7f01>", "'abc def'", "42", "True", "[1, 2]"]
    cases = [_case(f"test_{i}", f"ValueError: bad value {v}", _installed_bug(v)) for i, v in enumerate(reprs)]
    s = summary_in_both(_junit(tmp_path / "r.xml", cases), project=PROJECT)
    (group,) = s["groups"]
    assert (group["count"], group["exception"]) == (6, "ValueError")
    assert group["location"] == {"path": "<site-packages>/pkg/__init__.py", "line": 426}
    assert all(f["location"] == group["location"] for f in s["failures"])
    # Without the project (a report from elsewhere) the same failures are located and
    # grouped at the test's own line (one fingerprint there too, whatever the values).
    plain = summary_in_both(tmp_path / "r.xml")
    assert plain["failures"][0]["location"] == {"path": "tests/test_cache.py", "line": 12}
    assert [(g["count"], g["location"]) for g in plain["groups"]] == [(6, {"path": "tests/test_cache.py", "line": 12})]


def test_the_same_message_at_two_assertion_sites_is_two_groups(tmp_path):
    def assertion(site: str) -> str:
        return f"    def test_x():\n>       assert False\nE       assert False\n\n{site}: AssertionError"

    cases = [
        _case("test_a", "AssertionError: assert False", assertion("tests/test_a.py:5"), "tests/test_a.py"),
        _case("test_b", "AssertionError: assert False", assertion("tests/test_b.py:9"), "tests/test_b.py"),
        _case("test_a2", "AssertionError: assert False", assertion("tests/test_a.py:5"), "tests/test_a.py"),
    ]
    s = summary_in_both(_junit(tmp_path / "r.xml", cases), project=PROJECT)
    assert [(g["count"], g["location"]) for g in s["groups"]] == [
        (2, {"path": "tests/test_a.py", "line": 5}),
        (1, {"path": "tests/test_b.py", "line": 9}),
    ]


def test_one_site_is_one_group_per_exception_whatever_the_values_or_wording(tmp_path):
    """The fingerprint is the exception and the frame: two messages of one exception at
    one line are one group (its message is the first failure's), two exceptions two."""
    site = "tests/test_flags.py:20"
    cases = [
        _case(
            f"test_flags[{a}-{b}]",
            f"AssertionError: assert {a} == {b}",
            f">       assert f(a) == b\nE       assert {a} == {b}\n\n{site}: AssertionError",
            "tests/test_flags.py",
        )
        for a, b in [("True", "False"), ("False", "True")]
    ]
    for attribute, obj in [("a", "NoneType"), ("lowr", "str")]:
        message = f"'{obj}' object has no attribute '{attribute}'"
        cases.append(
            _case(
                f"test_attr_{attribute}",
                f"AttributeError: {message}",
                f">       x.{attribute}\nE       AttributeError: {message}\n\n{site}: AttributeError",
                "tests/test_flags.py",
            )
        )
    s = summary_in_both(_junit(tmp_path / "r.xml", cases), project=PROJECT)
    assert [(g["count"], g["exception"], g["message"]) for g in s["groups"]] == [
        (2, "AssertionError", "assert <bool> == <bool>"),
        (2, "AttributeError", "'NoneType' object has no attribute 'a'"),
    ]


def test_the_largest_group_is_listed_first_then_the_rest_in_report_order(tmp_path):
    small = [
        _case(f"test_small_{i}", f"KeyError: {i}", f"E   KeyError: {i}\n\ntests/test_s.py:{i + 1}: KeyError")
        for i in range(3)
    ]
    big = [_case(f"test_big_{i}", f"ValueError: bad value {i}", _installed_bug(str(i))) for i in range(4)]
    s = summary_in_both(
        _junit(tmp_path / "r.xml", small + big, passing=2), project=PROJECT, failures_listed=4, max_groups=2
    )
    assert [g["count"] for g in s["groups"]] == [4, 1]
    # One representative per listed group (largest first), then report order.
    assert [f["node_id"].rsplit("::", 1)[1] for f in s["failures"]] == [
        "test_big_0",
        "test_small_0",
        "test_small_1",
        "test_small_2",
    ]
    assert s["omitted"]["failures"] == 3 and s["omitted"]["groups"] == 2
    assert s["failures"][0]["traceback"].count("<site-packages>/pkg/__init__.py:426: in popitem") == 1


# --------------------------------------------------------------------------------------
# Whole generated reports (every dialect feature, several shards merged natively): the
# same bytes in both backends with a project, and the summary invariants.

projects = st.builds(
    lambda root, packages: ProjectCode(root=root, packages=packages),
    st.sampled_from(["/work/app", "/usr/lib/python3.11", "/", "C:\\work"]),
    st.lists(st.sampled_from(["lib", "requests", "pkg", "tests"]), max_size=3),
)


@needs_native
@pytest.mark.fuzz
@fuzz_settings(40)
@given(
    docs=st.integers(1, 3).flatmap(lambda n: st.tuples(*[valid_docs(f"s{i}_") for i in range(n)])),
    budgets=budgets_dicts(),
    project=projects,
)
def test_generated_reports_with_a_project_give_identical_bytes(tmp_path_factory, docs, budgets, project):
    directory = tmp_path_factory.mktemp("shards")
    paths = [directory / f"shard{i}" for i in range(len(docs))]
    for path, doc in zip(paths, docs, strict=True):
        path.write_bytes(doc.data)
    if len({doc.format for doc in docs}) > 1:
        return  # mixed formats are refused (tested elsewhere)
    b = Budgets(**budgets)
    native_bytes = summarize_bytes(paths, backend="native", budgets=b, project=project)
    assert native_bytes == summarize_bytes(paths, backend="pure", budgets=b, project=project)
    check_invariants(native_bytes, budgets, [str(p) for p in paths])


# --------------------------------------------------------------------------------------
# How the server's tests pick a backend: PYTEST_MCP_SERVER_BACKEND decides what auto means.


def test_the_backend_variable_decides_what_auto_means(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "pure")
    assert resolve_backend("auto") == "pure"
    monkeypatch.setenv(BACKEND_ENV, "rust")
    with pytest.raises(ValueError, match="PYTEST_MCP_SERVER_BACKEND must be 'native' or 'pure'"):
        resolve_backend("auto")
    monkeypatch.setenv(BACKEND_ENV, "")
    assert resolve_backend("auto") == ("native" if native_available() else "pure")


# --------------------------------------------------------------------------------------
# Chained exceptions: the root cause locates, names and groups the failure.


def _chained(root_line: int, final: str) -> str:
    """pytest's long format of a test whose call into the project raised KeyError at
    ``src/pkg/store.py:root_line``, handled by raising ``final`` from the test's helper."""
    return "\n".join(
        [
            "    def test_lookup():",
            ">       store.get('user-7')",
            "",
            "tests/test_store.py:8: ",
            "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ ",
            "",
            "    def get(self, key):",
            ">       return self.data[key]",
            "E       KeyError: 'user-7'",
            "",
            f"src/pkg/store.py:{root_line}: KeyError",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "    def test_lookup():",
            "        try:",
            "            store.get('user-7')",
            "        except KeyError:",
            f">           raise {final}('lookup failed')",
            f"E           {final}: lookup failed",
            "",
            f"tests/test_store.py:12: {final}",
        ]
    )


def test_a_chained_failure_is_located_named_and_grouped_by_its_root_cause(tmp_path):
    cases = [
        _case("test_a", "RuntimeError: lookup failed", _chained(21, "RuntimeError"), "tests/test_store.py"),
        _case("test_b", "ValueError: lookup failed", _chained(21, "ValueError"), "tests/test_store.py"),
        _case("test_c", "RuntimeError: lookup failed", _chained(40, "RuntimeError"), "tests/test_store.py"),
    ]
    s = summary_in_both(_junit(tmp_path / "r.xml", cases), project=PROJECT, max_traceback_lines=8)
    # one root cause (KeyError at line 21), whatever the final exception: one group
    assert [(g["count"], g["exception"], g["location"]) for g in s["groups"]] == [
        (2, "KeyError", {"path": "src/pkg/store.py", "line": 21}),
        (1, "KeyError", {"path": "src/pkg/store.py", "line": 40}),
    ]
    first = s["failures"][0]
    assert (first["exception"], first["message"]) == ("KeyError", "'user-7'")
    assert first["location"] == {"path": "src/pkg/store.py", "line": 21}
    assert first["message_in_traceback"]
    # the cut (8 lines) keeps the root's frame and exception line, and the final exception's line
    lines = first["traceback"].split("\n")
    assert "src/pkg/store.py:21: KeyError" in lines
    assert "E       KeyError: 'user-7'" in lines
    assert lines[-1] == "tests/test_store.py:12: RuntimeError"
    # a root raised in library code is located at its innermost project frame (the test's)
    in_library = _chained(21, "RuntimeError").replace("src/pkg/store.py", "/usr/lib/python3.11/json/x.py")
    s = summary_in_both(
        _junit(tmp_path / "p.xml", [_case("t", "RuntimeError: lookup failed", in_library)]), project=PROJECT
    )
    assert (s["failures"][0]["exception"], s["failures"][0]["location"]) == (
        "KeyError",
        {"path": "tests/test_store.py", "line": 8},
    )
    # with no project frame before the chain line, the final exception names the failure
    no_root_frame = in_library.replace("tests/test_store.py:8: ", "/usr/lib/python3.11/json/y.py:3: in get")
    s = summary_in_both(
        _junit(tmp_path / "q.xml", [_case("t", "RuntimeError: lookup failed", no_root_frame)]), project=PROJECT
    )
    assert (s["failures"][0]["exception"], s["failures"][0]["location"]["line"]) == ("RuntimeError", 12)


# --------------------------------------------------------------------------------------
# Memory: the native builder keeps first failures without their texts, or raw within a
# bound, and reads a listed group's first failure again.


@pytest.mark.parametrize("encoding", ["utf-8", "iso-8859-1"])
def test_a_listed_group_born_long_before_it_grows_gets_its_first_failure(tmp_path, encoding):
    """The native builder cuts only the listed groups' first failures, at the end. In a
    UTF-8 file it keeps the others without their texts and reads a listed one's from its
    ``testcase`` alone; in a transcoded (ISO-8859-1) file it keeps them raw, within a
    bound that thousands of causes with long tracebacks exceed, dropping those of groups
    that did not grow, and a listed one that went is read from the whole file again. The
    largest group here grows only at the end, after 1,800 new causes: both backends
    agree, and its first failure is listed first."""
    filler = "\n".join(f"    # context line {i} of a long frame" for i in range(60))

    def text(line: int) -> str:
        return f"{filler}\n>       g()\nE       ValueError: bad {line}\n\nsrc/pkg/mod_{line}.py:{line}: ValueError"

    # the largest group's first failure comes early, its others only after 1,800 new
    # causes have pushed it out of the raw records
    cases = [_case(f"test_{i}", f"ValueError: bad {i}", text(i)) for i in range(1, 100)]
    cases.append(_case("test_big_0", "ValueError: bad 5000", text(5000)))
    cases += [_case(f"test_{i}", f"ValueError: bad {i}", text(i)) for i in range(100, 1900)]
    cases += [_case(f"test_big_{i}", "ValueError: bad 5000", text(5000)) for i in range(1, 3)]
    report = tmp_path / "r.xml"
    report.write_text(
        f'<?xml version="1.0" encoding="{encoding}"?><testsuites><testsuite name="pytest">'
        f"{''.join(cases)}</testsuite></testsuites>",
        encoding=encoding,
    )
    s = summary_in_both(report, project=PROJECT, failures_listed=3, max_groups=2)
    assert s["groups"][0]["count"] == 3
    assert s["groups"][0]["location"] == {"path": "src/pkg/mod_5000.py", "line": 5000}
    assert s["failures"][0]["node_id"].endswith("test_big_0")
    assert "E       ValueError: bad 5000" in s["failures"][0]["traceback"]


def test_a_chain_of_a_thousand_exceptions_is_cut_within_budget(tmp_path):
    """Each exception of a long chain (or of a ``__context__`` cycle, which pytest prints
    as a finite chain) is read once: the cut keeps the root's end and the final
    exception's tail, within ``max_traceback_lines``, in both backends alike."""
    links = [_chained(21, "RuntimeError").split("\nDuring handling")[0]]
    for i in range(1000):
        links.append(
            "During handling of the above exception, another exception occurred:\n\n"
            f"    def step_{i}():\n>       raise RuntimeError('step {i}')\nE       RuntimeError: step {i}\n\n"
            f"tests/test_store.py:{100 + i}: RuntimeError"
        )
    case = _case("test_long", "RuntimeError: step 999", "\n".join(links), "tests/test_store.py")
    s = summary_in_both(_junit(tmp_path / "r.xml", [case]), project=PROJECT)
    (failure,) = s["failures"]
    assert (failure["exception"], failure["location"]) == ("KeyError", {"path": "src/pkg/store.py", "line": 21})
    lines = failure["traceback"].split("\n")
    assert len(lines) <= 40
    assert "E       KeyError: 'user-7'" in lines
    assert lines[-1] == "tests/test_store.py:1099: RuntimeError"
    # the test's own frame, at the head, stays too
    assert "tests/test_store.py:8: " in lines


def test_a_chained_cut_at_the_smallest_budgets_stays_within_them(tmp_path):
    """At 3 to 8 lines the chained cut still fits: the head, the root's end and the final
    exception share what there is, in both backends alike."""
    for max_lines in range(3, 9):
        case = _case("test_a", "RuntimeError: lookup failed", _chained(21, "RuntimeError"), "tests/test_store.py")
        s = summary_in_both(
            _junit(tmp_path / f"r{max_lines}.xml", [case]), project=PROJECT, max_traceback_lines=max_lines
        )
        lines = s["failures"][0]["traceback"].split("\n")
        assert len(lines) <= max_lines, (max_lines, lines)
        assert lines[-1] == "tests/test_store.py:12: RuntimeError", (max_lines, lines)


def _handled_at_length(handler_frames: int, marker: str, root: str = "src/pkg/store.py") -> str:
    """``_chained``'s failure with a chain line ``marker`` and a handling exception whose
    traceback runs through ``handler_frames`` frames of the project's code: what pytest
    writes when a regex typo raises ``re.error`` and the code handling it raises
    ``NotImplementedError`` several calls down."""
    root_part = _chained(21, "RuntimeError").split("\nDuring handling")[0].replace("src/pkg/store.py", root)
    frames = []
    for i in range(handler_frames):
        frames += [
            "",
            f"    def handle_{i}(self):",
            f">       return self.handle_{i + 1}()",
            "",
            f"src/pkg/handlers.py:{10 + i}: ",
            "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ ",
        ]
    final = [
        "",
        "    def handle_last(self):",
        ">       raise NotImplementedError('no handler')",
        "E       NotImplementedError: no handler",
        "",
        "src/pkg/handlers.py:99: NotImplementedError",
    ]
    return "\n".join([root_part, "", marker, "", "    def test_lookup():", ">       store.handle_0()", *frames, *final])


@pytest.mark.parametrize(
    "marker",
    [
        "During handling of the above exception, another exception occurred:",
        "The above exception was the direct cause of the following exception:",
    ],
)
@pytest.mark.parametrize("root", ["src/pkg/store.py", "/usr/lib/python3.11/re/_parser.py"])
@pytest.mark.parametrize("max_lines", [8, 12, 20, 40])
def test_a_chain_line_in_the_omitted_middle_stays_between_the_exceptions_it_joins(tmp_path, marker, root, max_lines):
    """When the cut leaves out the middle of a chained traceback, the line that says how
    the two exceptions are joined stays in its place, between a marker for what comes
    before and one for what comes after, within the budget and with the final
    exception's line last, in both backends alike: for a root cause in the project's code
    (the chained cut) and in the standard library (the plain head and tail)."""
    text = _handled_at_length(max_lines, marker, root)
    assert len(text.split("\n")) > 3 * max_lines  # the marker would sit in the omitted middle
    case = _case("test_lookup", "NotImplementedError: no handler", text, "tests/test_store.py")
    s = summary_in_both(_junit(tmp_path / "r.xml", [case]), project=PROJECT, max_traceback_lines=max_lines)
    lines = s["failures"][0]["traceback"].split("\n")
    assert len(lines) <= max_lines, lines
    assert lines[-1] == "src/pkg/handlers.py:99: NotImplementedError", lines
    assert marker in lines, lines
    at = lines.index(marker)
    # just before it, the root cause's crash line and the two blank lines pytest prints
    crash = "src/pkg/store.py" if root.startswith("src/") else "<stdlib>/re/_parser.py"
    assert lines[at - 3 : at] == [f"{crash}:21: KeyError", "", ""], lines
    assert any(line.startswith("... [") for line in lines[at + 1 :]), lines


_DOCTEST_LINES = [
    "Expected:",
    "Got:",
    "Expected nothing",
    "Got nothing",
    "UNEXPECTED EXCEPTION: ValueError('x')",
    "Traceback (most recent call last):",
    '  File "src/pkg/store.py", line 3, in f',
    '  File "<doctest pkg.store.f[0]>", line 1, in <module>',
    "    return g()",
    "ValueError: x",
    "KeyError",
    "pkg.Error: a: b",
    "002 >>> f()",
    "1234     >>> g(1)",
    "??? >>> h()",
    "003 ... more",
    "    'a'",
    "",
    " ",
    "src/pkg/store.py:3: DocTestFailure",
    "src/pkg/store.py:3: UnexpectedException",
    "E       x",
]


@needs_native
@settings(max_examples=1500, deadline=None)
@given(
    lines=st.lists(st.one_of(st.sampled_from(_DOCTEST_LINES), st.text(max_size=8)), max_size=14),
    ending=st.sampled_from(["src/pkg/store.py:3: DocTestFailure", "src/pkg/store.py:3: UnexpectedException", ""]),
    newline=st.sampled_from(["\n", "\r\n"]),
)
def test_doctest_reading_parity(lines, ending, newline):
    """Any text ending the way pytest ends a doctest's failure (or not) is read alike by
    both backends: the view (example, Expected/Got message, raised exception) or none."""
    summaries_agree(newline.join([*lines, ending]), None, PAIR)
    summaries_agree(newline.join([*lines, ending]), "DocTestFailure", PAIR)


@needs_native
@settings(max_examples=300, deadline=None)
@given(
    path=paths,
    frames=st.lists(paths, min_size=1, max_size=4),
    root=roots,
    packages=st.lists(st.sampled_from(["pkg", "single", "x"]), max_size=3),
)
def test_warnings_show_and_classify_paths_alike_in_both_backends(tmp_path_factory, path, frames, root, packages):
    """A report log's warnings are located by the *Project code* rules (a warning's
    ``filename`` shown; an unhandled-exception warning's traceback cut to the project's
    frames, its location the innermost kept one): both backends write the same bytes
    for any paths and project."""
    traceback = "\n".join(f'  File "{frame}", line 3, in f\n    x()' for frame in frames)
    lines = [
        {"$report_type": "SessionStart", "root": root},
        {"$report_type": "WarningMessage", "category": "UserWarning", "message": "m", "filename": path, "lineno": 7},
        {
            "$report_type": "WarningMessage",
            "category": "PytestUnhandledThreadExceptionWarning",
            "message": f"Exception in thread T\nTraceback (most recent call last):\n{traceback}\nValueError: v",
            "filename": path,
            "lineno": 1,
        },
    ]
    log = tmp_path_factory.mktemp("warnings") / "r.jsonl"
    log.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    summary_in_both(log, project=ProjectCode(root=root, packages=tuple(packages)))
