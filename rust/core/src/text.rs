//! Shared text rules of the parsers: durations and the caps applied while streaming
//! (docs/ENGINE.md, *Durations* and *Text capping*). Mirrored by `pure/text.py`.

/// Bytes of a failure text kept at its head and at its tail.
pub const TEXT_HEAD: usize = 64 * 1024;
pub const TEXT_TAIL: usize = 64 * 1024;
/// Bytes of an attribute value (a message) kept.
pub const ATTR_CAP: usize = 64 * 1024;

/// Seconds as text -> integer microseconds; 0 for anything not a plain decimal number,
/// negative, non-finite or >= 1e9 s. `junit` applies the comma rules first.
pub fn duration_us_from_text(raw: &str, junit: bool) -> u64 {
    let s = raw.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\n' || c == '\r');
    let owned;
    let s = if junit && s.contains(',') {
        owned = if s.contains('.') {
            s.replace(',', "")
        } else {
            s.replace(',', ".")
        };
        owned.as_str()
    } else {
        s
    };
    if !is_plain_number(s.as_bytes()) {
        return 0;
    }
    match s.parse::<f64>() {
        Ok(x) => duration_us_from_f64(x),
        Err(_) => 0,
    }
}

/// A parsed number of seconds -> microseconds (same bounds as `duration_us_from_text`).
pub fn duration_us_from_f64(x: f64) -> u64 {
    // NaN and the infinities are outside the range too.
    if !(0.0..1e9).contains(&x) {
        return 0;
    }
    // `floor`, as the cast: the value is >= 0.5, where truncation is the floor (and the
    // cast is one instruction, `floor` a libm call on baseline x86_64).
    (x * 1e6 + 0.5) as u64
}

/// `^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`
fn is_plain_number(b: &[u8]) -> bool {
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if int_digits == 0 && i == frac_start {
            return false;
        }
    } else if int_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}

/// Largest index <= `i` that is a char boundary of `s`.
pub fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Smallest index >= `i` that is a char boundary of `s`.
pub fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Bytes a text's buffer starts with (a typical traceback or output tail fits).
const INITIAL_TEXT_CAPACITY: usize = 4096;

/// Text kept while streaming: the first `head` bytes and the last `tail` bytes, with the
/// number of bytes seen in total. Memory is bounded by `head + 2 * tail`.
#[derive(Debug, Clone)]
pub struct HeadTail {
    head_cap: usize,
    tail_cap: usize,
    head: String,
    tail: String,
    /// True once the text outgrew `head_cap + tail_cap` and `head` was split off.
    split: bool,
    total: u64,
}

impl HeadTail {
    pub fn new(head_cap: usize, tail_cap: usize) -> Self {
        HeadTail {
            head_cap,
            tail_cap,
            head: String::new(),
            tail: String::new(),
            split: false,
            total: 0,
        }
    }

    /// A failure text (TEXT_HEAD + TEXT_TAIL).
    pub fn for_text() -> Self {
        Self::new(TEXT_HEAD, TEXT_TAIL)
    }

    /// Captured output: only a tail of `max_output_bytes`.
    pub fn for_output(max_output_bytes: usize) -> Self {
        Self::new(0, max_output_bytes)
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Forget the text, keeping the buffers (for the next test's output).
    pub fn clear(&mut self) {
        self.head.clear();
        self.tail.clear();
        self.split = false;
        self.total = 0;
    }

    pub fn push(&mut self, mut s: &str) {
        self.total += s.len() as u64;
        if !self.split {
            // Until head+tail are full, everything fits in `head`; split later.
            let room = self.head_cap + self.tail_cap - self.head.len();
            if self.head.capacity() == 0 {
                // texts arrive in many small pieces: one allocation for the usual sizes
                self.head
                    .reserve(room.min(s.len().max(INITIAL_TEXT_CAPACITY)));
            }
            let take = floor_char_boundary(s, room.min(s.len()));
            if take == s.len() {
                self.head.push_str(s);
                return;
            }
            self.head.push_str(&s[..take]);
            s = &s[take..];
            // `head` is now (nearly) full: move its end beyond head_cap into the tail.
            let cut = floor_char_boundary(&self.head, self.head_cap);
            self.tail = self.head.split_off(cut);
            self.split = true;
        }
        self.tail.push_str(s);
        if self.tail.len() > 2 * self.tail_cap.max(4096) {
            self.trim_tail();
        }
    }

    fn trim_tail(&mut self) {
        if self.tail.len() > self.tail_cap {
            let start = ceil_char_boundary(&self.tail, self.tail.len() - self.tail_cap);
            self.tail.drain(..start);
        }
    }

    /// (kept text, bytes omitted). A text within `head + tail` comes back whole; a longer
    /// one is `head + "\n... [N bytes omitted]\n" + tail` (or only the tail when
    /// `head_cap` is 0, as for captured output).
    pub fn finish(mut self) -> (String, u64) {
        if !self.split {
            return (self.head, 0);
        }
        self.trim_tail();
        let kept = (self.head.len() + self.tail.len()) as u64;
        let omitted = self.total - kept;
        if omitted == 0 {
            self.head.push_str(&self.tail);
            return (self.head, 0);
        }
        if self.head_cap == 0 {
            return (self.tail, omitted);
        }
        let mut out = self.head;
        out.push_str(&format!("\n... [{omitted} bytes omitted]\n"));
        out.push_str(&self.tail);
        (out, omitted)
    }
}

/// What Python's `str.strip()` / `isspace()` take for whitespace: pytest's
/// `longreprtext` strips its text with it.
pub(crate) fn is_py_whitespace(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t'
            | '\n'
            | '\r'
            | '\u{0b}'
            | '\u{0c}'
            | '\u{1c}'..='\u{1f}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Python's `str.strip()`.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_the_documented_rules() {
        assert_eq!(duration_us_from_text("1.5", true), 1_500_000);
        assert_eq!(duration_us_from_text(" 0,160 ", true), 160_000);
        assert_eq!(duration_us_from_text("1,234.5", true), 1_234_500_000);
        assert_eq!(duration_us_from_text("", true), 0);
        assert_eq!(duration_us_from_text("abc", true), 0);
        assert_eq!(duration_us_from_text("inf", true), 0);
        assert_eq!(duration_us_from_text("1_000", true), 0);
        assert_eq!(duration_us_from_text("-1", true), 0);
        assert_eq!(duration_us_from_text("1e3", true), 1_000_000_000);
        assert_eq!(duration_us_from_text(".5", true), 500_000);
        assert_eq!(duration_us_from_text("5.", true), 5_000_000);
        assert_eq!(duration_us_from_text("1e9", true), 0);
        assert_eq!(duration_us_from_text("0.0000005", true), 1);
    }

    #[test]
    fn head_tail_keeps_short_text_whole_and_cuts_long_text_at_char_boundaries() {
        let mut t = HeadTail::new(4, 4);
        t.push("abc");
        t.push("def");
        assert_eq!(t.finish(), ("abcdef".to_string(), 0));

        let mut t = HeadTail::new(4, 4);
        for _ in 0..100 {
            t.push("é");
        }
        let (s, omitted) = t.finish();
        assert_eq!(s, "éé\n... [192 bytes omitted]\néé");
        assert_eq!(omitted, 192);

        let mut t = HeadTail::for_output(3);
        t.push("hello wörld");
        assert_eq!(t.finish(), ("rld".to_string(), 9));
    }
}

/// A fast, non-cryptographic hasher for the builder's in-memory tables (paths, group
/// keys): 8 bytes at a time, each word mixed in by a rotate, xor and multiply (the
/// scheme of rustc's FxHasher), the result rotated so that its high bits (hashbrown's
/// tag) and low bits (its bucket) both depend on every word. The tables hold what the
/// report says, and a report crafted to collide only makes its own summary slower,
/// never wrong.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WordHasher(u64);

impl WordHasher {
    const SEED: u64 = 0xf135_7aea_2e62_a9c5;

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl std::hash::Hasher for WordHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.add(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            // the length keeps `ab` and `ab\0` apart
            self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
}

/// The `BuildHasher` of [`WordHasher`].
pub(crate) type FastHash = std::hash::BuildHasherDefault<WordHasher>;

/// `v` in decimal, written into the end of `out` (no allocation, no `format!`: the
/// lexers and the builder write numbers once per value or per failure).
pub fn decimal(v: i64, out: &mut [u8; 24]) -> &str {
    let mut i = digits_into(v.unsigned_abs(), out);
    if v < 0 {
        i -= 1;
        out[i] = b'-';
    }
    std::str::from_utf8(&out[i..]).expect("ASCII digits")
}

/// `v` in decimal, as `decimal` writes it (a line number: every `u64`).
pub fn decimal_u64(v: u64, out: &mut [u8; 24]) -> &str {
    let i = digits_into(v, out);
    std::str::from_utf8(&out[i..]).expect("ASCII digits")
}

/// The digits of `m` written at the end of `out`; where they start.
fn digits_into(mut m: u64, out: &mut [u8; 24]) -> usize {
    let mut i = out.len();
    loop {
        i -= 1;
        out[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            return i;
        }
    }
}
