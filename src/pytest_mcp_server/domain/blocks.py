"""Code blocks of a source file, the unit the per-test map records (``run.testmap``).

A block is either one function (``def``/``async def``, methods and nested functions
included: a line belongs to the innermost function whose body holds it, from the
body's first statement to its last line; the decorators and the ``def`` line run when
the function is defined, so they belong to the code around it), or the file's
module-level code with every function that is not nested in another function left out
(imports, constants, class bodies, ``if`` blocks at module level). Each block has a
fingerprint: a hash of its normalised source (``ast.dump`` without positions, so
comments, blank lines and moving a function leave it as it was), prefixed by its
qualified name (two equal bodies in two classes stay two blocks). An edit inside one
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
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

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
    decorators and signature included."""

    name: str
    first: int
    last: int
    fingerprint: str


@dataclass
class FileBlocks:
    """The blocks of one file: ``module`` (the module-level or whole-file block) and
    ``functions`` sorted by first line. ``owner(line)`` is the block a line belongs to."""

    module: Block
    functions: list[Block] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.functions.sort(key=lambda b: (b.first, -b.last))
        self._owners: list[Block] | None = None

    def fingerprints(self) -> set[str]:
        """Every block's fingerprint."""
        return {self.module.fingerprint, *(b.fingerprint for b in self.functions)}

    def owner(self, line: int) -> Block:
        """The innermost function whose body holds ``line``, else the module block."""
        owners = self._owners
        if owners is None:
            # one entry per line, built once: a test's data names thousands of lines.
            # Sorted by start, a nested function comes after the one holding it and
            # overwrites its lines: the innermost holder wins.
            owners = [self.module] * (max((b.last for b in self.functions), default=0) + 1)
            for block in self.functions:
                owners[block.first : block.last + 1] = [block] * (block.last - block.first + 1)
            self._owners = owners
        return owners[line] if 0 <= line < len(owners) else self.module

    def named(self, name: str) -> Block | None:
        """The function block with qualified name ``name`` (the first, if redefined)."""
        return next((b for b in self.functions if b.name == name), None)


def whole_file_blocks(content: bytes) -> FileBlocks:
    """A file that is not parsed: one ``WHOLE_FILE`` block, the hash of ``content``."""
    return FileBlocks(module=Block(WHOLE_FILE, 0, 0, _digest(WHOLE_FILE, content)))


def file_blocks(content: bytes, python: bool = True) -> FileBlocks:
    """The blocks of a file's ``content`` (bytes as read). ``python`` False, or content
    that ``ast.parse`` refuses, gives ``whole_file_blocks``."""
    if not python:
        return whole_file_blocks(content)
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError):
        return whole_file_blocks(content)
    functions: list[Block] = []
    _collect(tree, "", functions)
    module_only = _WithoutFunctions().visit(tree)
    module = Block(MODULE_BLOCK, 0, 0, _digest(MODULE_BLOCK, ast.dump(module_only, include_attributes=False)))
    return FileBlocks(module=module, functions=functions)


def _collect(node: ast.AST, prefix: str, out: list[Block]) -> None:
    """Every function under ``node`` with its qualified name (``prefix`` is the
    enclosing classes' and functions' part, ``A.`` or ``f.<locals>.``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _Function):
            name = prefix + child.name
            first = child.body[0].lineno
            last = child.end_lineno or child.lineno
            out.append(Block(name, first, last, _digest(name, ast.dump(child, include_attributes=False))))
            _collect(child, name + ".<locals>.", out)
        elif isinstance(child, ast.ClassDef):
            _collect(child, prefix + child.name + ".", out)
        else:
            _collect(child, prefix, out)


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
