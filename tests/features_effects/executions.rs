//! Custom magnitude calculations (F-GE-13), executions and manual cue handling (F-GE-14,
//! F-GE-15) and custom application requirements (F-GE-16).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GE-13 Custom magnitude calculations (MMC)
// ---------------------------------------------------------------------------------------------

fn mix(input: &CalcInput<'_>) -> Fx {
    let bonus = input.content.tag("Data.Bonus").unwrap();
    input.capture(0)
        + input.capture(1) * 10
        + input.capture(2) * 100
        + input.capture(3) * 1000
        + input.set_by_caller(bonus).unwrap_or(Fx::ZERO)
        + input.capture(9)
}

fn by_level(input: &CalcInput<'_>) -> Fx {
    int(i64::from(input.level) * 10 + i64::from(input.stacks))
}

const MMC: &str = r#"(
    tags: ["Data.Bonus"],
    attribute_sets: { "S": (attributes: {
        "Armor": (default: 5), "Power": (default: 1), "Out": (default: 0), "Buffed": (default: 100) }) },
    effects: {
        "ArmorUp": (duration: Infinite, modifiers: [(attribute: "Armor", op: Add, magnitude: Scalable(coef: 3))]),
        "Mix": (modifiers: [(attribute: "Out", op: Override, magnitude: Custom(calc: "Mix"))]),
        "MixScaled": (modifiers: [(attribute: "Out", op: Override, magnitude: Custom(calc: "Mix", coef: 2, pre: 1, post: 3))]),
        "LevelBuff": (duration: Infinite, modifiers: [(attribute: "Buffed", op: Add, magnitude: Custom(calc: "ByLevel"))]),
    },
)"#;

fn mmc_hooks() -> Hooks<Plain> {
    Hooks::new()
        .calc(
            "Mix",
            &[
                Capture::target("Armor"),
                Capture::source("Power"),
                Capture::source_snapshot("Power"),
                Capture::target("Armor").base(),
            ],
            mix,
        )
        .calc("ByLevel", &[], by_level)
}

#[test]
fn f_ge_13_custom_calculation_reads_declared_captures_spec_and_level() {
    let mut w = build(MMC, mmc_hooks());
    let (power, out, buffed) = (attr(&w, "Power"), attr(&w, "Out"), attr(&w, "Buffed"));
    let bonus = tag(&w, "Data.Bonus");
    let src = actor(&mut w, &["S"]);
    let t = actor(&mut w, &["S"]);
    apply(&mut w, "ArmorUp", t, t);
    let (mix_s, scaled_s) = (spec(&w, "Mix", src), spec(&w, "MixScaled", src));
    assert_eq!(mix_s.n_source_captures, 1, "the snapshot capture is taken at creation");
    w.set_base(src, power, int(2));
    // 8 (target current) + 10 × 2 (source live) + 100 × 1 (source snapshot)
    // + 1000 × 5 (target base) + 0.5 (SetByCaller) + 0 (undeclared capture index).
    w.apply_effect(mix_s.with_set_by_caller(bonus, fx("0.5")), t).unwrap();
    assert_eq!(w.base(t, out), Some(fx("5128.5")));
    // A missing SetByCaller read by a calculation takes the calculation's default.
    w.apply_effect(mix_s, t).unwrap();
    assert_eq!(w.base(t, out), Some(int(5128)));
    // coef × (calc + pre) + post.
    w.apply_effect(scaled_s.with_set_by_caller(bonus, fx("0.5")), t).unwrap();
    assert_eq!(w.base(t, out), Some(int(10262)));
    // Usable on duration effects; the level is an input.
    let lb = def(&w, "LevelBuff");
    let h = handle(w.apply_effect(w.make_spec(lb, 3, t), t).unwrap());
    assert_eq!(w.attr(t, buffed), Some(int(131)), "10 × level + stacks");
    assert_eq!(w.effect_magnitude(h, 0), Some(int(31)));
}

#[test]
fn f_ge_13_registration_is_checked_when_the_world_is_built() {
    let text = r#"(attribute_sets: { "S": (attributes: { "Out": (default: 0) }) },
        effects: { "E": (modifiers: [(attribute: "Out", op: Add, magnitude: Custom(calc: "Calc"))]) })"#;
    let c = content(text);
    let err = World::<Plain>::new(c.clone(), &Hooks::new(), WorldConfig::default()).unwrap_err();
    assert_eq!(
        err,
        WorldError::MissingFunction {
            name: "Calc".into(),
            kind: FnKind::Calc,
            registered_as: None,
            did_you_mean: None
        }
    );
    fn exec(_: &mut ExecCtx<'_>) {}
    let err = World::<Plain>::new(
        c.clone(),
        &Hooks::new().execution("Calc", &[], exec),
        WorldConfig::default(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        WorldError::MissingFunction {
            name: "Calc".into(),
            kind: FnKind::Calc,
            registered_as: Some(FnKind::Execution),
            did_you_mean: None
        }
    );
    // A capture of an attribute content does not have is refused (G-43).
    let err = World::<Plain>::new(
        c.clone(),
        &Hooks::new().calc("Calc", &[Capture::target("Nope")], half_str),
        WorldConfig::default(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        WorldError::UnknownCaptureAttribute { function: "Calc".into(), attribute: "Nope".into() }
    );
    let mut w = World::<Plain>::new(
        c,
        &Hooks::new().calc("Calc", &[Capture::target("Out")], half_str),
        WorldConfig::default(),
    )
    .unwrap();
    let out = attr(&w, "Out");
    let e = actor(&mut w, &["S"]);
    w.set_base(e, out, int(8));
    apply(&mut w, "E", e, e);
    assert_eq!(w.base(e, out), Some(int(12)), "8 + 8 / 2");
}

// ---------------------------------------------------------------------------------------------
// F-GE-14 Executions, F-GE-15 manual cue handling
// ---------------------------------------------------------------------------------------------

thread_local! {
    static DRAWS: RefCell<Vec<[u32; 3]>> = const { RefCell::new(Vec::new()) };
}

fn strike(ctx: &mut ExecCtx<'_>) {
    let c = ctx.content();
    let (health, armor) = (c.attr("Health").unwrap(), c.attr("Armor").unwrap());
    let damage = ctx.capture(0) - ctx.capture(1);
    let snap = ctx.capture(2);
    ctx.output(health, ModOp::Add, -damage);
    ctx.output(armor, ModOp::Override, snap);
}

fn siphon(ctx: &mut ExecCtx<'_>) {
    let health = ctx.content().attr("Health").unwrap();
    ctx.output(health, ModOp::Add, int(-10));
    let source = ctx.source();
    ctx.apply(EffectSpec::inline(&[(health, ModOp::Add, int(5))]), source);
}

fn roll(ctx: &mut ExecCtx<'_>) {
    let health = ctx.content().attr("Health").unwrap();
    let r = ctx.random();
    let d = [r.next_u32(), r.next_u32(), r.next_u32()];
    let hit = r.below(10);
    DRAWS.with(|v| v.borrow_mut().push(d));
    ctx.output(health, ModOp::Add, -int(i64::from(hit)));
}

fn double_set_by_caller(spec: &mut EffectSpec) {
    let n = usize::from(spec.n_set_by_caller);
    for e in &mut spec.set_by_caller[..n] {
        e.value *= 2;
    }
}

fn prepared(ctx: &mut ExecCtx<'_>) {
    let c = ctx.content();
    let (health, damage) = (c.attr("Health").unwrap(), c.tag("Data.Damage").unwrap());
    let v = ctx.set_by_caller(damage).unwrap_or(Fx::ZERO);
    ctx.output(health, ModOp::Add, -v);
}

fn bleed(ctx: &mut ExecCtx<'_>) {
    let health = ctx.content().attr("Health").unwrap();
    let stacks = ctx.stacks();
    ctx.output(health, ModOp::Add, int(-2 * i64::from(stacks)));
}

fn parry(ctx: &mut ExecCtx<'_>) {
    ctx.handle_cues_manually();
    let health = ctx.content().attr("Health").unwrap();
    ctx.output(health, ModOp::Add, int(-1));
}

const EXEC: &str = r#"(
    tags: ["Data.Damage", "GameplayCue.Hit"],
    attribute_sets: { "S": (attributes: {
        "Health": (default: 100, min: Const(0), max: Const(100)), "Armor": (default: 3),
        "AttackPower": (default: 20) }) },
    effects: {
        "Strike": (executions: [(calc: "Strike")]),
        "Siphon": (executions: [(calc: "Siphon")]),
        "Roll": (executions: [(calc: "Roll")]),
        "Prepared": (executions: [(calc: "Prepared")]),
        "Bleed": (duration: Frames(30), period: Frames(10), executions: [(calc: "Bleed")],
                  stacking: (kind: ByTarget, limit: 5)),
        "Parry": (executions: [(calc: "Parry")], cues: [(tag: "GameplayCue.Hit")]),
    },
)"#;

fn exec_world(seed: u64) -> World<Plain> {
    let hooks = Hooks::new()
        .execution(
            "Strike",
            &[
                Capture::source("AttackPower"),
                Capture::target("Armor"),
                Capture::source_snapshot("AttackPower"),
            ],
            strike,
        )
        .execution("Siphon", &[], siphon)
        .execution("Roll", &[], roll)
        .execution_with_prepare("Prepared", &[], double_set_by_caller, prepared)
        .execution("Bleed", &[], bleed)
        .execution("Parry", &[], parry);
    World::new(content(EXEC), &hooks, WorldConfig { seed, ..WorldConfig::default() }).unwrap()
}

#[test]
fn f_ge_14_execution_outputs_change_several_base_values() {
    let mut w = exec_world(0);
    let (health, armor, ap) = (attr(&w, "Health"), attr(&w, "Armor"), attr(&w, "AttackPower"));
    let src = actor(&mut w, &["S"]);
    let t = actor(&mut w, &["S"]);
    let s = spec(&w, "Strike", src);
    w.set_base(src, ap, int(30));
    let out = w.step_with(&[], |w| assert_eq!(w.apply_effect(s, t), Ok(Applied::Executed))).clone();
    assert_eq!(value(&w, t, health), (int(73), int(73)), "30 (live source) − 3 (target)");
    assert_eq!(value(&w, t, armor), (int(20), int(20)), "the snapshot capture from creation");
    let strike = def(&w, "Strike");
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::Executed { target: t, def: Some(strike), handle: None }]
    );
    assert!(out.attr_events.iter().all(|a| a.cause == AttrCause::Execution { def: Some(strike) }));
    assert_eq!(out.attr_events.len(), 2);
}

#[test]
fn f_ge_14_execution_applies_extra_specs_such_as_lifesteal_to_the_source() {
    let mut w = exec_world(0);
    let health = attr(&w, "Health");
    let siphon = def(&w, "Siphon");
    let src = actor(&mut w, &["S"]);
    let t = actor(&mut w, &["S"]);
    w.set_base(src, health, int(50));
    let out = w
        .step_with(&[], |w| {
            apply(w, "Siphon", src, t);
            assert_eq!(w.base(src, health), Some(int(55)), "done when apply_effect returns");
        })
        .clone();
    assert_eq!(w.base(t, health), Some(int(90)));
    assert_eq!(w.base(src, health), Some(int(55)));
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Executed { target: t, def: Some(siphon), handle: None },
            EffectEvent::Executed { target: src, def: None, handle: None },
        ]
    );
}

#[test]
fn f_ge_14_execution_random_stream_is_identical_on_identical_worlds() {
    let run = |seed: u64| {
        DRAWS.with(|v| v.borrow_mut().clear());
        let mut w = exec_world(seed);
        let health = attr(&w, "Health");
        let e = actor(&mut w, &["S"]);
        for frame in 0..6u32 {
            w.step_with(&[], |w| {
                if frame % 2 == 1 {
                    apply(w, "Roll", e, e);
                    apply(w, "Roll", e, e);
                }
            });
        }
        (DRAWS.with(|v| v.borrow().clone()), w.base(e, health), w.checksum())
    };
    let (d1, h1, c1) = run(7);
    let (d2, h2, c2) = run(7);
    assert_eq!(d1.len(), 6);
    assert_eq!((&d1, h1, c1), (&d2, h2, c2), "same seed, same draws, same state");
    assert_ne!(d1[0], d1[1], "two executions in one frame draw different numbers");
    assert_ne!(d1[0], d1[2], "other frames draw different numbers");
    let (d3, _, _) = run(8);
    assert_ne!(d3, d1, "another session seed draws other numbers");
    // A rollback re-draws the same numbers.
    DRAWS.with(|v| v.borrow_mut().clear());
    let mut w = exec_world(7);
    let e = actor(&mut w, &["S"]);
    let snap = w.snapshot();
    w.step_with(&[], |w| {
        apply(w, "Roll", e, e);
    });
    w.load(&snap).unwrap();
    w.step_with(&[], |w| {
        apply(w, "Roll", e, e);
    });
    let d = DRAWS.with(|v| v.borrow().clone());
    assert_eq!(d[0], d[1]);
}

#[test]
fn f_ge_14_prepare_stage_changes_the_spec_before_the_execution_reads_it() {
    let mut w = exec_world(0);
    let health = attr(&w, "Health");
    let damage = tag(&w, "Data.Damage");
    let e = actor(&mut w, &["S"]);
    let s = spec(&w, "Prepared", e).with_set_by_caller(damage, int(10));
    w.apply_effect(s, e).unwrap();
    assert_eq!(w.base(e, health), Some(int(80)), "10 doubled by prepare");
    assert_eq!(s.set_by_caller(damage), Some(int(10)), "the caller's spec is untouched");
}

#[test]
fn f_ge_14_periodic_executions_see_the_stack_count() {
    let mut w = exec_world(0);
    let health = attr(&w, "Health");
    let e = actor(&mut w, &["S"]);
    w.step_with(&[], |w| {
        apply(w, "Bleed", e, e);
        apply(w, "Bleed", e, e);
    });
    run_through(&mut w, 30);
    assert_eq!(w.base(e, health), Some(int(88)), "3 ticks of −2 × 2 stacks");
}

#[test]
fn f_ge_15_execution_may_handle_its_cues_manually() {
    let mut w = exec_world(0);
    let health = attr(&w, "Health");
    let parry = def(&w, "Parry");
    let e = actor(&mut w, &["S"]);
    let out = w
        .step_with(&[], |w| {
            assert_eq!(apply(w, "Parry", e, e), Applied::Executed);
        })
        .clone();
    assert_eq!(w.base(e, health), Some(int(99)));
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::Executed { target: e, def: Some(parry), handle: None }]
    );
}

// ---------------------------------------------------------------------------------------------
// F-GE-16 Custom application requirements
// ---------------------------------------------------------------------------------------------

fn need_armor(w: &World<Plain>, _: &EffectSpec, target: Entity) -> RequirementVerdict {
    let armor = w.content().attr("Armor").unwrap();
    if w.attr(target, armor).unwrap_or(Fx::ZERO) >= int(10) {
        RequirementVerdict::Allow
    } else {
        RequirementVerdict::Deny
    }
}

fn extend_burn(w: &World<Plain>, spec: &EffectSpec, target: Entity) -> RequirementVerdict {
    match w.effects(target).iter().find(|e| e.def == spec.def) {
        Some(e) => RequirementVerdict::ExtendInstead { handle: e.handle(target), frames: 30 },
        None => RequirementVerdict::Allow,
    }
}

#[test]
fn f_ge_16_custom_requirements_deny_or_extend_instead() {
    let mut w = build(
        r#"(
        attribute_sets: { "S": (attributes: { "Armor": (default: 0), "Health": (default: 100) }) },
        effects: {
            "Fortify": (duration: Infinite, custom_requirements: ["NeedArmor"],
                        modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: 50))]),
            "Burn": (duration: Frames(60), custom_requirements: ["ExtendBurn"]),
        },
    )"#,
        Hooks::new().requirement("NeedArmor", need_armor).requirement("ExtendBurn", extend_burn),
    );
    let (armor, health) = (attr(&w, "Armor"), attr(&w, "Health"));
    let fortify = def(&w, "Fortify");
    let e = actor(&mut w, &["S"]);
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "Fortify", e);
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::CustomRequirement));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::ApplyFailed {
            target: e,
            def: Some(fortify),
            error: ApplyError::CustomRequirement
        }]
    );
    assert!(w.effects(e).is_empty());
    w.set_base(e, armor, int(10));
    assert!(matches!(apply(&mut w, "Fortify", e, e), Applied::Added(_)));
    assert_eq!(w.attr(e, health), Some(int(150)));

    // Extend instead of stacking a second instance.
    let t = actor(&mut w, &["S"]);
    let start = w.next_frame();
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| h = handle(apply(w, "Burn", t, t)));
    run_through(&mut w, start + 9);
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "Burn", t);
            assert_eq!(w.apply_effect(s, t), Ok(Applied::Redirected(h)));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::DurationChanged {
            handle: h,
            old_expires_at: start + 60,
            new_expires_at: start + 90
        }]
    );
    assert_eq!(w.effects(t).len(), 1);
    assert_eq!(w.effect_remaining(h).map(|r| r.0), Some(80));
    run_through(&mut w, start + 89);
    assert!(w.effect(h).is_some());
    run_through(&mut w, start + 90);
    assert!(w.effect(h).is_none());
}
