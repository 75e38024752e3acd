"""pytest plugin that names subtests in the JUnit XML of the runs pytest-mcp-server starts.

Not for users: the server passes ``-p pytest_mcp_server_subtests`` with ``--junitxml``.
It imports nothing but pytest (Python 3.8+, pytest 7+).

pytest 9 writes one ``<failure>`` per failed subtest (unittest's ``subTest``, the
``subtests`` fixture) but neither the subtests' labels nor the passed ones; and
pytest-json-report keeps one entry per node id, so subtest failures vanish from it. For
each subtest report this plugin adds to its test a user property
``pytest_mcp_server.subtest`` = ``"<passed|failed> <label>"`` (the label as pytest prints
it: ``[msg] (i=1)``), which JUnit XML writes as a ``<property>`` of the testcase, before its
results (docs/ENGINE.md, *Subtests*). The properties are held back until the test's
teardown starts, in subtest order: pytest's JUnit XML reads a test's properties from its
teardown report only, and every report made during the call copies the test's
properties (a subtest report also serialises them), so adding one per subtest as it
reports costs time quadratic in a test's subtests (7 s more on more-itertools' 21,194).

At the first subtest report it creates an empty file ``subtests`` (``MARKER_NAME``) next
to the JUnit report, so the server knows to read that report rather than the JSON one.
"""

# Annotations stay unevaluated strings, so the ``X | None`` spellings below also work on Python 3.8.
from __future__ import annotations

import os

import pytest

SUBTEST_PROPERTY = "pytest_mcp_server.subtest"
MARKER_NAME = "subtests"


def subtest_label(report: object) -> str | None:
    """The label of a subtest report as pytest prints it (``[msg] (k=v, ...)``), or None
    when ``report`` is not a subtest report (pytest 9's ``SubtestReport``, pytest-subtests'
    ``SubTestReport``: both carry ``context.msg`` and ``context.kwargs``)."""
    context = getattr(report, "context", None)
    if context is None or not hasattr(context, "kwargs"):
        return None
    parts = []
    if getattr(context, "msg", None) is not None:
        parts.append(f"[{context.msg}]")
    if context.kwargs:
        parts.append("(" + ", ".join(f"{k}={v}" for k, v in context.kwargs.items()) + ")")
    return " ".join(parts) or "(<subtest>)"


class _SubtestNamer:
    def __init__(self, marker: str | None) -> None:
        self.marker = marker
        self.item: pytest.Item | None = None
        self.pending: list[tuple[str, str]] = []  # the running test's subtest properties, in order

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> None:
        self.item = item
        self.pending = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        # before the teardown report is made: it carries the properties JUnit XML writes
        if self.pending and item is self.item:
            item.user_properties.extend(self.pending)
            self.pending = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":  # a subtest reports in the call stage: setup and teardown end here, cheaply
            return
        label = subtest_label(report)
        item = self.item
        if label is None or item is None or item.nodeid != report.nodeid:
            return
        if report.failed:
            outcome = "failed"
        elif report.passed:
            outcome = "passed"
        else:
            return
        self.pending.append((SUBTEST_PROPERTY, f"{outcome} {label}"))
        if self.marker is not None:
            # pytest makes the JUnit report's directory only when it writes the report
            os.makedirs(os.path.dirname(self.marker), exist_ok=True)
            open(self.marker, "a").close()
            self.marker = None


def pytest_configure(config: pytest.Config) -> None:
    junit = getattr(config.option, "xmlpath", None)  # --junitxml
    marker = os.path.join(os.path.dirname(os.path.abspath(junit)), MARKER_NAME) if junit else None
    config.pluginmanager.register(_SubtestNamer(marker), "pytest-mcp-subtests")
