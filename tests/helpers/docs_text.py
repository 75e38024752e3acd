"""The project's Markdown docs as the docs tests (``tests/docs/``) read them.

A ``Doc`` splits a file into fenced code blocks and prose, and the prose into inline code
spans; everything keeps its line number, so that a failure says which doc, which line and
which name (``Problem``). Also here: what the docs name, in the form the tests resolve
(repository paths, dotted names, command lines with their options), and the names that
are not this project's (``FOREIGN_*``): other projects' files and objects the docs talk
about on purpose.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = ROOT / "src" / "pytest_mcp_server"


def doc_names() -> list[str]:
    """Every doc the tests read: the README, ``docs/*.md`` and ``benches/RESULTS.md``."""
    return ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")), "benches/RESULTS.md"]


@dataclass(frozen=True)
class Fence:
    """A fenced code block: the line of its first body line, its info string, its body."""

    line: int
    info: str
    body: str


@dataclass(frozen=True)
class Span:
    """Inline code (its text with line breaks made spaces) at ``line``."""

    line: int
    text: str


@dataclass(frozen=True)
class Problem:
    doc: str
    line: int
    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: `{self.name}`: {self.reason}"


def report(problems: list[Problem], what: str) -> str:
    """The assertion message: one line per problem, ``doc:line: `name`: reason``."""
    return f"{len(problems)} {what}:\n" + "\n".join(map(str, problems))


FENCE_LINE = re.compile(r"^ {0,8}(```+|~~~+)\s*([^`]*)$")
SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


@dataclass(frozen=True)
class Doc:
    name: str
    text: str

    @classmethod
    def read(cls, name: str) -> Doc:
        return cls(name, (ROOT / name).read_text(encoding="utf-8"))

    def line_at(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1

    @cached_property
    def _split(self) -> tuple[list[Fence], str]:
        """The fences, and the text with every fence's lines blanked (offsets kept)."""
        fences: list[Fence] = []
        out: list[str] = []
        opened: tuple[str, int, str] | None = None
        body: list[str] = []
        for i, line in enumerate(self.text.split("\n"), start=1):
            m = FENCE_LINE.match(line)
            if opened is None and m:
                opened, body = (m.group(1)[0] * 3, i + 1, m.group(2).strip()), []
                out.append(" " * len(line))
            elif opened is not None and m and m.group(1).startswith(opened[0]) and not m.group(2).strip():
                fences.append(Fence(opened[1], opened[2], "\n".join(body)))
                opened = None
                out.append(" " * len(line))
            elif opened is not None:
                body.append(line)
                out.append(" " * len(line))
            else:
                out.append(line)
        return fences, "\n".join(out)

    @property
    def fences(self) -> list[Fence]:
        return self._split[0]

    @property
    def prose(self) -> str:
        """The text outside fenced blocks (same offsets as ``text``)."""
        return self._split[1]

    @cached_property
    def spans(self) -> list[Span]:
        found = []
        for m in SPAN.finditer(self.prose):
            inner = m.group(2)
            if re.search(r"\n\s*\n", inner):  # a code span never crosses a paragraph
                continue
            found.append(Span(self.line_at(m.start()), " ".join(inner.split())))
        return found

    @cached_property
    def plain(self) -> str:
        """The prose with inline code blanked too (same offsets as ``text``)."""
        return SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), self.prose)

    def lines_of(self, text: str) -> Iterator[tuple[int, str]]:
        yield from enumerate(text.split("\n"), start=1)

    def section(self, heading: re.Pattern[str]) -> tuple[int, str]:
        """The first line and text of the section whose heading matches, up to the next
        heading of the same or a higher level."""
        lines = self.text.split("\n")
        levels = [len(m.group(1)) if (m := re.match(r"^(#{1,6}) ", line)) else 0 for line in self.prose.split("\n")]
        for i, line in enumerate(lines):
            if levels[i] and heading.search(line):
                end = next((j for j in range(i + 1, len(lines)) if 0 < levels[j] <= levels[i]), len(lines))
                return i + 1, "\n".join(lines[i:end])
        raise LookupError(f"{self.name}: no heading matching {heading.pattern!r}")

    def headings(self) -> list[tuple[int, int, str]]:
        """(line, level, text) of every heading outside fences."""
        return [
            (i, len(m.group(1)), m.group(2).strip())
            for i, line in self.lines_of(self.prose)
            if (m := re.match(r"^(#{1,6}) (.*)$", line))
        ]


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but ``-`` and ``_`` dropped,
    spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


# --- tables ------------------------------------------------------------------------------


def tables(text: str) -> Iterator[tuple[int, list[str], list[tuple[int, list[str]]]]]:
    """Each Markdown table of ``text``: (line of its header, header cells, [(line, cells)])."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) - 1:
        if lines[i].lstrip().startswith("|") and re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1]):
            header = split_row(lines[i])
            body = []
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                body.append((j + 1, split_row(lines[j])))
                j += 1
            yield i + 1, header, body
            i = j
        else:
            i += 1


def split_row(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip() for c in cells]


def code_names(cell: str) -> list[str]:
    """The inline-code names of a table cell (`` `node_ids` `` -> ``node_ids``)."""
    return [m.group(2) for m in SPAN.finditer(cell)]


# --- paths -------------------------------------------------------------------------------

REPO_DIRS = ("src", "tests", "benches", "scripts", "rust", "docs", "examples", "fuzz", ".ci", ".github")
PACKAGE_DIRS = ("adapters", "app", "run", "domain", "engine", "bench")
PATH = re.compile(
    r"(?<![\w./<>~$@:-])((?:" + "|".join(re.escape(d) for d in REPO_DIRS + PACKAGE_DIRS) + r")/[\w.*{},/-]*)"
)
# Not in a fresh clone on purpose: git-ignored caches and build output.
UNTRACKED = ("benches/data", "fuzz/corpus", "fuzz/artifacts", "target/", "dist/")


def expand_braces(path: str) -> list[str]:
    """``a/{b,c}.json`` -> ``a/b.json``, ``a/c.json``."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [p for alt in m.group(1).split(",") for p in expand_braces(path[: m.start()] + alt + path[m.end() :])]


def clean_path(raw: str) -> str:
    """A path as written, without what follows it in prose (``:12``, ``,``, ``.``)."""
    path = re.sub(r":\d.*$", "", raw)
    path = re.sub(r"[.,;:)]+$", "", path)
    return path


def repo_path(path: str) -> Path:
    """Where a doc's path points: repository-relative, or package-relative (``run/argv.py``)."""
    first = path.split("/", 1)[0]
    return (PACKAGE_DIR if first in PACKAGE_DIRS else ROOT) / path


def tracked_files() -> list[Path]:
    """The repository's own files (no caches, no build output, no VCS)."""
    skip = {
        ".git",
        "target",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        "node_modules",
    }
    out = []
    for p in ROOT.rglob("*"):
        rel = p.relative_to(ROOT).parts
        if any(part in skip or part.endswith(".egg-info") for part in rel):
            continue
        if p.is_file():
            out.append(p)
    return out


# --- commands ----------------------------------------------------------------------------


def command_lines(doc: Doc) -> Iterator[tuple[int, str]]:
    """Shell command lines: the lines of ``sh`` fences (continuations joined, comments
    dropped) and inline code spans."""
    for fence in doc.fences:
        if fence.info not in ("sh", "bash", "shell", "console", ""):
            continue
        joined = ""
        start = fence.line
        for i, line in enumerate(fence.body.split("\n")):
            if not joined:
                start = fence.line + i
            if line.rstrip().endswith("\\"):
                joined += line.rstrip()[:-1] + " "
                continue
            joined += line
            yield start, joined
            joined = ""
    for span in doc.spans:
        yield span.line, span.text


def invocations(line: str, program: str) -> Iterator[list[str]]:
    """The argument lists ``program`` is called with on a shell line (up to ``|``, ``&&``,
    ``;``, ``#``, ``)``, ``>``)."""
    for m in re.finditer(r"(?:^|[\s(;&|`])" + re.escape(program) + r"(?=\s|$)", line):
        rest = line[m.end() :]
        rest = re.split(r"\s(?:\||&&|;|#|>|2>)\s|[)]|\s#|\$\(", rest, maxsplit=1)[0]
        try:
            words = shlex.split(rest, comments=False)
        except ValueError:
            words = rest.split()
        yield words


def argparse_options(source: Path) -> set[str]:
    """The option strings a script's ``add_argument``/``addoption`` calls declare, read
    from its source (the script is not run)."""
    options: set[str] = set()
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("add_argument", "addoption"):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("-"):
                    options.add(arg.value)
    return options | {"-h", "--help"}


def option_name(word: str) -> str | None:
    """``--sizes=10MB`` -> ``--sizes``; None for a word that is no option."""
    m = re.match(r"^(--?[A-Za-z][\w-]*)", word)
    return m.group(1) if m else None


# --- names that are not this project's -----------------------------------------------------

# Dotted names whose first part is another project's object, as the docs talk about them:
# pytest's report objects and fields, coverage.py's data, the MCP SDK's classes, a project
# a benchmark ran on, the builtins.
FOREIGN_ROOTS = {
    "item",  # a pytest item (``item.fixturenames``)
    "C",  # a project's class in an example (``C.sides``)
    "Shape",  # a project's class in an example (``Shape.__doc__``)
    "crash",  # pytest-json-report: a phase's crash entry
    "longrepr",  # pytest's report attribute
    "report",  # a pytest report
    "data",  # coverage.py's JSON
    "sep",  # a separator line in the engine's rules
    "self",
    "tests",  # a test module of a project (tests.test_x)
    "_subtest",  # pytest's SubTestReport field
    "DoctestItem",  # pytest's
    "TerminalWriter",  # pytest's
    "Server",  # the MCP SDK's low-level server
    "clientInfo",  # MCP's initialize parameter: `clientInfo.name`
    "JSON",  # JavaScript's: `JSON.stringify`, what MCP clients hand their model
    "pythonX",  # `pythonX.Y`: a pattern of interpreter names
    "X",  # `X.Yt`: a pattern of version directories
    "a",  # `a.b.c`: an example module name (docstrings of domain/imports.py)
    "pkg",  # `pkg.mod.func`: an example module name
    "Class",  # `Class.method`: an example qualified name
    "junitparser",  # a parser the benchmark compares with (the bench extra)
    "ctx",  # the MCP SDK's request context of a tool call
    "collectors",  # pytest-json-report's JSON key
    "ReprTraceback",  # pytest's (_pytest._code.code)
    "ReprEntry",  # pytest's (_pytest._code.code)
}

# File names of other projects (benchmarked, or in examples of the rules).
FOREIGN_FILES = {"more.py", "exceptions.py", "truncate.py", "time.py", "attr_import_star.py"}

# Identifiers in backticks that belong to other tools: pytest's ini options, coverage.py's
# settings, the MCP SDK's modules, a benchmarked project's fixtures and tests.
FOREIGN_IDENTIFIERS = {
    "get_type_hints",  # typing's
    "__init_subclass__",  # the data model's class hook
    "log_format",  # pytest's ini option
    "FixtureLookupErrorRepr",  # pytest's repr of a fixture lookup error (ENGINE.md, *Fixture lookup errors*)
    "mcp_types",  # the MCP SDK's module
    "TokenVerifier",  # the MCP SDK's protocol (ours: BearerTokenVerifier)
    "restart_events",  # sys.monitoring's
    "_get_teardown_reports",  # pytest's terminal reporter (benches/RESULTS.md section 3)
    "lru_cache",  # functools'
    "TerminateProcess",  # the Windows API call that psutil's kill makes there
    "_warmup_i18n",  # humanize's fixture (RESULTS section 10)
    "test_apnumber",  # humanize's test
    "test_invalid_datetime_deserialization",  # marshmallow's test (RESULTS section 11)
}

# Options of other programs that the docs' prose names (pytest, its plugins, coverage.py,
# Claude Code, maturin); a command line names its program and is checked against it.
FOREIGN_OPTIONS = {
    "-k",
    "-m",
    "-n",
    "-o",
    "-p",
    "-q",
    "-x",
    "-l",
    "-W",
    "-X",
    "-rfE",
    "-vv",
    "-v",
    "--tb",
    "--maxfail",
    "--lf",
    "--ff",
    "--nf",
    "--sw",
    "--collect-only",
    "-c",
    "--rootdir",
    "--doctest-modules",
    "--pyargs",
    "--showlocals",
    "--junitxml",
    "--report-log",
    "--json-report",
    "--json-report-omit",
    "--json-report-summary",
    "--json-report-file",
    "--cov",
    "--cov-report",
    "--cov-fail-under",
    "--cov-context",
    "--no-cov",
    "--data-file",
    "--testmon",
    "--header",
    "--zig",
    "--release",
    "--compatibility",
}
