"""Shared fixtures and the ``--soak=MINUTES`` option of the test suite.

Fixtures:

* ``backend``: runs a test once per engine backend, ``"native"`` and ``"pure"`` (the
  native run is skipped with ``backends.NATIVE_MISSING`` when the extension does not
  import). Comparing the two on one input is ``backends.summary_in_both`` and friends.

The run's header says which report corpora the corpus tests read (``corpus.header_line``:
the in-repo dialects always, the shared corpus when present).

``--soak=MINUTES`` runs the differential fuzz tests for that long.

Normal runs (CI, ``python -m pytest``) keep the fuzz tests quick: a bounded number of
hypothesis examples each (``strategies.fuzz_settings``). With ``--soak=MINUTES``:

* every test marked ``fuzz`` gets a share of the minutes (minutes * 60 / number of fuzz
  tests selected) and is run again and again, each run a fresh hypothesis search of
  many examples, until its share is spent; a failure is recorded and the loop goes on
  (distinct failures are reported together at the end);
* the corpus truncation test cuts every file at every offset (a stride for the large
  files) instead of a sample;
* a table of runs, examples and seconds per test is printed at the end, and written as
  JSON to ``--soak-report=PATH`` when given.

Example: ``python -m pytest tests/engine/test_property_parity.py tests/engine/test_corpus_truncation.py
--soak=30 --soak-report=soak.json -p no:cacheprovider`` (see docs/RELIABILITY.md).
"""

from __future__ import annotations

import json
import time
import traceback

import pytest
from helpers import backends, corpus, interpreters, peak_memory, strategies


@pytest.fixture(params=[pytest.param("native", marks=backends.needs_native), "pure"])
def backend(request: pytest.FixtureRequest) -> str:
    """The backend a test runs on: ``"native"`` (skipped when the extension does not
    import) and ``"pure"``, as ``summarize(..., backend=backend)`` takes them."""
    return str(request.param)


def pytest_report_header(config: pytest.Config) -> str:
    """The corpora the corpus tests read (the shared one is an extra, never required)."""
    return corpus.header_line()


@pytest.fixture(scope="module", autouse=True)
def _end_memory_workers():
    """The worker processes of ``peak_memory.measure`` live as long as a test module."""
    yield
    peak_memory.close_workers()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("soak", "long fuzzing runs (docs/RELIABILITY.md)")
    group.addoption(
        "--soak",
        type=float,
        default=0.0,
        metavar="MINUTES",
        help="run the fuzz tests for about MINUTES in total (default 0: a quick bounded run)",
    )
    group.addoption("--soak-report", default=None, metavar="PATH", help="write the soak figures as JSON to PATH")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fuzz: a differential fuzz test; looped until its time share is spent under --soak"
    )
    strategies.SOAK_MINUTES = float(config.getoption("soak") or 0.0)
    config._soak_rows = []  # type: ignore[attr-defined]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    fuzz = [item for item in items if item.get_closest_marker("fuzz")]
    minutes = strategies.SOAK_MINUTES
    config._soak_share = minutes * 60 / len(fuzz) if (minutes and fuzz) else 0.0  # type: ignore[attr-defined]


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    """Under ``--soak``, run a ``fuzz`` test repeatedly until its share of time is spent."""
    share = getattr(pyfuncitem.config, "_soak_share", 0.0)
    if not share or pyfuncitem.get_closest_marker("fuzz") is None:
        return None
    func = pyfuncitem.obj
    kwargs = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    start = time.monotonic()
    runs = 0
    failures: dict[str, str] = {}
    while True:
        try:
            func(**kwargs)
        except Exception as exc:  # keep soaking; report every distinct failure at the end
            lines = str(exc).strip().splitlines() or [""]
            key = f"{type(exc).__name__}: {lines[0][:200]}"
            failures.setdefault(key, "".join(traceback.format_exception(exc))[-20_000:])
        runs += 1
        if time.monotonic() - start >= share:
            break
    key = pyfuncitem.nodeid
    pyfuncitem.config._soak_rows.append(  # type: ignore[attr-defined]
        {
            "test": key,
            "runs": runs,
            "examples": backends.EXAMPLES_CHECKED.get(key, 0),
            "seconds": round(time.monotonic() - start, 1),
            "distinct_failures": len(failures),
        }
    )
    if failures:
        raise AssertionError(f"{len(failures)} distinct failure(s) while soaking:\n\n" + "\n\n".join(failures.values()))
    return True


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    rows = getattr(config, "_soak_rows", [])
    if not strategies.SOAK_MINUTES or not (rows or backends.EXAMPLES_CHECKED):
        return
    tr = terminalreporter
    tr.section("soak figures")
    # tests that are not looped (e.g. corpus truncation) still count their examples
    looped = {r["test"] for r in rows}
    for key, n in sorted(backends.EXAMPLES_CHECKED.items()):
        if key not in looped:
            rows.append({"test": key, "runs": 1, "examples": n, "seconds": None, "distinct_failures": None})
    for r in rows:
        tr.write_line(
            f"{r['examples']:>9} examples  {r['runs']:>5} runs  {r['seconds'] or '-':>8} s"
            f"  failures {r['distinct_failures']}  {r['test']}"
        )
    total = sum(r["examples"] for r in rows)
    tr.write_line(f"{total:>9} examples in total")
    path = config.getoption("soak_report")
    if path:
        with open(path, "w") as f:
            json.dump(
                {
                    "minutes": strategies.SOAK_MINUTES,
                    "exitstatus": int(exitstatus),
                    "rows": rows,
                    "total_examples": total,
                },
                f,
                indent=2,
            )


@pytest.fixture(scope="session")
def python312(tmp_path_factory: pytest.TempPathFactory):
    """A CPython 3.12 virtualenv with pytest, coverage.py and pytest-cov (``interpreters``):
    the project interpreter of the tests that run the sys.monitoring recorder."""
    return interpreters.make_venv("3.12", tmp_path_factory.mktemp("py312") / "venv")
