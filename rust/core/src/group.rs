//! Failure groups (docs/ENGINE.md, *Groups*). STUB: owner fills in.

/// (group id, normalised message).
pub fn group_key(exception: Option<&str>, message: &str) -> (String, String) {
    let _ = (exception, message);
    todo!()
}
