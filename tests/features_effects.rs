//! Feature tests for gameplay effects: F-GE-01 … F-GE-24 and F-GE-26 (`docs/features.md`).
//!
//! Timing convention (the frame schedule of `World::step`): "in frame f" means inside `World::step_with` of frame f
//! (phase P6); "at frame f" reads the world after the step of frame f.
//!
//! Content using attribute-based magnitudes starts with `#![enable(unwrap_variant_newtypes)]`
//! and writes `Attribute(attribute: …)`, so it parses whether or not the loader enables that
//! RON extension by default.

use crate::common::*;
use proptest::prelude::*;
use rollback_abilities::DurationDef;
use rollback_abilities::FnKind;
use rollback_abilities::num::NEVER;
use rollback_abilities::prelude::*;
use rollback_abilities::{
    AttrCause, ContentErrorKind, Diagnostic, EffectEvent, EffectOrigin, RemovalReason, TagQuery,
    TagQueryExpr, TargetData, WorldError,
};
use rollback_abilities::{
    CalcInput, Capture, ExecCtx, ExecutedMod, PostExecuteContext, RequirementVerdict,
};
use std::cell::RefCell;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Steps empty frames until the next step simulates `frame`.
fn run_until<G: Game>(w: &mut World<G>, frame: u32) {
    while w.next_frame() < frame {
        w.step(&[]);
    }
}

fn value<G: Game>(w: &World<G>, e: Entity, a: AttrId) -> (Fx, Fx) {
    let v = w.attr_value(e, a).expect("attribute present");
    (v.base, v.current)
}

fn ts(tags: &[TagId]) -> TagSet {
    TagSet::of(tags)
}

/// The periodic effect (or `None` for instant specs) of every execution in a frame's output.
fn executed_handles(out: &FrameOutput) -> Vec<Option<EffectHandle>> {
    out.effect_events
        .iter()
        .filter_map(|e| match e {
            EffectEvent::Executed { handle, .. } => Some(*handle),
            _ => None,
        })
        .collect()
}

fn removed(out: &FrameOutput) -> Vec<(EffectHandle, RemovalReason)> {
    out.effect_events
        .iter()
        .filter_map(|e| match e {
            EffectEvent::Removed { handle, reason, .. } => Some((*handle, *reason)),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// F-GE-01 Definition
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ge_01_definitions_freeze_with_inheritance_into_combined_sets() {
    let w = world(
        r#"(
        tags: ["Effect.Buff", "Effect.Buff.Haste", "State.Fast", "State.Quick", "Data.Power"],
        attribute_sets: { "S": (attributes: { "Speed": (default: 100) }) },
        effects: {
            "BaseBuff": (duration: Frames(30), asset_tags: ["Effect.Buff"], granted_tags: ["State.Fast"],
                         modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 10))]),
            "Haste": (inherits: "BaseBuff", asset_tags: ["Effect.Buff.Haste"], granted_tags: ["State.Quick"],
                      duration: Infinite),
            "Tick": (duration: Infinite, period: Seconds("0.5"), execute_on_application: true,
                     modifiers: [(attribute: "Speed", op: Add, magnitude: SetByCaller("Data.Power"))]),
            "Once": (modifiers: [(attribute: "Speed", op: Override, magnitude: Scalable(coef: 1))]),
        },
    )"#,
    );
    let c = w.content().clone();
    let (base, haste, tick, once) =
        (def(&w, "BaseBuff"), def(&w, "Haste"), def(&w, "Tick"), def(&w, "Once"));
    let speed = attr(&w, "Speed");
    let b = c.effect_def(base);
    assert_eq!(b.duration, DurationDef::Frames(30));
    assert!(!b.is_instant() && !b.is_periodic());
    let h = c.effect_def(haste);
    // Unset fields are inherited, set ones override, tag lists are merged.
    assert_eq!(h.duration, DurationDef::Infinite);
    assert_eq!(h.modifiers.len(), 1);
    assert_eq!(h.modifiers[0].attr, speed);
    assert_eq!(h.modifiers[0].op, ModOp::Add);
    for t in ["Effect.Buff", "Effect.Buff.Haste"] {
        assert!(h.asset_tags.has_exact(tag(&w, t)), "{t}");
    }
    for t in ["State.Fast", "State.Quick"] {
        assert!(h.granted_tags.has_exact(tag(&w, t)), "{t}");
    }
    // Owned tags are asset ∪ granted, ancestor-expanded for matching.
    assert!(h.owned_tags.has(tag(&w, "State")));
    assert!(h.owned_tags.has(tag(&w, "Effect.Buff.Haste")));
    assert!(!b.owned_tags.has(tag(&w, "State.Quick")));
    let t = c.effect_def(tick);
    assert_eq!(t.period, 30, "0.5 s at 60 Hz");
    assert!(t.execute_on_application && t.is_periodic());
    assert_eq!(t.set_by_caller_keys, vec![tag(&w, "Data.Power")]);
    assert!(c.effect_def(once).is_instant());
    assert_eq!(c.effect_name(haste), "Haste");

    // Validation rejects combinations that could never work.
    let bad = [
        // Instant + granted tags (G-07).
        r#"(tags: ["A"], effects: { "X": (granted_tags: ["A"]) })"#,
        // Executions on a non-periodic duration effect.
        r#"(effects: { "X": (duration: Frames(5), executions: [(calc: "E")]) })"#,
        // Stacking on an instant effect.
        r#"(effects: { "X": (stacking: (kind: ByTarget, limit: 2)) })"#,
        // A period on an instant effect.
        r#"(effects: { "X": (period: Frames(5)) })"#,
        // execute_on_application without a period.
        r#"(effects: { "X": (duration: Infinite, execute_on_application: true) })"#,
    ];
    for text in bad {
        let err = Content::from_ron_str(text).unwrap_err();
        assert_eq!(err.kind, ContentErrorKind::InvalidCombination, "{text}: {err}");
    }
    let err = Content::from_ron_str(r#"(effects: { "X": (duration: Frames(0)) })"#).unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::InvalidValue, "{err}");
    let err =
        Content::from_ron_str(r#"(effects: { "X": (inherits: "Nope", duration: Infinite) })"#)
            .unwrap_err();
    assert_eq!(err.kind, ContentErrorKind::UnknownEffect, "{err}");
}

// ---------------------------------------------------------------------------------------------
// F-GE-02 Spec
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ge_02_spec_is_a_value_with_level_context_source_tags_and_set_by_caller() {
    let mut w = world(
        r#"#![enable(unwrap_variant_newtypes)]
(
        tags: ["Faction.Undead.Ghoul", "Data.A", "Data.B", "Data.C", "Data.D", "Data.E"],
        attribute_sets: { "S": (attributes: { "Power": (default: 7), "Health": (default: 100) }) },
        effects: {
            "Bolt": (duration: Frames(20), modifiers: [
                (attribute: "Health", op: Add, magnitude: Attribute(attribute: "Power", side: Source, snapshot: true, coef: -1))]),
        },
    )"#,
    );
    let (ghoul, undead, faction) =
        (tag(&w, "Faction.Undead.Ghoul"), tag(&w, "Faction.Undead"), tag(&w, "Faction"));
    let keys: Vec<TagId> =
        ["Data.A", "Data.B", "Data.C", "Data.D", "Data.E"].iter().map(|n| tag(&w, n)).collect();
    let src = actor(&mut w, &["S"]);
    w.add_loose_tag(src, ghoul);
    run_through(&mut w, 9);
    let bolt = def(&w, "Bolt");
    let mut s = EffectSpec::new(bolt, 1);
    w.step_with(&[], |w| s = w.make_spec(bolt, 4, src));
    assert_eq!(s.def, bolt);
    assert_eq!(s.level, 4);
    assert_eq!(s.created, 10, "the creation frame");
    assert_eq!((s.context.instigator, s.context.causer), (src, src));
    // Source tags are captured ancestor-expanded.
    for t in [ghoul, undead, faction] {
        assert!(s.source_tags.contains(t));
    }
    // The source's snapshot capture (Power) is stored in the spec.
    assert_eq!(s.n_source_captures, 1);
    assert_eq!(s.source_captures[0], int(7));
    assert!(!s.is_inline());
    // SetByCaller: tag-keyed, replaced in place, four keys in the spec itself.
    assert!(s.set_set_by_caller(keys[0], int(1)));
    assert!(s.set_set_by_caller(keys[1], int(2)));
    assert!(s.set_set_by_caller(keys[0], int(10)), "replacing a key needs no new slot");
    assert!(s.set_set_by_caller(keys[2], int(3)));
    assert!(s.set_set_by_caller(keys[3], int(4)));
    // A fifth key does not fit: not set, and the spec is marked so that it is never applied
    // without it (tests/features_capacities.rs). The copy taken before
    // applies.
    let mut over = s;
    assert!(!over.set_set_by_caller(keys[4], int(5)), "a fifth key does not fit");
    assert!(over.dropped_values() && !s.dropped_values());
    assert_eq!(over.n_set_by_caller, 4);
    assert_eq!(over.set_by_caller(keys[0]), Some(int(10)));
    assert_eq!(over.set_by_caller(keys[3]), Some(int(4)));
    assert_eq!(over.set_by_caller(keys[4]), None);
    // Builders.
    let other = actor(&mut w, &["S"]);
    let s2 = s.with_causer(other).with_duration(0).with_set_by_caller(keys[1], fx("2.5"));
    assert_eq!(s2.context.causer, other);
    assert_eq!(s2.context.instigator, src);
    assert_eq!(s2.duration_override, 1, "a duration override is at least 1 frame");
    assert_eq!(s2.set_by_caller(keys[1]), Some(fx("2.5")));
    assert_eq!(s.set_by_caller(keys[1]), Some(int(2)), "a spec is a value: the copy changed");
    let s3 = s.with_instigator(other);
    assert_eq!(s3.context.instigator, other);
    // A spec is plain bytes: it can be stored and copied like any Pod value.
    let bytes: &[u8] = bytemuck::bytes_of(&s);
    let back: EffectSpec = *bytemuck::from_bytes(bytes);
    assert_eq!(back, s);
    // Applying it later still uses what it captured at creation.
    w.set_base(src, attr(&w, "Power"), int(50));
    run_through(&mut w, 30);
    let target = actor(&mut w, &["S"]);
    let h = handle(w.apply_effect(s, target).unwrap());
    assert_eq!(w.attr(target, attr(&w, "Health")), Some(int(93)));
    let active = *w.effect(h).unwrap();
    assert_eq!((active.level, w.effect_origin(h).unwrap().instigator, active.stacks), (4, src, 1));
}

/// A projectile carrying a spec in its component (snapshot state) until it hits.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Projectile {
    spec: EffectSpec,
    target: Entity,
    hit_at: u32,
    armed: u32,
}

impl Default for Projectile {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

struct Shooter;

impl Game for Shooter {
    type Input = u8;
    type Component = Projectile;
    type Global = ();

    fn systems(world: &mut World<Self>) {
        let frame = world.frame();
        let hits: Vec<(Entity, Projectile)> = world
            .entities()
            .filter_map(|e| world.component(e).map(|p| (e, *p)))
            .filter(|(_, p)| p.armed == 1 && p.hit_at == frame)
            .collect();
        for (e, p) in hits {
            let _ = world.apply_effect(p.spec, p.target);
            world.despawn(e);
        }
    }
}

const BOLT: &str = r#"#![enable(unwrap_variant_newtypes)]
(
    attribute_sets: { "S": (attributes: {
        "Power": (default: 10), "Snap": (default: 0), "Live": (default: 0), "Health": (default: 1000) }) },
    effects: {
        "Bolt": (modifiers: [
            (attribute: "Snap", op: Add, magnitude: Attribute(attribute: "Power", side: Source, snapshot: true)),
            (attribute: "Live", op: Add, magnitude: Attribute(attribute: "Power", side: Source, snapshot: false)),
        ]),
        "Empower": (duration: Infinite, modifiers: [(attribute: "Power", op: Multiply, magnitude: Scalable(coef: 5))]),
    },
)"#;

#[test]
fn f_ge_02_projectile_spec_made_at_frame_10_applies_at_40_with_frame_10_values() {
    let mut w =
        World::<Shooter>::new(content(BOLT), &Hooks::new(), WorldConfig::default()).unwrap();
    let (snap, live, power) = (attr(&w, "Snap"), attr(&w, "Live"), attr(&w, "Power"));
    let shooter = actor(&mut w, &["S"]);
    let victim = actor(&mut w, &["S"]);
    let bolt = def(&w, "Bolt");
    let empower = def(&w, "Empower");
    let script = move |w: &mut World<Shooter>| match w.frame() {
        10 => {
            let spec = w.make_spec(bolt, 1, shooter);
            let p = w.spawn().unwrap();
            *w.component_mut(p).unwrap() =
                Projectile { spec, target: victim, hit_at: 40, armed: 1 };
        }
        20 => {
            let s = w.make_spec(empower, 1, shooter);
            w.apply_effect(s, shooter).unwrap();
        }
        _ => {}
    };
    while w.next_frame() <= 25 {
        w.step_with(&[], script);
    }
    let mid = w.snapshot();
    while w.next_frame() <= 45 {
        w.step_with(&[], script);
    }
    assert_eq!(w.attr(shooter, power), Some(int(50)));
    assert_eq!(w.base(victim, snap), Some(int(10)), "snapshot: the frame-10 value");
    assert_eq!(w.base(victim, live), Some(int(50)), "not snapshotted: the value at impact");
    assert_eq!(w.entity_count(), 2, "the projectile is gone");
    // The in-flight spec is snapshot state: a rollback to frame 26 re-simulates identically.
    let end = w.state_bytes();
    w.load(&mid).unwrap();
    assert_eq!(w.base(victim, snap), Some(int(0)));
    while w.next_frame() <= 45 {
        w.step_with(&[], script);
    }
    assert_eq!(w.base(victim, snap), Some(int(10)));
    assert!(w.state_bytes() == end);
}

// ---------------------------------------------------------------------------------------------
// F-GE-03 Context
// ---------------------------------------------------------------------------------------------

/// What an execution saw: source, causer, hit point, hit part, user bytes.
type SeenContext = (Entity, Entity, [Fx; 3], u32, [u8; 20]);

thread_local! {
    static CONTEXTS: RefCell<Vec<SeenContext>> = const { RefCell::new(Vec::new()) };
    static MODS: RefCell<Vec<ExecutedMod>> = const { RefCell::new(Vec::new()) };
    static SOURCE_TAGS: RefCell<Vec<TagSet>> = const { RefCell::new(Vec::new()) };
}

fn record_context(ctx: &mut ExecCtx<'_>) {
    let c = ctx.spec().context;
    CONTEXTS
        .with(|v| v.borrow_mut().push((ctx.source(), c.causer, c.hit_point, c.hit_part, c.user)));
    SOURCE_TAGS.with(|v| v.borrow_mut().push(*ctx.source_tags()));
    let health = ctx.content().attr("Health").unwrap();
    ctx.output(health, ModOp::Add, int(-1));
}

fn record_mod(_: &mut World<Plain>, m: &ExecutedMod) {
    MODS.with(|v| v.borrow_mut().push(*m));
}

const CONTEXT: &str = r#"(
    tags: ["Faction.Orc"],
    attribute_sets: { "S": (attributes: { "Health": (default: 100) }, post_execute: "RecordMod") },
    effects: {
        "Hit": (executions: [(calc: "RecordContext")]),
        "Burn": (duration: Frames(25), period: Frames(10), executions: [(calc: "RecordContext")]),
        "Mark": (duration: Infinite),
    },
)"#;

fn context_world() -> World<Plain> {
    CONTEXTS.with(|v| v.borrow_mut().clear());
    MODS.with(|v| v.borrow_mut().clear());
    SOURCE_TAGS.with(|v| v.borrow_mut().clear());
    build(
        CONTEXT,
        Hooks::new()
            .execution("RecordContext", &[], record_context)
            .post_execute("RecordMod", record_mod),
    )
}

/// A context world with a source, a target and an arrow (a bare entity, the causer).
fn context_cast() -> (World<Plain>, Entity, Entity, Entity) {
    let mut w = context_world();
    let src = actor(&mut w, &["S"]);
    let target = actor(&mut w, &["S"]);
    let arrow = w.spawn().unwrap();
    (w, src, target, arrow)
}

fn rich_context(w: &World<Plain>, name: &str, src: Entity, arrow: Entity) -> EffectSpec {
    let mut s = spec(w, name, src).with_causer(arrow);
    s.context.hit_point = [int(1), int(2), int(3)];
    s.context.hit_part = 7;
    s.context.user[0] = 42;
    s.context.source_object = arrow;
    s
}

#[test]
fn f_ge_03_context_carries_instigator_causer_and_hit_data() {
    let mut w = context_world();
    let health = attr(&w, "Health");
    let src = actor(&mut w, &["S"]);
    let target = actor(&mut w, &["S"]);
    let arrow = w.spawn().unwrap();
    let s = rich_context(&w, "Hit", src, arrow);
    assert_eq!(w.apply_effect(s, target), Ok(Applied::Executed));
    let seen = CONTEXTS.with(|v| v.borrow().clone());
    assert_eq!(seen, vec![(src, arrow, [int(1), int(2), int(3)], 7, s.context.user)]);
    let mods = MODS.with(|v| v.borrow().clone());
    assert_eq!(mods.len(), 1);
    assert_eq!((mods[0].instigator, mods[0].causer, mods[0].attr), (src, arrow, health));
    // An active effect keeps the context's entities.
    let h = handle(w.apply_effect(rich_context(&w, "Mark", src, arrow), target).unwrap());
    let e = w.effect_origin(h).unwrap();
    assert_eq!((e.instigator, e.causer, e.source_object), (src, arrow, arrow));
    // The origin column is parallel to the effect column.
    let k = w.effects(target).iter().position(|x| x.seq == h.seq).unwrap();
    assert_eq!(w.effect_origins(target).nth(k).unwrap(), e);
    assert_eq!(
        w.effects_matching(target, &EffectQuery::new().with_instigator(src)).count(),
        1,
        "queries filter by the context's instigator"
    );
}

#[test]
fn f_ge_03_periodic_executions_see_the_applied_context() {
    // The active effect keeps its application context (F-GE-03), so a periodic execution sees
    // the same context as the application.
    let (mut w, src, target, arrow) = context_cast();
    let s = rich_context(&w, "Burn", src, arrow);
    w.step_with(&[], |w| {
        w.apply_effect(s, target).unwrap();
    });
    run_through(&mut w, 25);
    let seen = CONTEXTS.with(|v| v.borrow().clone());
    assert_eq!(seen.len(), 2, "ticks at 10 and 20");
    for c in seen {
        assert_eq!(c, (src, arrow, [int(1), int(2), int(3)], 7, s.context.user));
    }
}

#[test]
fn f_ge_03_periodic_execution_source_tags_are_those_at_spec_creation() {
    // `ExecCtx::source_tags` is documented as "the source's tags at spec creation".
    let mut w = context_world();
    let orc = tag(&w, "Faction.Orc");
    let src = actor(&mut w, &["S"]);
    let target = actor(&mut w, &["S"]);
    w.add_loose_tag(src, orc);
    let s = spec(&w, "Burn", src);
    w.remove_loose_tag(src, orc);
    w.step_with(&[], |w| {
        w.apply_effect(s, target).unwrap();
    });
    run_through(&mut w, 12);
    let seen = SOURCE_TAGS.with(|v| v.borrow().clone());
    assert_eq!(seen.len(), 1);
    assert!(seen[0].contains(orc), "the source had Faction.Orc when the spec was made");
}

// ---------------------------------------------------------------------------------------------
// F-GE-04 Duration types
// ---------------------------------------------------------------------------------------------

const DURATIONS: &str = r#"(
    tags: ["Data.Duration", "State.Boosted"],
    attribute_sets: { "S": (attributes: { "Speed": (default: 100) }) },
    effects: {
        "Burst": (modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 5))]),
        "Short": (duration: Frames(10), granted_tags: ["State.Boosted"],
                  modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 50))]),
        "Timed": (duration: Seconds("4.15")),
        "TimedFloat": (duration: Seconds(4.15)),
        "Quarter": (duration: Seconds(0.25)),
        "Tenth": (duration: Seconds("0.1")),
        "Forever": (duration: Infinite, modifiers: [(attribute: "Speed", op: Multiply, magnitude: Scalable(coef: 2))]),
        "Caller": (duration: SetByCaller("Data.Duration")),
    },
)"#;

#[test]
fn f_ge_04_instant_changes_base_and_never_becomes_active() {
    let mut w = world(DURATIONS);
    let speed = attr(&w, "Speed");
    let e = actor(&mut w, &["S"]);
    let burst = def(&w, "Burst");
    let out = w
        .step_with(&[], |w| {
            assert_eq!(apply(w, "Burst", e, e), Applied::Executed);
        })
        .clone();
    assert_eq!(value(&w, e, speed), (int(105), int(105)));
    assert!(w.effects(e).is_empty());
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::Executed { target: e, def: Some(burst), handle: None }]
    );
    assert_eq!(out.attr_events.len(), 1);
    assert_eq!(out.attr_events[0].cause, AttrCause::Execution { def: Some(burst) });
    assert!(out.tag_events.is_empty());
}

#[test]
fn f_ge_04_duration_effect_applied_in_s_is_present_through_s_plus_d_minus_1() {
    let mut w = world(DURATIONS);
    let (speed, boosted) = (attr(&w, "Speed"), tag(&w, "State.Boosted"));
    let e = actor(&mut w, &["S"]);
    let short = def(&w, "Short");
    run_until(&mut w, 20);
    let mut h = EffectHandle::NONE;
    let out = w.step_with(&[], |w| h = handle(apply(w, "Short", e, e))).clone();
    assert_eq!(out.effect_events, vec![EffectEvent::Added { handle: h, def: short }]);
    let active = *w.effect(h).unwrap();
    let expires_at = w.effect_timer(h).unwrap().expires_at;
    assert_eq!((active.start, active.duration, expires_at), (20, 10, 30));
    // The timer column is parallel to the effect column.
    let k = w.effects(e).iter().position(|x| x.seq == h.seq).unwrap();
    assert_eq!(w.effect_timers(e)[k].expires_at, 30);
    for t in 20..30u32 {
        if t > 20 {
            w.step(&[]);
        }
        assert_eq!(w.frame(), t);
        assert_eq!(value(&w, e, speed), (int(100), int(150)), "frame {t}");
        assert!(w.has_tag(e, boosted), "frame {t}");
        assert_eq!(w.effect_remaining(h), Some((30 - t, 10)), "remaining S + D − t at {t}");
    }
    let out = w.step(&[]).clone();
    assert_eq!(w.frame(), 30);
    assert_eq!(value(&w, e, speed), (int(100), int(100)), "gone at S + D");
    assert!(!w.has_tag(e, boosted));
    assert_eq!(w.effect_remaining(h), None);
    assert_eq!(w.effect(h), None);
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::Removed { handle: h, def: short, reason: RemovalReason::Expired }]
    );
}

#[test]
fn f_ge_04_seconds_convert_exactly_to_frames() {
    let w = world(DURATIONS);
    let c = w.content().clone();
    let frames = |n: &str| c.effect_def(def(&w, n)).duration;
    assert_eq!(frames("Timed"), DurationDef::Frames(249), "4.15 s → 249, not 250 (G-47)");
    assert_eq!(frames("TimedFloat"), DurationDef::Frames(249), "authored as a RON float");
    assert_eq!(frames("Quarter"), DurationDef::Frames(15));
    assert_eq!(frames("Tenth"), DurationDef::Frames(6));
    // Another tick rate: ceil(seconds × hz).
    let c30 = content(
        r#"(settings: (tick_rate: 30), effects: {
            "A": (duration: Seconds("0.1")), "B": (duration: Seconds("4.15")), "C": (duration: Seconds(2)) })"#,
    );
    let f = |n: &str| c30.effect_def(c30.effect(n).unwrap()).duration;
    assert_eq!(f("A"), DurationDef::Frames(3));
    assert_eq!(f("B"), DurationDef::Frames(125), "4.15 × 30 = 124.5 → 125");
    assert_eq!(f("C"), DurationDef::Frames(60));
    // A timed effect really lasts that long.
    let mut w = world(DURATIONS);
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| h = handle(apply(w, "Timed", e, e)));
    assert_eq!(w.effect_remaining(h), Some((249, 249)));
    run_through(&mut w, 248);
    assert!(w.effect(h).is_some());
    run_through(&mut w, 249);
    assert!(w.effect(h).is_none());
}

#[test]
fn f_ge_04_infinite_set_by_caller_and_overridden_durations() {
    let mut w = world(DURATIONS);
    let speed = attr(&w, "Speed");
    let key = tag(&w, "Data.Duration");
    let e = actor(&mut w, &["S"]);
    let caller = def(&w, "Caller");
    // Infinite: no remaining time, never expires.
    let mut inf = EffectHandle::NONE;
    w.step_with(&[], |w| inf = handle(apply(w, "Forever", e, e)));
    assert_eq!(w.effect_timer(inf).unwrap().expires_at, NEVER);
    assert_eq!(w.effect_remaining(inf), Some((NEVER, NEVER)), "infinite: never ends");
    run_through(&mut w, 500);
    assert_eq!(value(&w, e, speed), (int(100), int(200)));
    assert!(w.effect(inf).is_some());
    // SetByCaller durations are frames, rounded down, at least 1.
    for (v, frames) in [("90", 90u32), ("2.75", 2), ("0.5", 1), ("-7", 1)] {
        let s = w.make_spec(caller, 1, e).with_set_by_caller(key, fx(v));
        let h = handle(w.apply_effect(s, e).unwrap());
        assert_eq!(w.effect_remaining(h), Some((frames, frames)), "SetByCaller {v}");
    }
    // A missing duration key is refused before anything changes.
    let before = w.state_bytes();
    assert_eq!(
        w.apply_effect(w.make_spec(caller, 1, e), e),
        Err(ApplyError::MissingSetByCaller { tag: key })
    );
    assert!(w.state_bytes() == before);
    // EffectSpec::with_duration overrides the definition's duration (also an infinite one).
    let start = w.next_frame();
    let mut hs = [EffectHandle::NONE; 2];
    w.step_with(&[], |w| {
        let short = spec(w, "Short", e).with_duration(3);
        hs[0] = handle(w.apply_effect(short, e).unwrap());
        let forever = spec(w, "Forever", e).with_duration(5);
        hs[1] = handle(w.apply_effect(forever, e).unwrap());
    });
    assert_eq!(w.effect_remaining(hs[0]), Some((3, 3)));
    assert_eq!(w.effect_remaining(hs[1]), Some((5, 5)));
    run_through(&mut w, start + 2);
    assert!(w.effect(hs[0]).is_some());
    run_through(&mut w, start + 3);
    assert!(w.effect(hs[0]).is_none());
    assert!(w.effect(hs[1]).is_some());
    run_through(&mut w, start + 5);
    assert!(w.effect(hs[1]).is_none());
    assert!(w.effect(inf).is_some());
}

// ---------------------------------------------------------------------------------------------
// F-GE-05 Periodic
// ---------------------------------------------------------------------------------------------

const PERIODIC: &str = r#"(
    tags: ["State.Silenced", "State.Regenerating"],
    attribute_sets: { "S": (attributes: { "Health": (default: 100) }) },
    effects: {
        "Dot": (duration: Seconds(5), period: Seconds(1),
                modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "DotNow": (duration: Seconds(5), period: Seconds(1), execute_on_application: true,
                   modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "Regen": (duration: Infinite, period: Frames(10), granted_tags: ["State.Regenerating"],
                  ongoing_requirements: (ignore: ["State.Silenced"]),
                  modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: 1))]),
    },
)"#;

#[test]
fn f_ge_05_five_seconds_with_one_second_period_executes_five_or_six_times() {
    let mut w = world(PERIODIC);
    let health = attr(&w, "Health");
    let (a, b, c) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let mut hs = [EffectHandle::NONE; 3];
    let mut ticks: [Vec<u32>; 3] = Default::default();
    for frame in 0..=400u32 {
        let out = w
            .step_with(&[], |w| {
                if frame == 0 {
                    hs[0] = handle(apply(w, "Dot", a, a));
                    hs[1] = handle(apply(w, "DotNow", b, b));
                }
                if frame == 7 {
                    hs[2] = handle(apply(w, "Dot", c, c));
                }
            })
            .clone();
        for h in executed_handles(&out).into_iter().flatten() {
            let k = hs.iter().position(|x| *x == h).expect("known handle");
            ticks[k].push(frame);
        }
    }
    assert_eq!(ticks[0], vec![60, 120, 180, 240, 300], "the expiry-frame execution happens");
    assert_eq!(ticks[1], vec![0, 60, 120, 180, 240, 300], "execute_on_application adds one");
    assert_eq!(ticks[2], vec![67, 127, 187, 247, 307], "anchored at the application frame");
    // Each execution changes the base value (no modifier stays).
    assert_eq!(value(&w, a, health), (int(95), int(95)));
    assert_eq!(value(&w, b, health), (int(94), int(94)));
    assert_eq!(value(&w, c, health), (int(95), int(95)));
    assert!(w.effects(a).is_empty() && w.effects(b).is_empty() && w.effects(c).is_empty());
}

#[test]
fn f_ge_05_periodic_execution_event_and_base_change_on_the_tick_frame() {
    let mut w = world(PERIODIC);
    let health = attr(&w, "Health");
    let dot = def(&w, "Dot");
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| h = handle(apply(w, "Dot", e, e)));
    assert_eq!(w.effect_timer(h).unwrap().next_period_at, 60);
    run_through(&mut w, 59);
    assert_eq!(w.base(e, health), Some(int(100)));
    let out = w.step(&[]).clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::Executed { target: e, def: Some(dot), handle: Some(h) }]
    );
    assert_eq!(out.attr_events.len(), 1);
    assert_eq!(
        (out.attr_events[0].old, out.attr_events[0].new, out.attr_events[0].cause),
        (int(100), int(99), AttrCause::Execution { def: Some(dot) })
    );
    assert_eq!(w.effect_timer(h).unwrap().next_period_at, 120);
    // The last execution and the removal share the expiry frame, execution first.
    run_through(&mut w, 299);
    let out = w.step(&[]).clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Executed { target: e, def: Some(dot), handle: Some(h) },
            EffectEvent::Removed { handle: h, def: dot, reason: RemovalReason::Expired },
        ]
    );
}

#[test]
fn f_ge_05_inhibited_periodic_effect_skips_executions_but_keeps_its_schedule() {
    let mut w = world(PERIODIC);
    let (health, silenced, regen_tag) =
        (attr(&w, "Health"), tag(&w, "State.Silenced"), tag(&w, "State.Regenerating"));
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    let mut ticks = Vec::new();
    let mut inhibition = Vec::new();
    for frame in 0..=55u32 {
        let out = w
            .step_with(&[], |w| match frame {
                0 => h = handle(apply(w, "Regen", e, e)),
                15 => w.add_loose_tag(e, silenced),
                35 => w.remove_loose_tag(e, silenced),
                _ => {}
            })
            .clone();
        if executed_handles(&out).contains(&Some(h)) {
            ticks.push(frame);
        }
        for ev in &out.effect_events {
            if let EffectEvent::InhibitionChanged { handle, inhibited } = ev {
                assert_eq!(*handle, h);
                inhibition.push((frame, *inhibited));
            }
        }
        assert_eq!(w.has_tag(e, regen_tag), !(15..35).contains(&frame), "frame {frame}");
    }
    assert_eq!(ticks, vec![10, 40, 50], "20 and 30 skipped; the schedule is not re-anchored");
    assert_eq!(inhibition, vec![(15, true), (35, false)]);
    assert_eq!(w.base(e, health), Some(int(103)));
}

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

fn half_str(input: &CalcInput<'_>) -> Fx {
    input.capture(0) / 2
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

fn read_damage(input: &CalcInput<'_>) -> Fx {
    input.set_by_caller(input.content.tag("Data.Damage").unwrap()).unwrap_or(Fx::ZERO)
}

const SBC: &str = r#"(
    tags: ["Data.Damage", "Data.Duration", "Data.Unused"],
    attribute_sets: { "S": (attributes: { "Health": (default: 100), "Mana": (default: 50) }) },
    effects: {
        "Strike": (modifiers: [(attribute: "Health", op: Add, magnitude: SetByCaller("Data.Damage"))]),
        "Bleed": (duration: Frames(30), period: Frames(10),
                  modifiers: [(attribute: "Health", op: Add, magnitude: SetByCaller("Data.Damage"))]),
        "Sap": (duration: SetByCaller("Data.Duration"),
                modifiers: [(attribute: "Mana", op: Divide, magnitude: SetByCaller("Data.Damage"))]),
        "ManaBurn": (duration: Frames(30), period: Frames(10),
                     modifiers: [(attribute: "Mana", op: Add, magnitude: Custom(calc: "ReadDamage"))]),
        "ManaShield": (duration: Infinite,
                       modifiers: [(attribute: "Mana", op: Add, magnitude: Custom(calc: "ReadDamage"))]),
    },
)"#;

fn sbc_world() -> World<Plain> {
    build(SBC, Hooks::new().calc("ReadDamage", &[], read_damage))
}

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

// ---------------------------------------------------------------------------------------------
// F-GE-17 Immunity
// ---------------------------------------------------------------------------------------------

const IMMUNITY: &str = r#"(
    tags: ["Faction.Undead.Ghoul", "Faction.Human", "Effect.Dot.Poison", "Effect.Buff", "State.Warded",
           "State.Exposed"],
    attribute_sets: { "S": (attributes: { "Health": (default: 100) }) },
    effects: {
        "Ward": (duration: Frames(100), immunity_tags: ["Faction.Undead"], granted_tags: ["State.Warded"]),
        "Antidote": (duration: Infinite, immunity_query: AnyTags(["Effect.Dot"]),
                     ongoing_requirements: (ignore: ["State.Exposed"])),
        "Poison": (duration: Frames(50), asset_tags: ["Effect.Dot.Poison"]),
        "Bless": (duration: Frames(50), asset_tags: ["Effect.Buff"]),
        "Slap": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
    },
)"#;

#[test]
fn f_ge_17_immunity_tags_block_specs_by_their_captured_source_tags() {
    let mut w = world(IMMUNITY);
    let health = attr(&w, "Health");
    let ghoul_tag = tag(&w, "Faction.Undead.Ghoul");
    let slap = def(&w, "Slap");
    let e = actor(&mut w, &["S"]);
    let ghoul = actor(&mut w, &["S"]);
    let human = actor(&mut w, &["S"]);
    w.add_loose_tag(human, tag(&w, "Faction.Human"));
    let early = spec(&w, "Slap", ghoul);
    w.add_loose_tag(ghoul, ghoul_tag);
    let start = w.next_frame();
    let mut ward = EffectHandle::NONE;
    w.step_with(&[], |w| ward = handle(apply(w, "Ward", e, e)));
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "Slap", ghoul);
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::Immune { blocker: ward }));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::ImmunityBlocked { target: e, def: Some(slap), blocker: ward }],
        "reported as ImmunityBlocked only"
    );
    assert_eq!(w.base(e, health), Some(int(100)));
    // Other sources pass; a spec made before the source became undead passes too.
    assert_eq!(apply(&mut w, "Slap", human, e), Applied::Executed);
    assert_eq!(w.apply_effect(early, e), Ok(Applied::Executed));
    assert_eq!(w.base(e, health), Some(int(98)));
    // A spec made while undead stays blocked after the source loses the tag.
    let late = spec(&w, "Slap", ghoul);
    w.remove_loose_tag(ghoul, ghoul_tag);
    assert_eq!(w.apply_effect(late, e), Err(ApplyError::Immune { blocker: ward }));
    // The immunity ends with the effect.
    run_through(&mut w, start + 100);
    assert!(w.effect(ward).is_none());
    assert_eq!(w.apply_effect(late, e), Ok(Applied::Executed));
    assert_eq!(w.base(e, health), Some(int(97)));
}

#[test]
fn f_ge_17_immunity_query_matches_the_incoming_spec() {
    let mut w = world(IMMUNITY);
    let exposed = tag(&w, "State.Exposed");
    let poison = def(&w, "Poison");
    let e = actor(&mut w, &["S"]);
    let antidote = handle(apply(&mut w, "Antidote", e, e));
    let s = spec(&w, "Poison", e);
    assert_eq!(w.apply_effect(s, e), Err(ApplyError::Immune { blocker: antidote }));
    assert_eq!(
        w.output().effect_events.last(),
        Some(&EffectEvent::ImmunityBlocked { target: e, def: Some(poison), blocker: antidote })
    );
    assert!(matches!(apply(&mut w, "Bless", e, e), Applied::Added(_)));
    // An inhibited immunity effect blocks nothing.
    w.add_loose_tag(e, exposed);
    assert!(w.effect(antidote).unwrap().is_inhibited());
    assert!(matches!(w.apply_effect(s, e), Ok(Applied::Added(_))));
    w.remove_loose_tag(e, exposed);
    assert_eq!(w.apply_effect(s, e), Err(ApplyError::Immune { blocker: antidote }));
}

/// An immunity query matches the incoming spec's asset and granted tags together,
/// hierarchically — the definition's granted tags and those the spec added (inline and
/// beyond the spec's two) — as GAS matches an effect query's owning tags.
#[test]
fn f_ge_17_immunity_query_matches_the_incoming_granted_tags() {
    let text = r#"(
        tags: ["State.Debuff.Stun", "State.Debuff.Root", "State.Buff", "Cooldown.Skill.Bolt",
               "Effect.Spell"],
        effects: {
            "Ward": (duration: Infinite, immunity_query: AnyTags(["State.Debuff"])),
            "Stun": (duration: Frames(10), granted_tags: ["State.Debuff.Stun"]),
            "Plain": (duration: Frames(10)),
            "Mixed": (duration: Infinite, immunity_query: AllTags(["Effect.Spell", "State.Buff"])),
            "Spell": (duration: Frames(10), asset_tags: ["Effect.Spell"]),
        },
    )"#;
    let cfg = WorldConfig { granted_tags_per_spec: 4, ..WorldConfig::default() };
    let mut w = World::<Plain>::new(content(text), &Hooks::new(), cfg).unwrap();
    let [root, buff, cd] =
        ["State.Debuff.Root", "State.Buff", "Cooldown.Skill.Bolt"].map(|n| tag(&w, n));
    let (e, f) = (actor(&mut w, &[]), actor(&mut w, &[]));
    let ward = handle(apply(&mut w, "Ward", e, e));
    let mixed = handle(apply(&mut w, "Mixed", f, f));
    let immune = |b| Err(ApplyError::Immune { blocker: b });
    // The definition's granted tag, by its parent.
    let s = spec(&w, "Stun", e);
    assert_eq!(w.apply_effect(s, e), immune(ward));
    // A granted tag the spec added: inline, and as the third beyond the spec's two.
    let mut s = spec(&w, "Plain", e);
    w.add_granted_tag(&mut s, root).unwrap();
    assert_eq!(w.apply_effect(s, e), immune(ward));
    let mut s = spec(&w, "Plain", e);
    for t in [cd, buff, root] {
        w.add_granted_tag(&mut s, t).unwrap();
    }
    assert_eq!(w.apply_effect(s, e), immune(ward));
    assert!(matches!(apply(&mut w, "Plain", e, e), Applied::Added(_)));
    // Asset and granted tags together: an asset tag and an added granted tag make the pair.
    let s = spec(&w, "Spell", f);
    assert!(matches!(w.apply_effect(s, f), Ok(Applied::Added(_))));
    let mut s = spec(&w, "Spell", f);
    w.add_granted_tag(&mut s, buff).unwrap();
    assert_eq!(w.apply_effect(s, f), immune(mixed));
}

// ---------------------------------------------------------------------------------------------
// F-GE-18 Tags on effects
// ---------------------------------------------------------------------------------------------

const EFFECT_TAGS: &str = r#"(
    tags: ["State.Debuff.Stun", "State.Debuff.Slow", "State.Debuff.Purge", "Effect.Debuff.Curse",
           "State.Wet", "State.Dead", "State.Hexed", "Effect.Hex"],
    attribute_sets: { "S": (attributes: { "Speed": (default: 100) }) },
    effects: {
        "Hex": (duration: Infinite, asset_tags: ["Effect.Hex"], granted_tags: ["State.Hexed"]),
        "HexStack": (duration: Infinite, granted_tags: ["State.Hexed"], stacking: (kind: ByTarget, limit: 3)),
        "Stun": (duration: Infinite, granted_tags: ["State.Debuff.Stun"]),
        "Slow": (duration: Infinite, asset_tags: ["State.Debuff.Slow"],
                 modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: -20))]),
        "Weak": (duration: Infinite, asset_tags: ["State.Debuff"]),
        "Curse": (duration: Infinite, asset_tags: ["Effect.Debuff.Curse"]),
        "Purge": (duration: Infinite, asset_tags: ["State.Debuff.Purge"], remove_effects_with_tags: ["State.Debuff"]),
        "UnStun": (remove_effects_with_tags: ["State.Debuff.Stun"]),
        "Drench": (duration: Frames(10), application_requirements: (require: ["State.Wet"], ignore: ["State.Dead"])),
    },
)"#;

#[test]
fn f_ge_18_granted_tags_count_once_per_effect_instance() {
    let mut w = world(EFFECT_TAGS);
    let (hexed, state) = (tag(&w, "State.Hexed"), tag(&w, "State"));
    let e = actor(&mut w, &["S"]);
    let mut hs = [EffectHandle::NONE; 2];
    let out = w
        .step_with(&[], |w| {
            hs[0] = handle(apply(w, "Hex", e, e));
            hs[1] = handle(apply(w, "Hex", e, e));
        })
        .clone();
    assert_eq!(w.tag_count_exact(e, hexed), 2);
    assert_eq!(w.tag_count(e, state), 2, "ancestors count their descendants");
    let hexed_events: Vec<(u32, u32)> =
        out.tag_events.iter().filter(|t| t.tag == hexed).map(|t| (t.old, t.new)).collect();
    assert_eq!(hexed_events, vec![(0, 1), (1, 2)], "one event per application (cascade step)");
    w.remove_effect(hs[0]);
    assert_eq!(w.tag_count_exact(e, hexed), 1);
    assert!(w.has_tag(e, hexed));
    w.remove_effect(hs[1]);
    assert_eq!(w.tag_count_exact(e, hexed), 0);
    assert!(!w.has_tag(e, hexed) && !w.has_tag(e, state));
    // A stack is one instance: one grant whatever the stack count.
    for _ in 0..3 {
        apply(&mut w, "HexStack", e, e);
    }
    assert_eq!(w.effects(e)[0].stacks, 3);
    assert_eq!(w.tag_count_exact(e, hexed), 1);
    // Loose tags and grants add up.
    w.add_loose_tag(e, hexed);
    assert_eq!(w.tag_count_exact(e, hexed), 2);
    w.remove_matching(e, &EffectQuery::new());
    assert_eq!(w.tag_count_exact(e, hexed), 1);
}

#[test]
fn f_ge_18_application_requirements_gate_application() {
    let mut w = world(EFFECT_TAGS);
    let (wet, dead) = (tag(&w, "State.Wet"), tag(&w, "State.Dead"));
    let drench = def(&w, "Drench");
    let e = actor(&mut w, &["S"]);
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "Drench", e);
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::Requirements));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::ApplyFailed {
            target: e,
            def: Some(drench),
            error: ApplyError::Requirements
        }]
    );
    w.add_loose_tag(e, wet);
    let h = handle(apply(&mut w, "Drench", e, e));
    // Application requirements are not ongoing requirements: losing the tag changes nothing.
    w.remove_loose_tag(e, wet);
    assert!(!w.effect(h).unwrap().is_inhibited());
    w.add_loose_tag(e, wet);
    w.add_loose_tag(e, dead);
    assert_eq!(w.apply_effect(spec(&w, "Drench", e), e), Err(ApplyError::Requirements));
    assert_eq!(w.effects(e).len(), 1);
}

#[test]
fn f_ge_18_remove_effects_with_tags_matches_asset_or_granted_tags_hierarchically() {
    let mut w = world(EFFECT_TAGS);
    let speed = attr(&w, "Speed");
    let [stun, slow, weak, curse, purge] =
        ["Stun", "Slow", "Weak", "Curse", "Purge"].map(|n| def(&w, n));
    let e = actor(&mut w, &["S"]);
    let hs: Vec<EffectHandle> =
        ["Stun", "Slow", "Weak", "Curse"].iter().map(|n| handle(apply(&mut w, n, e, e))).collect();
    assert_eq!(w.attr(e, speed), Some(int(80)));
    // A child tag does not match a parent owned tag: UnStun removes only the Stun grant.
    let out = w
        .step_with(&[], |w| {
            apply(w, "UnStun", e, e);
        })
        .clone();
    assert_eq!(removed(&out), vec![(hs[0], RemovalReason::RemovedByTags)]);
    assert_eq!(w.effects(e).iter().map(|f| f.def).collect::<Vec<_>>(), vec![slow, weak, curse]);
    let stun_h = handle(apply(&mut w, "Stun", e, e));
    // "State.Debuff" matches granted State.Debuff.Stun, asset State.Debuff.Slow and asset
    // State.Debuff; not Effect.Debuff.Curse, and never the new Purge itself (asset
    // State.Debuff.Purge).
    let mut p1 = EffectHandle::NONE;
    let out = w.step_with(&[], |w| p1 = handle(apply(w, "Purge", e, e))).clone();
    let mut got = removed(&out);
    got.sort_by_key(|(h, _)| h.seq);
    assert_eq!(
        got,
        vec![
            (hs[1], RemovalReason::RemovedByTags),
            (hs[2], RemovalReason::RemovedByTags),
            (stun_h, RemovalReason::RemovedByTags),
        ]
    );
    assert!(out.effect_events.contains(&EffectEvent::Removed {
        handle: stun_h,
        def: stun,
        reason: RemovalReason::RemovedByTags
    }));
    assert_eq!(w.effects(e).iter().map(|f| f.def).collect::<Vec<_>>(), vec![curse, purge]);
    assert_eq!(w.attr(e, speed), Some(int(100)));
    assert!(!w.has_tag(e, tag(&w, "State.Debuff.Stun")));
    // A second Purge removes the first one, not itself.
    let p2 = handle(apply(&mut w, "Purge", e, e));
    assert!(w.effect(p1).is_none());
    assert!(w.effect(p2).is_some());
    assert_eq!(w.effects(e).len(), 2);
    assert!(w.effect(hs[3]).is_some(), "Curse (Effect.Debuff.Curse) was never matched");
}

// ---------------------------------------------------------------------------------------------
// F-GE-19 Ongoing requirements
// ---------------------------------------------------------------------------------------------

const ONGOING: &str = r#"(
    tags: ["State.Debuff.Stun", "State.Hasted"],
    attribute_sets: { "S": (attributes: { "Speed": (default: 100) }) },
    effects: {
        "Haste": (duration: Frames(30), granted_tags: ["State.Hasted"],
                  ongoing_requirements: (ignore: ["State.Debuff.Stun"]),
                  modifiers: [(attribute: "Speed", op: Multiply, magnitude: Scalable(coef: 2))]),
        "Stun": (duration: Frames(5), granted_tags: ["State.Debuff.Stun"]),
    },
)"#;

#[test]
fn f_ge_19_failing_ongoing_requirements_switch_an_effect_off_and_back_on() {
    let mut w = world(ONGOING);
    let (speed, stun_tag, hasted) =
        (attr(&w, "Speed"), tag(&w, "State.Debuff.Stun"), tag(&w, "State.Hasted"));
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    let mut log = Vec::new();
    for frame in 0..=31u32 {
        let out = w
            .step_with(&[], |w| match frame {
                0 => h = handle(apply(w, "Haste", e, e)),
                10 => w.add_loose_tag(e, stun_tag),
                20 => w.remove_loose_tag(e, stun_tag),
                _ => {}
            })
            .clone();
        let on = (0..10).contains(&frame) || (20..30).contains(&frame);
        assert_eq!(w.attr(e, speed), Some(int(if on { 200 } else { 100 })), "frame {frame}");
        assert_eq!(w.has_tag(e, hasted), on, "frame {frame}");
        if frame < 30 {
            let f = w.effect(h).expect("the effect stays while inhibited");
            assert_eq!(f.is_inhibited(), !on, "frame {frame}");
            assert_eq!(w.effect_remaining(h), Some((30 - frame, 30)), "duration keeps counting");
        }
        for ev in &out.effect_events {
            if let EffectEvent::InhibitionChanged { inhibited, .. } = ev {
                log.push((frame, *inhibited));
            }
        }
        if frame == 10 || frame == 20 {
            let speed_events: Vec<(Fx, Fx, AttrCause)> = out
                .attr_events
                .iter()
                .filter(|a| a.attr == speed)
                .map(|a| (a.old, a.new, a.cause))
                .collect();
            let (old, new) = if frame == 10 { (200, 100) } else { (100, 200) };
            assert_eq!(speed_events, vec![(int(old), int(new), AttrCause::Modifiers)]);
        }
    }
    assert_eq!(log, vec![(10, true), (20, false)]);
    assert!(w.effect(h).is_none(), "expired at 30 as scheduled");
}

#[test]
fn f_ge_19_inhibition_follows_tags_granted_by_other_effects_and_at_application() {
    let mut w = world(ONGOING);
    let (speed, stun_tag, hasted) =
        (attr(&w, "Speed"), tag(&w, "State.Debuff.Stun"), tag(&w, "State.Hasted"));
    let [haste, stun] = ["Haste", "Stun"].map(|n| def(&w, n));
    let e = actor(&mut w, &["S"]);
    // Applied while the requirement fails: added switched off.
    w.add_loose_tag(e, stun_tag);
    let mut h = EffectHandle::NONE;
    let out = w.step_with(&[], |w| h = handle(apply(w, "Haste", e, e))).clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Added { handle: h, def: haste },
            EffectEvent::InhibitionChanged { handle: h, inhibited: true },
        ]
    );
    assert!(!w.has_tag(e, hasted));
    assert_eq!(w.attr(e, speed), Some(int(100)));
    assert_eq!(w.effects_matching(e, &EffectQuery::new()).count(), 1);
    assert_eq!(w.effects_matching(e, &EffectQuery::new().including_inhibited(false)).count(), 0);
    w.remove_loose_tag(e, stun_tag);
    assert_eq!(w.attr(e, speed), Some(int(200)));
    assert!(w.has_tag(e, hasted));
    // Another effect's granted tag switches it off in the same cascade, and back on at expiry.
    let mut s = EffectHandle::NONE;
    let out = w.step_with(&[], |w| s = handle(apply(w, "Stun", e, e))).clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Added { handle: s, def: stun },
            EffectEvent::InhibitionChanged { handle: h, inhibited: true },
        ]
    );
    assert_eq!(w.attr(e, speed), Some(int(100)));
    let frame = w.frame();
    run_through(&mut w, frame + 4);
    assert_eq!(w.attr(e, speed), Some(int(100)));
    let out = w.step(&[]).clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Removed { handle: s, def: stun, reason: RemovalReason::Expired },
            EffectEvent::InhibitionChanged { handle: h, inhibited: false },
        ]
    );
    assert_eq!(w.attr(e, speed), Some(int(200)));
    // Removing an inhibited effect does not release grants it never held.
    w.add_loose_tag(e, stun_tag);
    w.remove_effect(h);
    assert_eq!(w.tag_count_exact(e, hasted), 0);
    assert!(!w.output().diagnostics.iter().any(|d| matches!(d, Diagnostic::TagUnderflow { .. })));
    assert_eq!(w.attr(e, speed), Some(int(100)));
}

// ---------------------------------------------------------------------------------------------
// F-GE-20 Stacking
// ---------------------------------------------------------------------------------------------

const STACKS: &str = r#"(
    tags: ["Data.Duration"],
    attribute_sets: { "S": (attributes: {
        "A": (default: 10), "B": (default: 10), "C": (default: 30), "D": (default: 0),
        "Health": (default: 100) }) },
    effects: {
        "Rage": (duration: Frames(100), stacking: (kind: ByTarget, limit: 3), modifiers: [
            (attribute: "A", op: Add, magnitude: Scalable(coef: 5)),
            (attribute: "B", op: Multiply, magnitude: Scalable(coef: 1.5)),
            (attribute: "C", op: Divide, magnitude: Scalable(coef: 2)),
            (attribute: "D", op: Override, magnitude: Scalable(coef: 42))]),
        "Mark": (duration: Infinite, stacking: (kind: BySource, limit: 2),
                 modifiers: [(attribute: "A", op: Add, magnitude: Scalable(coef: 1))]),
        "Bleed": (duration: Frames(100), stacking: (kind: ByTarget, limit: 5, refresh: OnApplication)),
        "SbcBleed": (duration: SetByCaller("Data.Duration"), stacking: (kind: ByTarget, limit: 5)),
        "Sticky": (duration: Frames(100), stacking: (kind: ByTarget, limit: 5, refresh: Never)),
        "DotN": (duration: Frames(200), period: Frames(20), stacking: (kind: ByTarget, limit: 5, period: Never),
                 modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "DotR": (duration: Frames(200), period: Frames(20),
                 stacking: (kind: ByTarget, limit: 5, period: ResetOnApplication),
                 modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
        "Clear": (duration: Frames(10), stacking: (kind: ByTarget, limit: 3, expiration: ClearStack)),
        "OneByOne": (duration: Frames(10), stacking: (kind: ByTarget, limit: 3, expiration: RemoveOneAndRefresh),
                     modifiers: [(attribute: "A", op: Add, magnitude: Scalable(coef: 10))]),
        "Lasting": (duration: Frames(10), stacking: (kind: ByTarget, limit: 3, expiration: RefreshOnly)),
        "Capped": (duration: Frames(50), stacking: (kind: ByTarget, limit: 2, deny_overflow: true)),
    },
)"#;

#[test]
fn f_ge_20_stacked_magnitudes_are_bias_plus_m_minus_bias_times_stacks() {
    let mut w = world(STACKS);
    let [a, b, c, d] = ["A", "B", "C", "D"].map(|n| attr(&w, n));
    let e = actor(&mut w, &["S"]);
    let other = actor(&mut w, &["S"]);
    let vals = |w: &World<Plain>| [a, b, c, d].map(|x| w.attr(e, x).unwrap());
    let h = handle(apply(&mut w, "Rage", e, e));
    assert_eq!(vals(&w), [int(15), int(15), int(15), int(42)]);
    // ByTarget: another source's application joins the same stack.
    assert_eq!(apply(&mut w, "Rage", other, e), Applied::Stacked(h));
    assert_eq!(vals(&w), [int(20), int(20), int(10), int(42)], "×(1 + 0.5 × 2), ÷(1 + 1 × 2)");
    assert_eq!(apply(&mut w, "Rage", e, e), Applied::Stacked(h));
    assert_eq!(vals(&w), [int(25), int(25), fx("7.5"), int(42)], "Override ignores stacks");
    assert_eq!(w.effects(e).len(), 1);
    assert_eq!(w.effect_origin(h).unwrap().instigator, e);
    // At the limit the application still succeeds (and refreshes) without a new stack.
    w.step(&[]);
    let out = w
        .step_with(&[], |w| {
            assert_eq!(apply(w, "Rage", e, e), Applied::Stacked(h));
        })
        .clone();
    assert_eq!(w.effect(h).unwrap().stacks, 3);
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::DurationChanged { handle: h, old_expires_at: 100, new_expires_at: 101 }],
        "applied before the first step (start 0), refreshed in frame 1"
    );
    assert_eq!(vals(&w), [int(25), int(25), fx("7.5"), int(42)]);
    w.remove_effect_stacks(h, 1);
    assert_eq!(vals(&w), [int(20), int(20), int(10), int(42)]);
    // The stored magnitude is the single-stack one.
    assert_eq!(w.effect_magnitude(h, 1), Some(fx("1.5")));
}

#[test]
fn f_ge_20_by_source_keeps_one_stack_per_source() {
    let mut w = world(STACKS);
    let a = attr(&w, "A");
    let mark = def(&w, "Mark");
    let e = actor(&mut w, &["S"]);
    let (s1, s2) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let h1 = handle(apply(&mut w, "Mark", s1, e));
    let h2 = handle(apply(&mut w, "Mark", s2, e));
    assert_ne!(h1, h2);
    assert_eq!(apply(&mut w, "Mark", s1, e), Applied::Stacked(h1));
    assert_eq!(apply(&mut w, "Mark", s1, e), Applied::Stacked(h1), "limit 2 reached");
    assert_eq!(w.effect(h1).unwrap().stacks, 2);
    assert_eq!(w.effect(h2).unwrap().stacks, 1);
    assert_eq!(w.attr(e, a), Some(int(13)));
    let q = EffectQuery::new().with_def(mark).with_instigator(s2);
    assert_eq!(w.effects_matching(e, &q).map(|f| f.stacks).collect::<Vec<_>>(), vec![1]);
}

#[test]
fn f_ge_20_refresh_uses_the_incoming_specs_duration() {
    let mut w = world(STACKS);
    let key = tag(&w, "Data.Duration");
    let [bleed, sbc_bleed] = ["Bleed", "SbcBleed"].map(|n| def(&w, n));
    let e = actor(&mut w, &["S"]);
    let t = actor(&mut w, &["S"]);
    let (mut h, mut hs) = (EffectHandle::NONE, EffectHandle::NONE);
    w.step_with(&[], |w| {
        let s = w.make_spec(bleed, 1, e).with_duration(100);
        h = handle(w.apply_effect(s, e).unwrap());
        let s = w.make_spec(sbc_bleed, 1, t).with_set_by_caller(key, int(120));
        hs = handle(w.apply_effect(s, t).unwrap());
    });
    assert_eq!(w.effect_remaining(hs), Some((120, 120)));
    run_through(&mut w, 9);
    let out = w
        .step_with(&[], |w| {
            let s = w.make_spec(bleed, 1, e).with_duration(50);
            assert_eq!(w.apply_effect(s, e), Ok(Applied::Stacked(h)));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::StackChanged { handle: h, old: 1, new: 2 },
            EffectEvent::DurationChanged { handle: h, old_expires_at: 100, new_expires_at: 60 },
        ]
    );
    assert_eq!(w.effect_remaining(h), Some((50, 50)));
    // SetByCaller durations are honoured on refresh (G-22).
    run_through(&mut w, 19);
    w.step_with(&[], |w| {
        let s = w.make_spec(sbc_bleed, 1, t).with_set_by_caller(key, int(30));
        assert_eq!(w.apply_effect(s, t), Ok(Applied::Stacked(hs)));
    });
    assert_eq!(w.effect_remaining(hs), Some((30, 30)));
    run_through(&mut w, 49);
    assert_eq!(w.effect(hs).map(|f| f.stacks), Some(2));
    let out = w.step(&[]).clone();
    assert_eq!(removed(&out), vec![(hs, RemovalReason::Expired)], "frame 50");
    run_through(&mut w, 59);
    assert!(w.effect(h).is_some());
    let out = w.step(&[]).clone();
    assert_eq!(removed(&out), vec![(h, RemovalReason::Expired)], "ClearStack: both stacks at 60");
}

#[test]
fn f_ge_20_refresh_never_keeps_the_expiry() {
    let mut w = world(STACKS);
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| h = handle(apply(w, "Sticky", e, e)));
    run_through(&mut w, 49);
    let out = w
        .step_with(&[], |w| {
            apply(w, "Sticky", e, e);
        })
        .clone();
    assert_eq!(out.effect_events, vec![EffectEvent::StackChanged { handle: h, old: 1, new: 2 }]);
    assert_eq!(w.effect_timer(h).unwrap().expires_at, 100);
    run_through(&mut w, 100);
    assert!(w.effect(h).is_none());
}

#[test]
fn f_ge_20_period_never_vs_reset_on_application() {
    let mut w = world(STACKS);
    let health = attr(&w, "Health");
    let (n, r) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let (mut hn, mut hr) = (EffectHandle::NONE, EffectHandle::NONE);
    let (mut ticks_n, mut ticks_r) = (Vec::new(), Vec::new());
    for frame in 0..=60u32 {
        let out = w
            .step_with(&[], |w| {
                if frame == 0 || frame == 15 {
                    hn = handle(apply(w, "DotN", n, n));
                    hr = handle(apply(w, "DotR", r, r));
                }
            })
            .clone();
        let ex = executed_handles(&out);
        if ex.contains(&Some(hn)) {
            ticks_n.push(frame);
        }
        if ex.contains(&Some(hr)) {
            ticks_r.push(frame);
        }
    }
    assert_eq!(ticks_n, vec![20, 40, 60], "the original schedule");
    assert_eq!(ticks_r, vec![35, 55], "re-anchored at the second application");
    assert_eq!(w.base(n, health), Some(int(94)), "−1 × 2 stacks per tick");
    assert_eq!(w.base(r, health), Some(int(96)));
}

#[test]
fn f_ge_20_expiration_policies() {
    let mut w = world(STACKS);
    let a = attr(&w, "A");
    let (c, o, l) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    let mut hs = [EffectHandle::NONE; 3];
    w.step_with(&[], |w| {
        for _ in 0..3 {
            hs[0] = handle(apply(w, "Clear", c, c));
            hs[1] = handle(apply(w, "OneByOne", o, o));
            hs[2] = handle(apply(w, "Lasting", l, l));
        }
    });
    assert_eq!(w.attr(o, a), Some(int(40)));
    run_through(&mut w, 9);
    let out = w.step(&[]).clone();
    assert_eq!(
        out.effect_events,
        vec![
            EffectEvent::Removed {
                handle: hs[0],
                def: def(&w, "Clear"),
                reason: RemovalReason::Expired
            },
            EffectEvent::StackChanged { handle: hs[1], old: 3, new: 2 },
            EffectEvent::DurationChanged { handle: hs[1], old_expires_at: 10, new_expires_at: 20 },
            EffectEvent::DurationChanged { handle: hs[2], old_expires_at: 10, new_expires_at: 20 },
        ]
    );
    assert_eq!(w.attr(o, a), Some(int(30)));
    run_through(&mut w, 20);
    assert_eq!(w.effect(hs[1]).unwrap().stacks, 1);
    assert_eq!(w.attr(o, a), Some(int(20)));
    run_through(&mut w, 29);
    assert!(w.effect(hs[1]).is_some());
    run_through(&mut w, 30);
    assert!(w.effect(hs[1]).is_none(), "the last stack expires at 30");
    assert_eq!(w.attr(o, a), Some(int(10)));
    run_through(&mut w, 200);
    let lasting = w.effect(hs[2]).expect("RefreshOnly never expires on its own");
    assert_eq!((lasting.stacks, w.effect_timer(hs[2]).unwrap().expires_at), (3, 210));
}

#[test]
fn f_ge_20_deny_overflow_refuses_the_application_without_refreshing() {
    let mut w = world(STACKS);
    let capped = def(&w, "Capped");
    let e = actor(&mut w, &["S"]);
    let mut h = EffectHandle::NONE;
    w.step_with(&[], |w| {
        h = handle(apply(w, "Capped", e, e));
        apply(w, "Capped", e, e);
    });
    run_through(&mut w, 4);
    let out = w
        .step_with(&[], |w| {
            let s = spec(w, "Capped", e);
            assert_eq!(w.apply_effect(s, e), Err(ApplyError::StackOverflowDenied));
        })
        .clone();
    assert_eq!(
        out.effect_events,
        vec![EffectEvent::ApplyFailed {
            target: e,
            def: Some(capped),
            error: ApplyError::StackOverflowDenied
        }]
    );
    let f = w.effect(h).unwrap();
    assert_eq!((f.stacks, w.effect_timer(h).unwrap().expires_at), (2, 50));
}

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

// ---------------------------------------------------------------------------------------------
// F-GE-26 Effect queries
// ---------------------------------------------------------------------------------------------

const QUERIES: &str = r#"(
    tags: ["Cooldown.Skill.Fire", "Cooldown.Skill.Ice", "Effect.Buff", "Effect.Debuff", "State.Slowed",
           "State.Immune"],
    attribute_sets: { "S": (attributes: { "Speed": (default: 100), "Armor": (default: 0) }) },
    effects: {
        "FireCd": (duration: Frames(300), granted_tags: ["Cooldown.Skill.Fire"]),
        "IceCd": (duration: Frames(120), granted_tags: ["Cooldown.Skill.Ice"]),
        "Buff": (duration: Infinite, asset_tags: ["Effect.Buff"],
                 modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: 10))]),
        "Debuff": (duration: Infinite, asset_tags: ["Effect.Debuff"], granted_tags: ["State.Slowed"],
                   ongoing_requirements: (ignore: ["State.Immune"]),
                   modifiers: [(attribute: "Speed", op: Add, magnitude: Scalable(coef: -30))]),
        "Plate": (duration: Infinite, modifiers: [(attribute: "Armor", op: Add, magnitude: Scalable(coef: 5))]),
    },
)"#;

#[test]
fn f_ge_26_effects_matching_filters_by_owned_tags_def_instigator_and_attribute() {
    let mut w = world(QUERIES);
    let (speed, armor) = (attr(&w, "Speed"), attr(&w, "Armor"));
    let [fire_cd, ice_cd, buff, debuff, plate] =
        ["FireCd", "IceCd", "Buff", "Debuff", "Plate"].map(|n| def(&w, n));
    let [cooldown, skill_ice, effect, e_buff, e_debuff, slowed, immune] = [
        "Cooldown",
        "Cooldown.Skill.Ice",
        "Effect",
        "Effect.Buff",
        "Effect.Debuff",
        "State.Slowed",
        "State.Immune",
    ]
    .map(|n| tag(&w, n));
    let e = actor(&mut w, &["S"]);
    let (s1, s2) = (actor(&mut w, &["S"]), actor(&mut w, &["S"]));
    w.step_with(&[], |w| {
        apply(w, "FireCd", s1, e);
        apply(w, "IceCd", s2, e);
        apply(w, "Buff", s1, e);
        apply(w, "Debuff", s2, e);
        apply(w, "Plate", s2, e);
    });
    let defs = |w: &World<Plain>, q: &EffectQuery| -> Vec<EffectDefId> {
        w.effects_matching(e, q).map(|f| f.def).collect()
    };
    assert_eq!(defs(&w, &EffectQuery::new()), vec![fire_cd, ice_cd, buff, debuff, plate]);
    let seqs: Vec<u32> = w.effects_matching(e, &EffectQuery::new()).map(|f| f.seq).collect();
    assert!(seqs.windows(2).all(|p| p[0] < p[1]), "ordered by application sequence");
    // Owned tags (asset ∪ granted), hierarchically.
    assert_eq!(
        defs(&w, &EffectQuery::new().with_owned_any(ts(&[cooldown]))),
        vec![fire_cd, ice_cd]
    );
    assert_eq!(defs(&w, &EffectQuery::new().with_owned_any(ts(&[skill_ice]))), vec![ice_cd]);
    assert_eq!(
        defs(&w, &EffectQuery::new().with_owned_any(ts(&[e_buff, slowed]))),
        vec![buff, debuff]
    );
    assert_eq!(defs(&w, &EffectQuery::new().with_owned_all(ts(&[e_debuff, slowed]))), vec![debuff]);
    assert!(defs(&w, &EffectQuery::new().with_owned_all(ts(&[e_debuff, e_buff]))).is_empty());
    let q = TagQuery {
        expr: Some(TagQueryExpr::AllExpr(vec![
            TagQueryExpr::AnyTags(ts(&[effect])),
            TagQueryExpr::NoTags(ts(&[slowed])),
        ])),
    };
    assert_eq!(defs(&w, &EffectQuery::new().with_owned_query(q)), vec![buff]);
    assert!(
        defs(&w, &EffectQuery::new().with_owned_query(TagQuery::EMPTY)).is_empty(),
        "the empty query matches nothing (G-25)"
    );
    // Definition, instigator, modified attribute, and combinations.
    assert_eq!(defs(&w, &EffectQuery::new().with_def(plate)), vec![plate]);
    assert_eq!(defs(&w, &EffectQuery::new().with_instigator(s1)), vec![fire_cd, buff]);
    assert_eq!(defs(&w, &EffectQuery::new().with_modifies(speed)), vec![buff, debuff]);
    assert_eq!(defs(&w, &EffectQuery::new().with_modifies(armor)), vec![plate]);
    assert_eq!(
        defs(&w, &EffectQuery::new().with_instigator(s2).with_modifies(speed)),
        vec![debuff]
    );
    // Inhibited effects match unless excluded.
    w.add_loose_tag(e, immune);
    let q = EffectQuery::new().with_owned_any(ts(&[effect]));
    assert_eq!(defs(&w, &q), vec![buff, debuff]);
    assert_eq!(defs(&w, &q.clone().including_inhibited(false)), vec![buff]);
    // Cooldown lookup: the longest remaining matching effect.
    run_through(&mut w, 50);
    let longest = w
        .effects_matching(e, &EffectQuery::new().with_owned_any(ts(&[cooldown])))
        .filter_map(|f| w.effect_remaining(f.handle(e)))
        .max();
    assert_eq!(longest, Some((250, 300)));
}

/// The granted tags a spec adds (`World::add_granted_tag`, an ability's `cooldown_tags` on its
/// cooldown), inline and beyond the spec's two, are the effect's own tags: queries, removal by
/// query and "remove effects with tags" match them, hierarchically (GAS: owned tags are the
/// spec's asset tags and all its granted tags).
#[test]
fn f_ge_26_queries_and_removal_see_the_granted_tags_a_spec_adds() {
    let text = r#"(
        tags: ["Cooldown.Skill.Fire", "Cooldown.Skill.Ice", "Cooldown.Slot.A", "Cooldown.Slot.B"],
        effects: {
            "Cd": (duration: Frames(100)),
            "ResetSlots": (remove_effects_with_tags: ["Cooldown.Slot"]),
        },
    )"#;
    let cfg = WorldConfig { granted_tags_per_spec: 4, ..WorldConfig::default() };
    let mut w = World::<Plain>::new(content(text), &Hooks::new(), cfg).unwrap();
    let [cooldown, fire, ice, slot, slot_a, slot_b] = [
        "Cooldown",
        "Cooldown.Skill.Fire",
        "Cooldown.Skill.Ice",
        "Cooldown.Slot",
        "Cooldown.Slot.A",
        "Cooldown.Slot.B",
    ]
    .map(|n| tag(&w, n));
    let e = actor(&mut w, &[]);
    let mut handles = Vec::new();
    w.step_with(&[], |w| {
        // Two tags in the spec itself; the third and fourth beyond them.
        let mut a = spec(w, "Cd", e);
        w.add_granted_tag(&mut a, fire).unwrap();
        let mut b = spec(w, "Cd", e);
        for t in [ice, fire, slot_a] {
            w.add_granted_tag(&mut b, t).unwrap();
        }
        let mut c = spec(w, "Cd", e);
        w.add_granted_tag(&mut c, slot_b).unwrap();
        for s in [a, b, c] {
            handles.push(handle(w.apply_effect(s, e).unwrap()));
        }
    });
    let found = |w: &World<Plain>, q: &EffectQuery| -> Vec<EffectHandle> {
        w.effects_matching(e, q).map(|f| f.handle(e)).collect()
    };
    assert_eq!(found(&w, &EffectQuery::new().with_owned_any(ts(&[cooldown]))), handles);
    assert_eq!(found(&w, &EffectQuery::new().with_owned_any(ts(&[ice]))), [handles[1]]);
    assert_eq!(
        found(&w, &EffectQuery::new().with_owned_all(ts(&[fire, slot_a]))),
        [handles[1]],
        "a tag beyond the spec's two"
    );
    let q = TagQuery { expr: Some(TagQueryExpr::NoTags(ts(&[slot]))) };
    assert_eq!(found(&w, &EffectQuery::new().with_owned_query(q)), [handles[0]]);
    let owned = w.effect_owned_tags(handles[1]);
    assert!([cooldown, fire, ice, slot, slot_a].iter().all(|t| owned.contains(*t)));
    assert!(!owned.contains(slot_b));
    assert!(w.effect_owned_tags(EffectHandle { target: e, seq: 9999 }).is_empty());

    // "Remove effects with tags" by a parent tag: the two slot cooldowns, not the first one.
    w.step_with(&[], |w| {
        apply(w, "ResetSlots", e, e);
    });
    assert_eq!(removed(w.output()), [1, 2].map(|i| (handles[i], RemovalReason::RemovedByTags)));
    assert!(w.has_tag(e, fire) && !w.has_tag(e, slot) && !w.has_tag(e, ice));
    // Removal by query.
    w.step_with(&[], |w| {
        assert_eq!(w.remove_matching(e, &EffectQuery::new().with_owned_any(ts(&[fire]))), 1);
    });
    assert!(w.effects(e).is_empty() && !w.has_tag(e, cooldown));
}

#[test]
fn f_ge_26_remove_matching_removes_in_application_order() {
    let mut w = world(QUERIES);
    let speed = attr(&w, "Speed");
    let effect = tag(&w, "Effect");
    let e = actor(&mut w, &["S"]);
    let hs: Vec<EffectHandle> =
        ["Buff", "Plate", "Debuff"].iter().map(|n| handle(apply(&mut w, n, e, e))).collect();
    assert_eq!(w.attr(e, speed), Some(int(80)));
    let mut n = 0;
    let out = w
        .step_with(&[], |w| {
            n = w.remove_matching(e, &EffectQuery::new().with_owned_any(ts(&[effect])));
        })
        .clone();
    assert_eq!(n, 2);
    assert_eq!(
        removed(&out),
        vec![(hs[0], RemovalReason::Removed), (hs[2], RemovalReason::Removed)]
    );
    assert_eq!(w.effects(e).len(), 1);
    assert_eq!(w.attr(e, speed), Some(int(100)));
    assert!(!w.has_tag(e, tag(&w, "State.Slowed")));
}

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
