//! The PyO3 binding: a thin layer over `report-core` (no parsing logic here).
//!
//! `summarize_files` and `version`. The rule functions (cutting, group keys, the
//! project-code rules) stay inside report-core, reached through summaries.

// Lints in the style of pyca/cryptography's crates (see rust/core/src/lib.rs). The
// binding has no `unsafe` of its own: PyO3's macros hold it.
#![deny(rust_2018_idioms, unsafe_code)]

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use report_core::{CollectedPage, Format, ProjectCode, SuspectGroup};

/// The package's own Python exception classes, raised as they are (as pyca/cryptography
/// raises `cryptography.exceptions.*`): what a caller catches is what the binding raised.
mod python {
    pyo3::import_exception!(pytest_mcp_server.engine.models, ReportError);
}

/// A report-core error on its way to Python (a newtype: the orphan rule forbids
/// `impl From<report_core::ReportError> for PyErr` in this crate).
struct ReportError(report_core::ReportError);

/// `pytest_mcp_server.engine.models.ReportError(kind, path, message, position)`.
impl From<ReportError> for PyErr {
    fn from(ReportError(err): ReportError) -> PyErr {
        python::ReportError::new_err((err.kind.as_str(), err.path, err.message, err.position))
    }
}

/// The budgets of a summary, read from the attributes of the Python `models.Budgets`
/// model (which has validated them). Every field is required: a missing one is an
/// `AttributeError` naming it, one that is not a non-negative integer a `TypeError`
/// ("failed to extract field Budgets.failures_listed", the cause chained).
#[derive(FromPyObject)]
struct Budgets {
    failures_listed: usize,
    max_traceback_lines: usize,
    max_line_chars: usize,
    max_message_chars: usize,
    max_output_bytes: usize,
    max_groups: usize,
    max_examples: usize,
    max_slowest: usize,
    max_collection_errors: usize,
    max_log_bytes: usize,
    max_frame_context_lines: usize,
    max_warning_groups: usize,
    max_warning_locations: usize,
    max_warning_chars: usize,
    max_warning_frames: usize,
    max_outcomes: usize,
}

impl From<Budgets> for report_core::Budgets {
    fn from(b: Budgets) -> Self {
        // Every field named, no `..`: a budget added to report-core does not build here
        // until this binding reads it too.
        report_core::Budgets {
            failures_listed: b.failures_listed,
            max_traceback_lines: b.max_traceback_lines,
            max_line_chars: b.max_line_chars,
            max_message_chars: b.max_message_chars,
            max_output_bytes: b.max_output_bytes,
            max_groups: b.max_groups,
            max_examples: b.max_examples,
            max_slowest: b.max_slowest,
            max_collection_errors: b.max_collection_errors,
            max_log_bytes: b.max_log_bytes,
            max_frame_context_lines: b.max_frame_context_lines,
            max_warning_groups: b.max_warning_groups,
            max_warning_locations: b.max_warning_locations,
            max_warning_chars: b.max_warning_chars,
            max_warning_frames: b.max_warning_frames,
            max_outcomes: b.max_outcomes,
        }
    }
}

/// Summarise report files; returns the canonical summary JSON bytes. `budgets`: a
/// `models.Budgets`. `select`: node-id selection entries, or None for every test.
/// `project`: (root, top-level packages) of the project's own code, or None for the
/// path-pattern rule. `suspect`: (key, failing node ids) of a cause found outside the
/// report, whose failures group as one (docs/ENGINE.md, *Groups*), or None.
/// `collected_page`: (offset, limit, max_files) of the collected node ids to keep (the
/// session's `collected_ids`: docs/ENGINE.md, *Session*), or None for none. Raises
/// `models.ReportError` for a report that cannot be summarised,
/// `ValueError` for an unknown format or no paths, `AttributeError`/`TypeError` for a
/// missing/bad budget (see [`Budgets`]), `OverflowError` for a negative page number.
#[pyfunction]
#[pyo3(signature = (paths, format, budgets, select=None, project=None, suspect=None, collected_page=None))]
#[allow(clippy::too_many_arguments)] // the Python function's arguments, one each
fn summarize_files<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    format: &str,
    budgets: Budgets,
    select: Option<Vec<String>>,
    project: Option<(String, Vec<String>)>,
    suspect: Option<(String, Vec<String>)>,
    collected_page: Option<(u64, u64, usize)>,
) -> PyResult<Bound<'py, PyBytes>> {
    let wanted = Format::parse_choice(format).map_err(PyValueError::new_err)?;
    if paths.is_empty() {
        return Err(PyValueError::new_err(
            "paths is empty: give at least one report file",
        ));
    }
    let budgets = report_core::Budgets::from(budgets);
    let project = project.map(|(root, packages)| ProjectCode::new(&root, &packages));
    let suspect = suspect.map(|(key, node_ids)| SuspectGroup {
        key,
        node_ids: node_ids.into_iter().collect(),
    });
    let collected_page = collected_page.map(|(offset, limit, max_files)| CollectedPage {
        offset,
        limit,
        max_files,
    });
    let bytes = py
        .detach(|| {
            report_core::summarize_files(
                &paths,
                wanted,
                &budgets,
                select.as_deref(),
                project,
                suspect,
                collected_page,
            )
        })
        .map_err(ReportError)?;
    Ok(PyBytes::new(py, &bytes))
}

/// The version of the report-core crate.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(summarize_files, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
