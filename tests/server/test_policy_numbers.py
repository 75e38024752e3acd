"""Every policy number is defined once, in ``domain/policy.py``, and used by its name.

Read from the code: no other module of the server defines a name ``domain/policy.py``
defines, and no bare number in the server's code (outside module-level named constants)
equals a policy number of 16 or more, unless it is listed below with what it means there
instead (a time unit, an exit-status convention). The report engine keeps its numbers in
its budgets and twin constants, and the plugin that runs inside pytest imports nothing of
the server: both are left out, as is the ``bench`` command's harness.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_mcp_server.domain.policy as policy

PACKAGE_DIR = Path(policy.__file__).resolve().parents[1]
SKIPPED = ("domain/policy.py", "engine/", "run/pytest_plugin/", "bench/")
SMALLEST = 16
"""Policy numbers below this (3 examples, 5 groups, 10 seconds) are too common to tell a
policy from an index or a count."""
NOT_POLICY: dict[tuple[str, float], str] = {
    ("adapters/mcp/server.py", 128): "a process killed by signal N exits with 128 + N, as shells report it",
    ("run/process.py", 128): "0x80, the bits of a UTF-8 continuation byte",
    ("adapters/text.py", 600): "durations of ten minutes and more are shown in minutes",
    ("adapters/text.py", 60): "seconds per minute",
    ("domain/coverage_answer.py", 100.0): "per cent",
    ("run/rundirs.py", 1000): "milliseconds per second",
}


def _policy_numbers() -> dict[float, list[str]]:
    numbers: dict[float, list[str]] = {}
    for name in dir(policy):
        value = getattr(policy, name)
        if name.isupper() and type(value) in (int, float):
            numbers.setdefault(value, []).append(name)
    return numbers


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR).as_posix()
        if not rel.startswith(SKIPPED):
            out[rel] = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
    return out


def _constant_definitions(tree: ast.Module) -> tuple[set[str], set[int]]:
    """The names a module defines at its top level, and the ids of the nodes inside
    those definitions that are UPPER_CASE constants (a named number is a name)."""
    names: set[str] = set()
    inside: set[int] = set()
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for target in targets:
            if isinstance(target, ast.Name):
                names.add(target.id)
                if target.id.isupper():
                    inside.update(id(n) for n in ast.walk(node))
    return names, inside


def test_no_module_defines_a_policy_name_again():
    defined_twice = [
        f"{rel}: {name}"
        for rel, tree in _modules().items()
        for name in sorted(_constant_definitions(tree)[0])
        if name.isupper() and hasattr(policy, name)
    ]
    assert not defined_twice, "defined in domain/policy.py and again in: " + ", ".join(defined_twice)


def test_no_bare_number_stands_for_a_policy_number():
    numbers = _policy_numbers()
    bare = []
    for rel, tree in _modules().items():
        _, named = _constant_definitions(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and type(node.value) in (int, float)):
                continue
            value = node.value
            if abs(value) < SMALLEST or value not in numbers or id(node) in named or (rel, value) in NOT_POLICY:
                continue
            bare.append(f"{rel}:{node.lineno}: {value!r} (policy: {', '.join(numbers[value])})")
    assert not bare, "bare numbers equal to a policy number; use its name, or list what they mean:\n" + "\n".join(bare)


def test_every_listed_exception_is_still_there():
    """The list above names only numbers that are in the code (a stale entry would hide nothing)."""
    modules = _modules()
    for (rel, value), meaning in NOT_POLICY.items():
        found = [n for n in ast.walk(modules[rel]) if isinstance(n, ast.Constant) and n.value == value]
        assert found, f"{rel} no longer has {value!r} ({meaning}): remove it from NOT_POLICY"
