//! Project code (docs/ENGINE.md, *Project code*): which frame paths are the project's
//! own code (and which of them test code), and how a path is shown. Mirrored by
//! `pure/project.py`; `tests/engine/test_rules_parity.py` checks both classify alike.

use std::collections::HashSet;

/// What a frame path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeKind {
    /// The standard library, third-party packages, pytest, `<frozen ...>`.
    Library,
    /// The project's own code, not test code.
    Project,
    /// The project's test code (`test_*.py`, `*_test.py`, `conftest.py`, `tests/`).
    Test,
}

/// Install directories, and the placeholder a path inside one is shown with.
const PACKAGE_DIRS: [(&str, &str); 2] = [
    ("/site-packages/", "<site-packages>/"),
    ("/dist-packages/", "<dist-packages>/"),
];

const LIBRARY_MARKERS: [&str; 5] = [
    "/site-packages/",
    "/dist-packages/",
    "/_pytest/",
    "/pluggy/",
    "/lib/python3.",
];

/// Library code when no project is given: the path with `\` read as `/` and a `/` put
/// in front contains one of [`LIBRARY_MARKERS`], or the path starts with `<frozen `.
pub fn is_library_path(path: &str) -> bool {
    if path.starts_with("<frozen ") {
        return true;
    }
    let p = slashed(path);
    LIBRARY_MARKERS.iter().any(|m| p.contains(m))
}

/// `/` + the path with `\` read as `/`.
fn slashed(path: &str) -> String {
    let mut p = String::with_capacity(path.len() + 1);
    p.push('/');
    p.extend(path.chars().map(|c| if c == '\\' { '/' } else { c }));
    p
}

/// An absolute `/`-separated path with `.`, `..` and empty parts resolved (`..` at the
/// top stays at the top); None for a relative path. Absolute: starts with `/` or a
/// drive `X:/`.
fn lexical(path: &str) -> Option<String> {
    let b = path.as_bytes();
    let (prefix, rest) = if b.first() == Some(&b'/') {
        ("/", &path[1..])
    } else if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/' {
        (&path[..3], &path[3..])
    } else {
        return None;
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    Some(format!("{prefix}{}", parts.join("/")))
}

/// For a `/`-separated path: (byte index in `p` where the part after the last
/// `/site-packages/` or `/dist-packages/` starts, the placeholder), searching `"/" + p`.
fn package_dir_rest(p: &str) -> Option<(usize, &'static str)> {
    let slashed = format!("/{p}");
    let mut best: Option<(usize, &'static str)> = None;
    for (marker, placeholder) in PACKAGE_DIRS {
        if let Some(at) = slashed.rfind(marker) {
            let rest = at + marker.len() - 1;
            let better = match best {
                None => true,
                Some((b, _)) => rest > b,
            };
            if better {
                best = Some((rest, placeholder));
            }
        }
    }
    best
}

/// For a `/`-separated path: the index in `p` where the part after the standard
/// library's directory starts, after the last `/lib/pythonX.Y/` (or `lib64`; `X.Yt` for a
/// free-threaded build) or `/Lib/` (Windows) of `"/" + p`; None when there is none.
fn stdlib_rest(p: &str) -> Option<usize> {
    let slashed = format!("/{p}");
    slashed
        .match_indices('/')
        .rev()
        .find_map(|(at, _)| stdlib_dir_end(&slashed, at))
        .map(|end| end - 1)
}

/// The index after the ASCII digits of `s` from `start`.
fn digits_end(s: &[u8], mut start: usize) -> usize {
    while start < s.len() && s[start].is_ascii_digit() {
        start += 1;
    }
    start
}

/// When a standard library directory ([`stdlib_rest`]) starts at `s[at]` (a `/`), the
/// index after its closing `/`; else None.
fn stdlib_dir_end(s: &str, at: usize) -> Option<usize> {
    let rest = &s[at..];
    if rest.starts_with("/Lib/") {
        return Some(at + 5);
    }
    let head = ["/lib/python", "/lib64/python"]
        .into_iter()
        .find(|head| rest.starts_with(head))?;
    let b = s.as_bytes();
    let major = at + head.len();
    let dot = digits_end(b, major);
    if dot == major || b.get(dot) != Some(&b'.') {
        return None;
    }
    let mut minor_end = digits_end(b, dot + 1);
    if minor_end == dot + 1 {
        return None;
    }
    if b.get(minor_end) == Some(&b't') {
        minor_end += 1;
    }
    (b.get(minor_end) == Some(&b'/')).then_some(minor_end + 1)
}

/// For an absolute `/`-separated path with more than its last three components (a
/// drive alone does not count): the index where those three start; else None.
fn last_three_start(p: &str) -> Option<usize> {
    let b = p.as_bytes();
    let drive = b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/';
    if !(p.starts_with('/') || drive) {
        return None;
    }
    let mut cut = p.len();
    for _ in 0..3 {
        cut = p[..cut].rfind('/')?;
        if cut == 0 {
            return None;
        }
    }
    let before = &p[..cut];
    if before.len() == 2 && before.as_bytes()[1] == b':' {
        return None;
    }
    Some(cut + 1)
}

/// Test code: a basename `test_*.py`, `*_test.py` or `conftest.py`, or a directory part
/// `tests`/`test`.
fn is_test_file(relative: &str) -> bool {
    let mut parts: Vec<&str> = relative.split('/').collect();
    let name = parts.pop().unwrap_or("");
    (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || name == "conftest.py"
        || parts.iter().any(|p| *p == "tests" || *p == "test")
}

fn kind_of(relative: &str) -> CodeKind {
    if is_test_file(relative) {
        CodeKind::Test
    } else {
        CodeKind::Project
    }
}

/// The part of `absolute` below `root` (`""` for the root itself), else None.
fn under_root<'a>(absolute: &'a str, root: &str) -> Option<&'a str> {
    if root.is_empty() {
        return None;
    }
    if absolute == root {
        return Some("");
    }
    if root.ends_with('/') {
        absolute.strip_prefix(root)
    } else {
        absolute.strip_prefix(root)?.strip_prefix('/')
    }
}

/// The project whose code the answer is about: its root directory (absolute) and the
/// top-level import names it installs (packages or single modules).
#[derive(Clone, Debug, Default)]
pub struct ProjectCode {
    /// The root with `\` read as `/`, resolved lexically; empty when it is not absolute
    /// (then no absolute path is under it).
    root: String,
    packages: HashSet<String>,
}

impl ProjectCode {
    /// A project from its root and top-level import names.
    pub fn new(root: &str, packages: &[String]) -> Self {
        ProjectCode {
            root: lexical(&root.replace('\\', "/")).unwrap_or_default(),
            packages: packages.iter().cloned().collect(),
        }
    }
}

/// What a frame path is (docs/ENGINE.md, *Project code*). Without `project`: library by
/// [`is_library_path`], else the project's code.
pub fn classify(path: &str, project: Option<&ProjectCode>) -> CodeKind {
    let p = path.replace('\\', "/");
    let Some(project) = project else {
        if is_library_path(path) {
            return CodeKind::Library;
        }
        return kind_of(&p);
    };
    if path.starts_with('<') {
        return CodeKind::Library;
    }
    if let Some((start, _)) = package_dir_rest(&p) {
        let rest = &p[start..];
        let first = rest.split('/').next().unwrap_or("");
        let name = first.strip_suffix(".py").unwrap_or(first);
        if !project.packages.contains(name) {
            return CodeKind::Library;
        }
        return kind_of(rest);
    }
    let absolute = match lexical(&p) {
        Some(a) => a,
        None if project.root.is_empty() => return kind_of(&p),
        None => lexical(&format!("{}/{p}", project.root)).expect("the root is absolute"),
    };
    match under_root(&absolute, &project.root) {
        Some(below) => kind_of(below),
        None => CodeKind::Library,
    }
}

/// How a frame path is shown (docs/ENGINE.md, *Project code*, shown paths): with a
/// project, a path inside an install directory becomes `<site-packages>/` (or
/// `<dist-packages>/`) + the part after it; a path below the root (`root/` starting it; a
/// root of `/` alone excepted) the part after `root/`, as pytest writes the project's
/// files; a path in the standard library's directory `<stdlib>/` + the part after it;
/// any other absolute path `.../` + its last three components, so that no answer spells
/// out the machine's directories. Relative paths, pseudo-paths (`<frozen os>`) and every
/// path without a project are unchanged. Owned exactly when the path is shown otherwise
/// (callers rewrite a line only then).
pub fn display_path<'a>(path: &'a str, project: Option<&ProjectCode>) -> std::borrow::Cow<'a, str> {
    let Some(project) = project else {
        return path.into();
    };
    let p = path.replace('\\', "/");
    if let Some((start, placeholder)) = package_dir_rest(&p) {
        return format!("{placeholder}{}", &path[start..]).into();
    }
    let root = project.root.as_str();
    if !root.is_empty()
        && !root.ends_with('/')
        && p.len() > root.len() + 1
        && p.starts_with(root)
        && p.as_bytes()[root.len()] == b'/'
    {
        return path[root.len() + 1..].to_owned().into();
    }
    if let Some(start) = stdlib_rest(&p).filter(|&start| start < p.len()) {
        return format!("<stdlib>/{}", &path[start..]).into();
    }
    if let Some(start) = last_three_start(&p) {
        return format!(".../{}", &path[start..]).into();
    }
    path.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> ProjectCode {
        ProjectCode::new("/work/app", &["mypkg".to_owned(), "single".to_owned()])
    }

    #[test]
    fn a_path_below_the_root_is_shown_relative_to_it() {
        let p = Some(project());
        let shown = |path: &str| display_path(path, p.as_ref()).into_owned();
        assert_eq!(shown("/work/app/tests/test_x.py"), "tests/test_x.py");
        assert_eq!(shown("\\work\\app\\pkg\\m.py"), "pkg\\m.py");
        // a sibling that shares the root's name as a prefix, the root itself, elsewhere
        assert_eq!(shown("/work/appx/a.py"), "/work/appx/a.py");
        assert_eq!(shown("/work/app"), "/work/app");
        assert_eq!(shown("/work/app/"), "/work/app/");
        assert_eq!(shown("/usr/lib/python3.11/ast.py"), "<stdlib>/ast.py");
        assert_eq!(
            shown("/opt/py/lib64/python3.13t/re/_parser.py"),
            "<stdlib>/re/_parser.py"
        );
        assert_eq!(shown("C:\\Py\\Lib\\re\\x.py"), "<stdlib>/re\\x.py");
        // elsewhere: the last three components, the machine's directories left out
        assert_eq!(shown("/home/u/other/proj/x/y.py"), ".../proj/x/y.py");
        assert_eq!(shown("/a/b/c.py"), "/a/b/c.py");
        assert_eq!(shown("C:/a/b/c.py"), "C:/a/b/c.py");
        assert_eq!(shown("<frozen os>"), "<frozen os>");
        assert_eq!(shown("rel/a/b/c/d.py"), "rel/a/b/c/d.py");
        assert_eq!(
            shown("/work/app/.venv/lib/python3.11/site-packages/mypkg/core.py"),
            "<site-packages>/mypkg/core.py"
        );
        assert_eq!(display_path("/work/app/a.py", None), "/work/app/a.py");
    }

    #[test]
    fn frames_of_the_project_wherever_installed() {
        let p = Some(project());
        let p = p.as_ref();
        let cases = [
            (
                "/venv/lib/python3.11/site-packages/mypkg/core.py",
                CodeKind::Project,
            ),
            (
                "../venv/lib/python3.11/site-packages/single.py",
                CodeKind::Project,
            ),
            (
                "/venv/lib/python3.11/site-packages/mypkg/tests/test_a.py",
                CodeKind::Test,
            ),
            (
                "/venv/lib/python3.11/site-packages/requests/api.py",
                CodeKind::Library,
            ),
            (
                "/usr/lib/python3/dist-packages/mypkg/x.py",
                CodeKind::Project,
            ),
            ("/usr/lib/python3.11/random.py", CodeKind::Library),
            ("<frozen _collections_abc>", CodeKind::Library),
            ("src/mypkg/core.py", CodeKind::Project),
            ("tests/test_core.py", CodeKind::Test),
            ("conftest.py", CodeKind::Test),
            ("/work/app/src/mypkg/core.py", CodeKind::Project),
            ("/work/app/../app/lib_test.py", CodeKind::Test),
            ("/work/application/x.py", CodeKind::Library),
            ("../../elsewhere/x.py", CodeKind::Library),
            ("C:\\work\\app\\x.py", CodeKind::Library),
        ];
        for (path, kind) in cases {
            assert_eq!(classify(path, p), kind, "{path}");
        }
        assert_eq!(
            classify("/usr/lib/python3.11/random.py", None),
            CodeKind::Library
        );
        assert_eq!(classify("/work/app/tests/x.py", None), CodeKind::Test);
        assert_eq!(classify("/work/app/x.py", None), CodeKind::Project);
    }

    #[test]
    fn install_directories_are_shown_short() {
        let p = project();
        assert_eq!(
            display_path("/v/lib/python3.11/site-packages/mypkg/a.py", Some(&p)),
            "<site-packages>/mypkg/a.py"
        );
        assert_eq!(
            display_path("C:\\v\\Lib\\site-packages\\mypkg\\a.py", Some(&p)),
            "<site-packages>/mypkg\\a.py"
        );
        assert_eq!(display_path("src/a.py", Some(&p)), "src/a.py");
        assert_eq!(
            display_path("/v/site-packages/x.py", None),
            "/v/site-packages/x.py"
        );
    }
}
