//! Source positions for definition paths in RON content files.
//!
//! Content files are written in RON. When `ron` fails to *parse* a file it reports a position,
//! but once a file parses successfully the resulting values carry no spans at all. Semantic
//! validation (unknown attribute names, dangling references, out-of-range values, ...) runs on
//! those span-less values and can only say *which* item is wrong, as a definition path such as
//! `effects.Poison.modifiers[1].attribute`. To let a user fix their file from the message alone
//! we still want a line and column, so this module re-scans the source text structurally and
//! walks the path to find where the offending item starts.
//!
//! The scanner is deliberately forgiving: it understands just enough RON (brackets, strings, raw
//! strings, byte strings, char literals, numbers, identifiers, nested comments and `#![...]`
//! attributes) to skip values correctly, never panics on malformed or truncated text, uses no
//! recursion (so deeply nested input cannot overflow the stack) and runs in time roughly linear
//! in the size of the source.
//!
//! # Position convention
//!
//! For a [`PathSeg::Key`] segment the reported position is that of the *key token* (the field
//! name in a struct, the key in a map), so an error points at the start of `attribute: "Helth"`.
//! For a [`PathSeg::Index`] segment it is the start of the element itself. When the path cannot be
//! fully resolved, the position of the deepest resolved segment is reported together with the
//! number of segments that were resolved; if none were, the position is line 1, column 1.

use super::error::ECHO_CHARS;
use std::fmt;
use std::ops::Range;

/// One step of a definition path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSeg {
    /// A struct field name or a map key (string key `"Poison"` or bare identifier `Poison`).
    Key(String),
    /// A position in a list `[...]` or tuple `(a, b)`.
    Index(usize),
}

/// A 1-based line and column (column counted in chars).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// The 1-based line number.
    pub line: u32,
    /// The 1-based column, counted in `char`s (Unicode scalar values), not bytes.
    pub col: u32,
}

impl Position {
    /// The very start of a file: line 1, column 1.
    pub const START: Position = Position { line: 1, col: 1 };
}

impl fmt::Display for Position {
    /// Formats the position as `line:col`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// How many nested `Some(...)` wrappers a segment may step through transparently.
const MAX_SOME_DEPTH: usize = 16;

/// Finds where the value at `path` starts in RON `source`.
///
/// Returns the position of the deepest path segment that could be resolved, and how many segments
/// were resolved (so a caller can report the nearest enclosing item if the full path cannot be
/// found). A [`PathSeg::Key`] resolves to the position of the key token; a [`PathSeg::Index`]
/// resolves to the start of the element. If no segment resolves (or `path` is empty) the position
/// is line 1, column 1.
///
/// `Some(x)` wrappers are transparent: a segment applied to `Some(x)` is first resolved inside `x`,
/// and only if that fails is `Some(x)` treated as an ordinary one-element tuple.
///
/// This never panics, whatever `source` contains.
#[must_use]
pub fn locate(source: &str, path: &[PathSeg]) -> (Position, usize) {
    let chars: Vec<char> = source.chars().collect();
    let scan = Scanner { chars: &chars };
    let mut value = scan.root_value_start();
    let mut report = None;
    let mut resolved = 0;
    for seg in path {
        let Some(step) = scan.resolve(value, seg) else { break };
        value = step.value;
        report = Some(step.report);
        resolved += 1;
    }
    let position = report.map_or(Position::START, |index| scan.position_of(index));
    (position, resolved)
}

/// The definition path of the innermost item at a source position: the inverse of [`locate`],
/// used to name the item a `ron` parse error points at.
///
/// Starting from the top-level value, the walk descends into the entry (struct field, map entry,
/// list or tuple element) whose text contains the position. A position on a key token or on the
/// colon after it belongs to that entry; a position on a container's name, opening bracket or
/// closing bracket belongs to the container. A position in the gap between entries (whitespace,
/// comments, a comma) belongs to the entry that *immediately precedes* it, that is, when no comma
/// separates them (`duration: Frames(5) |` names `duration`); otherwise (after a comma, or
/// before the first entry) it belongs to the enclosing container. At or past the end of a
/// truncated file the walk stops in the innermost container still open and the same gap rule
/// applies: `(effects: {"P": (duration: Frames(5)` names `effects.P.duration`,
/// `(effects: {"P": (duration: Frames(5), ` names `effects.P` and `(tags: ["A", "B` names
/// `tags[1]`.
///
/// `Some(x)` wrappers are transparent (they add no segment), matching [`locate`]. Lines and
/// columns beyond the text are clamped to the end of the line or of the text; line or column 0 is
/// read as 1. This never panics, whatever `source` contains, and uses no recursion.
#[must_use]
pub fn path_at(source: &str, pos: Position) -> Vec<PathSeg> {
    let chars: Vec<char> = source.chars().collect();
    let scan = Scanner { chars: &chars };
    scan.path_to(scan.index_of(pos))
}

/// Renders a path as `effects.Poison.modifiers[1].attribute`.
///
/// Keys are joined by `.` and indexes are written as `[i]`. Keys that are not plain identifiers
/// (empty, or containing anything but `[A-Za-z0-9_.]`) are quoted with Rust/RON string escapes,
/// e.g. `attributes."Max Health"`.
#[must_use]
pub fn render(path: &[PathSeg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            PathSeg::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                push_key(&mut out, key);
            }
            PathSeg::Index(index) => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Appends `key` to `out`, quoting it unless it is a plain identifier-like key.
fn push_key(out: &mut String, key: &str) {
    let plain =
        !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    // A key longer than an error may echo is cut (paths only ever go into error messages).
    let (key, cut) = match key.char_indices().nth(ECHO_CHARS) {
        Some((end, _)) => (&key[..end], Some(key.len())),
        None => (key, None),
    };
    if plain {
        out.push_str(key);
    } else {
        // `Debug` for `str` produces a quoted string with Rust (and therefore RON) escapes.
        out.push_str(&format!("{key:?}"));
    }
    if let Some(len) = cut {
        out.push_str(&format!("… ({len} bytes)"));
    }
}

/// The result of resolving one path segment.
#[derive(Clone, Copy, Debug)]
struct Step {
    /// Char index to report for this segment (key token or element start).
    report: usize,
    /// Char index where the resolved value starts; the next segment continues from here.
    value: usize,
}

/// The bracket kind of a container value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `( ... )`: a struct, tuple, or the body of a named struct / enum variant.
    Paren,
    /// `[ ... ]`: a list.
    Bracket,
    /// `{ ... }`: a map.
    Brace,
}

/// A container value: its bracket kind, optional name and where its body starts.
#[derive(Clone, Debug)]
struct Container {
    /// Which brackets enclose the body.
    kind: Kind,
    /// The name before `(` for named structs, tuples and enum variants.
    name: Option<Range<usize>>,
    /// Char index just after the opening bracket.
    body: usize,
}

/// One entry of a container: `value`, `field: value` or `key: value`.
#[derive(Clone, Debug)]
struct Entry {
    /// Char index where the entry starts (the key if there is one, else the value).
    start: usize,
    /// The key token, if the entry has the form `key: value`.
    key: Option<Range<usize>>,
    /// Char index where the entry's value starts.
    value: usize,
}

/// What kind of token starts at a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TokenKind {
    /// A string, raw string, byte string or char literal.
    Literal,
    /// An identifier, possibly raw (`r#type`).
    Ident,
    /// A number such as `-4`, `1.5e3` or `0x1F` (also `-inf`).
    Number,
    /// Any other single character (punctuation, stray symbols).
    Other,
}

/// A scanned token: its kind and the char index just past it.
#[derive(Clone, Copy, Debug)]
struct Token {
    /// The kind of the token.
    kind: TokenKind,
    /// Char index just past the token.
    end: usize,
}

/// The shape of a string-like literal.
#[derive(Clone, Copy, Debug)]
enum Literal {
    /// `"..."`, `b"..."`, `'.'` or `b'.'`, with backslash escapes, ended by `quote`.
    Quoted {
        /// The closing quote character.
        quote: char,
        /// Char index of the first char inside the quotes.
        body: usize,
    },
    /// `r#"..."#` or `br#"..."#` with `hashes` hash marks and no escapes.
    Raw {
        /// The number of `#` marks around the quotes.
        hashes: usize,
        /// Char index of the first char inside the quotes.
        body: usize,
    },
}

/// A read-only structural scanner over the chars of a RON document.
///
/// All positions are char indexes; every accessor is bounds-checked so that malformed input can
/// only make resolution fail, never panic.
#[derive(Clone, Copy)]
struct Scanner<'a> {
    /// The document, one element per `char`.
    chars: &'a [char],
}

impl<'a> Scanner<'a> {
    /// The char at `pos`, or `None` past the end.
    fn at(self, pos: usize) -> Option<char> {
        #[cfg(test)]
        tests::READS.with(|r| r.set(r.get() + 1));
        self.chars.get(pos).copied()
    }

    /// Whether the text at `pos` starts with the two chars `a` and `b`.
    fn starts_with(self, pos: usize, a: char, b: char) -> bool {
        self.at(pos) == Some(a) && self.at(pos + 1) == Some(b)
    }

    /// The chars in `range` as a `String` (empty if the range is out of bounds).
    fn text(self, range: Range<usize>) -> String {
        self.chars.get(range).unwrap_or_default().iter().collect()
    }

    /// Converts a char index into a 1-based line and column. A leading BOM is not counted.
    fn position_of(self, index: usize) -> Position {
        let skip = usize::from(self.at(0) == Some('\u{feff}'));
        let mut position = Position::START;
        for &c in self.chars.iter().take(index).skip(skip) {
            if c == '\n' {
                position.line = position.line.saturating_add(1);
                position.col = 1;
            } else {
                position.col = position.col.saturating_add(1);
            }
        }
        position
    }

    /// Converts a 1-based line and column into a char index: the inverse of [`Self::position_of`].
    ///
    /// A column past the end of its line gives the index of the line's newline; a line past the
    /// end of the text gives the length of the text. Line or column 0 is read as 1.
    fn index_of(self, pos: Position) -> usize {
        let want_line = pos.line.max(1);
        let want_col = pos.col.max(1);
        let skip = usize::from(self.at(0) == Some('\u{feff}'));
        let mut line = 1u32;
        let mut col = 1u32;
        for (index, &c) in self.chars.iter().enumerate().skip(skip) {
            if line == want_line && (col == want_col || c == '\n') {
                return index;
            }
            if c == '\n' {
                line = line.saturating_add(1);
                col = 1;
            } else {
                col = col.saturating_add(1);
            }
        }
        self.chars.len()
    }

    /// The path of the innermost item at char index `target` (see [`path_at`]).
    ///
    /// Runs in time linear in the text: bracket groups are matched once up front, so skipping
    /// a nested value is a table lookup however deep the nesting.
    fn path_to(self, target: usize) -> Vec<PathSeg> {
        let mut path = Vec::new();
        let mut value = self.root_value_start();
        if target < value {
            return path;
        }
        let ends = self.group_ends(value);
        let len = self.chars.len();
        // Each round handles one container; descending moves `value` strictly forward.
        'containers: while let Some(container) = self.container(value) {
            // `Some(x)` adds no segment: its payload stands for the value itself.
            let transparent = container.name.is_some_and(|name| self.text(name) == "Some");
            let push = |path: &mut Vec<PathSeg>, seg: PathSeg| {
                if !(transparent && matches!(seg, PathSeg::Index(_))) {
                    path.push(seg);
                }
            };
            let mut pos = container.body;
            let mut index = 0usize;
            // The previous entry, if no comma has followed it yet.
            let mut previous: Option<PathSeg> = None;
            loop {
                let start = self.skip_trivia(pos);
                let next = self.at(start);
                let on_comma = next == Some(',') && target == start;
                if target < start || on_comma || next.is_none() {
                    // In the gap after an entry (or at the end of a truncated text): the entry
                    // that immediately precedes, else the container.
                    if let Some(seg) = previous {
                        push(&mut path, seg);
                    }
                    break 'containers;
                }
                if next.is_some_and(is_close) {
                    // The closing bracket (or anything after it) belongs to the container.
                    break 'containers;
                }
                if next == Some(',') {
                    previous = None;
                    pos = start + 1;
                    continue;
                }
                let first_end = self.skip_value_with(&ends, start);
                let after_first = self.skip_trivia(first_end);
                let (seg, value_start, value_end) = if self.at(after_first) == Some(':') {
                    let key = start..first_end;
                    let text = self.key_text(key.clone()).unwrap_or_else(|| self.text(key));
                    let value_start = self.skip_trivia(after_first + 1);
                    (PathSeg::Key(text), value_start, self.skip_value_with(&ends, value_start))
                } else {
                    (PathSeg::Index(index), start, first_end)
                };
                index += 1;
                if target < value_end || value_end >= len {
                    push(&mut path, seg);
                    if target < value_start || value_start <= value {
                        // On the key or the colon (or no progress possible): the entry.
                        break 'containers;
                    }
                    value = value_start;
                    continue 'containers;
                }
                previous = Some(seg);
                pos = value_end;
            }
        }
        path
    }

    /// For every opening bracket at or after `from`, the index just past its matching closing
    /// bracket (the length of the text if it is never closed); `usize::MAX` elsewhere.
    ///
    /// Brackets are matched as [`Self::skip_group`] matches them, kinds not checked.
    fn group_ends(self, from: usize) -> Vec<usize> {
        let mut ends = vec![usize::MAX; self.chars.len()];
        let mut open: Vec<usize> = Vec::new();
        let mut pos = from;
        loop {
            pos = self.skip_trivia(pos);
            let Some(c) = self.at(pos) else { break };
            if is_open(c) {
                open.push(pos);
                pos += 1;
            } else if is_close(c) {
                if let Some(start) = open.pop() {
                    ends[start] = pos + 1;
                }
                pos += 1;
            } else {
                pos = self.token(pos).end;
            }
        }
        for start in open {
            ends[start] = self.chars.len();
        }
        ends
    }

    /// [`Self::skip_value`] with bracket groups looked up in `ends` (from [`Self::group_ends`]).
    fn skip_value_with(self, ends: &[usize], pos: usize) -> usize {
        let group = |open: usize| match ends.get(open) {
            Some(&end) if end != usize::MAX => end,
            _ => self.skip_group(open),
        };
        match self.at(pos) {
            None => pos,
            Some(c) if is_open(c) => group(pos),
            Some(c) if is_close(c) => pos,
            Some(_) => {
                let token = self.token(pos);
                if token.kind == TokenKind::Ident {
                    let open = self.skip_trivia(token.end);
                    if self.at(open) == Some('(') {
                        return group(open);
                    }
                }
                token.end
            }
        }
    }

    /// Skips whitespace, line comments and (nested) block comments starting at `pos`.
    fn skip_trivia(self, mut pos: usize) -> usize {
        loop {
            match self.at(pos) {
                Some(c) if c.is_whitespace() || c == '\u{feff}' => pos += 1,
                Some('/') if self.at(pos + 1) == Some('/') => pos = self.line_end(pos),
                Some('/') if self.at(pos + 1) == Some('*') => pos = self.block_comment_end(pos),
                _ => return pos,
            }
        }
    }

    /// The index of the newline ending the line that contains `pos` (or the end of the text).
    fn line_end(self, pos: usize) -> usize {
        let rest = self.chars.get(pos..).unwrap_or_default();
        rest.iter().position(|&c| c == '\n').map_or(self.chars.len(), |offset| pos + offset)
    }

    /// The index just past the (possibly nested) block comment starting with `/*` at `pos`.
    fn block_comment_end(self, pos: usize) -> usize {
        let mut depth = 0usize;
        let mut p = pos;
        while p < self.chars.len() {
            if self.starts_with(p, '/', '*') {
                depth += 1;
                p += 2;
            } else if self.starts_with(p, '*', '/') {
                depth = depth.saturating_sub(1);
                p += 2;
                if depth == 0 {
                    return p;
                }
            } else {
                p += 1;
            }
        }
        self.chars.len()
    }

    /// Where the top-level value starts, after trivia and `#![...]` attributes.
    fn root_value_start(self) -> usize {
        let mut pos = self.skip_trivia(0);
        while self.at(pos) == Some('#') {
            let mut open = pos + 1;
            if self.at(open) == Some('!') {
                open += 1;
            }
            let open = self.skip_trivia(open);
            if self.at(open) != Some('[') {
                break;
            }
            pos = self.skip_trivia(self.skip_group(open));
        }
        pos
    }

    /// Resolves one segment against the value starting at `value`, looking through `Some(...)`.
    fn resolve(self, value: usize, seg: &PathSeg) -> Option<Step> {
        // Innermost payload first, so `Some(x)` is transparent; the outer wrappers act as
        // ordinary one-element tuples as a fallback.
        let chain = self.some_chain(value);
        chain.iter().rev().find_map(|&candidate| self.resolve_direct(candidate, seg))
    }

    /// `value` followed by the starts of the payloads of any `Some(...)` wrappers around it.
    fn some_chain(self, value: usize) -> Vec<usize> {
        let mut chain = vec![value];
        let mut current = value;
        while chain.len() <= MAX_SOME_DEPTH {
            let Some(inner) = self.some_payload(current) else { break };
            chain.push(inner);
            current = inner;
        }
        chain
    }

    /// If the value at `value` is `Some(x)`, where `x` starts.
    fn some_payload(self, value: usize) -> Option<usize> {
        let container = self.container(value)?;
        let name = container.name?;
        if self.text(name) != "Some" {
            return None;
        }
        let first = self.entries(container.body).next()?;
        first.key.is_none().then_some(first.value)
    }

    /// Resolves one segment against the container starting exactly at `value`.
    fn resolve_direct(self, value: usize, seg: &PathSeg) -> Option<Step> {
        let container = self.container(value)?;
        let entry = match seg {
            PathSeg::Key(key) => {
                if container.kind == Kind::Bracket {
                    return None;
                }
                self.entries(container.body).find(|entry| self.key_matches(entry, key))?
            }
            PathSeg::Index(index) => {
                if container.kind == Kind::Brace {
                    return None;
                }
                self.entries(container.body).nth(*index)?
            }
        };
        Some(Step { report: entry.start, value: entry.value })
    }

    /// Whether `entry` has a key equal to `key`.
    fn key_matches(self, entry: &Entry, key: &str) -> bool {
        entry.key.clone().and_then(|range| self.key_text(range)).is_some_and(|text| text == key)
    }

    /// The comparable text of a key token: decoded string/char contents, identifier (without
    /// `r#`) or number text. Other tokens (e.g. tuples used as keys) have no key text.
    fn key_text(self, range: Range<usize>) -> Option<String> {
        if let Some(literal) = self.literal_at(range.start) {
            return Some(self.literal_content(literal));
        }
        match self.token(range.start).kind {
            TokenKind::Ident if self.starts_with(range.start, 'r', '#') => {
                Some(self.text(range.start + 2..range.end))
            }
            TokenKind::Ident | TokenKind::Number => Some(self.text(range)),
            TokenKind::Literal | TokenKind::Other => None,
        }
    }

    /// Recognises a container value starting at `pos`: `(`, `[`, `{` or `Name(`.
    fn container(self, pos: usize) -> Option<Container> {
        let simple = |kind| Some(Container { kind, name: None, body: pos + 1 });
        match self.at(pos)? {
            '(' => simple(Kind::Paren),
            '[' => simple(Kind::Bracket),
            '{' => simple(Kind::Brace),
            _ => {
                let token = self.token(pos);
                if token.kind != TokenKind::Ident {
                    return None;
                }
                let open = self.skip_trivia(token.end);
                (self.at(open) == Some('(')).then(|| Container {
                    kind: Kind::Paren,
                    name: Some(pos..token.end),
                    body: open + 1,
                })
            }
        }
    }

    /// Iterates over the entries of a container whose body starts at `body`.
    fn entries(self, body: usize) -> Entries<'a> {
        Entries { scan: self, pos: body, done: false }
    }

    /// Skips one complete value starting at `pos` (which must not be trivia).
    ///
    /// Consumes at least one char unless `pos` is at the end or at a closing bracket.
    fn skip_value(self, pos: usize) -> usize {
        match self.at(pos) {
            None => pos,
            Some(c) if is_open(c) => self.skip_group(pos),
            Some(c) if is_close(c) => pos,
            Some(_) => {
                let token = self.token(pos);
                if token.kind == TokenKind::Ident {
                    let open = self.skip_trivia(token.end);
                    if self.at(open) == Some('(') {
                        return self.skip_group(open);
                    }
                }
                token.end
            }
        }
    }

    /// Skips a bracketed group starting at the opening bracket at `open`, up to and including
    /// its matching closing bracket (or the end of the text if it is unbalanced).
    ///
    /// Bracket kinds are not checked against each other; this keeps the scan iterative and
    /// tolerant of malformed input.
    fn skip_group(self, open: usize) -> usize {
        let mut depth = 0usize;
        let mut pos = open;
        loop {
            pos = self.skip_trivia(pos);
            let Some(c) = self.at(pos) else { return pos };
            if is_open(c) {
                depth += 1;
                pos += 1;
            } else if is_close(c) {
                depth = depth.saturating_sub(1);
                pos += 1;
                if depth == 0 {
                    return pos;
                }
            } else {
                pos = self.token(pos).end;
            }
        }
    }

    /// Scans the single (non-bracket) token at `pos`. Consumes at least one char if not at
    /// the end.
    fn token(self, pos: usize) -> Token {
        let Some(c) = self.at(pos) else { return Token { kind: TokenKind::Other, end: pos } };
        if let Some(literal) = self.literal_at(pos) {
            return Token { kind: TokenKind::Literal, end: self.literal_end(literal) };
        }
        if is_ident_start(c) {
            return Token { kind: TokenKind::Ident, end: self.ident_end(pos) };
        }
        if c.is_ascii_digit() || matches!(c, '-' | '+' | '.') {
            return Token { kind: TokenKind::Number, end: self.number_end(pos) };
        }
        Token { kind: TokenKind::Other, end: pos + 1 }
    }

    /// Recognises a string-like literal starting at `pos`.
    fn literal_at(self, pos: usize) -> Option<Literal> {
        match (self.at(pos)?, self.at(pos + 1)) {
            (quote @ ('"' | '\''), _) => Some(Literal::Quoted { quote, body: pos + 1 }),
            ('b', Some(quote @ ('"' | '\''))) => Some(Literal::Quoted { quote, body: pos + 2 }),
            ('b', Some('r')) => self.raw_literal_at(pos + 1),
            ('r', _) => self.raw_literal_at(pos),
            _ => None,
        }
    }

    /// Recognises a raw string `r"..."` / `r#"..."#` whose `r` is at `pos`.
    fn raw_literal_at(self, pos: usize) -> Option<Literal> {
        let mut quote = pos + 1;
        while self.at(quote) == Some('#') {
            quote += 1;
        }
        let hashes = quote - (pos + 1);
        (self.at(quote) == Some('"')).then_some(Literal::Raw { hashes, body: quote + 1 })
    }

    /// The range of a literal's contents (between the quotes) and the index just past it.
    /// Unterminated literals extend to the end of the text.
    fn literal_span(self, literal: Literal) -> (Range<usize>, usize) {
        let len = self.chars.len();
        match literal {
            Literal::Quoted { quote, body } => {
                let mut pos = body;
                while let Some(c) = self.at(pos) {
                    if c == quote {
                        return (body..pos, pos + 1);
                    }
                    pos += if c == '\\' { 2 } else { 1 };
                }
                (body.min(len)..len, len)
            }
            Literal::Raw { hashes, body } => {
                let mut pos = body;
                while pos < len {
                    if self.at(pos) == Some('"') && self.hashes_follow(pos + 1, hashes) {
                        return (body..pos, pos + 1 + hashes);
                    }
                    pos += 1;
                }
                (body.min(len)..len, len)
            }
        }
    }

    /// Whether `count` `#` chars start at `pos`.
    fn hashes_follow(self, pos: usize, count: usize) -> bool {
        (pos..pos + count).all(|p| self.at(p) == Some('#'))
    }

    /// The index just past a literal.
    fn literal_end(self, literal: Literal) -> usize {
        self.literal_span(literal).1
    }

    /// The decoded contents of a literal (escapes resolved for quoted literals).
    fn literal_content(self, literal: Literal) -> String {
        let (range, _) = self.literal_span(literal);
        let body = self.chars.get(range).unwrap_or_default();
        match literal {
            Literal::Quoted { .. } => unescape(body),
            Literal::Raw { .. } => body.iter().collect(),
        }
    }

    /// The index just past the identifier (plain or raw `r#...`) starting at `pos`.
    fn ident_end(self, pos: usize) -> usize {
        if self.starts_with(pos, 'r', '#') && self.at(pos + 2).is_some_and(is_raw_ident_char) {
            return self.scan_while(pos + 2, is_raw_ident_char);
        }
        self.scan_while(pos + 1, is_ident_char)
    }

    /// The index just past the number starting at `pos` (at least `pos + 1`).
    fn number_end(self, pos: usize) -> usize {
        let mut p = pos;
        if matches!(self.at(p), Some('+' | '-')) {
            p += 1;
        }
        let digits = p;
        let radix_prefixed = self.at(p) == Some('0')
            && matches!(self.at(p + 1), Some('x' | 'X' | 'b' | 'B' | 'o' | 'O'));
        while let Some(c) = self.at(p) {
            let exponent_sign = matches!(c, '+' | '-')
                && !radix_prefixed
                && p > digits
                && matches!(self.at(p - 1), Some('e' | 'E'));
            if is_ident_char(c) || c == '.' || exponent_sign {
                p += 1;
            } else {
                break;
            }
        }
        p.max(pos + 1)
    }

    /// The first index at or after `pos` whose char does not satisfy `pred`.
    fn scan_while(self, mut pos: usize, pred: fn(char) -> bool) -> usize {
        while self.at(pos).is_some_and(pred) {
            pos += 1;
        }
        pos
    }
}

/// Iterator over the entries of a container body, stopping at any closing bracket or the end.
struct Entries<'a> {
    /// The scanner over the document.
    scan: Scanner<'a>,
    /// Where the next entry (or trivia before it) starts.
    pos: usize,
    /// Set once the closing bracket or the end of the text has been reached.
    done: bool,
}

impl Iterator for Entries<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        if self.done {
            return None;
        }
        let scan = self.scan;
        let start = scan.skip_trivia(self.pos);
        if scan.at(start).is_none_or(is_close) {
            self.done = true;
            return None;
        }
        // `skip_value` consumes at least one char here, so the iterator always makes progress.
        let first_end = scan.skip_value(start);
        let after_first = scan.skip_trivia(first_end);
        let (key, value, value_end) = if scan.at(after_first) == Some(':') {
            let value = scan.skip_trivia(after_first + 1);
            (Some(start..first_end), value, scan.skip_value(value))
        } else {
            (None, start, first_end)
        };
        let mut next = scan.skip_trivia(value_end);
        if scan.at(next) == Some(',') {
            next += 1;
        }
        self.pos = next;
        Some(Entry { start, key, value })
    }
}

/// Whether `c` opens a bracketed group.
fn is_open(c: char) -> bool {
    matches!(c, '(' | '[' | '{')
}

/// Whether `c` closes a bracketed group.
fn is_close(c: char) -> bool {
    matches!(c, ')' | ']' | '}')
}

/// Whether `c` can start an identifier.
fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

/// Whether `c` can continue an identifier.
fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `c` can appear in a raw identifier (`r#...`), which RON allows to contain `.+-`.
fn is_raw_ident_char(c: char) -> bool {
    is_ident_char(c) || matches!(c, '.' | '+' | '-')
}

/// Resolves backslash escapes in the body of a quoted literal. Unknown or malformed escapes are
/// kept leniently rather than rejected: this only needs to compare keys.
fn unescape(body: &[char]) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.iter().copied().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                out.extend(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32));
            }
            Some('u') => {
                if chars.peek() == Some(&'{') {
                    chars.next();
                }
                let hex: String = chars.by_ref().take_while(|&c| c != '}').collect();
                out.extend(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32));
            }
            Some('\n') => {
                // Line continuation: skip the newline and the following indentation.
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a path from a compact spec: `"effects.Poison.modifiers"` style keys and `#n`
    /// segments for indexes, separated by `/`.
    fn path(spec: &str) -> Vec<PathSeg> {
        spec.split('/')
            .map(|seg| match seg.strip_prefix('#') {
                Some(index) => PathSeg::Index(index.parse().expect("test index")),
                None => PathSeg::Key(seg.to_owned()),
            })
            .collect()
    }

    /// Position of the start of the `nth` (0-based) occurrence of `needle` in `source`.
    fn pos_of_nth(source: &str, needle: &str, nth: usize) -> Position {
        let (byte, _) = source.match_indices(needle).nth(nth).expect("needle present in source");
        let before = &source[..byte];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        Position { line: line as u32, col: col as u32 }
    }

    /// Position of the start of the single occurrence of `needle` in `source`.
    fn pos_of(source: &str, needle: &str) -> Position {
        assert_eq!(source.matches(needle).count(), 1, "needle {needle:?} must be unique");
        pos_of_nth(source, needle, 0)
    }

    const SAMPLE: &str = r#"#![enable(implicit_some)]
// Content for the test game.
(
    tags: ["Status.Poisoned", "Status.Burning"],
    attributes: {
        "Health": (default: 100),
        "Max Health": (default: 100),
    },
    effects: {
        "Poison": (
            duration: Some(5.0),
            modifiers: [
                (attribute: "Health", op: Add, magnitude: Scalable(coef: -4)),
                (attribute: "Helth", op: Add, magnitude: SetByCaller("Data.Damage")),
            ],
        ),
        Burn: (
            modifiers: [],
        ),
    },
)
"#;

    #[test]
    fn resolves_nested_struct_map_list_path() {
        let (pos, n) = locate(SAMPLE, &path("effects/Poison/modifiers/#1/attribute"));
        assert_eq!(n, 5);
        assert_eq!(pos, pos_of(SAMPLE, r#"attribute: "Helth""#));
    }

    #[test]
    fn key_segment_reports_key_and_index_reports_element_start() {
        let (pos, n) = locate(SAMPLE, &path("effects/Poison"));
        assert_eq!((pos, n), (pos_of(SAMPLE, r#""Poison""#), 2));
        let (pos, n) = locate(SAMPLE, &path("effects/Poison/modifiers/#1"));
        assert_eq!(n, 4);
        assert_eq!(pos, pos_of(SAMPLE, r#"(attribute: "Helth""#));
        let (pos, n) = locate(SAMPLE, &path("tags/#1"));
        assert_eq!((pos, n), (pos_of(SAMPLE, r#""Status.Burning""#), 2));
    }

    #[test]
    fn bare_identifier_and_quoted_map_keys() {
        let (pos, n) = locate(SAMPLE, &path("effects/Burn/modifiers"));
        assert_eq!((pos, n), (pos_of_nth(SAMPLE, "modifiers", 1), 3));
        let (pos, n) = locate(SAMPLE, &path("attributes/Max Health/default"));
        assert_eq!((pos, n), (pos_of_nth(SAMPLE, "default", 1), 3));
    }

    #[test]
    fn enum_variants_act_as_named_structs_and_tuples() {
        let (pos, n) = locate(SAMPLE, &path("effects/Poison/modifiers/#0/magnitude/coef"));
        assert_eq!((pos, n), (pos_of(SAMPLE, "coef"), 6));
        let (pos, n) = locate(SAMPLE, &path("effects/Poison/modifiers/#1/magnitude/#0"));
        assert_eq!((pos, n), (pos_of(SAMPLE, r#""Data.Damage""#), 6));
    }

    #[test]
    fn named_root_struct_with_attributes_and_comments() {
        let src = "\u{feff}#![enable(implicit_some)]\n#![enable(unwrap_newtypes)]\n/* header /* nested */ */\n// more\nContent (\n    version: 2,\n    name: \"x\",\n)\n";
        let (pos, n) = locate(src, &path("name"));
        assert_eq!((pos, n), (Position { line: 7, col: 5 }, 1));
        let (pos, n) = locate(src, &path("version"));
        assert_eq!((pos, n), (Position { line: 6, col: 5 }, 1));
    }

    #[test]
    fn comments_in_awkward_places() {
        let src = r#"(
    /* a ( [ { " ' */ first /* between */ : /* x */ [ 1, /* ) */ 2, // ] ,
      3 ],
    // second: wrong,
    second /* /* nested ] */ */ : { /* } */ "k" // "k": no
        : 5 },
)"#;
        let (pos, n) = locate(src, &path("first/#2"));
        assert_eq!((pos, n), (pos_of(src, "3 ]"), 2));
        let (pos, n) = locate(src, &path("second/k"));
        assert_eq!((pos, n), (pos_of(src, r#""k" //"#), 2));
        let (pos, n) = locate(src, &path("second"));
        assert_eq!((pos, n), (pos_of(src, "second /*"), 1));
    }

    #[test]
    fn strings_with_brackets_commas_and_quotes() {
        let src =
            r#"( a: "x, ) ] } ( [ {", b: "say \"hi\", (ok)\\", c: ["]", "\"", ",", "[["], d: 1 )"#;
        let (pos, n) = locate(src, &path("d"));
        assert_eq!((pos, n), (pos_of(src, "d: 1"), 1));
        let (pos, n) = locate(src, &path("c/#3"));
        assert_eq!((pos, n), (pos_of(src, r#""[[""#), 2));
        let (pos, n) = locate(src, &path("c/#4"));
        assert_eq!((pos, n), (pos_of(src, "c: ["), 1));
    }

    #[test]
    fn raw_strings_byte_strings_and_chars() {
        let src = r####"(
    raw: r"no \ escapes ( [",
    hashed: r##"contains "# and ")" and ]"##,
    bytes: b"bytes \" ) ]",
    raw_bytes: br#"raw " bytes )"#,
    chars: ['(', '\'', '"', ']', b'x', '\u{1F600}'],
    target: 42,
)"####;
        let (pos, n) = locate(src, &path("target"));
        assert_eq!((pos, n), (pos_of(src, "target"), 1));
        let (pos, n) = locate(src, &path("chars/#3"));
        assert_eq!((pos, n), (pos_of(src, "']'"), 2));
        let (pos, n) = locate(src, &path("chars/#5"));
        assert_eq!((pos, n), (pos_of(src, "'\\u{1F600}'"), 2));
    }

    #[test]
    fn map_keys_with_escapes_raw_strings_and_numbers() {
        let src = r###"{ "a\"b": 1, r#"raw"key"#: 2, 7: 3, -1: 4, "\u{48}i": 5, r#type: 6 }"###;
        assert_eq!(locate(src, &path("a\"b")), (pos_of(src, r#""a\"b""#), 1));
        assert_eq!(locate(src, &path("raw\"key")), (pos_of(src, "r#\"raw"), 1));
        assert_eq!(locate(src, &path("7")), (pos_of(src, "7:"), 1));
        assert_eq!(locate(src, &path("-1")), (pos_of(src, "-1"), 1));
        assert_eq!(locate(src, &path("Hi")), (pos_of(src, r#""\u{48}i""#), 1));
        assert_eq!(locate(src, &path("type")), (pos_of(src, "r#type"), 1));
    }

    #[test]
    fn numbers_are_skipped_as_single_elements() {
        let src = "(-4, 1.5e3, 0x1F, 1e-3, -inf, 1_000, +2.5E+2, 0x1E, NaN, last)";
        for (index, needle) in
            ["-4", "1.5e3", "0x1F", "1e-3", "-inf", "1_000", "+2.5E+2", "0x1E", "NaN", "last"]
                .iter()
                .enumerate()
        {
            assert_eq!(locate(src, &[PathSeg::Index(index)]), (pos_of(src, needle), 1));
        }
        assert_eq!(locate(src, &[PathSeg::Index(10)]).1, 0);
    }

    #[test]
    fn some_wrappers_are_transparent() {
        let src = "( a: Some((x: 1, y: 2)), b: Some(Some( Inner(z: 3) )), c: Some([10, 20]), d: Some(5), e: Some /* c */ (q: 1) )";
        assert_eq!(locate(src, &path("a/y")), (pos_of(src, "y: 2"), 2));
        assert_eq!(locate(src, &path("b/z")), (pos_of(src, "z: 3"), 2));
        assert_eq!(locate(src, &path("c/#1")), (pos_of(src, "20"), 2));
        // Falls back to treating `Some(5)` as a one-element tuple.
        assert_eq!(locate(src, &path("d/#0")), (pos_of(src, "5)"), 2));
        // A struct that happens to be named `Some` still works as a struct.
        assert_eq!(locate(src, &path("e/q")), (pos_of(src, "q: 1"), 2));
        // Implicit Some (no wrapper) needs no stepping.
        let (pos, n) = locate(SAMPLE, &path("effects/Poison/duration/#0"));
        assert_eq!((pos, n), (pos_of(SAMPLE, "5.0"), 4));
    }

    #[test]
    fn missing_key_reports_deepest_resolved_segment() {
        let (pos, n) = locate(SAMPLE, &path("effects/Poison/nope/attribute"));
        assert_eq!((pos, n), (pos_of(SAMPLE, r#""Poison""#), 2));
        let (pos, n) = locate(SAMPLE, &path("nothing"));
        assert_eq!((pos, n), (Position::START, 0));
        assert_eq!(locate(SAMPLE, &[]), (Position::START, 0));
        // A key does not match a value that merely equals it.
        assert_eq!(locate(SAMPLE, &path("tags/Status.Poisoned")).1, 1);
    }

    #[test]
    fn out_of_range_index_and_wrong_container_kinds() {
        let (pos, n) = locate(SAMPLE, &path("effects/Poison/modifiers/#2"));
        assert_eq!((pos, n), (pos_of_nth(SAMPLE, "modifiers: [", 0), 3));
        assert_eq!(locate(SAMPLE, &path("effects/Burn/modifiers/#0")).1, 3);
        // Index into a map and Key into a list do not resolve.
        assert_eq!(locate(SAMPLE, &path("effects/#0")).1, 1);
        assert_eq!(locate(SAMPLE, &path("tags/x")).1, 1);
        // Nor does anything inside a scalar.
        assert_eq!(locate(SAMPLE, &path("effects/Poison/modifiers/#0/attribute/x")).1, 5);
    }

    #[test]
    fn trailing_commas_and_tuples() {
        let src = "( pair: (1, (2, 3),), named: Point(4, 5,), list: [a, b,], )";
        assert_eq!(locate(src, &path("pair/#1/#1")), (pos_of(src, "3)"), 3));
        assert_eq!(locate(src, &path("named/#1")), (pos_of(src, "5,"), 2));
        assert_eq!(locate(src, &path("list/#1")), (pos_of(src, "b,"), 2));
        assert_eq!(locate(src, &path("list/#2")).1, 1);
        assert_eq!(locate(src, &path("pair/#2")).1, 1);
    }

    #[test]
    fn multibyte_utf8_before_target_counts_chars() {
        let src = "( name: \"ÄÖÜ 日本語 🎉\", label: 'é', next: 1 )\n( ünïcode: \"🎉🎉\", x: 2 )";
        let (pos, n) = locate(src, &path("next"));
        assert_eq!(n, 1);
        assert_eq!(pos, Position { line: 1, col: 34 });
        assert_eq!(pos, pos_of(src, "next"));
    }

    #[test]
    fn unicode_identifiers_and_crlf() {
        let src = "(\r\n  ünïcode: [\r\n    1,\r\n    2,\r\n  ],\r\n)\r\n";
        assert_eq!(locate(src, &path("ünïcode")), (Position { line: 2, col: 3 }, 1));
        assert_eq!(locate(src, &path("ünïcode/#1")), (Position { line: 4, col: 5 }, 2));
    }

    #[test]
    fn malformed_inputs_do_not_panic_and_resolve_what_they_can() {
        let cases = [
            "",
            "(",
            ")",
            "]]]",
            "(a: ",
            "(a: [1, 2",
            "(a: \"unterminated",
            "(a: r##\"x\"#",
            "/* unterminated",
            "#![",
            "#",
            "(: 1, , a: 2)",
            "{\"k\" 1}",
            "('",
            "(b'",
            "(r#",
            "(a: 1 ] b: 2)",
            "(a: Some(",
            "Some(Some(Some(",
        ];
        for src in cases {
            for spec in ["a", "a/#0", "#0/#1", "k", "b"] {
                let (pos, n) = locate(src, &path(spec));
                assert!(pos.line >= 1 && pos.col >= 1 && n <= 2, "{src:?} {spec}");
            }
        }
        // Truncated, but the requested item is complete.
        assert_eq!(locate("(a: [1, 2", &path("a/#1")), (Position { line: 1, col: 9 }, 2));
        // A stray closing bracket ends the container.
        assert_eq!(locate("(a: 1 ] b: 2)", &path("b")).1, 0);
    }

    #[test]
    fn every_prefix_of_sample_is_safe() {
        let paths = [
            path("effects/Poison/modifiers/#1/attribute"),
            path("effects/Poison/modifiers/#0/magnitude/coef"),
            path("attributes/Max Health/default"),
            path("tags/#1"),
            path("effects/Burn/modifiers/#0"),
        ];
        let doc = format!("{SAMPLE}\n/* ü 🎉 */ r#\"raw\"# b\"x\" '\\'' 'ü'");
        for (end, _) in doc.char_indices() {
            let prefix = &doc[..end];
            for p in &paths {
                let (pos, n) = locate(prefix, p);
                assert!(n <= p.len());
                assert!(pos.line >= 1 && pos.col >= 1);
            }
        }
        // Suffixes too, which start in the middle of strings and comments.
        for (start, _) in doc.char_indices() {
            for p in &paths {
                let _ = locate(&doc[start..], p);
            }
        }
    }

    #[test]
    fn pseudo_random_garbage_does_not_panic() {
        const ALPHABET: &[&str] = &[
            "(", ")", "[", "]", "{", "}", ",", ":", "\"", "'", "\\", "r", "#", "b", "/", "*",
            "Some", "a", "0", "-", "e", " ", "\n", "ü", "🎉", ".",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let paths = [path("a"), path("#0/a/#1"), path("Some/#0"), path("a/a/a/a")];
        for _ in 0..2000 {
            let len = (next() % 40) as usize;
            let src: String =
                (0..len).map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize]).collect();
            for p in &paths {
                let (pos, n) = locate(&src, p);
                assert!(n <= p.len() && pos.line >= 1 && pos.col >= 1, "{src:?}");
            }
        }
    }

    #[test]
    fn deeply_nested_input_does_not_overflow() {
        let deep = "[".repeat(200_000);
        assert_eq!(locate(&deep, &path("#0/#0/#0")).1, 3);
        let some = "Some(".repeat(50_000);
        let _ = locate(&some, &path("a/#0"));
        let closed = format!("{}{}", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(locate(&format!("(x: {closed}, y: 1)"), &path("y")).1, 1);
    }

    thread_local! {
        /// Chars the scanner has read on this thread (counted by `Scanner::at`).
        pub(super) static READS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
    }

    /// A document of `n` effects and the scanner reads locating the last one's value.
    fn reads_to_locate_last(n: usize) -> (usize, u64) {
        let mut src = String::from("( effects: {\n");
        for i in 0..n {
            src.push_str(&format!(
                "    \"E{i}\": (tags: [\"a\", \"b\"], value: {i}, note: \"(]}}\"),\n"
            ));
        }
        src.push_str("} )\n");
        READS.with(|r| r.set(0));
        let (pos, resolved) = locate(&src, &path(&format!("effects/E{}/value", n - 1)));
        assert_eq!(resolved, 3);
        assert_eq!(pos, pos_of(&src, &format!("value: {}", n - 1)));
        (src.len(), READS.with(|r| r.get()))
    }

    #[test]
    fn large_documents_are_scanned_in_linear_work() {
        // Work is counted in chars read, not timed: a scan that restarted per key or per
        // bracket would read quadratically many.
        let (len_a, reads_a) = reads_to_locate_last(10_000);
        let (len_b, reads_b) = reads_to_locate_last(20_000);
        assert!(len_b > 1_000_000, "{len_b}");
        assert!(reads_a <= 8 * len_a as u64, "{reads_a} reads for {len_a} bytes");
        assert!(reads_b <= 8 * len_b as u64, "{reads_b} reads for {len_b} bytes");
        // Twice the document, about twice the reads.
        assert!(reads_b * 10 <= reads_a * 22, "{reads_a} then {reads_b}");
    }

    #[test]
    fn render_formats_paths() {
        assert_eq!(
            render(&path("effects/Poison/modifiers/#1/attribute")),
            "effects.Poison.modifiers[1].attribute"
        );
        assert_eq!(render(&path("attributes/Max Health")), "attributes.\"Max Health\"");
        assert_eq!(render(&path("tags/Data.Damage")), "tags.Data.Damage");
        assert_eq!(render(&[PathSeg::Index(3), PathSeg::Index(0)]), "[3][0]");
        assert_eq!(render(&[PathSeg::Key(String::new())]), "\"\"");
        assert_eq!(render(&path("a\"b\\c")), r#""a\"b\\c""#);
        assert_eq!(render(&path("ü")), "\"ü\"");
        assert_eq!(render(&[]), "");
        assert_eq!(Position { line: 3, col: 7 }.to_string(), "3:7");
    }

    #[test]
    fn render_round_trips_through_locate() {
        let p = path("effects/Poison/modifiers/#0/magnitude/coef");
        let (pos, n) = locate(SAMPLE, &p);
        assert_eq!(n, p.len());
        assert_eq!(
            format!("{} at {pos}", render(&p)),
            "effects.Poison.modifiers[0].magnitude.coef at 13:68"
        );
    }

    /// A realistic content file for `path_at`.
    const CONTENT: &str = r#"(
    tags: ["Data.Damage", "GameplayCue.Poison"],
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 100, min: Konst(0)),
        }),
    },
    effects: {
        "Poison": (
            duration: Frames(5000000000),
            period: Frames(60) // every second
            , modifiers: [
                (attribute: "Health", op: Add, magnitude: Scalable(coef: -1)),
                (attribute: "Health", op: Plus, magnitudee: Scalable(coef: "1.2.3")),
                (attribute: "Health", op: Add, magnitude: Attribute((attribute: "Health", side: Target))),
            ],
        ),
    },
)
"#;

    fn keys(spec: &str) -> Vec<PathSeg> {
        if spec.is_empty() { Vec::new() } else { path(spec) }
    }

    /// `path_at` at the position of `needle` (its `nth` occurrence), rendered.
    fn at(source: &str, needle: &str, nth: usize) -> String {
        render(&path_at(source, pos_of_nth(source, needle, nth)))
    }

    #[test]
    fn path_at_unknown_field_in_nested_modifier() {
        // ron reports an unknown field at its key token.
        assert_eq!(at(CONTENT, "magnitudee", 0), "effects.Poison.modifiers[1].magnitudee");
        // Anywhere inside the key, and on the colon after it, is the same entry.
        let p = pos_of(CONTENT, "magnitudee");
        let inside = Position { col: p.col + 4, ..p };
        assert_eq!(render(&path_at(CONTENT, inside)), "effects.Poison.modifiers[1].magnitudee");
        let colon = Position { col: p.col + 10, ..p };
        assert_eq!(render(&path_at(CONTENT, colon)), "effects.Poison.modifiers[1].magnitudee");
    }

    #[test]
    fn path_at_bad_enum_variant() {
        assert_eq!(at(CONTENT, "Plus", 0), "effects.Poison.modifiers[1].op");
        assert_eq!(at(CONTENT, "Konst", 0), "attribute_sets.Vitals.attributes.Health.min");
        // A struct-like variant's fields and a newtype-of-struct variant's payload.
        assert_eq!(at(CONTENT, "coef: -1", 0), "effects.Poison.modifiers[0].magnitude.coef");
        assert_eq!(at(CONTENT, "Target", 0), "effects.Poison.modifiers[2].magnitude[0].side");
    }

    #[test]
    fn path_at_bad_number_string_and_out_of_range_integer() {
        // ron reports a bad decimal string just inside its opening quote.
        let p = pos_of(CONTENT, "\"1.2.3\"");
        let inside = Position { col: p.col + 1, ..p };
        assert_eq!(
            render(&path_at(CONTENT, inside)),
            "effects.Poison.modifiers[1].magnitudee.coef"
        );
        // An out-of-range integer in a tuple variant is that variant's element.
        assert_eq!(at(CONTENT, "5000000000", 0), "effects.Poison.duration[0]");
    }

    #[test]
    fn path_at_closing_bracket_names_the_container() {
        // A missing field is reported at the closing bracket of its struct.
        let src = "(effects: {\"P\": (modifiers: [(attribute: \"H\", op: Add )]) })";
        assert_eq!(at(src, ")]", 0), "effects.P.modifiers[0]");
        assert_eq!(at(src, "]", 0), "effects.P.modifiers");
        assert_eq!(at(src, "}", 0), "effects");
        // The opening bracket and the name of a value belong to the value's entry.
        assert_eq!(at(src, "[", 0), "effects.P.modifiers");
        assert_eq!(at(CONTENT, "Scalable(coef: -1", 0), "effects.Poison.modifiers[0].magnitude");
    }

    #[test]
    fn path_at_gaps_between_entries() {
        // Trivia right after an entry (a missing comma) names that entry.
        assert_eq!(at(CONTENT, " // every second", 0), "effects.Poison.period");
        assert_eq!(at(CONTENT, "every second", 0), "effects.Poison.period");
        // The comma right after it too, but after the comma the gap is the container's.
        let src = "(tags: [\"A\", \"B\",, \"C\"])";
        assert_eq!(at(src, ",,", 0), "tags[1]");
        assert_eq!(at(src, ", \"C\"", 0), "tags");
        assert_eq!(at(src, "\"C\"", 0), "tags[2]");
        // Before the first entry.
        assert_eq!(at("( [ , 1])", ", 1", 0), "[0]");
        assert_eq!(render(&path_at("( tags: [] )", Position { line: 1, col: 2 })), "");
    }

    #[test]
    fn path_at_positions_past_the_end() {
        let far = Position { line: 999, col: 999 };
        // A complete file: past the end is after the top-level value.
        assert_eq!(path_at(CONTENT, far), keys(""));
        // A column past the end of its line is the end of that line.
        let line_end = Position { line: pos_of(CONTENT, "period").line, col: 500 };
        assert_eq!(render(&path_at(CONTENT, line_end)), "effects.Poison.period");
        // Line or column 0 reads as 1.
        assert_eq!(path_at(CONTENT, Position { line: 0, col: 0 }), keys(""));
        assert_eq!(path_at("", far), keys(""));
        assert_eq!(path_at("", Position::START), keys(""));
    }

    #[test]
    fn path_at_truncated_files() {
        let far = Position { line: u32::MAX, col: u32::MAX };
        // Truncated right after a value: that value.
        let src = "(effects: {\"P\": (duration: Frames(5)";
        assert_eq!(render(&path_at(src, far)), "effects.P.duration");
        let src = "(effects: {\"P\": (duration: Frames(5";
        assert_eq!(render(&path_at(src, far)), "effects.P.duration[0]");
        let src = "(effects: {\"P\": (duration: Frames(5) ";
        assert_eq!(render(&path_at(src, far)), "effects.P.duration");
        // Truncated after a comma: the definition still open.
        let src = "(effects: {\"P\": (duration: Frames(5), ";
        assert_eq!(render(&path_at(src, far)), "effects.P");
        // Truncated after a key, inside a string, inside a comment.
        assert_eq!(render(&path_at("(effects: {\"P\": (duration: ", far)), "effects.P.duration");
        assert_eq!(render(&path_at("(tags: [\"A\", \"B", far)), "tags[1]");
        assert_eq!(render(&path_at("(tags: [\"A\" /* x", far)), "tags[0]");
        assert_eq!(render(&path_at("(", far)), "");
        // Every prefix of a realistic file resolves without panicking, to a path that
        // `locate` can find again in the same prefix (but for a map key still being typed,
        // which has no colon yet and so is an element).
        for (end, _) in CONTENT.char_indices() {
            let prefix = &CONTENT[..end];
            let p = path_at(prefix, far);
            assert!(p.len() <= 8, "{prefix:?}");
            assert!(locate(prefix, &p).1 + 1 >= p.len(), "{prefix:?} {p:?}");
        }
    }

    #[test]
    fn path_at_multibyte_chars_crlf_and_bom() {
        let src = "\u{feff}(\r\n  tags: [\"Ünï.Cödé\", \"日本\", \"🎉\"],\r\n  effects: { \"Ä\": (period: Frames(1)) },\r\n)";
        // Columns count chars, and a leading BOM is not counted (as in `locate`).
        assert_eq!(path_at(src, Position { line: 2, col: 3 }), keys("tags"));
        assert_eq!(render(&path_at(src, pos_of(src, "🎉"))), "tags[2]");
        assert_eq!(at(src, "\"🎉\"", 0), "tags[2]");
        assert_eq!(at(src, "Frames", 0), "effects.\"Ä\".period");
        // The comma right after the tag list still names it; the end of the line (after the
        // comma) is the gap of the top-level struct.
        assert_eq!(at(src, "],", 0), "tags");
        let comma = pos_of(src, "],");
        assert_eq!(path_at(src, Position { col: comma.col + 1, ..comma }), keys("tags"));
        assert_eq!(path_at(src, Position { line: 2, col: 500 }), keys(""));
    }

    #[test]
    fn path_at_some_wrappers_are_transparent() {
        let src = "(duration: Some(Frames(0)), stacking: Some((kind: ByTarget, limit: 0)))";
        assert_eq!(at(src, "0)", 0), "duration[0]");
        assert_eq!(at(src, "limit", 0), "stacking.limit");
        assert_eq!(at(src, "Some((", 0), "stacking");
    }

    #[test]
    fn path_at_inverts_locate() {
        for spec in [
            "tags/#1",
            "attribute_sets/Vitals/attributes/Health/min",
            "effects/Poison/duration/#0",
            "effects/Poison/modifiers/#0",
            "effects/Poison/modifiers/#1/magnitudee/coef",
            "effects/Poison/modifiers/#2/magnitude/#0/attribute",
            "effects/Poison/modifiers/#2/magnitude/#0/side",
        ] {
            let (pos, n) = locate(CONTENT, &path(spec));
            assert_eq!(n, path(spec).len(), "{spec}");
            assert_eq!(path_at(CONTENT, pos), path(spec), "{spec} at {pos}");
        }
        let (pos, _) = locate(SAMPLE, &path("effects/Poison/modifiers/#1/attribute"));
        assert_eq!(path_at(SAMPLE, pos), path("effects/Poison/modifiers/#1/attribute"));
    }

    #[test]
    fn path_at_agrees_with_ron_error_positions() {
        // End to end: the positions ron reports for syntax errors map to the items at fault.
        let cases = [
            ("(effectz: {})", "effectz"),
            ("(effects: {\"P\": (durationn: Frames(5))})", "effects.P.durationn"),
            ("(effects: {\"P\": (duration: Frame(5))})", "effects.P.duration"),
            ("(effects: {\"P\": (duration: Frames(5) period: Frames(1))})", "effects.P.period"),
            ("(effects: {\"P\": (duration: Frames(5) ", "effects.P.duration"),
            ("(effects: {\"P\": (stacking: (kind: ByTarget)) })", "effects.P.stacking"),
            ("(curves: {\"C\": (points: [(1, \"x\")]) })", "curves.C.points[0][1]"),
            ("(settings: (tick_rate: 70000))", "settings.tick_rate"),
            (
                "(effects: {\"P\": (cues: [(tag: \"GameplayCue.X\", events: Sometimes)])})",
                "effects.P.cues[0].events",
            ),
        ];
        for (src, want) in cases {
            let Err(e) = super::super::freeze::parse_raw("t.ron", src) else {
                panic!("{src} parses")
            };
            let pos = Position { line: e.line, col: e.col };
            assert_eq!(render(&path_at(src, pos)), want, "{src}: {e}");
            assert_eq!(e.path, want, "{src}: {e}");
        }
    }

    #[test]
    fn path_at_never_panics_on_garbage() {
        const ALPHABET: &[&str] = &[
            "(", ")", "[", "]", "{", "}", ",", ":", "\"", "'", "\\", "r", "#", "b", "/", "*",
            "Some", "a", "0", "-", "e", " ", "\n", "ü", "🎉", ".",
        ];
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            let len = (next() % 40) as usize;
            let src: String =
                (0..len).map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize]).collect();
            for _ in 0..4 {
                let pos = Position { line: (next() % 4) as u32, col: (next() % 45) as u32 };
                let p = path_at(&src, pos);
                assert!(p.len() <= src.len(), "{src:?} {pos}");
            }
        }
        let deep = "[".repeat(100_000);
        assert_eq!(path_at(&deep, Position { line: 1, col: 4 }).len(), 3);
        assert_eq!(path_at(&deep, Position { line: 9, col: 9 }).len(), 99_999);
    }
}
