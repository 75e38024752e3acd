"""The module the plugin and the server share (``pytest_mcp_server_shared``, beside the
plugin): both sides take their hashes, stat keys, file names and format numbers from it,
and the plugin, loaded into a child pytest as the server loads it, imports it from its
own directory and nothing of the server."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from pytest_mcp_server.run import recording, rundirs
from pytest_mcp_server.run.events import PLUGIN_DIR
from pytest_mcp_server.run.pytest_plugin import pytest_mcp_server_shared as shared

PLUGIN_FILES = ("pytest_mcp_server_events.py", "pytest_mcp_server_recorder.py")

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import pytest_mcp_server_events as events
import pytest_mcp_server_recorder as recorder
shared = sys.modules["pytest_mcp_server_shared"]
print(json.dumps({
    "shared_file": shared.__file__,
    "events_use_it": events.shared is shared,
    "recorder_use_it": recorder.shared is shared,
    "recorder_format": recorder.FORMAT,
    "server_modules": sorted(m for m in sys.modules if m.startswith("pytest_mcp_server.")),
}))
"""


def test_the_plugin_imports_the_shared_module_from_its_directory_and_nothing_of_the_server():
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(PLUGIN_DIR)], capture_output=True, text=True, check=True, env={}
    )
    found = json.loads(done.stdout)
    assert found == {
        "shared_file": str(PLUGIN_DIR / "pytest_mcp_server_shared.py"),
        "events_use_it": True,
        "recorder_use_it": True,
        "recorder_format": shared.RECORDER_FORMAT,
        "server_modules": [],
    }


def test_the_server_takes_the_same_names_and_functions_from_it():
    assert shared.__file__ == str(PLUGIN_DIR / "pytest_mcp_server_shared.py")
    for name in ("stat_key", "short_hash", "distributions_hash", "SKIP_FILE", "COLLECTED_GLOB", "MAP_FILE_GLOB"):
        assert getattr(recording, name) is getattr(shared, name), name
    assert recording.IMPORTING_CONTEXT is shared.IMPORTING
    assert recording.RECORDER_FORMAT is shared.RECORDER_FORMAT
    assert rundirs.FAILURES_FILE is shared.FAILURES_FILE


def test_no_side_keeps_a_copy_and_the_shared_module_reads_on_python_3_8():
    # a hash or a stat key computed by hand on one side would drift from the other's
    for name in PLUGIN_FILES:
        tree = ast.parse((PLUGIN_DIR / name).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "hashlib" not in imported, name
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in ("st_mtime_ns", "sha256")]
    server = ast.parse((PLUGIN_DIR.parent / "recording.py").read_text())
    defined = {n.name for n in ast.walk(server) if isinstance(n, ast.FunctionDef)}
    assert not defined & {"stat_key", "short_hash", "distributions_hash"}
    source = (PLUGIN_DIR / "pytest_mcp_server_shared.py").read_text()
    ast.parse(source, feature_version=(3, 8))
    imported = {
        a.name.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import) for a in n.names
    } | {n.module.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}
