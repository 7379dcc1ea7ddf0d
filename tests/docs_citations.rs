//! The repository cites only what it ships.
//!
//! Every feature, determinism-rule, gotcha and acceptance-scenario id (`F-<AREA>-nn`, `D-n`,
//! `G-nn`, `AS-nn`) written in the docs, sources, tests, examples, benchmarks and fuzz files must
//! be defined in `docs/features.md` (a table row starting with the id), and no file may cite a
//! document the repository does not ship (the private design notes the crate was built from, or
//! bare section numbers of external documents: link those by URL instead).
//!
//! Ids are recognised when written in full (`F-GC-06, F-GC-07`, not `F-GC-06, 07`); a range
//! written as two full ids joined by an ellipsis cites every id in between.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// What is scanned, relative to the crate root.
const ROOTS: &[&str] =
    &["docs", "src", "tests", "examples", "benches", "fuzz", "README.md", "CHANGELOG.md"];

/// The text files scanned, by extension.
const EXTENSIONS: &[&str] = &["rs", "md", "ron", "toml"];

/// Citations of documents the repository does not ship. Assembled at run time so this file does
/// not contain them itself.
fn unshipped() -> Vec<String> {
    [["GAS", "_SPEC"], ["GD", " §"], ["GD", "-KR"], ["CM", " §"], ["GAS", " §"], ["DESIGN", " §"]]
        .iter()
        .map(|parts| parts.concat())
        .collect()
}

fn skipped_dir(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "target" || name.starts_with("corpus") || name.starts_with('.')
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        if skipped_dir(path) {
            return;
        }
        let mut entries: Vec<PathBuf> = fs::read_dir(path)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", path.display()))
            .map(|entry| entry.expect("directory entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            collect(&entry, out);
        }
    } else if path.extension().and_then(|x| x.to_str()).is_some_and(|x| EXTENSIONS.contains(&x)) {
        out.push(path.to_path_buf());
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// An id found in a text: its normalised form (`AS10` → `AS-10`), its prefix (`F-GE-`), its
/// number, the number's digit count, and its byte span.
struct Found {
    id: String,
    prefix: String,
    number: u32,
    width: usize,
    start: usize,
    end: usize,
}

/// Parses an id starting at byte `i` (which must follow neither a word byte nor a `-`).
fn id_at(t: &[u8], i: usize) -> Option<Found> {
    let digits_from = |mut j: usize| {
        let from = j;
        while j < t.len() && t[j].is_ascii_digit() {
            j += 1;
        }
        (j > from).then_some((from, j))
    };
    let (prefix, digits) = if t[i..].starts_with(b"F-") {
        let mut j = i + 2;
        while j < t.len() && t[j].is_ascii_uppercase() {
            j += 1;
        }
        if j == i + 2 || j >= t.len() || t[j] != b'-' {
            return None;
        }
        (String::from_utf8_lossy(&t[i..=j]).into_owned(), digits_from(j + 1)?)
    } else if t[i..].starts_with(b"D-") || t[i..].starts_with(b"G-") {
        (String::from_utf8_lossy(&t[i..i + 2]).into_owned(), digits_from(i + 2)?)
    } else if t[i..].starts_with(b"AS-") {
        ("AS-".to_string(), digits_from(i + 3)?)
    } else if t[i..].starts_with(b"AS") {
        ("AS-".to_string(), digits_from(i + 2)?)
    } else {
        return None;
    };
    let (from, end) = digits;
    if end < t.len() && is_word(t[end]) {
        return None;
    }
    let text = std::str::from_utf8(&t[from..end]).ok()?;
    Some(Found {
        id: format!("{prefix}{text}"),
        prefix,
        number: text.parse().ok()?,
        width: end - from,
        start: i,
        end,
    })
}

/// Every id a text cites, with the byte offset of the citation; ranges are expanded.
fn cited(text: &str) -> Vec<(String, usize)> {
    let t = text.as_bytes();
    let mut found: Vec<Found> = Vec::new();
    let mut i = 0;
    while i < t.len() {
        if (i == 0 || !(is_word(t[i - 1]) || t[i - 1] == b'-'))
            && let Some(f) = id_at(t, i)
        {
            i = f.end;
            found.push(f);
            continue;
        }
        i += 1;
    }
    let mut out: Vec<(String, usize)> = found.iter().map(|f| (f.id.clone(), f.start)).collect();
    for pair in found.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let between = text[a.end..b.start].trim_matches(' ');
        if (between == "…" || between == "...") && a.prefix == b.prefix && a.number < b.number {
            for n in a.number + 1..b.number {
                out.push((format!("{}{n:0w$}", a.prefix, w = a.width), a.start));
            }
        }
    }
    out
}

/// The ids `docs/features.md` defines: the first cell of its table rows.
fn defined(catalogue: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for line in catalogue.lines() {
        let Some(row) = line.strip_prefix('|') else { continue };
        let cell =
            row.split('|').next().unwrap_or("").trim().trim_matches(|c| c == '*' || c == '`');
        let found = cited(cell);
        if found.len() == 1 && found[0].0 == cell {
            assert!(ids.insert(cell.to_string()), "docs/features.md defines {cell} twice");
        }
    }
    ids
}

#[test]
fn docs_cite_only_ids_defined_in_the_feature_catalogue_and_only_shipped_documents() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let catalogue = fs::read_to_string(root.join("docs/features.md"))
        .expect("docs/features.md: the feature catalogue");
    let known = defined(&catalogue);
    assert!(known.len() > 100, "docs/features.md defines only {} ids", known.len());

    let mut files = Vec::new();
    for r in ROOTS {
        collect(&root.join(r), &mut files);
    }
    assert!(files.len() > 50, "only {} files found under {}", files.len(), root.display());

    let needles = unshipped();
    let mut undefined = Vec::new();
    let mut unshipped_citations = Vec::new();
    for file in &files {
        let Ok(text) = fs::read_to_string(file) else { continue };
        let name = file.strip_prefix(root).unwrap_or(file).display().to_string();
        let line_of = |at: usize| text[..at].matches('\n').count() + 1;
        for (id, at) in cited(&text) {
            if !known.contains(&id) {
                undefined.push(format!("{name}:{}: {id}", line_of(at)));
            }
        }
        for needle in &needles {
            for (at, _) in text.match_indices(needle.as_str()) {
                unshipped_citations.push(format!("{name}:{}: {needle}", line_of(at)));
            }
        }
    }
    assert!(
        undefined.is_empty() && unshipped_citations.is_empty(),
        "ids not defined in docs/features.md:\n  {}\ncitations of documents the repository does \
         not ship:\n  {}",
        undefined.join("\n  "),
        unshipped_citations.join("\n  "),
    );
}

#[test]
fn the_citation_scanner_reads_ids_ranges_and_boundaries() {
    let ids = |t: &str| cited(t).into_iter().map(|(id, _)| id).collect::<Vec<_>>();
    assert_eq!(ids("see F-GE-07 and G-03."), ["F-GE-07", "G-03"]);
    assert_eq!(ids("rules D-1 … D-3"), ["D-1", "D-3", "D-2"]);
    assert_eq!(ids("F-TGT-01...F-TGT-03"), ["F-TGT-01", "F-TGT-03", "F-TGT-02"]);
    assert_eq!(ids("const AS10: &str; AS-24"), ["AS-10", "AS-24"]);
    assert_eq!(ids("X-D-1 CASE10 AD-3 G-1x f_ge_01 AS-nn F-<AREA>-nn"), Vec::<String>::new());
    let catalogue = "| Id | x |\n|---|---|\n| F-GE-01 | a |\n| **D-2** | b |\n| G-01, G-02 | c |\n";
    assert_eq!(defined(catalogue).into_iter().collect::<Vec<_>>(), ["D-2", "F-GE-01"]);
}

/// `examples/first_ability.rs` is the program of the guide's §1.3, character for character
/// (after the example's own `//!` header): a newcomer can read it in the guide and run it with
/// `cargo run --example first_ability`.
#[test]
fn first_ability_matches_the_guide() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = fs::read_to_string(root.join("docs/guide.md")).expect("docs/guide.md");
    let example = fs::read_to_string(root.join("examples/first_ability.rs")).expect("the example");
    let section = guide.find("### 1.3 The code").expect("the guide has §1.3");
    let start = section + guide[section..].find("```rust\n").expect("a rust block") + 8;
    let end = start + guide[start..].find("\n```\n").expect("the block ends");
    let in_guide = &guide[start..=end];
    let body: String = example
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        body == in_guide,
        "examples/first_ability.rs and docs/guide.md §1.3 differ; first differing line: {:?}",
        body.lines().zip(in_guide.lines()).find(|(a, b)| a != b)
    );
}

/// The first ability's behaviours look no name up and unwrap nothing: ids are looked up once
/// in `main`, where a misspelt name is a `ContentError` with "did you mean".
#[test]
fn first_ability_looks_ids_up_at_start_up() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = fs::read_to_string(root.join("examples/first_ability.rs")).expect("the example");
    for f in ["fn punch_activate", "fn punch_task"] {
        let start = example.find(f).unwrap_or_else(|| panic!("{f} in the example"));
        let end = start + example[start..].find("\n}\n").expect("the function ends");
        let body = &example[start..end];
        for banned in [".unwrap()", ".expect(", ".tag(\"", ".effect(\""] {
            assert!(!body.contains(banned), "{f} uses {banned} in the step:\n{body}");
        }
    }
    assert!(example.contains("Ids::look_up(&content)?"), "main looks the ids up");
}

/// The commands the README and the guides give write their files under `target/` (which git
/// ignores), never into the repository's root.
#[test]
fn documented_commands_write_under_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    for doc in ["README.md", "docs/guide.md", "docs/replays.md"] {
        let text = fs::read_to_string(root.join(doc)).expect("the document");
        for (n, line) in text.lines().enumerate() {
            if !line.contains("cargo run") {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                let written = ["--replay", "--out", "--plot", "--replay-dir", "--trace"];
                if written.contains(&pair[0]) && !pair[1].starts_with("target/") {
                    bad.push(format!("{doc}:{}: {line}", n + 1));
                }
            }
        }
    }
    assert!(bad.is_empty(), "commands writing outside target/:\n{}", bad.join("\n"));
}
