//! `ReportError`: why a file could not be summarised (docs/ENGINE.md, *Errors*).

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    NotFound,
    Unreadable,
    NotAReport,
    Malformed,
    Forbidden,
    UnsupportedEncoding,
    MixedFormats,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::Unreadable => "unreadable",
            ErrorKind::NotAReport => "not_a_report",
            ErrorKind::Malformed => "malformed",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::UnsupportedEncoding => "unsupported_encoding",
            ErrorKind::MixedFormats => "mixed_formats",
        }
    }
}

/// An error with the file it concerns and, when known, the position where reading
/// stopped (`"line 3, column 7"` or `"byte 1042"`).
#[derive(Clone, Debug)]
pub struct ReportError {
    pub kind: ErrorKind,
    pub path: String,
    pub message: String,
    pub position: Option<String>,
}

impl ReportError {
    pub fn new(kind: ErrorKind, path: &str, message: impl Into<String>) -> Self {
        ReportError {
            kind,
            path: path.to_string(),
            message: message.into(),
            position: None,
        }
    }

    pub fn at(mut self, position: impl Into<String>) -> Self {
        self.position = Some(position.into());
        self
    }

    pub fn from_io(path: &str, err: &std::io::Error) -> Self {
        let kind = if err.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::NotFound
        } else {
            ErrorKind::Unreadable
        };
        let what = if kind == ErrorKind::NotFound {
            "no such file; check the path".to_string()
        } else {
            format!("cannot read the file ({err}); check that it is a readable regular file")
        };
        ReportError::new(kind, path, what)
    }
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.position {
            Some(p) => write!(f, "{} ({}): {}", self.path, p, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

impl std::error::Error for ReportError {}
