//! Fuzz target: both report parsers and the summary builder on arbitrary bytes.
//!
//! Input: byte 0 chooses the budgets (0 = the defaults) and the group-table limit; the
//! rest is the report. Each parser (JUnit and pytest-json, whatever the sniff says)
//! runs over the bytes; it must return (records or a `ReportError`), never panic.
//! Checked on every input:
//! * the summary is valid JSON with `total` = the sum of the outcomes;
//! * merging the builders of two halves of the records equals pushing them all into
//!   one builder (when no failure overflowed into `gother`), the property the native
//!   backend relies on for CI shards;
//! * with a node-id selection cut from the records (docs/ENGINE.md, *Selection*), the
//!   counts are the unselected summary's, the merge property still holds, and
//!   `unmatched` only names given entries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

use report_core::{
    parse_junit, parse_pytest_json, parse_reportlog, sniff, Budgets, Format, Item, Selection,
    SummaryBuilder,
};

fn budgets(selector: u8) -> (Budgets, usize) {
    if selector == 0 {
        return (Budgets::default(), 10_000);
    }
    let s = selector as usize;
    let b = Budgets {
        failures_listed: s % 4,
        max_traceback_lines: 3 + s % 7,
        max_line_chars: 8 + s % 13,
        max_message_chars: 8 + s % 11,
        max_output_bytes: s % 5 * 7,
        max_groups: s % 3,
        max_examples: s % 4,
        max_slowest: s % 3,
        max_collection_errors: s % 2,
        max_log_bytes: s % 6 * 5,
        max_frame_context_lines: s % 5,
        max_warning_groups: s % 3,
        max_warning_locations: s % 4,
        max_warning_chars: 8 + s % 9,
        max_warning_frames: s % 3,
        max_outcomes: s % 2 * 10,
    };
    (b, 1 + s % 5)
}

fn check_summary(bytes: &[u8]) {
    let v: serde_json::Value = serde_json::from_slice(bytes).expect("the summary is valid JSON");
    let c = &v["counts"];
    let n = |k: &str| c[k].as_u64().expect("a count is an unsigned integer");
    assert_eq!(
        n("total"),
        n("passed") + n("failed") + n("errors") + n("skipped") + n("xfailed") + n("xpassed")
    );
    assert!(n("flaky") <= n("total"));
}

/// Select entries cut from the record in the middle: its id, the part before its last
/// `::`, a directory of it, and one that matches nothing.
fn entries_for(items: &[Item]) -> Vec<String> {
    let id = match items.get(items.len() / 2) {
        Some(Item::Test(t)) => t.node_id.clone(),
        Some(Item::CollectionError(e)) => e.path.clone(),
        None => String::new(),
    };
    let mut entries = vec![id.clone(), "no/such/test.py::t".to_string()];
    if let Some((parent, _)) = id.rsplit_once("::") {
        entries.push(parent.to_string());
    }
    if let Some((dir, _)) = id.rsplit_once('/') {
        entries.push(format!("{dir}/"));
    }
    entries
}

/// The summary of `items` with `selection`, whole and as two merged halves: the merge
/// equals the whole (when exact) and the counts equal `unselected`'s.
fn check_selection(format: Format, items: &[Item], b: &Budgets, limit: usize, unselected: &[u8]) {
    let entries = entries_for(items);
    let selection = Arc::new(Selection::new(&entries));
    let builder = || SummaryBuilder::with_group_limit(b, limit).selecting(Arc::clone(&selection));
    let files = ["fuzz".to_string()];
    let mut whole = builder();
    items.iter().cloned().for_each(|item| whole.push(item));
    let cut = items.len() / 3;
    let (mut first, mut second) = (builder(), builder());
    items[..cut]
        .iter()
        .cloned()
        .for_each(|item| first.push(item));
    items[cut..]
        .iter()
        .cloned()
        .for_each(|item| second.push(item));
    let exact = !second.groups_overflowed();
    first.merge(second);
    let whole = whole.finish(format, &files);
    check_summary(&whole);
    if exact {
        assert_eq!(
            whole,
            first.finish(format, &files),
            "merge with a selection differs"
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&whole).expect("valid JSON");
    let u: serde_json::Value = serde_json::from_slice(unselected).expect("valid JSON");
    assert_eq!(v["counts"], u["counts"], "a selection changed the counts");
    for name in v["unmatched"].as_array().expect("unmatched is a list") {
        assert!(entries.iter().any(|e| Some(e.as_str()) == name.as_str()));
    }
}

fn run(format: Format, doc: &[u8], b: &Budgets, limit: usize) {
    let mut items: Vec<Item> = Vec::new();
    let result = {
        let mut sink = |item: Item| items.push(item);
        match format {
            Format::Junit => parse_junit(doc, "fuzz", b, &mut sink),
            Format::PytestJson => parse_pytest_json(doc, "fuzz", b, &mut sink),
            Format::Reportlog => parse_reportlog(doc, "fuzz", b, None, None, &mut sink).map(|_| ()),
        }
    };
    if let Err(e) = &result {
        assert!(!e.message.is_empty(), "an error says what happened");
    }
    let files = ["fuzz".to_string()];
    let mut whole = SummaryBuilder::with_group_limit(b, limit);
    for item in items.iter().cloned() {
        whole.push(item);
    }
    let cut = items.len() / 2;
    let mut first = SummaryBuilder::with_group_limit(b, limit);
    let mut second = SummaryBuilder::with_group_limit(b, limit);
    for item in items[..cut].iter().cloned() {
        first.push(item);
    }
    for item in items[cut..].iter().cloned() {
        second.push(item);
    }
    let exact = !second.groups_overflowed();
    first.merge(second);
    let whole = whole.finish(format, &files);
    check_summary(&whole);
    check_selection(format, &items, b, limit, &whole);
    let merged = first.finish(format, &files);
    check_summary(&merged);
    if exact {
        assert_eq!(
            String::from_utf8_lossy(&whole),
            String::from_utf8_lossy(&merged),
            "merge differs from sequential pushes"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, doc)) = data.split_first() else {
        return;
    };
    let (b, limit) = budgets(selector);
    let _ = sniff("fuzz", &doc[..doc.len().min(4096)]);
    run(Format::Junit, doc, &b, limit);
    run(Format::PytestJson, doc, &b, limit);
    run(Format::Reportlog, doc, &b, limit);
});
