//! Fuzz target: both report parsers and the summary builder on arbitrary bytes.
//!
//! Input: byte 0 chooses the budgets (0 = the defaults) and the group-table limit; the
//! rest is the report. Each parser (JUnit and pytest-json, whatever the sniff says)
//! runs over the bytes; it must return (records or a `ReportError`), never panic.
//! Checked on every input:
//! * the summary is valid JSON with `total` = the sum of the outcomes;
//! * merging the builders of two halves of the records equals pushing them all into
//!   one builder (when no failure overflowed into `gother`), the property the native
//!   backend relies on for CI shards.
#![no_main]

use libfuzzer_sys::fuzz_target;
use report_core::{junit, pytest_json, sniff, Budgets, Format, Item, SummaryBuilder};

fn budgets(selector: u8) -> (Budgets, usize) {
    if selector == 0 {
        return (Budgets::default(), 10_000);
    }
    let s = selector as usize;
    let b = Budgets {
        max_failures: s % 4,
        max_traceback_lines: 3 + s % 7,
        max_line_chars: 8 + s % 13,
        max_message_chars: 8 + s % 11,
        max_output_bytes: s % 5 * 7,
        max_groups: s % 3,
        max_examples: s % 4,
        max_slowest: s % 3,
        max_collection_errors: s % 2,
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

fn run(format: Format, doc: &[u8], b: &Budgets, limit: usize) {
    let mut items: Vec<Item> = Vec::new();
    let result = {
        let mut sink = |item: Item| items.push(item);
        match format {
            Format::Junit => junit::parse_junit(doc, "fuzz", b, &mut sink),
            Format::PytestJson => pytest_json::parse_pytest_json(doc, "fuzz", b, &mut sink),
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
});
