"""The `.pyi` stub of the Rust extension stays in step with the extension itself.

Like pydantic-core's stub test: every public name of ``_native`` is declared in the stub
and the other way round, and every function's parameter names match its signature. Also
what crosses the boundary: the errors raised and the budgets read.
"""

import ast
import inspect
from pathlib import Path

import pytest

from pytest_mcp_server.engine.models import Budgets, ReportError

_native = pytest.importorskip("pytest_mcp_server.engine._native", reason="the Rust extension is not built")

STUB = Path(__file__).resolve().parents[2] / "src" / "pytest_mcp_server" / "engine" / "_native.pyi"


def _stub_declarations() -> dict[str, list[str] | None]:
    """name -> parameters as ``name`` or ``name=default`` (None for classes and constants)."""
    tree = ast.parse(STUB.read_text())
    out: dict[str, list[str] | None] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args.args
            defaults = [None] * (len(args) - len(node.args.defaults)) + node.args.defaults
            out[node.name] = [
                a.arg if default is None else f"{a.arg}={ast.unparse(default)}"
                for a, default in zip(args, defaults, strict=True)
            ]
        elif isinstance(node, ast.ClassDef):
            out[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
    return out


def test_stub_declares_exactly_the_public_names_of_the_extension():
    public = {name for name in dir(_native) if not name.startswith("_")}
    assert set(_stub_declarations()) == public


@pytest.mark.parametrize("name", [n for n, params in _stub_declarations().items() if params is not None])
def test_stub_parameters_match_the_extension(name):
    """Names, order and defaults: a parameter the stub marks optional must be optional natively."""
    signature = inspect.signature(getattr(_native, name))
    native = [
        p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
        for p in signature.parameters.values()
    ]
    assert native == _stub_declarations()[name]


def test_the_extension_raises_the_packages_report_error_itself(tmp_path):
    """pydantic-core style: the exception a caller catches is the one the binding raised
    (``models.ReportError``, with its kind, path, message and position), not a native copy
    rebuilt in Python."""
    report = tmp_path / "r.xml"
    report.write_text("<testsuite><testcase")
    with pytest.raises(ReportError) as caught:
        _native.summarize_files([str(report)], "auto", Budgets())
    error = caught.value
    assert type(error) is ReportError
    assert (error.kind, error.path) == ("malformed", str(report))
    assert error.message and error.position
    assert str(error) == f"{report} ({error.position}): {error.message}"
    with pytest.raises(ReportError) as caught:
        _native.summarize_files([str(tmp_path / "missing.xml")], "auto", Budgets())
    assert (caught.value.kind, caught.value.position) == ("not_found", None)


def test_a_missing_budget_is_an_attribute_error_naming_it(tmp_path):
    report = tmp_path / "r.xml"
    report.write_text("<testsuite/>")
    # a dict of the budgets: its keys are not attributes
    with pytest.raises(AttributeError, match="no attribute 'failures_listed'") as caught:
        _native.summarize_files([str(report)], "auto", Budgets().model_dump())
    assert "while processing 'budgets'" in caught.value.__notes__


@pytest.mark.parametrize("value, cause", [(-1, OverflowError), ("20", TypeError), (2**64, OverflowError)])
def test_a_budget_that_is_not_a_non_negative_integer_is_a_type_error_naming_it(tmp_path, value, cause):
    report = tmp_path / "r.xml"
    report.write_text("<testsuite/>")
    # a model built without validation carries it to the binding
    budgets = Budgets.model_construct(max_slowest=value)
    with pytest.raises(TypeError, match=r"failed to extract field Budgets\.max_slowest") as caught:
        _native.summarize_files([str(report)], "auto", budgets)
    assert isinstance(caught.value.__cause__, cause)
