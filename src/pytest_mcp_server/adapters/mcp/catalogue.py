"""The tool catalogue: each tool's name, description, models, workflow, renderer and
structured content (``TOOLS``), the server's instructions, and the schemas
``tools/list`` publishes.

The MCP adapter dispatches from this data alone: it looks the tool up by name, parses
the arguments (``ToolSpec.parse``), awaits ``ToolSpec.handler`` (a ``Runner``
workflow) and sends the result with ``ToolSpec.render``'s text, shaped for the call's
answer view (``views``: ``ToolSpec.fields`` or ``ToolSpec.structured``). Adding a tool
is adding a ``ToolSpec`` here. No MCP import: the schemas are plain JSON Schema dicts
generated from the models (``input_schema``/``output_schema``), never written by hand.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from pytest_mcp_server.adapters.mcp.structured import (
    DiscoverFields,
    ExecuteFields,
    SummarizeFields,
    discover_fields,
    discover_structured,
    execute_fields,
    execute_structured,
    plain_structured,
    summarize_fields,
)
from pytest_mcp_server.adapters.mcp.views import ANSWER_FIELD
from pytest_mcp_server.adapters.selection_text import render_discover_answer, render_execute_answer
from pytest_mcp_server.adapters.text import render_summarize
from pytest_mcp_server.app.discover import discover_tests
from pytest_mcp_server.app.execute import execute_tests
from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.app.summarize import summarize_report
from pytest_mcp_server.domain.failures import invalid
from pytest_mcp_server.domain.tools import (
    DiscoverParams,
    DiscoverResult,
    ExecuteParams,
    ExecuteResult,
    ParamsModel,
    SummarizeParams,
    SummarizeResult,
)
from pytest_mcp_server.domain.validation import describe_validation_error
from pytest_mcp_server.run.events import ProgressFn

P = TypeVar("P", bound=ParamsModel)
R = TypeVar("R", bound=BaseModel)

SCHEMA_UNPUBLISHED_MAXIMUM = 100_000
"""A ``maximum`` this large is an abuse limit: enforced, but left out of ``tools/list``."""


@dataclass(frozen=True)
class ToolSpec(Generic[P, R]):
    """One tool: ``name`` and ``description`` (as listed), ``params``/``result`` (the
    models its input schema and its ``typed`` view come from), ``read_only`` (the MCP
    hint), ``handler`` (awaited as ``handler(runner, params, progress)``, raises
    ``ToolFailure``), ``render`` (the answer text of a result), ``fields`` (its typed
    fields in the answer views, as ``fields_model`` gives them: the output schema) and
    ``structured`` (its full typed result, the ``typed`` view)."""

    name: str
    description: str
    params: type[P]
    result: type[R]
    read_only: bool
    handler: Callable[[Runner, P, ProgressFn | None], Awaitable[R]]
    render: Callable[[R], str]
    fields: Callable[[R], dict[str, Any]]
    fields_model: type[BaseModel]
    structured: Callable[[R], dict[str, Any]] = plain_structured

    def parse(self, arguments: Mapping[str, Any] | None) -> P:
        """Validate the raw arguments of a call into ``params``.

        Raises ``ToolFailure(invalid_argument)`` naming the first bad field
        (``node_ids[3]``, ``env``) and the reason; an unknown argument lists the ones
        the tool takes.
        """
        try:
            return self.params.model_validate(dict(arguments or {}))
        except ValidationError as exc:
            field, reason = describe_validation_error(
                exc, unknown=f"unknown argument; {self.name} takes {', '.join(self.params.model_fields)}"
            )
            raise invalid(field or "arguments", reason) from None


TOOLS: tuple[ToolSpec[Any, Any], ...] = (
    ToolSpec[ExecuteParams, ExecuteResult](
        name="execute_tests",
        description=(
            "Run pytest: exact counts, failures grouped by cause, each traceback frame on one line, report_path. "
            "affected: only the tests a change since their last run can reach, new tests and last failures."
        ),
        params=ExecuteParams,
        result=ExecuteResult,
        read_only=False,
        handler=execute_tests,
        render=render_execute_answer,
        fields=execute_fields,
        fields_model=ExecuteFields,
        structured=execute_structured,
    ),
    ToolSpec[DiscoverParams, DiscoverResult](
        name="discover_tests",
        description=("Collect without running: total, tests per file, a page of node ids, collection errors."),
        params=DiscoverParams,
        result=DiscoverResult,
        read_only=True,
        handler=lambda runner, params, _progress: discover_tests(runner, params),
        render=render_discover_answer,
        fields=discover_fields,
        fields_model=DiscoverFields,
        structured=discover_structured,
    ),
    ToolSpec[SummarizeParams, SummarizeResult](
        name="summarize_report",
        description=(
            "Summarise JUnit XML, pytest-json-report or coverage JSON/XML files (e.g. a run's report_path; "
            "no paths: the last execute_tests run's); with node_ids, those tests' full story without re-running."
        ),
        params=SummarizeParams,
        result=SummarizeResult,
        read_only=True,
        handler=lambda runner, params, _progress: summarize_report(runner, params),
        render=render_summarize,
        fields=summarize_fields,
        fields_model=SummarizeFields,
    ),
)

TOOLS_BY_NAME: dict[str, ToolSpec[Any, Any]] = {spec.name: spec for spec in TOOLS}

INSTRUCTIONS = (
    "Runs this project's pytest suite. A run with 0 tests (status no_tests) is not green: check node_ids, "
    "markers and keywords. To see more of a failure, call summarize_report with node_ids=[...] (paths default "
    "to the last run's report_path) instead of re-running the suite verbose. "
    "Failures are grouped by cause: fix a group, not each test. "
    "affected=true runs only the tests that changes since their last run affect; "
    "discover_tests with affected=true shows that plan and why."
)
"""The server's instructions to the model (sent at initialisation)."""


ON_REQUEST_FIELDS = frozenset({"suspects", "selection"})
"""Result fields an answer carries only when the call asked for them (``suspects``:
``coverage`` with failures, or a plain call's from the test map; ``selection``: ``affected``), left out of the published
output schema (which allows further properties) to keep ``tools/list`` under 4 KB;
docs/SERVER.md describes them."""


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a parameter model, compacted for ``tools/list``.

    From pydantic's schema: titles and the model's docstring dropped (the tool has a
    description); an optional field (``X | None = None``) becomes plain ``X`` without its
    null default (omit it rather than send null; null is still accepted); a boolean's
    ``false`` default is left out (an option not given is off), and an integer's
    ``minimum`` of 0 (a count; a negative one is still refused); the abuse
    limits (``maxItems``, ``maxLength``, a ``maximum`` of ``SCHEMA_UNPUBLISHED_MAXIMUM``
    or more) are enforced but not published. Descriptions, defaults, numeric bounds and
    ``additionalProperties: false`` stay.
    """
    schema: dict[str, Any] = _strip_titles(model.model_json_schema())
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        variants = prop.get("anyOf")
        if variants and len(variants) == 2 and {"type": "null"} in variants:
            (kept,) = [v for v in variants if v != {"type": "null"}]
            del prop["anyOf"]
            prop.update(kept)
            if prop.get("default", 0) is None:
                del prop["default"]
        if prop.get("type") == "boolean" and prop.get("default") is False:
            del prop["default"]  # an option left out is off
        if prop.get("minimum") == 0 and prop.get("type") == "integer":
            del prop["minimum"]  # a count: a negative one is refused all the same
        prop.pop("maxItems", None)
        prop.pop("maxLength", None)
        if prop.get("maximum", 0) >= SCHEMA_UNPUBLISHED_MAXIMUM:
            del prop["maximum"]
    return schema


def output_schema(fields: type[BaseModel], typed: type[BaseModel]) -> dict[str, Any]:
    """The published JSON Schema of a tool's structured content, compacted for
    ``tools/list``: ``answer`` (a string) and the top-level properties of ``fields``
    (the model of its typed fields in the answer views), each with its JSON types
    (nested models as ``object``/``array``), a type the ``typed`` view's model
    ``typed`` gives the same property added (its ``coverage`` may be null); no
    ``required`` (the ``text`` and ``both`` views send no ``answer``, and an optional
    field is left out rather than sent null). The further properties of the ``typed``
    view and ``ON_REQUEST_FIELDS`` are left out (the schema allows further properties;
    docs/SERVER.md and ``models.py`` give them): listing them would take ``tools/list``
    over its 4 KB budget and cost every conversation tokens for fields its model never
    gets. So every answer of every view validates against it.
    """
    typed_props = typed.model_json_schema()["properties"]
    props: dict[str, Any] = {ANSWER_FIELD: {"type": "string"}}
    for name, prop in fields.model_json_schema()["properties"].items():
        if name in ON_REQUEST_FIELDS:
            continue
        types = [t for t in _json_types(prop) if t != "null"]  # never sent null: left out
        if name in typed_props:
            types += [t for t in _json_types(typed_props[name]) if t not in types]
        props[name] = {"type": types[0] if len(types) == 1 else types}
    return {"type": "object", "properties": props}


def _json_types(prop: dict[str, Any]) -> list[str]:
    json_type = _json_type(prop)
    return json_type if isinstance(json_type, list) else [json_type]


def _json_type(prop: dict[str, Any]) -> str | list[str]:
    if "$ref" in prop:
        return "object"
    if "anyOf" in prop:
        types: list[str] = []
        for variant in prop["anyOf"]:
            t = _json_type(variant)
            types.extend(t if isinstance(t, list) else [t])
        return types
    if "enum" in prop and "type" not in prop:
        return "string"
    json_type: str = prop["type"]
    return json_type


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node
