//! Record-level tests of the native JUnit parser (the end-to-end parity tests are in
//! `tests/engine/test_junit_corpus.py`).

use super::*;
use crate::error::ErrorKind;
use crate::record::{Item, Outcome, Phase};

fn parse(xml: &[u8]) -> Result<Vec<Item>, ReportError> {
    let mut items = Vec::new();
    parse_junit(xml, "t.xml", &Budgets::default(), &mut |item| {
        items.push(item)
    })?;
    Ok(items)
}

fn tests(xml: &str) -> Vec<TestRecord> {
    parse(xml.as_bytes())
        .unwrap()
        .into_iter()
        .filter_map(|i| match i {
            Item::Test(t) => Some(t),
            Item::CollectionError(_) => None,
        })
        .collect()
}

fn kind(xml: &[u8]) -> Option<ErrorKind> {
    parse(xml).err().map(|e| e.kind)
}

#[test]
fn outcomes_follow_worst_wins_and_pytest_markers() {
    let t = tests(
        r#"<testsuites><testsuite name="pytest">
        <testcase classname="tests.test_a" name="ok" time="0.5"/>
        <testcase classname="tests.test_a" name="skip"><skipped type="pytest.skip" message="no"/></testcase>
        <testcase classname="tests.test_a" name="xf"><skipped type="pytest.xfail" message="bug"/></testcase>
        <testcase classname="tests.test_a" name="xp"><skipped message="xfail-marked test passes unexpectedly"/></testcase>
        <testcase classname="tests.test_a.TestK" name="f"><skipped/><failure message="boom" type="AssertionError">long
text</failure><error message="failed on teardown with &quot;x&quot;">td</error></testcase>
        <testcase classname="tests.test_a" name="setup"><error message="failed on setup with &quot;E&quot;"/></testcase>
        </testsuite></testsuites>"#,
    );
    let got: Vec<(&str, Outcome, Option<Phase>)> = t
        .iter()
        .map(|r| (r.node_id.as_str(), r.outcome(), r.phase))
        .collect();
    assert_eq!(
        got,
        vec![
            ("tests/test_a.py::ok", Outcome::Passed, None),
            ("tests/test_a.py::skip", Outcome::Skipped, None),
            ("tests/test_a.py::xf", Outcome::XFailed, None),
            ("tests/test_a.py::xp", Outcome::XPassed, None),
            (
                "tests/test_a.py::TestK::f",
                Outcome::Error,
                Some(Phase::Teardown)
            ),
            ("tests/test_a.py::setup", Outcome::Error, Some(Phase::Setup)),
        ]
    );
    assert_eq!(t[0].duration_us, 500_000);
    assert_eq!(t[4].text.as_deref(), Some("td"));
    assert_eq!(
        t[4].message.as_deref(),
        Some("x"),
        "pytest's phase wrapper is removed"
    );
    assert_eq!(t[4].exception, None);
    assert_eq!(t[1].message, None, "details only for failed/error");
}

#[test]
fn node_id_rules() {
    assert_eq!(
        node_id("tests.test_x.TestA", "t[1]", "tests/test_x.py", false),
        "tests/test_x.py::TestA::t[1]"
    );
    assert_eq!(
        node_id("tests.test_x", "t", "./tests/test_x.py", false),
        "tests/test_x.py::t"
    );
    assert_eq!(
        node_id("pkg.test_x", "t", "src\\pkg\\test_x.py", false),
        "pkg.test_x::t"
    );
    assert_eq!(
        node_id("tests.sub.test_x.TestA.TestB", "t", "", true),
        "tests/sub/test_x.py::TestA::TestB::t"
    );
    assert_eq!(node_id("TestA", "t", "", true), "TestA::t");
    assert_eq!(
        node_id("com.example.FooTest", "t", "", false),
        "com.example.FooTest::t"
    );
    assert_eq!(node_id("", "t", "", false), "t");
    assert_eq!(
        collection_error_path("", "tests.test_x", "", true),
        "tests/test_x.py"
    );
    assert_eq!(
        collection_error_path("", "tests.test_x", "", false),
        "tests.test_x"
    );
    assert_eq!(
        collection_error_path("tests.test_x", "TestA", "", true),
        "tests/test_x.py::TestA"
    );
}

#[test]
fn collection_errors_and_retries() {
    let items = parse(
        br#"<testsuite name="pytest">
        <testcase classname="t.test_a" name="x"><failure message="1"/></testcase>
        <testcase classname="t.test_a" name="x" time="1"><failure message="2"/></testcase>
        <testcase classname="t.test_a" name="x" time="2"/>
        <testcase classname="" name="t.test_b"><error message="collection failure">ImportError: nope</error></testcase>
        <testcase classname="t.test_a" name="x"/>
        </testsuite>"#,
    )
    .unwrap();
    assert_eq!(items.len(), 3);
    match &items[0] {
        Item::Test(t) => {
            assert_eq!(t.node_id, "t/test_a.py::x");
            assert_eq!(t.outcome(), Outcome::Passed);
            assert!(t.flaky);
            assert_eq!(t.duration_us, 3_000_000);
            assert_eq!(t.message, None);
        }
        other => panic!("{other:?}"),
    }
    match &items[1] {
        Item::CollectionError(c) => {
            assert_eq!(c.path, "t/test_b.py");
            assert_eq!(c.text.as_deref(), Some("ImportError: nope"));
            assert_eq!(c.message, None, "pytest's marker is not a message");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&items[2], Item::Test(t) if !t.flaky));
}

#[test]
fn surefire_flaky_and_rerun_elements() {
    let t = tests(
        r#"<testsuite name="s">
        <testcase classname="a.B" name="flaky"><flakyFailure message="m"/><system-out>x</system-out></testcase>
        <testcase classname="a.B" name="rerun"><failure message="f"/><rerunFailure message="r"/></testcase>
        </testsuite>"#,
    );
    assert_eq!((t[0].outcome(), t[0].flaky), (Outcome::Passed, true));
    assert_eq!((t[1].outcome(), t[1].flaky), (Outcome::Failed, false));
    assert_eq!(t[1].node_id, "a.B::rerun");
}

#[test]
fn text_entities_cdata_and_line_endings() {
    let t = tests(
        "<testsuite><testcase name=\"n\" file=\"./x.py\" line=\"12\">\r\n<failure message=\"a\tb\r\nc&#10;d\" type=\"\">\
         one\r\ntwo\rthree &lt;&amp;&#x41;&#66;<![CDATA[ <raw>\r\n]]]]><nested>in</nested></failure>\
         <system-out>o1\r\n</system-out><system-err>e</system-err><system-out>o2</system-out></testcase></testsuite>",
    );
    let r = &t[0];
    assert_eq!(r.outcome(), Outcome::Failed);
    assert_eq!(r.message.as_deref(), Some("a b c\nd"));
    assert_eq!(r.exception, None);
    assert_eq!(r.text.as_deref(), Some("one\ntwo\nthree <&AB <raw>\n]]in"));
    assert_eq!(r.stdout.as_deref(), Some("o1\no2"));
    assert_eq!(r.stderr.as_deref(), Some("e"));
    assert_eq!((r.path.as_deref(), r.line), (Some("x.py"), Some(12)));
}

#[test]
fn huge_text_is_capped_while_streaming() {
    let mut xml = b"<testsuite><testcase name=\"big\"><failure>".to_vec();
    xml.extend(std::iter::repeat_n(b'a', 3_000_000));
    xml.extend_from_slice(b"</failure><system-out>");
    xml.extend(std::iter::repeat_n(b'o', 1_000_000));
    xml.extend_from_slice(b"</system-out></testcase></testsuite>");
    let t = tests(std::str::from_utf8(&xml).unwrap());
    let text = t[0].text.as_deref().unwrap();
    let omitted = 3_000_000 - 128 * 1024;
    assert!(text.contains(&format!("\n... [{omitted} bytes omitted]\n")));
    assert_eq!(t[0].text_bytes_omitted, omitted as u64);
    assert_eq!(t[0].stdout.as_deref().unwrap().len(), 2048);
    assert_eq!(t[0].output_bytes_omitted, 1_000_000 - 2048);
}

#[test]
fn refusals_have_the_documented_kinds() {
    use ErrorKind::*;
    let cases: &[(&[u8], Option<ErrorKind>)] = &[
        (b"<testsuites/>", None),
        (
            b"<?xml version=\"1.0\"?>\n<!-- c --><?pi x?><testsuites/>\n<!-- end -->\n",
            None,
        ),
        (
            b"<!DOCTYPE testsuites [<!ENTITY a \"b\">]><testsuites/>",
            Some(Forbidden),
        ),
        (b"<!DOCTYPE>", Some(Forbidden)),
        (b"<!ENTITY % p \"x\">", Some(Forbidden)),
        (b"<testsuites><!DOCTYPE x></testsuites>", Some(Forbidden)),
        (b"<testsuites/><!DOCTYPE x>", Some(Forbidden)),
        (b"<!-- -- --><!DOCTYPE x>", Some(Malformed)),
        (b"<test-run/>", Some(NotAReport)),
        (b"<assemblies><assembly/></assemblies>", Some(NotAReport)),
        (b"<testsuites>", Some(Malformed)),
        (b"<testsuites></testsuite>", Some(Malformed)),
        (b"<testsuites/>x", Some(Malformed)),
        (b"<testsuites/><testsuites/>", Some(Malformed)),
        (b"<testsuites a='1' a='2'/>", Some(Malformed)),
        (b"<testsuites a=1/>", Some(Malformed)),
        (b"<testsuites a='1'b='2'/>", Some(Malformed)),
        (b"<testsuites>&nbsp;</testsuites>", Some(Malformed)),
        (b"<testsuites>&#0;</testsuites>", Some(Malformed)),
        (b"<testsuites>&#xD800;</testsuites>", Some(Malformed)),
        (b"<testsuites>]]></testsuites>", Some(Malformed)),
        (b"<testsuites>\x01</testsuites>", Some(Malformed)),
        (b"<testsuites>\xff</testsuites>", Some(Malformed)),
        (b"<testsuites>\xef\xbf\xbe</testsuites>", Some(Malformed)),
        (b"<testsuites><!-- a -- b --></testsuites>", Some(Malformed)),
        (b"<testsuites><?xml x?></testsuites>", Some(Malformed)),
        (b"<testsuites a='<'/>", Some(Malformed)),
        (
            b"<?xml version=\"1.0\" encoding=\"EBCDIC\"?><testsuites/>",
            Some(UnsupportedEncoding),
        ),
        (
            b"<?xml version=\"1.0\" encoding=\"us-ascii\"?><testsuites>\xc3\xa9</testsuites>",
            Some(Malformed),
        ),
        (
            b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><testsuites name='\xe9'/>",
            None,
        ),
    ];
    for (xml, want) in cases {
        assert_eq!(kind(xml), *want, "{}", String::from_utf8_lossy(xml));
    }
}

#[test]
fn a_start_tag_may_have_at_most_max_attributes() {
    use super::lexer::MAX_ATTRIBUTES;
    let tag = |n: usize, root: &str| {
        let attrs: String = (0..n).map(|i| format!(" a{i}=\"v\"")).collect();
        format!("<testsuite><testcase name='t'{attrs}/><{root}/></testsuite>")
    };
    // At the limit (the testcase's own `name` counts too): a passing test.
    let t = tests(&tag(MAX_ATTRIBUTES - 1, "x"));
    assert_eq!(t.len(), 1);
    // One more: malformed, at the first attribute too many, naming the element.
    let err = parse(tag(MAX_ATTRIBUTES, "x").as_bytes()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed);
    assert!(
        err.message
            .contains("<testcase> has more than 1024 attributes"),
        "{}",
        err.message
    );
    assert!(
        err.position.as_deref().unwrap_or("").starts_with("byte "),
        "{:?}",
        err.position
    );
    // Checked while reading the tag, so before the root element's name.
    let attrs = |n: usize| (0..n).map(|i| format!(" a{i}='v'")).collect::<String>();
    assert_eq!(
        kind(format!("<html{}/>", attrs(MAX_ATTRIBUTES + 1)).as_bytes()),
        Some(ErrorKind::Malformed)
    );
    assert_eq!(
        kind(format!("<html{}/>", attrs(MAX_ATTRIBUTES)).as_bytes()),
        Some(ErrorKind::NotAReport)
    );
}

#[test]
fn chunk_boundaries_do_not_change_the_result() {
    // A reader that returns one byte at a time exercises every refill path.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() || out.is_empty() {
                return Ok(0);
            }
            out[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }
    let xml = "<testsuite name=\"pytest\"><testcase classname=\"a.test_b\" name=\"é\r\n\" time=\"1,5\">\
               <failure message=\"m&amp;\r\nn\">x\r\ny]]]&gt;<![CDATA[c\rd]]></failure><system-out>o\r</system-out>\
               </testcase><!-- c-c --><?p q?></testsuite>";
    let direct = tests(xml);
    let mut trickled = Vec::new();
    parse_junit(
        Trickle(xml.as_bytes()),
        "t.xml",
        &Budgets::default(),
        &mut |i| trickled.push(i),
    )
    .unwrap();
    let Item::Test(t) = &trickled[0] else {
        panic!()
    };
    assert_eq!(format!("{:?}", t), format!("{:?}", direct[0]));
    assert_eq!(t.node_id, "a/test_b.py::é ");
    assert_eq!(t.text.as_deref(), Some("x\ny]]]>c\nd"));
    assert_eq!(t.message.as_deref(), Some("m& n"));
    assert_eq!(t.stdout.as_deref(), Some("o\n"));
    assert_eq!(t.duration_us, 1_500_000);
}

#[test]
fn refills_at_every_kind_of_place_give_the_same_records() {
    // A document of a few MB with every construct, read with several read sizes, so that
    // buffer refills (which move the buffer) fall inside names, whitespace, attribute
    // values, references, CRLFs, comments, CDATA and end tags.
    let mut doc =
        String::from("<?xml version=\"1.0\"?>\r\n<testsuites>\r\n<testsuite name=\"pytest\">\n");
    for i in 0..12_000 {
        doc.push_str(&format!(
            "  <testcase \t classname=\"pkg.test_m{m}.TestC\"\r\n   name=\"t_{i}[&quot;é{i}&quot;]\"  time = '0.{i}' >\
             <!-- c{i} --><?pi {i}?>{res}<system-out>o{i}\r\nline &amp; <![CDATA[raw <{i}>\r\n]]></system-out>\
             </testcase\n>\r\n",
            m = i % 7,
            res = if i % 3 == 0 {
                format!("<failure message=\"m{i}\r\n&#10;x\">t{i}\r\n]]&gt;</failure>")
            } else {
                String::new()
            },
        ));
    }
    doc.push_str("</testsuite></testsuites>\n");
    struct Sizes<'a> {
        data: &'a [u8],
        sizes: &'a [usize],
        turn: usize,
    }
    impl Read for Sizes<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.sizes[self.turn % self.sizes.len()]
                .min(out.len())
                .min(self.data.len());
            self.turn += 1;
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }
    let render = |sizes: &[usize]| {
        let mut out = Vec::new();
        let reader = Sizes {
            data: doc.as_bytes(),
            sizes,
            turn: 0,
        };
        parse_junit(reader, "t.xml", &Budgets::default(), &mut |i| {
            out.push(format!("{i:?}"))
        })
        .unwrap();
        out
    };
    let reference = render(&[usize::MAX]);
    assert_eq!(reference.len(), 12_000);
    assert!(reference[0].contains("pkg/test_m0.py::TestC::t_0[\\\"é0\\\"]"));
    assert!(reference[0].contains("text: Some(\"t0\\n]]>\")"));
    assert!(reference[0].contains("stdout: Some(\"o0\\nline & raw <0>\\n\")"));
    for sizes in [
        &[1usize, 7, 4093][..],
        &[65_537, 3],
        &[131_071],
        &[262_143, 5, 11],
    ] {
        assert_eq!(render(sizes), reference, "read sizes {sizes:?}");
    }
}

#[test]
fn fast_time_parsing_equals_the_documented_rule() {
    // Deterministic pseudo-random decimals of every shape the fast path takes, and
    // the shapes it hands to the general rule.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    #[rustfmt::skip]
    let mut samples: Vec<String> = [
        "0", "0.0", "5.", ".5", "007.250", "0.0000005", "0.0000004999", "999999999.999999", "1000000000", "1,5",
        "1,234.5", " 1.5 ", "1e3", "-1", "+2.5", "", ".", "abc", "123456789012345", "1234567890123456", "0.1234567",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for _ in 0..20_000 {
        let int_digits = (next() % 10) as usize;
        let frac_digits = (next() % 10) as usize;
        let mut s = String::new();
        for _ in 0..int_digits {
            s.push(char::from(b'0' + (next() % 10) as u8));
        }
        if next() % 4 != 0 {
            s.push('.');
        }
        for _ in 0..frac_digits {
            s.push(char::from(b'0' + (next() % 10) as u8));
        }
        samples.push(s);
    }
    for s in &samples {
        assert_eq!(duration_us_fast(s), duration_us_from_text(s, true), "{s:?}");
    }
}
