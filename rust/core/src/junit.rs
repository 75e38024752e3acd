//! Streaming JUnit XML parser (docs/ENGINE.md, *JUnit XML*). STUB: owner fills in.

use std::io::Read;

use crate::budgets::Budgets;
use crate::error::ReportError;
use crate::record::Item;

/// Parse a JUnit XML document from `reader` (positioned at byte 0), handing each record
/// to `sink` in report order.
pub fn parse_junit<R: Read>(reader: R, path: &str, budgets: &Budgets, sink: &mut dyn FnMut(Item)) -> Result<(), ReportError> {
    let _ = (reader, path, budgets, sink);
    todo!()
}
