"""Module-level elements of a source file, and the names a piece of code refers to: what
per-name reach is made of (``domain.reach``).

A file's module-level code (what runs when it is imported) is split into *elements*,
each with a key unique in the file, a fingerprint of the statements that make it, and
what it binds. The key producers (``module_elements``):

* ``binding``: a name bound at module level (``X = ...``, ``import x``, ``from m import
  x``, ``for``/``with``/``try`` targets, a name bound inside ``if``/``try``): key ``X``,
  the fingerprint of every statement binding it, in order. A subscript or attribute
  store (``TABLE[k] = v``, ``obj.attr = v``) binds its root name (and the attribute);
* ``function``: a ``def`` at module level, its header only (decorators, signature, name:
  the body is the function's own block, ``domain.blocks``): key its name. Flags: a hook
  (``pytest_*``), a fixture (a decorator named ``fixture``) and whether it is autouse;
* ``class``: a class's header (decorators, bases, keywords: key ``C``), and each
  statement of its body binding an attribute (key ``C.x``; a method's header: ``C.m``;
  a nested class: ``C.D``): owned by the class;
* ``export``: each name of a module's ``__all__`` when it is a list or tuple of strings
  (key ``*name``): a star import forwards exactly those;
* ``doc``: a docstring (the module's, a class's, a function's: key ``<qualname>.__doc__``,
  the module's ``__doc__``);
* ``star``: a ``from m import *`` (key ``*from m``): what it binds is the other module's;
* ``effect``: a statement run for its effects (a call as a statement, a computed binding:
  ``globals()[...] = ``, ``setattr``, ``exec``): key ``!<fingerprint>``; what it changes
  cannot be told from its text.

Each element keeps the names its evaluation reads (``reads``; ``"*"`` when it reads names
computed at run time), and the roots of the calls it makes at import (``calls``: the
imported module a callee comes from, ``""`` for a name of the file itself), so that the
caller can tell whether a change to it may have run project code.

``referenced_names`` gives the names a piece of code refers to (every identifier: the
names it loads, the attributes it reads, the names in its imports, keyword arguments,
strings spelling a dotted identifier such as ``mock.patch("pkg.mod.RATE")``): a safe
superset of the ``co_names`` of its code objects, and whether it reads a module's names
by a computed name.

No I/O: the callers read the files.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_mcp_server.domain.policy import DOTTED_NAME_CHARS, STATEMENT_SHOWN_CHARS

ElementKind = Literal["binding", "function", "class", "export", "doc", "star", "effect"]
"""What an element is (module docstring)."""

BUILTIN_NAMES = frozenset(dir(builtins))
"""Names a file may use without binding them: a call of one runs no project code
(unless the file rebinds it)."""
COMPUTED = "*"
"""The name standing for "any name": code that reads names computed at run time."""
_FIXTURE_DECORATORS = frozenset({"fixture", "yield_fixture"})
_Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Element:
    """One module-level element (module docstring): ``key`` (unique in its file),
    ``fingerprint`` (of the statements that make it), ``kind``, ``names`` (what it binds:
    the names a reader of it refers to), ``owner`` (the qualified name of the class or
    function it belongs to, or of the docstring's owner; ``""``: the module), ``reads``
    (the names its evaluation reads), ``calls`` (the roots of the calls it makes at
    import: an imported module's dotted name, ``""`` for a name of the file), ``line``
    (its first statement's), ``why`` (for an ``effect``: what it does), for a
    ``function``: ``hook``, ``fixture``, ``autouse``; for an import: the modules it
    ``imports`` (dotted; a relative one with its leading dots); ``mutates``: the objects
    it calls a method of at import (``_Calls.mutated``)."""

    key: str
    fingerprint: str
    kind: ElementKind
    names: frozenset[str] = frozenset()
    owner: str = ""
    reads: frozenset[str] = frozenset()
    calls: tuple[str, ...] = ()
    line: int = 0
    why: str = ""
    hook: bool = False
    fixture: bool = False
    autouse: bool = False
    imports: tuple[str, ...] = ()
    mutates: tuple[str, ...] = ()

    def to_json(self) -> list[Any]:
        """The element as the map keeps it (``from_json`` reads it back)."""
        flags = "".join(c for c, on in (("h", self.hook), ("f", self.fixture), ("a", self.autouse)) if on)
        return [
            self.key,
            self.fingerprint,
            self.kind,
            sorted(self.names),
            self.owner,
            sorted(self.reads),
            list(self.calls),
            self.line,
            self.why,
            flags,
            list(self.imports),
            list(self.mutates),
        ]

    @classmethod
    def from_json(cls, value: list[Any]) -> Element:
        """The element ``to_json`` wrote."""
        key, fingerprint, kind, names, owner, reads, calls, line, why, flags, imports, mutates = value
        return cls(
            key,
            fingerprint,
            kind,
            frozenset(names),
            owner,
            frozenset(reads),
            tuple(calls),
            line,
            why,
            "h" in flags,
            "f" in flags,
            "a" in flags,
            tuple(imports),
            tuple(mutates),
        )


def _digest(*parts: str) -> str:
    data = "\0".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def _dump(node: ast.AST) -> str:
    return ast.dump(node, include_attributes=False)


def is_docstring(node: ast.stmt) -> bool:
    """Whether ``node`` is a string constant standing alone as a statement."""
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _docstring(body: list[ast.stmt]) -> ast.stmt | None:
    return body[0] if body and is_docstring(body[0]) else None


def without_docstrings(tree: ast.AST) -> None:
    """Remove every docstring of ``tree`` (the module's, classes', functions'), in place:
    a docstring is an element of its own (``doc``), not part of its owner's code."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if _docstring(node.body) is not None:
                node.body = node.body[1:]


def _dotted_parts(text: str) -> list[str]:
    """The parts of a string spelling a dotted identifier (``"pkg.mod.RATE"``), else none."""
    parts = text.split(".")
    return parts if len(text) <= DOTTED_NAME_CHARS and all(p.isidentifier() for p in parts) else []


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call | ast.Starred):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def import_names(tree: ast.AST) -> frozenset[str]:
    """The names the file binds by an import statement anywhere (module objects, mostly):
    a computed ``getattr`` on one reads a module's names."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                found.add(alias.asname or alias.name.split(".")[0])
    return frozenset(found)


def _sys_modules(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "modules"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def _known_modules(top: ast.AST) -> set[int]:
    """The ids of the ``sys.modules`` nodes of ``top`` subscripted by a constant or by
    ``__name__``: a module named in the code, not one computed at run time."""
    known: set[int] = set()
    for node in ast.walk(top):
        if isinstance(node, ast.Subscript) and _sys_modules(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) or (isinstance(key, ast.Name) and key.id == "__name__"):
                known.add(id(node.value))
    return known


def _computed_read(node: ast.AST, modules: frozenset[str]) -> str | None:
    """What makes ``node`` read a module's names by a computed name, or None: ``globals()``,
    ``vars()``, ``exec``/``eval`` of a computed text, ``sys.modules``, ``__dict__`` or a
    ``getattr``-like call with a computed name on a name bound by an import (or on a
    module imported by a computed name)."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in ("globals", "vars"):
            return f"calls {name}()"
        if name in ("exec", "eval") and not (node.args and isinstance(node.args[0], ast.Constant)):
            return f"calls {name} on a computed text"
        if name in ("getattr", "hasattr", "setattr", "delattr") and len(node.args) >= 2:
            target, attribute = node.args[0], node.args[1]
            root = _root(target)
            on_module = (isinstance(root, ast.Name) and root.id in modules) or (
                isinstance(target, ast.Call) and _callee(target) in ("import_module", "__import__")
            )
            if on_module and not isinstance(attribute, ast.Constant):
                return f"calls {name} on a module with a computed name"
    elif isinstance(node, ast.Attribute):
        if _sys_modules(node):
            return "reads sys.modules"
        if node.attr == "__dict__" and isinstance(node.value, ast.Name) and node.value.id in modules:
            return f"reads {node.value.id}.__dict__"
    return None


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def referenced_names(
    nodes: Iterable[ast.AST], modules: frozenset[str] = frozenset(), *, loads_only: bool = False
) -> tuple[frozenset[str], str | None]:
    """Every name ``nodes`` refer to (module docstring), and the first way (by line) they
    read a module's names by a computed name (``"line:N phrase"``; ``modules``: the
    names the file binds by imports, ``import_names``), else None. ``loads_only``: the
    names stored into (``X = ...``, ``obj.attr = ...``) left out: what a statement reads
    to run, not what it binds."""
    found: set[str] = set()
    blind: tuple[int, str] | None = None
    for top in nodes:
        named = _known_modules(top)
        for node in ast.walk(top):
            if isinstance(node, ast.Name):
                if not (loads_only and not isinstance(node.ctx, ast.Load)):
                    found.add(node.id)
            elif isinstance(node, ast.Attribute):
                if not (loads_only and not isinstance(node.ctx, ast.Load)):
                    found.add(node.attr)
            elif isinstance(node, ast.alias):
                found.update([node.name, *node.name.split(".")])
                if node.asname:
                    found.add(node.asname)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.update([node.module, *node.module.split(".")])
            elif isinstance(node, ast.keyword) and node.arg:
                found.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.update(_dotted_parts(node.value))
            elif isinstance(node, ast.Global | ast.Nonlocal):
                found.update(node.names)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.add(node.name)
            elif isinstance(node, ast.arg):
                found.add(node.arg)
            why = _computed_read(node, modules) if id(node) not in named else None
            if why is not None:
                line = getattr(node, "lineno", 0)
                if blind is None or line < blind[0]:
                    blind = (line, why)
    return frozenset(found), (f"line:{blind[0]} {blind[1]}" if blind else None)


def _targets(node: ast.AST) -> Iterator[str]:
    """The names a store target binds: a name; each name of a tuple or list; the root
    name (and the attribute) of a subscript or attribute store."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List):
        for element in node.elts:
            yield from _targets(element)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)
    elif isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute):
            yield node.attr
        root = _root(node)
        if isinstance(root, ast.Name):
            yield root.id


def bound_names(statement: ast.stmt) -> set[str]:
    """The names a module-level statement binds when it runs: assignment targets,
    import aliases, ``def``/``class`` names, and those bound anywhere inside a compound
    statement (not inside a function or class body: those are not the module's)."""
    found: set[str] = set()
    todo: list[ast.AST] = [statement]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Assign):
            for target in node.targets:
                found.update(_targets(target))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            found.update(_targets(node.target))
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                found.update(_targets(target))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            found.update(_targets(node.target))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            found.update(_targets(node.optional_vars))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
        elif isinstance(node, ast.NamedExpr):
            found.update(_targets(node.target))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    found.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            found.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found.add(node.rest)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
            continue  # its body is not module-level code
        if isinstance(node, ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def _computed_binding(statement: ast.stmt) -> str | None:
    """What makes a module-level statement bind names computed at run time, or None."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Call):
            name = _callee(node)
            if name in ("setattr", "delattr", "exec"):
                return f"calls {name}"
            if isinstance(node.func, ast.Attribute) and node.func.attr == "update":
                inner = node.func.value
                if isinstance(inner, ast.Call) and _callee(inner) in ("globals", "vars", "locals"):
                    return f"calls {_callee(inner)}().update"
        elif isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            # the object stored into, down its chain: a module found at run time?
            chain: ast.expr = node.value
            while True:
                if isinstance(chain, ast.Call) and _callee(chain) in ("globals", "vars", "locals"):
                    return f"stores into {_callee(chain)}()"
                if isinstance(chain, ast.Attribute) and chain.attr in ("modules", "__dict__"):
                    return f"stores into {ast.unparse(chain)}"
                if isinstance(chain, ast.Attribute | ast.Subscript):
                    chain = chain.value
                elif isinstance(chain, ast.Call):
                    chain = chain.func
                else:
                    break
    return None


def _imports_of(tree: ast.Module) -> dict[str, str]:
    """Each name the module binds at its top level by an import -> the module it comes
    from (dotted; a relative import's is ``""``: the project's own)."""
    found: dict[str, str] = {}
    for statement in tree.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        found[alias.asname or alias.name] = "" if node.level else (node.module or "")
    return found


class _Calls:
    """The roots of the calls a piece of module-level code makes when it runs: the
    imported module a callee comes from, ``""`` for a name of the file itself (a
    builtin the file does not rebind runs no project code and is left out)."""

    def __init__(self, imported: dict[str, str], bound: set[str], modules: frozenset[str] = frozenset()) -> None:
        self.imported = imported
        self.bound = bound
        self.modules = modules  # bound by ``import x``: module objects

    def mutated(self, nodes: Iterable[ast.AST | None]) -> tuple[str, ...]:
        """The objects a piece of module-level code calls a method of (``app.route(...)``,
        ``commands.add(f)``, ``dispatch.register(int)``): a registry it may fill, which a
        test reaches through the object. A name of the file is given as itself, one
        imported by ``from m import x`` as ``x@m`` (the caller keeps it when ``m`` is the
        project's); a module (``import x``) and a builtin are left out."""
        found: set[str] = set()
        for top in nodes:
            for node in _evaluated(top) if top is not None else ():
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                root = _root(node.func)
                if not isinstance(root, ast.Name) or root.id in self.modules:
                    continue
                name = root.id
                if name in self.imported:
                    found.add(f"{name}@{self.imported[name]}")
                elif not (name in BUILTIN_NAMES and name not in self.bound):
                    found.add(name)
        return tuple(sorted(found))

    def root(self, callee: ast.expr) -> str | None:
        root = _root(callee)
        if not isinstance(root, ast.Name):
            return ""  # a call on a computed object: may be anything
        name = root.id
        if name in self.imported:
            return self.imported[name]
        if name in BUILTIN_NAMES and name not in self.bound:
            return None
        return ""

    def of(self, nodes: Iterable[ast.AST | None]) -> tuple[str, ...]:
        roots: set[str] = set()
        for top in nodes:
            if top is None:
                continue
            for node in _evaluated(top):
                if isinstance(node, ast.Call) and (root := self.root(node.func)) is not None:
                    roots.add(root)
        return tuple(sorted(roots))

    def decorators(self, decorators: list[ast.expr]) -> tuple[str, ...]:
        roots = {r for d in decorators if (r := self.root(d)) is not None}
        return tuple(sorted(roots | set(self.of(decorators))))

    def bases(self, node: ast.ClassDef) -> tuple[str, ...]:
        """A class whose base or metaclass is the project's runs project code when it is
        made (``__init_subclass__``, ``__set_name__``, the metaclass)."""
        roots = {r for b in [*node.bases, *(k.value for k in node.keywords)] if (r := self.root(b)) is not None}
        roots.discard("builtins")
        return tuple(sorted(roots | set(self.of([*node.bases, *node.keywords]))))


def _evaluated(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``node`` evaluated when it runs: lambda and function bodies left out."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if isinstance(child, ast.Lambda):
                todo.extend(child.args.defaults + [d for d in child.args.kw_defaults if d is not None])
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            else:
                todo.append(child)


def _header(node: _Function | ast.ClassDef) -> list[ast.AST]:
    """The parts of a ``def`` or ``class`` evaluated where it stands (not its body)."""
    parts: list[ast.AST] = list(node.decorator_list)
    if isinstance(node, ast.ClassDef):
        parts += [*node.bases, *node.keywords]
    else:
        parts += [node.args]
        if node.returns is not None:
            parts.append(node.returns)
    return parts


def _header_dump(node: _Function | ast.ClassDef) -> str:
    kind = type(node).__name__
    return "|".join([kind, node.name, *(_dump(p) for p in _header(node))])


def _fixture_facts(node: _Function) -> tuple[bool, bool, set[str]]:
    """Whether a ``def`` is a fixture (a decorator named ``fixture``), whether autouse,
    and the names it is requested by (its own, its ``name=``)."""
    fixture = autouse = False
    names = {node.name}
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        last = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if last not in _FIXTURE_DECORATORS:
            continue
        fixture = True
        for keyword in call.keywords if call is not None else ():
            if keyword.arg == "autouse":
                autouse = autouse or not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)
            elif (
                keyword.arg == "name"
                and isinstance(keyword.value, ast.Constant)
                and isinstance(keyword.value.value, str)
            ):
                names.add(keyword.value.value)
    return fixture, autouse, names


def _exported(statement: ast.stmt) -> list[str] | None:
    """The names an ``__all__ = [...]`` (or ``+=``) statement lists, when it is a list or
    tuple of strings; None otherwise."""
    value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign) else None
    if isinstance(value, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    ):
        return [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return None


@dataclass
class _Builder:
    """Collects one file's elements: statements by key, in order."""

    path: str
    modules: frozenset[str]
    calls: _Calls
    parts: dict[str, list[str]] = field(default_factory=dict)
    made: dict[str, Element] = field(default_factory=dict)

    def add(self, key: str, dump: str, element: Element) -> None:
        """Add a statement to ``key``'s element (its fingerprint covers every statement of
        the key, in order; the facts of the first are kept, the names and reads added up)."""
        self.parts.setdefault(key, []).append(dump)
        known = self.made.get(key)
        if known is None:
            self.made[key] = element
            return
        self.made[key] = Element(
            key,
            "",
            known.kind,
            known.names | element.names,
            known.owner,
            known.reads | element.reads,
            tuple(sorted(set(known.calls) | set(element.calls))),
            known.line,
            known.why or element.why,
            known.hook or element.hook,
            known.fixture or element.fixture,
            known.autouse or element.autouse,
            tuple(sorted(set(known.imports) | set(element.imports))),
            tuple(sorted(set(known.mutates) | set(element.mutates))),
        )

    def reads(self, nodes: Iterable[ast.AST]) -> frozenset[str]:
        names, blind = referenced_names(nodes, self.modules, loads_only=True)
        return names | {COMPUTED} if blind else names

    def elements(self) -> tuple[Element, ...]:
        out = []
        for key, element in sorted(self.made.items()):
            fingerprint = _digest(key, *self.parts[key])
            out.append(dataclasses.replace(element, fingerprint=fingerprint))
        return tuple(out)


def module_elements(path: str, tree: ast.Module) -> tuple[Element, ...]:
    """The module-level elements of the file at ``path`` whose parsed ``tree`` (with its
    docstrings) is given, sorted by key (module docstring)."""
    bound: set[str] = set()
    for statement in tree.body:
        bound |= bound_names(statement)
    module_names = frozenset(
        alias.asname or alias.name.split(".")[0]
        for statement in tree.body
        for node in ast.walk(statement)
        if isinstance(node, ast.Import)
        for alias in node.names
    )
    builder = _Builder(path, import_names(tree), _Calls(_imports_of(tree), bound, module_names))
    _docs(builder, tree.body, "", "")
    for statement in tree.body:
        if is_docstring(statement):
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            _function(builder, statement, "")
        elif isinstance(statement, ast.ClassDef):
            _class(builder, statement, "")
        else:
            _statement(builder, statement)
    return builder.elements()


def _definitions(body: list[ast.stmt]) -> Iterator[_Function | ast.ClassDef]:
    """The functions and classes defined in ``body``'s statements (inside ``if``,
    ``try``... too), not those inside them."""
    todo: list[ast.AST] = list(reversed(body))
    while todo:
        node = todo.pop()
        if isinstance(node, _Function | ast.ClassDef):
            yield node
        elif isinstance(node, ast.stmt | ast.excepthandler | ast.match_case):
            todo.extend(
                reversed(
                    [
                        c
                        for c in ast.iter_child_nodes(node)
                        if isinstance(c, ast.stmt | ast.excepthandler | ast.match_case)
                    ]
                )
            )


def _docs(builder: _Builder, body: list[ast.stmt], owner: str, prefix: str) -> None:
    """The docstring elements of ``body`` (owned by ``owner``, the qualified name of the
    module, ``""``, a class or a function) and of every function and class inside it,
    nested ones included (``prefix``: the qualified names' start inside it)."""
    doc = _docstring(body)
    if doc is not None:
        key = f"{owner}.__doc__" if owner else "__doc__"
        parts = frozenset(part for part in owner.replace(".<locals>", "").split(".") if part) | {"__doc__"}
        builder.add(key, _dump(doc), Element(key, "", "doc", parts, owner, line=doc.lineno))
    for node in _definitions(body):
        qualname = f"{prefix}.{node.name}" if prefix else node.name
        inside = f"{qualname}.<locals>" if isinstance(node, _Function) else qualname
        _docs(builder, node.body, qualname, inside)


def _function(builder: _Builder, node: _Function, owner: str, around: tuple[str, ...] = ()) -> None:
    """A ``def``'s header: a ``function`` element at module level, a ``class`` element
    (``C.m``) in a class body (``around``: the calls making the class makes)."""
    reads = builder.reads(_header(node))
    calls = builder.calls.decorators(node.decorator_list) + builder.calls.of([node.args, node.returns])
    calls = tuple(sorted(set(calls) | set(around)))
    fixture, autouse, names = _fixture_facts(node)
    mutates = builder.calls.mutated(node.decorator_list)
    if owner:
        key = f"{owner}.{node.name}"
        owned = frozenset({owner.rsplit(".", 1)[-1], *names})
        element = Element(
            key, "", "class", owned, owner, reads, calls, node.lineno, fixture=fixture, autouse=autouse, mutates=mutates
        )
        builder.add(key, _header_dump(node), element)
        return
    element = Element(
        node.name,
        "",
        "function",
        frozenset(names),
        "",
        reads,
        calls,
        node.lineno,
        hook=node.name.startswith("pytest_"),
        fixture=fixture,
        autouse=autouse,
        mutates=mutates,
    )
    builder.add(node.name, _header_dump(node), element)


def _class(builder: _Builder, node: ast.ClassDef, owner: str, around: tuple[str, ...] = ()) -> None:
    """A class's header (key its qualified name) and the elements of its body. Making the
    class runs its decorators, its bases' ``__init_subclass__`` and its metaclass on the
    whole body: each body element makes the header's calls too (``around``: those of
    the classes around it)."""
    qualname = f"{owner}.{node.name}" if owner else node.name
    made = set(builder.calls.decorators(node.decorator_list)) | set(builder.calls.bases(node)) | set(around)
    calls = tuple(sorted(made))
    names = frozenset({node.name} | ({owner.rsplit(".", 1)[-1]} if owner else set()))
    header = Element(
        qualname,
        "",
        "class",
        names,
        qualname,
        builder.reads(_header(node)),
        calls,
        node.lineno,
        mutates=builder.calls.mutated(node.decorator_list),
    )
    builder.add(qualname, _header_dump(node), header)
    for statement in node.body:
        if is_docstring(statement):
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            _function(builder, statement, qualname, calls)
        elif isinstance(statement, ast.ClassDef):
            _class(builder, statement, qualname, calls)
        else:
            reads = builder.reads([statement])
            body_calls = tuple(sorted(set(builder.calls.of([statement])) | made))
            for name in sorted(bound_names(statement)) or [f"!{_digest(_dump(statement))}"]:
                key = f"{qualname}.{name}"
                element = Element(
                    key, "", "class", frozenset({node.name, name}), qualname, reads, body_calls, statement.lineno
                )
                builder.add(key, _dump(statement), element)


def _imported_modules(statement: ast.stmt) -> tuple[str, ...]:
    """The modules the import statements of a module-level statement import (dotted; a
    relative one with its leading dots; ``from a import b`` gives ``a`` and ``a.b``: b
    may be a submodule)."""
    found: set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.add(base)
            joiner = "" if base.endswith(".") or not base else "."
            found.update(f"{base}{joiner}{alias.name}" for alias in node.names if alias.name != "*")
    return tuple(sorted(found))


def _statement(builder: _Builder, statement: ast.stmt) -> None:
    """Any other module-level statement: its bindings, exports, star imports, effects."""
    dump = _dump(statement)
    line = statement.lineno
    if isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names):
        key = f"*from {'.' * statement.level}{statement.module or ''}"
        why = f"{builder.path}:{line} imports * (what it binds is the other module's)"
        builder.add(key, dump, Element(key, "", "star", line=line, why=why))
    computed = _computed_binding(statement)
    names = bound_names(statement)
    calls = builder.calls.of([statement])
    if computed is not None or (not names and isinstance(statement, ast.Expr | ast.Assert | ast.Raise) and calls):
        key = f"!{_digest(dump)}"
        what = computed or f"runs {ast.unparse(statement).splitlines()[0][:STATEMENT_SHOWN_CHARS]}"
        builder.add(key, dump, Element(key, "", "effect", line=line, why=f"{builder.path}:{line} {what} at import"))
        if computed is not None:
            return
    if isinstance(statement, ast.Import | ast.ImportFrom):
        # each alias binds its name on its own: removing one name from an import changes no other
        module = "." * statement.level + (statement.module or "") if isinstance(statement, ast.ImportFrom) else ""
        for alias in statement.names:
            if alias.name == "*":
                continue
            name = alias.asname or alias.name.split(".")[0]
            single: ast.Import | ast.ImportFrom = (
                ast.ImportFrom(module=statement.module, names=[alias], level=statement.level)
                if isinstance(statement, ast.ImportFrom)
                else ast.Import(names=[alias])
            )
            reads = builder.reads([single])
            element = Element(
                name, "", "binding", frozenset({name}), "", reads, (), line, imports=_imported_modules(single)
            )
            builder.add(name, f"import|{module}|{alias.name}|{alias.asname}", element)
        return
    reads = builder.reads([statement])
    imports = _imported_modules(statement)
    mutates = builder.calls.mutated([statement])
    for name in sorted(names):
        element = Element(
            name, "", "binding", frozenset({name}), "", reads, calls, line, imports=imports, mutates=mutates
        )
        builder.add(name, dump, element)
        if name == "__all__":
            exported = _exported(statement)
            if exported is None:
                why = f"{builder.path}:{line} builds __all__ otherwise than as a list of names"
                builder.add("*__all__", dump, Element("*__all__", "", "effect", line=line, why=why))
            for export in exported or ():
                key = f"*{export}"
                builder.add(key, "", Element(key, "", "export", frozenset({export}), line=line))
