//! The summary builder (docs/ENGINE.md, *The builder*). STUB: owner fills in.

use crate::budgets::Budgets;
use crate::record::Item;
use crate::Format;

pub struct SummaryBuilder {
    budgets: Budgets,
}

impl SummaryBuilder {
    pub fn new(budgets: &Budgets) -> Self {
        SummaryBuilder { budgets: budgets.clone() }
    }

    /// Add one record, in report order.
    pub fn push(&mut self, item: Item) {
        let _ = (&self.budgets, item);
        todo!()
    }

    /// Append `other`, whose records come after this builder's in input order.
    pub fn merge(&mut self, other: SummaryBuilder) {
        let _ = other;
        todo!()
    }

    /// The canonical summary JSON bytes.
    pub fn finish(self, format: Format, files: &[String]) -> Vec<u8> {
        let _ = (format, files);
        todo!()
    }
}
