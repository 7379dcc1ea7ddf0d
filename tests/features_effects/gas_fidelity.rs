//! GAS fidelity: durations and periods as magnitudes, tag filters of attribute-based
//! magnitudes, the post-execute context, scoped modifiers and transient aggregators, and the
//! aggregated tags of the cues an effect triggers (F-GC-09).

use super::*;

// ---------------------------------------------------------------------------------------------
// GAS fidelity: durations and periods as magnitudes (F-GA-08, F-GE-04, F-GE-05)
// ---------------------------------------------------------------------------------------------

fn hitstun(input: &CalcInput<'_>) -> Fx {
    // 10 frames plus 4 per combo hit on the target.
    int(10) + input.capture(0) * 4
}

const TIMES: &str = r#"#![enable(unwrap_variant_newtypes)]
(
    tags: ["Cooldown.Blink", "Data.Period", "State.Stun"],
    attribute_sets: { "S": (attributes: {
        "Health": (default: 100), "CooldownReduction": (default: 0), "Combo": (default: 0) }) },
    curves: {
        "BlinkCooldown": (points: [(1, 300), (3, 180)]),
        "TickRate": (interp: Step, points: [(1, 30), (2, 20)]),
    },
    effects: {
        "BlinkCooldown": (duration: Scalable(coef: 1, curve: "BlinkCooldown"),
                          granted_tags: ["Cooldown.Blink"]),
        "ReducedCooldown": (duration: Attribute(attribute: "CooldownReduction", side: Source,
                                                coef: -300, post: 300),
                            granted_tags: ["Cooldown.Blink"]),
        "Hitstun": (duration: Custom(calc: "Hitstun"), granted_tags: ["State.Stun"]),
        "Tick": (duration: Frames(100), period: SetByCaller("Data.Period"),
                 modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "LevelTick": (duration: Infinite, period: Scalable(coef: 1, curve: "TickRate"),
                      modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))],
                      stacking: (kind: ByTarget, limit: 3, period: ResetOnApplication)),
    },
    abilities: { "Blink": (cooldown: "BlinkCooldown", end_after: Frames(1)) },
)"#;

fn times_world() -> World<Plain> {
    build(TIMES, Hooks::new().calc("Hitstun", &[Capture::target("Combo")], hitstun))
}

#[test]
fn f_ga_08_a_level_scaled_cooldown_reads_its_curve_at_the_ability_level() {
    let mut w = times_world();
    let blink = w.content().ability("Blink").unwrap();
    let cooldown = def(&w, "BlinkCooldown");
    assert!(matches!(w.content().effect_def(cooldown).duration, DurationDef::Magnitude(_)));
    // Levels 1, 2 and 3 of the same ability and cooldown effect: 300, 240 (linear) and 180.
    for (level, frames) in [(1, 300), (2, 240), (3, 180)] {
        let e = actor(&mut w, &["S"]);
        let h = w.grant_ability(e, blink, level).unwrap();
        w.try_activate(h).unwrap();
        assert_eq!(w.ability_cooldown_remaining(h), Some((frames, frames)), "level {level}");
    }
}

#[test]
fn f_ga_08_cooldown_reduction_of_the_source_shortens_the_duration_rounded_to_the_nearest_frame() {
    let mut w = times_world();
    let cdr = attr(&w, "CooldownReduction");
    let (src, target) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    // 300 × (1 − CDR) frames. 0.1 is not exact in binary: 300 − 300 × 0.1 is 269.99999997…,
    // which rounds to 270 (rounding down would give 269).
    for (value, frames) in [("0", 300), ("0.25", 225), ("0.1", 270), ("0.5", 150)] {
        w.set_base(src, cdr, fx(value));
        let h = handle(apply(&mut w, "ReducedCooldown", src, target));
        assert_eq!(w.effect_remaining(h), Some((frames, frames)), "CDR {value}");
        assert!(w.output().diagnostics.is_empty());
        w.remove_effect(h);
    }
    // 100% reduction: 0 frames is clamped to 1 and reported.
    w.set_base(src, cdr, int(1));
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "ReducedCooldown", src);
            let h = handle(w.apply_effect(s, target).unwrap());
            assert_eq!(w.effect_remaining(h), Some((1, 1)));
        })
        .clone();
    assert_eq!(
        out.diagnostics,
        vec![Diagnostic::TimeClamped {
            target,
            def: def(&w, "ReducedCooldown"),
            period: false,
            value: Fx::ZERO
        }]
    );
}

#[test]
fn f_ge_04_a_custom_calculation_gives_hitstun_scaled_by_combo_count() {
    let mut w = times_world();
    let (combo, stun) = (attr(&w, "Combo"), tag(&w, "State.Stun"));
    let (src, target) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let h = handle(apply(&mut w, "Hitstun", src, target));
    assert_eq!(w.effect_remaining(h), Some((10, 10)));
    w.remove_effect(h);
    w.set_base(target, combo, int(5));
    let start = w.next_frame();
    w.step_with(&[], |w| {
        apply(w, "Hitstun", src, target);
    });
    run_through(&mut w, start + 29);
    assert!(w.has_tag(target, stun), "30 frames: present through S + 29");
    w.step(&[]);
    assert!(!w.has_tag(target, stun));
}

#[test]
fn f_ge_05_a_set_by_caller_period_is_evaluated_at_application_and_survives_rollback() {
    let mut w = times_world();
    let (health, period_key) = (attr(&w, "Health"), tag(&w, "Data.Period"));
    let e = actor(&mut w, &["S"]);
    // A missing key fails before anything changes (G-03).
    assert_eq!(
        w.apply_effect(spec(&w, "Tick", e), e),
        Err(ApplyError::MissingSetByCaller { tag: period_key })
    );
    let start = w.next_frame();
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| {
        let s = spec(w, "Tick", e).with_set_by_caller(period_key, int(25));
        h = handle(w.apply_effect(s, e).unwrap());
    });
    assert_eq!(w.effect_timer(h).unwrap().next_period_at, start + 25);
    run_through(&mut w, start + 10);
    let saved = w.snapshot();
    run_through(&mut w, start + 60);
    let (checksum, hp) = (w.checksum(), w.base(e, health));
    assert_eq!(hp, Some(int(98)), "ticks at S + 25 and S + 50");
    w.load(&saved).unwrap();
    run_through(&mut w, start + 60);
    assert_eq!((w.checksum(), w.base(e, health)), (checksum, hp), "the period is in the snapshot");
    run_through(&mut w, start + 100);
    assert_eq!(w.base(e, health), Some(int(96)), "4 ticks: the last on the expiry frame");
    assert!(w.effect(h).is_none());
    // A period of 0 frames is clamped to 1 and reported.
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "Tick", e).with_set_by_caller(period_key, Fx::ZERO);
            w.apply_effect(s, e).unwrap();
        })
        .clone();
    assert!(out.diagnostics.iter().any(|d| matches!(
        d,
        Diagnostic::TimeClamped { period: true, value, .. } if *value == Fx::ZERO
    )));
    let before = w.base(e, health).unwrap();
    w.step(&[]);
    assert_eq!(w.base(e, health), Some(before - int(1)), "one tick every frame");
}

#[test]
fn f_ge_05_a_level_scaled_period_is_kept_per_instance_and_reused_by_a_period_reset() {
    let mut w = times_world();
    let health = attr(&w, "Health");
    let e = actor(&mut w, &["S"]);
    let tick = def(&w, "LevelTick");
    let start = w.next_frame();
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| {
        h = handle(w.apply_effect(w.make_spec(tick, 1, e), e).unwrap());
    });
    assert_eq!(w.effect_timer(h).unwrap().next_period_at, start + 30, "level 1: 30 frames");
    run_through(&mut w, start + 10);
    // A level-2 stack resets the period with the instance's own period (30), not 20.
    w.step_with(&[], |w| {
        w.apply_effect(w.make_spec(tick, 2, e), e).unwrap();
    });
    assert_eq!(w.effect_timer(h).unwrap().next_period_at, start + 11 + 30);
    run_through(&mut w, start + 41);
    assert_eq!(w.base(e, health), Some(int(98)), "one tick of two stacks at S + 41");
    // A new instance at level 2 ticks every 20 frames.
    w.remove_effect(h);
    let s2 = w.next_frame();
    w.step_with(&[], |w| {
        h = handle(w.apply_effect(w.make_spec(tick, 2, e), e).unwrap());
    });
    assert_eq!(w.effect_timer(h).unwrap().next_period_at, s2 + 20);
}

#[test]
fn f_ge_04_duration_and_period_magnitudes_are_validated_where_they_are_written() {
    let err = |text: &str| Content::from_ron_str(text).unwrap_err();
    let e = err(r#"(effects: { "Blip": (duration: Scalable(coef: 0.4)) })"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ContentErrorKind::InvalidValue, "effects.Blip.duration.coef")
    );
    assert!(e.message.contains("at least 1 frame"), "{e}");
    let e = err(r#"(
        curves: { "Low": (points: [(1, 0), (5, 0.4)]) },
        effects: { "Spin": (duration: Infinite, period: Scalable(coef: 1, curve: "Low")) },
    )"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ContentErrorKind::InvalidValue, "effects.Spin.period.curve")
    );
    assert!(e.message.contains("never is"), "{e}");
    let e = err(r#"(effects: { "Cd": (duration: Scalable(coef: 1, curve: "Cooldwn")) })"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ContentErrorKind::UnknownCurve, "effects.Cd.duration.curve")
    );
    let e = err(r#"(tags: ["Data.P"], effects: { "I": (period: SetByCaller("Data.P")) })"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ContentErrorKind::InvalidCombination, "effects.I.period")
    );
    let e = err(r#"(effects: { "P": (duration: Frames(10), period: SetByCaller("Data.P")) })"#);
    assert_eq!(e.kind, ContentErrorKind::UnknownTag);
    // A curve that reaches 1 frame at some level is fine (lower levels are clamped at run time).
    Content::from_ron_str(
        r#"(curves: { "Ramp": (points: [(1, 0), (5, 10)]) },
            effects: { "Ok": (duration: Scalable(coef: 1, curve: "Ramp")) })"#,
    )
    .unwrap();
    // Calculations named by durations and periods are registered functions.
    let c = content(r#"(effects: { "C": (duration: Infinite, period: Custom(calc: "Every")) })"#);
    assert!(matches!(
        World::<Plain>::new(c, &Hooks::new(), WorldConfig::default()),
        Err(WorldError::MissingFunction { kind: FnKind::Calc, .. })
    ));
}

#[test]
fn f_ge_04_content_without_duration_magnitudes_keeps_its_hash_and_definition() {
    // The fixed forms are unchanged; the new fields are left out of the content hash's
    // rendering when unused (the golden content hashes check the same for the shipped content).
    let c = content(r#"(effects: { "Stun": (duration: Seconds(2), period: Frames(30)) })"#);
    let d = c.effect_def(c.effect("Stun").unwrap());
    assert_eq!((d.duration, d.period, d.period_magnitude), (DurationDef::Frames(120), 30, None));
    assert!(d.tag_filters.is_empty() && d.scoped_modifiers.is_empty());
}

// ---------------------------------------------------------------------------------------------
// GAS fidelity: source and target tag filters of attribute-based magnitudes (F-GE-10)
// ---------------------------------------------------------------------------------------------

const FILTERS: &str = r#"#![enable(unwrap_variant_newtypes)]
(
    tags: ["Team.Red", "Team.Blue", "State.Enraged"],
    attribute_sets: { "S": (attributes: {
        "Power": (default: 100), "Out": (default: 0), "Echo": (default: 0) }) },
    effects: {
        "Might": (duration: Infinite, modifiers: [(attribute: "Power", op: Add, magnitude: Scalable(coef: 10))]),
        "Fury": (duration: Infinite, modifiers: [(attribute: "Power", op: Multiply, magnitude: Scalable(coef: 2))]),
        "ReadAll": (modifiers: [(attribute: "Out", op: Override, magnitude: Attribute(attribute: "Power", side: Target))]),
        "ReadRed": (modifiers: [(attribute: "Out", op: Override, magnitude: Attribute(attribute: "Power", side: Target,
            source_tag_filter: (require: ["Team.Red"])))]),
        "ReadNotRed": (modifiers: [(attribute: "Out", op: Override, magnitude: Attribute(attribute: "Power", side: Target,
            source_tag_filter: (ignore: ["Team.Red"])))]),
        "ReadRedBonus": (modifiers: [(attribute: "Out", op: Override, magnitude: Attribute(attribute: "Power", side: Target,
            which: Bonus, source_tag_filter: (require: ["Team.Red"])))]),
        "ReadRedBase": (modifiers: [(attribute: "Out", op: Override, magnitude: Attribute(attribute: "Power", side: Target,
            which: Base, source_tag_filter: (require: ["Team.Red"])))]),
        "ReadEnraged": (modifiers: [(attribute: "Out", op: Override, magnitude: Attribute(attribute: "Power", side: Target,
            target_tag_filter: (require: ["State.Enraged"])))]),
        "EchoRed": (duration: Infinite, modifiers: [(attribute: "Echo", op: Add, magnitude: Attribute(attribute: "Power",
            side: Target, source_tag_filter: (require: ["Team.Red"])))]),
    },
)"#;

/// A target with +10 Power from a red source and ×2 from a blue one: (100 + 10) × 2 = 220.
fn filters_world() -> (World<Plain>, Entity, Entity, Entity) {
    let mut w = world(FILTERS);
    let (red, blue) = (tag(&w, "Team.Red"), tag(&w, "Team.Blue"));
    let (r, b, t) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    w.add_loose_tag(r, red);
    w.add_loose_tag(b, blue);
    apply(&mut w, "Might", r, t);
    apply(&mut w, "Fury", b, t);
    (w, r, b, t)
}

fn read(w: &mut World<Plain>, name: &str, t: Entity) -> Fx {
    apply(w, name, t, t);
    w.base(t, attr(w, "Out")).unwrap()
}

#[test]
fn f_ge_10_a_source_tag_filter_aggregates_only_modifiers_from_matching_sources() {
    let (mut w, r, _, t) = filters_world();
    assert_eq!(w.attr(t, attr(&w, "Power")), Some(int(220)));
    assert_eq!(read(&mut w, "ReadAll", t), int(220));
    assert_eq!(read(&mut w, "ReadRed", t), int(110), "only the red +10");
    assert_eq!(read(&mut w, "ReadNotRed", t), int(200), "only the blue ×2");
    assert_eq!(read(&mut w, "ReadRedBonus", t), int(10));
    assert_eq!(read(&mut w, "ReadRedBase", t), int(100), "the base value has no modifiers");
    // The filter reads the source tags captured when the modifier's spec was made (GAS's
    // captured source tags), so the red source losing its tag later changes nothing.
    let might = w.content().effect("Might").unwrap();
    assert!(w.content().effect_def(might).keeps_spec, "filtered modifiers keep their spec");
    w.remove_loose_tag(r, tag(&w, "Team.Red"));
    assert_eq!(read(&mut w, "ReadRed", t), int(110));
}

#[test]
fn f_ge_10_a_target_tag_filter_counts_modifiers_only_while_the_target_matches() {
    let (mut w, _, _, t) = filters_world();
    assert_eq!(read(&mut w, "ReadEnraged", t), int(100));
    w.add_loose_tag(t, tag(&w, "State.Enraged"));
    assert_eq!(read(&mut w, "ReadEnraged", t), int(220));
}

#[test]
fn f_ge_10_a_live_filtered_capture_follows_the_captured_attribute() {
    let (mut w, r, b, t) = filters_world();
    let echo = attr(&w, "Echo");
    apply(&mut w, "EchoRed", t, t);
    assert_eq!(w.attr(t, echo), Some(int(110)));
    apply(&mut w, "Might", r, t);
    assert_eq!(w.attr(t, echo), Some(int(120)), "a second red +10 is counted");
    apply(&mut w, "Fury", b, t);
    assert_eq!(w.attr(t, echo), Some(int(120)), "blue modifiers never are");
}

#[test]
fn f_ge_10_tag_filters_are_validated_and_opt_in() {
    let e = Content::from_ron_str(
        r#"#![enable(unwrap_variant_newtypes)]
        (attribute_sets: { "S": (attributes: { "P": (), "O": () }) },
         effects: { "X": (modifiers: [(attribute: "O", op: Override, magnitude:
             Attribute(attribute: "P", side: Target, source_tag_filter: (require: ["Team.Rde"])))]) })"#,
    )
    .unwrap_err();
    assert_eq!(e.kind, ContentErrorKind::UnknownTag);
    assert!(e.path.ends_with("source_tag_filter.require[0]"), "{e}");
    // Without filters nothing changes: no filter table, no kept spec.
    let w = world(FILTERS);
    let all = w.content().effect_def(def(&w, "ReadAll"));
    assert!(all.tag_filters.is_empty());
    assert_eq!(w.content().effect_def(def(&w, "ReadRed")).tag_filters.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// GAS fidelity: the post-execute context (F-ATTR-05)
// ---------------------------------------------------------------------------------------------

thread_local! {
    static POST_CTX: RefCell<Vec<(ExecutedMod, PostExecuteContext)>> = const { RefCell::new(Vec::new()) };
}

fn record_post(_: &mut World<Plain>, m: &ExecutedMod, ctx: &PostExecuteContext) {
    POST_CTX.with(|v| v.borrow_mut().push((*m, *ctx)));
}

const POST: &str = r#"(
    tags: ["Data.Damage", "Data.Knockback", "Team.Red", "State.Blocking", "Ability.Melee"],
    attribute_sets: { "V": (post_execute: "Record", attributes: {
        "Health": (default: 100), "Damage": (transient: true) }) },
    effects: {
        "Hit": (modifiers: [(attribute: "Damage", op: Add, magnitude: SetByCaller("Data.Damage"))]),
        "Bleed": (duration: Frames(20), period: Frames(10),
                  modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
    },
    abilities: { "Jab": (tags: ["Ability.Melee"]) },
)"#;

#[test]
fn f_attr_05_post_execute_with_context_sees_ability_set_by_caller_tags_and_hit() {
    POST_CTX.with(|v| v.borrow_mut().clear());
    let mut w = build(POST, Hooks::new().post_execute_with_context("Record", record_post));
    let [damage, knockback, red, blocking, melee] =
        ["Data.Damage", "Data.Knockback", "Team.Red", "State.Blocking", "Ability.Melee"]
            .map(|n| tag(&w, n));
    let (a, t) = (actor(&mut w, &["V"]), actor(&mut w, &["V"]));
    w.add_loose_tag(a, red);
    w.add_loose_tag(t, blocking);
    let jab = w.grant_ability(a, w.content().ability("Jab").unwrap(), 1).unwrap();
    let (point, normal) = ([int(1), int(2), int(3)], [Fx::ZERO, Fx::ZERO, Fx::ONE]);
    let s = w
        .make_ability_spec(jab, def(&w, "Hit"))
        .with_set_by_caller(damage, int(12))
        .with_set_by_caller(knockback, int(3))
        .with_hit(t, point, normal, 7);
    w.apply_effect(s, t).unwrap();
    let (m, ctx) = POST_CTX.with(|v| v.borrow()[0]);
    assert_eq!((m.attr, m.new_base, m.target), (attr(&w, "Damage"), int(12), t));
    assert_eq!(ctx.ability(), Some(jab));
    assert_eq!(ctx.source_object(), None);
    assert_eq!(ctx.set_by_caller(knockback), Some(int(3)));
    assert_eq!(
        ctx.set_by_caller_values().collect::<Vec<_>>(),
        [(damage, int(12)), (knockback, int(3))]
    );
    assert!(
        ctx.source_tags().contains(red) && ctx.source_tags().contains(melee),
        "source ∪ ability tags"
    );
    assert!(ctx.target_tags().contains(blocking) && !ctx.target_tags().contains(red));
    assert_eq!(ctx.hit(), Some(TargetData::hit(t, point, normal, 7)));
    assert_eq!(ctx.context().instigator, a);
    // A spec without a hit has none.
    POST_CTX.with(|v| v.borrow_mut().clear());
    let s = w.make_spec(def(&w, "Hit"), 1, a).with_set_by_caller(damage, int(1));
    w.apply_effect(s, t).unwrap();
    let ctx = POST_CTX.with(|v| v.borrow()[0].1);
    assert_eq!((ctx.hit(), ctx.ability()), (None, None));
}

#[test]
fn f_attr_05_periodic_executions_pass_the_context_of_the_active_effect() {
    POST_CTX.with(|v| v.borrow_mut().clear());
    let mut w = build(POST, Hooks::new().post_execute_with_context("Record", record_post));
    let knockback = tag(&w, "Data.Knockback");
    let (a, t) = (actor(&mut w, &["V"]), actor(&mut w, &["V"]));
    let jab = w.grant_ability(a, w.content().ability("Jab").unwrap(), 1).unwrap();
    let s = w.make_ability_spec(jab, def(&w, "Bleed")).with_set_by_caller(knockback, int(3));
    let start = w.next_frame();
    w.step_with(&[], |w| {
        w.apply_effect(s, t).unwrap();
    });
    run_through(&mut w, start + 10);
    let (m, ctx) = POST_CTX.with(|v| v.borrow()[0]);
    assert_eq!((m.new_base, m.handle.is_some()), (int(99), true));
    // Bleed keeps no spec: the ability comes from its origin, the SetByCaller values are gone.
    assert_eq!(ctx.ability(), Some(jab));
    assert_eq!(ctx.set_by_caller(knockback), None);
}

#[test]
fn f_attr_05_context_hooks_are_named_apart_in_the_hooks_signature() {
    let plain = Hooks::<Plain>::new().post_execute("Record", |_, _| {}).signature();
    let ctx = Hooks::<Plain>::new().post_execute_with_context("Record", record_post).signature();
    assert_eq!(plain, "post_execute Record");
    assert_eq!(ctx, "post_execute Record context");
}

// ---------------------------------------------------------------------------------------------
// GAS fidelity: scoped modifiers and transient aggregators of executions (F-GE-14)
// ---------------------------------------------------------------------------------------------

thread_local! {
    static SCOPED: RefCell<Vec<[Fx; 5]>> = const { RefCell::new(Vec::new()) };
}

fn scoped_strike(ctx: &mut ExecCtx<'_>) {
    let c = ctx.content();
    let (health, crit, bonus) =
        (c.attr("Health").unwrap(), c.tag("Data.Crit").unwrap(), c.tag("Data.Bonus").unwrap());
    let none = int(-1);
    let row = [
        ctx.capture(0),
        ctx.capture(1),
        ctx.capture(2),
        ctx.transient(crit).unwrap_or(none),
        ctx.transient(bonus).unwrap_or(none),
    ];
    SCOPED.with(|v| v.borrow_mut().push(row));
    ctx.output(health, ModOp::Add, -(ctx.capture(0) - ctx.capture(1)));
}

fn snap_strike(ctx: &mut ExecCtx<'_>) {
    SCOPED.with(|v| v.borrow_mut().push([ctx.capture(0); 5]));
}

const SCOPED_CONTENT: &str = r#"#![enable(unwrap_variant_newtypes)]
(
    tags: ["Data.Power", "Data.Crit", "Data.Bonus", "State.Stun"],
    attribute_sets: { "S": (attributes: {
        "Health": (default: 100), "AttackPower": (default: 20), "Armor": (default: 10) }) },
    effects: {
        "Plain": (executions: [(calc: "ScopedStrike")]),
        "Strike": (executions: [(calc: "ScopedStrike", modifiers: [
            (attribute: "Armor", side: Target, op: Add, magnitude: Scalable(coef: 5)),
            (attribute: "AttackPower", side: Source, op: Multiply, magnitude: SetByCaller("Data.Power")),
            (transient: "Data.Crit", op: Add, magnitude: Scalable(coef: 5)),
            (transient: "Data.Crit", op: Multiply, magnitude: Scalable(coef: 2),
             target_tags: (require: ["State.Stun"])),
        ])]),
        "Snap": (executions: [(calc: "SnapStrike", modifiers: [
            (attribute: "AttackPower", side: Source, op: Add,
             magnitude: Attribute(attribute: "AttackPower", side: Source, snapshot: true, coef: 0.25)),
        ])]),
        "ArmorUp": (duration: Infinite, modifiers: [(attribute: "Armor", op: Multiply, magnitude: Scalable(coef: 2))]),
    },
)"#;

fn scoped_hooks() -> Hooks<Plain> {
    Hooks::new()
        .execution(
            "ScopedStrike",
            &[
                Capture::source("AttackPower"),
                Capture::target("Armor"),
                Capture::target("Armor").base(),
            ],
            scoped_strike,
        )
        .execution("SnapStrike", &[Capture::source_snapshot("AttackPower")], snap_strike)
}

fn last_scoped() -> [Fx; 5] {
    SCOPED.with(|v| *v.borrow().last().unwrap())
}

#[test]
fn f_ge_14_scoped_modifiers_join_the_capture_aggregation_for_that_execution_only() {
    SCOPED.with(|v| v.borrow_mut().clear());
    let mut w = build(SCOPED_CONTENT, scoped_hooks());
    let (ap, armor, power) = (attr(&w, "AttackPower"), attr(&w, "Armor"), tag(&w, "Data.Power"));
    let (a, t) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    apply(&mut w, "ArmorUp", t, t);
    apply(&mut w, "Plain", a, t);
    // Without scoped modifiers: AttackPower 20, Armor 10 × 2, base Armor 10; no transients.
    assert_eq!(last_scoped(), [int(20), int(20), int(10), int(-1), int(-1)]);
    let s = spec(&w, "Strike", a).with_set_by_caller(power, fx("1.5"));
    w.apply_effect(s, t).unwrap();
    // AttackPower 20 × 1.5; Armor (10 + 5) × 2 — the scoped Add joins the aggregation before
    // the active ×2, as in GAS (not 10 × 2 + 5); the base-value capture is untouched; the
    // transient aggregator Crit is 0 + 5, its ×2 needs a stunned target; Bonus is named by no
    // scoped modifier.
    assert_eq!(last_scoped(), [int(30), int(30), int(10), int(5), int(-1)]);
    // Nothing persists: the attributes are what they were.
    assert_eq!((w.attr(a, ap), w.attr(t, armor)), (Some(int(20)), Some(int(20))));
    w.add_loose_tag(t, tag(&w, "State.Stun"));
    let s = spec(&w, "Strike", a).with_set_by_caller(power, fx("1.5"));
    w.apply_effect(s, t).unwrap();
    assert_eq!(last_scoped()[3], int(10), "(0 + 5) × 2 on a stunned target");
    // The SetByCaller key of a scoped modifier is validated like any other (G-03).
    assert_eq!(
        w.apply_effect(spec(&w, "Strike", a), t),
        Err(ApplyError::MissingSetByCaller { tag: power })
    );
}

#[test]
fn f_ge_14_scoped_modifiers_of_snapshot_captures_use_the_captured_values() {
    SCOPED.with(|v| v.borrow_mut().clear());
    let mut w = build(SCOPED_CONTENT, scoped_hooks());
    let ap = attr(&w, "AttackPower");
    let (a, t) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let s = spec(&w, "Snap", a); // AttackPower 20 is captured now, for the capture and the mod
    w.set_base(a, ap, int(50));
    w.apply_effect(s, t).unwrap();
    assert_eq!(last_scoped()[0], int(25), "20 + 20 × 0.25, both read when the spec was made");
}

#[test]
fn f_ge_14_scoped_modifiers_are_checked_against_the_execution_captures() {
    // The execution must capture the attribute on that side, as more than its base value.
    let text = r#"(attribute_sets: { "S": (attributes: { "Armor": () }) },
        effects: { "E": (executions: [(calc: "X", modifiers: [
            (attribute: "Armor", side: Source, op: Add, magnitude: Scalable(coef: 1))])]) })"#;
    fn nothing(_: &mut ExecCtx<'_>) {}
    for caps in [vec![Capture::target("Armor")], vec![Capture::source("Armor").base()]] {
        let r = World::<Plain>::new(
            content(text),
            &Hooks::new().execution("X", &caps, nothing),
            WorldConfig::default(),
        );
        let Err(e @ WorldError::ScopedModifierNotCaptured { .. }) = r else { panic!("{caps:?}") };
        assert!(e.to_string().contains("Capture::source(\"Armor\")"), "{e}");
    }
    let ok = Hooks::new().execution("X", &[Capture::source("Armor")], nothing);
    assert!(World::<Plain>::new(content(text), &ok, WorldConfig::default()).is_ok());
    // Content errors name the scoped modifier.
    let err = |m: &str| {
        Content::from_ron_str(&format!(
            r#"(tags: ["Data.T"], attribute_sets: {{ "S": (attributes: {{ "Armor": () }}) }},
               effects: {{ "E": (executions: [(calc: "X", modifiers: [{m}])]) }})"#
        ))
        .unwrap_err()
    };
    let e = err(
        r#"(attribute: "Armor", side: Target, transient: "Data.T", op: Add, magnitude: Scalable(coef: 1))"#,
    );
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ContentErrorKind::InvalidCombination, "effects.E.executions[0].modifiers[0].transient")
    );
    let e = err(r#"(op: Add, magnitude: Scalable(coef: 1))"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ContentErrorKind::InvalidValue, "effects.E.executions[0].modifiers[0]")
    );
    let e = err(r#"(attribute: "Armor", op: Add, magnitude: Scalable(coef: 1))"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ContentErrorKind::InvalidValue, "effects.E.executions[0].modifiers[0].attribute")
    );
    let e = err(r#"(transient: "Data.T", side: Target, op: Add, magnitude: Scalable(coef: 1))"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ContentErrorKind::InvalidCombination, "effects.E.executions[0].modifiers[0].side")
    );
    let e = err(r#"(transient: "Data.Typo", op: Add, magnitude: Scalable(coef: 1))"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ContentErrorKind::UnknownTag, "effects.E.executions[0].modifiers[0].transient")
    );
}

// ---------------------------------------------------------------------------------------------
// F-GC-09: the aggregated source and target tags of the cues an effect triggers
// ---------------------------------------------------------------------------------------------

const EXEC_CUES: &str = r#"(
    tags: ["Data.Damage", "GameplayCue.Hit", "GameplayCue.Meta", "GameplayCue.Split"],
    attribute_sets: { "Vitals": (post_execute: "Distribute", attributes: {
        "Health": (default: 100, min: Const(0)),
        "Shield": (default: 50, min: Const(0)),
        "Mana": (default: 40),
        "Damage": (transient: true),
    }) },
    effects: {
        "Hit": (executions: [(calc: "Direct")],
                cues: [(tag: "GameplayCue.Hit", magnitude_attribute: "Health")]),
        "MetaHit": (executions: [(calc: "Meta")],
                    cues: [(tag: "GameplayCue.Meta", magnitude_attribute: "Damage"),
                           (tag: "GameplayCue.Hit")]),
        "Split": (modifiers: [(attribute: "Mana", op: Add, magnitude: Scalable(coef: -4))],
                  executions: [(calc: "Split")],
                  cues: [(tag: "GameplayCue.Split", magnitude_attribute: "Health"),
                         (tag: "GameplayCue.Meta", magnitude_attribute: "Shield"),
                         (tag: "GameplayCue.Hit")]),
    },
)"#;

/// `Health Add −Data.Damage`, the guide's damage execution.
fn direct_damage(ctx: &mut ExecCtx<'_>) {
    let (c, dmg) = (ctx.content(), ctx.content().tag("Data.Damage").unwrap());
    let health = c.attr("Health").unwrap();
    let v = ctx.set_by_caller(dmg).unwrap_or(Fx::ZERO);
    ctx.output(health, ModOp::Add, -v);
}

/// `Damage Add Data.Damage`: meta damage the post-execute hook moves into Health.
fn meta_damage(ctx: &mut ExecCtx<'_>) {
    let (c, dmg) = (ctx.content(), ctx.content().tag("Data.Damage").unwrap());
    let damage = c.attr("Damage").unwrap();
    let v = ctx.set_by_caller(dmg).unwrap_or(Fx::ZERO);
    ctx.output(damage, ModOp::Add, v);
}

/// Two changes of Health and one of Shield.
fn split_damage(ctx: &mut ExecCtx<'_>) {
    let c = ctx.content();
    let (health, shield) = (c.attr("Health").unwrap(), c.attr("Shield").unwrap());
    ctx.output(health, ModOp::Add, int(-6));
    ctx.output(shield, ModOp::Add, int(-20));
    ctx.output(health, ModOp::Add, int(-4));
}

fn distribute_meta_damage(w: &mut World<Plain>, m: &ExecutedMod) {
    let c = w.content().clone();
    if m.attr == c.attr("Damage").unwrap() {
        let health = c.attr("Health").unwrap();
        let _ = w.apply_effect(EffectSpec::inline(&[(health, ModOp::Add, -m.new_base)]), m.target);
    }
}

/// The magnitude of every `Executed` cue of the last step, by tag name, sorted by name.
fn executed_cue_magnitudes<G: Game>(w: &World<G>) -> Vec<(String, Fx)> {
    let mut cues: Vec<(String, Fx)> = w
        .output()
        .cues
        .iter()
        .filter(|c| c.key.kind == rollback_abilities::CueKind::Executed)
        .map(|c| (w.content().tags().name(c.key.tag).to_string(), c.params.magnitude))
        .collect();
    cues.sort();
    cues
}

/// An `Executed` cue's magnitude is the total magnitude the execution applied to the cue's
/// attribute — executions' outputs as well as modifiers (GAS's modified attributes); without
/// a magnitude attribute, the first attribute changed; an attribute left alone gives 0.
#[test]
fn f_gc_09_executed_cue_magnitude_is_what_the_execution_applied() {
    let hooks = Hooks::new()
        .execution("Direct", &[], direct_damage)
        .execution("Meta", &[], meta_damage)
        .execution("Split", &[], split_damage)
        .post_execute("Distribute", distribute_meta_damage);
    let mut w = build(EXEC_CUES, hooks);
    let e = actor(&mut w, &["Vitals"]);
    let (health, data) = (attr(&w, "Health"), tag(&w, "Data.Damage"));
    let hit = |w: &World<Plain>, name: &str| spec(w, name, e).with_set_by_caller(data, int(25));
    let s = hit(&w, "Hit");
    w.step_with(&[], |w| {
        w.apply_effect(s, e).unwrap();
    });
    assert_eq!(w.base(e, health), Some(int(75)));
    assert_eq!(executed_cue_magnitudes(&w), [("GameplayCue.Hit".into(), int(-25))]);

    // Meta damage: the cue naming the meta attribute carries the 25 the execution put into
    // it, and so does the cue without a magnitude attribute (the first attribute changed).
    let s = hit(&w, "MetaHit");
    w.step_with(&[], |w| {
        w.apply_effect(s, e).unwrap();
    });
    assert_eq!(w.base(e, health), Some(int(50)));
    assert_eq!(
        executed_cue_magnitudes(&w),
        [("GameplayCue.Hit".into(), int(25)), ("GameplayCue.Meta".into(), int(25))]
    );

    // Several attributes, one changed twice: each cue reads its own attribute's total; the
    // cue without a magnitude attribute reads the first modifier's.
    let s = spec(&w, "Split", e);
    w.step_with(&[], |w| {
        w.apply_effect(s, e).unwrap();
    });
    assert_eq!(w.base(e, health), Some(int(40)));
    assert_eq!(
        executed_cue_magnitudes(&w),
        [
            ("GameplayCue.Hit".into(), int(-4)),
            ("GameplayCue.Meta".into(), int(-20)),
            ("GameplayCue.Split".into(), int(-10)),
        ]
    );
}

const CUE_TAGS: &str = r#"(
    tags: ["Team.Red", "State.Wet", "GameplayCue.Zap", "GameplayCue.Burn", "GameplayCue.Code"],
    attribute_sets: { "S": (attributes: { "Health": (default: 100) }) },
    effects: {
        "Zap": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))],
                cues: [(tag: "GameplayCue.Zap")]),
        "Burn": (duration: Frames(10), cues: [(tag: "GameplayCue.Burn")]),
        "Scorch": (duration: Frames(10), period: Frames(2), executions: [(calc: "Scorch")]),
    },
)"#;

/// An execution that plays its own cue on the target.
fn scorch(ctx: &mut ExecCtx<'_>) {
    let cue = ctx.content().tag("GameplayCue.Zap").unwrap();
    ctx.cue(cue, rollback_abilities::CueParams::default());
}

#[test]
fn f_gc_09_effect_cues_carry_the_aggregated_source_and_target_tags() {
    let hooks = Hooks::new().execution("Scorch", &[], scorch);
    let mut w = build(CUE_TAGS, hooks);
    let (src, dst) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let (red, wet) = (tag(&w, "Team.Red"), tag(&w, "State.Wet"));
    w.add_loose_tag(src, red);
    w.add_loose_tag(dst, wet);
    let team = tag(&w, "Team");
    // The spec captures the source's tags when it is made; a later change of the source's
    // tags is not seen (GAS's captured source tags).
    let zap = spec(&w, "Zap", src);
    w.remove_loose_tag(src, red);
    w.step_with(&[0, 0], |w| {
        w.apply_effect(zap, dst).unwrap();
    });
    let cues = w.output().cues.clone();
    assert_eq!(cues.len(), 1);
    let c = &cues[0];
    assert_eq!(c.key.tag, tag(&w, "GameplayCue.Zap"));
    assert!(c.source_tags.contains(red) && c.source_tags.contains(team), "ancestors too");
    assert!(c.target_tags.contains(wet) && !c.target_tags.contains(red));

    // A persistent effect's edges: Added with the tags at application, Removed with the
    // target's tags when it ended; the snapshot-derived instance carries them too.
    w.add_loose_tag(src, red);
    let burn = spec(&w, "Burn", src);
    w.step_with(&[0, 0], |w| {
        w.apply_effect(burn, dst).unwrap();
    });
    let added = w.output().cues[0];
    assert_eq!(added.key.kind, rollback_abilities::CueKind::Added);
    assert!(added.source_tags.contains(red) && added.target_tags.contains(wet));
    let mut active = Vec::new();
    w.active_cues(&mut active);
    assert_eq!(active.len(), 1);
    assert!(active[0].source_tags.contains(red) && active[0].target_tags.contains(wet));
    w.remove_loose_tag(dst, wet);
    for _ in 0..10 {
        w.step(&[0, 0]);
    }
    let removed: Vec<_> = w
        .output()
        .cues
        .iter()
        .filter(|c| c.key.kind == rollback_abilities::CueKind::Removed)
        .copied()
        .collect();
    assert_eq!(removed.len(), 1);
    assert!(removed[0].source_tags.contains(red) && !removed[0].target_tags.contains(wet));

    // A cue an execution plays: the executing spec's source tags and its target's tags.
    w.add_loose_tag(dst, wet);
    let scorch = spec(&w, "Scorch", src);
    w.apply_effect(scorch, dst).unwrap();
    w.step(&[0, 0]);
    w.step(&[0, 0]);
    let played = w.output().cues[0];
    assert_eq!(played.key.tag, tag(&w, "GameplayCue.Zap"));
    assert!(played.source_tags.contains(red) && played.target_tags.contains(wet));

    // Cues no effect triggered carry none.
    let code = tag(&w, "GameplayCue.Code");
    w.step_with(&[0, 0], |w| {
        w.execute_cue(dst, code, rollback_abilities::CueOrigin::NONE, Default::default());
    });
    let own = w.output().cues.iter().find(|c| c.key.tag == code).copied().unwrap();
    assert!(own.source_tags.is_empty() && own.target_tags.is_empty());
}

/// The presenter sees the same tags: `Cue::source_tags` / `target_tags` of a played burst and
/// of a persistent instance's `on_active`, as the records carry them.
#[test]
fn f_gc_09_presented_cues_carry_the_aggregated_tags() {
    use rollback_abilities::present::{Cue, CueDirector, Presenter};
    #[derive(Default)]
    struct Seen(Vec<(&'static str, Cue)>);
    impl Presenter for Seen {
        fn play(&mut self, cue: &Cue) {
            self.0.push(("play", *cue));
        }
        fn on_active(&mut self, cue: &Cue) {
            self.0.push(("on_active", *cue));
        }
    }
    let mut w = build(CUE_TAGS, Hooks::new().execution("Scorch", &[], scorch));
    let (src, dst) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let (red, wet) = (tag(&w, "Team.Red"), tag(&w, "State.Wet"));
    w.add_loose_tag(src, red);
    w.add_loose_tag(dst, wet);
    let (zap, burn) = (spec(&w, "Zap", src), spec(&w, "Burn", src));
    let mut director = CueDirector::new();
    let mut seen = Seen::default();
    w.step_with(&[0, 0], |w| {
        w.apply_effect(zap, dst).unwrap();
        w.apply_effect(burn, dst).unwrap();
    });
    director.ingest(w.output());
    director.reconcile(&w, Some(w.frame()), &mut seen);
    let kinds: Vec<&str> = seen.0.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, ["play", "on_active"]);
    for (kind, cue) in &seen.0 {
        assert!(cue.source_tags.contains(red), "{kind}: the source's captured tags");
        assert!(cue.target_tags.contains(wet) && !cue.target_tags.contains(red), "{kind}");
    }
}
