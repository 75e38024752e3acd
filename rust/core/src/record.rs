//! What a parser yields: one `TestRecord` per test, one `CollectionErrorRecord` per
//! module that failed to collect (docs/ENGINE.md, *Records*).

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    Passed,
    Skipped,
    XFailed,
    XPassed,
    Failed,
    Error,
}

impl Outcome {
    /// The pytest outcome name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Error => "error",
            Outcome::Skipped => "skipped",
            Outcome::XFailed => "xfailed",
            Outcome::XPassed => "xpassed",
        }
    }

    /// Severity for "worst wins" (docs/ENGINE.md): error > failed > xpassed > xfailed >
    /// skipped > passed. The derive order of the enum is this order.
    pub fn severity(self) -> u8 {
        self as u8
    }

    pub fn is_problem(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::Error)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Setup,
    Call,
    Teardown,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Setup => "setup",
            Phase::Call => "call",
            Phase::Teardown => "teardown",
        }
    }
}

/// One test. Failure details are only filled for `failed`/`error`.
#[derive(Clone, Debug, Default)]
pub struct TestRecord {
    pub node_id: String,
    pub outcome: Option<Outcome>,
    pub phase: Option<Phase>,
    /// Integer microseconds (docs/ENGINE.md, *Durations*).
    pub duration_us: u64,
    pub flaky: bool,
    pub exception: Option<String>,
    pub message: Option<String>,
    pub text: Option<String>,
    pub path: Option<String>,
    pub line: Option<u64>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// Captured log records of a failed/error test, one per line as pytest prints them
    /// (`LEVEL    logger:file.py:N message`), tail-capped like stdout.
    pub log: Option<String>,
    /// `Some(label)` when this record is one subtest of the test `node_id` (pytest 9's
    /// `subtests` fixture or unittest's `subTest`; docs/ENGINE.md, *Subtests*): the label
    /// as pytest prints it (`[msg] (i=1)`), `""` when the report does not say.
    pub subtest: Option<String>,
    /// pytest counted this test as passed although subtests of it failed (unittest's
    /// `subTest`: the method itself did not fail); the summary lists it as failed and
    /// counts it in `passed_with_failed_subtests` (docs/ENGINE.md, *Subtests*).
    pub passed_with_failed_subtests: bool,
    /// Bytes the parser dropped while capping `text` / the message (docs, *Text capping*).
    pub text_bytes_omitted: u64,
    /// Bytes the parser dropped from the head of stdout/stderr.
    pub output_bytes_omitted: u64,
    /// Where the failure's texts (`text`, `stdout`, `stderr`, `log`) were read from,
    /// when the parser can read them again from there alone; None otherwise.
    pub source: Option<SourceSpan>,
    /// The frames of `text` as the report's structured `longrepr` gives them, when it
    /// has one and `text` is its whole rendering (docs/ENGINE.md, *Frames as data*);
    /// None: the frames are read from `text`.
    pub frames: Option<Box<ReprFrames>>,
}

/// A failure's frames read from its structured `longrepr`, not from the text rendered
/// of it (docs/ENGINE.md, *Frames as data*): each traceback entry's file location and
/// the syntax error positions its exception lines give (`E     File "t.py", line 2`),
/// in the order the rendered text shows them, with the text's lines that separate them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReprFrames {
    /// Outermost first.
    pub frames: Vec<ReprFrame>,
    /// The lines of the text (numbered from 0) that separate entries (`_ _ _ ...`,
    /// false) and the chain lines of a chained exception's descriptions (true), in order.
    pub boundaries: Vec<(usize, bool)>,
    /// For a chained exception whose description holds a chain line: (the number of
    /// frames of its root cause, the byte offset in the text of that chain line).
    pub root: Option<(usize, usize)>,
}

/// One frame of [`ReprFrames`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReprFrame {
    /// The path as the report gives it.
    pub path: String,
    pub line: u64,
    /// The line of the text (numbered from 0) that shows it.
    pub at: usize,
    pub kind: FrameKind,
}

/// What gave a [`ReprFrame`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A short-style entry's file location: the first line of its entry.
    Header,
    /// Another entry's file location: the last line of its entry.
    Location,
    /// A syntax error's position an exception line gives.
    SyntaxPosition,
}

/// A byte range of a report file that holds one test's element (a JUnit `testcase`, a
/// pytest-json-report `tests` entry): parsed alone, in the smallest document of its
/// format around it, it gives the same failure texts again. The summary builder keeps
/// it instead of the texts of a failure it may list (docs/ENGINE.md, *The builder*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceSpan {
    /// File offsets: the element's first byte, and the byte after its last.
    pub start: u64,
    pub end: u64,
    /// JUnit: the element is in a `testsuite` named `pytest` (its subtest rules apply).
    pub in_pytest_suite: bool,
    /// The file's place in the input list (set by the builder, not the parser).
    pub file: usize,
}

impl TestRecord {
    pub fn outcome(&self) -> Outcome {
        self.outcome.unwrap_or(Outcome::Passed)
    }
}

/// A module or file that failed to collect.
#[derive(Clone, Debug, Default)]
pub struct CollectionErrorRecord {
    pub path: String,
    pub exception: Option<String>,
    pub message: Option<String>,
    pub text: Option<String>,
    pub text_bytes_omitted: u64,
}

/// What a parser hands to the summary builder.
#[derive(Clone, Debug)]
pub enum Item {
    Test(TestRecord),
    CollectionError(CollectionErrorRecord),
}
