//! pytest's captured-output sections in `system-out`/`system-err` (docs/ENGINE.md, *Logs*).
//!
//! With `junit_logging`, pytest writes each captured stream as a header line (` Captured
//! Log `, ` Captured Out ` or ` Captured Err ` centred in 80 `-`), the text and a line
//! break. `Sections` routes the text of one element, as it streams in, to the stream its
//! section names (log records to `Log`); text before any header goes to the element's own
//! stream. Once a header was seen in the element, the line break before a header or the
//! element's end is pytest's and is dropped. A candidate header line is held only up to
//! `MAX_HEADER` bytes, so memory stays constant. The pure twin is `_Sections` in
//! `src/pytest_mcp_server/engine/pure/junit/sections.py`.

/// Where a piece of text goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
    Log,
}

/// A line longer than this is never a header.
const MAX_HEADER: usize = 256;

/// The stream a header line names: `-`s, ` Captured Log|Out|Err `, `-`s.
fn header_stream(line: &str) -> Option<Stream> {
    if !line.starts_with('-') || !line.ends_with('-') {
        return None;
    }
    match line.trim_matches('-') {
        " Captured Log " => Some(Stream::Log),
        " Captured Out " => Some(Stream::Out),
        " Captured Err " => Some(Stream::Err),
        _ => None,
    }
}

/// The splitter of one `system-out`/`system-err` element at a time.
#[derive(Debug)]
pub struct Sections {
    target: Stream,
    in_section: bool,
    line_start: bool,
    holding: bool,
    candidate: String,
    newline_held: bool,
}

impl Default for Sections {
    fn default() -> Self {
        Sections {
            target: Stream::Out,
            in_section: false,
            line_start: true,
            holding: false,
            candidate: String::new(),
            newline_held: false,
        }
    }
}

impl Sections {
    /// An element whose own stream is `own` starts.
    pub fn begin(&mut self, own: Stream) {
        self.target = own;
        self.in_section = false;
        self.line_start = true;
        self.holding = false;
        self.candidate.clear();
        self.newline_held = false;
    }

    /// Text of the element, in document order.
    pub fn push(&mut self, s: &str, out: &mut dyn FnMut(Stream, &str)) {
        // One searcher for the run: building one per piece of text cost more than the search.
        static HEADER_START: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\n-"));
        // Pieces are often a character or a few (between character references): those
        // are looked at directly, not through a searcher's set-up.
        let no_line_starts_with_dash = if s.len() < 32 {
            !s.as_bytes().windows(2).any(|w| w == b"\n-")
        } else {
            HEADER_START.find(s.as_bytes()).is_none()
        };
        if !self.holding && no_line_starts_with_dash && !(self.line_start && s.starts_with('-')) {
            // no header can start in `s`: the same result as line by line, at once
            self.plain(s, out);
            return;
        }
        let mut rest = s;
        while !rest.is_empty() {
            match rest.find('\n') {
                Some(i) => {
                    self.piece(&rest[..i], true, out);
                    rest = &rest[i + 1..];
                }
                None => {
                    self.piece(rest, false, out);
                    rest = "";
                }
            }
        }
    }

    /// Text with no header line in it.
    fn plain(&mut self, s: &str, out: &mut dyn FnMut(Stream, &str)) {
        if s.is_empty() {
            return;
        }
        if !self.in_section {
            out(self.target, s);
            self.line_start = s.ends_with('\n');
            return;
        }
        let body = s.strip_suffix('\n').unwrap_or(s);
        self.text(body, out);
        if body.len() < s.len() {
            self.line_end(out);
        } else {
            self.line_start = false;
        }
    }

    /// The element ends.
    pub fn end(&mut self, out: &mut dyn FnMut(Stream, &str)) {
        if self.holding {
            self.holding = false;
            let held = std::mem::take(&mut self.candidate);
            if header_stream(&held).is_none() {
                self.text(&held, out);
            }
        }
        // pytest's last line break
        self.newline_held = false;
    }

    /// A piece of one line (`nl`: the line ends after it).
    fn piece(&mut self, piece: &str, nl: bool, out: &mut dyn FnMut(Stream, &str)) {
        if piece.is_empty() && !nl {
            return;
        }
        if !self.holding && self.line_start && piece.starts_with('-') {
            self.holding = true;
            self.candidate.clear();
        }
        if self.holding {
            if self.candidate.len() + piece.len() <= MAX_HEADER {
                self.candidate.push_str(piece);
                if !nl {
                    self.line_start = false;
                    return;
                }
                self.holding = false;
                let line = std::mem::take(&mut self.candidate);
                if let Some(stream) = header_stream(&line) {
                    // the line break before a header is pytest's
                    self.newline_held = false;
                    self.target = stream;
                    self.in_section = true;
                    self.line_start = true;
                } else {
                    self.text(&line, out);
                    self.line_end(out);
                }
                self.candidate = line;
                self.candidate.clear();
                return;
            }
            // too long for a header: what was held is ordinary text
            self.holding = false;
            let held = std::mem::take(&mut self.candidate);
            self.text(&held, out);
            self.candidate = held;
            self.candidate.clear();
        }
        self.text(piece, out);
        if nl {
            self.line_end(out);
        } else {
            self.line_start = false;
        }
    }

    fn text(&mut self, s: &str, out: &mut dyn FnMut(Stream, &str)) {
        if s.is_empty() {
            return;
        }
        if self.newline_held {
            self.newline_held = false;
            out(self.target, "\n");
        }
        out(self.target, s);
    }

    /// A line break: held back inside a section (it may be pytest's), else written.
    fn line_end(&mut self, out: &mut dyn FnMut(Stream, &str)) {
        if self.newline_held {
            out(self.target, "\n");
        }
        if self.in_section {
            self.newline_held = true;
        } else {
            self.newline_held = false;
            out(self.target, "\n");
        }
        self.line_start = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(parts: &[&str], own: Stream) -> (String, String, String) {
        let mut s = Sections::default();
        let (mut o, mut e, mut l) = (String::new(), String::new(), String::new());
        s.begin(own);
        let mut out = |stream: Stream, t: &str| match stream {
            Stream::Out => o.push_str(t),
            Stream::Err => e.push_str(t),
            Stream::Log => l.push_str(t),
        };
        for p in parts {
            s.push(p, &mut out);
        }
        s.end(&mut out);
        (o, e, l)
    }

    #[test]
    fn pytests_sections_go_to_their_streams_without_headers() {
        let log = format!("{:-^80}", " Captured Log ");
        let cap_out = format!("{:-^80}", " Captured Out ");
        let text = format!(
            "{log}\nWARNING  a:t.py:47 retry\nERROR    a:t.py:48 abort\n{cap_out}\nprinted\n\n"
        );
        let expected = (
            "printed\n".to_string(),
            String::new(),
            "WARNING  a:t.py:47 retry\nERROR    a:t.py:48 abort".to_string(),
        );
        assert_eq!(split(&[&text], Stream::Out), expected);
        // the same, streamed in pieces that cut the header lines anywhere
        let pieces: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(split(&refs, Stream::Out), expected);
        // an empty section gives nothing
        assert_eq!(
            split(&[&format!("{cap_out}\n\n")], Stream::Out),
            (String::new(), String::new(), String::new())
        );
    }

    #[test]
    fn text_without_headers_is_kept_as_is() {
        let dashes = "-".repeat(300);
        let text = format!("plain\n--- not a header ---\n{dashes}\n");
        assert_eq!(
            split(&[&text], Stream::Err),
            (String::new(), text.clone(), String::new())
        );
    }
}
