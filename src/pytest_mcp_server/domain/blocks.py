"""Code blocks of a source file, the unit the per-test map records (``run.testmap``).

A block is either one function (``def``/``async def``, methods and nested functions
included: a line belongs to the innermost function whose body holds it, from the
body's first statement to its last line; the decorators and the ``def`` line run when
the function is defined, so they belong to the code around it), or the file's
module-level code with every function that is not nested in another function left out
(imports, constants, class bodies, ``if`` blocks at module level). Each block has a
fingerprint: a hash of its normalised source (``ast.dump`` without positions, so
comments, blank lines and moving a function leave it as it was; docstrings left out:
each is an element of its own, ``domain.elements``), prefixed by its qualified name (two
equal bodies in two classes stay two blocks). An edit inside one
function changes that function's fingerprint (and those of the functions around it),
and nothing else in the file. Rule: pytest-testmon's block checksums (testmon 2.x,
``testmon/process_code.py``), with the decorators and signature counted with their
function rather than with the module: a new test function changes no other test's
blocks.

A file that is not Python, or that the server's Python cannot parse (a syntax error,
newer syntax), is one block: its whole content's hash.

No I/O, no processes: the callers read the files.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from pytest_mcp_server.domain.elements import (
    Element,
    import_names,
    module_elements,
    referenced_names,
    without_docstrings,
)

MODULE_BLOCK = "<module>"
"""The qualified name of a file's module-level block."""
WHOLE_FILE = "<file>"
"""The qualified name of the single block of a file that does not parse as Python."""

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _digest(name: str, text: str | bytes) -> str:
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return hashlib.blake2b(name.encode("utf-8", "surrogatepass") + b"\0" + data, digest_size=12).hexdigest()


@dataclass(frozen=True)
class Block:
    """One block: ``name`` (qualified: ``Class.method``, ``outer.<locals>.inner``,
    ``MODULE_BLOCK`` or ``WHOLE_FILE``), the lines of its body ``first``..``last``
    (1-based, inclusive; 0..0 for the module and whole-file blocks, which own every line
    no function body owns) and ``fingerprint`` (24 hex digits) of its whole source,
    decorators and signature included, docstrings left out; ``names``: the names its
    code refers to (``domain.elements.referenced_names``: a superset of its code
    objects' ``co_names``; the module block's, those of the module-level code), and
    ``blind``: how it reads a module's names by a computed name (``"line:N phrase"``),
    else None; ``start``: the line its definition starts on (its first decorator's, else
    its ``def`` line; 0 for the module and whole-file blocks), where a change to its
    signature or decorators is (they belong to the code around it, but change it)."""

    name: str
    first: int
    last: int
    fingerprint: str
    names: frozenset[str] = frozenset()
    blind: str | None = None
    start: int = 0


@dataclass
class FileBlocks:
    """The blocks of one file: ``module`` (the module-level or whole-file block) and
    ``functions`` sorted by first line; ``elements``, its module-level elements
    (``domain.elements.module_elements``; none for a file that is not parsed);
    ``starts``: each function's block by the line its definition starts on (its first
    decorator's, else its ``def`` line: its code object's ``co_firstlineno``).
    ``owner(line)`` is the block a line belongs to."""

    module: Block
    functions: list[Block] = field(default_factory=list)
    elements: tuple[Element, ...] = ()
    starts: dict[int, Block] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.functions.sort(key=lambda b: (b.first, -b.last))
        self._owners: list[int] | None = None
        self._blocks = [self.module, *self.functions]

    def fingerprints(self) -> set[str]:
        """Every block's fingerprint."""
        return {self.module.fingerprint, *(b.fingerprint for b in self.functions)}

    def _owner_table(self) -> list[int]:
        """Per line (index: line number), the index of the block owning it in
        ``[module, *functions]``; lines past the last function's are the module's."""
        owners = self._owners
        if owners is None:
            # one entry per line, built once: a test's data names thousands of lines.
            # Sorted by start, a nested function comes after the one holding it and
            # overwrites its lines: the innermost holder wins.
            owners = [0] * (max((b.last for b in self.functions), default=0) + 1)
            for index, block in enumerate(self.functions, start=1):
                owners[block.first : block.last + 1] = [index] * (block.last - block.first + 1)
            self._owners = owners
        return owners

    def owner(self, line: int) -> Block:
        """The innermost function whose body holds ``line``, else the module block."""
        owners = self._owner_table()
        return self._blocks[owners[line]] if 0 <= line < len(owners) else self.module

    def owners_of(self, lines: Sequence[int]) -> list[Block]:
        """The distinct blocks ``lines`` name, in no set order: a line number's ``owner``;
        a negative ``-N``, the function whose definition starts on line ``N``
        (``starts``: the recorder writes a function's entry so), or every block of the
        file when none does (the file is not the one that ran). One pass in C over the
        line numbers (a run's data names hundreds of thousands of them)."""
        if not lines:
            return []
        owners = self._owner_table()
        blocks = self._blocks
        entered: list[Block] = []
        if min(lines) < 0:
            for start in (-n for n in lines if n < 0):
                block = self.starts.get(start)
                if block is None:
                    return list(blocks)
                entered.append(block)
            lines = [n for n in lines if n >= 0]
        if not lines:
            found: set[int] = set()
        elif max(lines) < len(owners):
            found = set(map(owners.__getitem__, lines))
        else:  # a line past the last function: the module's
            found = {owners[line] if line < len(owners) else 0 for line in lines}
        return list({id(b): b for b in [*entered, *(blocks[index] for index in found)]}.values())

    def named(self, name: str) -> Block | None:
        """The function block with qualified name ``name`` (the first, if redefined)."""
        return next((b for b in self.functions if b.name == name), None)

    def by_fingerprint(self) -> dict[str, Block]:
        """Each block by its fingerprint."""
        return {b.fingerprint: b for b in [self.module, *self.functions]}


def whole_file_blocks(content: bytes) -> FileBlocks:
    """A file that is not parsed: one ``WHOLE_FILE`` block, the hash of ``content``."""
    return FileBlocks(module=Block(WHOLE_FILE, 0, 0, _digest(WHOLE_FILE, content)))


def file_blocks(content: bytes, python: bool = True, path: str = "") -> FileBlocks:
    """The blocks of a file's ``content`` (bytes as read) and its module-level elements
    (``path``: its path, named in the elements' reasons). ``python`` False, or content
    that ``ast.parse`` refuses, gives ``whole_file_blocks``."""
    if not python:
        return whole_file_blocks(content)
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return whole_file_blocks(content)
    elements = module_elements(path, tree)
    modules = import_names(tree)
    # a function's body starts at its first statement, its docstring included; its
    # definition at its first decorator (Python's co_firstlineno)
    defs = [n for n in ast.walk(tree) if isinstance(n, _Function)]
    firsts = {id(n): n.body[0].lineno for n in defs}
    begins = {id(n): min([n.lineno, *(d.lineno for d in n.decorator_list)]) for n in defs}
    without_docstrings(tree)  # a docstring is an element of its own, not its owner's code
    functions: list[Block] = []
    starts: dict[int, Block] = {}
    _collect(tree, "", functions, firsts, modules, (begins, starts))
    module_only = _WithoutFunctions().visit(tree)
    names, blind = referenced_names([module_only], modules)
    module = Block(
        MODULE_BLOCK, 0, 0, _digest(MODULE_BLOCK, ast.dump(module_only, include_attributes=False)), names, blind
    )
    return FileBlocks(module=module, functions=functions, elements=elements, starts=starts)


def _collect(
    node: ast.AST,
    prefix: str,
    out: list[Block],
    firsts: dict[int, int],
    modules: frozenset[str],
    starts: tuple[dict[int, int], dict[int, Block]],
) -> None:
    """Every function under ``node`` with its qualified name (``prefix`` is the
    enclosing classes' and functions' part, ``A.`` or ``f.<locals>.``), and by the line
    its definition starts on (``starts``: each def's start, and the map filled)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _Function):
            name = prefix + child.name
            last = child.end_lineno or child.lineno
            names, blind = referenced_names([child], modules)
            fingerprint = _digest(name, ast.dump(child, include_attributes=False))
            start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
            block = Block(name, firsts[id(child)], last, fingerprint, names, blind, start)
            out.append(block)
            starts[1][starts[0][id(child)]] = block
            _collect(child, name + ".<locals>.", out, firsts, modules, starts)
        elif isinstance(child, ast.ClassDef):
            _collect(child, prefix + child.name + ".", out, firsts, modules, starts)
        else:
            _collect(child, prefix, out, firsts, modules, starts)


class _WithoutFunctions(ast.NodeTransformer):
    """The module with every function left out (their code is their own blocks); class
    bodies and other module-level statements stay."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        return None

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        return None


def changed_functions(now: FileBlocks, recorded: AbstractSet[str]) -> list[tuple[int, int]]:
    """The body lines ``(first, last)`` of the functions of ``now`` (a file as it is)
    whose fingerprint is not among ``recorded`` (the fingerprints the map holds for the
    file): edited or new functions, innermost only (an edit inside a nested function
    changes the one around it too; the nested one is named), sorted. The code a change
    touched when there is no git diff to say it line by line."""
    changed = [b for b in now.functions if b.fingerprint not in recorded]
    innermost = [b for b in changed if not any(o is not b and b.first <= o.first and o.last <= b.last for o in changed)]
    return sorted((b.first, b.last) for b in innermost)
