//! The warnings of a report log, grouped as answers show them (docs/ENGINE.md,
//! *Warnings*); mirrored by `pure/warnings.py`, rule for rule.
//!
//! A warning is grouped by its category and the first line of its message; pytest's
//! unhandled-exception warnings (`EXCEPTION_WARNINGS`) by their category, their
//! exception line and the innermost frame of the traceback their message carries (the
//! project's, else the innermost), since their location is pytest's own file. Each group
//! keeps its count, up to `max_warning_locations` distinct locations (`path:line` as
//! frames are shown) and, for an exception warning, the end of its traceback. Groups are
//! listed in the order first seen, the first `max_warning_groups`; distinct warnings
//! beyond `TRACKED_KEYS` are only counted.

use std::collections::HashSet;

use indexmap::IndexMap;
use serde::Serialize;

use crate::budgets::Budgets;
use crate::project::{classify, display_path, CodeKind, ProjectCode};
use crate::text::py_strip;

/// Distinct warnings grouped one by one; beyond, new ones are counted in `omitted` only
/// (and at most this many of them): memory stays bounded.
pub const TRACKED_KEYS: usize = 10_000;
/// pytest's warnings for an exception raised where no test sees it (a thread, `__del__`).
const EXCEPTION_WARNINGS: [&str; 2] = [
    "PytestUnhandledThreadExceptionWarning",
    "PytestUnraisableExceptionWarning",
];
const TRACEBACK_HEAD: &str = "Traceback (most recent call last):";
const FRAME_HEAD: &str = "  File \"";
const LINE_MARK: &str = "\", line ";

type Key = (String, String, String);

/// One group of warnings, as the summary lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WarningGroup {
    pub category: String,
    pub message: String,
    pub count: u64,
    pub locations: Vec<String>,
    pub traceback: Option<String>,
}

/// The warnings read so far, grouped.
#[derive(Clone, Debug, Default)]
pub struct WarningGroups {
    pub total: u64,
    groups: IndexMap<Key, WarningGroup>,
    untracked: HashSet<Key>,
}

/// The summary's `warnings` object.
#[derive(Serialize)]
pub struct WarningsJson<'a> {
    pub total: u64,
    pub groups: Vec<&'a WarningGroup>,
    pub omitted: usize,
}

impl WarningGroups {
    /// One warning: its category's name, its message, and where it was raised
    /// (`(filename, lineno)`, None when the report does not say).
    pub fn add(
        &mut self,
        category: &str,
        text: &str,
        location: Option<(&str, i64)>,
        budgets: &Budgets,
        project: Option<&ProjectCode>,
    ) {
        self.total += 1;
        let message = first_line(text, budgets.max_warning_chars);
        let mut shown =
            location.map(|(path, line)| format!("{}:{line}", display_path(path, project)));
        let mut traceback = None;
        let key = if EXCEPTION_WARNINGS.contains(&category) {
            let (cut, innermost, exception) = cut_traceback(text, budgets, project);
            traceback = cut;
            if innermost.is_some() {
                shown = innermost;
            }
            (
                category.to_owned(),
                exception,
                shown.clone().unwrap_or_default(),
            )
        } else {
            (category.to_owned(), message.clone(), String::new())
        };
        if let Some(known) = self.groups.get_mut(&key) {
            known.count += 1;
            if let Some(shown) = shown {
                if !known.locations.contains(&shown)
                    && known.locations.len() < budgets.max_warning_locations
                {
                    known.locations.push(shown);
                }
            }
        } else if self.groups.len() < TRACKED_KEYS {
            let locations = match shown {
                Some(shown) if budgets.max_warning_locations > 0 => vec![shown],
                _ => Vec::new(),
            };
            let group = WarningGroup {
                category: category.to_owned(),
                message,
                count: 1,
                locations,
                traceback,
            };
            self.groups.insert(key, group);
        } else if self.untracked.len() < TRACKED_KEYS {
            self.untracked.insert(key);
        }
    }

    /// Whether some warning went uncounted by group (more than `TRACKED_KEYS` distinct
    /// ones): then merging two of these is not exact, and the caller reads in order.
    pub fn overflowed(&self) -> bool {
        !self.untracked.is_empty()
    }

    /// `other`'s warnings after these, as if read after them (exact unless either
    /// `overflowed`).
    pub fn merge(&mut self, other: WarningGroups, budgets: &Budgets) {
        self.total += other.total;
        for (key, group) in other.groups {
            if let Some(known) = self.groups.get_mut(&key) {
                known.count += group.count;
                for shown in group.locations {
                    if !known.locations.contains(&shown)
                        && known.locations.len() < budgets.max_warning_locations
                    {
                        known.locations.push(shown);
                    }
                }
            } else if self.groups.len() < TRACKED_KEYS {
                self.groups.insert(key, group);
            } else if self.untracked.len() < TRACKED_KEYS {
                self.untracked.insert(key);
            }
        }
        for key in other.untracked {
            if self.untracked.len() < TRACKED_KEYS && !self.groups.contains_key(&key) {
                self.untracked.insert(key);
            }
        }
    }

    /// The summary's `warnings`: the first `max_warning_groups` groups, first seen first.
    pub fn json(&self, budgets: &Budgets) -> WarningsJson<'_> {
        let listed = self.groups.len().min(budgets.max_warning_groups);
        WarningsJson {
            total: self.total,
            groups: self.groups.values().take(listed).collect(),
            omitted: self.groups.len() - listed + self.untracked.len(),
        }
    }
}

/// The first line of `text` stripped (Python's whitespace), at most `chars` characters:
/// a longer one keeps `chars - 3` and ends with `...`.
pub fn first_line(text: &str, chars: usize) -> String {
    let stripped = py_strip(text);
    let line = py_strip(stripped.split('\n').next().unwrap_or(""));
    if line.chars().count() <= chars {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(chars.saturating_sub(3)).collect();
    out.push_str("...");
    out
}

/// A Python traceback's frame line, `  File "PATH", line N, in NAME`, as (PATH, N, NAME);
/// PATH runs to the last `", line N, in ` of the line (N ASCII digits); None for any
/// other line.
pub fn frame_line(line: &str) -> Option<(&str, &str, &str)> {
    let rest = line.strip_prefix(FRAME_HEAD)?;
    let mut end = rest.len();
    loop {
        let at = rest[..end].rfind(LINE_MARK)?;
        let digits = at + LINE_MARK.len();
        let count = rest[digits..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        let stop = digits + count;
        if count > 0 && rest[stop..].starts_with(", in ") {
            return Some((
                &rest[..at],
                &rest[digits..stop],
                &rest[stop + ", in ".len()..],
            ));
        }
        // look further left: an occurrence ending before this one's last byte
        end = at + LINE_MARK.len() - 1;
    }
}

/// (the end of the last Python traceback in `text`: its last frames, the project's
/// preferred, each with its source line, then its exception line; the `path:line` of
/// its innermost kept frame; its exception line). Without a traceback: (None, None, the
/// message's first line).
fn cut_traceback(
    text: &str,
    budgets: &Budgets,
    project: Option<&ProjectCode>,
) -> (Option<String>, Option<String>, String) {
    let chars = budgets.max_warning_chars;
    let Some(start) = text.rfind(TRACEBACK_HEAD) else {
        return (None, None, first_line(text, chars));
    };
    // (path:line, function, source line, the project's)
    let mut frames: Vec<(String, &str, &str, bool)> = Vec::new();
    let mut exception = String::new();
    let lines: Vec<&str> = text[start..].split('\n').skip(1).collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some((path, number, function)) = frame_line(line) {
            let following = lines.get(i + 1).copied().unwrap_or("");
            let code = if following.starts_with("    ") {
                py_strip(following)
            } else {
                ""
            };
            let shown = format!("{}:{number}", display_path(path, project));
            let own = classify(path, project) != CodeKind::Library;
            frames.push((shown, function, code, own));
        } else if !line.is_empty() && !line.starts_with(' ') {
            exception = first_line(line, chars);
            break;
        }
    }
    let own: Vec<&(String, &str, &str, bool)> = frames.iter().filter(|f| f.3).collect();
    let pool: Vec<&(String, &str, &str, bool)> = if own.is_empty() {
        frames.iter().collect()
    } else {
        own
    };
    let kept = &pool[pool.len().saturating_sub(budgets.max_warning_frames)..];
    let mut out: Vec<String> = Vec::new();
    for (shown, function, code, _) in kept {
        out.push(format!("{shown} in {function}"));
        if !code.is_empty() {
            out.push(format!("    {code}"));
        }
    }
    out.push(exception.clone());
    let innermost = kept.last().map(|f| f.0.clone());
    (Some(out.join("\n")), innermost, exception)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_line_ends_its_path_at_the_last_line_mark() {
        let line = "  File \"/a/b \", line 3, in x.py\", line 12, in run";
        assert_eq!(
            frame_line(line),
            Some(("/a/b \", line 3, in x.py", "12", "run"))
        );
        assert_eq!(frame_line("  File \"x.py\", line , in f"), None);
        assert_eq!(frame_line("File \"x.py\", line 1, in f"), None);
    }

    #[test]
    fn a_long_first_line_is_cut_to_its_characters() {
        assert_eq!(first_line("  ééééé\nmore", 4), "é...");
        assert_eq!(first_line("\u{a0}abc\u{a0}", 3), "abc");
    }
}
