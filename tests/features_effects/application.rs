//! The application API and its events (F-GE-06) and the application pipeline (F-GE-07).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-GE-06 Application API & events
// ---------------------------------------------------------------------------------------------

const LIFECYCLE: &str = r#"(
    tags: ["State.Stunned", "State.Hasted", "Faction.Undead", "State.Debuff.Curse"],
    attribute_sets: { "S": (attributes: { "Speed": (default: 100), "Health": (default: 100) }) },
    effects: {
        "Buff": (duration: Frames(5), modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 10))]),
        "Stackable": (duration: Infinite, stacking: (kind: ByTarget, limit: 3),
                      modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 1))]),
        "Haste": (duration: Infinite, granted_tags: ["State.Hasted"],
                  ongoing_requirements: (ignore: ["State.Stunned"])),
        "Ward": (duration: Infinite, immunity_tags: ["Faction.Undead"]),
        "Curse": (duration: Infinite, asset_tags: ["State.Debuff.Curse"]),
        "Cleanse": (remove_effects_with_tags: ["State.Debuff"]),
        "Hit": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "Long": (duration: Frames(100)),
    },
)"#;

// Long because it walks one world through every kind of effect event in turn, checking each
// frame's events as it goes.
#[test]
fn f_ge_06_every_effect_event_kind() {
    let mut w = world(LIFECYCLE);
    let (stunned, undead) = (tag(&w, "State.Stunned"), tag(&w, "Faction.Undead"));
    let [buff, stackable, haste, ward, curse, cleanse, hit, long] =
        ["Buff", "Stackable", "Haste", "Ward", "Curse", "Cleanse", "Hit", "Long"]
            .map(|n| def(&w, n));
    let e = actor(&mut w, &["S"]);
    let ghoul = actor(&mut w, &["S"]);
    w.add_loose_tag(ghoul, undead);

    // Added, then Removed{Expired}.
    let mut h = EffectHandle::NONE;
    let out = w.step_with(&[], |w| h = handle(apply(w, "Buff", e, e))).clone();
    assert_eq!(out.effect_events, vec![EffectEvent::Added { handle: h, def: buff }]);
    run_through(&mut w, 4);
    let out = w.step(&[]).clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::Removed { handle: h, def: buff, reason: RemovalReason::Expired }]
    );

    // StackChanged up and down, Removed{Removed}.
    let out = w
        .step_with(&[], |w| {
            let a = apply(w, "Stackable", e, e);
            let b = apply(w, "Stackable", e, e);
            assert_eq!(b, Applied::Stacked(handle(a)));
            h = handle(a);
            w.remove_effect_stacks(h, 1);
            w.remove_effect(h);
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Added { handle: h, def: stackable },
            EffectEvent::StackChanged { handle: h, old: 1, new: 2 },
            EffectEvent::StackChanged { handle: h, old: 2, new: 1 },
            EffectEvent::Removed { handle: h, def: stackable, reason: RemovalReason::Removed },
        ]
    );

    // InhibitionChanged both ways.
    let out = w
        .step_with(&[], |w| {
            h = handle(apply(w, "Haste", e, e));
            w.add_loose_tag(e, stunned);
            w.remove_loose_tag(e, stunned);
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Added { handle: h, def: haste },
            EffectEvent::InhibitionChanged { handle: h, inhibited: true },
            EffectEvent::InhibitionChanged { handle: h, inhibited: false },
        ]
    );

    // DurationChanged.
    let out = w
        .step_with(&[], |w| {
            h = handle(apply(w, "Long", e, e));
            w.extend_effect(h, 20);
        })
        .clone();
    let frame = w.frame();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Added { handle: h, def: long },
            EffectEvent::DurationChanged {
                handle: h,
                old_expires_at: frame + 100,
                new_expires_at: frame + 120
            },
        ]
    );

    // ImmunityBlocked (with the blocker) and Executed.
    let mut ward_h = EffectHandle::NONE;
    let out = w
        .step_with(&[], |w| {
            ward_h = handle(apply(w, "Ward", e, e));
            let s = spec(w, "Hit", ghoul);
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::Immune { blocker: ward_h }));
            assert_eq!(apply(w, "Hit", e, e), Applied::Executed);
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Added { handle: ward_h, def: ward },
            EffectEvent::ImmunityBlocked { target: e, def: Some(hit), blocker: ward_h },
            EffectEvent::Executed { target: e, def: Some(hit), handle: None },
        ]
    );

    // Removed{RemovedByTags}.
    let out = w
        .step_with(&[], |w| {
            h = handle(apply(w, "Curse", e, e));
            assert_eq!(apply(w, "Cleanse", e, e), Applied::Executed);
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Added { handle: h, def: curse },
            EffectEvent::Executed { target: e, def: Some(cleanse), handle: None },
            EffectEvent::Removed { handle: h, def: curse, reason: RemovalReason::RemovedByTags },
        ]
    );

    // ApplyFailed: unknown definition, non-actor target, despawned target.
    let plain = w.spawn().unwrap();
    let out = w
        .step_with(&[], |w| {
            let unknown = EffectSpec::new(EffectDefId(999), 1);
            assert_eq!(w.apply_effect(unknown, e), Err(ApplyError::UnknownDefinition));
            let s = spec(w, "Hit", e);
            assert_eq!(w.apply_effect(s, plain), Err(ApplyError::InvalidTarget));
            w.despawn(ghoul);
            assert_eq!(w.apply_effect(s, ghoul), Err(ApplyError::InvalidTarget));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::ApplyFailed {
                target: e,
                def: Some(EffectDefId(999)),
                error: ApplyError::UnknownDefinition
            },
            EffectEvent::ApplyFailed {
                target: plain,
                def: Some(hit),
                error: ApplyError::InvalidTarget
            },
            EffectEvent::ApplyFailed {
                target: ghoul,
                def: Some(hit),
                error: ApplyError::InvalidTarget
            },
        ]
    );

    // Removed{TargetDespawned} for every active effect of a despawned entity, newest first.
    let remaining: Vec<EffectHandle> = w.effects(e).iter().map(|f| f.handle(e)).collect();
    assert_eq!(remaining.len(), 3, "Haste, Long, Ward");
    let out = w.step_with(&[], |w| w.despawn(e)).clone();
    let mut want: Vec<(EffectHandle, RemovalReason)> =
        remaining.iter().map(|h| (*h, RemovalReason::TargetDespawned)).collect();
    want.reverse();
    assert_eq!(removed(&out), want);
    assert!(w.effects(e).is_empty());
    assert_eq!(w.effect(remaining[0]), None, "stale handles resolve to nothing");
}

#[test]
fn f_ge_06_remove_effect_stacks_and_remove_matching() {
    let mut w = world(LIFECYCLE);
    let speed = attr(&w, "Speed");
    let e = actor(&mut w, &["S"]);
    let h = handle(apply(&mut w, "Stackable", e, e));
    apply(&mut w, "Stackable", e, e);
    apply(&mut w, "Stackable", e, e);
    assert_eq!(w.effect(h).unwrap().stacks, 3);
    assert_eq!(w.attr(e, speed), Some(int(103)));
    w.remove_effect_stacks(h, 2);
    assert_eq!(w.effect(h).unwrap().stacks, 1);
    assert_eq!(w.attr(e, speed), Some(int(101)));
    w.remove_effect_stacks(h, 0);
    assert_eq!(w.effect(h).unwrap().stacks, 1, "removing 0 stacks does nothing");
    w.remove_effect_stacks(h, 5);
    assert!(w.effect(h).is_none(), "removing more stacks than there are removes the effect");
    assert_eq!(w.attr(e, speed), Some(int(100)));
    // Removing a stale handle is harmless.
    w.remove_effect(h);
    let buff = def(&w, "Buff");
    apply(&mut w, "Buff", e, e);
    apply(&mut w, "Long", e, e);
    apply(&mut w, "Buff", e, e);
    let q = EffectQuery::new().with_def(buff);
    assert_eq!(w.remove_matching(e, &q), 2);
    assert_eq!(w.effects(e).len(), 1);
    assert_eq!(w.effects(e)[0].def, def(&w, "Long"));
    assert_eq!(w.remove_matching(e, &q), 0);
    assert_eq!(w.attr(e, speed), Some(int(100)));
}

#[test]
fn f_ge_06_capacity_exhaustion_is_an_error_never_a_panic() {
    let cfg = WorldConfig { effects_per_entity: 2, ..WorldConfig::default() };
    let mut w = World::<Plain>::new(content(LIFECYCLE), &Hooks::new(), cfg).unwrap();
    let (speed, health) = (attr(&w, "Speed"), attr(&w, "Health"));
    let long = def(&w, "Long");
    let e = actor(&mut w, &["S"]);
    let st = handle(apply(&mut w, "Stackable", e, e));
    let first = handle(apply(&mut w, "Long", e, e));
    let before = w.state_bytes();
    assert_eq!(w.apply_effect(spec(&w, "Long", e), e), Err(ApplyError::Capacity));
    assert!(w.state_bytes() == before, "a refused application changes nothing");
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "Long", e);
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::Capacity));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::ApplyFailed { target: e, def: Some(long), error: ApplyError::Capacity }]
    );
    assert_eq!(w.effects(e).len(), 2);
    // Stacking onto an existing instance and instant effects still work at capacity.
    assert_eq!(apply(&mut w, "Stackable", e, e), Applied::Stacked(st));
    assert_eq!(w.attr(e, speed), Some(int(102)));
    assert_eq!(apply(&mut w, "Hit", e, e), Applied::Executed);
    assert_eq!(w.base(e, health), Some(int(99)));
    // Freed capacity is reusable.
    w.remove_effect(first);
    assert!(matches!(apply(&mut w, "Long", e, e), Applied::Added(_)));
    assert_eq!(w.apply_effect(spec(&w, "Buff", e), e), Err(ApplyError::Capacity));
    // Many failed applications in a frame never panic.
    w.step_with(&[], |w| {
        for _ in 0..100 {
            let s = spec(w, "Buff", e);
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::Capacity));
        }
    });
    assert_eq!(w.output().effect_events.len(), 100);
}

const TRADE: &str = r#"#![enable(unwrap_variant_newtypes)]
(
    attribute_sets: { "S": (attributes: { "Health": (default: 100), "Power": (default: 10) }) },
    effects: {
        "Hit": (modifiers: [
            (attribute: "Health", op: Add, magnitude: Attribute(attribute: "Power", side: Source, snapshot: true, coef: -1)),
            (attribute: "Power", op: Add, magnitude: Scalable(coef: -5))]),
    },
)"#;

#[test]
fn f_ge_06_queue_effect_applies_in_p7_so_simultaneous_hits_trade() {
    let mut w = world(TRADE);
    let (health, power) = (attr(&w, "Health"), attr(&w, "Power"));
    let hit = def(&w, "Hit");
    let a = actor(&mut w, &["S"]);
    let b = actor(&mut w, &["S"]);
    // Each player's system makes its hit from what it sees and queues it.
    let out = w
        .step_with(&[], |w| {
            let sa = w.make_spec(hit, 1, a);
            w.queue_effect(sa, b);
            assert_eq!(w.base(b, health), Some(int(100)), "not applied before P7");
            let sb = w.make_spec(hit, 1, b);
            w.queue_effect(sb, a);
            assert_eq!(w.base(a, health), Some(int(100)));
            assert!(w.output().effect_events.is_empty());
        })
        .clone();
    assert_eq!((w.base(a, health), w.base(b, health)), (Some(int(90)), Some(int(90))));
    assert_eq!((w.base(a, power), w.base(b, power)), (Some(int(5)), Some(int(5))));
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Executed { target: b, def: Some(hit), handle: None },
            EffectEvent::Executed { target: a, def: Some(hit), handle: None },
        ],
        "queued order"
    );
    // Applying at once instead favours whoever acts first.
    let mut w = world(TRADE);
    let a = actor(&mut w, &["S"]);
    let b = actor(&mut w, &["S"]);
    w.step_with(&[], |w| {
        let sa = w.make_spec(hit, 1, a);
        w.apply_effect(sa, b).unwrap();
        let sb = w.make_spec(hit, 1, b);
        w.apply_effect(sb, a).unwrap();
    });
    assert_eq!((w.base(a, health), w.base(b, health)), (Some(int(95)), Some(int(90))));
    // Outside a step, queue_effect applies at once.
    let s = w.make_spec(hit, 1, a);
    w.queue_effect(s, b);
    assert_eq!(w.base(b, health), Some(int(85)), "A's power is 5 after B's hit");
}

// ---------------------------------------------------------------------------------------------
// F-GE-07 Application pipeline
// ---------------------------------------------------------------------------------------------

thread_local! {
    static REQ_CALLS: RefCell<u32> = const { RefCell::new(0) };
}

fn deny_blessed(w: &World<Plain>, _: &EffectSpec, target: Entity) -> RequirementVerdict {
    REQ_CALLS.with(|c| *c.borrow_mut() += 1);
    if w.has_tag(target, w.content().tag("State.Blessed").unwrap()) {
        RequirementVerdict::Deny
    } else {
        RequirementVerdict::Allow
    }
}

const PIPELINE: &str = r#"(
    tags: ["State.Dead", "State.Blessed", "Faction.Undead", "Data.Power", "Data.Duration"],
    attribute_sets: { "S": (attributes: { "Power": (default: 10) }) },
    effects: {
        "Ward": (duration: Infinite, immunity_tags: ["Faction.Undead"]),
        "Curse": (duration: SetByCaller("Data.Duration"),
                  application_requirements: (ignore: ["State.Dead"]),
                  custom_requirements: ["DenyBlessed"],
                  modifiers: [(attribute: "Power", op: Add, magnitude: SetByCaller("Data.Power"))]),
    },
)"#;

#[test]
fn f_ge_07_pipeline_order_requirements_immunity_custom_set_by_caller() {
    REQ_CALLS.with(|c| *c.borrow_mut() = 0);
    let mut w = build(PIPELINE, Hooks::new().requirement("DenyBlessed", deny_blessed));
    let [dead, blessed, undead, key_power, key_dur] =
        ["State.Dead", "State.Blessed", "Faction.Undead", "Data.Power", "Data.Duration"]
            .map(|n| tag(&w, n));
    let power = attr(&w, "Power");
    let curse = def(&w, "Curse");
    let e = actor(&mut w, &["S"]);
    let ghoul = actor(&mut w, &["S"]);
    let human = actor(&mut w, &["S"]);
    w.add_loose_tag(ghoul, undead);
    let ward = handle(apply(&mut w, "Ward", e, e));
    w.add_loose_tag(e, dead);
    w.add_loose_tag(e, blessed);
    let calls = || REQ_CALLS.with(|c| *c.borrow());
    let ghoul_spec = w.make_spec(curse, 1, ghoul);
    let human_spec = w.make_spec(curse, 1, human);
    let full = |s: EffectSpec| {
        s.with_set_by_caller(key_power, int(5)).with_set_by_caller(key_dur, int(30))
    };

    // Every check would fail: the first one (application requirements) decides.
    let before = w.state_bytes();
    assert_eq!(w.apply_effect(ghoul_spec, e), Err(ApplyError::Requirements));
    assert_eq!(calls(), 0, "custom requirements run after immunity");
    assert!(w.state_bytes() == before, "nothing was mutated");
    w.remove_loose_tag(e, dead);
    // Immunity comes next.
    assert_eq!(w.apply_effect(ghoul_spec, e), Err(ApplyError::Immune { blocker: ward }));
    assert_eq!(calls(), 0);
    // Then the custom requirement.
    assert_eq!(w.apply_effect(human_spec, e), Err(ApplyError::CustomRequirement));
    assert_eq!(calls(), 1);
    w.remove_loose_tag(e, blessed);
    // Then SetByCaller validation, in key order (modifier magnitude and duration).
    let before3 = w.state_bytes();
    let err = w.apply_effect(human_spec.with_set_by_caller(key_dur, int(30)), e);
    assert_eq!(err, Err(ApplyError::MissingSetByCaller { tag: key_power }));
    let err = w.apply_effect(human_spec.with_set_by_caller(key_power, int(5)), e);
    assert_eq!(err, Err(ApplyError::MissingSetByCaller { tag: key_dur }));
    assert_eq!(calls(), 3);
    assert!(w.state_bytes() == before3, "nothing was mutated (G-03)");
    assert_eq!(w.effects(e).len(), 1);
    // Complete: applied.
    let h = handle(w.apply_effect(full(human_spec), e).unwrap());
    assert_eq!(w.attr(e, power), Some(int(15)));
    assert_eq!(w.effect_remaining(h), Some((30, 30)));
    assert_eq!(calls(), 4);
    // The ghoul is still blocked, even with a complete spec.
    assert_eq!(w.apply_effect(full(ghoul_spec), e), Err(ApplyError::Immune { blocker: ward }));
    // Each failure is one event of its own.
    let failures: Vec<ApplyError> = w
        .output()
        .effect_events
        .iter()
        .filter_map(|ev| match ev {
            EffectEvent::ApplyFailed { error, .. } => Some(*error),
            EffectEvent::ImmunityBlocked { blocker, .. } => {
                Some(ApplyError::Immune { blocker: *blocker })
            }
            _ => None,
        })
        .collect();
    assert!(failures.contains(&ApplyError::Immune { blocker: ward }));
}

fn ping_again(w: &mut World<Plain>, m: &ExecutedMod) {
    let ping = w.content().effect("Ping").unwrap();
    let s = w.make_spec(ping, 1, m.target);
    assert_eq!(w.apply_effect(s, m.target), Ok(Applied::Queued));
}

const RUNAWAY: &str = r#"(
    settings: (max_cascade_steps: 4),
    attribute_sets: { "S": (attributes: { "Count": (default: 0) }, post_execute: "PingAgain") },
    effects: { "Ping": (modifiers: [(attribute: "Count", op: Add, magnitude: Scalable(coef: 1))]) },
)"#;

#[test]
fn f_ge_07_cascade_cap_drops_runaway_chains_deterministically() {
    let make = || build(RUNAWAY, Hooks::new().post_execute("PingAgain", ping_again));
    let (mut w1, mut w2) = (make(), make());
    let count = attr(&w1, "Count");
    let ping = def(&w1, "Ping");
    let e1 = actor(&mut w1, &["S"]);
    let e2 = actor(&mut w2, &["S"]);
    assert_eq!(e1, e2);
    let script = move |w: &mut World<Plain>| {
        if w.frame() == 3 || w.frame() == 6 {
            let s = w.make_spec(ping, 1, e1);
            assert_eq!(w.apply_effect(s, e1), Ok(Applied::Executed));
        }
    };
    for frame in 0..10u32 {
        let o1 = w1.step_with(&[], script).clone();
        let o2 = w2.step_with(&[], script).clone();
        assert_eq!(w1.checksums(), w2.checksums(), "frame {frame}");
        assert_eq!(o1.diagnostics, o2.diagnostics);
        assert_eq!(o1.effect_events, o2.effect_events);
        if frame == 3 || frame == 6 {
            assert_eq!(o1.diagnostics, vec![Diagnostic::CascadeCap { dropped: 1 }]);
            // The direct application plus `max_cascade_steps` (4) queued re-applications.
            assert_eq!(o1.effect_events.len(), 5);
        } else {
            assert!(o1.diagnostics.is_empty(), "frame {frame}: {:?}", o1.diagnostics);
            assert!(o1.effect_events.is_empty());
        }
        if frame == 3 {
            assert_eq!(w1.base(e1, count), Some(int(5)));
        }
    }
    assert_eq!(w1.base(e1, count), Some(int(10)), "the chain was cut twice, nothing leaked");
    assert!(w1.state_bytes() == w2.state_bytes());
}
