"""The ``pytest-mcp-server`` console script.

Subcommands:
* ``serve`` (the default): the MCP server over stdio, or over Streamable HTTP with
  ``--transport http`` (see ``adapters.mcp.server``, ``adapters.mcp.http_policy``).
* ``summarize PATH...``: summarise JUnit XML / pytest-json-report / pytest report-log files. Exit 0 when no
  test failed or errored, 1 when some did, 2 when an input cannot be read or is not a
  report (message on stderr, nothing on stdout).
* ``bench ...``: the benchmarks (see ``pytest_mcp_server.bench``).

The options are checked (``config.ServerConfig``, ``models.Budgets``) before anything
heavy loads; the MCP SDK loads only for ``serve``, and ``summarize`` loads nothing of the
server (its configuration, HTTP policy and option messages are imported by ``serve``) and
no OpenSSL (``_without_openssl``): its peak memory is the engine's and the summary's
(benches/RESULTS.md, section 8). So nothing that loads pydantic is imported at the top of
this module: ``main`` first decides what the process is for.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_mcp_server.domain.exits import CommandExit

if TYPE_CHECKING:
    from pydantic import ValidationError

SUBCOMMANDS = ("serve", "summarize", "bench")
"""The console script's commands; ``serve`` is the default (a first argument that is an
option, or none)."""


def _without_openssl() -> None:
    """Keep OpenSSL's libcrypto (about 4 MB resident) out of this process: ``summarize``
    reads files and prints, and never hashes, signs or opens a TLS connection. From
    pydantic 2.14 on, importing any model imports ``secrets``, whose ``hmac`` and
    ``hashlib`` load OpenSSL through ``_hashlib``; with ``_hashlib`` unimportable (a
    ``None`` entry in ``sys.modules``, the import system's documented way to make an
    import fail) they use CPython's built-in hashes instead, as on a Python built without
    OpenSSL. Called before pydantic is imported; a no-op if something loaded it already."""
    sys.modules.setdefault("_hashlib", None)  # type: ignore[arg-type]


def _budget_flags() -> dict[str, str]:
    """Budget flags: ``--failures-listed`` etc., one per ``Budgets`` field (field -> flag)."""
    from pytest_mcp_server.engine.models import Budgets

    return {name: "--" + name.replace("_", "-") for name in Budgets.model_fields}


def _add_budget_flags(parser: argparse.ArgumentParser) -> None:
    from pytest_mcp_server.engine.models import Budgets

    group = parser.add_argument_group("budgets (what the summary keeps; cuts are counted in 'omitted')")
    for name, flag in _budget_flags().items():
        field = Budgets.model_fields[name]
        group.add_argument(
            flag, type=int, default=None, metavar="N", help=f"{field.description} (default {field.default})"
        )


class _VersionAction(argparse.Action):
    """``--version`` (on stdout, as argparse's own): the installed version, looked up only
    when asked for (``domain.config`` is the server's configuration)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **_: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from pytest_mcp_server.domain.config import package_version
        from pytest_mcp_server.domain.policy import SERVER_NAME

        print(f"{SERVER_NAME} {package_version()}")
        parser.exit()


def _build_parser() -> argparse.ArgumentParser:
    from pytest_mcp_server.adapters.mcp.views import ANSWER_VIEW_OPTIONS
    from pytest_mcp_server.domain.policy import (
        DEFAULT_HTTP_HOST,
        DEFAULT_HTTP_PORT,
        DEFAULT_MAX_CONCURRENT,
        DEFAULT_MAX_TIMEOUT_S,
        DEFAULT_TASK_AFTER_S,
        DEFAULT_TASK_TTL_S,
        SERVER_NAME,
        TOKEN_ENV,
    )

    parser = argparse.ArgumentParser(
        prog=SERVER_NAME,
        description="Run pytest for AI agents over MCP, and summarise test reports compactly.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="{serve,summarize,bench}")

    serve = sub.add_parser("serve", help="run the MCP server, over stdio or HTTP (the default command)")
    serve.add_argument(
        "--root", default=".", help="the project; every path an agent gives must be inside it (default: .)"
    )
    serve.add_argument(
        "--python",
        default=None,
        help=(
            "interpreter that runs the project's tests "
            "(default: <root>/.venv, <root>/venv, $VIRTUAL_ENV, else this one)"
        ),
    )
    serve.add_argument(
        "--max-timeout",
        type=float,
        default=DEFAULT_MAX_TIMEOUT_S,
        metavar="SECONDS",
        help=f"largest timeout_s an agent may ask for (default {DEFAULT_MAX_TIMEOUT_S:g})",
    )
    serve.add_argument(
        "--max-concurrent",
        type=int,
        default=DEFAULT_MAX_CONCURRENT,
        metavar="N",
        help=f"pytest runs at once (default {DEFAULT_MAX_CONCURRENT})",
    )
    serve.add_argument(
        "--artifacts-dir", default=None, help="where run reports are kept (default: the user cache directory)"
    )
    serve.add_argument(
        "--answer-view",
        choices=ANSWER_VIEW_OPTIONS,
        default="auto",
        help=(
            "where an answer goes in a tool result: structured (the answer text in the structured content too), "
            "text or both (the text block; the structured content only typed fields), typed (the full typed "
            "result, for programs); auto picks by the client's clientInfo (default: auto)"
        ),
    )
    tasks = serve.add_argument_group("tasks (MCP Tasks extension: long execute_tests calls answered by polling)")
    tasks.add_argument(
        "--task-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help=(
            "a call expected to run this long, or still running after it, becomes a task for a client "
            f"that opted in (default {DEFAULT_TASK_AFTER_S:g})"
        ),
    )
    tasks.add_argument(
        "--task-ttl",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"how long a task's answer is kept after its run ended (default {DEFAULT_TASK_TTL_S:g})",
    )
    tasks.add_argument(
        "--no-tasks", action="store_true", help="never answer with a task: every call blocks until its answer"
    )
    serve.add_argument(
        "--no-warm-start",
        action="store_true",
        help="start every pytest run cold: no spare process of the project's interpreter waits with pytest imported",
    )
    http = serve.add_argument_group("transport (stdio, or Streamable HTTP at http://HOST:PORT/mcp)")
    http.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="(default: stdio)")
    http.add_argument("--host", default=None, help=f"http: address to bind (default {DEFAULT_HTTP_HOST})")
    http.add_argument(
        "--port", type=int, default=None, help=f"http: port (default {DEFAULT_HTTP_PORT}; 0 picks a free one)"
    )
    http.add_argument(
        "--token-file",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"http: file holding the bearer token every request must carry (or ${TOKEN_ENV})",
    )
    http.add_argument(
        "--allow-host",
        action="append",
        default=None,
        metavar="NAME[:PORT]",
        help="http: a further Host name clients use to reach the server (repeatable)",
    )

    summ = sub.add_parser("summarize", help="summarise JUnit XML / pytest-json-report / pytest report-log files")
    summ.add_argument(
        "paths", nargs="+", metavar="PATH", help="report files; several (CI shards) merge into one summary"
    )
    summ.add_argument(
        "--format",
        choices=("auto", "junit", "pytest-json", "reportlog"),
        default="auto",
        help="report format (default: sniffed)",
    )
    summ.add_argument(
        "--backend",
        choices=("auto", "native", "pure"),
        default="auto",
        help="report engine backend (default: native if available)",
    )
    summ.add_argument("--json", action="store_true", help="print the summary JSON instead of text")
    _add_budget_flags(summ)

    bench = sub.add_parser("bench", help="benchmarks (reports, shards, suite); see 'bench --help'", add_help=False)
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    return parser


def _summarize(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from pytest_mcp_server.adapters.text import render_text
    from pytest_mcp_server.domain.policy import SERVER_NAME
    from pytest_mcp_server.engine import summarize_bytes
    from pytest_mcp_server.engine.models import Budgets, ReportError, RunReport

    flags = _budget_flags()
    given = {name: getattr(args, name) for name in flags if getattr(args, name) is not None}
    try:
        budgets = Budgets(**given)
    except ValidationError as exc:
        return _option_error(exc, flags)
    try:
        raw = summarize_bytes(args.paths, format=args.format, backend=args.backend, budgets=budgets)
    except ReportError as exc:
        print(f"{SERVER_NAME}: {exc.kind}: {exc}", file=sys.stderr)
        return CommandExit.USAGE
    except (RuntimeError, OSError) as exc:
        print(f"{SERVER_NAME}: error: {exc}", file=sys.stderr)
        return CommandExit.USAGE
    summary = RunReport.model_validate_json(raw).summary()
    if args.json:
        sys.stdout.buffer.write(raw + b"\n")
    else:
        sys.stdout.write(render_text(summary))
    sys.stdout.flush()
    return CommandExit.OK if summary.ok else CommandExit.TESTS_FAILED


_SERVE_FLAGS = {
    "root": "--root",
    "python": "--python",
    "max_timeout_s": "--max-timeout",
    "max_concurrent": "--max-concurrent",
    "artifacts_dir": "--artifacts-dir",
    "task_after_s": "--task-after",
    "task_ttl_s": "--task-ttl",
}


_HTTP_FLAGS = {"host": "--host", "port": "--port", "allow_hosts": "--allow-host", "token": "--token-file"}


def _serve(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from pytest_mcp_server.adapters.mcp.http_policy import HttpSettings, TokenError, take_token
    from pytest_mcp_server.domain.config import ServerConfig
    from pytest_mcp_server.domain.policy import DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT, SERVER_NAME

    if args.no_tasks and (args.task_after is not None or args.task_ttl is not None):
        flag = "--task-after" if args.task_after is not None else "--task-ttl"
        print(f"{SERVER_NAME}: error: {flag}: does not apply with --no-tasks", file=sys.stderr)
        return CommandExit.USAGE
    task_options = {"task_after_s": args.task_after, "task_ttl_s": args.task_ttl}
    try:  # checked before the MCP SDK is imported, so a bad option fails fast
        config = ServerConfig(
            root=args.root,
            python=args.python,
            max_timeout_s=args.max_timeout,
            max_concurrent=args.max_concurrent,
            artifacts_dir=args.artifacts_dir,
            tasks=not args.no_tasks,
            warm_start=not args.no_warm_start,
            **{name: value for name, value in task_options.items() if value is not None},
        )
    except ValidationError as exc:
        return _option_error(exc, _SERVE_FLAGS)
    if args.transport == "stdio":
        http_only = {
            "--host": args.host,
            "--port": args.port,
            "--token-file": args.token_file,
            "--allow-host": args.allow_host,
        }
        given = [flag for flag, value in http_only.items() if value is not None]
        if given:
            print(f"{SERVER_NAME}: error: {given[0]}: only applies with --transport http", file=sys.stderr)
            return CommandExit.USAGE
        from pytest_mcp_server.adapters.mcp.server import run_stdio

        return run_stdio(config, args.answer_view) or 0
    try:
        token = take_token(args.token_file, os.environ)  # removes the variable: no pytest run inherits it
        http = HttpSettings(
            token=token,
            host=args.host or DEFAULT_HTTP_HOST,
            port=DEFAULT_HTTP_PORT if args.port is None else args.port,
            allow_hosts=tuple(args.allow_host or ()),
        )
    except TokenError as exc:
        print(f"{SERVER_NAME}: error: {exc}", file=sys.stderr)
        return CommandExit.USAGE
    except ValidationError as exc:
        return _option_error(exc, _HTTP_FLAGS)
    from pytest_mcp_server.adapters.mcp.server import run_http

    return run_http(config, http, args.answer_view)


def _option_error(exc: ValidationError, flags: dict[str, str]) -> int:
    """Print the first error of ``exc`` as ``<flag>: <reason>`` on stderr; returns
    ``CommandExit.USAGE``."""
    from pytest_mcp_server.domain.policy import SERVER_NAME
    from pytest_mcp_server.domain.validation import describe_validation_error

    field, reason = describe_validation_error(exc)
    flag = flags.get(field.split(".", 1)[0].split("[", 1)[0], "options")
    print(f"{SERVER_NAME}: error: {flag}: {reason}", file=sys.stderr)
    return CommandExit.USAGE


def _unknown_command(word: str) -> int:
    """Refuse a first argument that is neither a command nor an option (``sumarize``):
    it names the commands, and the nearest one; returns ``CommandExit.USAGE``."""
    near = difflib.get_close_matches(word, SUBCOMMANDS, n=1)
    hint = f"did you mean {near[0]!r}? " if near else ""
    print(
        f"pytest-mcp-server: error: unknown command {word!r}; {hint}the commands are "
        f"{', '.join(SUBCOMMANDS)} (serve is the default: pytest-mcp-server --root DIR)",
        file=sys.stderr,
    )
    return CommandExit.USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status (``CommandExit``, or
    128 + a signal's number for a server stopped by it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in SUBCOMMANDS and not argv[0].startswith("-"):
        return _unknown_command(argv[0])
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "serve")  # the server is the default command
    if argv[0] == "bench":
        from pytest_mcp_server.bench import main as bench_main

        return bench_main(argv[1:])
    if argv[0] == "summarize":
        _without_openssl()
    args = _build_parser().parse_args(argv)
    if args.command == "summarize":
        return _summarize(args)
    return _serve(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
