"""Every module, function, path, option and tool parameter the docs name exists.

The docs are README.md, docs/*.md and benches/RESULTS.md (``docs_text.doc_names``). Each
test collects every problem and fails with one line per problem: which doc, which line,
which name, and why (``docs/SERVER.md:183: `mcp_adapter.build_http_app`: ...``). The
names checked:

* dotted names in inline code (`` `run.events` ``, `` `app.execute.execute_tests` ``,
  `` `engine.summarize` ``, `` `Runner.execute` ``, `` `summary.counts.flaky` ``): a
  module of ``pytest_mcp_server`` (by its path below the package, or its last parts) and
  its attributes, a class of the package and its attributes, or a field path of a
  tool's structured content; other roots must be importable (stdlib, dependencies) or
  listed in ``docs_text.FOREIGN_ROOTS``;
* repository paths anywhere in the text (``src/...``, ``tests/...``, ``benches/...``,
  ``scripts/...``, ``rust/...``, and package-relative ``run/argv.py``); globs must match;
* file names (`` `events.py` ``) and code identifiers (`` `render_text` ``,
  `` `LINE_CHARS` ``) in inline code: present in the project's code;
* options: in command lines of ``pytest-mcp-server`` (by subcommand), of
  ``python benches/*.py``/``scripts/*.py``; options in prose must be this project's or
  listed in ``docs_text.FOREIGN_OPTIONS``; SERVER.md's option tables are the serve
  parser's options, exactly;
* tool parameters: SERVER.md's argument table of each tool is its parameter model's
  fields, exactly; the README's tools table names only real parameters and result fields;
  SERVER.md's error table is ``FailureKind``, exactly;
* links and references: relative links and their anchors, "RESULTS section N",
  "docs/X.md, *Heading*".

A rename (a module, a function, an option) makes these fail at each doc line that still
uses the old name.
"""

from __future__ import annotations

import ast
import builtins
import glob
import importlib
import importlib.util
import inspect
import io
import re
import textwrap
import tokenize
import typing
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers.docs_text import (
    FOREIGN_FILES,
    FOREIGN_IDENTIFIERS,
    FOREIGN_OPTIONS,
    FOREIGN_ROOTS,
    PACKAGE_DIR,
    PATH,
    ROOT,
    UNTRACKED,
    Doc,
    Problem,
    anchor,
    argparse_options,
    clean_path,
    code_names,
    command_lines,
    doc_names,
    expand_braces,
    invocations,
    option_name,
    repo_path,
    report,
    tables,
    tracked_files,
)
from pydantic import BaseModel

DOCS = doc_names()


@cache
def doc(name: str) -> Doc:
    return Doc.read(name)


def all_docs() -> list[Doc]:
    return [doc(name) for name in DOCS]


# --- the package: modules, classes, structured content --------------------------------

PLUGIN_DIR = PACKAGE_DIR / "run" / "pytest_plugin"  # loaded into pytest, never imported by the server


@cache
def package_modules() -> dict[str, Path]:
    """Dotted path below the package (``run.events``; ``""`` for the package) -> file."""
    out: dict[str, Path] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py*")):
        if path.suffix not in (".py", ".pyi") or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(PACKAGE_DIR).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.setdefault(".".join(parts), path)
    return out


def module_candidates(parts: list[str]) -> list[tuple[str, list[str]]]:
    """(module, rest) for every package module whose dotted path ends with a prefix of
    ``parts`` (``events.read_outcomes`` -> ``("run.events", ["read_outcomes"])``)."""
    found = []
    for k in range(len(parts), 0, -1):
        prefix = parts[:k]
        for module in package_modules():
            mparts = module.split(".") if module else []
            if len(mparts) >= k and mparts[-k:] == prefix:
                found.append((module, parts[k:]))
        if found:
            return found
    return found


@cache
def static_names(path: Path) -> frozenset[str]:
    """Top-level names of a module read without importing it (the pytest plugins), with
    the names defined in its classes."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError:
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return frozenset(names)


def load(module: str) -> ModuleType | None:
    """The module imported, or None when it is read instead (``static_names``): the
    plugins (pytest's), ``__main__`` (it runs the CLI), and a module that does not import
    (its own tests say why)."""
    path = package_modules()[module]
    if PLUGIN_DIR in path.parents or path.stem == "__main__":
        return None
    try:
        return importlib.import_module("pytest_mcp_server" + ("." + module if module else ""))
    except Exception:
        return None


@cache
def instance_attributes(cls: type) -> dict[str, Any]:
    """The attributes a class's instances have that the class itself may not: annotated
    fields (dataclasses, ``NamedTuple``s: name -> annotation) and the names its methods
    assign on ``self`` (name -> None)."""
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith("pytest_mcp_server"):
            continue
        found.update(getattr(klass, "__annotations__", {}))
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    value = node.value
                    made = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else None
                    classes = package_classes().get(made or "", [])
                    found.setdefault(target.attr, classes[0] if len(classes) == 1 else UNKNOWN)
    return found


UNKNOWN = object()
"""An attribute whose type the test cannot tell: a dotted name past it is not checked."""


def has_attribute(obj: Any, name: str) -> tuple[bool, Any]:
    if isinstance(obj, type) and issubclass(obj, BaseModel) and name in obj.model_fields:
        return True, model_of(obj.model_fields[name].annotation)
    try:
        return True, getattr(obj, name)
    except AttributeError:
        pass
    if isinstance(obj, type) and name in instance_attributes(obj):
        annotation = instance_attributes(obj)[name]
        return True, annotation if isinstance(annotation, type) else UNKNOWN
    if isinstance(obj, ModuleType):  # a submodule not imported by its package
        try:
            return True, importlib.import_module(f"{obj.__name__}.{name}")
        except ImportError:
            pass
    return False, None


def resolve_chain(obj: Any, rest: list[str], what: str) -> str | None:
    """None when ``obj.rest[0].rest[1]...`` exists, else why not."""
    for name in rest:
        if obj is UNKNOWN:
            return None
        ok, value = has_attribute(obj, name)
        if not ok:
            return f"{what} has no attribute {name!r}"
        what, obj = f"{what}.{name}", value
    return None


def resolve_in_package(parts: list[str]) -> str | None | bool:
    """None: resolved; a reason: a package module or class matched but the rest did not;
    False: nothing of the package matched the first part."""
    reasons = []
    for module, rest in module_candidates(parts):
        path = package_modules()[module]
        loaded = load(module)
        if loaded is None:
            if not rest or rest[0] in static_names(path):
                return None
            reasons.append(f"pytest_mcp_server.{module} has no {rest[0]!r}")
            continue
        why = resolve_chain(loaded, rest, f"pytest_mcp_server.{module}".rstrip("."))
        if why is None:
            return None
        reasons.append(why)
    for cls in package_classes().get(parts[0], ()):  # several modules may have a class of that name
        why = resolve_chain(cls, parts[1:], parts[0])
        if why is None:
            return None
        reasons.append(why)
    if parts[0] in VARIABLE_TYPES:
        for cls in package_classes().get(VARIABLE_TYPES[parts[0]], ()):
            why = resolve_chain(cls, parts[1:], f"{parts[0]} ({cls.__name__})")
            if why is None:
                return None
            reasons.append(why)
    if parts[0] in structured_roots():
        why = walk_fields(parts)
        if why is None:
            return None
        reasons.append(why)
    return "; ".join(reasons) if reasons else False


@cache
def package_classes() -> dict[str, list[type]]:
    """Every class defined in the package, by name (two modules may define one name)."""
    found: dict[str, list[type]] = {}
    for module in package_modules():
        loaded = load(module)
        if loaded is None:
            continue
        for value in vars(loaded).values():
            if isinstance(value, type) and value.__module__.startswith("pytest_mcp_server"):
                if value not in found.setdefault(value.__name__, []):
                    found[value.__name__].append(value)
    return found


VARIABLE_TYPES = {
    "spec": "ToolSpec",
    "params": "ExecuteParams",
    "runner": "Runner",
    "config": "ServerConfig",
    "group": "RunGroup",
    "session": "Session",
}
"""Parameter names the docstrings use as the root of a dotted name (``runner.run_dirs``,
``spec.render``), and the class of that parameter: the rest must be its attribute."""


def tool_specs() -> list[Any]:
    from pytest_mcp_server.adapters.mcp.catalogue import TOOLS

    return list(TOOLS)


def model_of(annotation: Any) -> Any:
    """The pydantic model inside an annotation (``list[X] | None`` -> X), else the annotation."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = model_of(arg)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    return annotation


@cache
def structured_roots() -> dict[str, type[BaseModel]]:
    """First parts of structured-content paths: the result models' fields and the
    summary's (``omitted.failures`` is ``summary.omitted.failures``)."""
    from pytest_mcp_server.engine.models import ReportSummary

    roots: dict[str, type[BaseModel]] = {}
    for model in [spec.result for spec in tool_specs()] + [ReportSummary]:
        for name in model.model_fields:
            roots.setdefault(name, model)
    return roots


def walk_fields(parts: list[str]) -> str | None:
    model: Any = structured_roots()[parts[0]]
    where = model.__name__
    for name in parts:
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or name not in model.model_fields:
            return f"{where} has no field {name!r}"
        where, model = f"{where}.{name}", model_of(model.model_fields[name].annotation)
    return None


def model_vocabulary(model: type[BaseModel], seen: set[type] | None = None) -> set[str]:
    """Field names and literal values anywhere in a model's tree."""
    seen = set() if seen is None else seen
    if model in seen:
        return set()
    seen.add(model)
    names: set[str] = set()
    for name, field in model.model_fields.items():
        names.add(name)
        names |= annotation_vocabulary(field.annotation, seen)
    return names


def annotation_vocabulary(annotation: Any, seen: set[type]) -> set[str]:
    names: set[str] = set()
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_vocabulary(annotation, seen)
    if typing.get_origin(annotation) is typing.Literal:
        return {a for a in typing.get_args(annotation) if isinstance(a, str)}
    for arg in typing.get_args(annotation):
        names |= annotation_vocabulary(arg, seen)
    return names


# --- dotted names ------------------------------------------------------------------------

DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
FILE_SUFFIXES = {
    "py", "pyi", "rs", "toml", "cfg", "ini", "json", "jsonl", "md", "txt", "xml", "yml", "yaml",
    "sqlite", "png", "so", "lock", "whl", "data", "sh", "html",
}  # fmt: skip


def foreign_resolves(parts: list[str]) -> bool:
    if parts[0] in FOREIGN_ROOTS or hasattr(builtins, parts[0]):
        return True
    try:
        return importlib.util.find_spec(parts[0]) is not None
    except (ImportError, ValueError):
        return False


def dotted_problem(text: str) -> str | None:
    """Why the dotted name ``text`` (a module, function, class or field) resolves to
    nothing; None when it resolves, or is not a dotted name (a file name, prose)."""
    text = text.removesuffix("()")
    if not DOTTED.fullmatch(text) or text.rsplit(".", 1)[1] in FILE_SUFFIXES:
        return None
    parts = text.split(".")
    if parts[0] == "pytest_mcp_server":
        parts = parts[1:] or [""]
        why = resolve_in_package(parts) if parts != [""] else None
        if why is False:
            why = f"pytest_mcp_server has no module or attribute {parts[0]!r}"
        return why or None
    why = resolve_in_package(parts)
    if why is False:
        return (
            None
            if foreign_resolves(parts)
            else "names no module, class or structured-content field of pytest_mcp_server, and no "
            "importable module (another project's object? add its root to docs_text.FOREIGN_ROOTS)"
        )
    if why is not None and foreign_resolves(parts) and parts[0] not in structured_roots():
        return None  # the SDK's `mcp.client.stdio` is not our `adapters/mcp`
    return why or None


def test_dotted_names_resolve() -> None:
    problems = []
    for d in all_docs():
        for span in d.spans:
            why = dotted_problem(span.text)
            if why:
                problems.append(Problem(d.name, span.line, span.text, why))
    assert not problems, report(problems, "dotted names in the docs that do not resolve")


# --- paths and file names --------------------------------------------------------------------


@cache
def basenames() -> frozenset[str]:
    return frozenset(p.name for p in tracked_files())


@cache
def basenames_under_tests() -> frozenset[str]:
    return frozenset(p.name for p in (ROOT / "tests").rglob("*") if "fixtures" not in p.parts)


def path_problem(path: str, in_fence: bool) -> str | None:
    if any(path.startswith(u) for u in UNTRACKED):
        return None
    if in_fence and path.startswith("benches/results/"):
        return None  # a command's output file
    if re.match(r"src/(?!pytest_mcp_server\b)\w", path):
        return None  # another project's src/ layout (src/humanize/time.py)
    parts = path.rstrip("/").split("/")
    if parts[0] == "tests" and len(parts) > 1 and not (ROOT / "tests" / parts[1]).exists():
        if not any(c in path for c in "*?[{") and parts[-1] not in basenames_under_tests():
            return None  # a test project's own file (tests/test_x.py), not this repository's
    for one in expand_braces(path):
        target = repo_path(one.rstrip("/"))
        if any(c in one for c in "*?["):
            if not glob.glob(str(target)):
                return "matches no file of the repository"
        elif not target.exists():
            hint = ""
            within = PACKAGE_DIR if PACKAGE_DIR in target.parents else ROOT
            same = [p for p in tracked_files() if p.name == target.name and within in p.parents]
            if same:
                hint = f" (there is {same[0].relative_to(ROOT)})"
            return f"no such file or directory{hint}"
    return None


def test_paths_exist() -> None:
    problems = []
    for d in all_docs():
        fenced_lines = {f.line + i for f in d.fences for i in range(f.body.count("\n") + 1)}
        for m in PATH.finditer(d.text):
            path = clean_path(m.group(1))
            line = d.line_at(m.start())
            why = path_problem(path, in_fence=line in fenced_lines)
            if why:
                problems.append(Problem(d.name, line, path, why))
    assert not problems, report(problems, "paths in the docs that do not exist")


def test_file_names_exist() -> None:
    problems = []
    for d in all_docs():
        for span in d.spans:
            name = span.text
            if re.fullmatch(r"[\w-]+\.(py|rs|pyi)", name) and name not in basenames() and name not in FOREIGN_FILES:
                problems.append(
                    Problem(d.name, span.line, name, "no file of that name in the repository (FOREIGN_FILES?)")
                )
    assert not problems, report(problems, "file names in the docs that no file has")


@cache
def code_vocabulary() -> frozenset[str]:
    """Every identifier and every word of a non-docstring string in the project's Python
    (src, tests, benches, scripts, fuzz, examples), every word of its Rust outside
    comments, and every word of its shell scripts and CI workflows."""
    words: set[str] = set()
    for path in tracked_files():
        rel = path.relative_to(ROOT)
        if rel.parts[0] in (".ci", ".github", "scripts") and path.suffix not in (".py", ".pyi"):
            words |= set(re.findall(r"\w+", path.read_text(encoding="utf-8", errors="replace")))  # shell, workflows
            continue
        if rel.parts[0] not in ("src", "tests", "benches", "scripts", "fuzz", "examples", "rust"):
            continue
        words.add(path.stem)  # a module named by its name (`test_junit_corpus`)
        if path.suffix in (".py", ".pyi"):
            words |= python_words(path)
        elif path.suffix == ".rs":
            text = path.read_text(encoding="utf-8", errors="replace")
            text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
            words |= set(re.findall(r"\w+", text))
    return frozenset(words)


def python_words(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a fixture written broken on purpose
        out = set()
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.NAME:
                    out.add(tok.string)
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass
        return out
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            words.add(node.name)
        elif isinstance(node, ast.arg):
            words.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            words.add(node.arg)
        elif isinstance(node, ast.alias):
            words.update(re.findall(r"\w+", node.name))
            if node.asname:
                words.add(node.asname)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words.update(re.findall(r"\w+", node.value))
    return words


IDENTIFIER = re.compile(
    r"_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+_*|_*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"
)


def test_identifiers_exist() -> None:
    problems = []
    for d in all_docs():
        for span in d.spans:
            name = span.text.removesuffix("()")
            if IDENTIFIER.fullmatch(name) and name not in code_vocabulary() and name not in FOREIGN_IDENTIFIERS:
                problems.append(
                    Problem(d.name, span.line, name, "appears nowhere in the project's code (FOREIGN_IDENTIFIERS?)")
                )
    assert not problems, report(problems, "code names in the docs that the code does not have")


# --- docstrings of the package --------------------------------------------------------------

DOCSTRING_SPAN = re.compile(r"``([^`\n]+)``")
DOCSTRING_PATH = re.compile(
    r"(?<![\w./<>~$@:-])((?:src|tests|benches|scripts|rust|docs|examples|fuzz|\.ci|\.github|adapters|app|run|domain"
    r"|engine|bench)/[\w./-]*\.(?:py|pyi|rs|md|toml|json|yml|sh))"
)


@cache
def package_docstrings() -> list[tuple[str, int, str]]:
    """(file, line, text) of every docstring of the package, the plugin files included:
    a module's, a class's or a function's, and the string under an assignment (an
    attribute docstring)."""
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                found.append((rel, node.lineno, node.value.value))
    return found


def docstring_problems() -> list[Problem]:
    """The dotted names in double backticks (``run.process.run_members``, ``Runner.run_pytest()``)
    that resolve to nothing, and the repository or package paths (``run/argv.py``,
    docs/ENGINE.md) that do not exist."""
    problems = []
    for rel, line, text in package_docstrings():
        for m in DOCSTRING_SPAN.finditer(text):
            why = dotted_problem(m.group(1))
            if why:
                problems.append(Problem(rel, line + text.count("\n", 0, m.start()), m.group(1), why))
        for m in DOCSTRING_PATH.finditer(text):
            path = clean_path(m.group(1))
            why = path_problem(path, in_fence=False)
            if why:
                problems.append(Problem(rel, line + text.count("\n", 0, m.start()), path, why))
    return problems


def test_docstrings_name_modules_functions_and_files_that_exist() -> None:
    """A docstring of the package that names a module, function, class, field or file
    that does not exist fails here (e.g. ``tools.input_schema`` after the schemas moved to
    ``adapters.mcp.catalogue``)."""
    problems = docstring_problems()
    assert not problems, report(problems, "names in the package's docstrings that do not resolve")


def test_format_numbers_in_the_text_are_the_ones_written() -> None:
    """A file format number spelled out in the package's text or the docs (``{"format":
    3, ...}`` in the recorder's docstring while it wrote 4) is the one the code writes:
    the recorder's map files are the only JSON with a ``format`` number the package
    writes (``pytest_mcp_server_shared.RECORDER_FORMAT``)."""
    from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import RECORDER_FORMAT

    spelled = re.compile(r'"format":\s*(\d+)')
    problems = []
    files = [*sorted(PACKAGE_DIR.rglob("*.py")), *(ROOT / doc.name for doc in all_docs())]
    for path in files:
        text = path.read_text(encoding="utf-8")
        for m in spelled.finditer(text):
            if int(m.group(1)) != RECORDER_FORMAT:
                where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
                problems.append(f"{where}: {m.group()} where the recorder writes format {RECORDER_FORMAT}")
    assert not problems, "\n".join(problems)


# --- options -----------------------------------------------------------------------------


def parser_options(parser: Any) -> dict[str, set[str]]:
    """Options per subcommand path of an argparse parser ("" for the parser itself)."""
    import argparse

    out: dict[str, set[str]] = {"": set()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for path, opts in parser_options(sub).items():
                    out[(name + " " + path).strip()] = opts
        else:
            out[""] |= set(action.option_strings)
    return out


@cache
def cli_options() -> dict[str, set[str]]:
    """``pytest-mcp-server``'s options by subcommand: "serve", "summarize", "bench reports", ..."""
    from pytest_mcp_server.bench.cli import build_parser as bench_parser
    from pytest_mcp_server.cli import _build_parser

    options = parser_options(_build_parser())
    top = options.pop("")
    out = {name: opts | top for name, opts in options.items()}
    bench = parser_options(bench_parser())
    bench_top = bench.pop("")
    for name, opts in bench.items():
        out[f"bench {name}"] = opts | bench_top
    out["bench"] = bench_top
    return out


@cache
def own_options() -> frozenset[str]:
    """Every option this repository declares: the CLI's, the scripts', the plugin's, the
    test suite's."""
    options = set().union(*cli_options().values())
    for pattern in ("benches/*.py", "scripts/*.py", "fuzz/*.py", "tests/conftest.py", "src/**/pytest_plugin/*.py"):
        for path in ROOT.glob(pattern):
            options |= argparse_options(path)
    return frozenset(options)


def cli_problems(words: list[str]) -> list[tuple[str, str]]:
    """(option, reason) for each option of a ``pytest-mcp-server`` call its parser lacks."""
    commands = cli_options()
    if words and words[0] == "bench":
        sub = f"bench {words[1]}" if len(words) > 1 and f"bench {words[1]}" in commands else "bench"
    elif words and words[0] in commands:
        sub = words[0]
    elif words and words[0] in ("-h", "--help", "--version"):
        return []
    else:
        sub = "serve"  # the default command
    out = []
    for word in words:
        name = option_name(word)
        if name and name not in commands[sub]:
            out.append((name, f"`pytest-mcp-server {sub}` has no option {name}"))
    return out


def script_problems(script: str, words: list[str]) -> list[tuple[str, str]]:
    path = ROOT / script
    if not path.is_file() or path.suffix != ".py":
        return []  # a missing script is test_paths_exist's
    options = argparse_options(path)
    return [(name, f"{script} has no option {name}") for w in words if (name := option_name(w)) and name not in options]


def test_command_options_exist() -> None:
    problems = []
    for d in all_docs():
        for line, text in command_lines(d):
            for words in invocations(text, "pytest-mcp-server"):
                for name, why in cli_problems(words):
                    problems.append(Problem(d.name, line, name, why))
            for m in re.finditer(r"(?:^|[\s(;&`])python[\d.]*\s+((?:benches|scripts|fuzz)/[\w/]+\.py)", text):
                for words in invocations(text[m.start(1) :], m.group(1)):
                    for name, why in script_problems(m.group(1), words):
                        problems.append(Problem(d.name, line, name, why))
    assert not problems, report(problems, "options in the docs' command lines that the command does not take")


def test_options_in_prose_exist() -> None:
    problems = []
    known = own_options() | FOREIGN_OPTIONS
    for d in all_docs():
        for span in d.spans:
            name = option_name(span.text)
            if (
                not name
                or len(span.text.split()) > 3
                or span.text[len(name) : len(name) + 1] not in ("", " ", "=", "[")
            ):
                continue  # not an option and its value (a quoted message, a command)
            if name not in known:
                problems.append(
                    Problem(d.name, span.line, name, "no option of this repository's commands (FOREIGN_OPTIONS?)")
                )
    assert not problems, report(problems, "options in the docs that nothing declares")


def test_server_option_tables_are_the_serve_options() -> None:
    server = doc("docs/SERVER.md")
    documented: dict[str, int] = {}
    for line, header, body in tables(server.text):
        if header and header[0] == "option":
            for row_line, cells in body:
                for name in code_names(cells[0]):
                    opt = option_name(name)
                    if opt:
                        documented[opt] = line + (row_line - line)
    serve = cli_options()["serve"] - {"-h", "--help", "--version"}
    problems = [
        Problem(server.name, line, opt, "documented as an option of the server, which has no such option")
        for opt, line in documented.items()
        if opt not in serve
    ]
    problems += [
        Problem(server.name, 0, opt, "an option of `pytest-mcp-server serve` missing from SERVER.md's option tables")
        for opt in sorted(serve - set(documented))
    ]
    assert not problems, report(problems, "differences between SERVER.md's option tables and the serve parser")


# --- tools -------------------------------------------------------------------------------


def test_tool_argument_tables_are_the_parameter_models() -> None:
    server = doc("docs/SERVER.md")
    problems = []
    for spec in tool_specs():
        try:
            start, section = server.section(re.compile(rf"^###+ `{spec.name}`"))
        except LookupError:
            problems.append(Problem(server.name, 0, spec.name, "no `### `tool`` section"))
            continue
        found = next(((line, body) for line, header, body in tables(section) if header[0] == "argument"), None)
        if found is None:
            problems.append(Problem(server.name, start, spec.name, "its section has no `| argument | ...` table"))
            continue
        line, body = found
        documented = {}
        for row_line, cells in body:
            for name in code_names(cells[0]):
                documented[name] = start + row_line - 1
        fields = set(spec.params.model_fields)
        problems += [
            Problem(server.name, at, name, f"{spec.name} takes no such parameter ({spec.params.__name__})")
            for name, at in documented.items()
            if name not in fields
        ]
        problems += [
            Problem(server.name, start + line - 1, name, f"a parameter of {spec.name} missing from its table")
            for name in sorted(fields - set(documented))
        ]
    assert not problems, report(problems, "differences between SERVER.md's argument tables and the tools")


def test_readme_tools_table_names_real_parameters_and_fields() -> None:
    readme = doc("README.md")
    specs = {spec.name: spec for spec in tool_specs()}
    problems = []
    seen = set()
    for _, header, body in tables(readme.text):
        if header[:3] != ["tool", "arguments", "returns"]:
            continue
        for row_line, cells in body:
            tool = code_names(cells[0])[0]
            spec = specs.get(tool)
            if spec is None:
                problems.append(Problem(readme.name, row_line, tool, "no such tool"))
                continue
            seen.add(tool)
            args = {n for n in code_names(cells[1]) if re.fullmatch(r"[a-z][a-z0-9_]*", n)}
            problems += [
                Problem(readme.name, row_line, n, f"{tool} takes no such parameter")
                for n in sorted(args - set(spec.params.model_fields))
            ]
            problems += [
                Problem(readme.name, row_line, n, f"a parameter of {tool} missing from the README's table")
                for n in sorted(set(spec.params.model_fields) - args)
            ]
            vocabulary = model_vocabulary(spec.result)
            problems += [
                Problem(readme.name, row_line, n, f"no field or value of {spec.result.__name__}")
                for n in code_names(cells[2])
                if re.fullmatch(r"[a-z][a-z0-9_]*", n) and n not in vocabulary and n not in spec.params.model_fields
            ]
    problems += [
        Problem(readme.name, 0, t, "a tool missing from the README's table") for t in sorted(set(specs) - seen)
    ]
    assert not problems, report(problems, "problems in the README's tools table")


def test_error_table_is_the_failure_kinds() -> None:
    from pytest_mcp_server.domain.failures import FailureKind

    kinds = set(typing.get_args(FailureKind))
    server = doc("docs/SERVER.md")
    start, section = server.section(re.compile(r"^###+ Errors"))
    rows: dict[str, tuple[int, str]] = {}
    for _, header, body in tables(section):
        if header[0] == "kind":
            for row_line, cells in body:
                for name in code_names(cells[0]):
                    rows[name] = (start + row_line - 1, cells[1])
    problems = [Problem(server.name, at, k, "no such FailureKind") for k, (at, _) in rows.items() if k not in kinds]
    problems += [
        Problem(server.name, start, k, "a FailureKind missing from the error table") for k in kinds - set(rows)
    ]
    if "coverage_missing" in rows:
        at, meaning = rows["coverage_missing"]
        for arg in ("coverage", "affected"):
            if f"`{arg}" not in meaning:
                problems.append(Problem(server.name, at, "coverage_missing", f"its row does not name `{arg}`"))
    assert not problems, report(problems, "differences between SERVER.md's error table and FailureKind")


# --- links and references ----------------------------------------------------------------

LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")


def heading_anchors(d: Doc) -> set[str]:
    return {anchor(text) for _, _, text in d.headings()}


def test_links_resolve() -> None:
    problems = []
    for d in all_docs():
        for m in LINK.finditer(d.prose):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, frag = target.partition("#")
            line = d.line_at(m.start())
            path = (ROOT / d.name).parent / file if file else ROOT / d.name
            if not path.exists():
                problems.append(Problem(d.name, line, target, "links to no file"))
                continue
            if frag and path.suffix == ".md":
                rel = path.resolve().relative_to(ROOT).as_posix()
                if frag not in heading_anchors(doc(rel) if rel in DOCS else Doc.read(rel)):
                    problems.append(Problem(d.name, line, target, f"{rel} has no heading with that anchor"))
    assert not problems, report(problems, "links in the docs that lead nowhere")


DOC_HEADING_REF = re.compile(r"((?:docs/)?(?:SERVER|ENGINE|ARCHITECTURE|RELIABILITY|README)\.md),?\s+\*([^*]+?)\*")


def results_sections() -> set[int]:
    return {int(m.group(1)) for m in re.finditer(r"^## (\d+)\. ", doc("benches/RESULTS.md").text, re.M)}


def test_section_references_resolve() -> None:
    """ "RESULTS section 6", "benches/RESULTS.md, section 8", RESULTS' own "section 10";
    and "docs/SERVER.md, *Limits*" (a heading of that doc)."""
    problems = []
    sections = results_sections()
    for d in all_docs():
        text = d.plain if d.name != "benches/RESULTS.md" else d.prose
        for m in re.finditer(
            r"(?:RESULTS(?:\.md)?,?\s+)?\b[Ss]ections?\s+(\d+(?:(?:,\s*|\s+and\s+|\s+or\s+|-)\d+)*)", text
        ):
            before = text[max(0, m.start() - 40) : m.start()]
            about_results = "RESULTS" in m.group(0) or "RESULTS" in before or d.name == "benches/RESULTS.md"
            if not about_results:
                continue
            for n in map(int, re.findall(r"\d+", m.group(1))):
                if n not in sections:
                    problems.append(Problem(d.name, d.line_at(m.start()), m.group(0), f"RESULTS.md has no section {n}"))
        for m in DOC_HEADING_REF.finditer(d.prose):
            name = m.group(1) if "/" in m.group(1) or m.group(1) == "README.md" else f"docs/{m.group(1)}"
            if not (ROOT / name).exists():
                continue
            wanted = " ".join(m.group(2).replace("`", "").split())
            heads = [text.replace("`", "") for _, _, text in doc(name).headings()] if name in DOCS else []
            if not any(h == wanted or h.startswith(wanted) or wanted in h for h in heads):
                problems.append(Problem(d.name, d.line_at(m.start()), m.group(0), f"{name} has no heading {wanted!r}"))
    assert not problems, report(problems, "references to sections that do not exist")


@pytest.mark.parametrize("name", DOCS)
def test_doc_reads(name: str) -> None:
    """Every doc's fences close (an unclosed one would hide the rest from the checks)."""
    d = doc(name)
    opened = sum(1 for line in d.text.split("\n") if re.match(r"^ {0,8}(```|~~~)", line))
    assert opened % 2 == 0, f"{name}: an odd number of fence lines ({opened}): a code block is not closed"
