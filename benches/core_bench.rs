//! Criterion benchmarks of report-core (no Python): the two streaming parsers alone, the
//! whole summary of a file, traceback cutting and failure grouping.
//!
//! Inputs: the generator's files when present (`REPORT_BENCH_JUNIT` /
//! `REPORT_BENCH_JSON`, else `benches/data/junit-10MB-s20240611-v1.xml` and
//! `benches/data/pytest-json-10MB-s20240611-v1.json`, which
//! `pytest-mcp-server bench reports --sizes 10MB --cache-dir benches/data` writes);
//! otherwise a small synthetic report built here, so the bench always runs.
//!
//! Run: `cargo bench -p report-core --bench core_bench` (figures in benches/RESULTS.md;
//! the throughput targets are measured end to end by `pytest-mcp-server bench reports`).
//! Compile check only: `cargo bench -p report-core --no-run`.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use report_core::{Budgets, Format, Item};

fn repo_root() -> PathBuf {
    // rust/core -> repository root
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The generator's file, or None.
fn generated(var: &str, name: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("benches/data").join(name));
    path.is_file().then_some(path)
}

const TRACEBACK: &str = "self = <tests.api.test_users.TestCreate object at 0x7f3a2b1c0d90>, client = <Client id=42>\n\n    def test_create_user(self, client):\n        user = user_factory(name=\"user-1\", active=True)\n        result = client.post(\"/api/v1/users\", json={\"user\": user.id})\n>       assert result.status_code == 201\nE       AssertionError: assert 500 == 201\nE        +  where 500 = <Response [500]>.status_code\n\ntests/api/test_users.py:42: AssertionError";

/// A small pytest-like JUnit report (used when the generator's file is absent).
fn synthetic_junit(tests: usize) -> Vec<u8> {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><testsuites name=\"pytest tests\"><testsuite name=\"pytest\" tests=\"0\">");
    let body = TRACEBACK
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    for i in 0..tests {
        let cls = format!("tests.pkg.test_mod_{}.TestCase", i / 100);
        if i % 50 == 7 {
            s.push_str(&format!(
                "<testcase classname=\"{cls}\" name=\"test_{i}[a&lt;b&amp;&quot;c&quot;]\" time=\"0.012\"><failure message=\"AssertionError: assert 500 == 201\">{body}</failure></testcase>"
            ));
        } else if i % 33 == 5 {
            s.push_str(&format!(
                "<testcase classname=\"{cls}\" name=\"test_{i}\" time=\"0.000\"><skipped type=\"pytest.skip\" message=\"needs a GPU\">/ci/tests/pkg/test_mod.py:3: needs a GPU</skipped></testcase>"
            ));
        } else {
            s.push_str(&format!(
                "<testcase classname=\"{cls}\" name=\"test_{i}\" time=\"0.003\" />"
            ));
        }
    }
    s.push_str("</testsuite></testsuites>");
    s.into_bytes()
}

/// A small pytest-json-report document (used when the generator's file is absent).
fn synthetic_json(tests: usize) -> Vec<u8> {
    let mut s = String::from("{\"created\": 1.0, \"duration\": 1.0, \"exitcode\": 1, \"root\": \"/ci\", \"environment\": {}, \"summary\": {\"total\": 0}, \"collectors\": [], \"tests\": [");
    let longrepr = serde_json_escape(TRACEBACK);
    for i in 0..tests {
        if i > 0 {
            s.push_str(", ");
        }
        let nodeid = format!("tests/pkg/test_mod_{}.py::TestCase::test_{i}", i / 100);
        if i % 50 == 7 {
            s.push_str(&format!(
                "{{\"nodeid\": \"{nodeid}\", \"lineno\": 3, \"outcome\": \"failed\", \"setup\": {{\"duration\": 0.0001, \"outcome\": \"passed\"}}, \"call\": {{\"duration\": 0.012, \"outcome\": \"failed\", \"crash\": {{\"path\": \"/ci/tests/api/test_users.py\", \"lineno\": 42, \"message\": \"AssertionError: assert 500 == 201\"}}, \"traceback\": [{{\"path\": \"tests/api/test_users.py\", \"lineno\": 42, \"message\": \"AssertionError\"}}], \"longrepr\": {longrepr}}}, \"teardown\": {{\"duration\": 0.0001, \"outcome\": \"passed\"}}}}"
            ));
        } else {
            s.push_str(&format!(
                "{{\"nodeid\": \"{nodeid}\", \"lineno\": 3, \"outcome\": \"passed\", \"setup\": {{\"duration\": 0.0001, \"outcome\": \"passed\"}}, \"call\": {{\"duration\": 0.003, \"outcome\": \"passed\"}}, \"teardown\": {{\"duration\": 0.0001, \"outcome\": \"passed\"}}}}"
            ));
        }
    }
    s.push_str("]}");
    s.into_bytes()
}

/// A report log in the server plugin's dialect: lean passing reports, one failure in 50
/// with a string longrepr.
fn synthetic_reportlog(tests: usize) -> Vec<u8> {
    let mut s = String::from(
        "{\"$report_type\": \"SessionStart\", \"pytest_version\": \"9.2.0\", \"root\": \"/ci\", \"start\": 1.0}\n",
    );
    let longrepr = serde_json_escape(TRACEBACK);
    for i in 0..tests {
        let nodeid = format!("tests/pkg/test_mod_{}.py::TestCase::test_{i}", i / 100);
        s.push_str(&format!(
            "{{\"$report_type\": \"TestStart\", \"nodeid\": \"{nodeid}\", \"start\": 2.0}}\n"
        ));
        if i % 50 == 7 {
            s.push_str(&format!(
                "{{\"$report_type\": \"TestReport\", \"nodeid\": \"{nodeid}\", \"location\": [\"tests/api/test_users.py\", 41, \"test\"], \"keywords\": {{}}, \"outcome\": \"failed\", \"longrepr\": {longrepr}, \"when\": \"call\", \"user_properties\": [], \"sections\": [], \"duration\": 0.012, \"start\": 2.0, \"stop\": 2.012}}\n"
            ));
        } else {
            s.push_str(&format!(
                "{{\"$report_type\": \"TestReport\", \"nodeid\": \"{nodeid}\", \"when\": \"call\", \"outcome\": \"passed\", \"duration\": 0.003}}\n"
            ));
        }
        s.push_str(&format!(
            "{{\"$report_type\": \"TestReport\", \"nodeid\": \"{nodeid}\", \"when\": \"teardown\", \"outcome\": \"passed\", \"duration\": 0.0001}}\n"
        ));
    }
    s.push_str("{\"$report_type\": \"SessionFinish\", \"exitstatus\": 1, \"duration\": 30.0}\n");
    s.into_bytes()
}

fn serde_json_escape(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// (label, bytes, path on disk if any) of each format's input.
fn inputs() -> Vec<(Format, String, Vec<u8>, Option<PathBuf>)> {
    let mut out = Vec::new();
    for (format, var, name) in [
        (
            Format::Junit,
            "REPORT_BENCH_JUNIT",
            "junit-10MB-s20240611-v1.xml",
        ),
        (
            Format::PytestJson,
            "REPORT_BENCH_JSON",
            "pytest-json-10MB-s20240611-v1.json",
        ),
        (
            Format::Reportlog,
            "REPORT_BENCH_REPORTLOG",
            "reportlog-synthetic-only.jsonl",
        ),
    ] {
        match generated(var, name) {
            Some(path) => {
                let bytes = std::fs::read(&path).expect("read the generated report");
                let label = path.file_name().unwrap().to_string_lossy().into_owned();
                out.push((format, label, bytes, Some(path)));
            }
            None => {
                let bytes = match format {
                    Format::Junit => synthetic_junit(20_000),
                    Format::PytestJson => synthetic_json(8_000),
                    Format::Reportlog => synthetic_reportlog(8_000),
                };
                out.push((
                    format,
                    format!("synthetic-{}", format.as_str()),
                    bytes,
                    None,
                ));
            }
        }
    }
    out
}

fn parsers(c: &mut Criterion) {
    let budgets = Budgets::default();
    for (format, label, bytes, path) in inputs() {
        let mut group = c.benchmark_group(format!("{}/{label}", format.as_str()));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.sample_size(10);
        group.bench_function("parse only (records counted)", |b| {
            b.iter(|| {
                let mut n = 0usize;
                let mut sink = |item: Item| {
                    black_box(&item);
                    n += 1;
                };
                let r = match format {
                    Format::Junit => {
                        report_core::parse_junit(&bytes[..], "bench", &budgets, &mut sink)
                    }
                    Format::PytestJson => {
                        report_core::parse_pytest_json(&bytes[..], "bench", &budgets, &mut sink)
                    }
                    Format::Reportlog => report_core::parse_reportlog(
                        &bytes[..],
                        "bench",
                        &budgets,
                        None,
                        None,
                        &mut sink,
                    )
                    .map(|_| ()),
                };
                r.expect("the bench input parses");
                n
            })
        });
        if let Some(path) = path {
            let paths = vec![path.to_string_lossy().into_owned()];
            group.bench_function("summarize_files (file, builder, JSON)", |b| {
                b.iter(|| {
                    report_core::summarize_files(
                        black_box(&paths),
                        None,
                        &budgets,
                        None,
                        None,
                        None,
                        None,
                    )
                    .expect("summarises")
                })
            });
        }
        group.finish();
    }
}

fn text(c: &mut Criterion) {
    let long: String = {
        let mut s = String::new();
        for i in 0..8 {
            s.push_str(&format!("/usr/lib/python3.11/site-packages/requests/sessions.py:{}: in request\n    resp = self.send(prep)\n_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n", 500 + i));
        }
        s.push_str(TRACEBACK);
        s
    };
    c.bench_function("cut_traceback (40 lines, 200 chars)", |b| {
        b.iter(|| report_core::cut_traceback(black_box(&long), 40, 200))
    });
    c.bench_function("group_key", |b| {
        b.iter(|| {
            report_core::group_key(
                black_box(Some("requests.exceptions.ConnectionError")),
                black_box("HTTPConnectionPool(host='10.0.0.12', port=8080): Max retries exceeded with url: /api/v1/orders/4411 (path /srv/app/x.py, id 0xdeadbeef)"),
                None,
            )
        })
    });
}

criterion_group!(benches, parsers, text);
criterion_main!(benches);
