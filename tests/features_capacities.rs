//! Capacities that bite: the entities of one target data, the SetByCaller
//! values, dynamic granted tags and inline modifiers of one effect spec, and the dynamic tags
//! of one granted ability. Each test shows the default capacity being exceeded *reported*
//! (never a silent drop), the raised capacity working, and the raised world rolling back and
//! re-simulating to the same checksums.

use crate::common::{int, tag};
use rollback_abilities::prelude::*;
use rollback_abilities::{
    AbilityCtx, AbilityHandle, Activation, ActivationFailure, Behaviour, CommitPart, Diagnostic,
    Snapshot, TargetData, TaskEvent, TaskResult, TaskSpec, WorldError,
};
use rollback_abilities::{Capacity, CapacityExceeded, ExecCtx, TargetListError};
use rollback_abilities::{Confirmation, TargetQuery};
use std::cell::RefCell;
use std::sync::Arc;

/// A game whose area query finds every actor (any number: `target_candidates`); shape 1
/// answers through `target_query` with `TargetData::entities` instead (at most four kept).
struct Area;

impl Game for Area {
    type Input = u8;
    type Component = ();
    type Global = ();

    fn target_query(
        w: &World<Self>,
        _: Entity,
        _: Entity,
        _: [Fx; 2],
        _: &TargetQuery,
    ) -> TargetData {
        let all: Vec<Entity> = w.entities().filter(|e| w.has_ability_system(*e)).collect();
        TargetData::entities(&all)
    }

    fn target_candidates(
        w: &World<Self>,
        _: Entity,
        _: Entity,
        _: [Fx; 2],
        q: &TargetQuery,
        out: &mut Vec<Entity>,
    ) -> bool {
        if q.shape == 1 {
            return false;
        }
        out.extend(w.entities().filter(|e| w.has_ability_system(*e)));
        true
    }
}

const CONTENT: &str = r#"(
    tags: ["Data.K1", "Data.K2", "Data.K3", "Data.K4", "Data.K5", "Data.K6",
           "Mark.A", "Mark.B", "Mark.C", "Mark.D", "Team.A", "Team.B", "Team.C", "Team.D",
           "Ability.Quake"],
    attribute_sets: { "S": (post_execute: "Post", attributes: {
        "Health": (default: 1000), "Power": (default: 0), "Armor": (default: 0),
        "Speed": (default: 0), "Luck": (default: 0), "Rage": (default: 0) }) },
    effects: {
        "Hit": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -10))]),
        "Six": (modifiers: [
            (attribute: "Health", op: Add, magnitude: SetByCaller("Data.K1")),
            (attribute: "Health", op: Add, magnitude: SetByCaller("Data.K2")),
            (attribute: "Health", op: Add, magnitude: SetByCaller("Data.K3")),
            (attribute: "Health", op: Add, magnitude: SetByCaller("Data.K4")),
            (attribute: "Health", op: Add, magnitude: SetByCaller("Data.K5")),
            (attribute: "Health", op: Add, magnitude: SetByCaller("Data.K6")),
        ]),
        "Burn": (duration: Frames(20), period: Frames(5), executions: [(calc: "Burn")]),
        "Marked": (duration: Frames(30)),
    },
    abilities: { "Quake": (tags: ["Ability.Quake"], behaviour: "Quake") },
)"#;

const KEYS: [&str; 6] = ["Data.K1", "Data.K2", "Data.K3", "Data.K4", "Data.K5", "Data.K6"];

thread_local! {
    /// What the area attack saw: (frame, targets it could read, or the error).
    static QUAKES: RefCell<Vec<(u32, Result<usize, TargetListError>)>> =
        const { RefCell::new(Vec::new()) };
    /// What post-execute contexts saw of `Data.K6`.
    static POSTS: RefCell<Vec<Option<Fx>>> = const { RefCell::new(Vec::new()) };
}

/// The area attack: an instant targeting task over every actor but the owner (no limit of
/// its own: `max_targets` 0), then a hit on each entity read from the target data.
fn quake_activate(ctx: &mut AbilityCtx<'_, Area>) {
    let query = TargetQuery::new(int(100), int(100), 0);
    let task = TaskSpec::WaitTargetData { confirmation: Confirmation::Instant, query };
    ctx.spawn_task(0, task).unwrap();
}

fn quake_task(ctx: &mut AbilityCtx<'_, Area>, r: &TaskResult) {
    let TaskEvent::TargetData(data) = r.event else { return };
    let frame = ctx.frame();
    let targets = ctx.world().target_entities(&data).map(<[Entity]>::to_vec);
    QUAKES.with(|q| q.borrow_mut().push((frame, targets.as_ref().map(Vec::len).map_err(|e| *e))));
    let hit = ctx.world().content().effect("Hit").unwrap();
    for t in targets.unwrap_or_default() {
        let spec = ctx.make_spec(hit);
        ctx.apply(spec, t);
    }
    ctx.end();
}

/// A periodic execution reading all six SetByCaller values of its (kept) spec: Health goes
/// down by their sum on each execution.
fn burn(ctx: &mut ExecCtx<'_>) {
    let c = ctx.content();
    let health = c.attr("Health").unwrap();
    let sum = KEYS
        .iter()
        .map(|k| ctx.set_by_caller(c.tag(k).unwrap()).unwrap_or(Fx::ZERO))
        .fold(Fx::ZERO, |a, b| a + b);
    ctx.output(health, ModOp::Add, -sum);
}

fn post(
    w: &mut World<Area>,
    _: &rollback_abilities::ExecutedMod,
    ctx: &rollback_abilities::PostExecuteContext,
) {
    let k6 = w.content().tag("Data.K6").unwrap();
    POSTS.with(|p| p.borrow_mut().push(ctx.set_by_caller(k6)));
}

/// The execution and post-execute hook the content names, plus `quake` as "Quake".
fn hooks_with(quake: Behaviour<Area>) -> Hooks<Area> {
    Hooks::new()
        .behaviour("Quake", quake)
        .execution("Burn", &[], burn)
        .post_execute_with_context("Post", post)
}

fn hooks() -> Hooks<Area> {
    hooks_with(Behaviour {
        on_activate: Some(quake_activate),
        on_task: Some(quake_task),
        ..Behaviour::default()
    })
}

/// Every capacity raised: eight targets, six SetByCaller values, four granted tags, six
/// inline modifiers, four ability tags.
fn raised() -> WorldConfig {
    WorldConfig {
        max_target_entities: 8,
        set_by_caller_per_spec: 6,
        granted_tags_per_spec: 4,
        inline_modifiers_per_spec: 6,
        ability_dynamic_tags: 4,
        seed: 17,
        ..WorldConfig::default()
    }
}

/// `raised()` minus the effect whose magnitudes read six keys (which a default world refuses).
fn content_without_six() -> Arc<Content> {
    let text = CONTENT.replace("\"Six\":", "\"Six4\":").replace(
        r#"(attribute: "Health", op: Add, magnitude: SetByCaller("Data.K5")),
            (attribute: "Health", op: Add, magnitude: SetByCaller("Data.K6")),"#,
        "",
    );
    Arc::new(Content::from_ron_str(&text).unwrap())
}

struct Rig {
    w: World<Area>,
    actors: Vec<Entity>,
    quake: AbilityHandle,
}

/// A world with seven actors (the first owns the area attack).
fn rig(content: Arc<Content>, config: WorldConfig) -> Rig {
    QUAKES.with(|q| q.borrow_mut().clear());
    POSTS.with(|p| p.borrow_mut().clear());
    let mut w = World::new(content.clone(), &hooks(), config).unwrap();
    let s = content.attr_set("S").unwrap();
    let actors: Vec<Entity> = (0..7).map(|_| w.spawn_actor(&[s]).unwrap()).collect();
    let quake = w.grant_ability(actors[0], content.ability("Quake").unwrap(), 1).unwrap();
    Rig { w, actors, quake }
}

fn health(w: &World<Area>, e: Entity) -> i64 {
    w.attr(e, w.content().attr("Health").unwrap()).unwrap().to_num()
}

fn exceeded(w: &World<Area>) -> Vec<CapacityExceeded> {
    w.output()
        .diagnostics
        .iter()
        .filter_map(|d| match d {
            Diagnostic::CapacityExceeded { exceeded, .. } => Some(*exceeded),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Target data
// ---------------------------------------------------------------------------------------------

#[test]
fn an_area_attack_on_six_targets_is_cut_and_reported_by_default_and_whole_when_raised() {
    // Default: four targets, and the cut is a diagnostic naming the field to raise (before,
    // the fifth and sixth target were dropped without a trace).
    let mut r = rig(content_without_six(), WorldConfig::default());
    r.w.step(&[0, 0]);
    r.w.step_with(&[0, 0], |w| {
        w.try_activate(r.quake).unwrap();
    });
    let hit: Vec<i64> = r.actors.iter().map(|e| health(&r.w, *e)).collect();
    assert_eq!(hit, [1000, 990, 990, 990, 990, 1000, 1000]);
    let cut = exceeded(&r.w);
    assert_eq!(cut, [CapacityExceeded { capacity: Capacity::TargetEntities, needed: 6, limit: 4 }]);
    let msg = cut[0].to_string();
    assert!(msg.contains("WorldConfig::max_target_entities is 4"), "{msg}");
    assert_eq!(QUAKES.with(|q| q.borrow().clone()), [(1, Ok(4))]);

    // Raised to eight: all six, nothing reported.
    let mut r = rig(content_without_six(), raised());
    r.w.step(&[0, 0]);
    r.w.step_with(&[0, 0], |w| {
        w.try_activate(r.quake).unwrap();
    });
    let hit: Vec<i64> = r.actors.iter().map(|e| health(&r.w, *e)).collect();
    assert_eq!(hit, [1000, 990, 990, 990, 990, 990, 990]);
    assert!(exceeded(&r.w).is_empty());
    assert_eq!(QUAKES.with(|q| q.borrow().clone()), [(1, Ok(6))]);

    // A raised capacity still cuts a larger crowd, and says so.
    let mut r = rig(content_without_six(), WorldConfig { max_target_entities: 5, ..raised() });
    r.w.step_with(&[0, 0], |w| {
        w.try_activate(r.quake).unwrap();
    });
    assert_eq!(
        exceeded(&r.w),
        [CapacityExceeded { capacity: Capacity::TargetEntities, needed: 6, limit: 5 }]
    );
    assert_eq!(QUAKES.with(|q| q.borrow().clone()), [(0, Ok(5))]);
}

thread_local! {
    /// Target data a behaviour kept past its frame.
    static KEPT: RefCell<Option<TargetData>> = const { RefCell::new(None) };
}

fn keep_task(ctx: &mut AbilityCtx<'_, Area>, r: &TaskResult) {
    if let TaskEvent::TargetData(d) = r.event {
        assert_eq!(ctx.world().target_entities(&d).map(<[Entity]>::len), Ok(6));
        assert_eq!((d.count, d.total()), (4, 6));
        KEPT.with(|k| *k.borrow_mut() = Some(d));
    }
    ctx.end();
}

#[test]
fn target_lists_expire_with_their_frame_and_a_full_spill_is_reported() {
    // Target data kept past its frame cannot be read (the list lived in the frame spill).
    let hooks = hooks_with(Behaviour {
        on_activate: Some(quake_activate),
        on_task: Some(keep_task),
        ..Behaviour::default()
    });
    let mut w = World::new(content_without_six(), &hooks, raised()).unwrap();
    let s = w.content().attr_set("S").unwrap();
    let actors: Vec<Entity> = (0..7).map(|_| w.spawn_actor(&[s]).unwrap()).collect();
    let q = w.grant_ability(actors[0], w.content().ability("Quake").unwrap(), 1).unwrap();
    w.step_with(&[0, 0], |w| {
        w.try_activate(q).unwrap();
    });
    let data = KEPT.with(|k| *k.borrow()).expect("reported");
    assert_eq!(w.target_entities(&data), Err(TargetListError::Expired));
    // Its first four are still in the data itself.
    assert_eq!(&data.entities[..data.count as usize], &actors[1..5]);

    // One spill record per frame: a second area attack in the same frame keeps four and
    // reports both the full spill and the cut list.
    let mut r = rig(content_without_six(), WorldConfig { spills_per_frame: 1, ..raised() });
    let quake = r.w.content().ability("Quake").unwrap();
    let second = r.w.grant_ability(r.actors[1], quake, 1).unwrap();
    let first = r.quake;
    r.w.step_with(&[0, 0], |w| {
        w.try_activate(first).unwrap();
        w.try_activate(second).unwrap();
    });
    assert_eq!(
        QUAKES.with(|q| q.borrow().clone()),
        [(0, Ok(6)), (0, Err(TargetListError::Truncated { total: 6 }))]
    );
    assert_eq!(
        exceeded(&r.w),
        [CapacityExceeded { capacity: Capacity::SpillsPerFrame, needed: 2, limit: 1 }]
    );
}

#[test]
fn target_data_made_from_more_than_four_entities_is_reported_when_a_task_receives_it() {
    // `target_query` answering with `TargetData::entities` of six: four kept, recorded.
    thread_local! { static SEEN: RefCell<Vec<(u32, u32)>> = const { RefCell::new(Vec::new()) }; }
    fn activate(ctx: &mut AbilityCtx<'_, Area>) {
        let query = TargetQuery::new(int(1), int(1), 0).shaped(1, 0);
        let task = TaskSpec::WaitTargetData { confirmation: Confirmation::Instant, query };
        ctx.spawn_task(0, task).unwrap();
    }
    fn task(ctx: &mut AbilityCtx<'_, Area>, r: &TaskResult) {
        if let TaskEvent::TargetData(d) = r.event {
            SEEN.with(|s| s.borrow_mut().push((d.count, d.total())));
        }
        ctx.end();
    }
    let hooks = hooks_with(Behaviour {
        on_activate: Some(activate),
        on_task: Some(task),
        ..Behaviour::default()
    });
    let mut w = World::new(content_without_six(), &hooks, raised()).unwrap();
    let s = w.content().attr_set("S").unwrap();
    let actors: Vec<Entity> = (0..7).map(|_| w.spawn_actor(&[s]).unwrap()).collect();
    let q = w.grant_ability(actors[0], w.content().ability("Quake").unwrap(), 1).unwrap();
    w.step_with(&[0, 0], |w| {
        w.try_activate(q).unwrap();
    });
    assert!(
        w.output().diagnostics.contains(&Diagnostic::TargetsDropped { owner: actors[0], total: 7 }),
        "{:?}",
        w.output().diagnostics
    );
    // The owner is excluded from the four kept: three remain.
    assert_eq!(SEEN.with(|s| s.borrow().clone()), [(3, 3)]);
    // Read back, such data says it was cut.
    let cut = TargetData::entities(&actors);
    assert_eq!(w.target_entities(&cut), Err(TargetListError::Truncated { total: 7 }));
    assert_eq!(w.target_entities(&TargetData::entities(&actors[..3])), Ok(&actors[..3]));
}

// ---------------------------------------------------------------------------------------------
// SetByCaller values
// ---------------------------------------------------------------------------------------------

#[test]
fn six_set_by_caller_keys_are_refused_by_a_default_world_and_applied_by_a_raised_one() {
    let content = Arc::new(Content::from_ron_str(CONTENT).unwrap());
    // Default: the world names the effect, the capacity and the field to raise.
    let err = World::new(content.clone(), &hooks(), WorldConfig::default()).unwrap_err();
    match &err {
        WorldError::CapacityTooSmall { what, exceeded } => {
            assert!(what.contains("\"Six\" reads 6 SetByCaller keys"), "{what}");
            assert_eq!(
                *exceeded,
                CapacityExceeded { capacity: Capacity::SetByCallerPerSpec, needed: 6, limit: 4 }
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("WorldConfig::set_by_caller_per_spec is 4"), "{err}");

    // Raised: six values set through the world, all six applied.
    let mut r = rig(content, raised());
    let six = r.w.content().effect("Six").unwrap();
    let mut spec = r.w.make_spec(six, 1, r.actors[0]);
    for (i, k) in KEYS.iter().enumerate() {
        let t = tag(&r.w, k);
        r.w.set_set_by_caller(&mut spec, t, int(-(i as i64 + 1))).unwrap();
    }
    for (i, k) in KEYS.iter().enumerate() {
        assert_eq!(r.w.set_by_caller(&spec, tag(&r.w, k)), Some(int(-(i as i64 + 1))));
    }
    assert_eq!(spec.set_by_caller(tag(&r.w, "Data.K6")), None, "the fifth and sixth are beyond");
    r.w.apply_effect(spec, r.actors[1]).unwrap();
    assert_eq!(health(&r.w, r.actors[1]), 1000 - 21);
    // A seventh key is beyond the capacity: not set, reported, and the spec is marked so that
    // it is never applied without it.
    let mut more = spec;
    let err = r.w.set_set_by_caller(&mut more, tag(&r.w, "Mark.A"), int(1)).unwrap_err();
    assert_eq!(
        err,
        ApplyError::OverCapacity(CapacityExceeded {
            capacity: Capacity::SetByCallerPerSpec,
            needed: 7,
            limit: 6
        })
    );
    assert_eq!(exceeded(&r.w).len(), 1);
    assert_eq!(
        r.w.apply_effect(more, r.actors[1]),
        Err(ApplyError::SpecValuesDropped { capacity: Capacity::SetByCallerPerSpec })
    );
    // The copy made before is untouched (copy on write) and still applies this frame.
    r.w.apply_effect(spec, r.actors[2]).unwrap();
    assert_eq!(health(&r.w, r.actors[2]), 1000 - 21);
    // After a step the values beyond the inline room are gone: an explicit failure.
    r.w.step(&[0, 0]);
    assert_eq!(r.w.apply_effect(spec, r.actors[3]), Err(ApplyError::SpecExpired));
    assert_eq!(health(&r.w, r.actors[3]), 1000);
}

#[test]
fn a_fifth_set_by_caller_value_from_a_builder_fails_the_application_instead_of_vanishing() {
    let mut r = rig(content_without_six(), WorldConfig::default());
    let six4 = r.w.content().effect("Six4").unwrap();
    let mut spec = r.w.make_spec(six4, 1, r.actors[0]);
    for (i, k) in KEYS.iter().enumerate() {
        let set = spec.set_set_by_caller(tag(&r.w, k), int(-(i as i64 + 1)));
        assert_eq!(set, i < 4, "{k}");
    }
    assert!(spec.dropped_values());
    let err = r.w.apply_effect(spec, r.actors[1]).unwrap_err();
    assert_eq!(err, ApplyError::SpecValuesDropped { capacity: Capacity::SetByCallerPerSpec });
    assert!(err.to_string().contains("set_by_caller_per_spec"), "{err}");
    assert_eq!(health(&r.w, r.actors[1]), 1000);
    // Recorded like any failed application.
    assert!(r.w.output().effect_events.iter().any(|e| matches!(
        e,
        rollback_abilities::EffectEvent::ApplyFailed {
            error: ApplyError::SpecValuesDropped { .. },
            ..
        }
    )));
    // Through the world, a default world has no room beyond four either: reported.
    let mut spec = r.w.make_spec(six4, 1, r.actors[0]);
    for k in &KEYS[..4] {
        r.w.set_set_by_caller(&mut spec, tag(&r.w, k), int(-1)).unwrap();
    }
    let err = r.w.set_set_by_caller(&mut spec, tag(&r.w, "Data.K5"), int(-1)).unwrap_err();
    assert_eq!(
        err,
        ApplyError::OverCapacity(CapacityExceeded {
            capacity: Capacity::SetByCallerPerSpec,
            needed: 5,
            limit: 4
        })
    );
}

#[test]
fn a_kept_spec_reads_its_six_values_at_every_periodic_execution_and_in_post_execute() {
    let mut r = rig(content_without_six(), raised());
    let burn = r.w.content().effect("Burn").unwrap();
    let mut spec = r.w.make_spec(burn, 1, r.actors[0]);
    for k in KEYS {
        r.w.set_set_by_caller(&mut spec, tag(&r.w, k), int(1)).unwrap();
    }
    let target = r.actors[1];
    r.w.apply_effect(spec, target).unwrap();
    // Executions at frames 5, 10, 15 and 20 (the spill record the spec named is long gone;
    // the effect reads its stored row).
    for _ in 0..25 {
        r.w.step(&[0, 0]);
    }
    assert_eq!(health(&r.w, target), 1000 - 4 * 6);
    assert_eq!(POSTS.with(|p| p.borrow().clone()), vec![Some(int(1)); 4]);
}

// ---------------------------------------------------------------------------------------------
// Dynamic granted tags, inline modifiers, ability tags
// ---------------------------------------------------------------------------------------------

#[test]
fn granted_tags_beyond_two_are_reported_by_default_and_granted_when_raised() {
    // Default: a builder's third tag fails the application (it used to be ignored); the
    // world refuses a third with the field to raise.
    let mut r = rig(content_without_six(), WorldConfig::default());
    let marked = r.w.content().effect("Marked").unwrap();
    let marks = ["Mark.A", "Mark.B", "Mark.C", "Mark.D"].map(|m| tag(&r.w, m));
    let spec = r.w.make_spec(marked, 1, r.actors[0]);
    let built =
        spec.with_granted_tag(marks[0]).with_granted_tag(marks[1]).with_granted_tag(marks[2]);
    assert_eq!(
        r.w.apply_effect(built, r.actors[1]),
        Err(ApplyError::SpecValuesDropped { capacity: Capacity::GrantedTagsPerSpec })
    );
    assert!(!r.w.has_tag(r.actors[1], marks[0]));
    let mut spec = r.w.make_spec(marked, 1, r.actors[0]);
    r.w.add_granted_tag(&mut spec, marks[0]).unwrap();
    r.w.add_granted_tag(&mut spec, marks[1]).unwrap();
    assert_eq!(
        r.w.add_granted_tag(&mut spec, marks[2]),
        Err(ApplyError::OverCapacity(CapacityExceeded {
            capacity: Capacity::GrantedTagsPerSpec,
            needed: 3,
            limit: 2
        }))
    );

    // Raised to four: all four granted, kept by the active effect (its row of the snapshot),
    // removed with it — also when an earlier effect's removal shifts it in the column.
    let mut r = rig(content_without_six(), raised());
    let t = r.actors[1];
    let first = {
        let mut s = r.w.make_spec(marked, 1, r.actors[0]);
        r.w.add_granted_tag(&mut s, tag(&r.w, "Team.A")).unwrap();
        r.w.apply_effect(s, t).unwrap()
    };
    let mut spec = r.w.make_spec(marked, 1, r.actors[0]);
    for m in marks {
        r.w.add_granted_tag(&mut spec, m).unwrap();
    }
    assert_eq!(r.w.granted_tags_of(&spec), marks);
    let Applied::Added(second) = r.w.apply_effect(spec, t).unwrap() else { panic!() };
    assert!(marks.iter().all(|m| r.w.has_tag(t, *m)));
    let Applied::Added(first) = first else { panic!() };
    r.w.remove_effect(first);
    assert!(!r.w.has_tag(t, tag(&r.w, "Team.A")));
    assert_eq!(r.w.effect_dynamic_tags(second), marks);
    assert!(marks.iter().all(|m| r.w.has_tag(t, *m)));
    // The cooldown query sees the tags beyond two too.
    let d = TagSet::of(&[marks[3]]);
    assert_eq!(r.w.cooldown_remaining(t, &d).map(|x| x.1), Some(30));
    for _ in 0..31 {
        r.w.step(&[0, 0]);
    }
    assert!(marks.iter().all(|m| !r.w.has_tag(t, *m)), "expired with its effect");
}

#[test]
fn inline_specs_beyond_four_modifiers_are_reported_by_default_and_applied_when_raised() {
    let names = ["Health", "Power", "Armor", "Speed", "Luck", "Rage"];
    let mut r = rig(content_without_six(), WorldConfig::default());
    let mods: Vec<(AttrId, ModOp, Fx)> =
        names.iter().map(|n| (r.w.content().attr(n).unwrap(), ModOp::Add, int(5))).collect();
    // The builder keeps four and marks the spec (it used to apply four silently).
    let built = EffectSpec::inline(&mods);
    assert!(built.dropped_values());
    assert_eq!(
        r.w.apply_effect(built, r.actors[1]),
        Err(ApplyError::SpecValuesDropped { capacity: Capacity::InlineModifiersPerSpec })
    );
    assert_eq!(health(&r.w, r.actors[1]), 1000);
    assert_eq!(
        r.w.inline_spec(&mods).unwrap_err(),
        ApplyError::OverCapacity(CapacityExceeded {
            capacity: Capacity::InlineModifiersPerSpec,
            needed: 6,
            limit: 4
        })
    );
    // Raised: all six.
    let mut r = rig(content_without_six(), raised());
    let spec = r.w.inline_spec(&mods).unwrap();
    r.w.apply_effect(spec, r.actors[1]).unwrap();
    for n in names {
        let a = r.w.content().attr(n).unwrap();
        let base = if n == "Health" { 1000 } else { 0 };
        assert_eq!(r.w.attr(r.actors[1], a), Some(int(base + 5)), "{n}");
    }
}

#[test]
fn ability_tags_beyond_two_are_refused_by_default_and_kept_when_raised() {
    let mut r = rig(content_without_six(), WorldConfig::default());
    let teams = ["Team.A", "Team.B", "Team.C", "Team.D"].map(|m| tag(&r.w, m));
    let err = r.w.set_ability_dynamic_tags(r.quake, &teams[..3]).unwrap_err();
    assert_eq!(
        err,
        CapacityExceeded { capacity: Capacity::AbilityDynamicTags, needed: 3, limit: 2 }
    );
    assert!(r.w.ability_dynamic_tags(r.quake).is_empty(), "nothing is set");
    assert_eq!(exceeded(&r.w), [err]);
    r.w.set_ability_dynamic_tags(r.quake, &teams[..2]).unwrap();

    let mut r = rig(content_without_six(), raised());
    r.w.set_ability_dynamic_tags(r.quake, &teams).unwrap();
    assert_eq!(r.w.ability_dynamic_tags(r.quake), teams);
    let own = r.w.ability_tags(r.quake);
    assert!(teams.iter().all(|t| own.contains(*t)));
    // Specs the ability makes carry them among their source tags.
    let hit = r.w.content().effect("Hit").unwrap();
    let spec = r.w.make_ability_spec(r.quake, hit);
    assert!(teams.iter().all(|t| spec.source_tags.contains(*t)));
    assert_eq!(r.w.specs_matching(r.actors[0], &TagSet::of(&[teams[3]]), false), vec![r.quake]);
    // Replacing them clears the row; removing the ability clears it too.
    r.w.set_ability_dynamic_tags(r.quake, &teams[..1]).unwrap();
    assert_eq!(r.w.ability_dynamic_tags(r.quake), &teams[..1]);
    r.w.set_ability_dynamic_tags(r.quake, &teams).unwrap();
    r.w.remove_ability(r.quake);
    let again = r.w.grant_ability(r.actors[0], r.w.content().ability("Quake").unwrap(), 1).unwrap();
    assert!(r.w.ability_dynamic_tags(again).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Rollback invariance with the bigger capacities
// ---------------------------------------------------------------------------------------------

/// The scripted frame of the rollback test: an area attack, six-value specs (instant and
/// periodic with four granted tags), a six-modifier inline spec and ability tags, on a
/// schedule.
fn script(w: &mut World<Area>, quake: AbilityHandle, actors: &[Entity]) {
    let f = w.frame();
    let t = |w: &World<Area>, n: &str| w.content().tag(n).unwrap();
    if f % 7 == 1 {
        let _ = w.try_activate(quake);
    }
    if f % 5 == 2 {
        let six = w.content().effect("Six").unwrap();
        let mut spec = w.make_spec(six, 1, actors[2]);
        for k in KEYS {
            let tk = t(w, k);
            w.set_set_by_caller(&mut spec, tk, int(-(i64::from(f % 3) + 1))).unwrap();
        }
        w.apply_effect(spec, actors[(f as usize / 5) % actors.len()]).unwrap();
    }
    if f % 11 == 3 {
        let burn = w.content().effect("Burn").unwrap();
        let mut spec = w.make_spec(burn, 1, actors[3]);
        for k in KEYS {
            let tk = t(w, k);
            w.set_set_by_caller(&mut spec, tk, int(i64::from(f % 4))).unwrap();
        }
        for m in ["Mark.A", "Mark.B", "Mark.C", "Mark.D"] {
            let tm = t(w, m);
            w.add_granted_tag(&mut spec, tm).unwrap();
        }
        let _ = w.apply_effect(spec, actors[(f as usize / 11) % actors.len()]);
    }
    if f % 13 == 4 {
        let mods: Vec<(AttrId, ModOp, Fx)> = ["Health", "Power", "Armor", "Speed", "Luck", "Rage"]
            .iter()
            .map(|n| (w.content().attr(n).unwrap(), ModOp::Add, int(i64::from(f % 5))))
            .collect();
        let spec = w.inline_spec(&mods).unwrap();
        w.apply_effect(spec, actors[4]).unwrap();
    }
    if f % 9 == 5 {
        let teams = ["Team.A", "Team.B", "Team.C", "Team.D"].map(|n| t(w, n));
        let n = 1 + (f as usize / 9) % 4;
        w.set_ability_dynamic_tags(quake, &teams[..n]).unwrap();
    }
}

#[test]
fn a_world_with_raised_capacities_rolls_back_and_resimulates_to_the_same_checksums() {
    const FRAMES: u32 = 120;
    let content = Arc::new(Content::from_ron_str(CONTENT).unwrap());
    // The straight run.
    let mut r = rig(content.clone(), raised());
    let (quake, actors) = (r.quake, r.actors.clone());
    let mut straight = Vec::new();
    for _ in 0..FRAMES {
        r.w.step_with(&[0, 0], |w| script(w, quake, &actors));
        straight.push(r.w.checksum());
    }
    assert!(QUAKES.with(|q| q.borrow().iter().all(|(_, n)| *n == Ok(6))));
    // The same frames with rollbacks of 1 to 6 frames every few frames, through snapshots
    // (and, every other time, through the snapshot's bytes: the new columns validate).
    let mut r = rig(content, raised());
    let mut snaps: Vec<Snapshot<Area>> = Vec::new();
    let mut f = 0u32;
    let mut rollbacks = 0;
    while f < FRAMES {
        if snaps.len() == f as usize {
            snaps.push(r.w.snapshot());
        } else {
            r.w.save_into(&mut snaps[f as usize]).unwrap();
        }
        r.w.step_with(&[0, 0], |w| script(w, quake, &actors));
        assert_eq!(r.w.checksum(), straight[f as usize], "frame {f}");
        f += 1;
        if f.is_multiple_of(4) && f >= 6 && rollbacks < 40 {
            let depth = 1 + (f * 7) % 6;
            let to = f - depth;
            if rollbacks % 2 == 0 {
                r.w.load(&snaps[to as usize]).unwrap();
            } else {
                r.w.load_bytes(&snaps[to as usize].to_bytes()).unwrap();
            }
            rollbacks += 1;
            f = to;
        }
    }
    assert!(rollbacks > 20);
    // The raised world's snapshot is larger only by its (empty) overflow columns; the spill is
    // empty between frames, so checksums cover none of it.
    let default = rig(content_without_six(), WorldConfig::default()).w.snapshot_bytes();
    let bigger = rig(content_without_six(), raised()).w.snapshot_bytes();
    assert!(bigger > default);
}

#[test]
fn a_spec_made_between_frames_is_saved_loaded_and_applied_identically() {
    // Made between two steps, the spec's spill record is in the snapshot: load it back and
    // apply the same spec value again, and the world is where it was.
    let mut r = rig(Arc::new(Content::from_ron_str(CONTENT).unwrap()), raised());
    r.w.step(&[0, 0]);
    let six = r.w.content().effect("Six").unwrap();
    let mut spec = r.w.make_spec(six, 1, r.actors[0]);
    for k in KEYS {
        r.w.set_set_by_caller(&mut spec, tag(&r.w, k), int(-2)).unwrap();
    }
    let before = r.w.snapshot();
    r.w.apply_effect(spec, r.actors[1]).unwrap();
    r.w.step(&[0, 0]);
    let after = r.w.checksum();
    r.w.load_bytes(&before.to_bytes()).unwrap();
    r.w.apply_effect(spec, r.actors[1]).unwrap();
    r.w.step(&[0, 0]);
    assert_eq!(r.w.checksum(), after);
    assert_eq!(health(&r.w, r.actors[1]), 1000 - 12);
}

// ---------------------------------------------------------------------------------------------
// An ability's cost and cooldown values and cooldown tags beyond the spec's room
// ---------------------------------------------------------------------------------------------

/// `Nova` pays a cost made of six SetByCaller values and starts a cooldown given six values
/// (plus its SetByCaller duration's key, which `cooldown_duration` sets: seven) and three
/// extra cooldown tags. A spec holds four values and two granted tags in itself: the commit's
/// specs name the rest, which stay in the frozen definition.
const NOVA: &str = r#"(
    tags: ["Data.K1", "Data.K2", "Data.K3", "Data.K4", "Data.K5", "Data.K6", "Data.Cd",
           "Cooldown.A", "Cooldown.B", "Cooldown.C", "Cooldown.Nova", "State.Silenced"],
    attribute_sets: { "S": (post_execute: "Post", attributes: {
        "Health": (default: 1000), "Mana": (default: 100) }) },
    effects: {
        // Its requirement makes the commit check its specs before applying them.
        "Cost6": (application_requirements: (ignore: ["State.Silenced"]), modifiers: [
            (attribute: "Mana", op: Add, magnitude: SetByCaller("Data.K1")),
            (attribute: "Mana", op: Add, magnitude: SetByCaller("Data.K2")),
            (attribute: "Mana", op: Add, magnitude: SetByCaller("Data.K3")),
            (attribute: "Mana", op: Add, magnitude: SetByCaller("Data.K4")),
            (attribute: "Mana", op: Add, magnitude: SetByCaller("Data.K5")),
            (attribute: "Mana", op: Add, magnitude: SetByCaller("Data.K6")),
        ]),
        "NovaCooldown": (duration: SetByCaller("Data.Cd"), period: Frames(10),
                         granted_tags: ["Cooldown.Nova"], executions: [(calc: "Burn")]),
    },
    abilities: { "Nova": (
        cost: "Cost6",
        cost_set_by_caller: { "Data.K1": -1, "Data.K2": -2, "Data.K3": -3, "Data.K4": -4,
                              "Data.K5": -5, "Data.K6": -6 },
        cooldown: "NovaCooldown",
        cooldown_duration: Frames(30),
        cooldown_set_by_caller: { "Data.K1": 1, "Data.K2": 1, "Data.K3": 1, "Data.K4": 1,
                                  "Data.K5": 1, "Data.K6": 2 },
        cooldown_tags: ["Cooldown.A", "Cooldown.B", "Cooldown.C"],
        end_after: Frames(1),
    ) },
)"#;

fn nova_hooks() -> Hooks<Area> {
    Hooks::new().execution("Burn", &[], burn).post_execute_with_context("Post", post)
}

/// Seven values per spec (the cooldown's six and its duration's key), three granted tags.
fn nova_config() -> WorldConfig {
    WorldConfig { set_by_caller_per_spec: 7, granted_tags_per_spec: 3, ..WorldConfig::default() }
}

fn attr(w: &World<Area>, e: Entity, name: &str) -> i64 {
    w.attr(e, w.content().attr(name).unwrap()).unwrap().to_num()
}

#[test]
fn an_ability_pays_six_cost_values_and_starts_a_cooldown_with_seven_values_and_three_tags() {
    let content = Arc::new(Content::from_ron_str(NOVA).unwrap());
    let nova_def = content.ability_def(content.ability("Nova").unwrap());
    assert_eq!(nova_def.cost_set_by_caller.len(), 6);
    assert_eq!(nova_def.cooldown_values.len(), 7, "six given, the duration's key set");
    assert_eq!(nova_def.cooldown_tags.len(), 3);

    // A world whose capacities cannot hold the commit's specs says so when it is built, naming
    // the ability, what it gives and the field to raise.
    let small = |sbc: u16, tags: u16| WorldConfig {
        set_by_caller_per_spec: sbc,
        granted_tags_per_spec: tags,
        ..WorldConfig::default()
    };
    for (config, what, exceeded) in [
        (
            small(6, 3),
            "ability \"Nova\": its cooldown gives 7 SetByCaller values",
            CapacityExceeded { capacity: Capacity::SetByCallerPerSpec, needed: 7, limit: 6 },
        ),
        (
            small(7, 2),
            "ability \"Nova\": it has 3 cooldown_tags",
            CapacityExceeded { capacity: Capacity::GrantedTagsPerSpec, needed: 3, limit: 2 },
        ),
    ] {
        match World::new(content.clone(), &nova_hooks(), config) {
            Err(WorldError::CapacityTooSmall { what: w, exceeded: e }) => {
                assert_eq!((w.as_str(), e), (what, exceeded));
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    POSTS.with(|p| p.borrow_mut().clear());
    let mut w = World::new(content.clone(), &nova_hooks(), nova_config()).unwrap();
    let hero = w.spawn_actor(&[content.attr_set("S").unwrap()]).unwrap();
    let nova = w.grant_ability(hero, content.ability("Nova").unwrap(), 1).unwrap();
    let cooldown_tags = ["Cooldown.A", "Cooldown.B", "Cooldown.C", "Cooldown.Nova"];
    // The commit's check sees every value (a spec missing one would fail it with
    // `MissingSetByCaller`) and still reports what does fail it.
    assert_eq!(w.can_activate(nova, None), Ok(()));
    let silenced = tag(&w, "State.Silenced");
    w.add_loose_tag(hero, silenced);
    let requirements =
        ActivationFailure::CommitFailed { part: CommitPart::Cost, error: ApplyError::Requirements };
    assert_eq!(w.can_activate(nova, None), Err(requirements));
    assert_eq!(w.try_activate(nova), Err(requirements));
    w.remove_loose_tag(hero, silenced);
    w.step(&[0, 0]);
    let before = w.snapshot();
    // The commit: the cost's six values (-21 Mana), the cooldown with its four tags.
    assert!(matches!(w.try_activate(nova), Ok(Activation::Activated { .. })));
    assert_eq!(attr(&w, hero, "Mana"), 100 - 21);
    for t in cooldown_tags {
        assert!(w.has_tag(hero, tag(&w, t)), "{t}");
    }
    assert_eq!(w.ability_cooldown_remaining(nova), Some((30, 30)));
    assert!(exceeded(&w).is_empty());
    // The cooldown's tags block the next activation (the third one alone would too).
    w.step(&[0, 0]);
    assert_eq!(w.try_activate(nova), Err(ActivationFailure::OnCooldown));
    let mut third_only = TagSet::EMPTY;
    third_only.insert(tag(&w, "Cooldown.C"));
    assert!(w.cooldown_remaining(hero, &third_only).is_some());
    // The cooldown keeps its spec (its execution re-reads it): every 10 frames the execution
    // reads all six values (1 + 1 + 1 + 1 + 1 + 2 = 7), and the post-execute context the
    // sixth, long after the commit's frame (after the cost's six changes, whose contexts saw
    // the cost's sixth value).
    for _ in 0..40 {
        w.step(&[0, 0]);
    }
    assert_eq!(attr(&w, hero, "Health"), 1000 - 3 * 7);
    let posts = POSTS.with(|p| p.borrow().clone());
    assert_eq!(posts, [vec![Some(int(-6)); 6], vec![Some(int(2)); 3]].concat());
    for t in cooldown_tags {
        assert!(!w.has_tag(hero, tag(&w, t)), "{t} after the cooldown");
    }
    assert!(matches!(w.try_activate(nova), Ok(Activation::Activated { .. })));
    assert_eq!(attr(&w, hero, "Mana"), 100 - 42);

    // Rolled back to before the first activation and re-simulated, through the snapshot's
    // bytes: the same states.
    let straight = {
        let mut w2 = World::new(content.clone(), &nova_hooks(), nova_config()).unwrap();
        w2.load_bytes(&before.to_bytes()).unwrap();
        let mut sums = Vec::new();
        w2.try_activate(nova).unwrap();
        for _ in 0..35 {
            w2.step(&[0, 0]);
            sums.push(w2.checksum());
        }
        sums
    };
    w.load(&before).unwrap();
    w.try_activate(nova).unwrap();
    for (f, sum) in straight.iter().enumerate() {
        w.step(&[0, 0]);
        assert_eq!(w.checksum(), *sum, "frame {f}");
    }
}

#[test]
fn an_ability_with_runtime_cooldown_tags_grants_them_instead_of_its_definitions() {
    let content = Arc::new(Content::from_ron_str(NOVA).unwrap());
    let mut w = World::new(content.clone(), &nova_hooks(), nova_config()).unwrap();
    let hero = w.spawn_actor(&[content.attr_set("S").unwrap()]).unwrap();
    let nova = w.grant_ability(hero, content.ability("Nova").unwrap(), 1).unwrap();
    let b = tag(&w, "Cooldown.B");
    w.set_cooldown_tags(nova, Some(b)).unwrap();
    w.try_activate(nova).unwrap();
    // The runtime tag and the effect's own; none of the definition's three beyond it.
    assert!(w.has_tag(hero, b));
    assert!(w.has_tag(hero, tag(&w, "Cooldown.Nova")));
    assert!(!w.has_tag(hero, tag(&w, "Cooldown.A")));
    assert!(!w.has_tag(hero, tag(&w, "Cooldown.C")));
    // The cooldown's seven values are still all there.
    for _ in 0..11 {
        w.step(&[0, 0]);
    }
    assert_eq!(attr(&w, hero, "Health"), 1000 - 7);
}

#[test]
fn more_values_or_cooldown_tags_than_any_world_can_hold_are_located_content_errors() {
    let keys: Vec<String> = (0..33).map(|i| format!("Data.N{i}")).collect();
    let tags = keys.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ");
    let values = keys.iter().map(|k| format!("{k:?}: 1")).collect::<Vec<_>>().join(", ");
    let text = |ability: &str| {
        format!(
            r#"(tags: [{tags}, "Cooldown.Own"],
                effects: {{ "Cost": (), "Cd": (duration: Frames(5), granted_tags: ["Cooldown.Own"]) }},
                abilities: {{ "X": ({ability}) }})"#
        )
    };
    let cases = [
        (
            format!(r#"cost: "Cost", cost_set_by_caller: {{ {values} }}"#),
            "abilities.X.cost_set_by_caller",
            "at most 32 values",
        ),
        (
            format!(r#"cooldown: "Cd", cooldown_set_by_caller: {{ {values} }}"#),
            "abilities.X.cooldown_set_by_caller",
            "at most 32 values",
        ),
        (
            format!(r#"cooldown: "Cd", cooldown_tags: [{tags}]"#),
            "abilities.X.cooldown_tags[32]",
            "at most 32 extra cooldown tags",
        ),
    ];
    for (ability, path, message) in cases {
        let err = Content::from_ron_str(&text(&ability)).unwrap_err();
        assert_eq!(err.kind, rollback_abilities::ContentErrorKind::Capacity, "{err}");
        assert_eq!(err.path, path, "{err}");
        assert!(err.message.contains(message), "{err}");
    }
}
