#!/usr/bin/env python
"""Injected bugs in real projects: what ``execute_tests`` answers vs what pytest prints.

An agent that does not use this server reads ``python -m pytest -q --tb=short``. This
benchmark measures, on real bugs in real projects, whether the server's answer still
names what the agent needs, and at what size:

* the catalogue ``benches/real_bugs.toml`` lists projects (PyPI sdists that ship their
  tests and run them in seconds with pytest alone) and bugs: exact text replacements in
  the library source (``old`` occurs exactly once in ``file``), with the line the bug is
  on and its kind (off-by-one, wrong comparison, a different exception, returning None,
  a typo'd attribute, swapped arguments, ...);
* each project is installed into two virtualenvs (they also see this interpreter's
  packages: pytest, pytest-json-report): ``editable`` (``pip install -e``; pytest and
  the server run in the unpacked tree) and ``install`` (``pip install``; the code under
  test lives in site-packages). In ``install`` mode the tests run from a copy of the
  tree without the package's source: the packaging and pytest configuration files at
  its top (``PACKAGING_FILES``: ``pyproject.toml``, ``setup.cfg``, ``setup.py``,
  ``tox.ini``, ``pytest.ini``, as present) and the test files (``install_tests`` in
  the catalogue), as a checkout with a ``src/`` layout run by tox looks to pytest: the
  project's metadata is there, its source is not on ``sys.path``. Before measuring,
  ``import <package>`` is run in that copy with the venv's python and must resolve
  inside the venv, else the run stops. None of the projects' configuration
  imports the package at collection (no ``conftest.py`` at the top; ``setup.py`` is not
  collected); toolz's ``testpaths = ["toolz"]`` names a directory the copy does not
  have, so pytest falls back to the copy's top, where its tests are;
* each bug is marked in the catalogue: ``raises`` (the failing tests end in an exception
  raised in the library's code) or not (a wrong value a test's check catches), and
  ``chained`` (that exception is raised while another is handled; the bug's line is the
  first exception's, the root cause's) and ``doctest`` (the failing tests include a
  doctest, ``--doctest-modules``: its section in ``--tb=short`` is ``[doctest] name``);
* per bug and mode, the bug is written into the file the tests import (the tree in
  ``editable`` mode, the installed file in site-packages in ``install`` mode: the
  installed copy is patched in place, not re-installed, so that a bug costs no build),
  its bytecode cache is removed, and three runs are made in the same venv and directory:
  ``execute_tests`` with no arguments over the SDK's stdio client against
  ``pytest-mcp-server --root DIR --python VENV_PYTHON --answer-view structured``, ``python -m pytest -q
  --tb=short`` and ``python -m pytest -q --tb=line`` (both with ``-p no:cacheprovider``).
  The original text is written back afterwards, even on errors. A second server of the
  same project, ``--answer-view typed``, reads the run's report back
  (``summarize_report`` on its ``report_path``): the typed summary the groups and the
  first failure's location are counted from (the answer views carry no summary).

What a model reads depends on its client (docs/SERVER.md, *Answer views*); each view is
measured (``VIEWS``), in o200k tokens against ``--tb=short`` and by whether it names the
bug's line:

* ``text``: the text block (what Claude.ai and Claude Desktop hand their model; the
  ``text`` view);
* ``structured``: the structured content of the ``structured`` view (the server's
  default: the answer text and the typed fields) as a client's ``JSON.stringify`` writes
  it (``compact_json``: no spaces, non-ASCII as is), what Claude Code and VS Code hand
  their model;
* ``both``: the text block and the compact JSON of the ``both`` view's structured
  content, which is the ``structured`` view's without ``answer`` (tests/server/
  test_answer_views.py holds that), counted apart and added up: what a client that
  passes both (Copilot for JetBrains) hands its model.

A view names the bug's line when its text does, the strings of its JSON decoded
(``json_strings``: a path in a JSON string is the path the model reads).

Measured per bug and mode (the answer is the tool result's text block):

* ``frame``: the answer contains the bug's ``file:line`` (the path ends with the
  package-relative file, the line is within +-2 of the catalogue's);
* ``test_loc``: the answer contains the ``file:line`` of the first failing test's own
  frame: the last frame in a ``test_*.py``/``*_test.py``/``conftest.py`` file or under a
  ``tests``/``test`` directory, in the first failure section of pytest's ``--tb=short`` output (+-2);
  a doctest's section has no such frame: its failing example's line (the section's last
  line, ``path:N: DocTestFailure`` or ``UnexpectedException``) stands for it, and its frames
  are those of the example's traceback, which pytest prints in Python's format
  (``File "path", line N, in f``; ``names`` reads that format too);
* ``groups``: groups in the answer holding failures of this bug (the listed groups whose
  members, its ``examples`` and the listed failures naming the group, are not all
  failures of the unpatched suite, plus the groups the answer counts as omitted),
  against one injected cause;
* bytes: the answer's text, the wire (the JSON of the whole CallToolResult: content and
  structured content), pytest's ``--tb=short`` and ``--tb=line`` output (stdout);
* tokens: the same four texts in o200k tokens (``benches/tokens.py``: the ``bpe-openai``
  package, vocabulary bundled), and the answer's tokens over ``--tb=short``'s. The
  summary gives that ratio's median and maximum over all runs and over the runs where
  pytest reports one failure, against the targets (median <= 0.35, one failure <= 0.6,
  never above 0.8), and lists every run above 0.8; the same ratio per kind of failure the
  catalogue marks (``KINDS``: doctest, chained, ...);
* per run that misses a target (a token target; one group for a bug that raises; the
  bug's line where ``--tb=short`` names it; the failing test's line), why: where the
  answer's tokens go against pytest's (``token_parts``: ``E`` lines, frames, the rest,
  and how much of pytest's output its own ``E`` and frame lines are), or the exception
  and site of each group the bug's failures fell into;
* ``raises_observed``: the innermost frame of the first failure in ``--tb=short`` is the
  library's; a run where it disagrees with the catalogue's ``raises`` gets a note;
* ``location``: where the first listed failure's ``location`` points: ``test``,
  ``library`` (the project's package), ``stdlib``, ``third-party`` (another package in
  site-packages) or ``other``/``none`` (a path the answer shows as
  ``<site-packages>/pkg/mod.py`` is read in the venv's site-packages).

The unpatched suite is run first in each mode (pytest ``-rfE``); its failures are
recorded and left out of the counts above.

Usage::

    python benches/real_bugs.py --work /tmp/real-bugs [--only PROJECT ...] [--bugs PROJECT/ID ...]
        [--mode editable|install|both] [--json FILE] [--markdown FILE]
        [--server-src DIR] [--verify] [--coverage | --affected] [--text-before FILE ...]

``--text-before FILE ...`` (``--json`` files of an earlier run, e.g. before a change to
the answer) also compares each run's ``structured`` view with the text the earlier run
answered for the same bug and call (``against_text_before``: the issue's bound, at most
1.05x that text plus a few dozen tokens of typed fields).

``--from-json FILE ...`` runs nothing and reports earlier runs' rows (the per-run
reasons read the outputs kept in ``--work``'s ``outputs`` for rows written before they
were measured). ``--verify`` only checks the catalogue: every bug applies, makes at least one test
fail, and behaves as marked (``raises``, ``chained``, a chained bug's line in
``--tb=short``, ``doctest``; plain pytest, editable mode). ``--bugs`` runs only the named bugs.
``--coverage`` (editable mode only) makes each unpacked tree a git work tree of the
unpatched project and calls ``execute_tests`` with ``coverage: true``: the injected bug
is then the change the answer can name (``changed code run by failing tests: ...``), and
the summary counts the wrong-value bugs (``raises`` false) whose line the answer names
against ``--tb=short``. ``--affected`` (editable mode only) does the same with
``affected: true``: in a git work tree of the unpatched project, one unmeasured affected
call builds the test map before the first bug, each bug's measured call runs the tests
the change can affect (and names the changed lines the failing tests ran), and one
unmeasured affected call after the bug is removed records the restored code again, so
that each bug starts from the same map. ``--server-src`` puts DIR first on the server's
``PYTHONPATH`` (e.g. an exported commit of ``src/``) to measure a fixed version while the
work tree changes. Needs network access to PyPI the first time (sdists and build
backends); later runs reuse ``--work``.
Exit status: 0 when every bug made a test fail in every mode, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import sysconfig
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "benches"))
import real_projects  # noqa: E402  (scripts/ is not a package; its download/venv helpers are shared)
from tokens import count_tokens  # noqa: E402  (benches/tokens.py, beside this file)

CATALOGUE = Path(__file__).with_name("real_bugs.toml")
MODES = ("editable", "install")
LINE_SLACK = 2  # a named frame counts when its line is within this many lines of the bug's
PYTEST_FLAGS = ("-p", "no:cacheprovider", "-q")
# a test file, or any file under a tests/ (test/) directory: cachetools defines its tests in tests/__init__.py
TEST_FILE = re.compile(r"(^|/)(tests?/.*|test_[^/]*|[^/]*_test|conftest)\.py$")
FILE_LINE = re.compile(r"([\w./\\~+-]+\.py):(\d+)")
SHORT_FRAME = re.compile(r"^(\S+\.py):(\d+): ")
# a doctest's failure section ends in the failing example's ``path:N: DocTestFailure`` (a wrong
# value) or, after the example's traceback in Python's format, ``path:N: UnexpectedException``
DOCTEST_END = re.compile(r"^(\S+\.py):(\d+): (DocTestFailure|UnexpectedException)$")
PY_FRAME = re.compile(r'^  File "([^"]+\.py)", line (\d+), in ')
PY_FILE_LINE = re.compile(r'File "([^"]+\.py)", line (\d+)')
# pytest centres a failure's title in underscores, one on each side at least when the title is long
SECTION = re.compile(r"^_+ \S.* _+$")
BANNER = re.compile(r"^={3,} .+ ={3,}$")
SHOWN_SITE_DIRS = ("<site-packages>/", "<dist-packages>/")
# Copied from the tree's top to the test copy in ``install`` mode: what a checkout has besides its source.
PACKAGING_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini")


@dataclass(frozen=True)
class BugProject:
    """A project of the catalogue: the sdist, its import name and how its tests are laid out.

    ``install_tests`` are ``[from, to]`` pairs (paths relative to the tree and to the test
    copy) copied for ``install`` mode. Where the package lies in the tree (``src/`` or not)
    needs no entry: ``import <package>`` in the venv tells.
    """

    project: real_projects.Project
    package: str
    install_tests: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Bug:
    """One injected bug: replace ``old`` (exactly once in ``file``) by ``new``.

    ``file`` is relative to the package's parent directory (``toolz/itertoolz.py``), so
    the same name finds the tree's copy and the installed one; ``line`` (1-based) is
    the line the bug is on after the replacement.
    """

    project: str
    id: str
    kind: str
    raises: bool  # the failing tests end in an exception raised in the library's code, not a test's check
    chained: bool  # that exception is raised while handling another ("from e" or not); ``line`` is the first's
    file: str
    line: int
    old: str
    new: str
    # pytest prints a chain whose first exception is an expected one the library handles (EAFP: a
    # ``try``/``except`` fallback); the bug is in a later exception of the chain, not the root
    handled_chain: bool = False
    # the failing tests include a doctest (``--doctest-modules``): a failing ``[doctest] name`` section
    doctest: bool = False


@dataclass
class Setup:
    """One project in one mode: the venv's python, where pytest runs, where the package lives."""

    spec: BugProject
    mode: str
    python: Path
    root: Path
    library: Path  # the directory that holds the package directory (or module)


@dataclass
class Row:
    """The measurements of one bug in one mode (see the module docstring)."""

    project: str
    bug: str
    kind: str
    mode: str
    raises: bool = False  # from the catalogue
    chained: bool = False  # from the catalogue
    handled_chain: bool = False  # from the catalogue
    doctest: bool = False  # from the catalogue
    raises_observed: bool = False  # the first failure's innermost frame in --tb=short is the library's
    failures: int = 0  # failed + errors in pytest's summary, baseline failures excluded
    answer_failures: int = 0  # the same counted by execute_tests
    groups: int = 0
    frame: bool = False
    test_loc: bool = False
    frame_in_short: bool = False
    frame_in_line: bool = False
    location: str = ""
    location_path: str = ""
    text_bytes: int = 0
    wire_bytes: int = 0
    short_bytes: int = 0
    line_bytes: int = 0
    text_tokens: int = 0  # o200k (benches/tokens.py); the ``text`` view
    wire_tokens: int = 0
    short_tokens: int = 0
    line_tokens: int = 0
    call: str = "plain"  # the measured call: plain, coverage (``coverage: true``) or affected (``affected: true``)
    # the other views (``VIEWS``): tokens of what a model reads, and whether that names the bug's line;
    # 0 / False in rows measured before views were
    structured_bytes: int = 0
    structured_tokens: int = 0  # compact JSON of the structured view's structured content
    fields_tokens: int = 0  # compact JSON of the both view's structured content (the typed fields)
    frame_structured: bool = False
    frame_both: bool = False
    status: str = ""
    first_line: str = ""
    notes: list[str] = field(default_factory=list)
    # where the tokens go: part -> [answer text tokens, --tb=short tokens] (``token_parts``)
    token_parts: dict[str, list[int]] = field(default_factory=dict)
    # the answer's groups of this bug, ``Exception at path:line xN`` (``group_sites``)
    group_sites: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """Answer text bytes / ``--tb=short`` bytes."""
        return self.text_bytes / self.short_bytes if self.short_bytes else 0.0

    @property
    def token_ratio(self) -> float:
        """Answer text tokens / ``--tb=short`` tokens (o200k)."""
        return self.text_tokens / self.short_tokens if self.short_tokens else 0.0

    @property
    def wire_ratio(self) -> float:
        """Wire bytes / answer text bytes."""
        return self.wire_bytes / self.text_bytes if self.text_bytes else 0.0

    def view_tokens(self, view: str) -> int:
        """o200k tokens a model reads in ``view`` (``VIEWS``); 0 when not measured."""
        if view == "text":
            return self.text_tokens
        if view == "structured":
            return self.structured_tokens
        return self.text_tokens + self.fields_tokens if self.structured_tokens else 0

    def view_ratio(self, view: str) -> float:
        """``view_tokens(view)`` / ``--tb=short`` tokens."""
        return self.view_tokens(view) / self.short_tokens if self.short_tokens else 0.0

    def view_names_frame(self, view: str) -> bool:
        """Whether what a model reads in ``view`` names the bug's line."""
        return {"text": self.frame, "structured": self.frame_structured, "both": self.frame_both}[view]


def load_catalogue(path: Path) -> tuple[list[BugProject], list[Bug]]:
    """Projects and bugs of the TOML catalogue (``[[project]]`` and ``[[bug]]`` tables).

    Raises SystemExit naming the entry when a bug refers to an unknown project or two
    bugs share an id.
    """
    data = tomllib.loads(path.read_text())
    projects = [
        BugProject(
            project=real_projects.Project(p["name"], p["version"], tuple(p.get("deps", ()))),
            package=p["package"],
            install_tests=tuple((a, b) for a, b in p["install_tests"]),
        )
        for p in data["project"]
    ]
    names = {p.project.name for p in projects}
    bugs = [Bug(**b) for b in data["bug"]]
    seen: set[tuple[str, str]] = set()
    for bug in bugs:
        if bug.project not in names:
            raise SystemExit(f"{path}: bug {bug.id} names project {bug.project!r}, not in [[project]]")
        if (bug.project, bug.id) in seen:
            raise SystemExit(f"{path}: bug id {bug.id} appears twice for {bug.project}")
        seen.add((bug.project, bug.id))
    return projects, bugs


# -- setting up ---------------------------------------------------------------------


def prepare(
    spec: BugProject, mode: str, work: Path, base_python: Path | None = None, requirements: tuple[str, ...] = ()
) -> Setup:
    """The project's tree, its venv for ``mode`` (created once) and where the tests run.

    By default the venv is this interpreter's (it sees its packages). With ``base_python``
    it is that interpreter's, named ``<name>-<mode>-py<X.Y>``, with ``requirements``
    (pytest) and the project's ``deps`` installed with their dependencies, then the
    project (``real_projects.make_venv``). Raises SystemExit when the package does not
    resolve where ``mode`` needs it.
    """
    tree = real_projects.unpack_sdist(spec.project, work)
    install = ["-e", str(tree)] if mode == "editable" else [str(tree)]
    label = f"{spec.project.name} ({mode})"
    if base_python is None:
        env_dir = work / "venvs" / f"{spec.project.name}-{mode}"
        python = real_projects.make_venv(env_dir, [install, list(spec.project.deps)], label)
    else:
        env_dir = work / "venvs" / f"{spec.project.name}-{mode}-py{python_version(base_python)}"
        python = real_projects.make_venv(env_dir, [install], label, base_python, [*requirements, *spec.project.deps])
    if mode == "editable":
        root = tree
    else:
        root = work / "installed-tests" / spec.project.name
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        for name in PACKAGING_FILES:
            if (tree / name).is_file():
                shutil.copy2(tree / name, root / name)
        for source, dest in spec.install_tests:
            src, dst = tree / source, root / dest
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst)
            else:
                shutil.copy2(src, dst)
    proc = real_projects.sh(str(python), "-c", f"import {spec.package} as m; print(m.__file__)", cwd=root)
    if proc.returncode != 0:
        raise SystemExit(f"{spec.project.name} ({mode}): import {spec.package} failed in {root}:\n{proc.stderr}")
    module_file = Path(proc.stdout.strip()).resolve()
    expected_home = tree.resolve() if mode == "editable" else env_dir.resolve()
    if not module_file.is_relative_to(expected_home):
        raise SystemExit(
            f"{spec.project.name} ({mode}): the tests would import {module_file}, not a copy under {expected_home}; "
            f"delete {env_dir} and {root} and rerun"
        )
    package_dir = module_file.parent if module_file.name == "__init__.py" else module_file
    return Setup(spec, mode, python, root, package_dir.parent)


def python_version(python: Path) -> str:
    """``X.Y`` of the interpreter ``python``."""
    proc = real_projects.sh(str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
    return proc.stdout.strip()


class Injected:
    """Context manager: ``bug`` written into ``library/bug.file``, the original restored on exit.

    Raises SystemExit when ``old`` does not occur exactly once (a tree left patched by an
    interrupted run, or a catalogue entry that does not match the version) or when
    ``line`` is not among the lines ``new`` occupies.
    """

    def __init__(self, bug: Bug, library: Path) -> None:
        self.bug = bug
        self.path = library / bug.file
        self.original = ""

    def __enter__(self) -> Injected:
        self.original = self.path.read_text()
        count = self.original.count(self.bug.old)
        if count != 1:
            raise SystemExit(
                f"bug {self.bug.project}/{self.bug.id}: the old text occurs {count} times in {self.path} "
                "(expected exactly 1); fix the catalogue, or delete the work directory if a run was interrupted"
            )
        start = self.original.index(self.bug.old)
        first = self.original.count("\n", 0, start) + 1
        last = first + self.bug.new.count("\n")
        if not first <= self.bug.line <= last:
            raise SystemExit(
                f"bug {self.bug.project}/{self.bug.id}: line {self.bug.line} is not in lines {first}-{last} "
                f"where the new text lands in {self.path}; fix 'line' in the catalogue"
            )
        self._write(self.original.replace(self.bug.old, self.bug.new))
        return self

    def __exit__(self, *exc: object) -> None:
        self._write(self.original)

    def _write(self, text: str) -> None:
        self.path.write_text(text)
        # bytecode is validated by mtime (1 s) and size: a same-size edit within a second would be missed
        for cached in (self.path.parent / "__pycache__").glob(f"{self.path.stem}.*.pyc"):
            cached.unlink()


# -- running ------------------------------------------------------------------------


async def run_pytest(setup: Setup, *flags: str) -> str:
    """stdout of ``python -m pytest -p no:cacheprovider -q FLAGS`` in ``setup.root``."""
    proc = await anyio.run_process(
        [str(setup.python), "-m", "pytest", *PYTEST_FLAGS, *flags], cwd=setup.root, check=False
    )
    return proc.stdout.decode(errors="replace")


def server_params(setup: Setup, work: Path, server_src: Path | None, view: str = "typed") -> StdioServerParameters:
    """How an installed user starts the server for ``setup`` (console script, else ``-m``),
    answering in ``view`` (``--answer-view``; ``typed`` by default: the benchmarks that
    read the typed result, ``benches/affected.py`` and ``benches/history.py``, share this)."""
    script = shutil.which("pytest-mcp-server")
    command, prefix = (script, []) if script else (sys.executable, ["-m", "pytest_mcp_server"])
    env = dict(os.environ)
    if server_src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(server_src), env.get("PYTHONPATH", "")]))
    args = [*prefix, "--root", str(setup.root), "--python", str(setup.python)]
    args += ["--artifacts-dir", str(work / "artifacts"), "--answer-view", view]
    return StdioServerParameters(command=command, args=args, env=env)


VIEWS = ("text", "structured", "both")
"""What a model reads, by client (see the module docstring)."""


def compact_json(value: object) -> str:
    """``value`` as JavaScript's ``JSON.stringify`` writes it: no spaces, non-ASCII as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def json_strings(value: object) -> str:
    """Every string in ``value`` (a decoded JSON value), one per line: what a model reads
    of a JSON text's strings, escapes decoded."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(json_strings(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(json_strings(v) for v in value)
    return ""


def measure_views(row: Row, bug: Bug, text: str, structured: dict) -> None:
    """``row``'s figures of the ``structured`` and ``both`` views from the answer's text
    block and its structured content in the ``structured`` view (``VIEWS``)."""
    whole = compact_json(structured)
    fields = {k: v for k, v in structured.items() if k != "answer"}
    row.structured_bytes = len(whole.encode())
    row.structured_tokens = count_tokens(whole)
    row.fields_tokens = count_tokens(compact_json(fields))
    row.frame_structured = names(json_strings(structured), bug.file, bug.line)
    row.frame_both = names(text + "\n" + json_strings(fields), bug.file, bug.line)


def failing_ids(output: str) -> set[str]:
    """Node ids of ``FAILED``/``ERROR`` lines of pytest's short summary (``-rfE``:
    ``FAILED <node id> - <message>``). A parametrized id may hold spaces
    (``test_parse[Thu, 25 Sep 2003]``): an id with an unclosed ``[`` runs to the ``]``
    before `` - `` (or the line's last ``]``)."""
    ids = set()
    for line in output.splitlines():
        m = re.match(r"^(FAILED|ERROR) (\S+)(.*)$", line)
        if not m:
            continue
        node_id, rest = m.group(2), m.group(3)
        if "[" in node_id and not node_id.endswith("]"):
            end = rest.find("] - ")
            end = end if end >= 0 else rest.rfind("]")
            if end >= 0:
                node_id += rest[: end + 1]
        ids.add(node_id)
    return ids


def failure_count(output: str) -> int:
    """failed + errors from pytest's final summary line."""
    _, counts = real_projects.parse_pytest_line(output)
    return counts["failed"] + counts["errors"]


def first_section(short_output: str) -> list[str]:
    """The lines of the first failure section of ``--tb=short`` output, without its ``___ name ___`` line.

    Empty when the output has no failure section.
    """
    lines = short_output.splitlines()
    start = next((i for i, line in enumerate(lines) if SECTION.match(line)), None)
    if start is None:
        return []
    # it ends at the next failure's section or at pytest's next ``=== ... ===`` part (warnings, summary)
    end = next((i for i in range(start + 1, len(lines)) if SECTION.match(lines[i]) or BANNER.match(lines[i])), None)
    return lines[start + 1 : end]


def first_section_frames(short_output: str) -> list[tuple[str, int]]:
    """``(path, line)`` of every frame of the first failure section of ``--tb=short`` output.

    In order of printing: outermost first, and a chain's exceptions one after the other
    (the last frame is the innermost one of the exception the test ended with). Empty when
    the output has no failure section. A doctest's section: the frames of its example's
    traceback (Python's format), none for a wrong value.
    """
    section = first_section(short_output)
    frame = PY_FRAME if any(DOCTEST_END.match(line) for line in section) else SHORT_FRAME
    matches = (frame.match(line) for line in section)
    return [(m.group(1), int(m.group(2))) for m in matches if m]


def first_test_frame(short_output: str) -> tuple[str, int] | None:
    """``(path, line)`` of the first failure's own test frame in ``--tb=short`` output.

    The last frame of the first failure section whose file is a test file; None when the
    output has no section or the section no test frame. A doctest's section: its failing
    example's line (``DOCTEST_END``; pytest prints that path absolute).
    """
    ends = [m for m in map(DOCTEST_END.match, first_section(short_output)) if m]
    if ends:
        return ends[-1].group(1), int(ends[-1].group(2))
    tests = [frame for frame in first_section_frames(short_output) if TEST_FILE.search(frame[0])]
    return tests[-1] if tests else None


def names(text: str, path_suffix: str, line: int) -> bool:
    """Whether ``text`` contains ``<...path_suffix>:<line within LINE_SLACK>`` (or Python's
    ``File "<...path_suffix>", line <line>``, as a doctest's traceback prints it)."""
    suffix = path_suffix.replace("\\", "/")
    for m in (*FILE_LINE.finditer(text), *PY_FILE_LINE.finditer(text)):
        path = m.group(1).replace("\\", "/")
        if (path == suffix or path.endswith("/" + suffix)) and abs(int(m.group(2)) - line) <= LINE_SLACK:
            return True
    return False


def classify(path: str | None, setup: Setup) -> str:
    """Where a failure's location points (see the module docstring)."""
    if not path:
        return "none"
    # the answer shows an installed file as <site-packages>/pkg/mod.py (docs/ENGINE.md, *Project code*)
    for shown in SHOWN_SITE_DIRS:
        if path.startswith(shown):
            path = str(setup.library / path.removeprefix(shown))
    resolved = (setup.root / path).resolve() if not Path(path).is_absolute() else Path(path).resolve()
    if TEST_FILE.search(resolved.as_posix()):
        return "test"
    if (
        resolved.is_relative_to((setup.library / setup.spec.package).resolve())
        or resolved == (setup.library / f"{setup.spec.package}.py").resolve()
    ):
        return "library"
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    if "site-packages" in resolved.parts:
        return "third-party"
    if resolved.is_relative_to(stdlib):
        return "stdlib"
    return "other"


async def measure_project(spec: BugProject, mode: str, bugs: list[Bug], args: argparse.Namespace) -> list[Row]:
    """All bugs of one project in one mode, through one server session."""
    setup = prepare(spec, mode, args.work)
    baseline_out = await run_pytest(setup, "--tb=no", "-rfE")
    baseline = failing_ids(baseline_out)
    baseline_n = failure_count(baseline_out)
    print(f"{spec.project.name} ({mode}): baseline {real_projects.parse_pytest_line(baseline_out)[0]}", flush=True)
    rows = []
    call: dict[str, object] = {}
    if args.coverage or args.affected:
        commit_tree(setup.root)
        call = {"coverage": True} if args.coverage else {"affected": True}
    kind = "coverage" if args.coverage else "affected" if args.affected else "plain"
    served = server_params(setup, args.work, args.server_src, "structured")
    typed = server_params(setup, args.work, args.server_src, "typed")
    async with (
        Client(served, read_timeout_seconds=900) as client,
        Client(typed, read_timeout_seconds=900) as reader,
    ):
        if args.affected:
            await affected_call(client)  # the map of the unpatched tree
        for bug in bugs:
            row = Row(
                spec.project.name,
                bug.id,
                bug.kind,
                mode,
                raises=bug.raises,
                chained=bug.chained,
                handled_chain=bug.handled_chain,
                doctest=bug.doctest,
                call=kind,
            )
            with Injected(bug, setup.library):
                short = await run_pytest(setup, "--tb=short")
                line = await run_pytest(setup, "--tb=line")
                result = await client.call_tool("execute_tests", call)
            summary = await typed_summary(reader, result)
            if args.affected:
                await affected_call(client)  # the restored code recorded again: the next bug starts from the same map
            measure(row, bug, setup, baseline, baseline_n, short, line, result, summary)
            stem = args.work / "outputs" / f"{spec.project.name}-{mode}-{kind}-{bug.id}"
            keep_outputs(stem, short, line, result, summary)
            rows.append(row)
            print(
                f"  {bug.id:<24} failures {row.failures:>3} groups {row.groups:>2} frame {'yn'[not row.frame]} "
                f"test {'yn'[not row.test_loc]} text {row.text_bytes:>6} wire {row.wire_bytes:>6} "
                f"short {row.short_bytes:>6} tok {row.text_tokens:>5}/{row.short_tokens:<6} "
                f"loc {row.location}{' ' + '; '.join(row.notes) if row.notes else ''}",
                flush=True,
            )
    return rows


async def affected_call(client: Client) -> None:
    """An unmeasured ``execute_tests`` with ``affected: true`` (it records what the tests
    ran in the test map). Raises SystemExit when it is a tool error."""
    result = await client.call_tool("execute_tests", {"affected": True})
    if result.is_error:
        raise SystemExit(f"affected call failed: {result.content[0].text if result.content else result}")


async def typed_summary(reader: Client, result: CallToolResult) -> dict | None:
    """The typed summary of the run that answered ``result``: ``summarize_report`` on its
    ``report_path`` over ``reader``, a server in the ``typed`` view; None when the run
    gave no report (a tool error)."""
    report_path = (result.structured_content or {}).get("report_path")
    if result.is_error or not report_path:
        return None
    summarized = await reader.call_tool("summarize_report", {"paths": [report_path]})
    if summarized.is_error or not summarized.structured_content:
        return None
    summary: dict | None = summarized.structured_content.get("summary")
    return summary


def commit_tree(root: Path) -> None:
    """Make ``root`` a git work tree whose ``HEAD`` is its unpatched state (``--coverage``:
    the injected bug is then the change the answer can name). A tree that already is one
    is left as it is; a ``.gitignore`` keeps the runs' byte code and caches untracked-free."""
    if (root / ".git").exists():
        return
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n.pytest_cache/\n*.egg-info/\n.hypothesis/\n")
    for argv in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "unpatched sdist")):
        proc = real_projects.sh(
            "git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *argv, cwd=root
        )
        if proc.returncode != 0:
            raise SystemExit(f"git {' '.join(argv)} failed in {root}:\n{proc.stderr}")


def keep_outputs(stem: Path, short: str, line: str, result: CallToolResult, summary: dict | None) -> None:
    """Write the outputs of one bug next to each other, to read what was measured.

    ``<stem>.answer.txt`` (the text block), ``<stem>.wire.json`` (the whole CallToolResult,
    structured view), ``<stem>.summary.json`` (the run's typed summary, when it has one),
    ``<stem>.short.txt`` and ``<stem>.line.txt`` (pytest's stdout).
    """
    stem.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    stem.with_suffix(".answer.txt").write_text(text)
    stem.with_suffix(".wire.json").write_text(result.model_dump_json(by_alias=True, exclude_none=True))
    if summary is not None:
        stem.with_suffix(".summary.json").write_text(json.dumps(summary))
    stem.with_suffix(".short.txt").write_text(short)
    stem.with_suffix(".line.txt").write_text(line)


RAISES_NOTE = "catalogue says raises="


def raises_note(row: Row) -> str:
    """The note of a run whose ``--tb=short`` disagrees with the catalogue's ``raises``."""
    return f"{RAISES_NOTE}{row.raises}, --tb=short's innermost frame says {row.raises_observed}"


TOKEN_PARTS = ("values", "frames", "the rest")
"""The parts ``token_parts`` splits an output into: ``values`` are the ``E`` lines (the
exception and the compared values), ``frames`` the lines that name a frame or show its
source, ``the rest`` everything else (the answer's verdict, entry names, ``also in`` and
closing lines; pytest's progress dots, banners, section titles and summary lines)."""

# a frame line: the answer's ``path:N: statement`` (indented) or pytest's ``path:N: in func``
FRAME_LINE = re.compile(r"^\s*\S+\.py:\d+: ")


def token_parts(text: str, short: str) -> dict[str, list[int]]:
    """Per part of ``TOKEN_PARTS``: [tokens in the answer ``text``, tokens in pytest's
    ``short`` output], each line counted with its newline (o200k; the parts add up to
    within a few tokens of the whole, BPE merges across lines aside). A frame's source
    lines are the indented lines that are neither ``E`` lines nor entry names between a
    frame line and the next ``E`` line."""
    parts = {part: [0, 0] for part in TOKEN_PARTS}
    for side, output in enumerate((text, short)):
        in_frames = False
        for line in output.splitlines():
            stripped = line.lstrip()
            if stripped == "E" or stripped.startswith("E "):
                part, in_frames = "values", False
            elif FRAME_LINE.match(line):
                part, in_frames = "frames", True
            elif in_frames and line.startswith(" ") and not stripped.startswith(("- ", "also in ")):
                part = "frames"
            else:
                part, in_frames = "the rest", False
            parts[part][side] += count_tokens(line + "\n")
    return parts


def why_tokens(row: Row) -> str:
    """Where an answer's tokens go against ``--tb=short``'s (``token_parts``), and the part
    that costs the most more than pytest's."""
    if not row.token_parts or not row.short_tokens:
        return "no token parts in this row (measured before they were kept)"
    figures = ", ".join(f"{part} {a} vs {s}" for part, (a, s) in row.token_parts.items())
    own = sum(row.token_parts[part][1] for part in ("values", "frames")) / row.short_tokens
    part, (a, s) = max(row.token_parts.items(), key=lambda item: item[1][0] - item[1][1])
    causes = {
        "values": "the compared values, given whole (pytest -q cuts long reprs to `...`)",
        "frames": "frame lines (longer than pytest's, or more of them)",
        "the rest": "the answer's verdict, names and closing line against pytest's progress and summary",
    }
    more = f"; most over pytest's: {causes[part]} (+{a - s})" if a > s else ""
    return (
        f"tokens answer vs --tb=short: {figures}; pytest's `E` and frame lines alone are {own:.2f}x of its output{more}"
    )


def bug_groups(summary: dict, baseline: set[str]) -> tuple[list[str], int]:
    """The ids of the listed groups of a structured ``summary`` that hold failures of the
    injected bug (not only ``baseline`` failures), and the number of groups it cut."""
    # a group's members: its examples and the listed failures that name it (examples leave those out;
    # when no group was cut, a group of one listed failure may be named by that failure only, and
    # empty lists and 0 counts may be left out of the structured content)
    members: dict[str, set[str]] = {g["id"]: set(g.get("examples", ())) for g in summary["groups"]}
    cut_groups = summary.get("omitted", {}).get("groups", 0)
    for f in summary["failures"]:
        if f["group"] in members or not cut_groups:  # else its group is among the cut ones
            members.setdefault(f["group"], set()).add(f["node_id"])
    return [gid for gid, names in members.items() if not names or not names <= baseline], cut_groups


def group_sites(summary: dict, ids: list[str]) -> list[str]:
    """``Exception at path:line xN`` of the groups ``ids`` of a structured ``summary``
    (``at ?`` for a group without a location), in the answer's order."""
    # a group of one listed failure may be named by that failure only: its own fields then
    named = {g.get("id"): g for g in summary.get("groups", ())}
    for f in summary.get("failures", ()):
        named.setdefault(f.get("group"), f)
    sites = []
    for gid in ids:
        g = named.get(gid, {})
        loc = g.get("location") or {}
        at = f"{loc.get('path')}:{loc.get('line')}" if loc else "?"
        sites.append(f"{g.get('exception') or 'no exception'} at {at} x{g.get('count', 1)}")
    return sites


def measure(
    row: Row,
    bug: Bug,
    setup: Setup,
    baseline: set[str],
    baseline_n: int,
    short: str,
    line: str,
    result: CallToolResult,
    summary: dict | None,
) -> None:
    """Fill ``row`` from the three outputs of one bug (see the module docstring): the
    answer in the ``structured`` view (``result``) and its run's typed ``summary``
    (``typed_summary``)."""
    text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    wire = result.model_dump_json(by_alias=True, exclude_none=True)
    row.text_bytes = len(text.encode())
    row.wire_bytes = len(wire.encode())
    row.short_bytes, row.line_bytes = len(short.encode()), len(line.encode())
    row.text_tokens, row.wire_tokens = count_tokens(text), count_tokens(wire)
    row.short_tokens, row.line_tokens = count_tokens(short), count_tokens(line)
    row.token_parts = token_parts(text, short)
    row.raises, row.chained, row.handled_chain = bug.raises, bug.chained, bug.handled_chain
    row.doctest = bug.doctest
    frames = first_section_frames(short)
    row.raises_observed = bool(frames) and classify(frames[-1][0], setup) == "library"
    if row.raises_observed != bug.raises:
        row.notes.append(raises_note(row))
    row.first_line = text.splitlines()[0] if text else ""
    row.failures = failure_count(short) - baseline_n
    row.frame = names(text, bug.file, bug.line)
    row.frame_in_short = names(short, bug.file, bug.line)
    row.frame_in_line = names(line, bug.file, bug.line)
    test_frame = first_test_frame(short)
    if test_frame and Path(test_frame[0]).is_absolute() and Path(test_frame[0]).is_relative_to(setup.root):
        test_frame = (Path(test_frame[0]).relative_to(setup.root).as_posix(), test_frame[1])  # a doctest's
    row.test_loc = bool(test_frame) and names(text, *test_frame)
    if test_frame is None:
        row.notes.append("no test frame in --tb=short")
    if result.structured_content:
        measure_views(row, bug, text, result.structured_content)
    if result.is_error or not result.structured_content or summary is None:
        row.status = "tool error"
        row.notes.append(row.first_line)
        return
    structured = result.structured_content
    row.status = structured["status"]
    counts = structured["counts"]  # total and the non-zero counts
    row.answer_failures = counts.get("failed", 0) + counts.get("errors", 0) - baseline_n
    failures = summary["failures"]
    listed, cut_groups = bug_groups(summary, baseline)
    row.groups = len(listed) + cut_groups
    row.group_sites = group_sites(summary, listed)
    if failures:
        location = failures[0].get("location") or {}
        row.location_path = f"{location.get('path')}:{location.get('line')}" if location else ""
        row.location = classify(location.get("path"), setup)
    else:
        row.location = "none"
    if row.failures <= 0:
        row.notes.append("NO TEST FAILED")


# -- reporting ----------------------------------------------------------------------


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}% ({part}/{whole})" if whole else "-"


def median_or_none(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def way_of(row: Row) -> str:
    """The mode and the call of a row, as the summary names them: ``editable``, or
    ``editable, affected`` for a call other than plain."""
    return row.mode if row.call == "plain" else f"{row.mode}, {row.call}"


def summarize(rows: list[Row]) -> dict[str, dict]:
    """Per mode and call (``way_of``): the headline figures (see the module docstring)."""
    out = {}
    ways = sorted({way_of(r) for r in rows}, key=lambda w: (MODES.index(w.split(",")[0]), w))
    for way in ways:
        rs = [r for r in rows if way_of(r) == way and r.status != "tool error"]
        if not rs:
            continue
        multi = [r for r in rs if r.failures >= 2]
        ratios = [r.ratio for r in rs]
        locations: dict[str, int] = {}
        for r in rs:
            locations[r.location] = locations.get(r.location, 0) + 1
        out[way] = {
            "bugs": len(rs),
            "frame_named": pct(sum(r.frame for r in rs), len(rs)),
            "frame_named_tb_short": pct(sum(r.frame_in_short for r in rs), len(rs)),
            # a bug that returns a wrong value has no frame in any traceback: judge the answer where pytest shows it
            "frame_named_where_tb_short_has_it": pct(
                sum(r.frame for r in rs if r.frame_in_short), sum(r.frame_in_short for r in rs)
            ),
            "frame_named_tb_line": pct(sum(r.frame_in_line for r in rs), len(rs)),
            "test_location_named": pct(sum(r.test_loc for r in rs), len(rs)),
            "one_group_per_cause_multi_failure": pct(sum(r.groups == 1 for r in multi), len(multi)),
            "median_groups_multi_failure": statistics.median([r.groups for r in multi]) if multi else None,
            "max_groups": max(r.groups for r in rs),
            "counts_agree": pct(sum(r.answer_failures == r.failures for r in rs), len(rs)),
            "median_ratio_text_tb_short": round(statistics.median(ratios), 3),
            "worst_ratio_text_tb_short": round(max(ratios), 3),
            "answer_not_smaller_than_tb_short": pct(sum(r.ratio >= 1 for r in rs), len(rs)),
            "median_ratio_1_to_3_failures": median_or_none([r.ratio for r in rs if r.failures <= 3]),
            "median_ratio_over_3_failures": median_or_none([r.ratio for r in rs if r.failures > 3]),
            "median_ratio_wire_text": round(statistics.median(r.wire_ratio for r in rs), 2),
            "worst_ratio_wire_text": round(max(r.wire_ratio for r in rs), 2),
            "median_text_bytes": statistics.median(r.text_bytes for r in rs),
            "median_tb_short_bytes": statistics.median(r.short_bytes for r in rs),
            "median_tb_line_bytes": statistics.median(r.line_bytes for r in rs),
            "first_location": locations,
            "tool_errors": sum(r.status == "tool error" for r in rows if way_of(r) == way),
            # issue targets counted on the catalogue's marks
            "one_group_per_bug_that_raises": pct(sum(r.groups == 1 for r in rs if r.raises), sum(r.raises for r in rs)),
            "chained_frame_named": pct(sum(r.frame for r in rs if r.chained), sum(r.chained for r in rs)),
            "chained_frame_named_tb_short": pct(
                sum(r.frame_in_short for r in rs if r.chained), sum(r.chained for r in rs)
            ),
            "chained_one_group": pct(sum(r.groups == 1 for r in rs if r.chained), sum(r.chained for r in rs)),
            "handled_chain_frame_named": pct(
                sum(r.frame for r in rs if r.handled_chain), sum(r.handled_chain for r in rs)
            ),
            "handled_chain_one_group": pct(
                sum(r.groups == 1 for r in rs if r.handled_chain), sum(r.handled_chain for r in rs)
            ),
            "doctest_frame_named": pct(sum(r.frame for r in rs if r.doctest), sum(r.doctest for r in rs)),
            "doctest_frame_named_tb_short": pct(
                sum(r.frame_in_short for r in rs if r.doctest), sum(r.doctest for r in rs)
            ),
            "doctest_example_named": pct(sum(r.test_loc for r in rs if r.doctest), sum(r.doctest for r in rs)),
            "raises_mark_disagrees_with_tb_short": sum(r.raises != r.raises_observed for r in rs),
            # with --coverage: the wrong-value bugs, which no traceback passes through
            "wrong_value_frame_named": pct(sum(r.frame for r in rs if not r.raises), sum(not r.raises for r in rs)),
            "wrong_value_frame_named_tb_short": pct(
                sum(r.frame_in_short for r in rs if not r.raises), sum(not r.raises for r in rs)
            ),
            **token_figures(rs),
        }
    return out


MEDIAN_TOKENS_TARGET = 0.35
ONE_FAILURE_TOKENS_TARGET = 0.6
NEVER_ABOVE_TOKENS = 0.8
TOKEN_TARGETS = (
    ("median_token_ratio_tb_short", MEDIAN_TOKENS_TARGET),
    ("median_token_ratio_single_failure", ONE_FAILURE_TOKENS_TARGET),
    ("max_token_ratio_single_failure", ONE_FAILURE_TOKENS_TARGET),
    ("max_token_ratio_tb_short", NEVER_ABOVE_TOKENS),
)
"""Issue targets in tokens: (figure, bound); a figure meets its target when it is <= the bound."""


def token_figures(rows: list[Row]) -> dict[str, float | int | str | None]:
    """Answer text tokens against pytest's, over ``rows`` (o200k; single = pytest reports one failure)."""
    ratios = [r.token_ratio for r in rows]
    singles = [r.token_ratio for r in rows if r.failures == 1]
    return {
        "runs": len(rows),
        "median_token_ratio_tb_short": median_or_none(ratios),
        "max_token_ratio_tb_short": round(max(ratios), 3) if ratios else None,
        "single_failure_runs": len(singles),
        "median_token_ratio_single_failure": median_or_none(singles),
        "max_token_ratio_single_failure": round(max(singles), 3) if singles else None,
        "runs_above_0.8x_tokens": sum(x > NEVER_ABOVE_TOKENS for x in ratios),
        "median_token_ratio_tb_line": median_or_none([r.text_tokens / r.line_tokens for r in rows if r.line_tokens]),
        "median_byte_ratio_tb_short": median_or_none([r.ratio for r in rows]),
        "median_text_tokens": statistics.median(r.text_tokens for r in rows) if rows else None,
        "median_tb_short_tokens": statistics.median(r.short_tokens for r in rows) if rows else None,
        "median_tb_line_tokens": statistics.median(r.line_tokens for r in rows) if rows else None,
        "median_bytes_per_token_text": median_or_none([r.text_bytes / r.text_tokens for r in rows if r.text_tokens]),
        "median_bytes_per_token_tb_short": median_or_none(
            [r.short_bytes / r.short_tokens for r in rows if r.short_tokens]
        ),
    }


KINDS = {
    "doctest": lambda r: r.doctest,
    "chained": lambda r: r.chained,
    "handled chain": lambda r: r.handled_chain,
    "other, raises": lambda r: r.raises and not (r.doctest or r.chained or r.handled_chain),
    "other, wrong value": lambda r: not (r.raises or r.doctest or r.chained or r.handled_chain),
}
"""The kinds of failure the catalogue marks, for the per-kind token figures: a bug of a
doctest that also chains counts in both kinds; the last two take the rest."""


def kind_figures(rows: list[Row]) -> dict[str, dict]:
    """Per kind of ``KINDS`` that has runs: how many, the answer's tokens over ``--tb=short``'s
    (median, worst), and the bug's line named by the answer and by ``--tb=short``."""
    out = {}
    for kind, test in KINDS.items():
        rs = [r for r in rows if test(r)]
        if not rs:
            continue
        ratios = [r.token_ratio for r in rs]
        out[kind] = {
            "runs": len(rs),
            "median_token_ratio_tb_short": median_or_none(ratios),
            "max_token_ratio_tb_short": round(max(ratios), 3),
            "median_text_tokens": statistics.median(r.text_tokens for r in rs),
            "median_tb_short_tokens": statistics.median(r.short_tokens for r in rs),
            "frame_named": pct(sum(r.frame for r in rs), len(rs)),
            "frame_named_tb_short": pct(sum(r.frame_in_short for r in rs), len(rs)),
        }
    return out


VIEW_MEDIAN_TARGET = 0.35
VIEW_NEVER_ABOVE = 1.0
STRUCTURED_OVER_TEXT = 1.05
"""Targets of every view (issue 39): median <= ``VIEW_MEDIAN_TARGET`` of ``--tb=short``'s
tokens, never above ``VIEW_NEVER_ABOVE``; the ``structured`` view at most
``STRUCTURED_OVER_TEXT`` times the text's tokens plus its typed fields'."""


def view_figures(rows: list[Row]) -> dict[str, dict]:
    """Per view of ``VIEWS`` (rows that measured it): runs, tokens over ``--tb=short``'s
    (median, worst, runs above ``VIEW_NEVER_ABOVE``), median tokens, and the bug's line
    named (over all runs, and where ``--tb=short`` names it); for ``structured``, its
    tokens over the text's (median, worst) and the most it exceeds ``STRUCTURED_OVER_TEXT``
    times the text's, in tokens (the answer's JSON escapes and the typed fields)."""
    out: dict[str, dict] = {}
    for view in VIEWS:
        rs = [r for r in rows if r.view_tokens(view)]
        if not rs:
            continue
        ratios = [r.view_ratio(view) for r in rs]
        shown = [r for r in rs if r.frame_in_short]
        out[view] = {
            "runs": len(rs),
            "median_token_ratio_tb_short": median_or_none(ratios),
            "max_token_ratio_tb_short": round(max(ratios), 3),
            f"runs_above_{VIEW_NEVER_ABOVE}x": sum(x > VIEW_NEVER_ABOVE for x in ratios),
            "median_tokens": statistics.median(r.view_tokens(view) for r in rs),
            "frame_named": pct(sum(r.view_names_frame(view) for r in rs), len(rs)),
            "frame_named_where_tb_short_has_it": pct(sum(r.view_names_frame(view) for r in shown), len(shown)),
        }
        if view == "structured":
            over = [r.structured_tokens / r.text_tokens for r in rs if r.text_tokens]
            out[view]["median_tokens_over_text"] = median_or_none(over)
            out[view]["max_tokens_over_text"] = round(max(over), 3) if over else None
            out[view]["max_tokens_beyond_105pc_of_text"] = round(
                max(r.structured_tokens - STRUCTURED_OVER_TEXT * r.text_tokens for r in rs), 1
            )
            out[view]["median_typed_fields_tokens"] = statistics.median(r.fields_tokens for r in rs)
    return out


def kind_view_figures(rows: list[Row]) -> dict[str, dict[str, dict]]:
    """Per kind of ``KINDS`` that has runs, per view (``view_figures``' first figures)."""
    out: dict[str, dict[str, dict]] = {}
    for kind, test in KINDS.items():
        rs = [r for r in rows if test(r)]
        if rs:
            out[kind] = view_figures(rs)
    return out


def against_text_before(rows: list[Row], before: dict[tuple[str, str, str, str], int]) -> dict[str, dict]:
    """Per call (plain, coverage, affected): the ``structured`` view of ``rows`` against
    the text an earlier run answered for the same bug, mode and call (``before``: its
    ``text_tokens`` by ``(project, bug, mode, call)``; ``--text-before``), the issue's
    bound for that view: at most ``STRUCTURED_OVER_TEXT`` times that text plus a few dozen
    tokens of typed fields. Gives the runs compared, the structured view's tokens and the
    text's over the earlier text (median, worst), the most tokens beyond
    ``STRUCTURED_OVER_TEXT`` times the earlier text with and without the typed fields
    (without: what the answer's JSON costs beyond it, escapes included), and the typed
    fields' tokens (median, most)."""
    out: dict[str, dict] = {}
    for call in sorted({r.call for r in rows}):
        pairs = [
            (r, before[(r.project, r.bug, r.mode, r.call)])
            for r in rows
            if r.call == call and r.structured_tokens and before.get((r.project, r.bug, r.mode, r.call))
        ]
        if not pairs:
            continue
        out[call] = {
            "runs": len(pairs),
            "median_structured_over_text_before": median_or_none([r.structured_tokens / t for r, t in pairs]),
            "max_structured_over_text_before": round(max(r.structured_tokens / t for r, t in pairs), 3),
            "median_text_over_text_before": median_or_none([r.text_tokens / t for r, t in pairs]),
            "max_tokens_beyond_105pc_of_text_before": round(
                max(r.structured_tokens - STRUCTURED_OVER_TEXT * t for r, t in pairs), 1
            ),
            "max_tokens_beyond_105pc_of_text_before_and_fields": round(
                max(r.structured_tokens - r.fields_tokens - STRUCTURED_OVER_TEXT * t for r, t in pairs), 1
            ),
            "median_typed_fields_tokens": statistics.median(r.fields_tokens for r, _ in pairs),
            "max_typed_fields_tokens": max(r.fields_tokens for r, _ in pairs),
        }
    return out


def text_before(paths: list[Path]) -> dict[tuple[str, str, str, str], int]:
    """The ``text_tokens`` of the rows of earlier ``--json`` files, by ``(project, bug,
    mode, call)`` (a later file's row replaces an earlier one's)."""
    out: dict[tuple[str, str, str, str], int] = {}
    for path in paths:
        for raw in json.loads(path.read_text())["rows"]:
            out[(raw["project"], raw["bug"], raw["mode"], raw.get("call", "plain"))] = raw["text_tokens"]
    return out


def against_text_before_report(figures: dict[str, dict]) -> str:
    """Markdown lines of ``against_text_before``'s figures, one row per call."""
    if not figures:
        return ""
    lines = [
        "Structured view against the text before (`--text-before`; target: at most "
        f"{STRUCTURED_OVER_TEXT}x that text plus a few dozen tokens of typed fields):",
        "",
        "| call | runs | structured / text before: median | worst | text / text before: median "
        f"| most tokens beyond {STRUCTURED_OVER_TEXT}x: with fields | without | typed fields: median | most |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for call, f in figures.items():
        lines.append(
            f"| {call} | {f['runs']} | {f['median_structured_over_text_before']} "
            f"| {f['max_structured_over_text_before']} | {f['median_text_over_text_before']} "
            f"| {f['max_tokens_beyond_105pc_of_text_before']} "
            f"| {f['max_tokens_beyond_105pc_of_text_before_and_fields']} | {f['median_typed_fields_tokens']} "
            f"| {f['max_typed_fields_tokens']} |"
        )
    return "\n".join(lines) + "\n"


def views_report(rows: list[Row]) -> str:
    """Markdown: per call (plain, coverage, affected), the figures of each view
    (``view_figures``) against their targets, then per kind."""
    rs = [r for r in rows if r.status != "tool error" and r.structured_tokens]
    if not rs:
        return "Views: not measured in these rows (written before the answer views).\n"
    lines = [
        "Views (o200k tokens of what a model reads / `pytest -q --tb=short`'s; docs/SERVER.md, *Answer views*):",
        "",
        "| call | view | runs | median | worst | above 1.0x | bug line named | where tb=short names it |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    calls = sorted({r.call for r in rs})
    for call in calls:
        for view, f in view_figures([r for r in rs if r.call == call]).items():
            lines.append(
                f"| {call} | {view} | {f['runs']} | {f['median_token_ratio_tb_short']} "
                f"| {f['max_token_ratio_tb_short']} | {f[f'runs_above_{VIEW_NEVER_ABOVE}x']} | {f['frame_named']} "
                f"| {f['frame_named_where_tb_short_has_it']} |"
            )
    lines.append("")
    for call in calls:
        figures = view_figures([r for r in rs if r.call == call])
        for view, f in figures.items():
            for key, bound in (
                ("median_token_ratio_tb_short", VIEW_MEDIAN_TARGET),
                ("max_token_ratio_tb_short", VIEW_NEVER_ABOVE),
            ):
                verdict = "met" if f[key] is not None and f[key] <= bound else "not met"
                lines.append(f"* {call}, {view}: target {key} <= {bound}: **{verdict}** ({f[key]})")
        s = figures["structured"]
        lines.append(
            f"* {call}, structured over text: median {s['median_tokens_over_text']}x, "
            f"worst {s['max_tokens_over_text']}x; "
            f"at most {s['max_tokens_beyond_105pc_of_text']} tokens beyond {STRUCTURED_OVER_TEXT}x the text "
            f"(typed fields: median {s['median_typed_fields_tokens']} tokens)"
        )
    lines += [
        "",
        "Per kind (median / worst tokens over `--tb=short`; bug line named):",
        "",
        "| call | kind | runs | text | structured | both | named text / structured / both / tb=short |",
        "|---|---|---:|---|---|---|---|",
    ]
    for call in calls:
        mine = [r for r in rs if r.call == call]
        for kind, per_view in kind_view_figures(mine).items():
            cells = [f"{f['median_token_ratio_tb_short']} / {f['max_token_ratio_tb_short']}" for f in per_view.values()]
            named = " / ".join(f["frame_named"].split(" ")[-1].strip("()") for f in per_view.values())
            runs = [r for r in mine if KINDS[kind](r)]
            by_short = f"{sum(r.frame_in_short for r in runs)}/{len(runs)}"
            lines.append(f"| {call} | {kind} | {len(runs)} | " + " | ".join(cells) + f" | {named} / {by_short} |")
    return "\n".join(lines) + "\n"


def token_report(rows: list[Row]) -> str:
    """The token summary over all runs (both modes together) with the targets, as Markdown lines."""
    rs = [r for r in rows if r.status != "tool error"]
    figures = token_figures(rs)
    lines = [f"Tokens (o200k), all {len(rs)} runs, answer text / `pytest -q --tb=short`:", ""]
    for key, value in figures.items():
        lines.append(f"* {key}: {value}")
    lines.append("")
    for key, bound in TOKEN_TARGETS:
        value = figures[key]
        verdict = "met" if value is not None and value <= bound else "not met"
        lines.append(f"* target {key} <= {bound}: **{verdict}** ({value})")
    kinds = kind_figures(rs)
    lines += [
        "",
        "Per kind (`KINDS`; a doctest bug that chains counts in both):",
        "",
        "| kind | runs | median tokens text/short | worst | median text tok | median tb=short tok "
        "| bug line named | by tb=short |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for kind, f in kinds.items():
        lines.append(
            f"| {kind} | {f['runs']} | {f['median_token_ratio_tb_short']} | {f['max_token_ratio_tb_short']} "
            f"| {f['median_text_tokens']} | {f['median_tb_short_tokens']} | {f['frame_named']} "
            f"| {f['frame_named_tb_short']} |"
        )
    above = sorted((r for r in rs if r.token_ratio > NEVER_ABOVE_TOKENS), key=lambda r: -r.token_ratio)
    lines += ["", f"Runs above {NEVER_ABOVE_TOKENS}x in tokens: {len(above)}", ""]
    for r in above:
        lines.append(
            f"* {r.project} {r.bug} ({r.mode}): {r.token_ratio:.2f}x, {r.text_tokens} / {r.short_tokens} tokens, "
            f"{r.failures} failure(s), {r.groups} group(s)"
        )
    return "\n".join(lines) + "\n"


def markdown(rows: list[Row], summary: dict[str, dict]) -> str:
    """The per-bug table and the per-mode summary as Markdown."""
    yn = "ny"
    lines = [
        "`how`: R = the bug raises in the library's code, C = chained (the bug's line is the chain's root), "
        "H = a chain whose root is a handled, expected exception, D = a doctest fails, "
        "- = a wrong value caught by a test. "
        "B = bytes, tok = o200k tokens.",
        "",
        "| project | bug | kind | how | mode | call | failures | groups | bug frame t/s/b | test loc | location "
        "| text B | text tok | structured tok | both tok | wire B | tb=short B | tb=short tok | tb=line B "
        "| tb=line tok | bytes text/short | tokens text/short |",
        "|---|---|---|:-:|---|---|---:|---:|:-:|:-:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        how = ("R" if r.raises else "-") + ("C" if r.chained else "") + ("H" if r.handled_chain else "")
        how += "D" if r.doctest else ""
        frames = "".join(yn[r.view_names_frame(v)] for v in VIEWS) if r.structured_tokens else yn[r.frame]
        lines.append(
            f"| {r.project} | {r.bug} | {r.kind} | {how} | {r.mode} | {r.call} | {r.failures} | {r.groups} "
            f"| {frames} | {yn[r.test_loc]} | {r.location} | {r.text_bytes} | {r.text_tokens} "
            f"| {r.structured_tokens or ''} | {r.view_tokens('both') or ''} | {r.wire_bytes} "
            f"| {r.short_bytes} | {r.short_tokens} | {r.line_bytes} | {r.line_tokens} | {r.ratio:.2f} "
            f"| {r.token_ratio:.2f} |"
        )
    lines += ["", "| figure | " + " | ".join(summary) + " |", "|---|" + "---|" * len(summary)]
    keys = next(iter(summary.values())).keys() if summary else []
    for key in keys:
        cells = []
        for mode in summary:
            value = summary[mode][key]
            cells.append(", ".join(f"{k} {v}" for k, v in sorted(value.items())) if isinstance(value, dict) else value)
        lines.append(f"| {key} | " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n\n" + token_report(rows) + "\n" + views_report(rows) + "\n" + misses_report(rows)


def misses(row: Row) -> list[tuple[str, str]]:
    """The targets ``row`` misses, each with why: the figures behind it (``why_tokens``,
    the groups' sites)."""
    out = []
    if row.token_ratio > NEVER_ABOVE_TOKENS:
        out.append((f"never above {NEVER_ABOVE_TOKENS}x in tokens ({row.token_ratio:.2f}x)", why_tokens(row)))
    elif row.failures == 1 and row.token_ratio > ONE_FAILURE_TOKENS_TARGET:
        out.append((f"one failure <= {ONE_FAILURE_TOKENS_TARGET}x in tokens ({row.token_ratio:.2f}x)", why_tokens(row)))
    if row.raises and row.groups > 1:
        sites = "; ".join(row.group_sites[:5]) or "sites not kept in this row"
        if len(row.group_sites) > 5:
            sites += f"; {len(row.group_sites) - 5} more"
        out.append(
            (
                f"one group per raising bug ({row.groups} groups)",
                f"the failures differ in exception type or in their innermost project frame (docs/ENGINE.md, "
                f"*Groups*): {sites}",
            )
        )
    if row.frame_in_short and not row.frame:
        out.append(("the bug's line where --tb=short names it", "not named"))
    if not row.test_loc:
        out.append(("the failing test's `file:line`", "not named"))
    return out


def misses_report(rows: list[Row]) -> str:
    """Every run that misses a target, with why (``misses``), as a Markdown table."""
    rs = [r for r in rows if r.status != "tool error"]
    missed = [(r, m) for r in rs for m in misses(r)]
    lines = [f"Targets not met, run by run: {len({id(r) for r, _ in missed})} of {len(rs)} runs", ""]
    if missed:
        lines += ["| project | bug | mode | target | why |", "|---|---|---|---|---|"]
        for r, (target, why) in missed:
            lines.append(f"| {r.project} | {r.bug} | {r.mode} | {target} | {why.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


CHAIN_LINES = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)


async def verify(spec: BugProject, bugs: list[Bug], work: Path) -> bool:
    """Each bug applies cleanly, fails at least one test and is marked as it behaves (editable, plain pytest).

    ``raises`` must match the first failure's innermost frame in ``--tb=short`` (the
    library's or not), ``chained`` or ``handled_chain`` whether that failure's output has
    one of CHAIN_LINES, and a chained bug's line must be named in it (the root cause's frame);
    ``doctest`` whether a ``[doctest] name`` section fails.
    """
    setup = prepare(spec, "editable", work)
    baseline_n = failure_count(await run_pytest(setup, "--tb=no"))
    ok = True
    for bug in bugs:
        with Injected(bug, setup.library):
            out = await run_pytest(setup, "--tb=short")
        n = failure_count(out) - baseline_n
        frames = first_section_frames(out)
        raises = bool(frames) and classify(frames[-1][0], setup) == "library"
        chained = any(line in CHAIN_LINES for line in first_section(out))
        doctest = any(SECTION.match(line) and " [doctest] " in line for line in out.splitlines())
        problems = [] if n > 0 else ["NO FAILURE"]
        if raises != bug.raises:
            problems.append(f"raises is {raises}, marked {bug.raises}")
        if chained != (bug.chained or bug.handled_chain):
            problems.append(f"a chain is printed: {chained}; marked chained {bug.chained}, handled {bug.handled_chain}")
        if doctest != bug.doctest:
            problems.append(f"a doctest fails: {doctest}, marked {bug.doctest}")
        if bug.chained and not names(out, bug.file, bug.line):
            problems.append(f"{bug.file}:{bug.line} not in --tb=short")
        ok &= not problems
        verdict = f"  <-- {'; '.join(problems)}" if problems else ""
        print(f"{spec.project.name} {bug.id:<28} {real_projects.parse_pytest_line(out)[0]}{verdict}", flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "pytest-mcp-server" / "real-bugs")
    parser.add_argument("--only", nargs="*", default=None, help="project names (default: all)")
    parser.add_argument(
        "--bugs", nargs="*", default=None, help="PROJECT/ID of bugs to run (default: all bugs of the chosen projects)"
    )
    parser.add_argument("--mode", choices=(*MODES, "both"), default="both")
    parser.add_argument("--catalogue", type=Path, default=CATALOGUE)
    parser.add_argument("--json", type=Path, default=None, help="write rows and summary as JSON to this file")
    parser.add_argument("--markdown", type=Path, default=None, help="write the tables to this file")
    parser.add_argument("--server-src", type=Path, default=None, help="prepend DIR to the server's PYTHONPATH")
    parser.add_argument("--verify", action="store_true", help="only check that every bug fails a test")
    way = parser.add_mutually_exclusive_group()
    way.add_argument(
        "--coverage",
        action="store_true",
        help="call execute_tests with coverage: true in a git work tree of the unpatched project (editable "
        "mode only), so that the answer can name the changed lines the failing tests ran",
    )
    way.add_argument(
        "--affected",
        action="store_true",
        help="call execute_tests with affected: true in a git work tree of the unpatched project (editable "
        "mode only), its test map built before the first bug",
    )
    parser.add_argument(
        "--text-before",
        nargs="+",
        type=Path,
        default=None,
        help="--json files of an earlier run: the structured view is also compared with their text (same bug and call)",
    )
    parser.add_argument(
        "--from-json",
        nargs="+",
        type=Path,
        default=None,
        help="run nothing: report the rows of these --json files (merged, marks read again from the catalogue)",
    )
    args = parser.parse_args(argv)
    # the load as the measurement starts (unknown with --from-json: its rows were measured before)
    args.load_start = None if args.from_json else load_average()
    projects, bugs = load_catalogue(args.catalogue)
    if args.from_json:
        rows, took = rows_from_json(args.from_json, bugs, args.work / "outputs")
        return report(rows, took, args)
    if args.bugs:
        unknown = set(args.bugs) - {f"{b.project}/{b.id}" for b in bugs}
        if unknown:
            raise SystemExit(f"--bugs: {', '.join(sorted(unknown))} not in {args.catalogue} (give PROJECT/ID)")
        bugs = [b for b in bugs if f"{b.project}/{b.id}" in args.bugs]
    chosen = [
        p
        for p in projects
        if (not args.only or p.project.name in args.only) and any(b.project == p.project.name for b in bugs)
    ]
    if args.verify:
        ok = all([anyio.run(verify, p, [b for b in bugs if b.project == p.project.name], args.work) for p in chosen])
        return 0 if ok else 1
    modes = MODES if args.mode == "both" else (args.mode,)
    if args.coverage or args.affected:
        flag = "--coverage" if args.coverage else "--affected"
        if args.mode == "install":
            raise SystemExit(f"{flag} follows changes in the project's git work tree: use --mode editable")
        modes = ("editable",)  # installed code is outside the work tree: no change to name there
    start = time.monotonic()
    rows: list[Row] = []
    for mode in modes:
        for spec in chosen:
            mine = [b for b in bugs if b.project == spec.project.name]
            rows += anyio.run(measure_project, spec, mode, mine, args)
    return report(rows, time.monotonic() - start, args)


def rows_from_json(paths: list[Path], bugs: list[Bug], outputs: Path) -> tuple[list[Row], float]:
    """The rows of earlier ``--json`` files, in order, and their run seconds added up.

    ``raises`` and ``chained`` are taken from the catalogue (a mark corrected after a run
    counts); a row of a bug no longer in the catalogue keeps its marks. A later file's row
    replaces an earlier one of the same project, bug, mode and call. A row without
    ``token_parts``/``group_sites`` (written before they were kept) gets them from the
    run's kept outputs in ``outputs`` (``keep_outputs``) when they are there: the answer
    and ``--tb=short`` texts, and the groups of the structured content (the unpatched
    suite's failures are not known then: its groups would be counted too; the projects
    of the catalogue have none).
    """
    marks = {(b.project, b.id): b for b in bugs}
    fields = set(Row.__dataclass_fields__)
    rows: dict[tuple[str, str, str, str], Row] = {}
    took = 0.0
    for path in paths:
        data = json.loads(path.read_text())
        took += data.get("seconds", 0.0)
        for raw in data["rows"]:
            row = Row(**{k: v for k, v in raw.items() if k in fields})
            bug = marks.get((row.project, row.bug))
            if bug:
                row.raises, row.chained, row.handled_chain = bug.raises, bug.chained, bug.handled_chain
                row.doctest = bug.doctest
                row.notes = [n for n in row.notes if not n.startswith(RAISES_NOTE)]
                if row.raises_observed != row.raises:
                    row.notes.append(raises_note(row))
            fill_from_outputs(row, outputs)
            rows[(row.project, row.bug, row.mode, row.call)] = row
    order = {mode: i for i, mode in enumerate(MODES)}
    return sorted(rows.values(), key=lambda r: order[r.mode]), took


def fill_from_outputs(row: Row, outputs: Path) -> None:
    """``row``'s ``token_parts`` and ``group_sites`` from the outputs ``keep_outputs`` kept
    in ``outputs``, where the row lacks them and the files exist (named with the row's
    call, or, for a row written before calls were named, without)."""
    stem = outputs / f"{row.project}-{row.mode}-{row.call}-{row.bug}"
    if not stem.with_suffix(".answer.txt").is_file():
        stem = outputs / f"{row.project}-{row.mode}-{row.bug}"
    answer, short, wire = (stem.with_suffix(s) for s in (".answer.txt", ".short.txt", ".wire.json"))
    if not row.token_parts and answer.is_file() and short.is_file():
        row.token_parts = token_parts(answer.read_text(), short.read_text())
    if not row.group_sites:
        kept = stem.with_suffix(".summary.json")
        if kept.is_file():
            summary = json.loads(kept.read_text())
        elif wire.is_file():  # the typed structured content of an answer before the views
            summary = (json.loads(wire.read_text()).get("structuredContent") or {}).get("summary")
        else:
            summary = None
        if summary:
            row.group_sites = group_sites(summary, bug_groups(summary, set())[0])


def report(rows: list[Row], took: float, args: argparse.Namespace) -> int:
    """Print the tables of ``rows`` and write ``--markdown``/``--json``; exit status as documented."""
    summary = summarize(rows)
    ok_rows = [r for r in rows if r.status != "tool error"]
    before = against_text_before(ok_rows, text_before(args.text_before)) if args.text_before else {}
    table = markdown(rows, summary) + ("\n" + against_text_before_report(before) if before else "")
    print()
    print(table)
    print(f"{len(rows)} bug runs in {took:.0f}s")
    if args.markdown:
        args.markdown.write_text(table)
    if args.json:
        payload = {
            # the checkout measured is the server's (a worktree given as --server-src), as in benches/history.py
            PROVENANCE_KEY: provenance(args.load_start, args.server_src or REPO),
            "bench_commit": provenance(None, REPO)["commit"],
            "rows": [
                asdict(r) | {"ratio": r.ratio, "token_ratio": r.token_ratio, "wire_ratio": r.wire_ratio} for r in rows
            ],
            "summary": summary,
            "tokens_all_runs": token_figures([r for r in rows if r.status != "tool error"]),
            "tokens_per_kind": kind_figures([r for r in rows if r.status != "tool error"]),
            "views": {
                call: view_figures([r for r in rows if r.call == call and r.status != "tool error"])
                for call in sorted({r.call for r in rows})
            },
            "views_per_kind": {
                call: kind_view_figures([r for r in rows if r.call == call and r.status != "tool error"])
                for call in sorted({r.call for r in rows})
            },
            "seconds": round(took, 1),
        }
        if args.text_before:
            payload["views_against_text_before"] = {
                "files": [str(p) for p in args.text_before],
                "calls": before,
            }
        args.json.write_text(json.dumps(payload, indent=1))
    return 0 if all(r.failures > 0 and r.status != "tool error" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
