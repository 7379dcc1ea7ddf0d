//! Granted abilities (F-GE-21), set level and recalculate (F-GE-22), changing the remaining
//! duration (F-GE-23) and inline effects (F-GE-24).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GE-21 Granted abilities
// ---------------------------------------------------------------------------------------------

const GRANTS: &str = r#"(
    abilities: { "Knockback": (), "Stay": (), "Keep": () },
    effects: {
        "Pushed": (duration: Frames(10), granted_abilities: [(ability: "Knockback", level: 2)]),
        "Held": (duration: Infinite, granted_abilities: [(ability: "Stay", removal: RemoveOnEnd)]),
        "Gift": (duration: Frames(10), granted_abilities: [(ability: "Keep", removal: DoNothing)]),
    },
)"#;

#[test]
fn f_ge_21_effects_grant_abilities_with_a_removal_policy() {
    let mut w = world(GRANTS);
    let c = w.content().clone();
    let [knockback, stay, keep] = ["Knockback", "Stay", "Keep"].map(|n| c.ability(n).unwrap());
    let e = actor(&mut w, &[]);
    let start = w.next_frame();
    let (mut pushed, mut gift) = (EffectHandle::NONE, EffectHandle::NONE);
    w.step_with(&[], |w| {
        pushed = handle(apply(w, "Pushed", e, e));
        gift = handle(apply(w, "Gift", e, e));
    });
    let kb = w.find_ability(e, knockback).expect("granted while the effect is active");
    assert_eq!(w.ability(kb).unwrap().level, 2);
    assert_eq!(w.granting_effect(kb), Some(pushed));
    let kept = w.find_ability(e, keep).unwrap();
    assert_eq!(w.granting_effect(kept), Some(gift));
    // CancelImmediately (the default): cancelled and removed with the effect.
    assert!(w.try_activate(kb).is_ok());
    assert!(w.is_ability_active(kb));
    run_through(&mut w, start + 9);
    assert!(w.find_ability(e, knockback).is_some());
    run_through(&mut w, start + 10);
    assert_eq!(w.find_ability(e, knockback), None);
    assert!(w.ability(kb).is_none());
    // DoNothing: the ability stays, no longer tied to an effect.
    assert_eq!(w.find_ability(e, keep), Some(kept));
    assert_eq!(w.granting_effect(kept), None);
    // RemoveOnEnd: an active ability stays until it ends.
    let held = handle(apply(&mut w, "Held", e, e));
    let st = w.find_ability(e, stay).unwrap();
    assert!(w.try_activate(st).is_ok());
    w.remove_effect(held);
    assert!(w.is_ability_active(st), "still running");
    w.end_ability(st);
    assert_eq!(w.find_ability(e, stay), None);
    // An inactive ability is removed at once.
    let held = handle(apply(&mut w, "Held", e, e));
    assert!(w.find_ability(e, stay).is_some());
    w.remove_effect(held);
    assert_eq!(w.find_ability(e, stay), None);
}

// ---------------------------------------------------------------------------------------------
// F-GE-22 Set level / recalculate
// ---------------------------------------------------------------------------------------------

fn enrage_calc(input: &CalcInput<'_>) -> Fx {
    let enraged = input.content.tag("State.Enraged").unwrap();
    let base = if input.target_tags.contains(enraged) { 10 } else { 1 };
    int(base * i64::from(input.level))
}

const LEVELS: &str = r#"#![enable(unwrap_variant_newtypes)]
(
    tags: ["State.Enraged", "Data.X"],
    attribute_sets: { "S": (attributes: {
        "Power": (default: 0), "Fury": (default: 0), "Str": (default: 10), "Snap": (default: 0) }) },
    curves: { "Lin": (points: [(1, 10), (5, 50)]) },
    effects: {
        "Scaled": (duration: Infinite, modifiers: [
            (attribute: "Power", op: Add, magnitude: Scalable(coef: 1, curve: "Lin")),
            (attribute: "Snap", op: Add, magnitude: SetByCaller("Data.X")),
            (attribute: "Snap", op: Add, magnitude: Attribute(attribute: "Str", side: Source, snapshot: true))]),
        "Rage": (duration: Infinite, modifiers: [(attribute: "Fury", op: Add, magnitude: Custom(calc: "EnrageCalc"))]),
    },
)"#;

#[test]
fn f_ge_22_set_effect_level_re_evaluates_level_dependent_magnitudes() {
    let mut w = build(LEVELS, Hooks::new().calc("EnrageCalc", &[], enrage_calc));
    let [power, snap, str_] = ["Power", "Snap", "Str"].map(|n| attr(&w, n));
    let x = tag(&w, "Data.X");
    let src = actor(&mut w, &["S"]);
    let e = actor(&mut w, &["S"]);
    let s = spec(&w, "Scaled", src).with_set_by_caller(x, int(3));
    let h = handle(w.apply_effect(s, e).unwrap());
    assert_eq!((w.attr(e, power), w.attr(e, snap)), (Some(int(10)), Some(int(13))));
    w.set_base(src, str_, int(20));
    let out = w.step_with(&[], |w| w.set_effect_level(h, 3)).clone();
    assert_eq!(w.effect(h).unwrap().level, 3);
    assert_eq!(w.effect_magnitude(h, 0), Some(int(30)));
    assert_eq!(w.effect_magnitude(h, 1), Some(int(3)), "SetByCaller keeps its value");
    assert_eq!(w.effect_magnitude(h, 2), Some(int(10)), "a snapshot keeps its value");
    assert_eq!(w.attr(e, power), Some(int(30)));
    assert_eq!(w.attr(e, snap), Some(int(13)));
    assert_eq!(
        out.attr_events.iter().map(|a| (a.attr, a.old, a.new, a.cause)).collect::<Vec<_>>(),
        vec![(power, int(10), int(30), AttrCause::Modifiers)]
    );
    // Re-setting the same level changes nothing here.
    let out = w.step_with(&[], |w| w.set_effect_level(h, 3)).clone();
    assert!(out.attr_events.is_empty());
    w.set_effect_level(h, 9);
    assert_eq!(w.attr(e, power), Some(int(50)), "clamped beyond the last point");
    // A stale handle is ignored.
    w.remove_effect(h);
    w.set_effect_level(h, 2);
    assert_eq!(w.attr(e, power), Some(int(0)));
}

#[test]
fn f_ge_22_recalculate_refreshes_calculations_with_non_attribute_inputs() {
    let mut w = build(LEVELS, Hooks::new().calc("EnrageCalc", &[], enrage_calc));
    let fury = attr(&w, "Fury");
    let enraged = tag(&w, "State.Enraged");
    let rage = def(&w, "Rage");
    let e = actor(&mut w, &["S"]);
    let h = handle(w.apply_effect(w.make_spec(rage, 2, e), e).unwrap());
    assert_eq!(w.attr(e, fury), Some(int(2)));
    w.add_loose_tag(e, enraged);
    assert_eq!(w.attr(e, fury), Some(int(2)), "a tag is not an attribute dependency");
    w.recalculate_effect(h);
    assert_eq!(w.attr(e, fury), Some(int(20)));
    assert_eq!(w.effect_magnitude(h, 0), Some(int(20)));
    w.remove_loose_tag(e, enraged);
    w.set_effect_level(h, 2);
    assert_eq!(w.attr(e, fury), Some(int(2)), "setting the same level forces a recalculation");
    w.set_effect_level(h, 4);
    assert_eq!(w.attr(e, fury), Some(int(4)));
}

#[test]
fn f_ge_22_recalculation_keeps_the_set_by_caller_inputs_of_calculations() {
    // Recalculating re-runs the calculation on the effect's spec, SetByCaller values included.
    let mut w = sbc_world();
    let mana = attr(&w, "Mana");
    let damage = tag(&w, "Data.Damage");
    let shield = def(&w, "ManaShield");
    let e = actor(&mut w, &["S"]);
    let s = w.make_spec(shield, 1, e).with_set_by_caller(damage, int(7));
    let h = handle(w.apply_effect(s, e).unwrap());
    assert_eq!(w.attr(e, mana), Some(int(57)));
    w.recalculate_effect(h);
    assert_eq!(w.effect_magnitude(h, 0), Some(int(7)));
    assert_eq!(w.attr(e, mana), Some(int(57)));
}

// ---------------------------------------------------------------------------------------------
// F-GE-23 Change remaining duration
// ---------------------------------------------------------------------------------------------

const LIFETIME: &str = r#"(
    attribute_sets: { "S": (attributes: { "Speed": (default: 100) }) },
    effects: {
        "Buff": (duration: Frames(100), modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 10))]),
        "Aura": (duration: Infinite, modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 1))]),
    },
)"#;

#[test]
fn f_ge_23_set_remaining_and_extend_move_the_expiry() {
    let mut w = world(LIFETIME);
    let speed = attr(&w, "Speed");
    let buff = def(&w, "Buff");
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    let mut changes = Vec::new();
    for frame in 0..=40u32 {
        let out = w
            .step_with(&[], |w| match frame {
                0 => h = handle(apply(w, "Buff", e, e)),
                10 => w.set_remaining(h, 50),
                20 => w.extend_effect(h, 30),
                30 => w.extend_effect(h, -50),
                _ => {}
            })
            .clone();
        for ev in &out.effect_events {
            if let EffectEvent::DurationChanged { handle, old_expires_at, new_expires_at } = ev {
                assert_eq!(*handle, h);
                changes.push((frame, *old_expires_at, *new_expires_at));
            }
        }
        match frame {
            10 => assert_eq!(w.effect_remaining(h).map(|r| r.0), Some(50)),
            20 => assert_eq!(w.effect_remaining(h).map(|r| r.0), Some(70)),
            39 => {
                assert_eq!(w.effect_remaining(h).map(|r| r.0), Some(1));
                assert_eq!(w.attr(e, speed), Some(int(110)));
            }
            40 => {
                assert_eq!(removed(&out), vec![(h, RemovalReason::Expired)]);
                assert_eq!(w.attr(e, speed), Some(int(100)));
            }
            _ => {}
        }
    }
    assert_eq!(changes, vec![(10, 100, 60), (20, 60, 90), (30, 90, 40)]);
    // Shortening to now or before, or setting 0 frames, removes the effect as expired.
    let out = w
        .step_with(&[], |w| {
            let h1 = handle(apply(w, "Buff", e, e));
            w.extend_effect(h1, -100);
            let h2 = handle(apply(w, "Buff", e, e));
            w.set_remaining(h2, 0);
        })
        .clone();
    let reasons: Vec<_> = out
        .effect_events
        .iter()
        .filter_map(|ev| match ev {
            EffectEvent::Removed { def, reason, .. } => Some((*def, *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, vec![(buff, RemovalReason::Expired), (buff, RemovalReason::Expired)]);
    assert!(w.effects(e).is_empty());
    assert_eq!(w.attr(e, speed), Some(int(100)));
}

#[test]
fn f_ge_23_infinite_effects_become_finite_with_set_remaining() {
    let mut w = world(LIFETIME);
    let speed = attr(&w, "Speed");
    let e = actor(&mut w, &["S"]);
    let h = handle(apply(&mut w, "Aura", e, e));
    let out = w.step_with(&[], |w| w.extend_effect(h, 10)).clone();
    assert!(out.effect_events.is_empty(), "extending an infinite effect does nothing");
    assert_eq!(w.effect_remaining(h), Some((NEVER, NEVER)), "still infinite");
    let f = w.next_frame();
    let out = w.step_with(&[], |w| w.set_remaining(h, 25)).clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::DurationChanged {
            handle: h,
            old_expires_at: NEVER,
            new_expires_at: f + 25
        }]
    );
    assert_eq!(w.effect_remaining(h), Some((25, 25)));
    run_through(&mut w, f + 24);
    assert_eq!(w.attr(e, speed), Some(int(101)));
    run_through(&mut w, f + 25);
    assert!(w.effect(h).is_none());
    assert_eq!(w.attr(e, speed), Some(int(100)));
    // Stale handles are ignored.
    let out = w
        .step_with(&[], |w| {
            w.set_remaining(h, 5);
            w.extend_effect(h, 5);
        })
        .clone();
    assert!(out.effect_events.is_empty());
}

// ---------------------------------------------------------------------------------------------
// F-GE-24 Runtime (inline) effects
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ge_24_inline_instant_specs_carry_their_own_modifiers() {
    MODS.with(|v| v.borrow_mut().clear());
    let mut w = build(
        r#"(attribute_sets: { "S": (attributes: {
            "Health": (default: 100), "Armor": (default: 10), "Power": (default: 40), "Speed": (default: 7),
            "Gold": (default: 0) }, post_execute: "RecordMod") })"#,
        Hooks::new().post_execute("RecordMod", record_mod),
    );
    let [health, armor, power, speed, gold] =
        ["Health", "Armor", "Power", "Speed", "Gold"].map(|n| attr(&w, n));
    let src = actor(&mut w, &["S"]);
    let e = actor(&mut w, &["S"]);
    let mods = [
        (health, ModOp::Add, int(-10)),
        (armor, ModOp::Multiply, int(2)),
        (power, ModOp::Divide, int(4)),
        (speed, ModOp::Override, int(42)),
        (gold, ModOp::Add, int(5)),
    ];
    // The spec holds four modifiers: a fifth marks it, and applying it fails rather than
    // leaving one out (`World::inline_spec` holds more when configured).
    let five = EffectSpec::inline(&mods);
    assert_eq!(five.n_inline, 4);
    assert_eq!(
        w.apply_effect(five, e),
        Err(ApplyError::SpecValuesDropped {
            capacity: rollback_abilities::Capacity::InlineModifiersPerSpec
        })
    );
    let s = EffectSpec::inline(&mods[..4]).with_instigator(src);
    assert!(s.is_inline());
    assert_eq!(s.n_inline, 4);
    let out = w.step_with(&[], |w| assert_eq!(w.apply_effect(s, e), Ok(Applied::Executed))).clone();
    assert_eq!(
        [health, armor, power, speed, gold].map(|a| w.base(e, a).unwrap()),
        [int(90), int(20), int(10), int(42), int(0)]
    );
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::Executed { target: e, def: None, handle: None }]
    );
    assert_eq!(out.attr_events.len(), 4);
    assert!(out.attr_events.iter().all(|a| a.cause == AttrCause::Execution { def: None }));
    let mods = MODS.with(|v| v.borrow().clone());
    assert_eq!(
        mods.iter().map(|m| (m.attr, m.op, m.magnitude, m.def, m.instigator)).collect::<Vec<_>>(),
        vec![
            (health, ModOp::Add, int(-10), None, src),
            (armor, ModOp::Multiply, int(2), None, src),
            (power, ModOp::Divide, int(4), None, src),
            (speed, ModOp::Override, int(42), None, src),
        ]
    );
    assert!(w.effects(e).is_empty(), "inline specs never become active");
    // An inline spec still needs a live target.
    w.despawn(src);
    let out = w
        .step_with(&[], |w| {
            let s = EffectSpec::inline(&[(health, ModOp::Add, int(1))]);
            assert_eq!(w.apply_effect(s, src), Err(ApplyError::InvalidTarget));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::ApplyFailed { target: src, def: None, error: ApplyError::InvalidTarget }]
    );
}
