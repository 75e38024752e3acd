//! Node-id selection (docs/ENGINE.md, *Selection*): which tests and collection errors a
//! summary lists when the caller names some. Mirrored by `Selection` in
//! `pure/select.py`.
//!
//! An entry, trailing `/`s stripped, selects an id equal to it or starting with it
//! followed by `::`, `[` or `/`. Lookups cost one hash probe per distinct entry length
//! (plus one for the whole id), whatever the number of entries: an id is only compared
//! with its prefixes whose length is that of some entry.

use std::collections::HashMap;

/// Compiled select entries.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The entries as given (reported back in `unmatched`).
    entries: Vec<String>,
    /// Entry with trailing `/`s stripped -> indices in `entries` (duplicates share one key).
    index: HashMap<String, Vec<usize>>,
    /// Distinct lengths (bytes) of the stripped entries, ascending.
    lengths: Vec<usize>,
}

impl Selection {
    /// Compile `entries` (node ids, files, directories, classes, in any order; may be
    /// empty, then nothing is selected).
    pub fn new(entries: &[String]) -> Self {
        let mut index: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, entry) in entries.iter().enumerate() {
            index
                .entry(entry.trim_end_matches('/').to_owned())
                .or_default()
                .push(i);
        }
        let mut lengths: Vec<usize> = index.keys().map(String::len).collect();
        lengths.sort_unstable();
        lengths.dedup();
        Selection {
            entries: entries.to_vec(),
            index,
            lengths,
        }
    }

    /// Number of entries (as given, duplicates included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Call `on_match` with the index of every entry that selects `id`; returns whether
    /// any does.
    pub fn visit_matches(&self, id: &str, mut on_match: impl FnMut(usize)) -> bool {
        let mut found = false;
        let mut hit = |key: &str| {
            if let Some(indices) = self.index.get(key) {
                found = true;
                indices.iter().for_each(|&i| on_match(i));
            }
        };
        hit(id);
        let b = id.as_bytes();
        for &len in &self.lengths {
            // The byte after the prefix is ASCII, so `len` is a character boundary.
            let boundary = match b.get(len) {
                Some(b'/' | b'[') => true,
                Some(b':') => b.get(len + 1) == Some(&b':'),
                Some(_) => false,
                None => break,
            };
            if boundary {
                hit(&id[..len]);
            }
        }
        found
    }

    /// True when some entry selects `id`.
    pub fn selects(&self, id: &str) -> bool {
        self.visit_matches(id, |_| {})
    }

    /// The entries whose flag in `matched` (one per entry) is false, as given, in input
    /// order.
    ///
    /// # Panics
    /// When `matched` does not have one flag per entry (a caller's bug; the pure twin
    /// raises `ValueError` through `zip(..., strict=True)`).
    pub fn unmatched<'a>(&'a self, matched: &[bool]) -> Vec<&'a str> {
        assert_eq!(
            matched.len(),
            self.entries.len(),
            "one matched flag per selection entry"
        );
        self.entries
            .iter()
            .zip(matched)
            .filter(|(_, &m)| !m)
            .map(|(e, _)| e.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selection(entries: &[&str]) -> Selection {
        Selection::new(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>())
    }

    fn matches(s: &Selection, id: &str) -> Vec<usize> {
        let mut out = Vec::new();
        s.visit_matches(id, |i| out.push(i));
        out.sort_unstable();
        out
    }

    #[test]
    fn an_entry_selects_itself_and_what_is_below_it() {
        let s = selection(&[
            "tests/unit/",
            "tests/test_a.py::TestX",
            "tests/test_b.py::test_p",
            "tests/test_c.py",
            "tests/test_c.py",
        ]);
        assert_eq!(matches(&s, "tests/unit/test_x.py::t"), vec![0]);
        assert_eq!(matches(&s, "tests/unit"), vec![0]);
        assert_eq!(matches(&s, "tests/test_a.py::TestX::test_y"), vec![1]);
        assert_eq!(
            matches(&s, "tests/test_a.py::TestXY::test_y"),
            Vec::<usize>::new()
        );
        assert_eq!(matches(&s, "tests/test_b.py::test_p[1-é]"), vec![2]);
        assert_eq!(matches(&s, "tests/test_b.py::test_pq"), Vec::<usize>::new());
        assert_eq!(matches(&s, "tests/test_c.py"), vec![3, 4]);
        assert_eq!(matches(&s, "tests/test_c.py:x"), Vec::<usize>::new());
        assert_eq!(matches(&s, "tests/unitx/t.py"), Vec::<usize>::new());
        assert!(!s.selects("tests"));
        assert_eq!(
            s.unmatched(&[true, false, true, false, true]),
            vec!["tests/test_a.py::TestX", "tests/test_c.py"]
        );
    }

    #[test]
    fn nested_entries_all_match_and_multibyte_ids_are_safe() {
        let s = selection(&["a", "a/b.py", "a/b.py::C", "é"]);
        assert_eq!(matches(&s, "a/b.py::C::t[x]"), vec![0, 1, 2]);
        assert_eq!(matches(&s, "é/x"), vec![3]);
        // A prefix length that falls inside a multi-byte character is never sliced.
        assert_eq!(matches(&s, "éé"), Vec::<usize>::new());
        assert!(selection(&[]).is_empty());
        assert!(!selection(&[]).selects("a"));
    }
}
