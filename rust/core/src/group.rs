//! Failure groups (docs/ENGINE.md, *Groups*): the key normaliser and the group id.
//! Mirrored exactly by `normalize_message`/`group_key` in `pure/group.py`.
//!
//! The normaliser grammar (rules 1-7, `<str>` ... `<n>`) is written once, in
//! docs/ENGINE.md, *Groups*; the scanner below implements it by hand, byte by byte.

/// FNV-1a 64 offset basis and prime (docs/ENGINE.md, *Groups*).
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Id of the group that collects failures past the tracked-groups limit.
pub const OTHER_GROUP_ID: &str = "gother";

// Character classes as bit flags of one table lookup (the hot loop classifies every byte).
const WORD: u8 = 1;
const HEX: u8 = 2;
const PATH: u8 = 4; // P ∪ S
const SEPARATOR: u8 = 8;
const DIGIT: u8 = 16;
const PREFIX: u8 = 32;
const QUOTE: u8 = 64;

const fn class_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let mut flags = 0;
        if c.is_ascii_alphanumeric() || c == b'_' {
            flags |= WORD | PATH;
        }
        if c.is_ascii_hexdigit() {
            flags |= HEX;
        }
        if matches!(c, b'.' | b'~' | b'+' | b'@' | b'%' | b'-') {
            flags |= PATH;
        }
        if c == b'/' || c == b'\\' {
            flags |= PATH | SEPARATOR;
        }
        if c.is_ascii_digit() {
            flags |= DIGIT;
        }
        if matches!(c, b'b' | b'B' | b'r' | b'R' | b'u' | b'U' | b'f' | b'F') {
            flags |= PREFIX;
        }
        if c == b'\'' || c == b'"' {
            flags |= QUOTE;
        }
        t[b] = flags;
        b += 1;
    }
    t
}

static CLASS: [u8; 256] = class_table();

#[inline(always)]
fn has(b: u8, flag: u8) -> bool {
    CLASS[b as usize] & flag != 0
}

#[inline(always)]
fn is_word(b: u8) -> bool {
    has(b, WORD)
}

#[inline(always)]
fn is_hex(b: u8) -> bool {
    has(b, HEX)
}

#[inline(always)]
fn is_path_char(b: u8) -> bool {
    has(b, PATH)
}

#[inline(always)]
fn is_separator(b: u8) -> bool {
    has(b, SEPARATOR)
}

#[inline(always)]
fn is_string_prefix(b: u8) -> bool {
    has(b, PREFIX)
}

/// True when some rule may match at `i` (the preconditions of the grammar's rules);
/// elsewhere the byte is copied.
#[inline(always)]
fn may_start_token(s: &[u8], i: usize) -> bool {
    let c = CLASS[s[i] as usize];
    if c & (QUOTE | DIGIT) != 0 {
        return true;
    }
    let prev = if i > 0 { CLASS[s[i - 1] as usize] } else { 0 };
    s[i] == b'<' || (c & PATH != 0 && prev & PATH == 0) || (c & WORD != 0 && prev & WORD == 0)
}

/// A dotted name `[A-Za-z_][A-Za-z0-9_.]*` starting at `i`: its end.
fn match_name(s: &[u8], i: usize) -> Option<usize> {
    if !(s[i].is_ascii_alphabetic() || s[i] == b'_') {
        return None;
    }
    let mut j = i + 1;
    while j < s.len() && (is_word(s[j]) || s[j] == b'.') {
        j += 1;
    }
    Some(j)
}

/// `<obj>`: `<` + a letter or `_`, up to the next `>` with no `<` or newline between.
fn match_object(s: &[u8], i: usize) -> Option<usize> {
    if !s
        .get(i + 1)
        .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
    {
        return None;
    }
    let close = memchr::memchr3(b'>', b'<', b'\n', &s[i + 1..])?;
    (s[i + 1 + close] == b'>').then_some(i + 2 + close)
}

/// `Name(...)`: a dotted name, `(`, no parenthesis or newline, `)`: (end of the name,
/// end of the match).
fn match_call(s: &[u8], i: usize) -> Option<(usize, usize)> {
    let name_end = match_name(s, i)?;
    if s.get(name_end) != Some(&b'(') {
        return None;
    }
    let close = memchr::memchr3(b')', b'(', b'\n', &s[name_end + 1..])?;
    (s[name_end + 1 + close] == b')').then_some((name_end, name_end + 2 + close))
}

/// `True`/`False` as a whole word.
fn match_bool(s: &[u8], i: usize) -> Option<usize> {
    let word = [&b"True"[..], &b"False"[..]]
        .into_iter()
        .find(|w| s[i..].starts_with(w))?;
    let end = i + word.len();
    (end == s.len() || !is_word(s[end])).then_some(end)
}

/// What the scan writes for a match.
enum Emit {
    /// A placeholder.
    Text(&'static [u8]),
    /// The matched bytes themselves (a quoted identifier).
    Keep,
    /// The name (up to this index) then `(...)`.
    Call(usize),
}

/// End of the closed string opening at `i` (index after the closing quote), if any, and
/// whether it holds an identifier (`[A-Za-z_][A-Za-z0-9_.]*`, kept as is).
fn match_string(s: &[u8], i: usize) -> Option<(usize, bool)> {
    let quote = s[i];
    let word_before = |j: usize| j > 0 && is_word(s[j - 1]);
    // Opens at a word start, or after a one- or two-letter string prefix (`b'..'`,
    // `rb"..."`) that itself starts a word.
    let opens = !word_before(i)
        || (1..=2).any(|k| {
            i >= k && s[i - k..i].iter().all(|&b| is_string_prefix(b)) && !word_before(i - k)
        });
    if !opens {
        return None;
    }
    let close = memchr::memchr2(quote, b'\n', &s[i + 1..])?;
    if s[i + 1 + close] != quote {
        return None;
    }
    let end = i + 2 + close;
    let identifier = match_name(s, i + 1) == Some(end - 1) && close > 0;
    Some((end, identifier))
}

/// End of the path run starting at `i`, when it qualifies as a path.
fn match_path(s: &[u8], i: usize) -> Option<usize> {
    let mut end = i;
    let mut parts = 0;
    let mut in_part = false;
    let mut has_separator = false;
    while end < s.len() && is_path_char(s[end]) {
        if is_separator(s[end]) {
            has_separator = true;
            in_part = false;
        } else if !in_part {
            in_part = true;
            parts += 1;
        }
        end += 1;
    }
    (has_separator && parts >= 2).then_some(end)
}

fn match_uuid(s: &[u8], i: usize) -> Option<usize> {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let mut j = i;
    for (n, len) in GROUPS.iter().enumerate() {
        if n > 0 {
            if s.get(j) != Some(&b'-') {
                return None;
            }
            j += 1;
        }
        if j + len > s.len() || !s[j..j + len].iter().all(|&b| is_hex(b)) {
            return None;
        }
        j += len;
    }
    if j < s.len() && is_word(s[j]) {
        return None;
    }
    Some(j)
}

fn match_0x(s: &[u8], i: usize) -> Option<usize> {
    if s[i] == b'0'
        && matches!(s.get(i + 1), Some(b'x' | b'X'))
        && s.get(i + 2).is_some_and(|&b| is_hex(b))
    {
        let mut j = i + 2;
        while j < s.len() && is_hex(s[j]) {
            j += 1;
        }
        return Some(j);
    }
    None
}

fn match_bare_hex(s: &[u8], i: usize) -> Option<usize> {
    let (mut digit, mut letter) = (false, false);
    let mut j = i;
    while j < s.len() && is_word(s[j]) {
        match s[j] {
            b'0'..=b'9' => digit = true,
            b'a'..=b'f' | b'A'..=b'F' => letter = true,
            _ => return None,
        }
        j += 1;
    }
    (j - i >= 8 && digit && letter).then_some(j)
}

fn digit_run(s: &[u8], mut j: usize) -> usize {
    while j < s.len() && s[j].is_ascii_digit() {
        j += 1;
    }
    j
}

fn match_ipv4(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    for octet in 0..4 {
        if octet > 0 {
            if s.get(j) != Some(&b'.') {
                return None;
            }
            j += 1;
        }
        let end = digit_run(s, j);
        if end == j || end - j > 3 {
            return None;
        }
        j = end;
    }
    if j < s.len()
        && (is_word(s[j]) || (s[j] == b'.' && s.get(j + 1).is_some_and(|b| b.is_ascii_digit())))
    {
        return None;
    }
    if s.get(j) == Some(&b':') && s.get(j + 1).is_some_and(|b| b.is_ascii_digit()) {
        j = digit_run(s, j + 1);
    }
    Some(j)
}

fn match_number(s: &[u8], i: usize) -> usize {
    let mut j = digit_run(s, i);
    if s.get(j) == Some(&b'.') && s.get(j + 1).is_some_and(|b| b.is_ascii_digit()) {
        j = digit_run(s, j + 1);
    }
    j
}

/// The message with its variable parts replaced by placeholders (grammar: docs/ENGINE.md,
/// *Groups*).
pub fn normalize_message(message: &str) -> String {
    normalize_prefix(message, usize::MAX)
}

/// `capped(normalize_message(message), max_chars)` (the group key's message, see
/// docs/ENGINE.md *Groups*), without normalising more of a long message than needed.
pub fn normalize_capped(message: &str, max_chars: usize) -> String {
    crate::cut::capped(&normalize_prefix(message, max_chars), max_chars)
}

/// The normalised message, or a prefix of it longer than `limit` characters: the scan
/// stops once the output has more than `limit` characters (each output character
/// depends only on the input, so the prefix is that of the whole result).
fn normalize_prefix(message: &str, limit: usize) -> String {
    let s = message.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(s.len().min(limit.saturating_add(8)));
    let mut out_chars = 0usize;
    let mut i = 0;
    while i < s.len() {
        // Stop past the limit, at a character boundary.
        if out_chars > limit && s[i] & 0xC0 != 0x80 {
            break;
        }
        if !may_start_token(s, i) {
            // Copy the run of bytes where no rule can start, in one go.
            let start = i;
            i += 1;
            while i < s.len() && !may_start_token(s, i) {
                i += 1;
            }
            out.extend_from_slice(&s[start..i]);
            // A character is counted at its first byte.
            out_chars += s[start..i].iter().filter(|&&b| b & 0xC0 != 0x80).count();
            continue;
        }
        let b = s[i];
        let prev = if i > 0 { Some(s[i - 1]) } else { None };
        let word_start = !matches!(prev, Some(p) if is_word(p));
        let mut placeholder: Option<(Emit, usize)> = None;
        if b == b'\'' || b == b'"' {
            if let Some((end, identifier)) = match_string(s, i) {
                placeholder = Some((
                    if identifier {
                        Emit::Keep
                    } else {
                        Emit::Text(b"<str>")
                    },
                    end,
                ));
            }
        } else if b == b'<' {
            if let Some(end) = match_object(s, i) {
                placeholder = Some((Emit::Text(b"<obj>"), end));
            }
        } else if is_path_char(b) {
            // Only at a run start: inside a run that did not qualify, no path starts.
            if !matches!(prev, Some(p) if is_path_char(p)) {
                if let Some(end) = match_path(s, i) {
                    placeholder = Some((Emit::Text(b"<path>"), end));
                }
            }
            if placeholder.is_none() && word_start && is_hex(b) {
                if let Some(end) = match_uuid(s, i) {
                    placeholder = Some((Emit::Text(b"<uuid>"), end));
                }
            }
            if placeholder.is_none() && b.is_ascii_digit() {
                if let Some(end) = match_0x(s, i) {
                    placeholder = Some((Emit::Text(b"<hex>"), end));
                }
            }
            if placeholder.is_none() && word_start && is_hex(b) {
                if let Some(end) = match_bare_hex(s, i) {
                    placeholder = Some((Emit::Text(b"<hex>"), end));
                }
            }
            if placeholder.is_none() && b.is_ascii_digit() {
                if !matches!(prev, Some(p) if is_word(p) || p == b'.') {
                    if let Some(end) = match_ipv4(s, i) {
                        placeholder = Some((Emit::Text(b"<addr>"), end));
                    }
                }
                if placeholder.is_none() {
                    placeholder = Some((Emit::Text(b"<n>"), match_number(s, i)));
                }
            }
            if placeholder.is_none() && word_start {
                if let Some((name_end, end)) = match_call(s, i) {
                    placeholder = Some((Emit::Call(name_end), end));
                } else if let Some(end) = match_bool(s, i) {
                    placeholder = Some((Emit::Text(b"<bool>"), end));
                }
            }
        }
        match placeholder {
            Some((emit, end)) => {
                let text: &[u8] = match emit {
                    Emit::Text(text) => text,
                    Emit::Keep => &s[i..end],
                    Emit::Call(name_end) => {
                        out.extend_from_slice(&s[i..name_end]);
                        out_chars += name_end - i;
                        b"(...)"
                    }
                };
                out.extend_from_slice(text);
                out_chars += text.len();
                i = end;
            }
            None => {
                out.push(b);
                // A character is counted at its first byte.
                out_chars += usize::from(b & 0xC0 != 0x80);
                i += 1;
            }
        }
    }
    // Only ASCII tokens were replaced, at ASCII boundaries: the rest is copied whole.
    String::from_utf8(out).expect("normalising keeps UTF-8 intact")
}

/// What `fold_values` writes for each value.
const VALUE: &str = "<v>";

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_opener(b: u8) -> bool {
    matches!(b, b'(' | b'[' | b'{')
}

fn is_closer(b: u8) -> bool {
    matches!(b, b')' | b']' | b'}')
}

/// The index after the closer matching the opener at `start` (any of `)]}` closes one
/// depth of any of `([{`), or `s.len()` when it is never closed.
fn bracket_end(s: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    for (j, &b) in s.iter().enumerate().skip(start) {
        if is_opener(b) {
            depth += 1;
        } else if is_closer(b) {
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        }
    }
    s.len()
}

/// For each `<` of `s` that is closed, the index of its `>` (`<` and `>` nest), in one
/// pass: the same as counting depth forward from each `<`. `usize::MAX`: not closed.
fn matching_angles(s: &[u8]) -> Vec<usize> {
    let mut matches = Vec::new();
    if !s.contains(&b'<') {
        return matches;
    }
    matches.resize(s.len(), usize::MAX);
    let mut open_at = Vec::new();
    for (j, &b) in s.iter().enumerate() {
        if b == b'<' {
            open_at.push(j);
        } else if b == b'>' {
            if let Some(i) = open_at.pop() {
                matches[i] = j;
            }
        }
    }
    matches
}

/// A normalised assertion message with every value folded to `<v>` (the key of an
/// `AssertionError` at an assertion site; docs/ENGINE.md, *Groups*, value folding;
/// identical to `fold_values` in `pure/group.py`). One left-to-right scan, ASCII
/// classes: a bracket `(`, `[` or `{` up to its matching closer (the three kinds nest
/// as one depth; an unclosed one runs to the end), with the dotted name right before
/// it at a word start; `<` + a letter or `_` up to its matching `>`; a quote at a word
/// start up to the same quote on the line; the words `None`/`True`/`False`. Everything
/// else is copied.
pub fn fold_values(normalized: &str) -> String {
    let s = normalized.as_bytes();
    let n = s.len();
    let angles = matching_angles(s);
    let mut out: Vec<u8> = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        let c = s[i];
        let word_start = i == 0 || !is_word(s[i - 1]);
        if word_start && is_name_start(c) {
            let end = match_name(s, i).unwrap_or(i + 1);
            if end < n && is_opener(s[end]) {
                out.extend_from_slice(VALUE.as_bytes());
                i = bracket_end(s, end);
            } else {
                let name = &s[i..end];
                if matches!(name, b"None" | b"True" | b"False") {
                    out.extend_from_slice(VALUE.as_bytes());
                } else {
                    out.extend_from_slice(name);
                }
                i = end;
            }
            continue;
        }
        if is_opener(c) {
            out.extend_from_slice(VALUE.as_bytes());
            i = bracket_end(s, i);
            continue;
        }
        if c == b'<' && i + 1 < n && is_name_start(s[i + 1]) && angles[i] != usize::MAX {
            out.extend_from_slice(VALUE.as_bytes());
            i = angles[i] + 1;
            continue;
        }
        if (c == b'\'' || c == b'"') && word_start {
            let close = s[i + 1..].iter().position(|&b| b == c || b == b'\n');
            if let Some(k) = close {
                if s[i + 1 + k] == c {
                    out.extend_from_slice(VALUE.as_bytes());
                    i += k + 2;
                    continue;
                }
            }
        }
        out.push(c);
        i += 1;
    }
    // Only ASCII runs were replaced, at ASCII boundaries: the rest is copied whole.
    String::from_utf8(out).expect("folding keeps UTF-8 intact")
}

/// FNV-1a 64 of `exception or ""`, a NUL byte, then `normalized` (UTF-8); with `where`
/// (a frame or assertion site), `where` and a NUL byte come before `normalized`.
pub fn key_hash(exception: Option<&str>, normalized: &str, at: Option<&str>) -> u64 {
    let mut h = FNV_OFFSET;
    let parts: [&[u8]; 5] = [
        exception.unwrap_or("").as_bytes(),
        b"\0",
        at.unwrap_or("").as_bytes(),
        if at.is_some() { b"\0" } else { b"" },
        normalized.as_bytes(),
    ];
    for part in parts {
        for &b in part {
            h ^= u64::from(b);
            h = h.wrapping_mul(FNV_PRIME);
        }
    }
    h
}

/// The group id of a key hash: `g` + its first 8 lowercase hex digits.
pub fn group_id(hash: u64) -> String {
    format!("g{:08x}", hash >> 32)
}

/// (group id, normalised message) of a failure (docs/ENGINE.md, *Groups*).
///
/// `exception` None and `Some("")` hash the same. `at`: the frame (`path:line`) the
/// failure is grouped by, if any: the key is then the exception and that frame, whatever
/// the message (a fingerprint); without one, the normalised message with its values
/// folded (`fold_values`). The message returned is the normalised one either way.
pub fn group_key(exception: Option<&str>, message: &str, at: Option<&str>) -> (String, String) {
    let normalized = normalize_message(message);
    let id = match at {
        Some(_) => group_id(key_hash(exception, "", at)),
        None => group_id(key_hash(exception, &fold_values(&normalized), None)),
    };
    (id, normalized)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> String {
        normalize_message(s)
    }

    #[test]
    fn assertion_values_fold_names_and_operators_stay() {
        let f = |m: &str| fold_values(&n(m));
        assert_eq!(
            f("assert {2: 1, 3: 2} == {1: 2, 2: 3}"),
            "assert <v> == <v>"
        );
        assert_eq!(
            f("assert defaultdict(<class 'int'>, {2: 1}) == <a.B object at 0x7f>"),
            "assert <v> == <v>"
        );
        assert_eq!(
            f("None unexpectedly found in Cache({}, maxsize=1)"),
            "<v> unexpectedly found in <v>"
        );
        assert_eq!(f("KeyError not raised"), "KeyError not raised");
        assert_eq!(f("can't x 'a' a < b (open"), "can't x <v> a < b <v>");
        // an assertion site with other values is the same group; another site is not
        let site = group_key(
            Some("AssertionError"),
            "assert [1] == [2, 3]",
            Some("t.py:9"),
        );
        assert_eq!(
            site.0,
            group_key(Some("AssertionError"), "assert 'x' == None", Some("t.py:9")).0
        );
        assert_ne!(
            site.0,
            group_key(
                Some("AssertionError"),
                "assert 'x' == None",
                Some("t.py:10")
            )
            .0
        );
        assert_eq!(site.1, "assert [<n>] == [<n>, <n>]");
    }

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        // From the FNV reference test suite: FNV-1a 64 of "" and "a".
        let mut h = FNV_OFFSET;
        assert_eq!(h, 0xcbf29ce484222325);
        h ^= u64::from(b'a');
        h = h.wrapping_mul(FNV_PRIME);
        assert_eq!(h, 0xaf63dc4c8601ec8c);
        // Key of exception None and message "": the single NUL byte.
        assert_eq!(key_hash(None, "", None), 0xaf63bd4c8601b7df);
        assert_eq!(group_id(0xaf63bd4c8601b7df), "gaf63bd4c");
    }

    #[test]
    fn strings_are_replaced_but_apostrophes_in_words_are_not() {
        assert_eq!(n("KeyError: 'user id'"), "KeyError: <str>");
        assert_eq!(
            n("'NoneType' object has no attribute 'a'"),
            "'NoneType' object has no attribute 'a'"
        );
        assert_eq!(n(r#"assert "a b" == 'b.c'"#), "assert <str> == 'b.c'");
        assert_eq!(n("can't find 'x y'"), "can't find <str>");
        assert_eq!(n("assert b'\\x00' != rb'q r'"), "assert b<str> != rb<str>");
        assert_eq!(n("'' empty"), "<str> empty");
        assert_eq!(n("open 'never closed"), "open 'never closed");
        assert_eq!(n("'a\nb'"), "'a\nb'");
        assert_eq!(n("'1x' 'x1'"), "<str> 'x1'");
    }

    #[test]
    fn numbers_hex_uuid_addr_paths() {
        assert_eq!(
            n("refused after 12 retries in 0.25s"),
            "refused after <n> retries in <n>s"
        );
        assert_eq!(n("object at 0x7f3b2c1d0e80>"), "object at <hex>>");
        assert_eq!(n("commit 3f2a9c1b done"), "commit <hex> done");
        assert_eq!(n("deadbeef stays"), "deadbeef stays");
        assert_eq!(n("id=550e8400-e29b-41d4-a716-446655440000."), "id=<uuid>.");
        assert_eq!(n("to 10.0.0.7:6379 refused"), "to <addr> refused");
        assert_eq!(n("from 192.168.1.1, ok"), "from <addr>, ok");
        assert_eq!(n("version 1.2.3.4.5"), "version <n>.<n>.<n>");
        assert_eq!(
            n("file /tmp/pytest-of-root/pytest-12/x.json missing"),
            "file <path> missing"
        );
        assert_eq!(n("see tests/test_x.py:12"), "see <path>:<n>");
        assert_eq!(n("C:\\Users\\me\\x.txt"), "C:<path>");
        assert_eq!(n("worker_3 died"), "worker_<n> died");
        assert_eq!(n("/tmp alone"), "/tmp alone");
        assert_eq!(n("2024-01-31 12:30:45.123"), "<n>-<n>-<n> <n>:<n>:<n>");
        assert_eq!(n("héllo 42 wörld"), "héllo <n> wörld");
    }

    #[test]
    fn reprs_and_booleans() {
        assert_eq!(n("assert True == False"), "assert <bool> == <bool>");
        assert_eq!(n("Truex True_ xTrue"), "Truex True_ xTrue");
        assert_eq!(
            n("Point(x=1, y=2) != <a.B object at 0x7f00>"),
            "Point(...) != <obj>"
        );
        assert_eq!(n("assert f(g(1)) == 2"), "assert f(g(...)) == <n>");
        assert_eq!(n("x-y.z(3) a < b > c"), "x-y.z(...) a < b > c");
        assert_eq!(n("b'True' ''"), "b'True' <str>");
    }

    #[test]
    fn group_key_ignores_varying_parts() {
        let a = group_key(
            Some("ConnectionError"),
            "connect to 10.0.0.1:5432 refused after 3 retries",
            None,
        );
        let b = group_key(
            Some("ConnectionError"),
            "connect to 172.16.4.20:6379 refused after 17 retries",
            None,
        );
        assert_eq!(a, b);
        assert_eq!(a.1, "connect to <addr> refused after <n> retries");
        assert!(a.0.starts_with('g') && a.0.len() == 9);
        let c = group_key(
            Some("TimeoutError"),
            "connect to 10.0.0.1:5432 refused after 3 retries",
            None,
        );
        assert_ne!(a.0, c.0);
        assert_eq!(group_key(None, "x", None), group_key(Some(""), "x", None));
        assert_ne!(
            group_key(None, "x", Some("a.py:3")),
            group_key(None, "x", None)
        );
    }

    #[test]
    fn normalize_capped_equals_capping_the_whole_result() {
        let messages = [
            "refused by 10.0.0.2:6379 after 12 retries",
            "ééé 'a' 1.5 /x/y 0xff 3f2a9c1b-x 550e8400-e29b-41d4-a716-446655440000 ",
            "",
            "12345678901234567890",
        ];
        for message in messages {
            let repeated = message.repeat(5);
            for max in 0..60 {
                assert_eq!(
                    normalize_capped(&repeated, max),
                    crate::cut::capped(&normalize_message(&repeated), max)
                );
            }
        }
    }
}
