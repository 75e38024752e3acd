"""The warm start (``run.warm``, docs/SERVER.md *Warm start*): a run served by a spare
process gives the answer a cold run gives, and a spare that is stale, dead, hung or
unsafe leaves the run to a cold start that says so in one line.

The project's "third-party" packages are real distributions in a real venv's
site-packages (a ``.dist-info`` each, one with a ``pytest11`` entry point), and the
server is the real one over stdio: its answers (the typed view) and the record file of
each run are compared, with the values that differ per process or per moment (times,
durations) left out. The project's conftest writes, per pytest session, its pid and
whether a third-party module the tests import was already imported when the conftest
was (``warm``): how a test tells a warm run from a cold one.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import psutil
import pytest
from helpers.interpreters import python_with
from helpers.server_support import connect, pid_alive, run, typed_stdio_server, wait_until_gone
from helpers.warm_support import answer, same_answer
from mcp import StdioServerParameters

CONFTEST = """
import json, os, sys, time
_warm = "markerlib" in sys.modules  # imported by the tests only: there already, it was preloaded
os.environ["ENVLIB_MODE"] = "project"
import envlib  # reads it at import: imported while the environment differs, never preloaded
del os.environ["ENVLIB_MODE"]
with open(os.path.join(os.environ["WARM_TEST_MARKS"], f"session-{os.getpid()}-{time.time_ns()}.json"), "w") as f:
    json.dump({"pid": os.getpid(), "warm": _warm}, f)
"""

TESTS = {
    "tests/test_env.py": """
import envlib, markerlib

def test_mode_set_by_the_conftest():
    assert envlib.MODE == "project"

def test_imported_under_pytest():
    assert envlib.UNDER_PYTEST

def test_marker():
    assert markerlib.VALUE == 1
""",
    "tests/test_file.py": """
import pytest

@pytest.fixture
def setting():
    import filelib  # its import reads filelib.cfg in the root
    return filelib.SETTING

def test_setting_is_the_file(setting):
    with open("filelib.cfg") as f:
        assert setting == f.read()
""",
    "tests/test_hooks.py": """
import pytest
from hooklib_helpers import same

def test_a_rewritten_helper_fails():
    same(1, 2)

def test_plain():
    pass

@pytest.mark.skip(reason="skipped")
def test_skipped():
    pass

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert 0
""",
    "tests/test_warn.py": """
import warnlib

def test_warned_at_import():
    assert warnlib.LOADED
""",
}

SITE = {
    "envlib.py": "import os\nMODE = os.environ.get('ENVLIB_MODE', 'unset')\n"
    "UNDER_PYTEST = 'PYTEST_VERSION' in os.environ\n",
    "markerlib.py": "VALUE = 1\n",
    "filelib.py": "with open('filelib.cfg') as _f:\n    SETTING = _f.read()\n",
    "warnlib.py": "import warnings\nwarnings.warn('warnlib is deprecated', DeprecationWarning, stacklevel=2)\n"
    "LOADED = True\n",
    "hooklib_plugin.py": "import pytest\npytest.register_assert_rewrite('hooklib_helpers')\n"
    "def pytest_collection_modifyitems(items):\n    items.sort(key=lambda item: item.name, reverse=True)\n"
    "def pytest_report_header(config):\n    return 'hooklib registered at import'\n",
    "hooklib_helpers.py": "def same(a, b):\n    assert a == b\n",
}


def distribution(site: Path, name: str, module: str, entry_points: str = "") -> None:
    """A ``.dist-info`` for ``name`` (its file ``module``) in ``site``, as pip writes one
    (with its entry points: pytest rewrites the asserts of a plugin distribution's files)."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "RECORD").write_text(f"{module},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    if entry_points:
        (info / "entry_points.txt").write_text(entry_points)


def make_project(tmp_path: Path) -> tuple[Path, Path]:
    """The project (root) and its venv's python, the third-party modules installed."""
    python = python_with(tmp_path, "pytest")
    (site,) = (tmp_path / "venv").glob("lib/python*/site-packages")
    for name, text in SITE.items():
        (site / name).write_text(text)
    for name in ("envlib", "markerlib", "filelib", "warnlib", "hooklib_helpers"):
        distribution(site, name, f"{name}.py")
    distribution(site, "hooklib", "hooklib_plugin.py", "[pytest11]\nhooklib = hooklib_plugin\n")
    root = tmp_path / "project"
    for rel, text in {"conftest.py": CONFTEST, **TESTS}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "filelib.cfg").write_text("first")
    return root, python


def server(root: Path, python: Path, artifacts: Path, marks: Path, *extra: str) -> StdioServerParameters:
    params = typed_stdio_server(root, artifacts, "--python", str(python), *extra)
    env = dict(params.env or os.environ)
    env["WARM_TEST_MARKS"] = str(marks)
    return params.model_copy(update={"env": env})


def sessions(marks: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(marks.glob("session-*.json"), key=lambda p: p.name.split("-")[2])]


def spares_of(root: Path) -> list[psutil.Process]:
    """The spare processes of the server serving ``root`` (its children running the spare)."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            cmdline = proc.cmdline()
            if "pytest_mcp_server_spare" in cmdline and proc.cwd() == str(root):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_warm_runs_give_the_cold_answer_and_stale_or_unsafe_spares_start_cold(tmp_path):
    root, python = make_project(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()

    async def body():
        async with connect(server(root, python, tmp_path / "cold-art", marks, "--no-warm-start"), "auto") as client:
            cold, cold_records = answer(await client.call_tool("execute_tests", {}))
            cold_listed = (await client.call_tool("discover_tests", {})).structured_content
        assert cold["status"] == "failed" and cold["summary"]["counts"]["failed"] == 1, cold
        assert any(r.get("$report_type") == "WarningMessage" and "warnlib" in r["message"] for r in cold_records)
        assert not any(s["warm"] for s in sessions(marks))
        assert spares_of(root) == []  # --no-warm-start starts none
        for path in marks.iterdir():
            path.unlink()

        async with connect(server(root, python, tmp_path / "warm-art", marks), "auto") as client:
            lines = []
            for _ in range(5):
                warm, warm_records = answer(await client.call_tool("execute_tests", {}))
                same_answer(warm, cold)
                assert warm_records == cold_records
                lines.append(warm.get("cold_start"))
                if sessions(marks)[-1]["warm"]:
                    break
            # the spare that preloaded warnlib saw its warning: cold once, then it is left out
            said = [line for line in lines if line]
            assert len(said) == 1 and "could not import warnlib" in said[0], lines
            assert "left out next time" in said[0]
            assert sessions(marks)[-1]["warm"], lines
            listed = (await client.call_tool("discover_tests", {})).structured_content
            assert sessions(marks)[-1]["warm"]  # the collection ran in a spare too
            assert {k: v for k, v in listed.items() if k != "duration_s"} == {
                k: v for k, v in cold_listed.items() if k != "duration_s"
            }

            # a file a preloaded module read at import changed: that spare is stale
            await wait_for_ready(tmp_path / "warm-art")
            (root / "filelib.cfg").write_text("second")
            edited, edited_records = answer(await client.call_tool("execute_tests", {}))
            assert edited["cold_start"] == "filelib.cfg changed since the warm spare imported it"
            same_answer(edited, cold)
            assert not sessions(marks)[-1]["warm"]
            # the next spare preloaded the new content: warm again, and right
            again, again_records = answer(await client.call_tool("execute_tests", {}))
            assert again.get("cold_start") is None and sessions(marks)[-1]["warm"]
            same_answer(again, cold)
            assert again_records == edited_records
            pids = [s["pid"] for s in sessions(marks)]
            assert len(pids) == len(set(pids)), "a spare ran two sessions"

    run(body)


def test_a_dead_or_hung_spare_starts_the_run_cold_and_the_next_spare_is_made(tmp_path):
    root, python = make_project(tmp_path)
    (root / "tests" / "test_hooks.py").unlink()
    (root / "tests" / "test_warn.py").unlink()
    site = next((tmp_path / "venv").glob("lib/python*/site-packages"))
    # sleeps at import only in a spare's preload (its command line, until the run sets pytest's)
    (site / "hanglib.py").write_text(
        "import os, sys, time\nif 'pytest_mcp_server_spare' in sys.orig_argv and os.path.exists('hang'):\n"
        "    time.sleep(3600)\n"
    )
    (root / "tests" / "test_hang.py").write_text("def test_hang():\n    import hanglib\n")
    marks = tmp_path / "marks"
    marks.mkdir()

    async def body():
        async with connect(server(root, python, tmp_path / "art", marks), "auto") as client:
            for _ in range(2):
                first, _records = answer(await client.call_tool("execute_tests", {}))
                assert first["status"] == "passed", first
            await wait_for_spare(root)
            (spare,) = spares_of(root)
            spare.kill()
            spare.wait(10)
            died, _ = answer(await client.call_tool("execute_tests", {}))
            assert died["status"] == "passed"
            assert died["cold_start"].startswith("the warm spare had exited"), died
            await wait_for_spare(root)
            (replacement,) = spares_of(root)
            assert replacement.pid != spare.pid

            # a preload that hangs (hanglib sleeps at import in the spares started from now):
            # the call waits a bounded time, then starts cold, naming the module left out
            await wait_for_ready(tmp_path / "art")
            (root / "hang").write_text("")
            served, _ = answer(await client.call_tool("execute_tests", {}))  # the spare made before
            assert served["status"] == "passed" and served.get("cold_start") is None
            await wait_for_spare(root)
            (hung_spare,) = spares_of(root)
            hung, _ = answer(await client.call_tool("execute_tests", {}))
            assert "still importing hanglib" in hung["cold_start"], hung
            assert wait_until_gone([hung_spare.pid]) == []
            (root / "hang").unlink()

    run(body)


async def wait_for_ready(artifacts: Path, timeout: float = 30.0) -> None:
    """Wait until the idle spare has written its ready file (its preload is over)."""
    with anyio.fail_after(timeout):
        while not list((artifacts / "spares").glob("*/ready.json")):
            await anyio.sleep(0.05)


async def wait_for_spare(root: Path, timeout: float = 30.0) -> None:
    with anyio.fail_after(timeout):
        while len(spares_of(root)) != 1:
            await anyio.sleep(0.05)


def test_timeout_and_cancel_kill_a_warm_run_and_no_spare_outlives_the_server(tmp_path):
    root, python = make_project(tmp_path)
    for name in ("test_hooks.py", "test_warn.py", "test_file.py"):
        (root / "tests" / name).unlink()
    (root / "tests" / "test_sleep.py").write_text(
        "import os, time\ndef test_sleep():\n    if os.path.exists('sleep'):\n        time.sleep(600)\n"
    )
    marks = tmp_path / "marks"
    marks.mkdir()

    async def body():
        async with connect(server(root, python, tmp_path / "art", marks), "auto") as client:
            await client.call_tool("execute_tests", {})
            await wait_for_spare(root)
            (spare,) = spares_of(root)
            (root / "sleep").write_text("")
            result = await client.call_tool("execute_tests", {"timeout_s": 3})
            assert result.is_error
            detail = result.structured_content
            assert detail["kind"] == "timeout", detail
            assert detail.get("running_test") == "tests/test_sleep.py::test_sleep", detail
            assert sessions(marks)[-1]["pid"] == spare.pid  # the run that timed out was the spare's
            assert not pid_alive(spare.pid)
            await wait_for_spare(root)
            (cancelled,) = spares_of(root)
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "execute_tests", {})
                with anyio.fail_after(60):  # the spare runs it: its session began
                    while not any(s["pid"] == cancelled.pid for s in sessions(marks)):
                        await anyio.sleep(0.05)
                tg.cancel_scope.cancel()  # notifications/cancelled
            assert wait_until_gone([cancelled.pid]) == []
            (root / "sleep").unlink()
            after, _ = answer(await client.call_tool("execute_tests", {}))
            assert after["status"] == "passed"
            await wait_for_spare(root)
            (idle,) = spares_of(root)
        # the client closed the server's stdin: the server stopped, and its idle spare with it
        assert wait_until_gone([idle.pid]) == []

    run(body)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL of the server")
def test_a_killed_servers_idle_spare_exits(tmp_path):
    root, python = make_project(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    spare_pids: list[int] = []

    async def body():
        async with connect(server(root, python, tmp_path / "art", marks), "auto") as client:
            await client.call_tool("execute_tests", {"node_ids": ["tests/test_env.py"]})
            await wait_for_spare(root)
            (spare,) = spares_of(root)
            spare_pids.append(spare.pid)
            os.kill(spare.ppid(), signal.SIGKILL)  # the server, with no chance to stop anything

    run(body)  # the client's session ends as the server's stdout closes
    assert len(spare_pids) == 1
    # stdin's end is the idle spare's signal: nothing else would stop it on macOS or Windows
    assert wait_until_gone(spare_pids) == []


def test_two_concurrent_calls_never_share_a_spare(tmp_path):
    root, python = make_project(tmp_path)
    (root / "tests" / "test_warn.py").unlink()
    (root / "tests" / "test_hooks.py").unlink()
    marks = tmp_path / "marks"
    marks.mkdir()

    async def body():
        async with connect(server(root, python, tmp_path / "art", marks, "--max-concurrent", "2"), "auto") as c:
            await c.call_tool("execute_tests", {})
            await wait_for_spare(root)
            results = []

            async def call(node: str) -> None:
                results.append(answer(await c.call_tool("execute_tests", {"node_ids": [node]}))[0])

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "tests/test_env.py")
                tg.start_soon(call, "tests/test_file.py")
            assert sorted(r["status"] for r in results) == ["passed", "passed"]
            assert all(r.get("cold_start") is None for r in results)
        pids = [s["pid"] for s in sessions(marks)]
        assert len(pids) == 3 and len(set(pids)) == 3, pids

    run(body)
