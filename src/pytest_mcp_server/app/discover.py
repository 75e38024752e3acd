"""The ``discover_tests`` workflow: collect the selected tests without running them."""

from __future__ import annotations

import shutil
import tempfile
from functools import partial
from pathlib import Path

import anyio

from pytest_mcp_server.app.affected_call import discover_affected
from pytest_mcp_server.app.runner import Runner, run_status
from pytest_mcp_server.domain.nodeids import node_path
from pytest_mcp_server.domain.policy import MAX_FILES_LISTED
from pytest_mcp_server.domain.tools import DiscoverParams, DiscoverResult
from pytest_mcp_server.domain.validation import check_node_ids_exist
from pytest_mcp_server.engine.models import Budgets, CollectedPage
from pytest_mcp_server.run.argv import RECORDS_FILE, discover_argv


async def discover_tests(runner: Runner, params: DiscoverParams) -> DiscoverResult:
    """Collect the selected tests without running them (the ``discover_tests`` tool).

    A collect-only pytest writes its record file into a temporary directory (removed
    after). The report engine reads it once (``Runner.read_records``): the collection
    errors, the session, and of the node ids only the requested page and the tests per
    file (the first ``MAX_FILES_LISTED`` files), so a 100k-test suite costs little
    memory. Raises ``ToolFailure`` as ``app.runner.run_status`` says.
    """
    check_node_ids_exist(params.node_ids, runner.root)
    if params.affected:
        return await _discover_affected(runner, params)
    interp = await runner.interpreter()
    max_timeout = runner.config.max_timeout_s
    async with runner.slots:
        tmp = Path(await anyio.to_thread.run_sync(partial(tempfile.mkdtemp, prefix="pytest-mcp-discover-")))
        try:
            records = tmp / RECORDS_FILE
            argv = discover_argv(params, interp, tmp)
            outcome = await runner.run_pytest(argv, max_timeout)
            page = CollectedPage(offset=params.offset, limit=params.limit, max_files=MAX_FILES_LISTED)
            read = await runner.read_records(records, Budgets(failures_listed=0), outcome, argv, collected_page=page)
            run_status(outcome, argv, read.session, max_timeout, max_timeout)
            summary = read.summary()
        finally:
            with anyio.CancelScope(shield=True):
                shutil.rmtree(tmp, ignore_errors=True)
    collected = read.collected
    end = params.offset + len(collected.page)
    session_s = read.session_s()
    return DiscoverResult(
        total=collected.total,
        files=collected.files,
        files_omitted=collected.files_omitted,
        node_ids=collected.page,
        next_offset=end if end < collected.total else None,
        collection_errors=summary.collection_errors,
        duration_s=round(session_s, 3) if session_s is not None else outcome.duration_s,
        cold_start=outcome.cold_start,
    )


async def _discover_affected(runner: Runner, params: DiscoverParams) -> DiscoverResult:
    """``discover_tests`` with ``affected``: the plan of an affected run (``app.affected_call``),
    its selected tests paged with their reasons."""
    tmp = Path(await anyio.to_thread.run_sync(partial(tempfile.mkdtemp, prefix="pytest-mcp-discover-")))
    try:
        discovered = await discover_affected(runner, params, tmp)
    finally:
        with anyio.CancelScope(shield=True):
            shutil.rmtree(tmp, ignore_errors=True)
    plan = discovered.plan
    collected = plan.collected or []
    files: dict[str, int] = {}
    for node_id in collected:
        path = node_path(node_id)
        files[path] = files.get(path, 0) + 1
    listed = dict(list(files.items())[:MAX_FILES_LISTED])
    page = plan.tests[params.offset : params.offset + params.limit]
    end = params.offset + len(page)
    return DiscoverResult(
        total=len(collected),
        files=listed,
        files_omitted=len(files) - len(listed),
        node_ids=[test.node_id for test in page],
        next_offset=end if end < len(plan.tests) else None,
        collection_errors=discovered.summary.collection_errors,
        duration_s=discovered.duration_s,
        selection=plan.selection.model_copy(update={"tests": page}),
    )
