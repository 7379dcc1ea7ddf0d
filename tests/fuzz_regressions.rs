//! The replay fuzz regression `fuzz/regressions/replay/resealed-keyframe-bad-ability-def`, made
//! again from the current duel and replay format, and a test that it still reaches what it
//! guards.
//!
//! The finding (fuzz/README.md, finding 1): a replay whose keyframe bytes were altered and whose
//! integrity check was recomputed ("resealed") made seeking panic in the first step after the
//! keyframe was loaded (an ability id past the content). `World::load_bytes` now validates
//! snapshot bytes, so the seek must fail with a typed error naming the field. A regression
//! file left behind by a change of the duel's content or of the snapshot layout stops at the
//! content check or at the snapshot's length instead: the test below catches that, and
//!
//! ```sh
//! REGENERATE_FUZZ_REGRESSIONS=1 cargo test --test integration fuzz_regressions -- --ignored
//! ```
//!
//! writes the file again.

use rollback_abilities::SnapshotError;
use rollback_abilities::debug::WorldDump;
use rollback_abilities::replay::{Recorder, Replay, ReplayError};
use rollback_abilities_kit::duel;
use std::path::PathBuf;

const NAME: &str = "resealed-keyframe-bad-ability-def";
/// The keyframe tampered with, and the frame the fuzz target seeks to (`flags >> 1`).
const KEYFRAME: u32 = 16;
/// The ability id written into the keyframe (the duel has far fewer).
const BAD_DEF: u16 = 42;

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/replay").join(NAME)
}

/// A 24-frame, 2-player duel replay (seed 7, keyframes every 8 frames) whose keyframe at frame
/// 16 names ability definition 42 in its first granted ability slot, with the integrity check
/// of the unaltered file: the leading flags byte is odd (the fuzz target recomputes the check,
/// as a deliberate tamperer would) and asks for a seek to frame 16.
fn build() -> Vec<u8> {
    let mut w = duel::new_world(7, 2);
    let mut rec = Recorder::new(&w, 8);
    for f in 0..24 {
        if rec.keyframe_due(f) {
            rec.keyframe(&w);
        }
        let inputs: Vec<duel::Input> =
            (0..2).map(|p| duel::bot_input(&w, p, f, 11 + p as u64)).collect();
        w.step(&inputs);
        rec.push(f, &inputs, w.checksum()).unwrap();
    }
    let replay = rec.finish();
    let mut bytes = replay.encode();

    // Where the keyframe's bytes are in the file (docs/replays.md's layout).
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let mut at = 8 + 4;
    at += 4 + u32_at(&bytes, at) as usize; // header
    at += 8 + u64_at(&bytes, at) as usize; // initial state
    let frames = u32_at(&bytes, at) as usize;
    at += 4 + frames * (replay.frames[0].inputs.len() + replay.frames[0].statuses.len() + 8);
    let keyframes = u32_at(&bytes, at);
    at += 4;
    let mut state = None;
    for _ in 0..keyframes {
        let (frame, len) = (u32_at(&bytes, at), u64_at(&bytes, at + 4) as usize);
        if frame == KEYFRAME {
            state = Some(at + 12);
        }
        at += 12 + len;
    }
    let state = state.expect("the keyframe at frame 16");

    // The first granted ability slot in the keyframe's `ability_specs` column.
    let columns = WorldDump::of_world(&w).columns;
    let mut col = state;
    for c in &columns {
        if c.name == "ability_specs" {
            break;
        }
        col += c.record_size as usize * c.count as usize;
    }
    let specs = columns.iter().find(|c| c.name == "ability_specs").unwrap();
    let size = specs.record_size as usize;
    // `AbilitySpec`: def (u16), level, generation, flags (bit 0: granted).
    let slot = (0..specs.count as usize)
        .map(|i| col + i * size)
        .find(|r| u16::from_le_bytes([bytes[r + 6], bytes[r + 7]]) & 1 == 1)
        .expect("a granted ability");
    bytes[slot..slot + 2].copy_from_slice(&BAD_DEF.to_le_bytes());

    let mut out = vec![1 | ((KEYFRAME as u8) << 1)];
    out.extend_from_slice(&bytes);
    out
}

/// What the fuzz target does with the file: reseal, decode, and seek on a duel world.
fn seek(file: &[u8]) -> Result<(), ReplayError> {
    let (&flags, rest) = file.split_first().unwrap();
    assert_eq!(flags & 1, 1, "resealed");
    let mut b = rest.to_vec();
    let n = b.len() - 8;
    let sum = twox_hash::XxHash3_64::oneshot(&b[..n]);
    assert_ne!(b[n..], sum.to_le_bytes(), "the file carries the unaltered file's check");
    b[n..].copy_from_slice(&sum.to_le_bytes());
    let r = Replay::decode(&b).expect("decodes in the current format");
    let mut w = duel::try_new_world(r.header.seed, usize::from(r.header.players)).unwrap();
    r.header.check(&w).expect("fits today's duel: content, hooks, configuration");
    // Straight re-simulation never reads the keyframe; bisection finds it differs.
    assert!(r.verify(&mut w).unwrap().is_ok());
    assert_eq!(r.bisect(&mut w).unwrap(), Some(KEYFRAME));
    r.seek(&mut w, u32::from(flags >> 1))
}

/// The committed regression is today's: it decodes, fits the duel, and the seek it makes is
/// refused by snapshot validation, naming the tampered field (before the fix: a panic in the
/// next step).
#[test]
fn the_bad_ability_def_regression_reaches_the_snapshot_validation() {
    let file = std::fs::read(path()).unwrap();
    match seek(&file) {
        Err(ReplayError::Snapshot {
            keyframe: Some(KEYFRAME),
            error: SnapshotError::Invalid(f),
        }) => {
            assert!(f.column == "ability_specs" && f.record.is_some() && f.field == "def", "{f}");
        }
        other => panic!("{other:?}"),
    }
    // It is exactly what `build` makes from today's duel.
    assert!(file == build(), "stale: regenerate it (see the module documentation)");
    assert!(rollback_abilities_kit::fuzz::run("replay", &file));
}

/// Writes the regression file again (run with `REGENERATE_FUZZ_REGRESSIONS=1`).
#[test]
#[ignore = "writes fuzz/regressions/replay/resealed-keyframe-bad-ability-def"]
fn regenerate_the_bad_ability_def_regression() {
    if std::env::var_os("REGENERATE_FUZZ_REGRESSIONS").is_some_and(|v| v == "1") {
        std::fs::write(path(), build()).unwrap();
    }
}
