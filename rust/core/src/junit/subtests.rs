//! Subtests in JUnit XML (docs/ENGINE.md, *Subtests*).
//!
//! pytest 9 writes one `<failure>` child per failed subtest (unittest's `subTest` or the
//! `subtests` fixture) in the parent's `<testcase>`, in report order; the fixture flavour
//! adds a last `<failure message="contains N failed subtests">` for the parent itself.
//! Passed subtests and the subtests' labels leave nothing in the XML, except through the
//! server's pytest plugin, which adds one `<property name="pytest_mcp_server.subtest"
//! value="<outcome> <label>">` per subtest report (properties come before the results).
//!
//! Rules (only in testcases of a pytest suite, `testsuite name="pytest"`: other writers
//! put several results in one case for other reasons): a `<failure>` followed by another `<failure>` of the same case is a failed
//! subtest. The last `<failure>` is a subtest too when the case has several failures or
//! failed-subtest properties are left, unless its message is pytest's parent marker; then
//! the parent (which pytest counted as passed) is listed as failed with pytest's wording
//! `contains N failed subtests`. The k-th failed subtest takes the k-th failed label.
//! The pure twin is `_CaseSubtests` in `src/pytest_mcp_server/engine/pure/junit/subtests.py`.

use std::collections::VecDeque;

use super::lexer::{Attrs, Slot};
use super::{Chosen, Junit};
use crate::record::{Item, Outcome, Phase, TestRecord};
use crate::text::HeadTail;

/// The property name the server's pytest plugin writes for each subtest report
/// (`_pytest_plugin/pytest_mcp_server_subtests.py`).
pub const SUBTEST_PROPERTY: &str = "pytest_mcp_server.subtest";

/// Labels kept per case: beyond this many failed subtests, the later ones get `""`.
const MAX_LABELS: usize = 10_000;

/// The subtests of the open testcase.
#[derive(Debug, Default)]
pub struct CaseSubtests {
    /// `<failure>` children seen so far.
    failures: u64,
    /// Failed subtests emitted so far.
    failed: u64,
    /// Passed subtests named by properties.
    passed: u64,
    /// Labels of the failed subtests not yet emitted, in report order.
    labels: VecDeque<String>,
}

impl CaseSubtests {
    pub fn clear(&mut self) {
        self.failures = 0;
        self.failed = 0;
        self.passed = 0;
        self.labels.clear();
    }

    /// Read one `<property>` of the case: only the plugin's subtest property counts.
    pub fn read_property(&mut self, attrs: &Attrs) {
        if attrs.get(Slot::Name) != Some(SUBTEST_PROPERTY) {
            return;
        }
        let value = attrs.get(Slot::Value).unwrap_or("");
        let (outcome, label) = value.split_once(' ').unwrap_or((value, ""));
        match outcome {
            "passed" => self.passed += 1,
            "failed" if self.labels.len() < MAX_LABELS => self.labels.push_back(label.to_string()),
            "failed" => self.labels.push_back(String::new()),
            _ => {}
        }
    }
}

/// pytest's message for a parent whose subtests failed (`_pytest/subtests.py`,
/// `pytest_report_teststatus`): `contains N failed subtest` + `s` when N > 1.
pub fn is_parent_marker(message: &str) -> bool {
    let Some(rest) = message.strip_prefix("contains ") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    matches!(&rest[digits..], " failed subtest" | " failed subtests")
}

/// The message pytest gives a parent with `n` failed subtests.
fn parent_message(n: u64) -> String {
    format!(
        "contains {n} failed subtest{}",
        if n > 1 { "s" } else { "" }
    )
}

impl Junit<'_, '_> {
    /// A `<failure>` starts: when the case's current result is a failure, that one was a
    /// subtest (pytest writes the parent's own failure last); emit it.
    pub(super) fn failure_starts(&mut self) {
        if !self.case.pytest_suite {
            return;
        }
        self.case.subtests.failures += 1;
        if self
            .case
            .chosen
            .as_ref()
            .is_some_and(|c| c.outcome == Outcome::Failed)
        {
            let previous = self.case.chosen.take().expect("checked just above");
            let text = std::mem::replace(&mut self.case.text, HeadTail::new(0, 0));
            self.emit_failed_subtest(previous, text);
        }
    }

    /// Emit one failed subtest of the open case (its location comes from its text).
    fn emit_failed_subtest(&mut self, chosen: Chosen, text: HeadTail) {
        let label = self.case.subtests.labels.pop_front().unwrap_or_default();
        self.case.subtests.failed += 1;
        let (text, omitted) = text.finish();
        self.build_node_id();
        let record = TestRecord {
            node_id: super::into_string(self.node_id.clone()),
            outcome: Some(Outcome::Failed),
            phase: chosen.phase,
            exception: chosen.exception,
            message: chosen.message,
            text: Some(text),
            text_bytes_omitted: omitted + chosen.message_omitted,
            subtest: Some(label),
            ..TestRecord::default()
        };
        self.flush();
        (self.sink)(Item::Test(record));
    }

    /// At the case's end: emit its last failed subtest (if the last failure is one) and
    /// its passed subtests; leave in `chosen` and `text` what decides the parent: its
    /// result (a failure `contains N failed subtests` when pytest counted it passed) and
    /// its text, and say whether pytest counted it passed. In place: this runs for every
    /// testcase, and moving the result and text in and out cost more than the rest.
    pub(super) fn close_subtests(
        &mut self,
        chosen: &mut Option<Chosen>,
        text: &mut HeadTail,
    ) -> bool {
        if !self.case.pytest_suite {
            return false;
        }
        let subtests = &self.case.subtests;
        let last_is_subtest = chosen.as_ref().is_some_and(|c| {
            c.outcome == Outcome::Failed
                && (subtests.failures >= 2 || !subtests.labels.is_empty())
                && !c.message.as_deref().is_some_and(is_parent_marker)
        });
        if last_is_subtest {
            let last = chosen.take().expect("a subtest failure");
            let last_text = std::mem::replace(text, HeadTail::for_text());
            self.emit_failed_subtest(last, last_text);
            *chosen = Some(Chosen {
                outcome: Outcome::Failed,
                phase: Some(Phase::Call),
                collection: false,
                exception: None,
                message: Some(parent_message(self.case.subtests.failed)),
                message_omitted: 0,
            });
        }
        let passed = self.case.subtests.passed;
        if passed > 0 {
            self.build_node_id();
            self.flush();
            for _ in 0..passed {
                (self.sink)(Item::Test(TestRecord {
                    node_id: super::into_string(self.node_id.clone()),
                    outcome: Some(Outcome::Passed),
                    subtest: Some(String::new()),
                    ..TestRecord::default()
                }));
            }
        }
        last_is_subtest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_marker_is_pytests_exact_wording() {
        assert!(is_parent_marker("contains 2 failed subtests"));
        assert!(is_parent_marker("contains 1 failed subtest"));
        assert!(!is_parent_marker("contains failed subtests"));
        assert!(!is_parent_marker("contains 2 failed subtests!"));
        assert!(!is_parent_marker(
            "AssertionError: contains 2 failed subtests"
        ));
        assert_eq!(parent_message(1), "contains 1 failed subtest");
        assert_eq!(parent_message(3), "contains 3 failed subtests");
    }
}
