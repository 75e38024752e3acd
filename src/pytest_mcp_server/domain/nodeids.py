"""pytest node ids, read one way everywhere in the server.

A node id is ``PATH`` or ``PATH::NAME::...::NAME[PARAMETERS]`` (pytest's docs, *Node
IDs*): the path of a file or directory relative to the root (it holds no ``::``), then the
names of the classes and of the test joined by ``::``, the last one possibly followed by
its parameters in brackets, which may hold anything, ``::`` and ``[`` included. The report
engine's twins (``rust/core``, ``engine/pure``) keep their own reading, rule for rule.
"""

from __future__ import annotations


def node_path(node_id: str) -> str:
    """The file or directory a node id starts with: ``"tests/t.py::T::test[a::b]"`` ->
    ``"tests/t.py"``."""
    return node_id.partition("::")[0]


def node_names(node_id: str) -> list[str]:
    """The names after the path, the parameters left out: ``"tests/t.py::T::test[a::b]"``
    -> ``["T", "test"]``; ``[]`` for a bare path."""
    rest = node_id.partition("::")[2]
    return rest.split("[", 1)[0].split("::") if rest else []


def node_last_name(node_id: str) -> str | None:
    """The last name of a node id without its parameters (the test function's, for a
    Python test): ``"tests/t.py::T::test_b[1]"`` -> ``"test_b"``; None for a bare path."""
    names = node_names(node_id)
    return names[-1] if names else None


def node_function(node_id: str) -> tuple[str, str | None]:
    """The file of a node id and the qualified name of its test function:
    ``"tests/t.py::TestA::test_b[1]"`` -> ``("tests/t.py", "TestA.test_b")``; the name is
    None when the id names no function (a doctest's ``pkg.mod.func``, a non-Python item,
    a bare file)."""
    names = node_names(node_id)
    if not names or not all(name.isidentifier() for name in names):
        return node_path(node_id), None
    return node_path(node_id), ".".join(names)
