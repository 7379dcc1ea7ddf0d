//! Content errors: what is wrong, in which file, at which line and column, under which
//! definition path.

use crate::located::LocatedError;
pub(crate) use crate::located::{Clip, ECHO_CHARS, suggest};
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

/// A content problem with its location: a [`LocatedError`] whose kind is a
/// [`ContentErrorKind`]. `Display` renders `file:line:col: path: message`; every part is also a
/// field. The path is the definition path, e.g. `effects.Poison.modifiers[1].attribute`; the
/// file is `<inline>` for text given without a name, or the directory for I/O errors.
pub type ContentError = LocatedError<ContentErrorKind>;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::located::edit_distance;

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
