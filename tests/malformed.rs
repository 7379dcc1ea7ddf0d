//! Malformed input at every boundary, case by case: each case asserts the typed error (its
//! variant) and its message, and that nothing was written. Content cases are in
//! `content_errors.rs`, scenario files in `scenario_files.rs` (`malformed_scenarios_are_located`);
//! this file holds replays (damaged, foreign, truncated and crafted: resealed with a valid
//! integrity check over a tampered snapshot). The command-line tool's arguments are the kit's
//! (`examples/kit/tests/cli_args.rs`).

use rollback_abilities::SnapshotError;
use rollback_abilities::World;
use rollback_abilities::replay::{Recorder, Replay, ReplayError};
use rollback_abilities_kit::duel::{self, Duel};

/// A 2-fighter duel replay of 40 frames with keyframes every 10.
fn duel_replay() -> (Replay, Vec<u8>) {
    let mut w = duel::new_world(7, 2);
    let mut rec = Recorder::new(&w, 10);
    for f in 0..40u32 {
        let inputs: Vec<duel::Input> = (0..2).map(|p| duel::bot_input(&w, p, f, 3)).collect();
        w.step(&inputs);
        rec.push(f, &inputs, w.checksum()).unwrap();
        if rec.keyframe_due(w.next_frame()) {
            rec.keyframe(&w);
        }
    }
    let r = rec.finish();
    let bytes = r.encode();
    (r, bytes)
}

fn world() -> World<Duel> {
    duel::new_world(7, 2)
}

/// Decoding errors: (case, bytes, expected variant check, message fragment).
#[test]
fn replay_decode_errors_are_typed_and_explained() {
    let (_, good) = duel_replay();
    let n = good.len();
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        b
    };
    let reseal = |b: &mut Vec<u8>| {
        let m = b.len() - 8;
        let sum = twox_hash::XxHash3_64::oneshot(&b[..m]);
        b[m..].copy_from_slice(&sum.to_le_bytes());
    };
    type Check = fn(&ReplayError) -> bool;
    let cases: Vec<(&str, Vec<u8>, Check, &str)> = vec![
        // Said as it is, not "ends at byte 0, in the middle of its magic bytes".
        (
            "empty file",
            Vec::new(),
            |e| matches!(e, ReplayError::Empty),
            "the file is empty (0 bytes): not a replay file",
        ),
        (
            "a few bytes that are not the magic's start",
            b"hi\n".to_vec(),
            |e| matches!(e, ReplayError::BadMagic),
            "does not start with \"RBAREPLY\"",
        ),
        (
            "the magic's first bytes only",
            b"RBARE".to_vec(),
            |e| matches!(e, ReplayError::Truncated { what: "magic bytes", offset: 5 }),
            "ends at byte 5, in the middle of its magic bytes",
        ),
        (
            "foreign file",
            b"PK\x03\x04 a zip, not a replay".to_vec(),
            |e| matches!(e, ReplayError::BadMagic),
            "does not start with \"RBAREPLY\"",
        ),
        (
            "future version",
            with(&|b| b[8] = 9),
            |e| matches!(e, ReplayError::UnsupportedVersion { found: 9 }),
            "version 9 is not supported",
        ),
        (
            "cut in the header",
            good[..30].to_vec(),
            |e| matches!(e, ReplayError::Truncated { what: "header", offset: 30 }),
            "ends at byte 30, in the middle of its header",
        ),
        (
            "cut in the frames",
            good[..n / 2].to_vec(),
            |e| matches!(e, ReplayError::Truncated { .. }),
            "the file is incomplete",
        ),
        (
            "integrity check missing",
            good[..n - 8].to_vec(),
            |e| matches!(e, ReplayError::Truncated { what: "integrity check", .. }),
            "integrity check",
        ),
        (
            "one flipped input bit",
            with(&|b| b[n - 200] ^= 0x40),
            |e| matches!(e, ReplayError::Corrupted { .. }),
            "integrity check failed",
        ),
        (
            "bytes after the end",
            with(&|b| b.extend_from_slice(b"junk")),
            |e| matches!(e, ReplayError::TrailingBytes { after: "integrity check", count: 4 }),
            "4 unexpected bytes after the integrity check",
        ),
        (
            "resealed header that is not RON",
            with(&|b| {
                b[16] = b'#';
                reseal(b);
            }),
            |e| matches!(e, ReplayError::BadHeader { .. } | ReplayError::Truncated { .. }),
            "replay",
        ),
    ];
    assert_eq!(cases.len(), 11);
    for (name, bytes, check, fragment) in cases {
        let e = Replay::decode(&bytes).expect_err(name);
        assert!(check(&e), "{name}: {e:?}");
        let text = e.to_string();
        assert!(text.contains(fragment), "{name}: {text:?} lacks {fragment:?}");
    }
}

/// Errors when a decoded replay meets a world: foreign content, other capacities, a frame gap
/// while recording, a missing file, and crafted snapshots (the `replay` fuzz target's finding:
/// a keyframe tampered with and the integrity check recomputed used to panic in the next step).
#[test]
fn replay_use_errors_are_typed_and_explained() {
    let (r, _) = duel_replay();
    // Foreign content: the arena's world.
    let mut arena = rollback_abilities_kit::arena::Arena::new(Default::default()).world;
    let e = r.verify(&mut arena).unwrap_err();
    assert!(matches!(e, ReplayError::ContentMismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("load the content it was recorded with"), "{e}");
    // Other capacities: a 3-fighter duel.
    let mut three = duel::new_world(7, 3);
    let e = r.verify(&mut three).unwrap_err();
    assert!(matches!(e, ReplayError::ConfigMismatch { .. }), "{e:?}");
    assert!(e.to_string().starts_with("the replay does not fit this world"), "{e}");
    // A frame gap while recording.
    let w = world();
    let mut rec = Recorder::new(&w, 0);
    let e = rec.push(5, &[duel::Input::default(); 2], 0).unwrap_err();
    assert_eq!(e, ReplayError::FrameGap { expected: 0, got: 5 });
    assert_eq!(e.to_string(), "frames must be consecutive: expected 0, got 5");
    // A missing file.
    let e = Replay::read(std::path::Path::new("/no/such/dir/x.replay")).unwrap_err();
    assert!(matches!(&e, ReplayError::Io { kind: std::io::ErrorKind::NotFound, .. }), "{e:?}");
    assert!(e.to_string().contains("/no/such/dir/x.replay"), "{e}");
    // A snapshot of the wrong size (another layout), resealed.
    let mut short = r.clone();
    short.initial.truncate(short.initial.len() - 1);
    let short = Replay::decode(&short.encode()).unwrap();
    let e = short.verify(&mut world()).unwrap_err();
    assert!(
        matches!(e, ReplayError::Snapshot { keyframe: None, error: SnapshotError::LayoutMismatch }),
        "{e:?}"
    );
    assert!(e.to_string().contains("different content or capacities"), "{e}");
}

/// Crafted snapshots inside a validly sealed replay: every id, count and link the simulation
/// indexes with is checked on load ([`World::load_bytes`]); the world is left unchanged.
#[test]
fn crafted_snapshots_are_rejected_not_stepped() {
    let (r, _) = duel_replay();
    let fresh = world();
    let mut w = world();
    // Byte offsets of columns in the snapshot.
    let mut offsets = std::collections::BTreeMap::new();
    let mut at = 0usize;
    fresh.for_each_column(|_, name, b| {
        offsets.insert(name, (at, b.len()));
        at += b.len();
    });
    let tamper = |column: &str, rel: usize, bytes: &[u8]| -> Replay {
        let mut t = r.clone();
        let (start, len) = offsets[column];
        assert!(rel + bytes.len() <= len, "{column}");
        t.initial[start + rel..start + rel + bytes.len()].copy_from_slice(bytes);
        // Resealed: a valid integrity check over the tampered bytes.
        Replay::decode(&t.encode()).unwrap()
    };
    let cases: Vec<(&str, Replay, &str)> = vec![
        // The first ability spec's definition id (offset 0 of the record): 42 of 5.
        ("ability def", tamper("ability_specs", 0, &42u16.to_le_bytes()), "ability_specs[0].def"),
        // The entity free list pointing past the slots ever used.
        ("free list", tamper("header", 24, &7u32.to_le_bytes()), "free_head"),
        // An entity claiming more active effects than its slots.
        ("effect count", tamper("entities", 20, &999u32.to_le_bytes()), "entities[0].n_effects"),
        // A wake frame later than the entity's earliest timer (its executions would be skipped).
        ("wake frame", tamper("entity_wake", 0, &123_456u32.to_le_bytes()), "entity_wake[0]"),
        // The origin pool claiming a used record that no effect points at.
        ("origin pool", tamper("header", 56, &1u32.to_le_bytes()), "effect_origins[0].target"),
        // The stored-spec high-water mark past the pool (the duel keeps none: 0 slots).
        ("spec mark", tamper("header", 60, &1u32.to_le_bytes()), "header.specs_high_water"),
        // The origin pool's length past its capacity.
        ("origin count", tamper("header", 56, &u32::MAX.to_le_bytes()), "header.origins_len"),
        // An unused origin record that is not zero (saves and checksums skip it).
        ("origin tail", tamper("effect_origins", 8, &[1]), "effect_origins: the bytes past"),
        // The last entity slot's game component (past the high-water mark: never used) changed.
        (
            "fresh slot",
            tamper("components", offsets["components"].1 - 1, &[1]),
            "components: the bytes past",
        ),
        // The first effect pointing into the origin pool at a record that is not its own.
        ("effect origin", tamper("effects", 36, &0u32.to_le_bytes()), "effects[0][0].origin"),
    ];
    for (name, t, field) in cases {
        let before = w.state_bytes();
        let e = t.verify(&mut w).unwrap_err();
        match &e {
            ReplayError::Snapshot { keyframe: None, error: SnapshotError::Invalid(m) } => {
                assert!(m.to_string().contains(field), "{name}: {m}")
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(e.to_string().contains("not a valid state of this world"), "{name}: {e}");
        assert_eq!(w.state_bytes(), before, "{name}: a rejected snapshot changed the world");
        let e = w.load_bytes(&t.initial).unwrap_err();
        assert!(matches!(e, SnapshotError::Invalid(_)), "{name}: {e:?}");
    }
    // The untampered replay still verifies.
    assert!(r.verify(&mut w).unwrap().is_ok());
}

/// Validation accepts every state a world can really be in: empty (slots past the high-water
/// mark are still zeroed), with entities, and with a free list after despawns.
#[test]
fn valid_states_pass_snapshot_validation() {
    use rollback_abilities::prelude::*;
    struct G;
    impl Game for G {
        type Input = u8;
        type Component = ();
        type Global = ();
    }
    let content = std::sync::Arc::new(
        Content::from_ron_str(r#"(attribute_sets: { "V": (attributes: { "Health": () }) })"#)
            .unwrap(),
    );
    let mut w = World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
    let mut fresh =
        World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
    fresh.load_bytes(&w.state_bytes()).expect("an empty world");
    let set = content.attr_set("V").unwrap();
    let ents: Vec<_> = (0..5).map(|_| w.spawn_actor(&[set]).unwrap()).collect();
    w.step(&[0, 0]);
    fresh.load_bytes(&w.state_bytes()).expect("a world with entities");
    w.despawn(ents[1]);
    w.despawn(ents[3]);
    w.step(&[0, 0]);
    fresh.load_bytes(&w.state_bytes()).expect("a world with a free list");
    assert_eq!(fresh.checksum(), w.checksum());
    let _ = w.spawn_actor(&[set]).unwrap();
    fresh.load_bytes(&w.state_bytes()).expect("a world that reused a slot");
}
