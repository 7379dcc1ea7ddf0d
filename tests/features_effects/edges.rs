//! Saturating edges (`World::step` and effect calls never panic) and the origin pool.

use super::*;

// ---------------------------------------------------------------------------------------------
// Saturating edges (every F-GE feature: `World::step` and effect calls never panic)
// ---------------------------------------------------------------------------------------------

const EDGES: &str = r#"(
    attribute_sets: { "S": (attributes: {
        "G": (default: 10, mul_policy: GasCompat),
        "M": (default: 1),
        "H": (default: 100, min: Const(0), max: Const(1000)) }) },
    curves: { "Steep": (points: [(1, 2000000000), (65535, -2000000000)]) },
    effects: {
        "HalfDiv": (duration: Infinite, modifiers: [(attribute: "G", op: Divide, magnitude: Scalable(coef: 0.5))]),
        "HugeMul": (duration: Infinite, modifiers: [(attribute: "M", op: Multiply, magnitude: Scalable(coef: 2000000000))]),
        "HugeAdd": (duration: Infinite, modifiers: [(attribute: "M", op: Add, magnitude: Scalable(coef: 2000000000, curve: "Steep"))]),
        "HugeStack": (duration: Infinite, stacking: (kind: ByTarget, limit: 65535),
                      modifiers: [(attribute: "H", op: Add, magnitude: Scalable(coef: 2000000000)),
                                  (attribute: "G", op: Multiply, magnitude: Scalable(coef: 2000000000))]),
        "HugeDot": (duration: Frames(5), period: Frames(1), execute_on_application: true, modifiers: [
            (attribute: "M", op: Multiply, magnitude: Scalable(coef: 2000000000)),
            (attribute: "H", op: Add, magnitude: Scalable(coef: -2000000000))]),
        "HugeHit": (modifiers: [
            (attribute: "M", op: Multiply, magnitude: Scalable(coef: -2000000000)),
            (attribute: "G", op: Divide, magnitude: Scalable(coef: 0.000001))]),
    },
)"#;

#[test]
fn f_ge_08_saturating_edges_and_zero_divisor_channels() {
    let mut w = world(EDGES);
    let [g, m, h] = ["G", "M", "H"].map(|n| attr(&w, n));
    let e = actor(&mut w, &["S"]);
    // GasCompat divide channel 1 + (0.5 − 1) + (0.5 − 1) = 0: treated as 1 and reported.
    apply(&mut w, "HalfDiv", e, e);
    assert_eq!(w.attr(e, g), Some(int(20)));
    let out = w
        .step_with(&[], |w| {
            apply(w, "HalfDiv", e, e);
        })
        .clone();
    assert_eq!(w.attr(e, g), Some(int(10)));
    assert!(out.diagnostics.contains(&Diagnostic::DivideByZero { entity: e, attr: g }));
    // Multiply by 2 000 000 000 on Fx::MAX saturates (base and current).
    w.set_base(e, m, Fx::MAX);
    w.apply_effect(EffectSpec::inline(&[(m, ModOp::Multiply, int(2_000_000_000))]), e).unwrap();
    assert_eq!(value(&w, e, m), (Fx::MAX, Fx::MAX));
    let hm = handle(apply(&mut w, "HugeMul", e, e));
    assert_eq!(w.attr(e, m), Some(Fx::MAX));
    let ha = handle(apply(&mut w, "HugeAdd", e, e));
    assert_eq!(w.effect_magnitude(ha, 0), Some(Fx::MAX), "2e9 × 2e9 saturates");
    assert_eq!(w.attr(e, m), Some(Fx::MAX));
    w.remove_effect(ha);
    w.set_base(e, m, Fx::MIN);
    assert_eq!(w.attr(e, m), Some(Fx::MIN), "MIN × 2e9 saturates low");
    w.remove_effect(hm);
    w.apply_effect(EffectSpec::inline(&[(m, ModOp::Multiply, int(2_000_000_000))]), e).unwrap();
    assert_eq!(w.base(e, m), Some(Fx::MIN));
    w.apply_effect(EffectSpec::inline(&[(m, ModOp::Divide, -Fx::DELTA)]), e).unwrap();
    assert_eq!(w.base(e, m), Some(Fx::MAX), "MIN / −δ saturates high");
    // An instant divide by zero leaves the base and is reported.
    let out = w
        .step_with(&[], |w| {
            w.apply_effect(EffectSpec::inline(&[(m, ModOp::Divide, Fx::ZERO)]), e).unwrap();
        })
        .clone();
    assert_eq!(w.base(e, m), Some(Fx::MAX));
    assert!(out.diagnostics.contains(&Diagnostic::DivideByZero { entity: e, attr: m }));
    // Clamps hold at the extremes.
    w.set_base(e, h, Fx::MIN);
    assert_eq!(value(&w, e, h), (int(0), int(0)));
    w.set_base(e, h, Fx::MAX);
    assert_eq!(value(&w, e, h), (int(1000), int(1000)));
    for _ in 0..3 {
        apply(&mut w, "HugeStack", e, e);
    }
    assert_eq!(w.attr(e, h), Some(int(1000)));
    // Huge periodic executions and curve extremes at any level.
    let dot = def(&w, "HugeDot");
    let add = def(&w, "HugeAdd");
    w.step_with(&[], |w| {
        let s = w.make_spec(dot, u16::MAX, e);
        w.apply_effect(s, e).unwrap();
        for level in [0, 1, 2, u16::MAX] {
            let s = w.make_spec(add, level, e);
            w.apply_effect(s, e).unwrap();
        }
        apply(w, "HugeHit", e, e);
    });
    let f = w.frame();
    run_through(&mut w, f + 10);
    assert_eq!(w.base(e, h), Some(int(0)));
    assert!(w.effects(e).iter().all(|f| f.def != dot));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random effect operations at saturating edges never panic in a debug build, clamps hold,
    /// and two identical runs give identical snapshots.
    #[test]
    fn f_ge_08_random_effect_operations_never_panic_at_saturating_edges(
        ops in proptest::collection::vec((0u8..11, 0usize..8, 0usize..8), 1..48)
    ) {
        let edges = [
            Fx::MAX, Fx::MIN, int(2_000_000_000), int(-2_000_000_000), Fx::ZERO, Fx::DELTA,
            fx("0.5"), int(-1),
        ];
        let levels = [0u16, 1, 2, 65535];
        let frames = [0u32, 1, 2, 7, u32::MAX, u32::MAX - 1, 1_000_000, 60];
        let deltas = [i32::MAX, i32::MIN, -1, 1, 0, 100, -100, 5];
        let run = |ops: &[(u8, usize, usize)]| -> (Vec<u8>, Vec<(Fx, Fx)>) {
            let mut w = world(EDGES);
            let c = w.content().clone();
            let attrs = [c.attr("G").unwrap(), c.attr("M").unwrap(), c.attr("H").unwrap()];
            let names = ["HalfDiv", "HugeMul", "HugeAdd", "HugeStack", "HugeDot", "HugeHit"];
            let e = w.spawn_actor(&[c.attr_set("S").unwrap()]).unwrap();
            for &(op, i, k) in ops {
                let a = attrs[i % attrs.len()];
                let first = w.effects(e).get(i % 3).map(|f| f.handle(e));
                w.step_with(&[], |w| match op {
                    0 => w.set_base(e, a, edges[k]),
                    1 => {
                        let mode = [ModOp::Add, ModOp::Multiply, ModOp::Divide, ModOp::Override][i % 4];
                        let _ = w.apply_effect(EffectSpec::inline(&[(a, mode, edges[k])]), e);
                    }
                    2 | 3 => {
                        let d = c.effect(names[(i + k) % names.len()]).unwrap();
                        let s = w.make_spec(d, levels[k % levels.len()], e).with_duration(frames[k]);
                        let _ = w.apply_effect(s, e);
                    }
                    4 => { if let Some(h) = first { w.remove_effect(h) } }
                    5 => { if let Some(h) = first { w.remove_effect_stacks(h, k as u16) } }
                    6 => { if let Some(h) = first { w.set_effect_level(h, levels[k % levels.len()]) } }
                    7 => { if let Some(h) = first { w.set_remaining(h, frames[k]) } }
                    8 => { if let Some(h) = first { w.extend_effect(h, deltas[k]) } }
                    9 => { w.remove_matching(e, &EffectQuery::new().with_modifies(a)); }
                    _ => {
                        if let Some(h) = first { w.recalculate_effect(h) }
                    }
                });
                if op == 10 {
                    for _ in 0..k {
                        w.step(&[]);
                    }
                }
            }
            let vals =
                attrs.iter().filter_map(|a| w.attr_value(e, *a)).map(|v| (v.base, v.current)).collect();
            (w.state_bytes(), vals)
        };
        let (bytes, vals) = run(&ops);
        prop_assert_eq!(vals.len(), 3);
        prop_assert!(vals[2].0 >= int(0) && vals[2].0 <= int(1000), "H base {:?}", vals[2]);
        prop_assert!(vals[2].1 >= int(0) && vals[2].1 <= int(1000), "H current {:?}", vals[2]);
        let (bytes2, vals2) = run(&ops);
        prop_assert_eq!(vals, vals2);
        prop_assert!(bytes == bytes2, "identical runs give identical snapshots");
    }
}

// ---------------------------------------------------------------------------------------------
// The origin pool (an effect applied by another entity keeps its origin in a dense, world-wide
// pool; one its target applied to itself keeps none)
// ---------------------------------------------------------------------------------------------

const ORIGINS: &str = r#"(
    attribute_sets: { "S": (attributes: { "Health": (default: 100) }) },
    effects: {
        "Mark": (duration: Infinite),
        "Brief": (duration: Frames(3)),
    },
)"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Applications from any source, removals, expiries and despawns in any order, with
    /// rollbacks in between: every effect's origin is the one it was applied with, the pool's
    /// used records are exactly the effects not applied by their target to itself (so the
    /// bytes a save copies shrink and grow with them), and the state's byte form reloads
    /// through validation.
    #[test]
    fn origins_follow_their_effects_through_removal_and_rollback(
        ops in proptest::collection::vec((0u8..6, 0usize..5, 0usize..5), 1..80)
    ) {
        let config = WorldConfig { max_entities: 5, effects_per_entity: 4, ..WorldConfig::default() };
        let mut w = World::<Plain>::new(content(ORIGINS), &Hooks::new(), config).unwrap();
        let s = w.content().attr_set("S").unwrap();
        let mut ents: Vec<Entity> = (0..4).map(|_| w.spawn_actor(&[s]).unwrap()).collect();
        let record = core::mem::size_of::<EffectOrigin>() + 8;
        let full = w.snapshot_bytes();
        let mut saved = None;
        // Who applied each effect, by application sequence number (unique in a timeline; a
        // rollback reuses numbers after the snapshot only).
        let mut applied_by = std::collections::BTreeMap::new();
        for (kind, a, b) in ops {
            let (src, dst) = (ents[a % ents.len()], ents[b % ents.len()]);
            match kind {
                0 | 1 => {
                    let name = if kind == 0 { "Mark" } else { "Brief" };
                    if let Ok(Applied::Added(h)) =
                        w.apply_effect(w.make_spec(def(&w, name), 1, src), dst)
                    {
                        applied_by.insert(h.seq, src);
                    }
                }
                2 => {
                    if let Some(e) = w.effects(dst).get(a % 4).copied() {
                        w.remove_effect(e.handle(dst));
                    }
                }
                3 => {
                    let f = w.next_frame();
                    w.step(&[0, 0]);
                    prop_assert_eq!(w.next_frame(), f + 1);
                }
                4 => {
                    if a == b && ents.len() > 1 {
                        w.despawn(dst);
                        ents.retain(|e| *e != dst);
                        if let Ok(e) = w.spawn_actor(&[s]) {
                            ents.push(e);
                        }
                    }
                }
                _ => match saved.take() {
                    Some((snap, bytes)) if a % 2 == 0 => {
                        w.load(&snap).unwrap();
                        prop_assert_eq!(w.state_bytes(), bytes);
                        ents = w.entities().collect();
                    }
                    _ => saved = Some((w.snapshot(), w.state_bytes())),
                },
            }
            // Every effect's origin: self-applied ones keep none, the others are pooled.
            let mut pooled = 0;
            for &e in &ents {
                for (ef, o) in w.effects(e).iter().zip(w.effect_origins(e)) {
                    prop_assert_eq!(Some(o), w.effect_origin(ef.handle(e)));
                    prop_assert_eq!(Some(&o.instigator), applied_by.get(&ef.seq));
                    prop_assert_eq!(o.causer, o.instigator);
                    if o.instigator == e {
                        prop_assert_eq!(ef.origin, rollback_abilities::SELF_ORIGIN);
                    } else {
                        prop_assert!(ef.origin != rollback_abilities::SELF_ORIGIN);
                        pooled += 1;
                    }
                }
            }
            // The pool's used length (header bytes 56..60) is the number of pooled origins.
            let mut used = 0;
            w.for_each_column(|_, name, b| {
                if name == "header" {
                    used = u32::from_le_bytes(b[56..60].try_into().unwrap()) as usize;
                }
            });
            prop_assert_eq!(used, pooled);
            prop_assert!(w.live_snapshot_bytes() <= full - (5 * 4 - pooled) * record);
            let bytes = w.state_bytes();
            let mut again = World::<Plain>::new(content(ORIGINS), &Hooks::new(), config).unwrap();
            prop_assert!(again.load_bytes(&bytes).is_ok());
            prop_assert_eq!(again.checksum(), w.checksum());
        }
    }
}

/// An origin stays with its effect when the pool moves records: applied by B and C on A,
/// removing B's moves C's record into B's place and C's effect still reports C.
#[test]
fn removing_a_pooled_origin_moves_the_last_record_and_repoints_its_effect() {
    let mut w = build(ORIGINS, Hooks::new());
    let (a, b, c) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let before = w.live_snapshot_bytes();
    let hb = handle(apply(&mut w, "Mark", b, a));
    let own = handle(apply(&mut w, "Mark", a, a));
    let hc = handle(apply(&mut w, "Mark", c, a));
    let record = core::mem::size_of::<EffectOrigin>() + 8;
    assert_eq!(w.live_snapshot_bytes(), before + 2 * record, "two pooled, the own one not");
    assert_eq!(w.effect(own).unwrap().origin, rollback_abilities::SELF_ORIGIN);
    assert_eq!((w.effect(hb).unwrap().origin, w.effect(hc).unwrap().origin), (0, 1));
    w.remove_effect(hb);
    assert_eq!(w.effect(hc).unwrap().origin, 0, "the last record moved into the hole");
    assert_eq!(w.effect_origin(hc).unwrap().instigator, c);
    assert_eq!(w.effect_origin(own), Some(EffectOrigin::of_self(a)));
    assert_eq!(w.live_snapshot_bytes(), before + record);
    w.despawn(a);
    assert_eq!(w.live_snapshot_bytes(), before, "a despawned target releases its origins");
}

/// Stored specs are saved up to the highest slot ever used: a kept spec grows the bytes a save
/// copies by one spec, a rollback to before it restores the new-world bytes, and the byte form
/// reloads through validation (which checks the slots past the mark are zero).
#[test]
fn stored_specs_are_saved_up_to_the_highest_slot_used() {
    let (mut w, src, target, arrow) = context_cast();
    let (before, bytes_before) = (w.snapshot(), w.state_bytes());
    let live = w.live_snapshot_bytes();
    let h = handle(w.apply_effect(rich_context(&w, "Burn", src, arrow), target).unwrap());
    let spec = core::mem::size_of::<EffectSpec>();
    let record = core::mem::size_of::<EffectOrigin>() + 8;
    assert_eq!(w.live_snapshot_bytes(), live + spec + record, "one kept spec, one pooled origin");
    let after = w.state_bytes();
    let mut again = context_world();
    assert!(again.load_bytes(&after).is_ok());
    w.load(&before).unwrap();
    assert_eq!(w.state_bytes(), bytes_before, "the rollback restored the unused spec slot");
    assert!(w.effect(h).is_none());
    assert_eq!(w.live_snapshot_bytes(), live);
    // A stored spec left in a slot past the mark is refused.
    let mut bad = bytes_before.clone();
    let (mut at, mut specs_at) = (0, 0);
    w.for_each_column(|_, name, b| {
        if name == "effect_specs" {
            specs_at = at;
        }
        at += b.len();
    });
    bad[specs_at] = 1;
    let e = again.load_bytes(&bad).unwrap_err();
    assert!(format!("{e:?}").contains("effect_specs"), "{e:?}");
}
