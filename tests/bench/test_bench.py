"""The benchmark code paths at tiny sizes (no timing asserts: speed lives in benches/).

The generator's truth is checked against independent counts (xml.etree, json) and, where
the engine works, against ``summarize`` on both backends: a correctness check of the
generator and of the engine on realistic content.
"""

from __future__ import annotations

import collections
import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.provenance import check_provenance

from pytest_mcp_server.bench import generate as gen

SIZE = 1_000_000  # bytes: a few thousand tests, about a hundred failures


def _etree_counts(path: Path) -> dict[str, int]:
    """Outcome counts of a JUnit file by the engine's rules (no retries in the generator)."""
    c: collections.Counter[str] = collections.Counter()
    for _, el in ET.iterparse(path):
        if el.tag != "testcase":
            continue
        kids = {k.tag: k for k in el}
        if "error" in kids:
            c["errors"] += 1
        elif "failure" in kids:
            c["failed"] += 1
        elif "skipped" in kids:
            c["xfailed" if kids["skipped"].get("type") == "pytest.xfail" else "skipped"] += 1
        else:
            c["passed"] += 1
    return dict(c)


def _json_counts(path: Path) -> dict[str, int]:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    names = {"error": "errors"}
    c: collections.Counter[str] = collections.Counter(names.get(t["outcome"], t["outcome"]) for t in doc["tests"])
    c["errors"] += sum(1 for col in doc["collectors"] if col["outcome"] == "failed")
    return dict(c)


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v and k not in ("total", "flaky")}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    d = tmp_path_factory.mktemp("gen")
    # more errors and collection errors than the default mix, so a small file has each kind
    mix = gen.Mix(collection_error=0.5, error=0.05, failed=0.05, xpassed=0.01)
    out = {}
    for fmt, name in (("junit", "r.xml"), ("pytest-json", "r.json")):
        path = d / name
        truth = gen.generate(path, fmt, SIZE, seed=7, mix=mix)
        out[fmt] = (path, truth)
    return out


@pytest.mark.parametrize("fmt", gen.FORMATS)
def test_truth_matches_independent_count(reports, fmt):
    path, truth = reports[fmt]
    counted = _etree_counts(path) if fmt == "junit" else _json_counts(path)
    assert counted == _nonzero(truth["counts"])
    assert truth["counts"]["total"] == sum(counted.values())
    assert truth["collection_errors"] > 0
    assert truth["counts"]["failed"] > 0 and truth["counts"]["errors"] > truth["collection_errors"]
    assert json.loads(Path(gen.truth_path(path)).read_text()) == truth


@pytest.mark.parametrize("fmt", gen.FORMATS)
def test_size_close_to_target(reports, fmt):
    path, truth = reports[fmt]
    assert path.stat().st_size == truth["bytes"]
    assert SIZE <= truth["bytes"] < SIZE + 40_000  # at most one test past the target


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    digests = []
    for i, seed in enumerate((1, 1, 2)):
        p = tmp_path / f"{i}.xml"
        gen.generate(p, "junit", 100_000, seed=seed)
        digests.append(hashlib.sha256(p.read_bytes()).hexdigest())
    assert digests[0] == digests[1] != digests[2]


def test_junit_content_is_pytest_like(reports):
    path, truth = reports["junit"]
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = list(root)
    assert suite.get("name") == "pytest"
    assert int(suite.get("tests")) == truth["counts"]["total"]
    assert int(suite.get("failures")) == truth["counts"]["failed"]
    assert int(suite.get("errors")) == truth["counts"]["errors"]
    cases = list(suite.iter("testcase"))
    names = [c.get("name") for c in cases]
    assert any("<" in n or "&" in n or '"' in n for n in names), "escaped characters in names"
    failures = [c.find("failure") for c in cases if c.find("failure") is not None]
    lengths = [f.text.count("\n") + 1 for f in failures]
    assert min(lengths) >= 30 and max(lengths) <= 200
    assert any(line.startswith("E   ") for f in failures for line in f.text.splitlines())
    assert any("/site-packages/" in f.text for f in failures)
    setup = [c.find("error").get("message") for c in cases if c.find("error") is not None]
    assert any(m.startswith('failed on setup with "') for m in setup)
    assert any(m.startswith('failed on teardown with "') for m in setup)
    assert any(m == "collection failure" for m in setup)
    assert any(c.find("system-out") is not None for c in cases)
    xfails = [c for c in cases if c.find("skipped") is not None and c.find("skipped").get("type") == "pytest.xfail"]
    assert xfails
    # pytest's node-id rule: classname tests.pkg.test_mod[.TestClass]
    assert all(c.get("classname").startswith("tests.") for c in cases if c.get("classname"))
    assert truth["duration_us"] == sum(round(float(c.get("time")) * 1e6) for c in cases)


def test_pytest_json_content_is_plugin_like(reports):
    path, truth = reports["pytest-json"]
    doc = json.loads(path.read_bytes())
    assert list(doc) == ["created", "duration", "exitcode", "root", "environment", "summary", "collectors", "tests"]
    assert doc["summary"]["total"] == truth["counts"]["total"]
    by = collections.defaultdict(list)
    for t in doc["tests"]:
        by[t["outcome"]].append(t)
    assert set(by) == {"passed", "failed", "error", "skipped", "xfailed", "xpassed"}
    f = by["failed"][0]
    assert f["call"]["outcome"] == "failed" and f["call"]["crash"]["message"] and f["call"]["traceback"]
    assert 30 <= f["call"]["longrepr"].count("\n") + 1 <= 200
    assert all("call" not in t for t in by["skipped"])
    errs = by["error"]
    assert any(t["setup"]["outcome"] == "failed" and "call" not in t for t in errs)
    assert any(t["teardown"]["outcome"] == "failed" for t in errs)
    assert any("stdout" in t.get("call", {}) for t in doc["tests"])
    assert any('"' in t["nodeid"] or "<" in t["nodeid"] for t in doc["tests"])
    total_us = sum(
        gen.duration_us(t[ph]["duration"]) for t in doc["tests"] for ph in ("setup", "call", "teardown") if ph in t
    )
    assert total_us == truth["duration_us"]
    module_collectors = [c for c in doc["collectors"] if c["nodeid"].endswith(".py")]
    listed = {r["nodeid"] for c in doc["collectors"] for r in c["result"] if r["type"] == "Function"}
    assert listed == {t["nodeid"] for t in doc["tests"]}
    assert module_collectors


def test_shards_have_distinct_node_ids(tmp_path):
    ids = []
    for i in range(2):
        p = tmp_path / f"s{i}.json"
        gen.generate(p, "pytest-json", 50_000, seed=3 + i, module_offset=i * 100_000)
        ids.append({t["nodeid"] for t in json.loads(p.read_bytes())["tests"]})
    assert ids[0] and ids[1] and not ids[0] & ids[1]


def test_parse_size():
    assert gen.parse_size("10MB") == 10_000_000
    assert gen.parse_size("1GB") == 10**9
    assert gen.parse_size("64KiB") == 65536
    assert gen.parse_size("1.5MB") == 1_500_000
    assert gen.parse_size("5000") == 5000
    assert gen.format_size(10**8) == "100MB"
    with pytest.raises(ValueError):
        gen.parse_size("ten MB")
    with pytest.raises(ValueError):
        gen.generate("/nonexistent/x", "yaml", 10_000)


# ---------------------------------------------------------------------------------------
# The engine against the generator's truth (both backends)


@pytest.mark.parametrize("backend", ["native", "pure"])
@pytest.mark.parametrize("fmt", gen.FORMATS)
def test_summarize_counts_equal_truth(reports, fmt, backend):
    from pytest_mcp_server import summarize

    path, truth = reports[fmt]
    summary = summarize(path, backend=backend)
    assert summary.format == fmt
    assert summary.counts.model_dump() == truth["counts"]
    assert round(summary.tests_duration_s * 1e6) == truth["duration_us"]
    assert len(summary.collection_errors) == truth["collection_errors"]
    first = truth["first_failure"]
    if first.endswith(".py"):  # a module that failed to collect
        assert summary.collection_errors[0].path == first
    else:
        assert summary.failures[0].node_id == first


# ---------------------------------------------------------------------------------------
# The bench command's modes at tiny sizes (code paths only: no timing is asserted)


def _bench(capsys, *argv: str) -> tuple[int, dict]:
    from pytest_mcp_server.bench import main

    code = main([*argv, "--json", "--no-progress"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_bench_reports_tiny(tmp_path, capsys):
    plot = tmp_path / "plot.png"
    saved = tmp_path / "saved.json"
    argv = [
        "reports",
        "--sizes",
        "200kB,300kB",
        "--reps",
        "1",
        "--warmup",
        "0",
        "--cache-dir",
        str(tmp_path),
        "--save",
        str(saved),
    ]
    try:
        import matplotlib  # noqa: F401

        argv += ["--plot", str(plot)]
    except ImportError:
        plot = None
    code, doc = _bench(capsys, *argv)
    rows = doc["rows"]
    check_provenance(json.loads(saved.read_text())["provenance"])
    from pytest_mcp_server.bench.parsers import PARSERS, available

    expected = [(size, fmt, p[0]) for size in ("200kB", "300kB") for fmt in gen.FORMATS for p in PARSERS[fmt]]
    assert [(r["size"], r["format"], r["parser"]) for r in rows] == expected
    for r in rows:
        if not available(next(p for p in PARSERS[r["format"]] if p[0] == r["parser"])):
            assert r["error"] == "not installed"
            continue
        assert r["ok"], r["error"]
        assert r["truth_ok"], (r["parser"], r["mismatch"])
        assert r["reps"] == 1 and r["median_s"] > 0 and r["mb_s"] > 0
        assert r["peak_rss"] >= r["baseline_rss"] > 0
    native = [r for r in rows if r["parser"] == "native"]
    assert all(r["vs_native"] == 1.0 for r in native)
    assert code == 0
    targets = {(t["format"], t["size"], t["target"].split(" (")[0]) for t in doc["targets"]}
    assert ("junit", "300kB", "native >= 400 MB/s") in targets
    assert ("pytest-json", "200kB", "native >= 10x pure") in targets
    assert ("junit", "200kB-300kB", "native peak RSS <= 64 MiB") in targets
    if plot is not None:
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(saved.read_text()) == doc
    from pytest_mcp_server.bench import main

    assert main(["markdown", str(saved)]) == 0
    md = capsys.readouterr().out
    lines = md.splitlines()
    for r in rows:
        (line,) = [x for x in lines if x.startswith(f"| {r['format']} | {r['size']} | {r['parser']} |")]
        assert line.endswith("| ok |" if r.get("truth_ok") else "| not installed |")
    # cached: a second run does not regenerate (same file, same mtime)
    f = Path(rows[0]["file"])
    mtime = f.stat().st_mtime_ns
    code, _ = _bench(
        capsys,
        "reports",
        "--sizes",
        "200kB",
        "--formats",
        "junit",
        "--parsers",
        "etree",
        "--reps",
        "1",
        "--warmup",
        "0",
        "--cache-dir",
        str(tmp_path),
    )
    assert code == 0 and f.stat().st_mtime_ns == mtime


def test_bench_marks_a_failing_parser_and_wrong_counts(tmp_path, capsys):
    from pytest_mcp_server.bench import common, render

    path = tmp_path / "r.xml"
    truth = gen.generate(path, "junit", 50_000)
    res = common.spawn(
        {
            "fmt": "junit",
            "parser": "etree",
            "paths": [str(tmp_path / "missing.xml")],
            "warmup": 0,
            "reps": 1,
            "mem_limit": 0,
        },
        timeout=60,
    )
    assert res["ok"] is False and "missing.xml" in res["error"]
    res = common.spawn(
        {"fmt": "junit", "parser": "etree", "paths": [str(path)], "warmup": 0, "reps": 1, "mem_limit": 0}, timeout=60
    )
    assert res["ok"] and common.check_counts(res["counts"], truth) == (True, {})
    wrong = json.loads(json.dumps(truth))
    wrong["counts"]["failed"] += 1
    ok, bad = common.check_counts(res["counts"], wrong)
    assert ok is False and bad == {"failed": [truth["counts"]["failed"], truth["counts"]["failed"] + 1]}
    row = {"ok": True, "truth_ok": ok, "mismatch": bad}
    assert render.counts_cell(row).startswith("WRONG: failed ")


def test_bench_shards_tiny(tmp_path, capsys):
    code, doc = _bench(
        capsys,
        "shards",
        "--files",
        "3",
        "--shard-size",
        "100kB",
        "--reps",
        "1",
        "--warmup",
        "0",
        "--cache-dir",
        str(tmp_path),
        "--modes",
        "native-parallel,native-1-thread,native-one-by-one,pure",
    )
    rows = doc["rows"]
    assert [(r["format"], r["parser"]) for r in rows] == [
        (fmt, m) for fmt in gen.FORMATS for m in ("native-parallel", "native-1-thread", "native-one-by-one", "pure")
    ]
    for r in rows:
        assert r["ok"], r["error"]
        assert r["truth_ok"], (r["parser"], r["mismatch"])
        assert r["threads"] >= 1
    assert code == 0
    assert [t["target"] for t in doc["targets"]] == ["parallel merge >= 1.7x one-by-one"] * 2


TINY_SUITE = ("--tests", "120", "--reps", "1", "--warmup", "0", "--timeout", "300")
"""A suite small enough for a test: 120 tests, one timed round, no warm-up."""


def test_bench_suite_tiny(tmp_path, capsys):
    code, doc = _bench(capsys, "suite", *TINY_SUITE, "--cache-dir", str(tmp_path))
    rows = {r["way"]: r for r in doc["rows"]}
    assert list(rows) == ["pytest", "mcp", "cli"]
    truth = json.loads((tmp_path / "suite-120-s20240611-v1.truth.json").read_text())
    assert truth["counts"]["total"] == 120
    for way, r in rows.items():
        assert r["ok"], (way, r["error"])
        assert r["truth_ok"], (way, r["mismatch"])
        assert r["agent_bytes"] > 0 and r["median_s"] > 0
    assert rows["mcp"]["startup_s"] > 0 and rows["mcp"]["structured_bytes"] > 0
    assert "added_pct" in rows["mcp"]
    assert code == 0


def test_bench_suite_says_why_the_server_did_not_answer(tmp_path, capsys, monkeypatch):
    # a package of the same name first on the server's PYTHONPATH: `python -m pytest_mcp_server`
    # exits before answering initialize; the SDK's client reports the lost connection in the
    # mcp row, and plain pytest (which never imports the server) is still measured
    shadow = tmp_path / "shadow" / "pytest_mcp_server"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    (shadow / "__main__.py").write_text("import sys\nsys.exit('not the server')\n")
    monkeypatch.setenv("PYTHONPATH", str(shadow.parent))
    code, doc = _bench(capsys, "suite", *TINY_SUITE, "--ways", "pytest,mcp", "--cache-dir", str(tmp_path))
    rows = {r["way"]: r for r in doc["rows"]}
    assert not rows["mcp"]["ok"] and rows["mcp"]["times_s"] == []
    assert rows["mcp"]["error"].startswith("MCPError: "), rows["mcp"]["error"]
    assert rows["pytest"]["ok"] and rows["pytest"]["truth_ok"] and len(rows["pytest"]["times_s"]) == 1
    assert code == 1  # a way that did not run fails the command
