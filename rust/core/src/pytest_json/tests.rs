//! Record-level tests of the pytest-json-report parser. The parity with the pure twin is
//! checked from Python (tests/engine/test_pytest_json.py) on the same inputs.

use super::*;
use crate::error::ErrorKind;

fn parse_with(
    data: &[u8],
    budgets: &Budgets,
    reader_chunk: usize,
) -> Result<Vec<Item>, ReportError> {
    struct Trickle<'d> {
        data: &'d [u8],
        chunk: usize,
    }
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.chunk.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }
    let mut items = Vec::new();
    let mut sink = |item: Item| items.push(item);
    parse_pytest_json(
        Trickle {
            data,
            chunk: reader_chunk,
        },
        "r.json",
        budgets,
        &mut sink,
    )?;
    Ok(items)
}

fn parse(data: &[u8]) -> Result<Vec<Item>, ReportError> {
    parse_with(data, &Budgets::default(), usize::MAX)
}

fn tests_of(items: &[Item]) -> Vec<&TestRecord> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Test(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn kind_of(data: &[u8]) -> ErrorKind {
    match parse(data) {
        Ok(items) => panic!(
            "expected an error for {:?}, got {} items",
            String::from_utf8_lossy(data),
            items.len()
        ),
        Err(e) => e.kind,
    }
}

/// A minimal report around `tests` (a JSON array text).
fn report(tests: &str) -> Vec<u8> {
    format!(r#"{{"exitcode": 1, "root": "/proj", "summary": {{"total": 0}}, "tests": {tests}}}"#)
        .into_bytes()
}

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpus/pytest-json-report/sample_report.json"
);

#[test]
fn sample_report_gives_the_outcomes_written_in_its_summary() {
    let Ok(data) = std::fs::read(SAMPLE) else {
        eprintln!("skipped: {SAMPLE} is not there");
        return;
    };
    let items = parse(&data).unwrap();
    let tests = tests_of(&items);
    assert_eq!(
        items.len(),
        tests.len(),
        "no collector failed in the sample"
    );
    let count = |o: Outcome| tests.iter().filter(|t| t.outcome() == o).count();
    // The sample's own "summary": passed 2, failed 3, xfailed 1, xpassed 1, error 2, skipped 1.
    assert_eq!(
        [
            count(Outcome::Passed),
            count(Outcome::Failed),
            count(Outcome::XFailed)
        ],
        [2, 3, 1]
    );
    assert_eq!(
        [
            count(Outcome::XPassed),
            count(Outcome::Error),
            count(Outcome::Skipped)
        ],
        [1, 2, 1]
    );
    let problems: Vec<(&str, Option<Phase>)> = tests
        .iter()
        .filter(|t| t.outcome().is_problem())
        .map(|t| (t.node_id.as_str(), t.phase))
        .collect();
    assert_eq!(
        problems,
        vec![
            (
                "test_create_report.py::test_fail_with_fixture",
                Some(Phase::Call)
            ),
            (
                "test_create_report.py::test_fail_during_setup",
                Some(Phase::Setup)
            ),
            (
                "test_create_report.py::test_fail_during_teardown",
                Some(Phase::Teardown)
            ),
            ("test_create_report.py::test_fail_nested", Some(Phase::Call)),
            (
                "test_create_report.py::test_parametrized[2]",
                Some(Phase::Call)
            ),
        ]
    );
    let with_fixture = tests[1];
    // Output of all three phases, in phase order; the crash path loses the root prefix.
    assert_eq!(
        with_fixture.stdout.as_deref(),
        Some("setup\ncall\nteardown\n")
    );
    assert_eq!(
        with_fixture.stderr.as_deref(),
        Some("setuperr\ncallerr\nteardownerr\n")
    );
    assert_eq!(with_fixture.path.as_deref(), Some("test_create_report.py"));
    assert_eq!(with_fixture.line, Some(32));
    assert_eq!(with_fixture.message.as_deref(), Some("assert False"));
    assert!(with_fixture
        .text
        .as_deref()
        .unwrap()
        .ends_with("test_create_report.py:32: AssertionError"));
    // 0.0001995563507080078 + 0.00015997886657714844 + 0.00015306472778320312 s,
    // each rounded to whole microseconds on its own.
    assert_eq!(with_fixture.duration_us, 200 + 160 + 153);
    // Details are only kept for failures.
    let xfailed = tests
        .iter()
        .find(|t| t.outcome() == Outcome::XFailed)
        .unwrap();
    assert!(xfailed.text.is_none() && xfailed.message.is_none());
}

#[test]
fn a_reader_giving_one_byte_at_a_time_gives_the_same_records() {
    let long = "x\\\"é😀\\u00e9\\ud83d\\ude00".repeat(20000);
    let doc = report(&format!(
        r#"[{{"nodeid": "t.py::a\u00e9", "outcome": "failed", "call": {{"duration": 1.5e-3, "outcome": "failed",
            "longrepr": "{long}", "stdout": "{long}", "crash": {{"path": "/proj/t.py", "lineno": 7, "message": "{long}"}}}}}}]"#
    ));
    let whole = parse(&doc).unwrap();
    for chunk in [1, 2, 3, 7, 4096] {
        let trickled = parse_with(&doc, &Budgets::default(), chunk).unwrap();
        let (a, b) = (tests_of(&whole)[0], tests_of(&trickled)[0]);
        assert_eq!(
            (&a.node_id, &a.text, &a.stdout, &a.message),
            (&b.node_id, &b.text, &b.stdout, &b.message)
        );
        assert_eq!(
            (a.duration_us, a.text_bytes_omitted, a.output_bytes_omitted),
            (b.duration_us, b.text_bytes_omitted, b.output_bytes_omitted)
        );
    }
    let t = tests_of(&whole)[0];
    assert_eq!(t.node_id, "t.py::aé");
    assert_eq!(t.duration_us, 1500);
    assert_eq!(t.path.as_deref(), Some("t.py"));
    let unit = "x\\\"é😀é😀".replace("\\\"", "\""); // the decoded repeat unit
    let full_len = unit.len() * 20000;
    let text = t.text.as_deref().unwrap();
    let marker_at = text.find("\n... [").expect("a long text is cut");
    let n: u64 = text[marker_at + 6..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let marker = format!("\n... [{n} bytes omitted]\n");
    assert_eq!(text.len() - marker.len() + n as usize, full_len);
    assert!(marker_at <= 64 * 1024 && marker_at > 64 * 1024 - 4);
    let message_kept = t.message.as_deref().unwrap().len();
    assert!(message_kept <= ATTR_CAP && message_kept > ATTR_CAP - 4);
    assert_eq!(t.text_bytes_omitted, n + (full_len - message_kept) as u64);
    let out = t.stdout.as_deref().unwrap();
    assert!(
        out.len() <= 2048 && out.len() > 2044 && unit.repeat(3).ends_with(&out[out.len() - 20..])
    );
    assert_eq!(t.output_bytes_omitted, (full_len - out.len()) as u64);
}

#[test]
fn malformed_json_is_malformed() {
    let cases: &[&[u8]] = &[
        br#"{"exitcode": 0, "summary": {}, "tests": [1, 2,]}"#,
        br#"{"exitcode": 0, "summary": {},}"#,
        br#"{"exitcode": NaN, "summary": {}}"#,
        br#"{"exitcode": 0, "summary": {"a": Infinity}}"#,
        b"{'exitcode': 0, 'summary': {}}",
        br#"{"exitcode": 0, "summary": {}"#,
        br#"{"exitcode": 0, "summary": {"a": "abc"#,
        b"{\"exitcode\": 0, \"summary\": {\"a\": \"\xff\"}}",
        b"{\"exitcode\": 0, \"summary\": {\"a\": \"\xc0\xaf\"}}",
        b"{\"exitcode\": 0, \"summary\": {\"a\": \"\xed\xa0\x80\"}}",
        br#"{"exitcode": 0, "summary": {"a": "\ud800"}}"#,
        br#"{"exitcode": 0, "summary": {"a": "\udc00"}}"#,
        br#"{"exitcode": 0, "summary": {"a": "\ud800\ud800"}}"#,
        br#"{"exitcode": 0, "summary": {"a": "\ud800\u0041"}}"#,
        br#"{"exitcode": 0, "summary": {}} x"#,
        br#"{"exitcode": 0, "summary": {}} {}"#,
        b"{\"exitcode\": 0, \"summary\": {\"a\": \"a\x01b\"}}",
        b"{\"exitcode\": 0, \"summary\": {\"a\": \"a\tb\"}}",
        br#"{"exitcode": 0, "summary": {"a": "\x"}}"#,
        br#"{"exitcode": 01, "summary": {}}"#,
        br#"{"exitcode": -, "summary": {}}"#,
        br#"{"exitcode": 1., "summary": {}}"#,
        br#"{"exitcode": 1e, "summary": {}}"#,
        br#"{"exitcode": +1, "summary": {}}"#,
        br#"{"exitcode": .5, "summary": {}}"#,
        br#"{"exitcode": 0x10, "summary": {}}"#,
        br#"{"exitcode": 0, "summary": {"a": tru}}"#,
        b"{\"exitcode\": 0, \"summary\": {}}\x00",
        b"{\"exitcode\": 0, \"summary\": {}}\x0c",
        b"{\"exitcode\": 0,\x0c\"summary\": {}}",
        br#"{"exitcode": 0, "summary": {} /* c */}"#,
        br#"{"exitcode": 0, "summary": {"a": 1e400}}"#,
        br#"{"exitcode": 0, "summary": {"a": -1e400}}"#,
        br#"{"exitcode": 0, "summary": {"a": 9223372036854775808}}"#,
        br#"{"exitcode": 0, "summary": {"a": -9223372036854775808}}"#,
        br#"{"exitcode": 0, "summary": {"a": "\u00E"}}"#,
        br#"{"exitcode": 0, "summary": {1: 2}}"#,
        br#"{"exitcode": 0, "summary": {"a" 1}}"#,
        br#"{"exitcode": 0, "summary": {"a": [1 2]}}"#,
        br#"{"exitcode": 0, "summary": {"a": [}]}}"#,
    ];
    for case in cases {
        assert_eq!(
            kind_of(case),
            ErrorKind::Malformed,
            "{:?}",
            String::from_utf8_lossy(case)
        );
    }
}

#[test]
fn valid_json_edge_cases_are_accepted() {
    let cases: &[&[u8]] = &[
        br#"{"exitcode": 0, "summary": {"a": 1e-400, "b": -0, "c": 9223372036854775807, "d": -9223372036854775807}}"#,
        br#"{"exitcode": 0, "summary": {"a": "\ud83d\ude00\u0000\/\b\f\n\r\t\"\\", "": [[], {}, true, false, null]}}"#,
        b"\xef\xbb\xbf {\"exitcode\": 0, \"summary\": {\"a\": \"\x7f\"}} \r\n\t",
        br#"{"exitcode": 0, "summary": {"a": 1.7976931348623157e308, "b": 123456789012345678901234567890.5}}"#,
    ];
    for case in cases {
        assert!(parse(case).is_ok(), "{:?}", String::from_utf8_lossy(case));
    }
}

#[test]
fn nesting_is_limited_to_max_depth() {
    // The root object is level 1: MAX_DEPTH - 1 more levels are fine, one more is not.
    let nested = |levels: usize| {
        let mut s = b"{\"exitcode\": 0, \"summary\": {}, \"x\": ".to_vec();
        s.extend(std::iter::repeat_n(b'[', levels));
        s.extend(std::iter::repeat_n(b']', levels));
        s.push(b'}');
        s
    };
    assert!(parse(&nested(lexer::MAX_DEPTH - 1)).is_ok());
    assert_eq!(kind_of(&nested(lexer::MAX_DEPTH)), ErrorKind::Malformed);
}

#[test]
fn documents_without_the_report_keys_are_not_reports() {
    let cases: &[&[u8]] = &[
        b"",
        b"  \n",
        b"[]",
        b"\"x\"",
        br#"{}"#,
        br#"{"summary": {}}"#,
        br#"{"exitcode": 0}"#,
        // A structural error in a document that is no report: still not a report.
        br#"{"stats": {}, "tests": [{"title": "x"}]}"#,
        br#"{"tests": 5, "summary": "text"}"#,
        // Go's test2json: one object per line. The first object is no report.
        b"{\"Action\": \"start\"}\n{\"Action\": \"pass\"}\n",
    ];
    for case in cases {
        assert_eq!(
            kind_of(case),
            ErrorKind::NotAReport,
            "{:?}",
            String::from_utf8_lossy(case)
        );
    }
}

#[test]
fn structural_errors_in_a_report_are_malformed() {
    let cases = [
        report("{}"),
        report("[5]"),
        report(r#"[{"outcome": "passed"}]"#),
        report(r#"[{"nodeid": "a"}]"#),
        report(r#"[{"nodeid": 5, "outcome": "passed"}]"#),
        report(r#"[{"nodeid": "a", "outcome": "weird"}]"#),
        report(r#"[{"nodeid": "a", "outcome": "passed", "call": null}]"#),
        report(r#"[{"nodeid": "a", "outcome": "passed", "call": {"outcome": "passed"}}]"#),
        report(
            r#"[{"nodeid": "a", "outcome": "passed", "call": {"duration": "1", "outcome": "passed"}}]"#,
        ),
        report(
            r#"[{"nodeid": "a", "outcome": "failed", "call": {"duration": 1, "outcome": "failed", "crash": {"lineno": 1.0}}}]"#,
        ),
        report(
            r#"[{"nodeid": "a", "outcome": "failed", "call": {"duration": 1, "outcome": "failed", "longrepr": ["x"]}}]"#,
        ),
        report(r#"[{"nodeid": "a", "nodeid": "b", "outcome": "passed"}]"#),
        br#"{"exitcode": 0, "exitcode": 0, "summary": {}}"#.to_vec(),
        br#"{"exitcode": "0", "summary": {}}"#.to_vec(),
        br#"{"exitcode": 0.5, "summary": {}}"#.to_vec(),
        br#"{"exitcode": 0, "summary": []}"#.to_vec(),
        br#"{"exitcode": 0, "summary": {}, "root": 1}"#.to_vec(),
        br#"{"exitcode": 0, "summary": {}, "collectors": [{"nodeid": "x"}]}"#.to_vec(),
        // The report keys after the broken part still make it a report.
        br#"{"tests": [{"nodeid": 1}], "exitcode": 0, "summary": {}}"#.to_vec(),
    ];
    for case in &cases {
        assert_eq!(
            kind_of(case),
            ErrorKind::Malformed,
            "{}",
            String::from_utf8_lossy(case)
        );
    }
}

#[test]
fn summary_only_and_omitted_sections_are_fine() {
    let items =
        parse(br#"{"created": 1.5, "exitcode": 0, "root": "/x", "environment": {}, "summary": {"collected": 0}}"#)
            .unwrap();
    assert!(items.is_empty());
    // Unknown keys at every level, in any order, are ignored.
    let items = parse(&report(
        r#"[{"keywords": ["a"], "outcome": "passed", "metadata": {"k": [1, {"x": null}]}, "nodeid": "a",
            "setup": {"outcome": "passed", "duration": 0, "log": [{"msg": "m"}]}}]"#,
    ))
    .unwrap();
    assert_eq!(tests_of(&items)[0].outcome(), Outcome::Passed);
}

#[test]
fn failed_collectors_are_collection_errors() {
    let doc = br#"{"exitcode": 2, "summary": {}, "collectors": [
        {"nodeid": "", "outcome": "passed", "result": []},
        {"nodeid": "tests/test_bad.py", "outcome": "failed", "result": [], "longrepr": "ImportError while importing test module"}],
        "tests": []}"#;
    let items = parse(doc).unwrap();
    assert_eq!(items.len(), 1);
    let Item::CollectionError(c) = &items[0] else {
        panic!("a collection error")
    };
    assert_eq!(c.path, "tests/test_bad.py");
    assert_eq!(
        c.text.as_deref(),
        Some("ImportError while importing test module")
    );
}

#[test]
fn rerun_entries_merge_with_the_next_entry_of_the_same_node_id() {
    let phase = |d: f64, o: &str| format!(r#"{{"duration": {d}, "outcome": "{o}"}}"#);
    let doc = report(&format!(
        r#"[{{"nodeid": "a", "outcome": "rerun", "call": {}}},
            {{"nodeid": "a", "outcome": "passed", "call": {}}},
            {{"nodeid": "b", "outcome": "rerun", "call": {}}},
            {{"nodeid": "b", "outcome": "rerun", "call": {}}},
            {{"nodeid": "b", "outcome": "failed", "call": {}}},
            {{"nodeid": "c", "outcome": "rerun", "call": {}}},
            {{"nodeid": "d", "outcome": "passed", "call": {}}},
            {{"nodeid": "d", "outcome": "passed", "call": {}}},
            {{"nodeid": "e", "outcome": "rerun", "call": {}}}]"#,
        phase(1.0, "failed"),
        phase(2.0, "passed"),
        phase(1.0, "failed"),
        phase(1.0, "failed"),
        phase(1.0, "failed"),
        phase(0.5, "passed"),
        phase(1.0, "passed"),
        phase(1.0, "passed"),
        phase(0.25, "passed"),
    ));
    let items = parse(&doc).unwrap();
    let got: Vec<(&str, Outcome, bool, u64)> = tests_of(&items)
        .iter()
        .map(|t| (t.node_id.as_str(), t.outcome(), t.flaky, t.duration_us))
        .collect();
    assert_eq!(
        got,
        vec![
            ("a", Outcome::Passed, true, 3_000_000),
            ("b", Outcome::Failed, false, 3_000_000),
            // A lone rerun entry: pytest-json-report's own shape for "passed on a rerun".
            ("c", Outcome::Passed, true, 500_000),
            // Only rerun entries merge: two plain entries stay two tests.
            ("d", Outcome::Passed, false, 1_000_000),
            ("d", Outcome::Passed, false, 1_000_000),
            ("e", Outcome::Passed, true, 250_000),
        ]
    );
}

#[test]
fn the_first_failed_phase_gives_the_details_and_output_joins_in_phase_order() {
    // Phases written out of order: teardown first. Setup passed, call and teardown failed.
    let doc = report(
        r#"[{"nodeid": "t.py::x", "outcome": "error",
            "teardown": {"duration": 0.5, "outcome": "failed", "longrepr": "TD", "stdout": "3",
                         "crash": {"path": "/proj/t.py", "lineno": 9, "message": "td"}},
            "setup": {"duration": 0.25, "outcome": "passed", "stdout": "1"},
            "call": {"duration": 0.125, "outcome": "failed", "longrepr": "CALL", "stdout": "2",
                     "crash": {"path": "/elsewhere/t.py", "lineno": -1, "message": "boom"}}}]"#,
    );
    let items = parse(&doc).unwrap();
    let t = tests_of(&items)[0];
    assert_eq!(t.phase, Some(Phase::Call));
    assert_eq!(t.text.as_deref(), Some("CALL"));
    assert_eq!(t.message.as_deref(), Some("boom"));
    assert_eq!(t.path.as_deref(), Some("/elsewhere/t.py"));
    assert_eq!(t.line, None);
    assert_eq!(t.stdout.as_deref(), Some("123"));
    assert_eq!(t.stderr, None);
    assert_eq!(t.duration_us, 875_000);
}

#[test]
fn captured_output_keeps_the_tail_of_all_phases_together() {
    let doc = report(
        r#"[{"nodeid": "x", "outcome": "failed",
            "setup": {"duration": 0, "outcome": "passed", "stdout": "aaaé"},
            "call": {"duration": 0, "outcome": "failed", "stdout": "bbb"}}]"#,
    );
    let budgets = Budgets {
        max_output_bytes: 4,
        ..Budgets::default()
    };
    let items = parse_with(&doc, &budgets, usize::MAX).unwrap();
    let t = tests_of(&items)[0];
    // "aaaébbb" (8 bytes): the last 4 start inside 'é', so the cut moves on to "bbb".
    assert_eq!(t.stdout.as_deref(), Some("bbb"));
    assert_eq!(t.output_bytes_omitted, 5);
}

#[test]
fn durations_follow_the_documented_rules() {
    let doc = report(
        r#"[{"nodeid": "a", "outcome": "passed", "setup": {"duration": -1, "outcome": "passed"},
             "call": {"duration": 1e9, "outcome": "passed"}, "teardown": {"duration": 0.0000005, "outcome": "passed"}},
            {"nodeid": "b", "outcome": "passed", "call": {"duration": 2, "outcome": "passed"},
             "teardown": {"duration": 1e-400, "outcome": "passed"}}]"#,
    );
    let items = parse(&doc).unwrap();
    let d: Vec<u64> = tests_of(&items).iter().map(|t| t.duration_us).collect();
    assert_eq!(d, vec![1, 2_000_000]);
}

#[test]
fn root_prefix_is_stripped_with_either_separator() {
    assert_eq!(strip_root("/proj/a/t.py", Some("/proj")), "a/t.py");
    assert_eq!(strip_root("/project/t.py", Some("/proj")), "/project/t.py");
    assert_eq!(strip_root("C:\\proj\\t.py", Some("C:\\proj")), "t.py");
    assert_eq!(strip_root("/t.py", Some("/")), "t.py");
    assert_eq!(strip_root("t.py", None), "t.py");
    assert_eq!(strip_root("/proj", Some("/proj")), "/proj");
}

#[test]
fn long_numbers_convert_like_a_correctly_rounded_parse_of_their_whole_text() {
    // Past FAST_NUMBER_BYTES the lexer keeps at most 800 significant digits and a
    // sticky digit; the double must still equal the correctly rounded value.
    let halfway = format!("9007199254740993{}", "0".repeat(900)); // 2^53 + 1, then zeros
    let above_halfway = format!("{halfway}1");
    let cases = [
        format!("0.{}1", "0".repeat(300)),
        format!("1{}e-300", "0".repeat(250)),
        format!("{}e-883", halfway),
        format!("{}e-884", above_halfway),
        format!("-{}.5e-995", "1".repeat(1000)),
        format!("1.{}", "9".repeat(2000)),
        format!("0.{}e{}", "0".repeat(5000), "0".repeat(50) + "5"),
        format!("1e-{}", "0".repeat(60) + "9"),
        "123456789012345678".to_string(),
        "-922337203685477580.5".to_string(),
    ];
    for text in &cases {
        let doc = format!("{text},");
        let mut lx = lexer::Lexer::new(doc.as_bytes());
        let n = lx
            .number()
            .unwrap_or_else(|e| panic!("{}...: {e:?}", &text[..text.len().min(40)]));
        let expected: f64 = text.parse().unwrap();
        assert_eq!(
            n.value.to_bits(),
            expected.to_bits(),
            "{}...",
            &text[..text.len().min(40)]
        );
        assert_eq!(lx.offset(), text.len() as u64);
    }
    for text in [
        format!("1{}", "0".repeat(19)),
        format!("1{}e400", "0".repeat(50)),
        "1e99999999999999999999999".to_string(),
    ] {
        let doc = format!("{text},");
        assert!(
            lexer::Lexer::new(doc.as_bytes()).number().is_err(),
            "{text}"
        );
    }
}

#[test]
fn structural_errors_name_the_element_of_the_array() {
    // The element's index, not the index of the key among the known ones.
    let message = |data: &[u8]| parse(data).expect_err("an error").message;
    let tests = message(&report(r#"[{"nodeid": "a", "outcome": "weird"}]"#));
    assert!(
        tests.starts_with("tests[0].outcome must be one of"),
        "{tests}"
    );
    let collectors = message(
        br#"{"exitcode": 0, "summary": {}, "collectors": [{"nodeid": "a", "outcome": "passed"},
            {"nodeid": "b", "outcome": "failed", "longrepr": 5}]}"#,
    );
    assert!(
        collectors.starts_with("collectors[1].longrepr must be a string"),
        "{collectors}"
    );
}
