//! Content errors: what is wrong, in which file, at which line and column, under which
//! definition path.

use core::fmt;
use std::path::Path;

/// What kind of problem a [`ContentError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ContentErrorKind {
    /// A file or directory could not be read.
    Io,
    /// The text is not valid RON for the content format (includes unknown fields and variants).
    Syntax,
    /// A name is defined twice.
    Duplicate,
    /// A tag is used but not declared, or a tag name is invalid.
    UnknownTag,
    /// An attribute name is unknown.
    UnknownAttribute,
    /// An attribute set name is unknown.
    UnknownAttributeSet,
    /// An effect name is unknown.
    UnknownEffect,
    /// An ability name is unknown.
    UnknownAbility,
    /// A curve name is unknown.
    UnknownCurve,
    /// A lookup by name (from code) found nothing.
    UnknownName,
    /// A value is out of its allowed range.
    InvalidValue,
    /// Two settings contradict each other (for example an instant effect granting tags).
    InvalidCombination,
    /// Definitions refer to each other in a cycle.
    Cycle,
    /// A capacity is exceeded.
    Capacity,
    /// A function name is used for two different kinds of function.
    FunctionKind,
}

/// A content problem with its location. `Display` renders
/// `file:line:col: path: message`; every part is also a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentError {
    /// What kind of problem.
    pub kind: ContentErrorKind,
    /// The file (or `<inline>`, or the directory for I/O errors).
    pub file: String,
    /// The 1-based line, or 0 when unknown.
    pub line: u32,
    /// The 1-based column, or 0 when unknown.
    pub col: u32,
    /// The definition path, e.g. `effects.Poison.modifiers[1].attribute` (may be empty).
    pub path: String,
    /// What is wrong and, where possible, how to fix it.
    pub message: String,
}

impl ContentError {
    pub(crate) fn new(kind: ContentErrorKind, file: String, message: impl Into<String>) -> Self {
        ContentError { kind, file, line: 0, col: 0, path: String::new(), message: message.into() }
    }

    pub(crate) fn io(path: &Path, e: &std::io::Error) -> Self {
        ContentError::new(
            ContentErrorKind::Io,
            path.display().to_string(),
            format!("cannot read: {e}"),
        )
    }

    pub(crate) fn unknown_name<'a>(
        what: &str,
        name: &str,
        known: impl Iterator<Item = &'a str>,
    ) -> Self {
        let mut message = format!("no {what} named \"{}\"", Clip(name));
        if let Some(s) = suggest(name, known) {
            message.push_str(&format!(" (did you mean \"{s}\"?)"));
        }
        ContentError::new(ContentErrorKind::UnknownName, String::new(), message)
    }
}

impl fmt::Display for ContentError {
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

impl std::error::Error for ContentError {}

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

/// ron's message for a parse error, with every user-supplied string in it clipped ([`Clip`])
/// and, for an unknown field or variant, the nearest valid one suggested before the full list:
/// ``Unexpected field named `durration` in `effect` (did you mean `duration`?), expected one
/// of `…`, or `…` instead``.
pub(crate) fn ron_message(code: &ron::error::Error) -> String {
    use ron::error::Error as R;
    let unexpected = |what: &str,
                      found: &str,
                      outer: Option<String>,
                      expected: &'static [&'static str],
                      none: &str| {
        let mut m = format!("Unexpected {what} named `{}`", Clip(found));
        if let Some(o) = outer {
            m.push_str(&o);
        }
        if let Some(s) = suggest(found, expected.iter().copied()) {
            m.push_str(&format!(" (did you mean `{s}`?)"));
        }
        let quoted: Vec<String> = expected.iter().map(|e| format!("`{e}`")).collect();
        match &quoted[..] {
            [] => m.push_str(&format!(", there are no {none}")),
            [a] => m.push_str(&format!(", expected {a} instead")),
            [a, b] => m.push_str(&format!(", expected either {a} or {b} instead")),
            [first @ .., last] => {
                m.push_str(&format!(", expected one of {}, or {last} instead", first.join(", ")));
            }
        }
        m
    };
    match code {
        R::NoSuchStructField { expected, found, outer } => unexpected(
            "field",
            found,
            outer.as_deref().map(|o| format!(" in `{}`", Clip(o))),
            expected,
            "fields",
        ),
        R::NoSuchEnumVariant { expected, found, outer: None } => {
            unexpected("enum variant", found, None, expected, "variants")
        }
        R::NoSuchEnumVariant { expected, found, outer: Some(o) } => unexpected(
            "variant",
            found,
            Some(format!(" in enum `{}`", Clip(o))),
            expected,
            "variants",
        ),
        R::InvalidValueForType { expected, found } => {
            format!("Expected {} but found {} instead", Clip(expected), Clip(found))
        }
        R::ExpectedDifferentStructName { expected, found } => {
            format!("Expected struct `{expected}` but found `{}`", Clip(found))
        }
        R::ExpectedStructName(name) => {
            format!("Expected the explicit struct name `{}`, but none was found", Clip(name))
        }
        R::InvalidIdentifier(s) => format!("Invalid identifier \"{}\"", Clip(s)),
        R::SuggestRawIdentifier(s) => format!(
            "Found invalid std identifier \"{}\", try the raw identifier `r#{}` instead",
            Clip(s),
            Clip(s)
        ),
        R::NoSuchExtension(s) => format!("No RON extension named `{}`", Clip(s)),
        R::Message(s) | R::Io(s) => clip_message(s),
        other => clip_message(&other.to_string()),
    }
}

/// A whole message that may hold user text somewhere in it (ron's own wording, a serde
/// message), bounded to 4 × [`ECHO_CHARS`] characters the way [`Clip`] bounds a name.
pub(crate) fn clip_message(s: &str) -> String {
    match s.char_indices().nth(4 * ECHO_CHARS) {
        None => s.to_string(),
        Some((end, _)) => format!("{}… ({} bytes)", &s[..end], s.len()),
    }
}

/// Case-insensitive edit distance counting a swap of two adjacent letters as one edit
/// (optimal string alignment), so `heor` is one edit from `hero`.
fn edit_distance(a: &str, b: &str) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let known = ["Health", "MaxHealth", "Mana"];
        assert_eq!(suggest("Helth", known.iter().copied()), Some("Health"));
        assert_eq!(suggest("health", known.iter().copied()), Some("Health"));
        assert_eq!(suggest("Stamina", known.iter().copied()), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("heor", "hero"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        // Long names are neither suggested for nor suggested (and cost no edit distance).
        let long = "H".repeat(1 << 20);
        assert_eq!(suggest(&long, known.iter().copied()), None);
        assert_eq!(suggest("Healt", [long.as_str(), "Health"].into_iter()), Some("Health"));
    }

    #[test]
    fn clipped_echoes() {
        assert_eq!(Clip("Health").to_string(), "Health");
        let exact = "é".repeat(ECHO_CHARS);
        assert_eq!(Clip(&exact).to_string(), exact);
        let long = format!("{exact}x");
        assert_eq!(Clip(&long).to_string(), format!("{exact}… ({} bytes)", long.len()));
        assert!(clip_message(&"m".repeat(1 << 20)).len() < 4 * ECHO_CHARS + 40);
    }

    #[test]
    fn display() {
        let mut e = ContentError::new(ContentErrorKind::UnknownAttribute, "a.ron".into(), "bad");
        e.line = 3;
        e.col = 7;
        e.path = "effects.X".into();
        assert_eq!(e.to_string(), "a.ron:3:7: effects.X: bad");
    }
}
