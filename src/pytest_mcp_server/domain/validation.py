"""Checks of what an agent sends, before anything reaches an argv or a path.

The agent is untrusted. Strings are checked for form here (``check_plain_text``,
``check_node_id_syntax``, ``check_report_path``) and paths against the filesystem
(``resolve_inside``, ``check_node_ids_exist``); ``-m``/``-k`` expressions are checked in
``expressions``. ``describe_validation_error`` is the one place that turns a pydantic
``ValidationError`` into (field path, reason), for tool arguments and CLI options alike.

No MCP import and no process is started here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import ValidationError

from pytest_mcp_server.domain.failures import invalid
from pytest_mcp_server.domain.nodeids import node_path
from pytest_mcp_server.domain.policy import (
    MAX_NODE_ID_CHARS,
    MAX_PATH_CHARS,
)

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def describe_validation_error(exc: ValidationError, *, unknown: str = "unknown argument") -> tuple[str, str]:
    """(field path, reason) of the first error of ``exc``.

    The path joins the error's location as it is written in the input: ``node_ids[2]``,
    ``paths[0]``; it is ``""`` for an error of the whole input. The reason is
    ``unknown`` for a field the model does not take, ``is required`` for a missing one,
    else pydantic's message without its ``Value error,`` prefix, followed by the value
    given (``(got -1)``) unless the message came from one of our validators (which say
    what was wrong themselves).
    """
    err = exc.errors(include_url=False)[0]
    field = "".join(
        f"[{part}]" if isinstance(part, int) else (f".{part}" if i else str(part)) for i, part in enumerate(err["loc"])
    )
    if err["type"] == "extra_forbidden":
        return field, unknown
    if err["type"] == "missing":
        return field, "is required"
    reason = err["msg"].removeprefix("Value error, ")
    if err["type"] != "value_error" and "input" in err:
        shown = repr(err["input"])
        reason += f" (got {shown[:80] + '…' if len(shown) > 80 else shown})"
    return field, reason


def check_plain_text(value: str, what: str = "value") -> str:
    """Refuse NUL and control characters (``ValueError`` naming the character and its
    index); returns ``value``. ``what`` names the kind of value in the message."""
    m = _CONTROL.search(value)
    if m:
        raise ValueError(f"contains the control character {m.group()!r} at index {m.start()}; {what}s are plain text")
    return value


def check_node_id_syntax(value: str) -> str:
    """Check the form of a node id or path an agent gave (``ValueError`` with the reason).

    Refused: more than ``MAX_NODE_ID_CHARS`` characters, empty, control characters (NUL
    included), a leading ``-`` (pytest would read an option) or ``@`` (pytest reads
    arguments from ``@file``), an absolute path, a ``..`` segment in the path part (the
    part before the first ``::``). Whether the path exists inside the root is checked by
    ``resolve_inside``. Returns ``value``.
    """
    check_length(value, MAX_NODE_ID_CHARS)
    if not value.strip():
        raise ValueError("is empty; give a path or node id relative to the project root")
    check_plain_text(value, "node id")
    if value[0] in "-@":
        raise ValueError(
            f"starts with {value[0]!r}, which pytest would read as "
            + ("an option" if value[0] == "-" else "an @argument-file")
            + "; give a path relative to the project root"
        )
    path = node_path(value)
    if os.path.isabs(path) or path.startswith("~") or re.match(r"^[A-Za-z]:", path):
        raise ValueError("is an absolute path; give a path relative to the project root")
    if ".." in re.split(r"[\\/]", path):
        raise ValueError("contains '..'; give a path inside the project root")
    return value


def check_filter_node_id(value: str) -> str:
    """Check a node id used only to filter a report (never passed to pytest): at most
    ``MAX_NODE_ID_CHARS`` characters of plain text. Returns ``value``."""
    check_length(value, MAX_NODE_ID_CHARS)
    return check_plain_text(value, "node id")


def check_report_path(value: str) -> str:
    """Check the form of a report path (``ValueError``): at most ``MAX_PATH_CHARS``
    characters, not empty, plain text, no leading ``-`` or ``@``. Where it points is
    checked by ``resolve_inside``. Returns ``value``."""
    check_length(value, MAX_PATH_CHARS)
    if not value.strip():
        raise ValueError("is empty; give a report file")
    check_plain_text(value, "path")
    if value[0] in "-@":
        raise ValueError(f"starts with {value[0]!r}; give a report file path")
    return value


def check_length(value: str, limit: int) -> str:
    """Refuse a string longer than ``limit`` characters (``ValueError``); returns ``value``."""
    if len(value) > limit:
        raise ValueError(f"is longer than {limit} characters")
    return value


def resolve_inside(value: str, bases: list[Path], field: str, *, must_be_file: bool = False) -> Path:
    """Resolve a path an agent gave and require it to exist inside one of ``bases``.

    Relative paths are relative to ``bases[0]`` (the project root). Symlinks are
    resolved before the check, so a link that points outside is refused. Returns the
    resolved path; raises ``ToolFailure(invalid_argument)`` naming ``field``.
    """
    try:
        check_plain_text(value, "path")
    except ValueError as exc:
        raise invalid(field, str(exc)) from None
    raw = Path(value)
    candidate = raw if raw.is_absolute() else bases[0] / raw
    try:
        resolved = candidate.resolve(strict=True)
    except FileNotFoundError:
        raise invalid(field, f"{value!r} does not exist (looked for {candidate})") from None
    except (OSError, RuntimeError) as exc:  # symlink loops, permission denied
        raise invalid(field, f"{value!r} cannot be resolved: {exc}") from None
    if not any(resolved == base or base in resolved.parents for base in bases):
        allowed = " or ".join(str(b) for b in bases)
        raise invalid(field, f"{value!r} resolves to {resolved}, outside {allowed}; give a path inside it")
    if must_be_file and not resolved.is_file():
        raise invalid(field, f"{value!r} is not a regular file")
    return resolved


def check_node_ids_exist(node_ids: tuple[str, ...] | list[str], root: Path, field: str = "node_ids") -> None:
    """Require the path part of every node id to exist inside ``root`` (after resolving
    symlinks). Raises ``ToolFailure(invalid_argument)`` naming ``node_ids[i]``."""
    for i, node_id in enumerate(node_ids):
        resolve_inside(node_path(node_id), [root], f"{field}[{i}]")
