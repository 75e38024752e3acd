//! Fuzz target: the builder's text rules on arbitrary text.
//!
//! `cut_traceback` must give at most `max_lines` lines (markers included), no kept line
//! longer than `max_line_chars` characters (markers are never cut), and count what it
//! dropped; `group_key` must give `g` + 8 hex digits and be a pure function.
#![no_main]

use libfuzzer_sys::fuzz_target;
use report_core::{cut_traceback, group_key, normalize_message};

fn is_marker(line: &str) -> bool {
    line.strip_prefix("... [")
        .and_then(|r| r.strip_suffix(" lines omitted]"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let max_lines = 3 + data[0] as usize % 40;
    let max_chars = 8 + data[1] as usize % 120;
    let text = String::from_utf8_lossy(&data[2..]);
    let (out, omitted) = cut_traceback(&text, max_lines, max_chars);
    let lines: Vec<&str> = out.split('\n').collect();
    assert!(
        lines.len() <= max_lines,
        "{} lines > {max_lines}",
        lines.len()
    );
    for line in &lines {
        assert!(
            is_marker(line) || line.chars().count() <= max_chars,
            "line too long: {line:?}"
        );
    }
    let input_lines = text.split('\n').count() as u64;
    assert!(omitted <= input_lines);
    let first_line = text.split('\n').next().unwrap_or("");
    let (id, normalized) = group_key(Some("ValueError"), first_line, None);
    assert!(id.len() == 9 && id.starts_with('g') && id[1..].bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        group_key(Some("ValueError"), first_line, None),
        (id, normalized)
    );
    let _ = normalize_message(&text);
});
