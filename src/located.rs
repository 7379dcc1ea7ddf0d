//! Errors that point into a user's file, and the text helpers every such error uses.
//!
//! [`LocatedError`] is the one shape of a content error and a scenario error: the kind of
//! problem, the file, the 1-based line and column, the path inside the file and a message
//! that says how to fix it. Only the kind differs ([`ContentErrorKind`](crate::ContentErrorKind),
//! [`ScenarioErrorKind`](crate::scenario::ScenarioErrorKind)).
//!
//! This module sits at the bottom of the crate: it imports nothing from it.

use core::fmt;

/// A problem in a user's file, with where it is. `Display` renders
/// `file:line:col: path: message`, leaving out the line and column when unknown (0) and the path
/// when empty; every part is also a field.
///
/// [`ContentError`](crate::ContentError) and [`ScenarioError`](crate::scenario::ScenarioError)
/// are this type with their own kind.
///
/// `Debug` prints the same readable message as `Display` (what `fn main() -> Result<(),
/// Box<dyn Error>>` shows when it returns the error); `{:#?}` prints the fields.
#[derive(Clone, PartialEq, Eq)]
pub struct LocatedError<K> {
    /// What kind of problem.
    pub kind: K,
    /// The file (or `<inline>` for unnamed text, or the directory for I/O errors).
    pub file: String,
    /// The 1-based line, or 0 when unknown.
    pub line: u32,
    /// The 1-based column (in characters), or 0 when unknown.
    pub col: u32,
    /// The path inside the file, e.g. `effects.Poison.modifiers[1].attribute` or
    /// `script[3].do.effect` (may be empty).
    pub path: String,
    /// What is wrong and, where possible, how to fix it.
    pub message: String,
}

impl<K> fmt::Display for LocatedError<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.file.is_empty() {
            write!(f, "{}", self.file)?;
            if self.line > 0 {
                write!(f, ":{}:{}", self.line, self.col)?;
            }
            write!(f, ": ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        write!(f, "{}", self.message)
    }
}

impl<K: fmt::Debug> fmt::Debug for LocatedError<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() {
            return fmt::Display::fmt(self, f);
        }
        f.debug_struct("LocatedError")
            .field("kind", &self.kind)
            .field("file", &self.file)
            .field("line", &self.line)
            .field("col", &self.col)
            .field("path", &self.path)
            .field("message", &self.message)
            .finish()
    }
}

impl<K: fmt::Debug> std::error::Error for LocatedError<K> {}

/// Implements `Debug` as the type's `Display` for the public error types: the readable message
/// is what a user sees however the error is printed, including by `fn main() -> Result<(),
/// Box<dyn Error>>`, which prints the `Debug` of the error it returns. (Outcome values such as
/// `ActivationFailure` and `ApplyError` keep their derived `Debug`: reports print their variant
/// names.)
macro_rules! readable_debug {
    ($t:ty) => {
        impl core::fmt::Debug for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(self, f)
            }
        }
    };
}
pub(crate) use readable_debug;

/// The most characters of a user-supplied string (a name, a key, a field, a value) that an
/// error message echoes: see [`Clip`].
pub(crate) const ECHO_CHARS: usize = 80;

/// A user-supplied string as error messages echo it: whole when it has at most
/// [`ECHO_CHARS`] characters, else its first [`ECHO_CHARS`] characters, `…` and its length
/// (`AAAA…AAA… (1048576 bytes)`), so a 200 MB tag name in a file makes a short message rather
/// than a 200 MB one. Every content, scenario and replay error that echoes a name goes through
/// it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clip<'a>(pub(crate) &'a str);

impl fmt::Display for Clip<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(ECHO_CHARS) {
            None => f.write_str(self.0),
            Some((end, _)) => write!(f, "{}… ({} bytes)", &self.0[..end], self.0.len()),
        }
    }
}

/// Names longer than this (in bytes) get no "did you mean" suggestion: no typo is that long,
/// and the edit distance of two long strings is costly.
const SUGGEST_MAX_BYTES: usize = 256;

/// The closest known name by edit distance, if it is close enough to be a plausible typo.
pub(crate) fn suggest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    if name.len() > SUGGEST_MAX_BYTES {
        return None;
    }
    let n = name.chars().count();
    let limit = (n / 3).max(1);
    known
        // The distance is at least the difference in length (a char is 1 to 4 bytes): names
        // too long or too short to be within `limit` are skipped without computing it.
        .filter(|k| k.len() <= 4 * (n + limit) && k.chars().count().abs_diff(n) <= limit)
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)))
        .map(|(_, k)| k)
}

/// Case-insensitive edit distance counting a swap of two adjacent letters as one edit
/// (optimal string alignment), so `heor` is one edit from `hero`.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    // Three rows: two back (for transpositions), previous, current.
    let mut prev2: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 0..a.len() {
        cur[0] = i + 1;
        for j in 0..b.len() {
            let sub = prev[j] + usize::from(a[i] != b[j]);
            let mut d = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && a[i] == b[j - 1] && a[i - 1] == b[j] {
                d = d.min(prev2[j - 1] + 1);
            }
            cur[j + 1] = d;
        }
        core::mem::swap(&mut prev2, &mut prev);
        core::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}
