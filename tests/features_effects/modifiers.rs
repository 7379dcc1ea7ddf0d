//! Modifiers and aggregation (F-GE-08), modifier tags (F-GE-09), magnitude kinds (F-GE-10),
//! snapshot rules (F-GE-11) and SetByCaller (F-GE-12).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GE-08 Modifiers and aggregation
// ---------------------------------------------------------------------------------------------

const AGG: &str = r#"(
    attribute_sets: { "S": (attributes: { "X": (default: 10) }) },
    effects: {
        "AddX": (duration: Infinite, modifiers: [(attribute: "X", op: Add, magnitude: Scalable(coef: 5))]),
        "MulX": (duration: Infinite, modifiers: [(attribute: "X", op: Multiply, magnitude: Scalable(coef: 3))]),
        "DivX": (duration: Infinite, modifiers: [(attribute: "X", op: Divide, magnitude: Scalable(coef: 2))]),
        "Ov7": (duration: Infinite, modifiers: [(attribute: "X", op: Override, magnitude: Scalable(coef: 7))]),
        "Ov3": (duration: Infinite, modifiers: [(attribute: "X", op: Override, magnitude: Scalable(coef: 3))]),
        "OvPair": (duration: Infinite, modifiers: [
            (attribute: "X", op: Override, magnitude: Scalable(coef: 100)),
            (attribute: "X", op: Override, magnitude: Scalable(coef: 200))]),
    },
)"#;

#[test]
fn f_ge_08_four_ops_aggregate_as_base_plus_add_times_mul_over_div() {
    let mut w = world(AGG);
    let x = attr(&w, "X");
    let e = actor(&mut w, &["S"]);
    // Application order does not matter for Add/Multiply/Divide.
    let mul = handle(apply(&mut w, "MulX", e, e));
    assert_eq!(w.attr(e, x), Some(int(30)));
    let div = handle(apply(&mut w, "DivX", e, e));
    assert_eq!(w.attr(e, x), Some(int(15)));
    apply(&mut w, "AddX", e, e);
    assert_eq!(w.attr(e, x), Some(fx("22.5")), "((10 + 5) × 3) / 2");
    // Override wins outright; the latest applied override wins.
    let ov7 = handle(apply(&mut w, "Ov7", e, e));
    assert_eq!(w.attr(e, x), Some(int(7)));
    let ov3 = handle(apply(&mut w, "Ov3", e, e));
    assert_eq!(w.attr(e, x), Some(int(3)));
    w.remove_effect(ov3);
    assert_eq!(w.attr(e, x), Some(int(7)), "the earlier override is back");
    let out = w.step_with(&[], |w| w.remove_effect(ov7)).clone();
    assert_eq!(w.attr(e, x), Some(fx("22.5")));
    assert_eq!(out.attr_events.len(), 1);
    assert_eq!(
        (out.attr_events[0].old, out.attr_events[0].new, out.attr_events[0].cause),
        (int(7), fx("22.5"), AttrCause::Modifiers)
    );
    w.remove_effect(mul);
    w.remove_effect(div);
    assert_eq!(w.attr(e, x), Some(int(15)));
    assert_eq!(w.base(e, x), Some(int(10)), "duration modifiers never touch the base");
    // Within one effect the later modifier wins.
    apply(&mut w, "OvPair", e, e);
    assert_eq!(w.attr(e, x), Some(int(200)));
    // Instant changes of the base stay under an active override.
    w.apply_effect(EffectSpec::inline(&[(x, ModOp::Add, int(1000))]), e).unwrap();
    assert_eq!(value(&w, e, x), (int(1010), int(200)));
}

#[test]
fn f_ge_08_override_order_is_application_order_and_survives_rollback() {
    let mut w = world(AGG);
    let x = attr(&w, "X");
    let (ov7, ov3) = (def(&w, "Ov7"), def(&w, "Ov3"));
    let e = actor(&mut w, &["S"]);
    run_until(&mut w, 5);
    let snap = w.snapshot();
    // Ov7 in frame 10, Ov3 in frame 12 (`first`, `second` swap the order).
    let run = |w: &mut World<Plain>, first: EffectDefId, second: EffectDefId| {
        let mut hs = Vec::new();
        while w.next_frame() <= 20 {
            w.step_with(&[], |w| {
                let d = match w.frame() {
                    10 => first,
                    12 => second,
                    _ => return,
                };
                let s = w.make_spec(d, 1, e);
                hs.push(handle(w.apply_effect(s, e).unwrap()));
            });
        }
        (hs, w.checksum(), w.attr(e, x).unwrap())
    };
    let (hs1, sum1, v1) = run(&mut w, ov7, ov3);
    assert_eq!(v1, int(3), "Ov3 was applied last");
    assert!(hs1[0].seq < hs1[1].seq);
    // Roll back and re-simulate: the same winner, the same handles, the same state.
    w.load(&snap).unwrap();
    assert_eq!(w.attr(e, x), Some(int(10)));
    let (hs2, sum2, v2) = run(&mut w, ov7, ov3);
    assert_eq!((hs2, sum2, v2), (hs1.clone(), sum1, int(3)));
    // A different application order gives the other winner.
    w.load(&snap).unwrap();
    let (_, sum3, v3) = run(&mut w, ov3, ov7);
    assert_eq!(v3, int(7));
    assert_ne!(sum3, sum1);
    // Removing the later override after a rollback restores the earlier one.
    w.load(&snap).unwrap();
    let (hs4, _, _) = run(&mut w, ov7, ov3);
    w.remove_effect(hs4[1]);
    assert_eq!(w.attr(e, x), Some(int(7)));
}

// ---------------------------------------------------------------------------------------------
// F-GE-09 Modifier tags
// ---------------------------------------------------------------------------------------------

const MODTAGS: &str = r#"(
    tags: ["State.Wet", "Source.Fire"],
    attribute_sets: { "S": (attributes: { "Health": (default: 100), "Speed": (default: 100) }) },
    effects: {
        "Chill": (duration: Infinite, modifiers: [
            (attribute: "Speed", op: Add, magnitude: Scalable(coef: -30), target_tags: (require: ["State.Wet"]))]),
        "Burn": (duration: Infinite, period: Frames(10), modifiers: [
            (attribute: "Health", op: Add, magnitude: Scalable(coef: -1), source_tags: (require: ["Source.Fire"]))]),
        "Soak": (duration: Infinite, period: Frames(10), modifiers: [
            (attribute: "Health", op: Add, magnitude: Scalable(coef: -3), target_tags: (require: ["State.Wet"]))]),
        "Shock": (duration: Infinite, period: Frames(10), modifiers: [
            (attribute: "Health", op: Add, magnitude: Scalable(coef: -2), target_tags: (require: ["State.Wet"]),
             reevaluate_each_period: true)]),
        "Zap": (modifiers: [
            (attribute: "Health", op: Add, magnitude: Scalable(coef: -10), target_tags: (ignore: ["State.Wet"])),
            (attribute: "Speed", op: Add, magnitude: Scalable(coef: -1))]),
    },
)"#;

#[test]
fn f_ge_09_modifier_tag_requirements_are_checked_once_at_application() {
    let mut w = world(MODTAGS);
    let (health, speed, wet) = (attr(&w, "Health"), attr(&w, "Speed"), tag(&w, "State.Wet"));
    let e = actor(&mut w, &["S"]);
    // Duration modifier: dry at application → never qualifies, even when wet later.
    let chill = handle(apply(&mut w, "Chill", e, e));
    assert!(!w.effect(chill).unwrap().mod_qualified(0));
    assert_eq!(w.attr(e, speed), Some(int(100)));
    w.add_loose_tag(e, wet);
    assert_eq!(w.attr(e, speed), Some(int(100)));
    w.remove_effect(chill);
    let chill = handle(apply(&mut w, "Chill", e, e));
    assert!(w.effect(chill).unwrap().mod_qualified(0));
    assert_eq!(w.attr(e, speed), Some(int(70)));
    w.remove_loose_tag(e, wet);
    assert_eq!(w.attr(e, speed), Some(int(70)), "a qualified modifier stays qualified");
    // Instant: a non-qualifying modifier is skipped, the others run.
    w.add_loose_tag(e, wet);
    assert_eq!(apply(&mut w, "Zap", e, e), Applied::Executed);
    assert_eq!(value(&w, e, health), (int(100), int(100)));
    assert_eq!(w.base(e, speed), Some(int(99)));
    w.remove_loose_tag(e, wet);
    apply(&mut w, "Zap", e, e);
    assert_eq!(value(&w, e, health), (int(90), int(90)));
}

#[test]
fn f_ge_09_source_tags_are_those_captured_at_spec_creation() {
    let mut w = world(MODTAGS);
    let (health, fire) = (attr(&w, "Health"), tag(&w, "Source.Fire"));
    let src = actor(&mut w, &["S"]);
    let burned = actor(&mut w, &["S"]);
    let spared = actor(&mut w, &["S"]);
    let cold = spec(&w, "Burn", src);
    w.add_loose_tag(src, fire);
    let hot = spec(&w, "Burn", src);
    w.remove_loose_tag(src, fire);
    w.step_with(&[], |w| {
        w.apply_effect(hot, burned).unwrap();
        w.apply_effect(cold, spared).unwrap();
        // The source gains the tag after the cold spec was made: it stays unqualified.
        w.add_loose_tag(src, fire);
    });
    run_through(&mut w, 30);
    assert_eq!(w.base(burned, health), Some(int(97)), "ticks at 10, 20, 30");
    assert_eq!(w.base(spared, health), Some(int(100)));
}

#[test]
fn f_ge_09_periodic_ticks_ignore_later_tag_changes_unless_reevaluated() {
    let mut w = world(MODTAGS);
    let (health, wet) = (attr(&w, "Health"), tag(&w, "State.Wet"));
    let soaked = actor(&mut w, &["S"]);
    let shocked = actor(&mut w, &["S"]);
    let late = actor(&mut w, &["S"]);
    let mut shock_ticks = Vec::new();
    let mut shock = EffectHandle::NONE;
    for frame in 0..=50u32 {
        let out = w
            .step_with(&[], |w| match frame {
                0 => {
                    w.add_loose_tag(soaked, wet);
                    w.add_loose_tag(shocked, wet);
                    apply(w, "Soak", soaked, soaked);
                    shock = handle(apply(w, "Shock", shocked, shocked));
                    apply(w, "Shock", late, late);
                }
                15 => {
                    w.remove_loose_tag(soaked, wet);
                    w.remove_loose_tag(shocked, wet);
                }
                25 => w.add_loose_tag(late, wet),
                35 => w.add_loose_tag(shocked, wet),
                _ => {}
            })
            .clone();
        if out.attr_events.iter().any(|a| a.entity == shocked && a.attr == health) {
            shock_ticks.push(frame);
        }
        // The periodic execution itself still happens when its modifier does not qualify.
        if frame % 10 == 0 && frame > 0 {
            assert!(executed_handles(&out).contains(&Some(shock)), "frame {frame}");
        }
    }
    assert_eq!(w.base(soaked, health), Some(int(85)), "5 ticks of −3 (G-08: no re-check)");
    assert_eq!(shock_ticks, vec![10, 40, 50], "re-checked before every execution");
    assert_eq!(w.base(shocked, health), Some(int(94)));
    assert_eq!(w.base(late, health), Some(int(94)), "qualifies from the tick at 30 on");
}

// ---------------------------------------------------------------------------------------------
// F-GE-10 Magnitude kinds
// ---------------------------------------------------------------------------------------------

const MAGS: &str = r#"#![enable(unwrap_variant_newtypes)]
(
    tags: ["Data.Amount"],
    attribute_sets: { "S": (attributes: {
        "A": (default: 0), "B": (default: 0), "C": (default: 0), "Str": (default: 10),
        "Out1": (default: 0), "Out2": (default: 0), "Out3": (default: 0), "Out4": (default: 0),
        "Out5": (default: 0) }) },
    curves: {
        "Lin": (interp: Linear, points: [(1, 10), (5, 50), (9, 10)]),
        "Stp": (interp: Step, points: [(2, 100), (4, 400)]),
    },
    effects: {
        "LinBuff": (duration: Infinite, modifiers: [(attribute: "A", op: Add, magnitude: Scalable(coef: 2, curve: "Lin"))]),
        "StpBuff": (duration: Infinite, modifiers: [(attribute: "B", op: Add, magnitude: Scalable(coef: 0.5, curve: "Stp"))]),
        "Flat": (duration: Infinite, modifiers: [(attribute: "C", op: Add, magnitude: Scalable(coef: 7))]),
        "StrBuff": (duration: Infinite, modifiers: [(attribute: "Str", op: Add, magnitude: Scalable(coef: 5))]),
        "Probe": (modifiers: [
            (attribute: "Out1", op: Override, magnitude: Attribute(attribute: "Str", side: Target, coef: 2, pre: 3, post: 1)),
            (attribute: "Out2", op: Override, magnitude: Attribute(attribute: "Str", side: Target, which: Base)),
            (attribute: "Out3", op: Override, magnitude: Attribute(attribute: "Str", side: Target, which: Current)),
            (attribute: "Out4", op: Override, magnitude: Attribute(attribute: "Str", side: Source, which: Bonus, coef: -1)),
            (attribute: "Out5", op: Override, magnitude: SetByCaller("Data.Amount")),
        ]),
    },
)"#;

#[test]
fn f_ge_10_scalable_magnitudes_follow_curves_with_interpolation_and_clamping() {
    let mut w = world(MAGS);
    let (a, b, c) = (attr(&w, "A"), attr(&w, "B"), attr(&w, "C"));
    let e = actor(&mut w, &["S"]);
    type Case<'a> = (&'a str, AttrId, &'a [(u16, &'a str)]);
    let cases: [Case; 3] = [
        // Linear between points, the first value below the first point, the last beyond.
        (
            "LinBuff",
            a,
            &[
                (0, "20"),
                (1, "20"),
                (2, "40"),
                (3, "60"),
                (4, "80"),
                (5, "100"),
                (7, "60"),
                (9, "20"),
                (20, "20"),
            ],
        ),
        // Step: the value of the nearest point at or below the level.
        ("StpBuff", b, &[(0, "50"), (1, "50"), (2, "50"), (3, "50"), (4, "200"), (10, "200")]),
        // No curve: the coefficient at every level.
        ("Flat", c, &[(1, "7"), (9, "7"), (65535, "7")]),
    ];
    for (name, at, rows) in cases {
        let d = def(&w, name);
        for &(level, want) in rows {
            let s = w.make_spec(d, level, e);
            let h = handle(w.apply_effect(s, e).unwrap());
            assert_eq!(w.effect_magnitude(h, 0), Some(fx(want)), "{name} level {level}");
            assert_eq!(w.attr(e, at), Some(fx(want)), "{name} level {level}");
            w.remove_effect(h);
        }
    }
    let curves = w.content().curve_defs();
    assert_eq!(curves[w.content().curve("Lin").unwrap().index()].eval(6), int(40));
    assert_eq!(curves[w.content().curve("Stp").unwrap().index()].eval(3), int(100));
}

#[test]
fn f_ge_10_attribute_based_and_set_by_caller_magnitudes() {
    let mut w = world(MAGS);
    let [out1, out2, out3, out4, out5] =
        ["Out1", "Out2", "Out3", "Out4", "Out5"].map(|n| attr(&w, n));
    let amount = tag(&w, "Data.Amount");
    let src = actor(&mut w, &["S"]);
    let t = actor(&mut w, &["S"]);
    apply(&mut w, "StrBuff", src, src);
    apply(&mut w, "StrBuff", t, t);
    let s = spec(&w, "Probe", src).with_set_by_caller(amount, fx("12.5"));
    assert_eq!(w.apply_effect(s, t), Ok(Applied::Executed));
    assert_eq!(w.base(t, out1), Some(int(37)), "coef × (value + pre) + post = 2 × (15 + 3) + 1");
    assert_eq!(w.base(t, out2), Some(int(10)), "Base");
    assert_eq!(w.base(t, out3), Some(int(15)), "Current");
    assert_eq!(w.base(t, out4), Some(int(-5)), "the source's Bonus (current − base), × −1");
    assert_eq!(w.base(t, out5), Some(fx("12.5")), "SetByCaller");
}

// ---------------------------------------------------------------------------------------------
// F-GE-11 Snapshot rules
// ---------------------------------------------------------------------------------------------

const CAPTURES: &str = r#"#![enable(unwrap_variant_newtypes)]
(
    attribute_sets: { "S": (attributes: { "Power": (default: 10), "Health": (default: 100), "Armor": (default: 0) }) },
    effects: {
        "Aura": (duration: Infinite, modifiers: [
            (attribute: "Health", op: Add, magnitude: Attribute(attribute: "Power", side: Source))]),
        "AuraSnap": (duration: Infinite, modifiers: [
            (attribute: "Health", op: Add, magnitude: Attribute(attribute: "Power", side: Source, snapshot: true))]),
        "Harden": (duration: Infinite, modifiers: [
            (attribute: "Armor", op: Add, magnitude: Attribute(attribute: "Power", side: Target, coef: 2))]),
        "HardenSnap": (duration: Infinite, modifiers: [
            (attribute: "Armor", op: Add, magnitude: Attribute(attribute: "Power", side: Target, coef: 3, snapshot: true))]),
    },
)"#;

#[test]
fn f_ge_11_snapshot_and_live_captures_on_both_sides() {
    let mut w = world(CAPTURES);
    let (power, health, armor) = (attr(&w, "Power"), attr(&w, "Health"), attr(&w, "Armor"));
    let src = actor(&mut w, &["S"]);
    let live_t = actor(&mut w, &["S"]);
    let snap_t = actor(&mut w, &["S"]);
    let (aura, aura_snap) = (spec(&w, "Aura", src), spec(&w, "AuraSnap", src));
    w.step(&[]);
    w.set_base(src, power, int(20));
    w.step(&[]);
    w.apply_effect(aura, live_t).unwrap();
    w.apply_effect(aura_snap, snap_t).unwrap();
    assert_eq!(w.attr(live_t, health), Some(int(120)), "non-snapshot source: read at application");
    assert_eq!(w.attr(snap_t, health), Some(int(110)), "snapshot source: read at spec creation");
    let out = w.step_with(&[], |w| w.set_base(src, power, int(30))).clone();
    assert_eq!(w.attr(live_t, health), Some(int(130)), "and followed live");
    assert_eq!(w.attr(snap_t, health), Some(int(110)));
    assert!(out.attr_events.iter().any(|a| a.entity == live_t && a.new == int(130)));
    assert!(!out.attr_events.iter().any(|a| a.entity == snap_t));
    // A despawned source freezes its last value.
    w.despawn(src);
    assert_eq!(w.attr(live_t, health), Some(int(130)));
    // Target side: snapshot at application vs live.
    let t = actor(&mut w, &["S"]);
    apply(&mut w, "Harden", t, t);
    apply(&mut w, "HardenSnap", t, t);
    assert_eq!(w.attr(t, armor), Some(int(50)), "2 × 10 + 3 × 10");
    w.set_base(t, power, int(20));
    assert_eq!(w.attr(t, armor), Some(int(70)), "2 × 20 + 3 × 10");
}

#[test]
fn f_ge_11_custom_calc_non_snapshot_captures_follow_live_on_duration_effects() {
    // F-GE-11: a non-snapshot capture (either side) is read at application and
    // live-updated for duration/infinite effects; this holds for calculations (F-GE-13) too.
    let mut w = build(
        r#"(attribute_sets: { "S": (attributes: { "Str": (default: 10), "Out": (default: 0) }) },
            effects: { "Mmc": (duration: Infinite, modifiers: [
                (attribute: "Out", op: Add, magnitude: Custom(calc: "HalfStr"))]) })"#,
        Hooks::new().calc("HalfStr", &[Capture::target("Str")], half_str),
    );
    let (str_, out) = (attr(&w, "Str"), attr(&w, "Out"));
    let e = actor(&mut w, &["S"]);
    apply(&mut w, "Mmc", e, e);
    assert_eq!(w.attr(e, out), Some(int(5)));
    w.set_base(e, str_, int(20));
    assert_eq!(w.attr(e, out), Some(int(10)), "the captured Str changed: 20 / 2");
}

// ---------------------------------------------------------------------------------------------
// F-GE-12 SetByCaller
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ge_12_set_by_caller_magnitudes_durations_and_validation() {
    let mut w = sbc_world();
    let (health, mana) = (attr(&w, "Health"), attr(&w, "Mana"));
    let [damage, dur, unused] = ["Data.Damage", "Data.Duration", "Data.Unused"].map(|n| tag(&w, n));
    let [strike, sap] = ["Strike", "Sap"].map(|n| def(&w, n));
    let e = actor(&mut w, &["S"]);
    let s = w.make_spec(strike, 1, e).with_set_by_caller(damage, int(-10));
    assert_eq!(w.apply_effect(s.with_set_by_caller(unused, int(3)), e), Ok(Applied::Executed));
    assert_eq!(w.base(e, health), Some(int(90)));
    // A missing key fails before anything changes, with the key named.
    let out = w
        .step_with(&[], |w| {
            let s = w.make_spec(strike, 1, e).with_set_by_caller(unused, int(3));
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::MissingSetByCaller { tag: damage }));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::ApplyFailed {
            target: e,
            def: Some(strike),
            error: ApplyError::MissingSetByCaller { tag: damage }
        }]
    );
    assert!(out.attr_events.is_empty());
    assert_eq!(w.base(e, health), Some(int(90)));
    let s = w.make_spec(strike, 1, e);
    let before = w.state_bytes();
    assert_eq!(w.apply_effect(s, e), Err(ApplyError::MissingSetByCaller { tag: damage }));
    assert!(w.state_bytes() == before, "nothing was mutated (G-03)");
    // A divisor from a missing key never reaches the aggregator (G-03).
    let s = w.make_spec(sap, 1, e).with_set_by_caller(dur, int(20));
    assert_eq!(w.apply_effect(s, e), Err(ApplyError::MissingSetByCaller { tag: damage }));
    assert_eq!(w.attr(e, mana), Some(int(50)));
    assert!(!w.output().diagnostics.iter().any(|d| matches!(d, Diagnostic::DivideByZero { .. })));
    let start = w.next_frame();
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| {
        let s = w
            .make_spec(sap, 1, e)
            .with_set_by_caller(dur, int(20))
            .with_set_by_caller(damage, int(2));
        h = handle(w.apply_effect(s, e).unwrap());
    });
    assert_eq!(w.attr(e, mana), Some(int(25)));
    assert_eq!(w.effect_remaining(h), Some((20, 20)));
    assert_eq!(w.effect_magnitude(h, 0), Some(int(2)));
    run_through(&mut w, start + 20);
    assert_eq!(w.attr(e, mana), Some(int(50)));
}

#[test]
fn f_ge_12_periodic_set_by_caller_magnitude_uses_the_stored_value_every_tick() {
    let mut w = sbc_world();
    let health = attr(&w, "Health");
    let damage = tag(&w, "Data.Damage");
    let bleed = def(&w, "Bleed");
    let e = actor(&mut w, &["S"]);
    w.step_with(&[], |w| {
        let s = w.make_spec(bleed, 1, e).with_set_by_caller(damage, int(-7));
        w.apply_effect(s, e).unwrap();
    });
    run_through(&mut w, 30);
    assert_eq!(w.base(e, health), Some(int(79)), "ticks at 10, 20, 30");
}

#[test]
fn f_ge_12_periodic_custom_calc_reads_set_by_caller_on_every_execution() {
    // The active effect keeps the spec's SetByCaller values (F-GE-02, F-GE-12), so a calculation
    // re-run at each periodic execution reads them like at application.
    let mut w = sbc_world();
    let mana = attr(&w, "Mana");
    let damage = tag(&w, "Data.Damage");
    let burn = def(&w, "ManaBurn");
    let e = actor(&mut w, &["S"]);
    w.step_with(&[], |w| {
        let s = w.make_spec(burn, 1, e).with_set_by_caller(damage, int(-3));
        w.apply_effect(s, e).unwrap();
    });
    run_through(&mut w, 30);
    assert_eq!(w.base(e, mana), Some(int(41)), "three ticks of −3");
}
