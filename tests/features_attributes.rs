//! Feature tests for attributes and attribute sets: F-ATTR-01 … F-ATTR-11 (`docs/features.md`).

use crate::common::*;
use proptest::prelude::*;
use rollback_abilities::FnKind;
use rollback_abilities::prelude::*;
use rollback_abilities::{
    AttrCause, AttrEvent, ContentErrorKind, Diagnostic, EffectEvent, WorldError,
};
use rollback_abilities::{ExecutedMod, ModContribution};
use std::cell::RefCell;

fn value(w: &World<Plain>, e: Entity, a: AttrId) -> (Fx, Fx) {
    let v = w.attr_value(e, a).expect("attribute present");
    (v.base, v.current)
}

fn events_of(out: &FrameOutput, a: AttrId) -> Vec<(Fx, Fx, AttrCause)> {
    out.attr_events.iter().filter(|e| e.attr == a).map(|e| (e.old, e.new, e.cause)).collect()
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-01 Values
// ---------------------------------------------------------------------------------------------

#[test]
fn f_attr_01_values_start_at_defaults_and_set_base_runs_events() {
    let mut w = world(
        r#"(attribute_sets: {
            "Vitals": (attributes: { "Health": (default: 100, min: Const(0), max: Const(150)),
                                     "Loose": (default: 5, max: Const(10), apply_to_base: false) }),
            "Magic": (attributes: { "Mana": (default: 50) }),
        })"#,
    );
    let (health, loose, mana) = (attr(&w, "Health"), attr(&w, "Loose"), attr(&w, "Mana"));
    let e = actor(&mut w, &["Vitals"]);
    assert_eq!(value(&w, e, health), (int(100), int(100)));
    assert_eq!(w.attr(e, health), Some(int(100)));
    assert_eq!(w.base(e, health), Some(int(100)));
    assert!(w.has_attr(e, health));
    assert!(!w.has_attr(e, mana), "the entity lacks the Magic set");
    assert_eq!(w.attr(e, mana), None);
    let out = w.step_with(&[], |w| w.set_base(e, health, int(80))).clone();
    assert_eq!(value(&w, e, health), (int(80), int(80)));
    assert_eq!(
        out.attr_events,
        vec![AttrEvent {
            frame: 0,
            entity: e,
            attr: health,
            old: int(100),
            new: int(80),
            cause: AttrCause::SetBase
        }]
    );
    // The base is clamped like any other change (apply_to_base defaults to on).
    w.set_base(e, health, int(1000));
    assert_eq!(value(&w, e, health), (int(150), int(150)));
    w.set_base(e, health, int(-5));
    assert_eq!(value(&w, e, health), (int(0), int(0)));
    // Without apply_to_base the base keeps the raw value; the current value is clamped.
    w.set_base(e, loose, int(25));
    assert_eq!(value(&w, e, loose), (int(25), int(10)));
    // Setting the same value again changes nothing and reports nothing.
    let out = w.step_with(&[], |w| w.set_base(e, health, int(0))).clone();
    assert!(out.attr_events.is_empty());
    // set_base on an attribute the entity lacks, or on a non-actor, is ignored.
    let plain = w.spawn().unwrap();
    w.set_base(e, mana, int(9));
    w.set_base(plain, health, int(9));
    assert_eq!(w.attr(e, mana), None);
    assert_eq!(w.attr(plain, health), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random attribute operations at saturating edges (Fx::MAX/MIN bases, magnitudes of
    /// 2 000 000 000, zero divisors) never panic in a debug build, clamps always hold, and two
    /// identical runs give identical snapshots.
    #[test]
    fn f_attr_01_random_operations_never_panic_at_saturating_edges(
        ops in proptest::collection::vec((0u8..9, 0usize..6, 0usize..8), 1..40)
    ) {
        const TEXT: &str = r#"(
            attribute_sets: {
                "S": (attributes: {
                    "A": (default: 1, mul_policy: GasCompat),
                    "B": (default: 1, min: Const(-1000), max: Const(1000)),
                    "C": (default: 10, min: Const(0), max: Attr("B"), clamp_mode: GasCompat),
                }),
                "T": (attributes: { "D": (default: 3) }),
            },
            effects: {
                "MulA": (duration: Infinite, modifiers: [
                    (attribute: "A", op: Multiply, magnitude: Scalable(coef: 2000000000)),
                    (attribute: "B", op: Multiply, magnitude: Scalable(coef: -2000000000))]),
                "DivHalf": (duration: Infinite, modifiers: [
                    (attribute: "A", op: Divide, magnitude: Scalable(coef: 0.5)),
                    (attribute: "C", op: Divide, magnitude: Scalable(coef: 0.5))]),
                "Derive": (duration: Infinite, modifiers: [
                    (attribute: "D", op: Add, magnitude: Attribute((attribute: "A", side: Target, coef: 2000000000)))]),
                "Huge": (modifiers: [
                    (attribute: "A", op: Multiply, magnitude: Scalable(coef: 2000000000)),
                    (attribute: "B", op: Add, magnitude: Scalable(coef: -2000000000)),
                    (attribute: "C", op: Divide, magnitude: Scalable(coef: 0.0000001))]),
            },
        )"#;
        let edges = [Fx::MAX, Fx::MIN, int(2_000_000_000), int(-2_000_000_000), Fx::ZERO, Fx::DELTA, -Fx::DELTA, int(1)];
        let run = |ops: &[(u8, usize, usize)]| -> (Vec<u8>, Vec<(Fx, Fx)>) {
            let mut w = world(TEXT);
            let c = w.content().clone();
            let attrs = [c.attr("A").unwrap(), c.attr("B").unwrap(), c.attr("C").unwrap(), c.attr("D").unwrap()];
            let e = w.spawn_actor(&[c.attr_set("S").unwrap(), c.attr_set("T").unwrap()]).unwrap();
            let effects = ["MulA", "DivHalf", "Derive", "Huge"];
            for &(op, i, k) in ops {
                let a = attrs[i % attrs.len()];
                let v = edges[k];
                w.step_with(&[], |w| match op {
                    0 => w.set_base(e, a, v),
                    1 => { let _ = w.apply_effect(EffectSpec::inline(&[(a, ModOp::Multiply, v)]), e); }
                    2 => { let _ = w.apply_effect(EffectSpec::inline(&[(a, ModOp::Divide, v)]), e); }
                    3 => { let _ = w.apply_effect(EffectSpec::inline(&[(a, ModOp::Add, v), (a, ModOp::Override, v)]), e); }
                    4 | 5 => {
                        let d = c.effect(effects[k % effects.len()]).unwrap();
                        let _ = w.apply_effect(w.make_spec(d, u16::MAX, e), e);
                    }
                    6 => {
                        if let Some(h) = w.effects(e).first().map(|f| f.handle(e)) { w.remove_effect(h); }
                    }
                    7 => w.remove_attribute_set(e, c.attr_set("T").unwrap()),
                    _ => w.add_attribute_set(e, c.attr_set("T").unwrap()),
                });
            }
            let vals = attrs.iter().filter_map(|a| w.attr_value(e, *a)).map(|v| (v.base, v.current)).collect();
            (w.state_bytes(), vals)
        };
        let (bytes, vals) = run(&ops);
        // B is clamped to [-1000, 1000] in base and current; C's current lies in [0, B].
        prop_assert!(vals[1].0 >= int(-1000) && vals[1].0 <= int(1000));
        prop_assert!(vals[1].1 >= int(-1000) && vals[1].1 <= int(1000));
        let hi = vals[1].1;
        if hi >= Fx::ZERO {
            prop_assert!(vals[2].1 >= Fx::ZERO && vals[2].1 <= hi, "C {:?} B {:?}", vals[2], vals[1]);
        }
        let (bytes2, vals2) = run(&ops);
        prop_assert_eq!(vals, vals2);
        prop_assert!(bytes == bytes2, "identical runs give identical snapshots");
    }
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-02 Base vs current
// ---------------------------------------------------------------------------------------------

#[test]
fn f_attr_02_duration_changes_current_instant_and_periodic_change_base() {
    let mut w = world(
        r#"(
        attribute_sets: { "Move": (attributes: { "MoveSpeed": (default: 600) }) },
        effects: {
            "Haste": (duration: Frames(30), modifiers: [(attribute: "MoveSpeed", op: Add, magnitude: Scalable(coef: 50))]),
            "Boost": (modifiers: [(attribute: "MoveSpeed", op: Add, magnitude: Scalable(coef: 10))]),
            "Drain": (duration: Frames(25), period: Frames(10),
                      modifiers: [(attribute: "MoveSpeed", op: Add, magnitude: Scalable(coef: -1))]),
        },
    )"#,
    );
    let speed = attr(&w, "MoveSpeed");
    let e = actor(&mut w, &["Move"]);
    w.step_with(&[], |w| {
        apply(w, "Haste", e, e);
    });
    assert_eq!(value(&w, e, speed), (int(600), int(650)), "600 base + 50 buff");
    w.step_with(&[], |w| {
        assert_eq!(apply(w, "Boost", e, e), Applied::Executed);
    });
    assert_eq!(value(&w, e, speed), (int(610), int(660)), "instant changes the base");
    run_through(&mut w, 29);
    assert_eq!(value(&w, e, speed), (int(610), int(660)));
    run_through(&mut w, 30);
    assert_eq!(value(&w, e, speed), (int(610), int(610)), "back to base on expiry");
    w.step_with(&[], |w| {
        apply(w, "Drain", e, e);
    });
    assert_eq!(value(&w, e, speed), (int(610), int(610)), "a periodic effect has no modifier");
    run_through(&mut w, 41);
    assert_eq!(value(&w, e, speed), (int(609), int(609)), "tick at 41 changes the base");
    run_through(&mut w, 60);
    assert_eq!(value(&w, e, speed), (int(608), int(608)), "ticks at 41 and 51, gone at 56");
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-03 Max is its own attribute
// ---------------------------------------------------------------------------------------------

const VITALS: &str = r#"(
    tags: ["State.Dead"],
    attribute_sets: { "Vitals": (attributes: {
        "Health": (default: 100, min: Const(0), max: Attr("MaxHealth")),
        "MaxHealth": (default: 100),
    }) },
    effects: {
        "Curse": (duration: Frames(10), modifiers: [(attribute: "MaxHealth", op: Add, magnitude: Scalable(coef: -50))]),
        "Vigor": (duration: Frames(10), modifiers: [(attribute: "MaxHealth", op: Add, magnitude: Scalable(coef: 100))]),
        "Heal": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: 50))]),
        "Smite": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -500))]),
    },
)"#;

#[test]
fn f_attr_03_health_is_bounded_by_max_health_attribute() {
    let mut w = world(VITALS);
    let (health, max) = (attr(&w, "Health"), attr(&w, "MaxHealth"));
    let e = actor(&mut w, &["Vitals"]);
    let out = w
        .step_with(&[], |w| {
            apply(w, "Curse", e, e);
        })
        .clone();
    assert_eq!(value(&w, e, max), (int(100), int(50)));
    assert_eq!(value(&w, e, health), (int(100), int(50)), "lowering MaxHealth re-clamps Health");
    assert_eq!(
        out.attr_events.iter().map(|a| (a.attr, a.old, a.new, a.cause)).collect::<Vec<_>>(),
        vec![
            (health, int(100), int(50), AttrCause::Modifiers),
            (max, int(100), int(50), AttrCause::Modifiers),
        ]
    );
    run_through(&mut w, 10);
    assert_eq!(value(&w, e, max), (int(100), int(100)));
    assert_eq!(value(&w, e, health), (int(100), int(100)));
    // Changing the maximum's base re-clamps too.
    let out = w.step_with(&[], |w| w.set_base(e, max, int(60))).clone();
    assert_eq!(w.attr(e, health), Some(int(60)));
    assert_eq!(events_of(&out, health), vec![(int(100), int(60), AttrCause::Modifiers)]);
    // A constant minimum bounds damage.
    w.step_with(&[], |w| {
        apply(w, "Smite", e, e);
    });
    assert_eq!(value(&w, e, health), (int(0), int(0)));
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-04 Pre-change clamp
// ---------------------------------------------------------------------------------------------

#[test]
fn f_attr_04_apply_to_base_clamps_base_so_no_hidden_overheal() {
    let mut w = world(VITALS);
    let (health, max) = (attr(&w, "Health"), attr(&w, "MaxHealth"));
    let e = actor(&mut w, &["Vitals"]);
    w.set_base(e, health, int(90));
    w.step_with(&[], |w| {
        apply(w, "Heal", e, e);
    });
    assert_eq!(value(&w, e, health), (int(100), int(100)), "the base is clamped after the heal");
    w.step_with(&[], |w| {
        apply(w, "Vigor", e, e);
    });
    assert_eq!(w.attr(e, max), Some(int(200)));
    assert_eq!(value(&w, e, health), (int(100), int(100)), "no hidden overheal appears");

    // The same content with apply_to_base off keeps the overheal in the base.
    let text = VITALS.replace(
        r#""Health": (default: 100, min: Const(0), max: Attr("MaxHealth")),"#,
        r#""Health": (default: 100, min: Const(0), max: Attr("MaxHealth"), apply_to_base: false),"#,
    );
    assert_ne!(text, VITALS);
    let mut w = world(&text);
    let e = actor(&mut w, &["Vitals"]);
    w.set_base(e, health, int(90));
    apply(&mut w, "Heal", e, e);
    assert_eq!(value(&w, e, health), (int(140), int(100)));
    apply(&mut w, "Vigor", e, e);
    assert_eq!(value(&w, e, health), (int(140), int(140)));
}

#[test]
fn f_attr_04_clamp_mode_evaluate_vs_gas_compat_captures() {
    let mut w = world(
        r#"(
        attribute_sets: { "Move": (attributes: {
            "Speed": (default: 600, min: Const(150), max: Const(1000)),
            "SpeedG": (default: 600, min: Const(150), max: Const(1000), clamp_mode: GasCompat),
            "Seen": (default: 0),
            "SeenG": (default: 0),
        }) },
        effects: {
            "Sprint": (duration: Infinite, modifiers: [
                (attribute: "Speed", op: Multiply, magnitude: Scalable(coef: 2)),
                (attribute: "SpeedG", op: Multiply, magnitude: Scalable(coef: 2))]),
            "Probe": (modifiers: [
                (attribute: "Seen", op: Override, magnitude: Attribute((attribute: "Speed", side: Target))),
                (attribute: "SeenG", op: Override, magnitude: Attribute((attribute: "SpeedG", side: Target)))]),
        },
    )"#,
    );
    let (speed, speed_g, seen, seen_g) =
        (attr(&w, "Speed"), attr(&w, "SpeedG"), attr(&w, "Seen"), attr(&w, "SeenG"));
    let e = actor(&mut w, &["Move"]);
    apply(&mut w, "Sprint", e, e);
    // Both modes store a clamped current value.
    assert_eq!(value(&w, e, speed), (int(600), int(1000)));
    assert_eq!(value(&w, e, speed_g), (int(600), int(1000)));
    apply(&mut w, "Probe", e, e);
    assert_eq!(w.base(e, seen), Some(int(1000)), "Evaluate: captures see the clamped value");
    assert_eq!(w.base(e, seen_g), Some(int(1200)), "GasCompat: captures see the raw aggregate");
}

fn cap_at_500(_: Entity, _: AttrId, v: &mut Fx) {
    if *v > int(500) {
        *v = int(500);
    }
}

#[test]
fn f_attr_04_pre_change_hook_adjusts_current_only() {
    let text = r#"(
        attribute_sets: { "Rage": (attributes: { "Rage": (default: 100) }, pre_change: "CapAt500") },
        effects: { "Fury": (duration: Infinite, modifiers: [(attribute: "Rage", op: Add, magnitude: Scalable(coef: 1000))]) },
    )"#;
    let mut w = build(text, Hooks::new().pre_change("CapAt500", cap_at_500));
    let rage = attr(&w, "Rage");
    let e = actor(&mut w, &["Rage"]);
    assert_eq!(value(&w, e, rage), (int(100), int(100)));
    let h = handle(apply(&mut w, "Fury", e, e));
    assert_eq!(value(&w, e, rage), (int(100), int(500)));
    w.set_base(e, rage, int(800));
    assert_eq!(value(&w, e, rage), (int(800), int(500)), "the hook never writes the base");
    w.remove_effect(h);
    assert_eq!(value(&w, e, rage), (int(800), int(500)));
    w.set_base(e, rage, int(200));
    assert_eq!(value(&w, e, rage), (int(200), int(200)), "the modifier was not altered");
    // A pre-change hook content names must be registered as one.
    let err =
        World::<Plain>::new(content(text), &Hooks::new(), WorldConfig::default()).unwrap_err();
    assert_eq!(
        err,
        WorldError::MissingFunction {
            name: "CapAt500".into(),
            kind: FnKind::PreChange,
            registered_as: None,
            did_you_mean: None
        }
    );
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-05 Post-execute hook
// ---------------------------------------------------------------------------------------------

thread_local! {
    static SEEN: RefCell<Vec<ExecutedMod>> = const { RefCell::new(Vec::new()) };
    static APPLY_RESULTS: RefCell<Vec<Result<Applied, ApplyError>>> = const { RefCell::new(Vec::new()) };
}

fn record(_: &mut World<Plain>, m: &ExecutedMod) {
    SEEN.with(|s| s.borrow_mut().push(*m));
}

fn take_seen() -> Vec<ExecutedMod> {
    SEEN.with(|s| core::mem::take(&mut *s.borrow_mut()))
}

#[test]
fn f_attr_05_post_execute_receives_the_executed_modifier() {
    let text = r#"(
        attribute_sets: {
            "Vitals": (attributes: {
                "Health": (default: 100, min: Const(0), max: Attr("MaxHealth")),
                "MaxHealth": (default: 100),
            }, post_execute: "Record"),
        },
        effects: {
            "Hit": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -30))]),
            "Heal": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: 100))]),
            "Buff": (duration: Infinite, modifiers: [(attribute: "MaxHealth", op: Add, magnitude: Scalable(coef: 5))]),
            "Burn": (duration: Frames(10), period: Frames(5),
                     modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -10))]),
        },
    )"#;
    take_seen();
    let mut w = build(text, Hooks::new().post_execute("Record", record));
    let health = attr(&w, "Health");
    let e = actor(&mut w, &["Vitals"]);
    let src = actor(&mut w, &["Vitals"]);
    run_through(&mut w, 1);
    let hit = def(&w, "Hit");
    w.step_with(&[], |w| {
        let spec = w.make_spec(hit, 3, src);
        w.apply_effect(spec, e).unwrap();
    });
    assert_eq!(
        take_seen(),
        vec![ExecutedMod {
            frame: 2,
            target: e,
            attr: health,
            op: ModOp::Add,
            magnitude: int(-30),
            old_base: int(100),
            new_base: int(70),
            def: Some(hit),
            handle: None,
            instigator: src,
            causer: src,
            level: 3,
        }]
    );
    // The reported new base is the clamped one.
    apply(&mut w, "Heal", src, e);
    let seen = take_seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].magnitude, seen[0].old_base, seen[0].new_base),
        (int(100), int(70), int(100))
    );
    // Duration effects change no base value: no call.
    apply(&mut w, "Buff", src, e);
    assert!(take_seen().is_empty());
    // Periodic executions carry the effect's handle.
    w.step_with(&[], |w| {
        apply(w, "Burn", src, e);
    });
    let burn = w.effects(e)[1].handle(e);
    run_through(&mut w, 13);
    let seen = take_seen();
    assert_eq!(seen.len(), 2, "ticks at 8 and 13");
    assert_eq!(seen.iter().map(|m| m.frame).collect::<Vec<_>>(), vec![8, 13]);
    assert!(seen.iter().all(|m| m.handle == Some(burn) && m.def == Some(def(&w, "Burn"))));
    assert_eq!((seen[1].old_base, seen[1].new_base), (int(90), int(80)));
    assert_eq!(w.base(e, health), Some(int(80)));
}

fn death_check(w: &mut World<Plain>, m: &ExecutedMod) {
    let c = w.content().clone();
    if m.attr == c.attr("Health").unwrap() && m.new_base <= Fx::ZERO {
        w.add_loose_tag(m.target, c.tag("State.Dead").unwrap());
        let r = w.apply_effect(w.make_spec(c.effect("Corpse").unwrap(), 1, m.target), m.target);
        APPLY_RESULTS.with(|s| s.borrow_mut().push(r));
    }
}

#[test]
fn f_attr_05_post_execute_may_queue_tags_and_effects() {
    let text = r#"(
        tags: ["State.Dead", "State.Corpse"],
        attribute_sets: { "Vitals": (attributes: { "Health": (default: 100, min: Const(0)) },
                                     post_execute: "DeathCheck") },
        effects: {
            "Smite": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -150))]),
            "Corpse": (duration: Infinite, granted_tags: ["State.Corpse"]),
        },
    )"#;
    APPLY_RESULTS.with(|s| s.borrow_mut().clear());
    let mut w = build(text, Hooks::new().post_execute("DeathCheck", death_check));
    let e = actor(&mut w, &["Vitals"]);
    let (dead, corpse_tag) =
        (w.content().tag("State.Dead").unwrap(), w.content().tag("State.Corpse").unwrap());
    let out = w
        .step_with(&[], |w| {
            apply(w, "Smite", e, e);
            // The queued changes ran before apply_effect returned.
            assert!(w.has_tag(e, dead));
            assert!(w.has_tag(e, corpse_tag));
        })
        .clone();
    assert_eq!(w.base(e, attr(&w, "Health")), Some(int(0)));
    assert_eq!(APPLY_RESULTS.with(|s| s.borrow().clone()), vec![Ok(Applied::Queued)]);
    let corpse = def(&w, "Corpse");
    assert!(
        out.effect_events
            .iter()
            .any(|ev| matches!(ev, EffectEvent::Added { def, .. } if *def == corpse))
    );
    assert_eq!(w.effects(e).len(), 1);
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-06 Meta attributes
// ---------------------------------------------------------------------------------------------

fn distribute_damage(w: &mut World<Plain>, m: &ExecutedMod) {
    let c = w.content().clone();
    if m.attr == c.attr("Damage").unwrap() {
        // Transient values are readable inside post-execute.
        assert_eq!(w.base(m.target, m.attr), Some(m.new_base));
        let health = c.attr("Health").unwrap();
        let spec = EffectSpec::inline(&[(health, ModOp::Add, -m.new_base)]);
        assert_eq!(w.apply_effect(spec, m.target), Ok(Applied::Queued));
    }
}

const META: &str = r#"(
    attribute_sets: { "Vitals": (attributes: {
        "Health": (default: 100, min: Const(0)),
        "Damage": (transient: true),
    }, post_execute: "Distribute") },
    effects: {
        "Hit": (modifiers: [(attribute: "Damage", op: Add, magnitude: Scalable(coef: 30))]),
        "DoubleHit": (modifiers: [(attribute: "Damage", op: Add, magnitude: Scalable(coef: 30)),
                                  (attribute: "Damage", op: Add, magnitude: Scalable(coef: 5))]),
    },
)"#;

#[test]
fn f_attr_06_transient_damage_distributes_to_health_and_resets() {
    let mut w = build(META, Hooks::new().post_execute("Distribute", distribute_damage));
    let (health, damage) = (attr(&w, "Health"), attr(&w, "Damage"));
    let e = actor(&mut w, &["Vitals"]);
    let out = w
        .step_with(&[], |w| {
            apply(w, "Hit", e, e);
        })
        .clone();
    assert_eq!(value(&w, e, health), (int(70), int(70)));
    assert_eq!(value(&w, e, damage), (int(0), int(0)), "reset to 0 after post-execute");
    assert!(events_of(&out, damage).is_empty(), "a meta attribute reports no events");
    assert_eq!(
        events_of(&out, health),
        vec![(int(100), int(70), AttrCause::Execution { def: None })]
    );
    // Each modifier's value lives for one execution: 30 then 5, not 30 then 35.
    apply(&mut w, "DoubleHit", e, e);
    assert_eq!(value(&w, e, health), (int(35), int(35)));
    assert_eq!(value(&w, e, damage), (int(0), int(0)));
    w.step(&[]);
    assert_eq!(value(&w, e, damage), (int(0), int(0)), "zero at frame end");
}

#[test]
fn f_attr_06_transient_attributes_are_validated() {
    let err = Content::from_ron_str(
        r#"(attribute_sets: { "S": (attributes: { "Damage": (transient: true, min: Const(0)) }) })"#,
    )
    .unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::InvalidCombination);
    let err = Content::from_ron_str(
        r#"(attribute_sets: { "S": (attributes: { "Damage": (transient: true) }) },
            effects: { "E": (duration: Infinite, modifiers: [(attribute: "Damage", op: Add, magnitude: Scalable(coef: 1))]) })"#,
    )
    .unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::InvalidCombination, "{err}");
    let err = Content::from_ron_str(
        r#"(attribute_sets: { "S": (attributes: { "Damage": (transient: true), "H": (default: 1) }) },
            effects: { "E": (modifiers: [(attribute: "H", op: Add, magnitude: Attribute((attribute: "Damage", side: Target)))]) })"#,
    )
    .unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::InvalidCombination, "{err}");
    // A registered calculation cannot capture a transient attribute either.
    let text = r#"(attribute_sets: { "S": (attributes: { "Damage": (transient: true), "H": (default: 1) }) },
                   effects: { "E": (modifiers: [(attribute: "H", op: Add, magnitude: Custom(calc: "C"))]) })"#;
    fn calc(_: &rollback_abilities::CalcInput<'_>) -> Fx {
        Fx::ZERO
    }
    let hooks =
        Hooks::<Plain>::new().calc("C", &[rollback_abilities::Capture::target("Damage")], calc);
    let err = World::new(content(text), &hooks, WorldConfig::default()).unwrap_err();
    assert!(matches!(err, WorldError::UnknownCaptureAttribute { .. }), "{err:?}");
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-07 Change notifications
// ---------------------------------------------------------------------------------------------

#[test]
fn f_attr_07_one_event_per_settled_change_with_its_cause() {
    let mut w = world(
        r#"(
        attribute_sets: { "S": (attributes: { "X": (default: 100, max: Const(150)) }) },
        effects: {
            "TwoAdds": (duration: Infinite, modifiers: [
                (attribute: "X", op: Add, magnitude: Scalable(coef: 10)),
                (attribute: "X", op: Add, magnitude: Scalable(coef: 5))]),
            "Nudge": (modifiers: [(attribute: "X", op: Add, magnitude: Scalable(coef: 1))]),
            "Big": (modifiers: [(attribute: "X", op: Add, magnitude: Scalable(coef: 1000))]),
        },
    )"#,
    );
    let x = attr(&w, "X");
    let e = actor(&mut w, &["S"]);
    let ev = |frame, old: i64, new: i64, cause| AttrEvent {
        frame,
        entity: e,
        attr: x,
        old: int(old),
        new: int(new),
        cause,
    };
    let out = w.step_with(&[], |w| {
        apply(w, "TwoAdds", e, e);
    });
    assert_eq!(out.attr_events, vec![ev(0, 100, 115, AttrCause::Modifiers)], "one event, two mods");
    let nudge = def(&w, "Nudge");
    let out = w.step_with(&[], |w| {
        apply(w, "Nudge", e, e);
    });
    assert_eq!(out.attr_events, vec![ev(1, 115, 116, AttrCause::Execution { def: Some(nudge) })]);
    let out = w.step_with(&[], |w| w.set_base(e, x, int(50)));
    assert_eq!(out.attr_events, vec![ev(2, 116, 65, AttrCause::SetBase)]);
    let out = w.step_with(&[], |w| {
        w.apply_effect(EffectSpec::inline(&[(x, ModOp::Add, int(5))]), e).unwrap();
    });
    assert_eq!(out.attr_events, vec![ev(3, 65, 70, AttrCause::Execution { def: None })]);
    let big = def(&w, "Big");
    let out = w.step_with(&[], |w| {
        apply(w, "Big", e, e);
    });
    assert_eq!(out.attr_events, vec![ev(4, 70, 150, AttrCause::Execution { def: Some(big) })]);
    assert_eq!(value(&w, e, x), (int(150), int(150)));
    // A change that settles to the same value reports nothing.
    let out = w.step_with(&[], |w| {
        apply(w, "Nudge", e, e);
    });
    assert!(out.attr_events.is_empty());
    let out = w.step(&[]);
    assert!(out.attr_events.is_empty());
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-08 Derived attributes
// ---------------------------------------------------------------------------------------------

const DERIVED: &str = r#"(
    attribute_sets: { "Hero": (attributes: {
        "Strength": (default: 10),
        "AttackPower": (default: 0),
        "Crit": (default: 0),
        "Frozen": (default: 0),
    }) },
    effects: {
        "StrToAp": (duration: Infinite, modifiers: [(attribute: "AttackPower", op: Add,
            magnitude: Attribute((attribute: "Strength", side: Target, coef: 2, snapshot: false)))]),
        "ApToCrit": (duration: Infinite, modifiers: [(attribute: "Crit", op: Add,
            magnitude: Attribute((attribute: "AttackPower", side: Target, coef: 0.5)))]),
        "SnapStr": (duration: Infinite, modifiers: [(attribute: "Frozen", op: Add,
            magnitude: Attribute((attribute: "Strength", side: Target, snapshot: true)))]),
        "StrBuff": (duration: Frames(10), modifiers: [(attribute: "Strength", op: Add, magnitude: Scalable(coef: 5))]),
    },
)"#;

#[test]
fn f_attr_08_derived_attributes_follow_live_target_captures() {
    let mut w = world(DERIVED);
    let (str_, ap, crit, frozen) =
        (attr(&w, "Strength"), attr(&w, "AttackPower"), attr(&w, "Crit"), attr(&w, "Frozen"));
    let e = actor(&mut w, &["Hero"]);
    for name in ["ApToCrit", "StrToAp", "SnapStr"] {
        apply(&mut w, name, e, e);
    }
    assert_eq!(w.attr(e, ap), Some(int(20)));
    assert_eq!(w.attr(e, crit), Some(int(10)));
    assert_eq!(w.attr(e, frozen), Some(int(10)));
    let out = w.step_with(&[], |w| w.set_base(e, str_, int(15))).clone();
    assert_eq!(w.attr(e, ap), Some(int(30)), "updated in the same settle pass");
    assert_eq!(w.attr(e, crit), Some(int(15)), "through a chain of two derivations");
    assert_eq!(w.attr(e, frozen), Some(int(10)), "a snapshot capture does not follow");
    let mut got: Vec<(AttrId, Fx, Fx, AttrCause)> =
        out.attr_events.iter().map(|a| (a.attr, a.old, a.new, a.cause)).collect();
    got.sort_by_key(|g| g.0);
    let mut want = vec![
        (ap, int(20), int(30), AttrCause::Modifiers),
        (crit, int(10), int(15), AttrCause::Modifiers),
        (str_, int(10), int(15), AttrCause::SetBase),
    ];
    want.sort_by_key(|g| g.0);
    assert_eq!(got, want, "one event per attribute with its final value");
    // Current-value changes of the source attribute propagate as well, and back on expiry.
    let start = w.next_frame();
    w.step_with(&[], |w| {
        apply(w, "StrBuff", e, e);
    });
    assert_eq!((w.attr(e, ap), w.attr(e, crit)), (Some(int(40)), Some(int(20))));
    run_through(&mut w, start + 10);
    assert_eq!((w.attr(e, ap), w.attr(e, crit)), (Some(int(30)), Some(int(15))));
}

#[test]
fn f_attr_08_live_source_capture_follows_the_instigator() {
    let mut w = world(
        r#"(
        attribute_sets: {
            "Leader": (attributes: { "Command": (default: 10) }),
            "Troop": (attributes: { "Morale": (default: 100) }),
        },
        effects: {
            "Aura": (duration: Infinite, modifiers: [(attribute: "Morale", op: Add,
                magnitude: Attribute((attribute: "Command", side: Source)))]),
        },
    )"#,
    );
    let (command, morale) = (attr(&w, "Command"), attr(&w, "Morale"));
    let leader = actor(&mut w, &["Leader"]);
    let troop = actor(&mut w, &["Troop"]);
    let other = actor(&mut w, &["Leader"]);
    apply(&mut w, "Aura", leader, troop);
    assert_eq!(w.attr(troop, morale), Some(int(110)));
    let out = w.step_with(&[], |w| w.set_base(leader, command, int(25))).clone();
    assert_eq!(w.attr(troop, morale), Some(int(125)));
    assert!(
        out.attr_events.iter().any(|a| a.entity == troop
            && a.attr == morale
            && a.old == int(110)
            && a.new == int(125))
    );
    // Another entity's attribute is not followed.
    w.set_base(other, command, int(99));
    assert_eq!(w.attr(troop, morale), Some(int(125)));
    // A despawned source freezes its last value; a new entity in its slot is not followed.
    w.despawn(leader);
    assert_eq!(w.attr(troop, morale), Some(int(125)));
    let successor = actor(&mut w, &["Leader"]);
    w.set_base(successor, command, int(1));
    assert_eq!(w.attr(troop, morale), Some(int(125)));
}

#[test]
fn f_attr_08_static_derivation_cycles_are_rejected() {
    let err = Content::from_ron_str(
        r#"(attribute_sets: { "S": (attributes: { "A": (default: 1), "B": (default: 1) }) },
            effects: {
                "AtoB": (duration: Infinite, modifiers: [(attribute: "B", op: Add, magnitude: Attribute((attribute: "A", side: Target)))]),
                "BtoA": (duration: Infinite, modifiers: [(attribute: "A", op: Add, magnitude: Attribute((attribute: "B", side: Target)))]),
            })"#,
    )
    .unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::Cycle, "{err}");
    // Clamp bounds are dependency edges too.
    let err = Content::from_ron_str(
        r#"(attribute_sets: { "S": (attributes: { "A": (default: 1, max: Attr("B")), "B": (default: 1) }) },
            effects: {
                "AtoB": (duration: Infinite, modifiers: [(attribute: "B", op: Add, magnitude: Attribute((attribute: "A", side: Target)))]),
            })"#,
    )
    .unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::Cycle, "{err}");
    // Snapshot and instant captures are no edges.
    let ok = Content::from_ron_str(
        r#"(attribute_sets: { "S": (attributes: { "A": (default: 1), "B": (default: 1) }) },
            effects: {
                "AtoB": (duration: Infinite, modifiers: [(attribute: "B", op: Add, magnitude: Attribute((attribute: "A", side: Target)))]),
                "BtoA": (duration: Infinite, modifiers: [(attribute: "A", op: Add, magnitude: Attribute((attribute: "B", side: Target, snapshot: true)))]),
                "Once": (modifiers: [(attribute: "A", op: Add, magnitude: Attribute((attribute: "B", side: Target)))]),
            })"#,
    );
    assert!(ok.is_ok(), "{:?}", ok.err());
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-09 Sets
// ---------------------------------------------------------------------------------------------

#[test]
fn f_attr_09_sets_are_static_schemas_added_and_removed_at_runtime() {
    let mut w = world(
        r#"(
        attribute_sets: {
            "Vitals": (attributes: { "Health": (default: 100) }),
            "Magic": (attributes: { "Mana": (default: 50), "MaxMana": (default: 80) }),
        },
        effects: { "Focus": (duration: Infinite, modifiers: [(attribute: "Mana", op: Add, magnitude: Scalable(coef: 5))]) },
    )"#,
    );
    let c = w.content().clone();
    let (health, mana, max_mana) = (attr(&w, "Health"), attr(&w, "Mana"), attr(&w, "MaxMana"));
    let magic = c.attr_set("Magic").unwrap();
    assert_eq!(c.attr_set_defs()[magic.index()].attributes, vec![mana, max_mana]);
    let e = actor(&mut w, &["Vitals"]);
    assert!(!w.has_attr(e, mana));
    // Effects on attributes the entity lacks change nothing (and do not fail).
    assert!(matches!(apply(&mut w, "Focus", e, e), Applied::Added(_)));
    assert_eq!(w.attr(e, mana), None);
    w.remove_matching(e, &EffectQuery::new());
    w.step_with(&[], |w| w.add_attribute_set(e, magic));
    assert_eq!(value(&w, e, mana), (int(50), int(50)));
    assert_eq!(value(&w, e, max_mana), (int(80), int(80)));
    apply(&mut w, "Focus", e, e);
    assert_eq!(w.attr(e, mana), Some(int(55)));
    // Adding a set twice is impossible by construction: nothing changes.
    w.set_base(e, mana, int(10));
    w.add_attribute_set(e, magic);
    assert_eq!(value(&w, e, mana), (int(10), int(15)));
    w.step_with(&[], |w| w.remove_attribute_set(e, magic));
    assert!(!w.has_attr(e, mana));
    assert_eq!(w.attr(e, max_mana), None);
    assert_eq!(w.attr(e, health), Some(int(100)), "other sets are untouched");
    // Attribute names are global: the same name in two sets is refused.
    let err = Content::from_ron_str(
        r#"(attribute_sets: { "A": (attributes: { "X": (default: 1) }), "B": (attributes: { "X": (default: 2) }) })"#,
    )
    .unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::Duplicate);
    assert_eq!(c.attr_set("Nope").unwrap_err().kind, ContentErrorKind::UnknownName);
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-10 Initialisation
// ---------------------------------------------------------------------------------------------

#[test]
fn f_attr_10_initialisation_by_defaults_set_base_and_init_effects() {
    let mut w = world(
        r#"(
        attribute_sets: { "Hero": (attributes: {
            "Health": (default: 1), "Armor": (default: 2.5), "Level": (default: 0) }) },
        curves: {
            "HealthByLevel": (points: [(1, 100), (5, 500)]),
            "ArmorByLevel": (interp: Step, points: [(1, 10), (4, 40)]),
        },
        effects: {
            "InitHero": (modifiers: [
                (attribute: "Health", op: Override, magnitude: Scalable(coef: 1, curve: "HealthByLevel")),
                (attribute: "Armor", op: Override, magnitude: Scalable(coef: 1, curve: "ArmorByLevel")),
                (attribute: "Level", op: Override, magnitude: SetByCaller("Data.Level"))]),
        },
        tags: ["Data.Level"],
    )"#,
    );
    let c = w.content().clone();
    let (health, armor, level) = (attr(&w, "Health"), attr(&w, "Armor"), attr(&w, "Level"));
    let e = actor(&mut w, &["Hero"]);
    assert_eq!(value(&w, e, armor), (fx("2.5"), fx("2.5")));
    let init = def(&w, "InitHero");
    for (lvl, hp, ar) in [(1u16, 100, 10), (3, 300, 10), (4, 400, 40), (9, 500, 40)] {
        let spec = w
            .make_spec(init, lvl, e)
            .with_set_by_caller(c.tag("Data.Level").unwrap(), int(i64::from(lvl)));
        assert_eq!(w.apply_effect(spec, e), Ok(Applied::Executed));
        assert_eq!(value(&w, e, health), (int(hp), int(hp)), "level {lvl}");
        assert_eq!(value(&w, e, armor), (int(ar), int(ar)), "level {lvl}");
        assert_eq!(w.base(e, level), Some(int(i64::from(lvl))));
    }
    // set_base is the direct initialiser.
    w.set_base(e, health, int(42));
    assert_eq!(value(&w, e, health), (int(42), int(42)));
}

/// The level table (`AttrInitTable`): rows by level in content, the greatest row not above the
/// requested level applies, unlisted attributes keep their values, and it rolls back like any
/// base change.
#[test]
fn f_attr_10_level_table_initialises_base_values() {
    let mut w = world(
        r#"(
        attribute_sets: {
            "Hero": (
                attributes: { "Health": (default: 1), "MaxHealth": (default: 1), "Armor": (default: 0) },
                levels: [
                    (level: 1, values: { "MaxHealth": 100, "Health": 100 }),
                    (level: 5, values: { "MaxHealth": 180, "Health": 180, "Armor": 6.5 }),
                    (level: 10, values: { "MaxHealth": 300, "Health": 300, "Armor": 12 }),
                ],
            ),
            "Mana": (attributes: { "Mana": (default: 7) }),
        },
    )"#,
    );
    let c = w.content().clone();
    let (hero, mana_set) = (c.attr_set("Hero").unwrap(), c.attr_set("Mana").unwrap());
    let (health, max, armor) = (attr(&w, "Health"), attr(&w, "MaxHealth"), attr(&w, "Armor"));
    let def = &c.attr_set_defs()[hero.index()];
    assert_eq!(def.levels.iter().map(|r| r.level).collect::<Vec<_>>(), [1, 5, 10]);
    assert_eq!(def.level_row(4).map(|r| r.level), Some(1));
    assert_eq!(def.level_row(0), None);

    let e = actor(&mut w, &["Hero", "Mana"]);
    let saved = w.snapshot();
    assert_eq!(w.init_attributes(e, hero, 3), Some(1));
    assert_eq!(value(&w, e, max), (int(100), int(100)));
    assert_eq!(value(&w, e, health), (int(100), int(100)));
    assert_eq!(value(&w, e, armor), (int(0), int(0)), "not listed at level 1: unchanged");
    assert_eq!(w.init_attributes(e, hero, 7), Some(5));
    assert_eq!(value(&w, e, armor), (fx("6.5"), fx("6.5")));
    assert_eq!(w.init_attributes(e, hero, u16::MAX), Some(10));
    assert_eq!(value(&w, e, health), (int(300), int(300)));
    // Below the first row, or a set without a table: nothing changes.
    assert_eq!(w.init_attributes(e, hero, 0), None);
    assert_eq!(w.init_attributes(e, mana_set, 5), None);
    assert_eq!(value(&w, e, health), (int(300), int(300)));
    // It is ordinary snapshot state.
    w.load(&saved).unwrap();
    assert_eq!(value(&w, e, health), (int(1), int(1)));
}

// ---------------------------------------------------------------------------------------------
// F-ATTR-11 Qualification policy
// ---------------------------------------------------------------------------------------------

fn slows_only(c: &[ModContribution], keep: &mut [bool]) {
    for (k, m) in keep.iter_mut().zip(c) {
        assert_eq!(m.contribution, m.magnitude, "Add channel bias is 0");
        *k = m.contribution < Fx::ZERO;
    }
}

#[test]
fn f_attr_11_qualification_filters() {
    let text = r#"(
        attribute_sets: { "Move": (attributes: {
            "Mnap": (default: 100, filter: MostNegativeAllPositive),
            "Greatest": (default: 100, filter: GreatestOnly),
            "Custom": (default: 100, filter: Custom("SlowsOnly")),
            "All": (default: 100),
            "MulMnap": (default: 100, filter: MostNegativeAllPositive, mul_policy: Compound),
        }) },
        effects: {
            "Slow30": (duration: Infinite, modifiers: [
                (attribute: "Mnap", op: Add, magnitude: Scalable(coef: -30)),
                (attribute: "Greatest", op: Add, magnitude: Scalable(coef: -30)),
                (attribute: "Custom", op: Add, magnitude: Scalable(coef: -30)),
                (attribute: "All", op: Add, magnitude: Scalable(coef: -30)),
                (attribute: "MulMnap", op: Multiply, magnitude: Scalable(coef: 0.75))]),
            "Slow50": (duration: Infinite, modifiers: [
                (attribute: "Mnap", op: Add, magnitude: Scalable(coef: -50)),
                (attribute: "Greatest", op: Add, magnitude: Scalable(coef: -50)),
                (attribute: "Custom", op: Add, magnitude: Scalable(coef: -50)),
                (attribute: "All", op: Add, magnitude: Scalable(coef: -50)),
                (attribute: "MulMnap", op: Multiply, magnitude: Scalable(coef: 0.5))]),
            "Buff20": (duration: Infinite, modifiers: [
                (attribute: "Mnap", op: Add, magnitude: Scalable(coef: 20)),
                (attribute: "Greatest", op: Add, magnitude: Scalable(coef: 20)),
                (attribute: "Custom", op: Add, magnitude: Scalable(coef: 20)),
                (attribute: "All", op: Add, magnitude: Scalable(coef: 20)),
                (attribute: "MulMnap", op: Multiply, magnitude: Scalable(coef: 1.25))]),
        },
    )"#;
    let mut w = build(text, Hooks::new().mod_filter("SlowsOnly", slows_only));
    let names = ["Mnap", "Greatest", "Custom", "All", "MulMnap"];
    let ids: Vec<AttrId> = names.iter().map(|n| attr(&w, n)).collect();
    let e = actor(&mut w, &["Move"]);
    apply(&mut w, "Slow30", e, e);
    let slow50 = handle(apply(&mut w, "Slow50", e, e));
    apply(&mut w, "Buff20", e, e);
    let now: Vec<Fx> = ids.iter().map(|a| w.attr(e, *a).unwrap()).collect();
    // MulMnap keeps 0.5 and 1.25: 100 × 0.5 × 1.25 = 62.5.
    assert_eq!(now, vec![int(70), int(50), int(20), int(40), fx("62.5")], "{names:?}");
    // Non-qualifying modifiers stay and qualify later.
    w.remove_effect(slow50);
    let now: Vec<Fx> = ids.iter().map(|a| w.attr(e, *a).unwrap()).collect();
    assert_eq!(now, vec![int(90), int(70), int(70), int(90), fx("93.75")], "{names:?}");
    // A custom filter content names must be registered.
    let err =
        World::<Plain>::new(content(text), &Hooks::new(), WorldConfig::default()).unwrap_err();
    assert!(
        matches!(&err, WorldError::MissingFunction { name, kind: FnKind::ModFilter, .. } if name == "SlowsOnly"),
        "{err:?}"
    );
}

#[test]
fn f_attr_11_filters_apply_per_channel_with_bias() {
    // "Negative" means below the channel bias: for Divide, a divisor below 1 is a buff.
    let mut w = world(
        r#"(
        attribute_sets: { "S": (attributes: { "X": (default: 100, filter: MostNegativeAllPositive) }) },
        effects: {
            "D2": (duration: Infinite, modifiers: [(attribute: "X", op: Divide, magnitude: Scalable(coef: 2))]),
            "DHalf": (duration: Infinite, modifiers: [(attribute: "X", op: Divide, magnitude: Scalable(coef: 0.5))]),
            "DQuarter": (duration: Infinite, modifiers: [(attribute: "X", op: Divide, magnitude: Scalable(coef: 0.25))]),
            "Sub": (duration: Infinite, modifiers: [(attribute: "X", op: Add, magnitude: Scalable(coef: -10))]),
        },
    )"#,
    );
    let x = attr(&w, "X");
    let e = actor(&mut w, &["S"]);
    for n in ["D2", "DHalf", "DQuarter", "Sub"] {
        apply(&mut w, n, e, e);
    }
    // Divide channel: 2 (contribution +1) counts; 0.5 and 0.25 are negative, only 0.25 counts.
    // Compound: (100 − 10) / (2 × 0.25) = 180.
    assert_eq!(w.attr(e, x), Some(int(180)));
    assert!(
        !w.output().diagnostics.iter().any(|d| matches!(d, Diagnostic::DivideByZero { .. })),
        "{:?}",
        w.output().diagnostics
    );
}
