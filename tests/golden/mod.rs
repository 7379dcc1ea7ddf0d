//! Golden checksums: the reference content (the duel with 2, 3 and 4 bot-driven fighters, and
//! every shipped scenario in `examples/scenarios/`) stepped for a fixed number of frames must
//! give the checksums committed in `tests/golden/checksums.txt`, in debug and release builds and
//! on every architecture (CI also runs this module on wasm32-wasip1 under wasmtime, through the
//! small package in `tests/golden/cross/`, see `.ci/run`).
//!
//! A change that legitimately changes the snapshot (a new column, another layout, different
//! content) changes these numbers; regenerate them with one command and commit the file:
//!
//! ```sh
//! GOLDEN_UPDATE=1 cargo test --test integration golden
//! ```
//!
//! This file uses only the library's public API, the kit (`examples/kit`: the duel and the
//! arena) and `std`, so the cross-architecture runner can include it as it is (`#[path]`).

use rollback_abilities::Hooks;
use rollback_abilities::scenario::{Scenario, record};
use rollback_abilities_kit::arena::{Arena, ArenaSpec};
use rollback_abilities_kit::duel;

/// The committed expectations: `name frame checksum` lines (hex), `#` comments.
pub const GOLDEN: &str = include_str!("checksums.txt");

/// The shipped scenarios, embedded so the runner needs no file system (their content is inline).
pub const SCENARIOS: &[(&str, &str)] = &[
    ("as01_base_vs_current", include_str!("../../examples/scenarios/as01_base_vs_current.ron")),
    (
        "as02_two_ten_percent_buffs",
        include_str!("../../examples/scenarios/as02_two_ten_percent_buffs.ron"),
    ),
    ("as03_multiplier_table", include_str!("../../examples/scenarios/as03_multiplier_table.ron")),
    (
        "as10_cooldown_in_frames",
        include_str!("../../examples/scenarios/as10_cooldown_in_frames.ron"),
    ),
    ("as13_stacking_poison", include_str!("../../examples/scenarios/as13_stacking_poison.ron")),
    ("as16_stun", include_str!("../../examples/scenarios/as16_stun.ron")),
    ("as24_cues_exactly_once", include_str!("../../examples/scenarios/as24_cues_exactly_once.ron")),
];

/// Frames of each duel run (a full round is 1800; 1200 covers fights, KOs and regeneration).
pub const DUEL_FRAMES: u32 = 1200;

/// Fighters and frames of the reference arena's run (docs/performance.md): every feature the
/// benchmarks time, so an optimisation that changes behaviour fails here.
pub const ARENA: (u32, u32) = (32, 600);

/// Computes every golden line: `(name, frame, checksum)`; frame `-` lines are content hashes.
pub fn compute() -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    let mut arena = Arena::new(ArenaSpec { entities: ARENA.0, ..Default::default() });
    out.push(("arena/content_hash".to_string(), "-".to_string(), arena.world.content().hash()));
    for f in 0..ARENA.1 {
        arena.step();
        if (f + 1) % 150 == 0 {
            out.push((format!("arena/{}", ARENA.0), (f + 1).to_string(), arena.world.checksum()));
        }
    }
    out.push(("duel/content_hash".to_string(), "-".to_string(), duel::content().hash()));
    for fighters in 2..=duel::MAX_FIGHTERS {
        let mut w = duel::new_world(0x5EED + fighters as u64, fighters);
        for f in 0..DUEL_FRAMES {
            let inputs: Vec<duel::Input> =
                (0..fighters).map(|p| duel::bot_input(&w, p, f, 11 + p as u64)).collect();
            w.step(&inputs);
            if (f + 1) % 300 == 0 {
                out.push((format!("duel/{fighters}p"), (f + 1).to_string(), w.checksum()));
            }
        }
    }
    for (name, text) in SCENARIOS {
        let s = Scenario::from_str(text, &format!("{name}.ron"), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let replay = record(&s, &Hooks::<rollback_abilities::scenario::ScenarioGame>::new())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        out.push((format!("scenario/{name}/content_hash"), "-".into(), replay.header.content_hash));
        let n = replay.frames.len();
        let mut marks = vec![n / 4, n / 2, 3 * n / 4, n];
        marks.dedup();
        for m in marks.into_iter().filter(|m| *m > 0) {
            out.push((format!("scenario/{name}"), m.to_string(), replay.frames[m - 1].checksum));
        }
    }
    out
}

/// The lines of the golden file for `lines`.
pub fn render(lines: &[(String, String, u64)]) -> String {
    let mut s = String::from(
        "# Golden checksums (see tests/golden/mod.rs). Regenerate after an intended change:\n\
         #   GOLDEN_UPDATE=1 cargo test --test integration golden\n\
         # name frame checksum (frame: checksum after that many frames; '-': a content hash)\n",
    );
    for (name, frame, sum) in lines {
        s.push_str(&format!("{name} {frame} {sum:016x}\n"));
    }
    s
}

/// Compares computed lines with the golden text; every difference is listed.
pub fn compare(golden: &str, lines: &[(String, String, u64)]) -> Result<usize, String> {
    let want: Vec<(&str, &str, &str)> = golden
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut p = l.split_whitespace();
            Some((p.next()?, p.next()?, p.next()?))
        })
        .collect();
    let got: Vec<(String, String, String)> =
        lines.iter().map(|(n, f, s)| (n.clone(), f.clone(), format!("{s:016x}"))).collect();
    let mut errors = Vec::new();
    for (n, f, s) in &got {
        match want.iter().find(|(wn, wf, _)| wn == n && wf == f) {
            Some((_, _, ws)) if ws == s => {}
            Some((_, _, ws)) => errors.push(format!("{n} @ {f}: golden {ws}, computed {s}")),
            None => errors.push(format!("{n} @ {f}: not in the golden file (computed {s})")),
        }
    }
    for (wn, wf, _) in &want {
        if !got.iter().any(|(n, f, _)| n == wn && f == wf) {
            errors.push(format!("{wn} @ {wf}: in the golden file but not computed"));
        }
    }
    if errors.is_empty() {
        Ok(got.len())
    } else {
        Err(format!(
            "{} golden checksum(s) differ on {} ({}):\n  {}\n(after an intended change: \
             GOLDEN_UPDATE=1 cargo test --test integration golden)",
            errors.len(),
            std::env::consts::ARCH,
            if cfg!(debug_assertions) { "debug" } else { "release" },
            errors.join("\n  ")
        ))
    }
}

#[cfg(test)]
#[test]
fn golden_checksums() {
    let lines = compute();
    if std::env::var_os("GOLDEN_UPDATE").is_some_and(|v| v == "1") {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/checksums.txt");
        std::fs::write(&path, render(&lines)).unwrap();
        eprintln!("wrote {} golden checksums to {}", lines.len(), path.display());
        return;
    }
    if let Err(e) = compare(GOLDEN, &lines) {
        panic!("{e}");
    }
}
