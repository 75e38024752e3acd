"""Answer views: what a ``tools/call`` result carries, by what the client's model reads.

MCP clients differ in what they hand their model from a result that has both a text
block and structured content (docs/SERVER.md, *Answer views*, gives the clients and the
sources): Claude Code and VS Code pass only ``JSON.stringify(structuredContent)``, the
Claude.ai connectors and Claude Desktop only the text, some clients both. Every answer
is one text (``adapters.text``/``adapters.selection_text``); a view decides where it
goes:

* ``structured``: the structured content is the answer's typed fields (a few a program
  branches on: ``structured.execute_fields`` and its siblings) and ``answer``, the
  answer text itself; the text block carries the same text (for the user's screen). The
  default, for the clients whose model reads only the structured content, for unknown
  clients and for clients whose behaviour is reported both ways: every client's model
  then gets the whole answer, at worst twice.
* ``text`` and ``both``: the text block carries the answer, the structured content only
  the typed fields (a model that reads both reads the answer once).
* ``typed``: for programs (scripts, CI, the benchmarks): the full typed result
  (``structured.execute_structured`` and its siblings), and the answer as text.

``--answer-view auto`` (the default) picks a view per connection from the client's
``clientInfo.name`` (``CLIENT_VIEWS``, ``view_for_client``); any other value fixes it for
every client. No import of the MCP SDK nor of pydantic: the CLI lists the view names
(``ANSWER_VIEW_OPTIONS``) without loading either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

AnswerView = Literal["structured", "text", "both", "typed"]
"""Where an answer goes in a ``tools/call`` result (see the module docstring)."""

ANSWER_VIEWS: tuple[AnswerView, ...] = ("structured", "text", "both", "typed")
ANSWER_VIEW_OPTIONS: tuple[str, ...] = ("auto", *ANSWER_VIEWS)
"""The values of ``--answer-view``: ``auto`` (by ``clientInfo``) or one view for every client."""

DEFAULT_VIEW: AnswerView = "structured"
"""The view of a client that ``CLIENT_VIEWS`` does not name, or that sends no
``clientInfo``: the answer text is then in both the structured content and the text
block, so whatever the model reads holds the whole answer."""

ANSWER_FIELD = "answer"
"""The structured content's field that holds the answer text (``structured`` view)."""

CLIENT_VIEWS: tuple[tuple[str, AnswerView], ...] = (
    # structured content only (VERIFIED-LOG: stream-json capture, anthropics/claude-code #79944)
    ("claude-code", "structured"),
    # VS Code's Copilot agent mode: a text item reaches the model only without structured content
    # (VERIFIED-SRC: mcpLanguageModelToolContribution.ts); the name is productService.nameLong
    ("Visual Studio Code*", "structured"),
    ("Code - OSS", "structured"),
    # reported to prefer the structured content; unverified
    ("cursor-vscode", "structured"),
    ("codex-mcp-client", "structured"),
    ("openai-mcp", "structured"),
    # Copilot CLI: reported structured-only (#3258), later both (#4515): the default serves both
    ("github-copilot-developer", "structured"),
    # Claude.ai / Claude connectors (remote) and Claude Desktop (local stdio): the text only
    ("Anthropic/ClaudeAI", "text"),
    ("claude-ai", "text"),
)
"""``clientInfo.name`` -> the view ``auto`` gives that client, from docs/SERVER.md's
client table; a name ending in ``*`` matches every name it starts (``Visual Studio Code
- Insiders``). Names are matched exactly, case included: they are constants of each
client's code."""


def view_for_client(name: str | None) -> AnswerView:
    """The view ``auto`` gives a client whose ``clientInfo.name`` is ``name`` (None: the
    client sent no ``clientInfo``): its ``CLIENT_VIEWS`` entry, else ``DEFAULT_VIEW``."""
    if name is None:
        return DEFAULT_VIEW
    for pattern, view in CLIENT_VIEWS:
        if name == pattern or (pattern.endswith("*") and name.startswith(pattern[:-1])):
            return view
    return DEFAULT_VIEW


def choose_view(option: str, client_name: str | None) -> AnswerView:
    """The view of one call: ``option`` (a value of ``ANSWER_VIEW_OPTIONS``, checked at
    start) itself, or for ``auto`` the client's (``view_for_client``)."""
    if option == "auto":
        return view_for_client(client_name)
    for view in ANSWER_VIEWS:
        if view == option:
            return view
    raise ValueError(f"--answer-view {option!r} is not one of {', '.join(ANSWER_VIEW_OPTIONS)}")


def view_content(
    view: AnswerView, answer: str, fields: dict[str, Any], typed: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """The structured content of an answer in ``view``: ``answer`` (the text) before the
    typed ``fields`` (``structured``), the ``fields`` alone (``text``, ``both``), or the
    full typed result ``typed()`` (``typed``; computed only then)."""
    if view == "typed":
        return typed()
    if view == "structured":
        return {ANSWER_FIELD: answer, **fields}
    return dict(fields)
