"""The parsers a benchmark times: this project's two backends and the usual alternatives.

Every parser is a function ``paths -> counts`` where ``counts`` maps ``passed, failed,
errors, skipped, xfailed, xpassed`` (and ``total``; the engine's backends also give
``flaky`` and ``duration_us``) to integers, by the engine's rules (docs/ENGINE.md,
*Counts*) as far as the parser can tell them:

* JUnit XML: a ``testcase`` with an ``error`` child is ``errors``, else with a
  ``failure`` child ``failed``, else with ``skipped`` ``xfailed`` when its type is
  ``pytest.xfail``, else ``skipped``; otherwise ``passed`` (JUnit XML has no xpass).
* pytest-json-report: each ``tests`` entry by its ``outcome`` (``error`` is ``errors``),
  plus one ``errors`` per collector whose outcome is ``failed``.

The alternatives do only that minimal work (they build no summary), so their times are a
lower bound of what a summary built on them would cost. Each is imported lazily: a
parser whose library is missing is reported as unavailable, not as a failure.

``PARSERS[fmt]`` lists ``(name, description, function, module_needed)`` in display order.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

Counts = dict[str, int]
OUTCOMES = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")


def _finish(c: dict[str, int]) -> Counts:
    out = {k: c.get(k, 0) for k in OUTCOMES}
    out["total"] = sum(out.values())
    return out


# ---------------------------------------------------------------------------------------
# This project's engine


def _engine(backend: str) -> Callable[[Sequence[str]], Counts]:
    def run(paths: Sequence[str]) -> Counts:
        import orjson

        from pytest_mcp_server.engine import summarize_bytes

        summary = orjson.loads(summarize_bytes(list(paths), backend=backend))  # type: ignore[arg-type]
        counts = dict(summary["counts"])
        counts["duration_us"] = round(summary["tests_duration_s"] * 1e6)
        return counts

    return run


def native_one_by_one(paths: Sequence[str]) -> Counts:
    """The native backend on each file in turn (no merge): the shards baseline."""
    import orjson

    from pytest_mcp_server.engine import summarize_bytes

    total: dict[str, int] = {}
    for p in paths:
        counts = orjson.loads(summarize_bytes([p], backend="native"))["counts"]
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    return total


# ---------------------------------------------------------------------------------------
# JUnit XML alternatives


def _classify(kids: dict[str, Any], skipped_type: str | None) -> str:
    if "error" in kids:
        return "errors"
    if "failure" in kids:
        return "failed"
    if "skipped" in kids:
        return "xfailed" if skipped_type == "pytest.xfail" else "skipped"
    return "passed"


def etree_iterparse(paths: Sequence[str]) -> Counts:
    """``xml.etree.ElementTree.iterparse`` (expat), clearing each finished testcase and
    detaching it from its parent so memory stays flat."""
    import xml.etree.ElementTree as ET

    c: dict[str, int] = {}
    for path in paths:
        stack: list[Any] = []
        for event, el in ET.iterparse(path, events=("start", "end")):
            if event == "start":
                stack.append(el)
                continue
            stack.pop()
            if el.tag == "testcase":
                kids = {k.tag: k for k in el}
                skipped = kids.get("skipped")
                key = _classify(kids, skipped.get("type") if skipped is not None else None)
                c[key] = c.get(key, 0) + 1
                el.clear()
                if stack:
                    stack[-1].remove(el)
    return _finish(c)


def lxml_iterparse(paths: Sequence[str]) -> Counts:
    """``lxml.etree.iterparse(tag="testcase")`` with the usual clear-and-delete-previous
    idiom (``huge_tree`` on, as multi-megabyte texts need it)."""
    from lxml import etree

    c: dict[str, int] = {}
    for path in paths:
        for _, el in etree.iterparse(path, events=("end",), tag="testcase", huge_tree=True):
            kids = {k.tag: k for k in el}
            skipped = kids.get("skipped")
            key = _classify(kids, skipped.get("type") if skipped is not None else None)
            c[key] = c.get(key, 0) + 1
            el.clear(keep_tail=True)
            parent = el.getparent()
            while el.getprevious() is not None:
                del parent[0]
    return _finish(c)


def junitparser_load(paths: Sequence[str]) -> Counts:
    """``junitparser.JUnitXml.fromfile`` (a whole lxml tree) and its result objects."""
    from junitparser import Error, Failure, JUnitXml, Skipped, TestCase

    c: dict[str, int] = {}
    for path in paths:
        xml = JUnitXml.fromfile(path)
        suites = [xml] if xml._tag == "testsuite" else list(xml)
        for suite in suites:
            for case in suite:
                if not isinstance(case, TestCase):  # junitparser 5 types a suite's items as suites or cases
                    continue
                results = case.result
                if any(isinstance(r, Error) for r in results):
                    key = "errors"
                elif any(isinstance(r, Failure) for r in results):
                    key = "failed"
                else:
                    skips = [r for r in results if isinstance(r, Skipped)]
                    if skips:
                        key = "xfailed" if skips[0].type == "pytest.xfail" else "skipped"
                    else:
                        key = "passed"
                c[key] = c.get(key, 0) + 1
        del xml
    return _finish(c)


# ---------------------------------------------------------------------------------------
# pytest-json-report alternatives

_JSON_KEY = {"error": "errors"}


def _count_doc(doc: dict[str, Any], c: dict[str, int]) -> None:
    for t in doc.get("tests", ()):
        key = _JSON_KEY.get(t["outcome"], t["outcome"])
        c[key] = c.get(key, 0) + 1
    failed = sum(1 for col in doc.get("collectors", ()) if col.get("outcome") == "failed")
    c["errors"] = c.get("errors", 0) + failed


def json_load(paths: Sequence[str]) -> Counts:
    """``json.load`` of the whole document (the standard library)."""
    import json

    c: dict[str, int] = {}
    for path in paths:
        with open(path, "rb") as f:
            doc = json.load(f)
        _count_doc(doc, c)
        del doc
    return _finish(c)


def orjson_loads(paths: Sequence[str]) -> Counts:
    """``orjson.loads`` of the whole file read into memory."""
    import orjson

    c: dict[str, int] = {}
    for path in paths:
        with open(path, "rb") as f:
            doc = orjson.loads(f.read())
        _count_doc(doc, c)
        del doc
    return _finish(c)


def ijson_events(paths: Sequence[str]) -> Counts:
    """``ijson.parse`` (the fastest installed backend, yajl2_c when built) streaming the
    events and counting ``tests.item.outcome`` and failed ``collectors.item.outcome``."""
    import ijson

    c: dict[str, int] = {}
    for path in paths:
        with open(path, "rb") as f:
            for prefix, event, value in ijson.parse(f):
                if event == "string":
                    if prefix == "tests.item.outcome":
                        key = _JSON_KEY.get(value, value)
                        c[key] = c.get(key, 0) + 1
                    elif prefix == "collectors.item.outcome" and value == "failed":
                        c["errors"] = c.get("errors", 0) + 1
    return _finish(c)


# ---------------------------------------------------------------------------------------

Parser = tuple[str, str, Callable[[Sequence[str]], Counts], str | None]

PARSERS: dict[str, list[Parser]] = {
    "junit": [
        ("native", "this project, Rust backend", _engine("native"), None),
        ("pure", "this project, Python backend", _engine("pure"), None),
        ("etree", "xml.etree iterparse (count only)", etree_iterparse, None),
        ("lxml", "lxml iterparse (count only)", lxml_iterparse, "lxml"),
        ("junitparser", "junitparser JUnitXml.fromfile", junitparser_load, "junitparser"),
    ],
    "pytest-json": [
        ("native", "this project, Rust backend", _engine("native"), None),
        ("pure", "this project, Python backend", _engine("pure"), None),
        ("json", "json.load (count only)", json_load, None),
        ("orjson", "orjson.loads (count only)", orjson_loads, "orjson"),
        ("ijson", "ijson.parse events (count only)", ijson_events, "ijson"),
    ],
}

# Modes of the shards benchmark (all formats).
SHARD_MODES: list[Parser] = [
    ("native-parallel", "native, all files in one call (parallel parse + merge)", _engine("native"), None),
    ("native-1-thread", "native, one call, RAYON_NUM_THREADS=1", _engine("native"), None),
    ("native-one-by-one", "native, one call per file, no merge", native_one_by_one, None),
    ("pure", "pure backend, all files in one call", _engine("pure"), None),
]


def lookup(fmt: str, name: str) -> Parser:
    """The parser ``name`` of format ``fmt`` (or a shard mode when ``fmt == "shards"``).
    Raises ``KeyError``."""
    table = SHARD_MODES if fmt == "shards" else PARSERS[fmt]
    for p in table:
        if p[0] == name:
            return p
    raise KeyError(f"no parser {name!r} for {fmt}; choose from {[p[0] for p in table]}")


def available(parser: Parser) -> bool:
    """True when the parser's library is importable (the engine's backends: when the
    package imports; ``native`` also needs the extension)."""
    name, _, _, module = parser
    if name.startswith("native"):
        return importlib.util.find_spec("pytest_mcp_server.engine._native") is not None
    return module is None or importlib.util.find_spec(module) is not None
