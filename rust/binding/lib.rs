//! The PyO3 binding: a thin layer over `report-core` (no parsing logic here).

// Lints in the style of pyca/cryptography's crates (see rust/core/src/lib.rs). The
// binding has no `unsafe` of its own: PyO3's macros hold it.
#![deny(rust_2018_idioms, unsafe_code)]

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use report_core::{Budgets, Format, ProjectCode};

create_exception!(
    _native,
    NativeReportError,
    PyException,
    "args: (kind, path, message, position)"
);

/// Summarise report files; returns the canonical summary JSON bytes. `select`: node-id
/// selection entries, or None for every test. `project`: (root, top-level packages) of
/// the project's own code, or None for the path-pattern rule.
#[pyfunction]
#[pyo3(signature = (paths, format, budgets, select=None, project=None))]
fn summarize_files<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    format: &str,
    budgets: &Bound<'py, PyDict>,
    select: Option<Vec<String>>,
    project: Option<(String, Vec<String>)>,
) -> PyResult<Bound<'py, PyBytes>> {
    let wanted = Format::parse_choice(format).map_err(PyValueError::new_err)?;
    if paths.is_empty() {
        return Err(PyValueError::new_err(
            "paths is empty: give at least one report file",
        ));
    }
    let mut b = Budgets::default();
    for name in Budgets::NAMES {
        let value: usize = budgets
            .get_item(name)?
            .ok_or_else(|| PyValueError::new_err(format!("budgets is missing {name:?}")))?
            .extract()?;
        b.set(name, value);
    }
    let project = project.map(|(root, packages)| ProjectCode::new(&root, &packages));
    let result =
        py.detach(|| report_core::summarize_files(&paths, wanted, &b, select.as_deref(), project));
    match result {
        Ok(bytes) => Ok(PyBytes::new(py, &bytes)),
        Err(e) => Err(NativeReportError::new_err((
            e.kind.as_str(),
            e.path,
            e.message,
            e.position,
        ))),
    }
}

/// Cut a long representation down; returns (cut text, lines omitted). `project`: (root,
/// top-level packages), or None for the path-pattern rule. `context_lines`: non-blank
/// lines kept before a frame's `>` line (None: the `max_frame_context_lines` default).
#[pyfunction]
#[pyo3(signature = (text, max_lines, max_line_chars, project=None, context_lines=None))]
fn cut_traceback(
    text: &str,
    max_lines: usize,
    max_line_chars: usize,
    project: Option<(String, Vec<String>)>,
    context_lines: Option<usize>,
) -> (String, u64) {
    let project = project.map(|(root, packages)| ProjectCode::new(&root, &packages));
    let context_lines = context_lines.unwrap_or(Budgets::default().max_frame_context_lines);
    report_core::cut::cut_traceback_for(
        text,
        max_lines,
        max_line_chars,
        context_lines,
        project.as_ref(),
    )
}

/// Group id and normalised message of a failure; `where_`: the frame or assertion site
/// (`path:line`) of the key, if any.
#[pyfunction]
#[pyo3(signature = (exception, message, where_=None))]
fn group_key(exception: Option<&str>, message: &str, where_: Option<&str>) -> (String, String) {
    report_core::group::group_key(exception, message, where_)
}

/// What a frame path is: `"library"`, `"project"` or `"test"` (docs/ENGINE.md, *Project
/// code*); `project`: (root, top-level packages), or None for the path-pattern rule.
#[pyfunction]
#[pyo3(signature = (path, project=None))]
fn classify_path(path: &str, project: Option<(String, Vec<String>)>) -> &'static str {
    let project = project.map(|(root, packages)| ProjectCode::new(&root, &packages));
    match report_core::project::classify(path, project.as_ref()) {
        report_core::project::CodeKind::Library => "library",
        report_core::project::CodeKind::Project => "project",
        report_core::project::CodeKind::Test => "test",
    }
}

/// The default budgets of report-core, by name (the Python model checks its own against
/// these).
#[pyfunction]
fn default_budgets<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let defaults = Budgets::default();
    let dict = PyDict::new(py);
    for name in Budgets::NAMES {
        dict.set_item(name, defaults.get(name))?;
    }
    Ok(dict)
}

/// The version of the report-core crate.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NativeReportError", m.py().get_type::<NativeReportError>())?;
    // The formats summarize_files reads (the facade gives others to the pure backend).
    m.add("FORMATS", report_core::FORMATS.to_vec())?;
    m.add_function(wrap_pyfunction!(summarize_files, m)?)?;
    m.add_function(wrap_pyfunction!(cut_traceback, m)?)?;
    m.add_function(wrap_pyfunction!(group_key, m)?)?;
    m.add_function(wrap_pyfunction!(classify_path, m)?)?;
    m.add_function(wrap_pyfunction!(default_budgets, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
