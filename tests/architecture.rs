//! The layer rule of `docs/architecture.md`, checked against the source.
//!
//! The document's `layers` block lists the crate's modules bottom-up; a module may name
//! (`crate::…`, or `super::…` reaching out of its folder) only modules listed before it. The test
//! reads that block, scans every file under `src/` (comments and `#[cfg(test)]` modules
//! left out) and fails on any reference to a module listed later, or to a module the block
//! does not list, naming the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The module order from the `layers` block: module → (layer name, position).
fn layers() -> BTreeMap<String, (String, usize)> {
    let doc =
        std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md");
    let block = doc
        .split("```text layers\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/architecture.md has a ```text layers block");
    let mut order = BTreeMap::new();
    let mut at = 0;
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let (layer, modules) = line.split_once(':').expect("`layer: modules…` lines");
        for m in modules.split_whitespace() {
            let m = m.trim_end_matches(',').trim_end_matches('/').trim_end_matches(".rs");
            order.insert(m.to_string(), (layer.trim().to_string(), at));
            at += 1;
        }
    }
    order
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The source without comments (line and block) and without a trailing `#[cfg(test)] mod`.
fn code(text: &str) -> Vec<(usize, String)> {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = Vec::new();
    let mut in_block = false;
    for (n, line) in text.lines().enumerate() {
        let mut kept = String::new();
        let mut rest = line;
        loop {
            if in_block {
                match rest.find("*/") {
                    Some(i) => {
                        rest = &rest[i + 2..];
                        in_block = false;
                    }
                    None => break,
                }
            } else {
                let lc = rest.find("//");
                let bc = rest.find("/*");
                match (lc, bc) {
                    (Some(l), Some(b)) if b < l => {
                        kept.push_str(&rest[..b]);
                        rest = &rest[b + 2..];
                        in_block = true;
                    }
                    (None, Some(b)) => {
                        kept.push_str(&rest[..b]);
                        rest = &rest[b + 2..];
                        in_block = true;
                    }
                    (Some(l), _) => {
                        kept.push_str(&rest[..l]);
                        break;
                    }
                    (None, None) => {
                        kept.push_str(rest);
                        break;
                    }
                }
            }
        }
        out.push((n + 1, kept));
    }
    out
}

/// Every top-level module (or root item) a file names through `crate::`, with the line:
/// `crate::a::…`, `crate::Item`, and each path opening a `crate::{a::X, b::{Y, Z}, Item}` group
/// (which may span lines).
fn references(text: &str) -> Vec<(usize, String)> {
    references_after(text, "crate::")
}

/// [`references`] for paths opening with `prefix` (`crate::`, `super::`, `crate::scenario::`).
fn references_after(text: &str, prefix: &str) -> Vec<(usize, String)> {
    let lines = code(text);
    let mut joined = String::new();
    let mut line_of = Vec::new();
    for (n, l) in &lines {
        joined.push_str(l);
        joined.push('\n');
        line_of.extend(std::iter::repeat_n(*n, l.len() + 1));
    }
    let ident = |s: &str| -> String {
        s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
    };
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = joined[from..].find(prefix) {
        let at = from + i;
        let after = &joined[at + prefix.len()..];
        from = at + prefix.len();
        if let Some(group) = after.strip_prefix('{') {
            // The group's top-level entries, up to its closing brace.
            let mut depth = 0;
            let mut entry_start = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => entry_start = true,
                    c if entry_start && !c.is_whitespace() => {
                        entry_start = false;
                        let name = ident(&group[k..]);
                        if !name.is_empty() {
                            out.push((line_of[at], name));
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident(after);
            if !name.is_empty() {
                out.push((line_of[at], name));
            }
        }
    }
    out
}

/// The crate root's re-exports: item name → the module it comes from (`pub use m::{A, B};`).
fn root_items() -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let mut items = BTreeMap::new();
    let mut rest = lib.as_str();
    while let Some(i) = rest.find("pub use ") {
        rest = &rest[i + 8..];
        let stmt = rest.split(';').next().unwrap_or("");
        let Some((module, names)) = stmt.split_once("::") else { continue };
        let module = module.trim();
        for name in names.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() && module != "crate" {
                items.insert(name.to_string(), module.to_string());
            }
        }
    }
    items
}

/// The `exceptions` block: `from -> to` pairs that break the rule today.
fn exceptions() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let Some(block) = doc.split("```text exceptions\n").nth(1) else { return Vec::new() };
    let block = block.split("```").next().unwrap_or("");
    block
        .lines()
        .filter_map(|l| l.split_once("->"))
        .map(|(a, b)| (a.trim().to_string(), b.split_whitespace().next().unwrap_or("").to_string()))
        .collect()
}

/// Module → module references that break the order, with one example location each.
fn violations() -> (BTreeMap<(String, String), String>, Vec<String>) {
    let order = layers();
    let items = root_items();
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut found = BTreeMap::new();
    let mut unplaced = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
        let top = top.trim_end_matches(".rs").to_string();
        if top == "lib" || top == "bin" {
            continue;
        }
        let Some((_, at)) = order.get(&top) else {
            unplaced.push(format!("src/{}: module `{top}` is in no layer", rel.display()));
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for (line, name) in references(&text) {
            let name = items.get(&name).cloned().unwrap_or(name);
            if name == top || name == "prelude" || name == "crate" {
                continue;
            }
            match order.get(&name) {
                None => unplaced.push(format!(
                    "src/{}:{line}: `{top}` names `crate::{name}`, which no layer lists",
                    rel.display()
                )),
                Some((_, other)) if other > at => {
                    found
                        .entry((top.clone(), name.clone()))
                        .or_insert_with(|| format!("src/{}:{line}", rel.display()));
                }
                Some(_) => {}
            }
        }
    }
    (found, unplaced)
}

#[test]
fn modules_import_only_the_layers_below_them() {
    let (found, unplaced) = violations();
    let allowed = exceptions();
    let mut problems = unplaced;
    for module in layers().keys() {
        let src = root().join("src");
        if !src.join(module).is_dir() && !src.join(format!("{module}.rs")).is_file() {
            problems
                .push(format!("docs/architecture.md lists `{module}`, which src/ does not have"));
        }
    }
    for ((from, to), at) in &found {
        if !allowed.iter().any(|(a, b)| a == from && b == to) {
            problems.push(format!("{at}: `{from}` imports `{to}`, which is listed after it"));
        }
    }
    for (from, to) in &allowed {
        if !found.contains_key(&(from.clone(), to.clone())) {
            problems.push(format!(
                "the exception `{from} -> {to}` no longer occurs: remove it from docs/architecture.md"
            ));
        }
    }
    assert!(problems.is_empty(), "{} layer problems:\n{}", problems.len(), problems.join("\n"));
}

/// The names of the functions `text` defines (`fn name`).
fn defined_fns(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for (_, line) in code(text) {
        let mut rest = line.as_str();
        while let Some(i) = rest.find("fn ") {
            let before = rest[..i].chars().last();
            rest = &rest[i + 3..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let name: String =
                rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// The world's rule of `docs/architecture.md`: in one button press the ability part calls
/// down into the effect, attribute and tag parts, never the other way. No method defined only
/// under `src/world/abilities/` is called from `src/world/effects/`, `src/world/attributes.rs`
/// or `src/world/tags.rs` (nor from the tag table and the effect store under them), except the
/// grants an effect makes.
#[test]
fn effects_attributes_and_tags_do_not_call_into_abilities() {
    const GRANTS: [&str; 2] = ["grant_from_effect", "ungrant_from_effect"];
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let abilities = src.join("world/abilities");
    let mut ability_fns = std::collections::BTreeSet::new();
    let mut other_fns = std::collections::BTreeSet::new();
    for f in &files {
        let names = defined_fns(&std::fs::read_to_string(f).unwrap());
        if f.starts_with(&abilities) {
            ability_fns.extend(names);
        } else {
            other_fns.extend(names);
        }
    }
    let only_abilities: Vec<&String> = ability_fns.difference(&other_fns).collect();
    assert!(only_abilities.iter().any(|n| *n == "try_activate"), "the ability part was found");
    let below = |f: &Path| {
        f.starts_with(src.join("world/effects"))
            || f == src.join("world/attributes.rs")
            || f == src.join("world/tags.rs")
            || f == src.join("world/tag_table.rs")
            || f == src.join("world/effect_store.rs")
    };
    let mut problems = Vec::new();
    for f in files.iter().filter(|f| below(f)) {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        for (line, text) in code(&std::fs::read_to_string(f).unwrap()) {
            for name in only_abilities.iter().filter(|n| !GRANTS.contains(&n.as_str())) {
                if text.contains(&format!(".{name}(")) {
                    problems.push(format!("{rel}:{line}: calls `{name}` of world/abilities/"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The owning parts of the world (`docs/architecture.md`) are compiled once: they name neither
/// the game nor the world, and reach the rest of `world/` only for the snapshot's record types
/// and column names (`world::state`); the world calls them.
#[test]
fn the_worlds_owning_parts_do_not_name_the_game_or_the_world() {
    const PARTS: [&str; 3] =
        ["world/tag_table.rs", "world/attribute_table.rs", "world/effect_store.rs"];
    let mut problems = Vec::new();
    for part in PARTS {
        let text = std::fs::read_to_string(root().join("src").join(part)).unwrap();
        for (line, code) in code(&text) {
            let words = code.split(|c: char| !(c.is_alphanumeric() || c == '_'));
            for word in words.filter(|w| ["Game", "World", "State", "super"].contains(w)) {
                problems.push(format!("src/{part}:{line}: names `{word}`"));
            }
        }
        for (line, name) in references_after(&text, "crate::world::") {
            if name != "state" {
                problems.push(format!("src/{part}:{line}: reaches `world::{name}`"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The files of folder module `folder` under `src/` (its `mod.rs` left out: it declares and
/// re-exports them) → the sibling files each one names (`super::x`, `crate::<folder>::x`), with
/// where.
fn sibling_imports(folder: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let dir = root().join("src").join(folder);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let stem = |p: &Path| p.file_stem().unwrap().to_string_lossy().into_owned();
    let files: Vec<PathBuf> =
        files.into_iter().filter(|p| p.parent() == Some(&*dir) && stem(p) != "mod").collect();
    let siblings: Vec<String> = files.iter().map(|p| stem(p)).collect();
    let mut graph = BTreeMap::new();
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        let mut names = BTreeMap::new();
        for prefix in ["super::", &format!("crate::{folder}::")] {
            for (line, name) in references_after(&text, prefix) {
                if siblings.contains(&name) && name != stem(p) {
                    names.entry(name).or_insert(format!("src/{folder}/{}.rs:{line}", stem(p)));
                }
            }
        }
        graph.insert(stem(p), names);
    }
    graph
}

/// A cycle in `graph` (file → the files it names), as the files around it, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        graph: &BTreeMap<String, BTreeMap<String, String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut found = path[i..].to_vec();
            found.push(at.to_string());
            return Some(found);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_string());
        for next in graph.get(at).into_iter().flat_map(|n| n.keys()) {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(at.to_string());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    graph.keys().find_map(|start| visit(start, graph, &mut Vec::new(), &mut done))
}

#[test]
fn scenario_files_import_each_other_one_way() {
    let graph = sibling_imports("scenario");
    assert!(graph.contains_key("resolve") && graph["resolve"].contains_key("check"));
    if let Some(files) = cycle(&graph) {
        let steps: Vec<String> = files
            .windows(2)
            .map(|w| format!("{} -> {} ({})", w[0], w[1], graph[&w[0]][&w[1]]))
            .collect();
        panic!("the files of src/scenario/ import each other in a cycle:\n{}", steps.join("\n"));
    }
}
