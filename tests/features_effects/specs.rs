//! Effect definitions (F-GE-01), specs (F-GE-02) and contexts (F-GE-03).

use super::*;

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
