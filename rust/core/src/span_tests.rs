//! A listed group's first failure, kept without its texts, read again from its source
//! span: the summary must be the bytes a builder that kept the texts gives, for every
//! shape of element the parsers give a span (byte order marks, `pytest` suites, retried
//! JUnit cases, pytest-json reruns), and a span that no longer holds the same failure
//! must fall back to reading the whole file.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use crate::budgets::Budgets;
use crate::record::{Item, SourceSpan, TestRecord};
use crate::summary::SummaryBuilder;
use crate::{junit, pytest_json, summarize_files, Format};

/// A fresh file in the system's temporary directory with `bytes` in it.
fn report_file(name: &str, bytes: &[u8]) -> String {
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "report-core-span-tests-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    File::create(&path).unwrap().write_all(bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

fn budgets() -> Budgets {
    Budgets {
        failures_listed: 3,
        max_groups: 2,
        ..Budgets::default()
    }
}

/// A traceback whose last location line puts the failure at `mod_{cause}.py`, with a
/// `marker` line that tells one failure of a cause from another.
fn traceback(cause: usize, marker: &str) -> String {
    format!(
        "    def test():\n        # {marker}\n>       g()\nE       ValueError: bad {cause}\n\n\
         src/pkg/mod_{cause}.py:{cause}: ValueError"
    )
}

/// The causes, in report order: ten distinct ones come first (the budget lists three
/// failures as they come), then cause 99's first failure (not listed as it comes, so
/// kept without its texts), more distinct causes, and cause 99 twice more: the largest
/// group, listed first, with its first failure.
fn causes() -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for i in 0..10 {
        out.push((format!("test_{i}"), i, format!("only failure of {i}")));
    }
    out.push(("test_big_0".into(), 99, "the first failure of 99".into()));
    for i in 10..20 {
        out.push((format!("test_{i}"), i, format!("only failure of {i}")));
    }
    out.push(("test_big_1".into(), 99, "a later failure of 99".into()));
    out.push(("test_big_2".into(), 99, "the last failure of 99".into()));
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A JUnit report of `causes()`; `retried`: each case comes twice (a retry with the same
/// node id; the first attempt's text differs, the record keeps the last attempt's).
fn junit_report(bom: bool, suite: &str, retried: bool) -> Vec<u8> {
    let mut xml = String::new();
    if bom {
        xml.push('\u{feff}');
    }
    xml.push_str(&format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<testsuites><testsuite name=\"{suite}\">\n"
    ));
    for (name, cause, marker) in causes() {
        let case = |marker: &str| {
            format!(
                "  <testcase classname=\"tests.test_m\" name=\"{name}\" time=\"0.5\">\
                 <failure message=\"ValueError: bad {cause}\">{}</failure>\
                 <system-out>out of {name}</system-out></testcase>\n",
                xml_escape(&traceback(cause, marker))
            )
        };
        if retried {
            xml.push_str(&case("an earlier attempt"));
        }
        xml.push_str(&case(&marker));
    }
    xml.push_str("</testsuite></testsuites>\n");
    xml.into_bytes()
}

/// A pytest-json-report of `causes()`; `reruns`: each failure follows a `rerun` entry of
/// the same test (pytest-rerunfailures), whose texts differ; `crash_located`: the
/// tracebacks end without a location line, so a failure is located by its `crash` entry
/// (a path the parser makes relative to the report's `root`) and grouped by its message,
/// whose exception names the cause.
fn pytest_json_report(bom: bool, reruns: bool, crash_located: bool) -> Vec<u8> {
    let exception = |cause: usize| match crash_located {
        true => format!("Cause{cause}Error"),
        false => "ValueError".to_owned(),
    };
    let longrepr = |cause: usize, marker: &str| {
        let text = traceback(cause, marker).replace("ValueError", &exception(cause));
        match crash_located {
            true => text[..text.find("\n\n").unwrap()].to_owned(),
            false => text,
        }
    };
    let entry = |name: &str, cause: usize, marker: &str, outcome: &str| {
        serde_json::json!({
            "nodeid": format!("tests/test_m.py::{name}"),
            "lineno": 1,
            "outcome": outcome,
            "setup": {"duration": 0.001, "outcome": "passed"},
            "call": {
                "duration": 0.25,
                "outcome": "failed",
                "crash": {"path": format!("/r/src/pkg/mod_{cause}.py"), "lineno": cause, "message": format!("{}: bad {cause}", exception(cause))},
                "longrepr": longrepr(cause, marker),
                "stdout": format!("out of {name}"),
            },
            "teardown": {"duration": 0.001, "outcome": "passed"},
        })
    };
    let mut tests = Vec::new();
    for (name, cause, marker) in causes() {
        if reruns {
            tests.push(entry(&name, cause, "an earlier attempt", "rerun"));
        }
        tests.push(entry(&name, cause, &marker, "failed"));
    }
    let report = serde_json::json!({
        "created": 1.0, "duration": 2.0, "exitcode": 1, "root": "/r",
        "summary": {"failed": tests.len()}, "tests": tests,
    });
    let mut bytes = if bom {
        b"\xef\xbb\xbf".to_vec()
    } else {
        Vec::new()
    };
    bytes.extend(serde_json::to_vec_pretty(&report).unwrap());
    bytes
}

/// Parse `path` into `sink`; pytest's session time, if the report has one.
fn parse(format: Format, path: &str, budgets: &Budgets, sink: &mut dyn FnMut(Item)) -> Option<u64> {
    let file = File::open(path).unwrap();
    match format {
        Format::Junit => junit::parse_junit(file, path, budgets, sink).map(|()| None),
        Format::PytestJson => pytest_json::parse_pytest_json_session(file, path, budgets, sink),
        Format::Reportlog => unreachable!("no spans"),
    }
    .unwrap()
}

/// The summary of a builder that keeps its first failures' texts (no spans).
fn summary_with_texts_kept(format: Format, path: &str, budgets: &Budgets) -> Vec<u8> {
    let mut builder = SummaryBuilder::new(budgets);
    let session = parse(format, path, budgets, &mut |item| builder.push(item));
    builder.end_file(session, 0);
    assert!(
        !builder.missing_representatives(),
        "under the bound: nothing to read again"
    );
    builder.finish(format, &[path.to_owned()])
}

fn listed_first(summary: &[u8]) -> (String, String) {
    let v: serde_json::Value = serde_json::from_slice(summary).unwrap();
    let first = &v["failures"][0];
    (
        first["node_id"].as_str().unwrap().to_owned(),
        first["traceback"].as_str().unwrap().to_owned(),
    )
}

/// The report `bytes` (written as `name`) summarised by `summarize_files` gives the
/// bytes a builder that kept the texts gives; the largest group (cause 99) lists its
/// first failure; and every first failure kept without its texts is read from its span.
fn assert_spans_give_kept_summary(format: Format, name: &str, bytes: &[u8]) {
    let path = report_file(name, bytes);
    let b = budgets();
    let got = summarize_files(
        std::slice::from_ref(&path),
        None,
        &b,
        None,
        None,
        None,
        None,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(got.clone()).unwrap(),
        String::from_utf8(summary_with_texts_kept(format, &path, &b)).unwrap(),
        "{name}"
    );
    let (node_id, traceback) = listed_first(&got);
    assert!(node_id.ends_with("test_big_0"), "{name}: {node_id}");
    // The group's message is its first failure's, normalised, read back with it.
    let v: serde_json::Value = serde_json::from_slice(&got).unwrap();
    let first_message = v["failures"][0]["message"].as_str().unwrap();
    assert_eq!(
        v["groups"][0]["message"].as_str().unwrap(),
        crate::group::normalize_capped(first_message, b.max_message_chars),
        "{name}"
    );
    assert!(
        traceback.contains("the first failure of 99"),
        "{name}: {traceback}"
    );
    assert_eq!(from_spans_alone(format, &path, &b), got, "{name}");
}

#[test]
fn junit_first_failures_read_from_their_spans_give_the_summary_kept_texts_give() {
    for bom in [false, true] {
        for suite in ["pytest", "tests"] {
            for retried in [false, true] {
                assert_spans_give_kept_summary(
                    Format::Junit,
                    &format!("r-{bom}-{suite}-{retried}.xml"),
                    &junit_report(bom, suite, retried),
                );
            }
        }
    }
}

#[test]
fn pytest_json_first_failures_read_from_their_spans_give_the_summary_kept_texts_give() {
    for bom in [false, true] {
        for reruns in [false, true] {
            for crash_located in [false, true] {
                assert_spans_give_kept_summary(
                    Format::PytestJson,
                    &format!("r-{bom}-{reruns}-{crash_located}.json"),
                    &pytest_json_report(bom, reruns, crash_located),
                );
            }
        }
    }
}

/// The summary of `path` when every located first failure is read from its span (the
/// test fails if one has to be read from the whole file).
fn from_spans_alone(format: Format, path: &str, budgets: &Budgets) -> Vec<u8> {
    let mut spans_read = 0;
    let (summary, missing) = summary_recovered_through(format, path, budgets, &mut |span| {
        spans_read += 1;
        let mut file = File::open(path).ok()?;
        crate::read_again(format, &mut file, path, span, budgets)
    });
    assert!(
        !missing && spans_read > 0,
        "{path}: {spans_read} spans read"
    );
    summary
}

/// Build `path` keeping spans, then recover its located first failures through `read`,
/// and any still missing from the whole file, as `summarize_files` does.
fn summary_recovered_through(
    format: Format,
    path: &str,
    budgets: &Budgets,
    read: &mut dyn FnMut(&SourceSpan) -> Option<TestRecord>,
) -> (Vec<u8>, bool) {
    let mut builder = SummaryBuilder::new(budgets);
    builder.reading_spans_of(0);
    let session = parse(format, path, budgets, &mut |item| builder.push(item));
    builder.end_file(session, 0);
    builder.recover_located(read);
    let missing = builder.missing_representatives();
    if missing {
        let mut seq = 0u64;
        parse(format, path, budgets, &mut |item| {
            builder.recover(seq, item);
            seq += 1;
        });
    }
    (builder.finish(format, &[path.to_owned()]), missing)
}

#[test]
fn a_span_that_no_longer_holds_the_same_failure_falls_back_to_the_whole_file() {
    let b = budgets();
    for (format, bytes, name) in [
        (Format::Junit, junit_report(false, "pytest", false), "f.xml"),
        (
            Format::PytestJson,
            pytest_json_report(false, false, false),
            "f.json",
        ),
    ] {
        let path = report_file(name, &bytes);
        let expected = summary_with_texts_kept(format, &path, &b);
        assert_eq!(from_spans_alone(format, &path, &b), expected, "{name}");
        // A span that cannot be read, or holds another failure (the file changed):
        // the whole file is read again, and the summary is the same.
        let unreadable = summary_recovered_through(format, &path, &b, &mut |_| None);
        assert_eq!(unreadable, (expected.clone(), true), "{name}");
        let changed = summary_recovered_through(format, &path, &b, &mut |span| {
            let mut file = File::open(&path).ok()?;
            let mut record = crate::read_again(format, &mut file, &path, span, &b)?;
            record.message = Some("ValueError: something else".into());
            Some(record)
        });
        assert_eq!(changed, (expected, true), "{name}");
    }
}

#[test]
fn first_failures_kept_without_texts_are_read_from_the_whole_file_when_spans_are_not_read() {
    // A caller that keeps spans but never calls `recover_located` still gets the summary
    // a builder that kept the texts gives: `missing_representatives` sends those first
    // failures to the whole-file pass.
    let b = budgets();
    let path = report_file("w.xml", &junit_report(true, "pytest", true));
    let mut builder = SummaryBuilder::new(&b);
    builder.reading_spans_of(0);
    parse(Format::Junit, &path, &b, &mut |item| builder.push(item));
    assert!(builder.missing_representatives());
    let mut seq = 0u64;
    parse(Format::Junit, &path, &b, &mut |item| {
        builder.recover(seq, item);
        seq += 1;
    });
    assert_eq!(
        builder.finish(Format::Junit, std::slice::from_ref(&path)),
        summary_with_texts_kept(Format::Junit, &path, &b)
    );
}
