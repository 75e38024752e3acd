//! Traceback cutting (docs/ENGINE.md, *Traceback cutting*). STUB: owner fills in.

/// (cut text, lines omitted).
pub fn cut_traceback(text: &str, max_lines: usize, max_line_chars: usize) -> (String, u64) {
    let _ = (text, max_lines, max_line_chars);
    todo!()
}
