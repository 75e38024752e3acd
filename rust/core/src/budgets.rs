//! Budgets: how much of a report a summary keeps (docs/ENGINE.md, *Budgets*). The
//! defaults and the order of the fields equal `models.Budgets` in Python: both
//! are checked against docs/ENGINE.md's list, here (`cargo test`) and by
//! `tests/engine/test_budget_defaults.py`.

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budgets {
    pub failures_listed: usize,
    pub max_traceback_lines: usize,
    pub max_line_chars: usize,
    pub max_message_chars: usize,
    pub max_output_bytes: usize,
    pub max_groups: usize,
    pub max_examples: usize,
    pub max_slowest: usize,
    pub max_collection_errors: usize,
    /// Bytes of a failure's captured log records kept (their tail).
    pub max_log_bytes: usize,
    /// Non-blank source lines kept before a frame's `>` line (docs/ENGINE.md,
    /// *Traceback cutting*, step 4); 0 also writes each frame on one line (*The shown
    /// traceback*, rule 8).
    pub max_frame_context_lines: usize,
    /// Warning groups listed (docs/ENGINE.md, *Warnings*).
    pub max_warning_groups: usize,
    /// Distinct locations listed per warning group.
    pub max_warning_locations: usize,
    /// Characters of a warning's message line (and its exception line).
    pub max_warning_chars: usize,
    /// Frames kept of an exception warning's traceback.
    pub max_warning_frames: usize,
    /// Tests whose outcome the summary lists by node id, in report order (0: none).
    pub max_outcomes: usize,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            failures_listed: 20,
            max_traceback_lines: 40,
            max_line_chars: 200,
            max_message_chars: 300,
            max_output_bytes: 2048,
            max_groups: 10,
            max_examples: 3,
            max_slowest: 5,
            max_collection_errors: 20,
            max_log_bytes: 2048,
            max_frame_context_lines: 3,
            max_warning_groups: 5,
            max_warning_locations: 3,
            max_warning_chars: 200,
            max_warning_frames: 3,
            max_outcomes: 0,
        }
    }
}

/// By-name access, for the tests that keep the fields, their order and their defaults
/// equal to the Python model's and to docs/ENGINE.md (no production code needs names).
#[cfg(test)]
impl Budgets {
    /// The budget names, in the order the Python model declares them.
    pub const NAMES: [&'static str; 16] = [
        "failures_listed",
        "max_traceback_lines",
        "max_line_chars",
        "max_message_chars",
        "max_output_bytes",
        "max_groups",
        "max_examples",
        "max_slowest",
        "max_collection_errors",
        "max_log_bytes",
        "max_frame_context_lines",
        "max_warning_groups",
        "max_warning_locations",
        "max_warning_chars",
        "max_warning_frames",
        "max_outcomes",
    ];

    /// One budget by name; None for an unknown name.
    pub fn get(&self, name: &str) -> Option<usize> {
        let mut copy = self.clone();
        copy.slot(name).map(|slot| *slot)
    }

    /// Set one budget by name; returns false for an unknown name.
    pub fn set(&mut self, name: &str, value: usize) -> bool {
        match self.slot(name) {
            Some(slot) => {
                *slot = value;
                true
            }
            None => false,
        }
    }

    /// The field named `name`.
    fn slot(&mut self, name: &str) -> Option<&mut usize> {
        Some(match name {
            "failures_listed" => &mut self.failures_listed,
            "max_traceback_lines" => &mut self.max_traceback_lines,
            "max_line_chars" => &mut self.max_line_chars,
            "max_message_chars" => &mut self.max_message_chars,
            "max_output_bytes" => &mut self.max_output_bytes,
            "max_groups" => &mut self.max_groups,
            "max_examples" => &mut self.max_examples,
            "max_slowest" => &mut self.max_slowest,
            "max_collection_errors" => &mut self.max_collection_errors,
            "max_log_bytes" => &mut self.max_log_bytes,
            "max_frame_context_lines" => &mut self.max_frame_context_lines,
            "max_warning_groups" => &mut self.max_warning_groups,
            "max_warning_locations" => &mut self.max_warning_locations,
            "max_warning_chars" => &mut self.max_warning_chars,
            "max_warning_frames" => &mut self.max_warning_frames,
            "max_outcomes" => &mut self.max_outcomes,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reaches_its_own_field() {
        let mut b = Budgets::default();
        for (i, name) in Budgets::NAMES.iter().enumerate() {
            assert!(b.set(name, 1000 + i));
        }
        for (i, name) in Budgets::NAMES.iter().enumerate() {
            assert_eq!(b.get(name), Some(1000 + i));
        }
        assert!(!b.set("max_other", 1));
        assert_eq!(b.get("max_other"), None);
    }

    /// docs/ENGINE.md's `name=value` list under *Budgets (defaults)*, in order (the
    /// Python model is checked against the same list by tests/engine/test_budget_defaults.py).
    fn documented_defaults() -> Vec<(String, usize)> {
        let doc = include_str!("../../../docs/ENGINE.md");
        let section = doc
            .split_once("## Budgets (defaults)")
            .expect("docs/ENGINE.md has a *Budgets (defaults)* section")
            .1;
        let section = section.split_once("\n## ").map_or(section, |(s, _)| s);
        section
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '='))
            .filter_map(|token| token.split_once('='))
            .filter(|(name, value)| !name.is_empty() && !value.is_empty())
            .map(|(name, value)| (name.to_owned(), value.parse().expect("a number")))
            .collect()
    }

    #[test]
    fn defaults_and_name_order_are_the_documented_ones() {
        let documented = documented_defaults();
        let names: Vec<&str> = documented.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, Budgets::NAMES);
        let defaults = Budgets::default();
        for (name, value) in &documented {
            assert_eq!(defaults.get(name), Some(*value), "{name}");
        }
    }
}
