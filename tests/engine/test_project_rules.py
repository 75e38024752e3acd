"""The engine's project-code rules in both backends (docs/ENGINE.md, *Project code*,
*Groups*, *Failures*): which frames are the project's own code wherever it is installed,
how a traceback keeps and shows them, where a failure is located, how failures group by
cause, and the order failures are listed in.

Concrete cases are worked out by hand from the rules; hypothesis runs feed the same
random frame paths to both backends (in a failure's traceback: the native rules are read
off summaries, see ``rule_probes``) and demand identical results.
"""

from __future__ import annotations

import orjson
import pytest
from helpers.backends import needs_native, summary_in_both
from helpers.rule_probes import summaries_agree
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mcp_server.engine import native_available
from pytest_mcp_server.engine.models import ProjectCode
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
