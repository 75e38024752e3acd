"""The `.pyi` stub of the Rust extension stays in step with the extension itself.

Like pydantic-core's stub test: every public name of ``_native`` is declared in the stub
and the other way round, and every function's parameter names match its signature.
"""

import ast
import inspect
from pathlib import Path

import pytest

_native = pytest.importorskip("pytest_mcp_server.engine._native", reason="the Rust extension is not built")

STUB = Path(__file__).resolve().parents[1] / "src" / "pytest_mcp_server" / "engine" / "_native.pyi"


def _stub_declarations() -> dict[str, list[str] | None]:
    """name -> parameters as ``name`` or ``name=default`` (None for classes)."""
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


def test_native_error_is_an_exception_class():
    assert issubclass(_native.NativeReportError, Exception)
