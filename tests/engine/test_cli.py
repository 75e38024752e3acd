"""The console script's `summarize` command, run as a real subprocess on real reports.

Expected counts of the bundled demo reports come from the demo project's tests
(examples/demo_project/tests/test_orders.py) and pytest's own summary line for that run,
"3 failed, 6 passed, 2 skipped, 1 xfailed, 1 xpassed, 2 errors": pytest counts
test_releases_resource (call passed, teardown error) as a pass *and* an error; the engine
counts each test once with its worst outcome, so it is one error and 5 tests pass. JUnit
has no xpass information (pytest writes a non-strict xpass as a plain pass), so the JUnit
report has 6 passed and 0 xpassed.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mcp_server.domain.policy import SERVER_NAME

ROOT = Path(__file__).resolve().parents[2]
DEMO_JUNIT = ROOT / "examples" / "reports" / "demo.junit.xml"
DEMO_JSON = ROOT / "examples" / "reports" / "demo.report.json"

BACKENDS = ["pure"] + (["native"] if __import__("pytest_mcp_server.engine").engine.native_available() else [])


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_mcp_server", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_json_report_of_the_demo_has_exact_counts_and_exit_1(backend):
    proc = run_cli("summarize", "--json", "--backend", backend, str(DEMO_JSON))
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["format"] == "pytest-json"
    assert summary["counts"] == {
        "total": 14,
        "passed": 5,
        "failed": 3,
        "errors": 2,
        "skipped": 2,
        "xfailed": 1,
        "xpassed": 1,
        "flaky": 0,
        "subtests_passed": 0,
        "subtests_failed": 0,
        "passed_with_failed_subtests": 0,
    }
    by_id = {f["node_id"]: f for f in summary["failures"]}
    assert set(by_id) == {
        "tests/test_orders.py::test_order_totals",
        "tests/test_orders.py::test_uses_database",
        "tests/test_orders.py::test_releases_resource",
        "tests/test_orders.py::TestInventory::test_stock_never_negative",
        "tests/test_orders.py::TestInventory::test_lookup",
    }
    assert by_id["tests/test_orders.py::test_uses_database"]["phase"] == "setup"
    assert by_id["tests/test_orders.py::test_uses_database"]["exception"] == "ConnectionError"
    assert by_id["tests/test_orders.py::test_releases_resource"]["phase"] == "teardown"
    assert by_id["tests/test_orders.py::TestInventory::test_lookup"]["exception"] == "KeyError"


@pytest.mark.parametrize("backend", BACKENDS)
def test_junit_report_of_the_demo_has_exact_counts_and_pytest_node_ids(backend):
    proc = run_cli("summarize", "--json", "--backend", backend, str(DEMO_JUNIT))
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["format"] == "junit"
    assert summary["counts"] == {
        "total": 14,
        "passed": 6,
        "failed": 3,
        "errors": 2,
        "skipped": 2,
        "xfailed": 1,
        "xpassed": 0,
        "flaky": 0,
        "subtests_passed": 0,
        "subtests_failed": 0,
        "passed_with_failed_subtests": 0,
    }
    ids = [f["node_id"] for f in summary["failures"]]
    assert "tests/test_orders.py::TestInventory::test_lookup" in ids
    assert "tests/test_orders.py::test_order_totals" in ids


def test_text_output_starts_with_the_verdict_and_names_failures_with_locations():
    proc = run_cli("summarize", str(DEMO_JSON))
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0]
    assert first.startswith("FAILED 3 failed, 5 passed, 2 errors, 2 skipped, 1 xfailed, 1 xpassed in ")
    assert "tests/test_orders.py::TestInventory::test_lookup" in proc.stdout
    assert "KeyError" in proc.stdout
    assert "test_discount_applies" not in proc.stdout  # passing tests are never listed
    assert len(proc.stdout.encode()) < 8192


def test_backends_print_identical_json():
    outs = {
        b: run_cli("summarize", "--json", "--backend", b, str(DEMO_JUNIT), str(DEMO_JUNIT)).stdout for b in BACKENDS
    }
    assert len(set(outs.values())) == 1


def test_shards_merge_into_one_summary():
    proc = run_cli("summarize", "--json", str(DEMO_JUNIT), str(DEMO_JUNIT))
    summary = json.loads(proc.stdout)
    assert summary["counts"]["total"] == 28
    assert summary["files"] == [str(DEMO_JUNIT), str(DEMO_JUNIT)]


def test_a_green_report_exits_0(tmp_path):
    report = tmp_path / "green.xml"
    report.write_text(
        '<testsuite name="pytest" tests="2"><testcase classname="tests.test_a" name="test_one" time="0.5"/>'
        '<testcase classname="tests.test_a" name="test_two" time="0,25"/></testsuite>'
    )
    proc = run_cli("summarize", str(report))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("PASSED 2 passed in 0.75s")


@pytest.mark.parametrize(
    "name, content, kind",
    [
        ("empty.xml", b"", "not_a_report"),
        ("text.txt", b"hello world\n", "not_a_report"),
        ("nunit.xml", b'<?xml version="1.0"?><test-run id="2"></test-run>', "not_a_report"),
        ("cut.xml", b'<testsuite><testcase name="a">', "malformed"),
        (
            "xxe.xml",
            b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuite>&x;</testsuite>',
            "forbidden",
        ),
    ],
)
def test_unreadable_inputs_exit_2_with_a_message_and_no_stdout(tmp_path, name, content, kind):
    path = tmp_path / name
    path.write_bytes(content)
    proc = run_cli("summarize", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert kind in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_file_exits_2():
    proc = run_cli("summarize", "/nonexistent/report.xml")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "not_found" in proc.stderr


@pytest.mark.parametrize(
    "word, hint",
    [("sumarize", "did you mean 'summarize'? "), ("srve", "did you mean 'serve'? "), ("frobnicate", "")],
)
def test_an_unknown_command_exits_2_naming_the_commands(word, hint):
    """A mistyped command is not taken for ``serve``'s arguments: the error names it, the
    nearest command when there is one, and every command."""
    proc = run_cli(word, "x")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"pytest-mcp-server: error: unknown command {word!r}; {hint}the commands are serve, summarize, bench "
        "(serve is the default: pytest-mcp-server --root DIR)\n"
    )


def test_bad_budget_exits_2_naming_the_flag():
    proc = run_cli("summarize", "--max-traceback-lines", "1", str(DEMO_JUNIT))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "--max-traceback-lines" in proc.stderr


def test_importing_the_package_does_not_import_the_mcp_sdk():
    code = "import sys, pytest_mcp_server; pytest_mcp_server.summarize; print('mcp' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr


def test_later_failures_of_a_group_are_node_ids_or_one_line(tmp_path):
    """render.py: full detail once per group; a listed group's later failures are one
    'also in' line (their count and the group's other examples, written after the
    entry's file); those of groups cut from the list (--max-groups 1) get a header and
    a message line each, no traceback."""
    causes = [("KeyError", 4), ("ValueError", 3), ("TimeoutError", 2)]  # group sizes, largest first
    cases = []
    for cause, (exc, n) in enumerate(causes):
        for i in range(n):
            # One assertion site per cause (the engine groups by site and message).
            body = (
                f"def test_{exc}_{i}():\n&gt;       raise {exc}('x')\nE       {exc}: x [trace {exc}-{i}]\n"
                f"\ntests/test_m.py:{10 * (cause + 1)}: {exc}"
            )
            cases.append(
                f'<testcase classname="tests.test_m" name="test_{exc}_{i}" file="tests/test_m.py" time="0.1">'
                f'<failure message="{exc}: x" type="{exc}">{body}</failure></testcase>'
            )
    report = tmp_path / "r.xml"
    report.write_text(f'<testsuite tests="{len(cases)}">{"".join(cases)}</testsuite>')
    for backend in BACKENDS:
        out = run_cli("summarize", str(report), "--backend", backend, "--max-groups", "1")
        assert out.returncode == 1, out.stderr
        text = out.stdout
        # every failure is listed, so the groups cut from the group list are all shown (by their entries)
        assert "more groups" not in text and "Omitted" not in text, text
        # KeyError is the one listed group: its first failure in full, then its 3 others
        # counted, with the group's other examples (max_examples 3, the entry's among them)
        assert text.count("[trace KeyError-") == 1
        also = [line for line in text.splitlines() if line.startswith(" also in ")]
        assert also == [" also in 3 more: test_KeyError_1, test_KeyError_2, ..."], text
        # the groups cut from the list: the first failure of each in full, the rest one line each
        for cause, (exc, n) in enumerate(causes[1:], start=1):
            assert text.count(f"[trace {exc}-") == 1, text
            for i in range(1, n):
                # located at the failing line of the test (the deepest frame of the project's code)
                entry = f"- FAILED tests/test_m.py::test_{exc}_{i}  at tests/test_m.py:{10 * (cause + 1)}\n {exc}: x\n"
                assert entry in text and text.count(f"test_{exc}_{i}") == 1, text


SERVE_ONLY_MODULES = (
    "ssl",
    "platformdirs",
    "pytest_mcp_server.domain.config",
    "pytest_mcp_server.domain.validation",
    "pytest_mcp_server.adapters.mcp.http_policy",
)


def test_summarize_loads_nothing_only_serving_needs_and_no_openssl():
    """``summarize`` loads none of what only serving needs: the server's configuration,
    HTTP policy and option messages (about 1 MB with pydantic's validators), the user
    directories the server keeps reports in, TLS; and no OpenSSL (about 4 MB), not even
    when ``secrets`` is imported, as pydantic 2.14 and later do with any model: hashes
    then come from CPython's built-in implementations and still work. Each of these adds
    to the command's peak RSS (benches/RESULTS.md section 8)."""
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['pytest-mcp-server', 'summarize', sys.argv[1]]\n"
        "try:\n    runpy.run_module('pytest_mcp_server', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "import hashlib, secrets\n"
        "assert hashlib.sha256(b'abc').hexdigest().startswith('ba7816bf') and len(secrets.token_hex(4)) == 8\n"
        "mapped = open('/proc/self/maps').read()\n"
        f"loaded = [m for m in {SERVE_ONLY_MODULES!r} + ('_hashlib',) if sys.modules.get(m) is not None]\n"
        "print(loaded, 'libcrypto' in mapped or 'libssl' in mapped)"
    )
    proc = subprocess.run([sys.executable, "-c", probe, str(DEMO_JUNIT)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[] False", proc.stdout


def test_version_names_the_distribution_and_its_version():
    """``--version`` (looked up only when asked for) prints the distribution name and the
    installed version on stdout."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_mcp_server", "--version"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.startswith(f"{SERVER_NAME} "), proc.stdout + proc.stderr


@pytest.mark.parametrize("where", ["a file", "below a file"])
def test_an_artifacts_dir_that_cannot_be_created_is_refused_at_start(tmp_path, where):
    """The server writes every run's reports into ``--artifacts-dir``: one it cannot
    create or write is refused before it serves, with exit status 2, naming the option
    and the path, as a bad ``--root`` is (not answered later as an internal error)."""
    (tmp_path / "proj").mkdir()
    blocker = tmp_path / "taken"
    blocker.write_text("a file, not a directory\n")
    artifacts = blocker if where == "a file" else blocker / "artifacts"
    proc = run_cli("--root", str(tmp_path / "proj"), "--artifacts-dir", str(artifacts))
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    assert "--artifacts-dir" in proc.stderr and str(artifacts) in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_console_script_exits_with_named_statuses_only():
    """``cli.py`` returns and exits with ``domain.exits.CommandExit`` members, never a bare
    number (``return 2`` for a usage error is what it must not say)."""
    import ast

    tree = ast.parse((ROOT / "src" / "pytest_mcp_server" / "cli.py").read_text(encoding="utf-8"))
    bare = []
    for node in ast.walk(tree):
        value = None
        if isinstance(node, ast.Return):
            value = node.value
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.exit", "SystemExit", "exit") and node.args:
            value = node.args[0]
        if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
            bare.append(f"cli.py:{node.lineno}: {ast.unparse(node)}")
    assert not bare, "\n".join(bare)
