//! Replays the fuzz targets' committed inputs (`fuzz/corpus/<target>/*`, the minimised corpora,
//! and `fuzz/regressions/<target>/*`, every finding of the fuzzers, kept after its fix) and the
//! built-in seeds through `rollback_abilities_kit::fuzz`: each must run without a panic. See
//! `fuzz/README.md`.

use rollback_abilities_kit::fuzz::{self, TARGETS};
use std::path::{Path, PathBuf};

fn inputs(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join(kind).join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.retain(|p| p.is_file());
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, bytes)
        })
        .collect()
}

fn replay_all(target: &str) -> usize {
    let f = TARGETS.iter().find(|(n, _)| *n == target).map(|(_, f)| *f).unwrap();
    let mut n = 0;
    for seed in fuzz::seeds(target) {
        f(&seed);
        n += 1;
    }
    for kind in ["corpus", "regressions"] {
        for (path, bytes) in inputs(kind, target) {
            let r = std::panic::catch_unwind(|| f(&bytes));
            assert!(r.is_ok(), "fuzz target {target} panics on {}", path.display());
            n += 1;
        }
    }
    n
}

#[test]
fn fuzz_content_inputs() {
    assert!(replay_all("content") >= 4);
}

#[test]
fn fuzz_replay_inputs() {
    assert!(replay_all("replay") >= 4);
}

#[test]
fn fuzz_scenario_inputs() {
    assert!(replay_all("scenario") >= 1);
}

#[test]
fn fuzz_step_inputs_inputs() {
    assert!(replay_all("step_inputs") >= 3);
}

#[test]
fn fuzz_determinism_inputs() {
    assert!(replay_all("determinism") >= 3);
}

#[test]
fn fuzz_presenter_inputs() {
    assert!(replay_all("presenter") >= 3);
}

/// Every target has a corpus and a regression folder, and `run` knows every target.
#[test]
fn fuzz_targets_are_all_listed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for (name, _) in TARGETS {
        assert!(fuzz::run(name, b""), "{name}");
        let bin = root.join("fuzz_targets").join(format!("{name}.rs"));
        assert!(bin.is_file(), "{} is missing", bin.display());
    }
    assert!(!fuzz::run("no-such-target", b""));
}

/// The replay regressions are in the current format: left behind by a format change, they would
/// stop at the version check instead of reaching what they guard (a keyframe refused by
/// validation, a header in a non-canonical spelling).
#[test]
fn replay_regressions_decode_in_the_current_format() {
    let found = inputs("regressions", "replay");
    assert!(found.len() >= 2);
    for (path, bytes) in found {
        let (&flags, rest) = bytes.split_first().unwrap();
        let mut b = rest.to_vec();
        if flags & 1 == 1 {
            let n = b.len() - 8;
            let sum = twox_hash::XxHash3_64::oneshot(&b[..n]);
            b[n..].copy_from_slice(&sum.to_le_bytes());
        }
        let r = rollback_abilities::replay::Replay::decode(&b);
        assert!(r.is_ok(), "{}: {:?}", path.display(), r.err());
    }
}

#[test]
fn fuzz_session_inputs() {
    assert!(replay_all("session") >= 3);
}
