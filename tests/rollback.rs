//! Rollback invariance: byte-equal round trips and random rollbacks over random operations.

use crate::common::*;
use proptest::prelude::*;
use rollback_abilities::prelude::*;
use rollback_abilities::session::{Determinism, DeterminismFailure, DeterminismReport};
use std::sync::Arc;

/// One scripted operation, applied in phase P6 of its frame.
#[derive(Clone, Debug)]
pub enum Op {
    Apply { effect: usize, source: usize, target: usize, level: u16 },
    Remove { target: usize, nth: usize },
    RemoveStacks { target: usize, nth: usize, stacks: u16 },
    SetBase { target: usize, attr: usize, value: i32 },
    AddLoose { target: usize, tag: usize },
    RemoveLoose { target: usize, tag: usize },
    SetLevel { target: usize, nth: usize, level: u16 },
    Extend { target: usize, nth: usize, frames: i32 },
    SetRemaining { target: usize, nth: usize, frames: u32 },
    Respawn { target: usize },
}

const EFFECTS: &[&str] = &[
    "Poison", "Stun", "Slow", "Haste", "Fortify", "Aura", "Shield", "Strike", "Drain", "Heal",
    "Grow", "Cleanse",
];
const ATTRS: &[&str] =
    &["Health", "MaxHealth", "Vitality", "Mana", "Armor", "Speed", "AttackPower"];
const TAGS: &[&str] = &["State.Debuff.Stun", "State.Dead", "Immune.Poison", "State.Buff.Shield"];
const ACTORS: usize = 4;

pub fn rich_world(seed: u64) -> (World<Plain>, Vec<Entity>) {
    let content = Arc::new(Content::from_ron_str(RICH).expect("RICH content"));
    let config = WorldConfig {
        max_entities: 8,
        effects_per_entity: 12,
        players: 2,
        seed,
        ..WorldConfig::default()
    };
    let mut w = World::new(content.clone(), &rich_hooks(), config).expect("world");
    let sets = [content.attr_set("Vitals").unwrap(), content.attr_set("Power").unwrap()];
    let actors = (0..ACTORS).map(|_| w.spawn_actor(&sets).unwrap()).collect();
    (w, actors)
}

/// Runs one op. Entities are looked up by slot so respawned actors are found again.
pub fn run_op(w: &mut World<Plain>, actors: &[Entity], op: &Op) {
    let c = w.content().clone();
    let live = |w: &World<Plain>, i: usize| -> Entity {
        let idx = actors[i % actors.len()].index;
        w.entities().find(|e| e.index == idx).unwrap_or(actors[i % actors.len()])
    };
    match *op {
        Op::Apply { effect, source, target, level } => {
            let def = c.effect(EFFECTS[effect % EFFECTS.len()]).unwrap();
            let src = live(w, source);
            let mut spec = w.make_spec(def, level.max(1), src);
            spec.set_set_by_caller(
                c.tag("Data.Duration").unwrap(),
                rollback_abilities::num::int(30),
            );
            spec.set_set_by_caller(
                c.tag("Data.Damage").unwrap(),
                rollback_abilities::num::int(-50),
            );
            let t = live(w, target);
            let _ = w.apply_effect(spec, t);
        }
        Op::Remove { target, nth } => {
            let t = live(w, target);
            if let Some(h) = w.effects(t).get(nth % 4).map(|e| e.handle(t)) {
                w.remove_effect(h);
            }
        }
        Op::RemoveStacks { target, nth, stacks } => {
            let t = live(w, target);
            if let Some(h) = w.effects(t).get(nth % 4).map(|e| e.handle(t)) {
                w.remove_effect_stacks(h, stacks);
            }
        }
        Op::SetBase { target, attr, value } => {
            let t = live(w, target);
            w.set_base(
                t,
                c.attr(ATTRS[attr % ATTRS.len()]).unwrap(),
                rollback_abilities::num::int(value.into()),
            );
        }
        Op::AddLoose { target, tag } => {
            let t = live(w, target);
            w.add_loose_tag(t, c.tag(TAGS[tag % TAGS.len()]).unwrap());
        }
        Op::RemoveLoose { target, tag } => {
            let t = live(w, target);
            w.remove_loose_tag(t, c.tag(TAGS[tag % TAGS.len()]).unwrap());
        }
        Op::SetLevel { target, nth, level } => {
            let t = live(w, target);
            if let Some(h) = w.effects(t).get(nth % 4).map(|e| e.handle(t)) {
                w.set_effect_level(h, level);
            }
        }
        Op::Extend { target, nth, frames } => {
            let t = live(w, target);
            if let Some(h) = w.effects(t).get(nth % 4).map(|e| e.handle(t)) {
                w.extend_effect(h, frames);
            }
        }
        Op::SetRemaining { target, nth, frames } => {
            let t = live(w, target);
            if let Some(h) = w.effects(t).get(nth % 4).map(|e| e.handle(t)) {
                w.set_remaining(h, frames);
            }
        }
        Op::Respawn { target } => {
            let t = live(w, target);
            w.despawn(t);
            let sets = [c.attr_set("Vitals").unwrap(), c.attr_set("Power").unwrap()];
            let _ = w.spawn_actor(&sets);
        }
    }
}

/// A deterministic pseudo-random op list (no proptest), for fixed-seed tests.
pub fn ops_for(seed: u64, frames: u32) -> Vec<Vec<Op>> {
    let mut s = rollback_abilities::random::Stream::derive(seed, &[]);
    (0..frames)
        .map(|_| {
            (0..s.below(3))
                .map(|_| {
                    let a = s.below(12) as usize;
                    let b = s.below(4) as usize;
                    let c = s.below(4) as usize;
                    match s.below(20) {
                        0..=8 => Op::Apply {
                            effect: a,
                            source: b,
                            target: c,
                            level: 1 + s.below(5) as u16,
                        },
                        9 => Op::Remove { target: c, nth: a },
                        10 => Op::RemoveStacks { target: c, nth: a, stacks: 1 },
                        11 => {
                            Op::SetBase { target: c, attr: a, value: s.range_inclusive(-20, 200) }
                        }
                        12 | 13 => Op::AddLoose { target: c, tag: a },
                        14 => Op::RemoveLoose { target: c, tag: a },
                        15 => Op::SetLevel { target: c, nth: a, level: 1 + s.below(5) as u16 },
                        16 => Op::Extend { target: c, nth: a, frames: s.range_inclusive(-30, 30) },
                        17 => Op::SetRemaining { target: c, nth: a, frames: s.below(40) },
                        _ => Op::Respawn { target: c },
                    }
                })
                .collect()
        })
        .collect()
}

fn run_straight(seed: u64, ops: &[Vec<Op>]) -> (World<Plain>, Vec<u64>) {
    let (mut w, actors) = rich_world(seed);
    let mut sums = Vec::new();
    for frame_ops in ops {
        w.step_with(&[0, 0], |w| frame_ops.iter().for_each(|op| run_op(w, &actors, op)));
        sums.push(w.checksum());
    }
    (w, sums)
}

/// Save at frame k, keep stepping, load k, re-step: identical bytes at every later frame.
#[test]
fn byte_equal_round_trip_at_every_later_frame() {
    let ops = ops_for(11, 240);
    let (mut w, actors) = rich_world(3);
    let mut bytes_after = Vec::new();
    let mut snap_at_k = None;
    let k = 60;
    for (f, frame_ops) in ops.iter().enumerate() {
        if f == k {
            snap_at_k = Some(w.snapshot());
        }
        w.step_with(&[0, 0], |w| frame_ops.iter().for_each(|op| run_op(w, &actors, op)));
        if f >= k {
            bytes_after.push(w.state_bytes());
        }
    }
    let snap = snap_at_k.unwrap();
    w.load(&snap).unwrap();
    assert_eq!(w.next_frame(), k as u32);
    for (i, frame_ops) in ops[k..].iter().enumerate() {
        w.step_with(&[0, 0], |w| frame_ops.iter().for_each(|op| run_op(w, &actors, op)));
        assert!(w.state_bytes() == bytes_after[i], "bytes differ at frame {}", k + i);
    }
    // The workload really did something.
    let total_effects: usize = w.entities().map(|e| w.effects(e).len()).sum();
    assert!(total_effects > 0 || w.output().effect_events.is_empty());
}

/// Saving into a pre-allocated snapshot and loading it back does not allocate new buffers and
/// reproduces the checksums exactly.
#[test]
fn save_into_and_load_reproduce_checksums() {
    let ops = ops_for(5, 120);
    let (mut w, actors) = rich_world(9);
    let mut snap = w.snapshot();
    for frame_ops in &ops[..50] {
        w.step_with(&[0, 0], |w| frame_ops.iter().for_each(|op| run_op(w, &actors, op)));
    }
    w.save_into(&mut snap).unwrap();
    let at50 = w.checksums();
    for frame_ops in &ops[50..] {
        w.step_with(&[0, 0], |w| frame_ops.iter().for_each(|op| run_op(w, &actors, op)));
    }
    assert_ne!(w.checksums(), at50);
    w.load(&snap).unwrap();
    assert_eq!(w.checksums(), at50);
    assert_eq!(snap.checksums(), at50);
    assert_eq!(snap.to_bytes(), w.state_bytes());
}

/// A random-depth rollback run gives the same checksums as a straight run (fixed seeds).
#[test]
fn random_depth_rollbacks_match_the_straight_run() {
    for seed in [1u64, 2, 3] {
        let ops = ops_for(seed, 300);
        let report = check_ops(seed, 8, &ops).unwrap_or_else(|d| panic!("seed {seed}: {d}"));
        // The harness's straight run is this file's straight run.
        assert_eq!(report.checksums, run_straight(seed, &ops).1, "seed {seed}");
        assert!(report.stats.rollbacks >= 290);
        assert!(report.stats.max_depth == 8);
    }
}

/// The determinism check of a stream of operations on the rich world: stepped straight, and
/// under rollbacks of 1..=`depth` frames after every frame.
fn check_ops(
    seed: u64,
    depth: u32,
    ops: &[Vec<Op>],
) -> Result<DeterminismReport, DeterminismFailure> {
    let actors = rich_world(seed).1;
    Determinism { max_depth: depth, seed: seed ^ 0xABCD }.check(
        || rich_world(seed).0,
        ops.len() as u32,
        &mut |_, i| i.extend([0u8, 0]),
        &mut |w| ops[w.frame() as usize].iter().for_each(|op| run_op(w, &actors, op)),
    )
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..12usize, 0..4usize, 0..4usize, 1..5u16).prop_map(|(effect, source, target, level)| Op::Apply { effect, source, target, level }),
        1 => (0..4usize, 0..4usize).prop_map(|(target, nth)| Op::Remove { target, nth }),
        1 => (0..4usize, 0..4usize, 1..3u16).prop_map(|(target, nth, stacks)| Op::RemoveStacks { target, nth, stacks }),
        1 => (0..4usize, 0..7usize, -1000..3000i32).prop_map(|(target, attr, value)| Op::SetBase { target, attr, value }),
        1 => (0..4usize, 0..4usize).prop_map(|(target, tag)| Op::AddLoose { target, tag }),
        1 => (0..4usize, 0..4usize).prop_map(|(target, tag)| Op::RemoveLoose { target, tag }),
        1 => (0..4usize, 0..4usize, 0..6u16).prop_map(|(target, nth, level)| Op::SetLevel { target, nth, level }),
        1 => (0..4usize, 0..4usize, -50..50i32).prop_map(|(target, nth, frames)| Op::Extend { target, nth, frames }),
        1 => (0..4usize, 0..4usize, 0..60u32).prop_map(|(target, nth, frames)| Op::SetRemaining { target, nth, frames }),
        1 => (0..4usize).prop_map(|target| Op::Respawn { target }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random apply/remove/set-base/tag streams with random rollbacks give the checksums of a
    /// straight run.
    #[test]
    fn random_ops_with_random_rollbacks(
        seed in any::<u64>(),
        ops in proptest::collection::vec(proptest::collection::vec(op_strategy(), 0..3), 60..160),
        depth in 1u32..9,
    ) {
        let r = check_ops(seed, depth, &ops);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

#[test]
fn a_ring_never_claims_a_frame_it_could_not_save() {
    use rollback_abilities::SnapshotRing;
    use rollback_abilities_kit::arena::{Arena, ArenaSpec};
    let mut a = Arena::new(ArenaSpec { entities: 4, ..Default::default() });
    let mut other = Arena::new(ArenaSpec { entities: 6, ..Default::default() });
    let mut ring = SnapshotRing::new(&a.world, 4);
    a.step();
    let f = a.world.next_frame();
    ring.save(&a.world);
    assert!(ring.get(f).is_some());
    // Another world's state (other capacities) cannot go into this ring: the slot is emptied
    // rather than left claiming frame f with a stale state.
    other.step();
    assert_eq!(other.world.next_frame(), f);
    ring.save(&other.world);
    assert!(ring.get(f).is_none());
    assert!(!ring.load(&mut a.world, f));
    // The one-pass form behaves the same and still returns the other world's checksums.
    ring.save_checksummed(&a.world);
    assert!(ring.get(f).is_some());
    let sums = ring.save_checksummed(&other.world);
    assert_eq!(sums, other.world.checksums());
    assert!(ring.get(f).is_none());
}
