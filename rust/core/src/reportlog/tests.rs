use super::*;

fn records(input: &str) -> Result<(Vec<Item>, ReportlogEnd), ReportError> {
    let mut items = Vec::new();
    let end = parse_reportlog(
        input.as_bytes(),
        "r.jsonl",
        &Budgets::default(),
        None,
        None,
        &mut |i| items.push(i),
    )?;
    Ok((items, end))
}

fn tests_of(items: &[Item]) -> Vec<&TestRecord> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Test(t) => Some(t),
            Item::CollectionError(_) => None,
        })
        .collect()
}

#[test]
fn nesting_limit_is_serde_jsons() {
    // The pure reader's MAX_DEPTH mirrors this: 127 levels parse, 128 do not.
    let ok = format!("{}{}", "[".repeat(127), "]".repeat(127));
    assert!(serde_json::from_str::<Value>(&ok).is_ok());
    let deep = format!("{}{}", "[".repeat(128), "]".repeat(128));
    assert!(serde_json::from_str::<Value>(&deep).is_err());
}

#[test]
fn a_test_is_emitted_at_its_teardown_with_the_phases_aggregated() {
    let input = concat!(
        r#"{"$report_type": "SessionStart", "pytest_version": "9.2.0", "root": "/r"}"#,
        "\n",
        r#"{"$report_type": "TestReport", "nodeid": "t.py::a", "when": "call", "outcome": "failed", "duration": 0.25, "longrepr": {"reprcrash": {"path": "/r/t.py", "lineno": 3, "message": "AssertionError: x\nmore"}, "reprtraceback": {"reprentries": [{"type": "ReprEntry", "data": {"lines": ["    def test_a():", ">       assert 0", "E       AssertionError: x"], "reprfuncargs": null, "reprlocals": null, "reprfileloc": {"path": "t.py", "lineno": 3, "message": "AssertionError"}, "style": "long"}}], "extraline": null, "style": "long"}, "sections": [], "chain": null}, "sections": [["Captured stdout call", "out\n"], ["Captured log call", "WARNING  x:t.py:2 w"]]}"#,
        "\n",
        r#"{"$report_type": "TestReport", "nodeid": "t.py::a", "when": "teardown", "outcome": "passed", "duration": 0.5}"#,
        "\n",
    );
    let (items, end) = records(input).unwrap();
    assert!(!end.cut_last_line && end.session_duration_us.is_none());
    let tests = tests_of(&items);
    assert_eq!(tests.len(), 1);
    let t = tests[0];
    assert_eq!(t.outcome(), Outcome::Failed);
    assert_eq!(t.phase, Some(Phase::Call));
    assert_eq!(t.duration_us, 750_000);
    assert_eq!(
        t.text.as_deref(),
        Some(
            "def test_a():\n>       assert 0\nE       AssertionError: x\n\nt.py:3: AssertionError"
        )
    );
    assert_eq!(t.message.as_deref(), Some("AssertionError: x\nmore"));
    assert_eq!((t.path.as_deref(), t.line), (Some("t.py"), Some(3)));
    assert_eq!(t.stdout.as_deref(), Some("out\n"));
    assert_eq!(t.log.as_deref(), Some("WARNING  x:t.py:2 w\n"));
}

#[test]
fn outcomes_follow_pytest_json_reports_status_rule() {
    let line = |node: &str, when: &str, outcome: &str, extra: &str| {
        format!(
            r#"{{"$report_type": "TestReport", "nodeid": "{node}", "when": "{when}", "outcome": "{outcome}"{extra}}}"#
        ) + "\n"
    };
    let mut input = String::new();
    input += &line(
        "s",
        "setup",
        "skipped",
        r#", "longrepr": ["t.py", 1, "Skipped: no"]"#,
    );
    input += &line("s", "teardown", "passed", "");
    input += &line("xf", "call", "skipped", r#", "wasxfail": "bug""#);
    input += &line("xf", "teardown", "passed", "");
    input += &line("xp", "call", "passed", r#", "wasxfail": "bug""#);
    input += &line("xp", "teardown", "passed", "");
    input += &line("e", "call", "failed", r#", "longrepr": "E boom""#);
    input += &line("e", "teardown", "failed", r#", "longrepr": "E td""#);
    let (items, _) = records(&input).unwrap();
    let got: Vec<(&str, Outcome, Option<Phase>)> = tests_of(&items)
        .iter()
        .map(|t| (t.node_id.as_str(), t.outcome(), t.phase))
        .collect();
    assert_eq!(
        got,
        vec![
            ("s", Outcome::Skipped, None),
            ("xf", Outcome::XFailed, None),
            ("xp", Outcome::XPassed, None),
            // the last non-passing status is the outcome, the first failed phase the phase
            ("e", Outcome::Error, Some(Phase::Call)),
        ]
    );
}

#[test]
fn subtests_become_subtest_records_and_a_passing_parent_fails() {
    let input = concat!(
        r#"{"$report_type": "SubTestReport", "nodeid": "t.py::T::m", "when": "call", "outcome": "passed", "_subtest.context": {"msg": null, "kwargs": {"z": "0", "a": "'x'"}}}"#,
        "\n",
        r#"{"_report_type": "SubTestReport", "nodeid": "t.py::T::m", "when": "call", "outcome": "failed", "longrepr": "E   AssertionError: 1 != 0", "_subtest.context": {"msg": "m", "kwargs": {}}}"#,
        "\n",
        r#"{"$report_type": "TestReport", "nodeid": "t.py::T::m", "when": "call", "outcome": "passed"}"#,
        "\n",
        r#"{"$report_type": "TestReport", "nodeid": "t.py::T::m", "when": "teardown", "outcome": "passed"}"#,
        "\n",
    );
    let (items, _) = records(input).unwrap();
    let tests = tests_of(&items);
    let got: Vec<(Option<&str>, Outcome, Option<&str>)> = tests
        .iter()
        .map(|t| (t.subtest.as_deref(), t.outcome(), t.message.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            // kwargs keep their order in the line
            (Some("(z=0, a='x')"), Outcome::Passed, None),
            (Some("[m]"), Outcome::Failed, None),
            (None, Outcome::Failed, Some("contains 1 failed subtest")),
        ]
    );
    assert!(tests[2].passed_with_failed_subtests);
    assert_eq!(tests[1].text.as_deref(), Some("E   AssertionError: 1 != 0"));
}

#[test]
fn a_cut_last_line_is_reported_and_a_bad_line_is_malformed() {
    let start = r#"{"$report_type": "SessionStart"}"#;
    let (_, end) = records(&format!("{start}\n{{\"$report_type\": \"TestRe")).unwrap();
    assert!(end.cut_last_line);
    let err = records(&format!("{start}\n{{\"$report_type\": \"TestRe\n")).unwrap_err();
    assert_eq!(
        (err.kind, err.position.as_deref()),
        (ErrorKind::Malformed, Some("line 2"))
    );
    let err = records(&format!("{start}\n\n[1]\n")).unwrap_err();
    assert_eq!(err.position.as_deref(), Some("line 3"));
    let err = records("{\"a\": 1}\n").unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotAReport);
}

#[test]
fn python_string_rules() {
    assert_eq!(py_strip("\u{a0} x \u{1f}\n"), "x");
    assert_eq!(py_splitlines("a\r\nb\rc\x0cd\n"), vec!["a", "b", "c", "d"]);
    assert_eq!(py_splitlines("a\n\nb"), vec!["a", "", "b"]);
    assert_eq!(py_splitlines(""), Vec::<&str>::new());
    assert_eq!(py_splitlines("x\x1fy"), vec!["x\x1fy"]);
    assert_eq!(
        sep_line("-", "Captured"),
        format!("{} Captured {}", "-".repeat(35), "-".repeat(35))
    );
}

#[test]
fn the_session_facts_come_from_the_same_pass() {
    let input = concat!(
        r#"{"$report_type": "SessionStart", "root": "/r", "stack_dump_armed": true}"#,
        "\n",
        r#"{"$report_type": "CollectionFinish", "collected": 3}"#,
        "\n",
        r#"{"$report_type": "CollectionFinish", "collected": 9}"#,
        "\n",
        r#"{"$report_type": "Deselected", "count": 2}"#,
        "\n",
        r#"{"$report_type": "TestStart", "nodeid": "t.py::a", "start": 10.5}"#,
        "\n",
        r#"{"$report_type": "TestReport", "nodeid": "t.py::a", "when": "teardown", "outcome": "passed"}"#,
        "\n",
        r#"{"$report_type": "TestStart", "nodeid": "t.py::b", "start": 11.0}"#,
        "\n",
        r#"{"$report_type": "WarningMessage", "category": null, "message": " hi\nthere", "filename": "/r/m.py", "lineno": 3}"#,
        "\n",
    );
    let (_, end) = records(input).unwrap();
    let session = end.session.expect("a report log has session facts");
    assert_eq!(session.exit_status, None);
    assert_eq!((session.collected, session.deselected), (Some(3), 2));
    assert!(session.stack_dump_armed);
    assert_eq!(
        session.running.into_iter().collect::<Vec<_>>(),
        vec![("t.py::b".to_owned(), 11.0)]
    );
    let json = serde_json::to_value(session.warnings.json(&Budgets::default())).unwrap();
    assert_eq!(json["total"], 1);
    assert_eq!(json["groups"][0]["category"], "Warning");
    assert_eq!(json["groups"][0]["message"], "hi");
    assert!(records(
        r#"{"$report_type": "TestStart", "nodeid": "t.py::a"}
"#
    )
    .is_err());
}

#[test]
fn frames_come_from_the_entries_in_the_order_the_text_shows_them() {
    // a chain: the root's short entry (location first, then the syntax error position
    // its exception line gives) and long entry (position first, location last); a
    // description holding the chain line; the final exception's long entry
    let entry = |style: &str, path: &str, lineno: i64, lines: &str| {
        format!(
            r#"{{"type": "ReprEntry", "data": {{"lines": {lines}, "reprfuncargs": null, "reprlocals": null, "reprfileloc": {{"path": "{path}", "lineno": {lineno}, "message": "in f"}}, "style": "{style}"}}}}"#
        )
    };
    let position = r#"["    import m", "E     File \"m.py\", line 2"]"#;
    let root = format!(
        r#"{{"reprentries": [{}, {}], "extraline": null, "style": "long"}}"#,
        entry("short", "t.py", 4, position),
        entry("long", "a.py", 9, position),
    );
    let last = format!(
        r#"{{"reprentries": [{}], "extraline": null, "style": "long"}}"#,
        entry("long", "b.py", -1, r#"[">   raise X", "E   X"]"#),
    );
    let report = format!(
        r#"{{"$report_type": "TestReport", "nodeid": "t.py::a", "when": "call", "outcome": "failed", "longrepr": {{"reprcrash": null, "reprtraceback": {last}, "sections": [], "chain": [[{root}, null, "The above exception was the direct cause of the following exception:"], [{last}, null, null]]}}}}"#
    );
    let teardown = r#"{"$report_type": "TestReport", "nodeid": "t.py::a", "when": "teardown", "outcome": "passed"}"#;
    let (items, _) = records(&format!("{report}\n{teardown}\n")).unwrap();
    let t = tests_of(&items)[0];
    let frames = t
        .frames
        .as_ref()
        .expect("a structured longrepr gives frames");
    let got: Vec<_> = frames
        .frames
        .iter()
        .map(|f| (f.path.as_str(), f.line, f.kind))
        .collect();
    assert_eq!(
        got,
        [
            ("t.py", 4, FrameKind::Header),
            ("m.py", 2, FrameKind::SyntaxPosition),
            ("m.py", 2, FrameKind::SyntaxPosition),
            ("a.py", 9, FrameKind::Location),
        ],
        "b.py's lineno below 0 gives no frame"
    );
    let text = t.text.as_deref().unwrap();
    let lines: Vec<&str> = text.split('\n').collect();
    // each frame is on the line of the text that shows it
    for f in &frames.frames {
        let line = lines[f.at];
        match f.kind {
            FrameKind::SyntaxPosition => {
                assert!(line.starts_with("E ") && line.ends_with(", line 2"))
            }
            _ => assert!(
                line.starts_with(&format!("{}:{}: ", f.path, f.line)),
                "{line}"
            ),
        }
    }
    // the separator between the root's entries, the chain line, the final traceback's none
    let boundaries: Vec<_> = frames
        .boundaries
        .iter()
        .map(|&(at, chain)| (lines[at], chain))
        .collect();
    assert_eq!(boundaries.len(), 2);
    assert!(boundaries[0].0.starts_with("_ _ _") && !boundaries[0].1);
    assert!(boundaries[1].0.starts_with("The above exception") && boundaries[1].1);
    let (n, at) = frames.root.unwrap();
    assert_eq!(n, 4);
    assert!(text[at..].starts_with("The above exception was the direct cause"));

    // a native-style entry holds its frames only as text
    let native = r#"{"$report_type": "TestReport", "nodeid": "t.py::b", "when": "call", "outcome": "failed", "longrepr": {"reprcrash": null, "reprtraceback": {"reprentries": [{"type": "ReprEntryNative", "data": {"lines": ["  File \"t.py\", line 3, in f\n"]}}], "extraline": null, "style": "native"}, "sections": [], "chain": null}}"#;
    let end = r#"{"$report_type": "TestReport", "nodeid": "t.py::b", "when": "teardown", "outcome": "passed"}"#;
    let (items, _) = records(&format!("{native}\n{end}\n")).unwrap();
    assert!(tests_of(&items)[0].frames.is_none());
}

/// The ids of `input`'s `CollectedIds` lines read for `request`, after `before` ids.
fn collected(input: &str, request: CollectedPage, before: &[&str]) -> CollectedFacts {
    read_collected(input, request, before).unwrap()
}

/// [`collected`], or the reader's error.
fn read_collected(
    input: &str,
    request: CollectedPage,
    before: &[&str],
) -> Result<CollectedFacts, ReportError> {
    let mut facts = CollectedFacts::new(request);
    for id in before {
        facts.add(id);
    }
    parse_reportlog(
        input.as_bytes(),
        "r.jsonl",
        &Budgets::default(),
        None,
        Some(&mut facts),
        &mut |_| {},
    )?;
    Ok(facts)
}

#[test]
fn collected_ids_give_the_asked_page_and_the_first_files_counts() {
    let input = concat!(
        r#"{"$report_type": "SessionStart"}"#,
        "\n",
        r#"{"$report_type": "CollectedIds", "nodeids": ["a.py::t1", "a.py::t2", 7, "b.py::t[x::y]"]}"#,
        "\n",
        r#"{"$report_type": "CollectedIds", "nodeids": ["c.py::t", null, "a.py::t3", "d.py"]}"#,
        "\n",
    );
    let page = |offset, limit| CollectedPage {
        offset,
        limit,
        max_files: 2,
    };
    // the page crosses a line boundary; the values that are not strings are skipped
    let facts = collected(input, page(2, 2), &[]);
    assert_eq!(facts.total, 6);
    assert_eq!(facts.page, ["b.py::t[x::y]", "c.py::t"]);
    let files: Vec<_> = facts.files.iter().map(|(p, n)| (p.as_str(), *n)).collect();
    assert_eq!(files, [("a.py", 3), ("b.py", 1)]);
    assert_eq!(facts.files_omitted(), 2); // c.py and d.py
    assert_eq!(collected(input, page(5, 10), &[]).page, ["d.py"]);
    assert!(collected(input, page(6, 10), &[]).page.is_empty());
    assert!(collected(input, page(u64::MAX, u64::MAX), &[])
        .page
        .is_empty());
    // after an earlier file's ids: the page counts them first, and so do the files
    let facts = collected(input, page(2, 2), &["z.py::a", "z.py::b"]);
    assert_eq!(
        (facts.total, facts.page.clone()),
        (8, vec!["a.py::t1".to_owned(), "a.py::t2".to_owned()])
    );
    let files: Vec<_> = facts.files.iter().map(|(p, n)| (p.as_str(), *n)).collect();
    assert_eq!(files, [("z.py", 2), ("a.py", 3)]);
    assert_eq!(facts.files_omitted(), 3);
}

#[test]
fn a_collected_ids_line_without_an_array_is_malformed_page_or_not() {
    for nodeids in ["", r#", "nodeids": null"#, r#", "nodeids": "a.py::t""#] {
        let input = format!(
            "{{\"$report_type\": \"SessionStart\"}}\n{{\"$report_type\": \"CollectedIds\"{nodeids}}}\n"
        );
        let without_page = records(&input).unwrap_err();
        let request = CollectedPage {
            offset: 0,
            limit: 10,
            max_files: 10,
        };
        let Err(with_page) = read_collected(&input, request, &[]) else {
            panic!("a CollectedIds line without an array is malformed with a page too");
        };
        for err in [without_page, with_page] {
            assert_eq!(
                (err.kind, err.position.as_deref()),
                (ErrorKind::Malformed, Some("line 2"))
            );
        }
    }
}

#[test]
fn what_the_plugin_cut_is_added_to_the_omitted_counts() {
    let input = concat!(
        r#"{"$report_type": "TestReport", "nodeid": "t.py::a", "when": "call", "outcome": "failed", "longrepr": "E   boom", "sections": [["Captured stdout call", "out\n"]], "text_bytes_cut": 900, "sections_bytes_cut": {"Captured stdout call": 70, "Captured stderr call": 5}}"#,
        "\n",
        r#"{"$report_type": "TestReport", "nodeid": "t.py::a", "when": "teardown", "outcome": "passed"}"#,
        "\n",
        r#"{"$report_type": "CollectReport", "nodeid": "u.py", "outcome": "failed", "longrepr": "E   x", "text_bytes_cut": 3}"#,
        "\n",
    );
    let (items, _) = records(input).unwrap();
    let t = tests_of(&items)[0];
    // a section that is not taken (no stderr) adds nothing
    assert_eq!((t.text_bytes_omitted, t.output_bytes_omitted), (900, 70));
    let Some(Item::CollectionError(ce)) = items.last() else {
        panic!("the collection error is the last item");
    };
    assert_eq!(ce.text_bytes_omitted, 3);
    for bad in [
        r#""text_bytes_cut": -1"#,
        r#""text_bytes_cut": 9007199254740993"#,
        r#""text_bytes_cut": 1.0"#,
        r#""sections_bytes_cut": []"#,
        r#""sections_bytes_cut": {"Captured stdout call": true}"#,
    ] {
        let line = format!(
            r#"{{"$report_type": "TestReport", "nodeid": "a", "when": "call", "outcome": "passed", {bad}}}"#
        );
        let err = records(&line).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Malformed, "{bad}");
    }
}
