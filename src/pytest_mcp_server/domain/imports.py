"""The project's static import graph: which project files each file may import.

Why: a module-level block (a constant, a table) runs when its file is imported, before
any test, so no test is recorded as running it; so does a function called while a
module is imported. The rule its callers apply: a changed module-level block of file
F, or a changed function run while F was being imported, selects every test that ran
code in a file importing F, directly or through other imports, and the tests of those
files (``importers``).

Rule (Python's import system, the language reference, "The import system" and "The
import statement"): ``import a.b.c`` imports ``a``, then ``a.b``, then ``a.b.c``, each
package's ``__init__.py`` running before its submodules; ``from a.b import c`` imports
``a`` and ``a.b``, then ``a.b.c`` when ``c`` is a submodule rather than a name; a
relative import's ``.`` is the importing file's own package (its directory; for
``pkg/sub/__init__.py``, ``pkg/sub``), each further dot one directory up.
``importlib.import_module`` and ``__import__`` with constant arguments are read the
same way; with a computed name that starts with a literal (``"pkg.commands." + name``,
``f".{name}"`` with ``__package__``), as importing every module whose name starts so (a
relative one: every module of the package). A dotted name resolves to every project file whose path ends with
``a/b/c.py`` or ``a/b/c/__init__.py`` at a path-component boundary, so ``src/``
layouts, test directories put on ``sys.path`` and namespace packages need no
``sys.path``. Names that resolve to no project file (the standard library, third-party
packages) are dropped.

Every import statement counts, wherever it is (module level, functions,
``if TYPE_CHECKING:``, ``try``/``except``): an edge too many selects a test too many,
an edge missing leaves a test that the change breaks unselected. ``from package import
*`` loads the package, then each submodule its ``__all__`` names (the language
reference, "The import statement"; without ``__all__``, none): read from the package's
``__init__.py`` when it assigns ``__all__`` once, at module level, a list or tuple of
strings (the importing file then *reads* that file: its edges change with it). Where the
code does not say what it imports (a computed name, a star import of a package whose
``__all__`` is not such a list, ``import_module`` or ``__import__`` renamed or passed
around, a file that does not parse) the file is *opaque*, with the reason, and
``importers`` counts it as importing every file. Not
seen: other loaders (``runpy``, ``spec_from_file_location``, ``exec``), import hooks,
plugins named in configuration; the code they run is recorded where it runs.

No I/O, no processes: the callers read the files.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

_EMPTY: frozenset[str] = frozenset()
_CALLEES = ("import_module", "__import__")


@dataclass(frozen=True)
class FileImports:
    """What one file imports: ``targets``, the project files (root-relative,
    '/'-separated paths, the file itself left out) its import statements and calls may
    load; ``opaque``, when the code does not say all it imports, the first reason by
    line as ``"path:line phrase"`` (e.g. ``"pkg/loader.py:12 calls
    importlib.import_module with a computed name"``), else None."""

    targets: frozenset[str]
    opaque: str | None = None
    parsed: bool = True
    """False when the file does not parse (then ``opaque`` says so): as the project's
    Python may read newer syntax than the server's, it may still import anything."""
    reads: frozenset[str] = frozenset()
    """The other project files whose content decided ``targets`` (the packages a star
    import reads ``__all__`` from): when one of them changes, so may this file's edges."""


class ProjectFiles:
    """The project's Python files (root-relative, '/'-separated paths; names not ending
    in ``.py`` are ignored), indexed once by every dotted name each file could be
    imported as: ``src/pkg/mod.py`` under ``mod``, ``pkg.mod`` and ``src.pkg.mod``;
    ``src/pkg/__init__.py`` under ``pkg`` and ``src.pkg`` (a suffix stops at a
    directory that is not an identifier, which no dotted name can spell)."""

    def __init__(self, paths: Iterable[str], read: Callable[[str], bytes | None] | None = None) -> None:
        """``read``: a file's content by its path (None when it cannot be read; without
        ``read``, none can: a star import of a package is then opaque)."""
        self.read = read
        self.paths: frozenset[str] = frozenset(p for p in paths if p.endswith(".py"))
        index: dict[str, set[str]] = {}
        for path in self.paths:
            parts = path[:-3].split("/")
            if parts[-1] == "__init__":
                parts.pop()
            for start in range(len(parts) - 1, -1, -1):
                if not parts[start].isidentifier():
                    break
                index.setdefault(".".join(parts[start:]), set()).add(path)
        self._by_name = {name: frozenset(found) for name, found in index.items()}

    def named(self, dotted: str) -> frozenset[str]:
        """The files an absolute name (``"a.b.c"``) may be: every ``.../a/b/c.py`` and
        ``.../a/b/c/__init__.py``; empty when none (stdlib, third-party)."""
        return self._by_name.get(dotted, _EMPTY)

    def named_path(self, path: str) -> bool:
        """Whether ``path`` is one of the files."""
        return path in self.paths

    def resolve(self, importer: str, dotted: str) -> frozenset[str]:
        """The files an import of ``dotted`` written in ``importer`` may load: the module
        and the packages on the way (leading dots: relative to ``importer``'s package)."""
        level = len(dotted) - len(dotted.lstrip("."))
        module = dotted[level:]
        parts = module.split(".") if module else []
        if level:
            directory = importer.rpartition("/")[0]
            steps = directory.split("/") if directory else []
            if level - 1 > len(steps):
                return _EMPTY
            anchor = "/".join(steps[: len(steps) - level + 1])
            found = set(self.under(anchor, ""))
            for end in range(1, len(parts) + 1):
                found |= self.under(anchor, ".".join(parts[:end]))
            return frozenset(found)
        return frozenset().union(*(self.named(".".join(parts[:end])) for end in range(1, len(parts) + 1)))

    def prefixed(self, prefix: str) -> frozenset[str]:
        """The files an absolute name starting with ``prefix`` (``"pkg.commands."``) may
        be: what ``import_module("pkg.commands." + name)`` can load."""
        return frozenset(f for name, found in self._by_name.items() if name.startswith(prefix) for f in found)

    def below(self, directory: str, prefix: str) -> frozenset[str]:
        """The files of the package at ``directory`` (``""``: the root) whose name relative
        to it starts with ``prefix``: what ``import_module("." + name, __package__)`` can
        load from there."""
        base = f"{directory}/" if directory else ""
        found = set()
        for path in self.paths:
            if not path.startswith(base):
                continue
            parts = path[len(base) : -3].split("/")
            if parts[-1] == "__init__":
                parts.pop()
            if parts and ".".join(parts).startswith(prefix):
                found.add(path)
        return frozenset(found)

    def under(self, directory: str, dotted: str) -> frozenset[str]:
        """The files a name relative to ``directory`` (``""``: the root) is:
        ``directory/a/b.py`` or ``directory/a/b/__init__.py``; ``dotted`` empty names
        the directory's own package, ``directory/__init__.py``."""
        base = "/".join(part for part in (directory, dotted.replace(".", "/")) if part)
        found = {f"{base}/__init__.py" if base else "__init__.py"}
        if dotted:
            found.add(f"{base}.py")
        return frozenset(found & self.paths)


def file_imports(path: str, content: bytes, files: ProjectFiles) -> FileImports:
    """The project files the file at ``path`` (root-relative) with ``content`` (bytes
    as read) may import, resolved against ``files``. Content that ``ast.parse`` refuses
    gives no targets and an opaque reason (the project's Python may read syntax this
    one cannot). Raises nothing."""
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        line = getattr(error, "lineno", None)
        where = f"{path}:{line}" if line else path
        return FileImports(_EMPTY, f"{where} does not parse as Python ({type(error).__name__})", parsed=False)
    reader = _Reader(path, files)
    # import statements are statements: walking only statements is ~5x quicker than every
    # node, which is needed only when the text may call import_module or __import__
    calls = b"import_module" in content or b"__import__" in content
    for node in ast.walk(tree) if calls else _statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                reader.load(alias.name, 0, [], node.lineno)
        elif isinstance(node, ast.ImportFrom):
            reader.load(node.module or "", node.level, [alias.name for alias in node.names], node.lineno)
            if any(alias.name in _CALLEES and alias.asname for alias in node.names):
                reader.renamed(node)
        elif isinstance(node, ast.Call):
            reader.call(node)  # before its func: ast.walk gives a node before its children
        elif isinstance(node, ast.Name | ast.Attribute) and id(node) not in reader.called:
            if (node.id if isinstance(node, ast.Name) else node.attr) in _CALLEES:
                reader.renamed(node)
    opaque = min(reader.opaque)[1] if reader.opaque else None
    # a file is no edge of its own
    return FileImports(frozenset(reader.targets - {path}), opaque, reads=frozenset(reader.reads - {path}))


def importers(graph: Mapping[str, FileImports], changed: Iterable[str]) -> set[str]:
    """Every file of ``graph`` (path -> its imports) that imports one of ``changed``
    directly or through other files, the ``changed`` paths included (a reverse-edge
    breadth-first search; cycles are fine). The edges only: what an opaque file imports
    is unknown, and the caller decides for it (``opaque_files``; ``app.map_state``:
    every test depends on the change)."""
    reverse: dict[str, set[str]] = {}
    for path, imports in graph.items():
        for target in imports.targets:
            reverse.setdefault(target, set()).add(path)
    found = set(changed)
    queue = deque(found)
    while queue:
        for importer in reverse.get(queue.popleft(), ()):
            if importer not in found:
                found.add(importer)
                queue.append(importer)
    return found


def opaque_files(graph: Mapping[str, FileImports]) -> list[str]:
    """The opaque reasons of ``graph``'s files (``"path:line phrase"``), sorted."""
    return sorted(imports.opaque for imports in graph.values() if imports.opaque is not None)


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every statement of ``tree``, at any depth (function and class bodies, branches,
    handlers, ``match`` cases), without descending into expressions."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(
            c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt | ast.excepthandler | ast.match_case)
        )


def _constant(node: ast.expr | None) -> str | int | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str | int) else None


def _literal_prefix(node: ast.expr | None) -> str | None:
    """The literal start of a string built at run time (``"pkg." + name``,
    ``f"pkg.{name}"``, ``"pkg.%s" % name``), or None when it has none."""
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        left = node.left
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return left.value.split("%", 1)[0] if isinstance(node.op, ast.Mod) else left.value
        return _literal_prefix(left) if isinstance(node.op, ast.Add) else None
    return None


def _strings(node: ast.expr | None) -> list[str] | None:
    """The names of a ``fromlist`` (absent or None: none); None when not constant."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return []
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        names = [_constant(e) for e in node.elts]
        return [n for n in names if isinstance(n, str)] if all(isinstance(n, str) for n in names) else None
    return None


class _Reader:
    """Collects one file's targets and opaque reasons ``(line, reason)``."""

    def __init__(self, path: str, files: ProjectFiles) -> None:
        self.path, self.files = path, files
        self.targets: set[str] = set()
        self.reads: set[str] = set()
        self.opaque: list[tuple[int, str]] = []
        self.called: set[int] = set()  # ids of the ``func`` nodes of the calls read

    def load(self, module: str, level: int, names: list[str], line: int) -> None:
        """``from <level dots><module> import <names>``; ``names`` empty: ``import module``."""
        if level:
            directory = self.path.rpartition("/")[0]
            steps = directory.split("/") if directory else []
            if level - 1 > len(steps):
                return  # above the project: nothing of it
            anchor = "/".join(steps[: len(steps) - level + 1])

            def lookup(dotted: str) -> frozenset[str]:
                return self.files.under(anchor, dotted)

            self.targets |= lookup("")
        else:
            lookup = self.files.named
        parts = module.split(".") if module else []
        for end in range(1, len(parts) + 1):
            self.targets |= lookup(".".join(parts[:end]))
        for name in names:
            if name == "*":
                for package in sorted(p for p in lookup(module) if p.endswith("__init__.py")):
                    exported = self._exported(package)
                    if exported is None:
                        self._opaque(line, f"imports * from the package {package}: its __all__ is not a list of names")
                        break
                    self.reads.add(package)
                    for submodule in exported:
                        self.targets |= lookup(f"{module}.{submodule}" if module else submodule)
            else:
                self.targets |= lookup(f"{module}.{name}" if module else name)

    def _exported(self, package: str) -> list[str] | None:
        """The names ``package`` (an ``__init__.py``) exports to a star import: its
        ``__all__`` when assigned once at module level as a list or tuple of strings,
        ``[]`` when it has none (a star import then loads no submodule); None when it
        cannot be read, does not parse, or builds ``__all__`` otherwise."""
        content = self.files.read(package) if self.files.read is not None else None
        if content is None:
            return None
        try:
            tree = ast.parse(content)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        found: list[str] | None = None
        assigned = 0
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "__all__" and not isinstance(node.ctx, ast.Load):
                assigned += 1
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "__all__":
                return None  # __all__.append(...), __all__.extend(...)
        for node in tree.body:
            value: ast.expr | None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign):
                targets, value = [node.target], node.value
            else:
                continue
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                found = _strings(value) if isinstance(value, ast.List | ast.Tuple) else None
        if assigned == 0:
            return []
        return found if assigned == 1 else None

    def call(self, node: ast.Call) -> None:
        """``import_module(name, package)`` and ``__import__(name, globals, locals,
        fromlist, level)``, whatever object they are called on (``importlib.``,
        ``builtins.``, a bare name)."""
        func = node.func
        callee = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if callee not in _CALLEES:
            return
        self.called.add(id(func))
        shown = ast.unparse(func)
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(k.arg is None for k in node.keywords):
            self._opaque(node.lineno, f"calls {shown} with unpacked arguments")
            return
        order = ("name", "package") if callee == "import_module" else ("name", "globals", "locals", "fromlist", "level")
        args: dict[str, ast.expr | None] = {key: None for key in order}
        args.update(zip(order, node.args, strict=False))
        args.update((k.arg, k.value) for k in node.keywords if k.arg is not None and k.arg in order)
        name = _constant(args["name"])
        if not isinstance(name, str):
            if not self._bounded(node.lineno, callee, args):
                self._opaque(node.lineno, f"calls {shown} with a computed name")
        elif callee == "import_module":
            self._import_module(node.lineno, shown, name, args["package"])
        else:
            level = _constant(args["level"]) if args["level"] is not None else 0
            names = _strings(args["fromlist"])
            if not isinstance(level, int) or names is None:
                self._opaque(node.lineno, f"calls {shown} with a computed fromlist or level")
            else:
                self.load(name, level, names, node.lineno)

    def _bounded(self, line: int, callee: str, args: dict[str, ast.expr | None]) -> bool:
        """A computed name with a literal start (``"pkg.commands." + name``,
        ``f".{name}"`` with ``__package__``) can load only the modules whose names start
        so: edges to all of them (and to the packages on the way). False when the start
        does not bound it (none, or a relative one whose package is not known)."""
        prefix = _literal_prefix(args["name"])
        if not prefix:
            return False
        level = len(prefix) - len(prefix.lstrip("."))
        rest = prefix[level:]
        if callee == "__import__":
            given = _constant(args["level"]) if args["level"] is not None else 0
            if not isinstance(given, int) or (level and given):
                return False
            level = level or given
        elif level:
            package = args["package"]
            own = isinstance(package, ast.Name) and (
                package.id == "__package__" or (package.id == "__name__" and self.path.endswith("__init__.py"))
            )
            if not own:
                return False
        if level:
            directory = self.path.rpartition("/")[0]
            steps = directory.split("/") if directory else []
            if level - 1 > len(steps):
                return True  # above the project: nothing of it
            anchor = "/".join(steps[: len(steps) - level + 1])
            self.load("", level, [], line)
            self.targets |= self.files.below(anchor, rest)
            return True
        literal = rest.rpartition(".")[0]
        if literal:
            self.load(literal, 0, [], line)
        self.targets |= self.files.prefixed(rest)
        return True

    def _import_module(self, line: int, shown: str, name: str, package: ast.expr | None) -> None:
        level = len(name) - len(name.lstrip("."))
        if not level:
            self.load(name, 0, [], line)
        elif isinstance(package, ast.Name) and (
            package.id == "__package__" or (package.id == "__name__" and self.path.endswith("__init__.py"))
        ):
            self.load(name[level:], level, [], line)  # relative to this file's own package
        elif isinstance(base := _constant(package), str):
            bits = base.rsplit(".", level - 1)  # importlib.util.resolve_name
            if len(bits) >= level:
                self.load(".".join(part for part in (bits[0], name[level:]) if part), 0, [], line)
        elif package is not None:
            self._opaque(line, f"calls {shown} with a computed package")

    def renamed(self, node: ast.expr | ast.ImportFrom) -> None:
        """``import_module`` or ``__import__`` renamed, stored or passed on: calls made
        under another name are not seen."""
        self._opaque(node.lineno, f"uses {ast.unparse(node)} other than by calling it")

    def _opaque(self, line: int, phrase: str) -> None:
        self.opaque.append((line, f"{self.path}:{line} {phrase}"))
