//! Feature tests (`docs/features.md`) for abilities (F-GA-01 … F-GA-19, F-GA-21), ability tasks
//! (F-AT-01 … F-AT-05) and targeting (F-TGT-01 … F-TGT-03), plus the per-activation random
//! streams of F-REC-04 and a rollback through running abilities, tasks and timelines.
//!
//! Behaviours are plain `fn`s, so the tests drive them through thread-local *plans* (what the
//! `Script` behaviour does when an ability activates or one of its tasks reports) and read back
//! what happened from a thread-local *log*. Both are reset whenever a world is built.

use crate::common::{apply, attr, handle, int, run_through, tag};
use rollback_abilities::Instancing;
use rollback_abilities::TriggerDef;
use rollback_abilities::prelude::*;
use rollback_abilities::{
    AbilityCtx, AbilityDefId, AbilityEvent, AbilityHandle, AbilityInput, AbilitySetId, Activation,
    ActivationFailure, Behaviour, ContentBuilder, ContentErrorKind, EventData, InputEdge,
    TargetData, TaskEvent, TaskHandle, TaskResult, TaskSpec,
};
use rollback_abilities::{AttrCmp, Capacity, CapacityExceeded, Confirmation, GrantError};
use rollback_abilities::{TargetQuery, TargetView};
use std::cell::RefCell;
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// The game: input bits, quantised aim, a body moved by root motion, a scripted spatial query
// ---------------------------------------------------------------------------------------------

/// One player's input: bits 0–5 are ability inputs, bit 6 confirm, bit 7 cancel; plus aim.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    bytemuck::Pod,
    bytemuck::Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
#[repr(C)]
pub struct Pad {
    bits: u16,
    aim: [i16; 2],
}

const CONFIRM: u16 = 0x40;
const CANCEL: u16 = 0x80;

fn pad(bits: u16) -> Pad {
    Pad { bits, aim: [0, 0] }
}

/// A body moved by root motion (fixed-point bits per axis).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Body {
    pos: [i64; 2],
}

/// The abilities tests' game: a pad input (buttons and an aim), a body moved by root motion,
/// and behaviours that record what they were called with (probes).
pub struct PadProbeGame;

impl Game for PadProbeGame {
    type Input = Pad;
    type Component = Body;
    type Global = ();

    fn ability_input(input: &Pad) -> AbilityInput {
        AbilityInput {
            held: u32::from(input.bits & 0x3f),
            confirm: input.bits & CONFIRM != 0,
            cancel: input.bits & CANCEL != 0,
        }
    }

    fn aim(input: &Pad) -> [i16; 2] {
        input.aim
    }

    /// Shape 0: every actor in index order (self included); shape 1: the owner itself;
    /// shape 2: a hit on the last actor at the aim; other shapes: nothing.
    fn target_query(
        world: &World<Self>,
        owner: Entity,
        avatar: Entity,
        aim: [Fx; 2],
        query: &TargetQuery,
    ) -> TargetData {
        QUERIES.with(|q| q.borrow_mut().push((owner, avatar, aim, *query)));
        let actors: Vec<Entity> =
            world.entities().filter(|e| world.has_ability_system(*e)).collect();
        match query.shape {
            0 => TargetData::entities(&actors),
            1 => TargetData::entity(owner),
            2 => TargetData::hit(
                *actors.last().unwrap(),
                [aim[0], aim[1], Fx::ZERO],
                [Fx::ZERO, Fx::ZERO, Fx::ONE],
                7,
            ),
            _ => TargetData::NONE,
        }
    }

    /// Filter 7 keeps only candidates with an odd entity index.
    fn target_filter(_: &World<Self>, _: Entity, candidate: Entity, filter: u32) -> bool {
        filter != 7 || candidate.index % 2 == 1
    }

    fn root_motion(world: &mut World<Self>, avatar: Entity, delta: [Fx; 2]) {
        let frame = world.frame();
        MOTION.with(|m| m.borrow_mut().push((frame, avatar, delta)));
        if let Some(b) = world.component_mut(avatar) {
            b.pos[0] += delta[0].to_bits();
            b.pos[1] += delta[1].to_bits();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Plans and the log
// ---------------------------------------------------------------------------------------------

/// What the `Script` behaviour does.
#[derive(Clone, Copy, Debug)]
enum Act {
    Spawn(u16, TaskSpec),
    Commit,
    CommitCost,
    CommitCooldown,
    End,
    Cancel,
    EndTask(u16),
    Remove(AbilityHandle),
    Grant(AbilityDefId),
    CancelOther(AbilityHandle),
    Activate(AbilityHandle),
    Probe(AbilityHandle),
    /// Applies a spec made by the ability to the target (`Entity::NONE`: the owner).
    Apply(EffectDefId, Entity),
    Send(Entity, TagId),
    Bump,
    Random,
}

/// What happened, as seen by the behaviour.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rec {
    Activated {
        frame: u32,
        h: AbilityHandle,
        serial: u32,
        event: Option<EventData>,
        avatar: Entity,
        level: u16,
    },
    Task {
        frame: u32,
        h: AbilityHandle,
        user: u16,
        event: TaskEvent,
    },
    Input {
        frame: u32,
        h: AbilityHandle,
        edge: InputEdge,
    },
    Ended {
        frame: u32,
        h: AbilityHandle,
        cancelled: bool,
    },
    Commit {
        frame: u32,
        h: AbilityHandle,
        ok: bool,
    },
    Spawned {
        h: AbilityHandle,
        user: u16,
        result: Result<TaskHandle, ActivationFailure>,
    },
    Probe {
        other: AbilityHandle,
        granted: bool,
        active: bool,
    },
    Queued(Result<Activation, ActivationFailure>),
    State {
        h: AbilityHandle,
        value: u32,
    },
    Random {
        h: AbilityHandle,
        serial: u32,
        draws: [u32; 3],
        unit: Fx,
        chance: bool,
    },
    /// `on_granted` of the `Lifecycle` behaviour.
    Granted {
        frame: u32,
        h: AbilityHandle,
        level: u16,
    },
    /// `on_removed` of the `Lifecycle` behaviour: the state blob and whether it was active.
    Removed {
        frame: u32,
        h: AbilityHandle,
        state: u32,
        active: bool,
    },
}

type Query = (Entity, Entity, [Fx; 2], TargetQuery);

thread_local! {
    static LOG: RefCell<Vec<Rec>> = const { RefCell::new(Vec::new()) };
    static PLAN: RefCell<Vec<(AbilityDefId, Act)>> = const { RefCell::new(Vec::new()) };
    static TASK_PLAN: RefCell<Vec<(AbilityDefId, u16, Act)>> = const { RefCell::new(Vec::new()) };
    static SPAWNED: RefCell<Vec<(AbilityHandle, u16, TaskHandle)>> =
        const { RefCell::new(Vec::new()) };
    static QUERIES: RefCell<Vec<Query>> = const { RefCell::new(Vec::new()) };
    static MOTION: RefCell<Vec<(u32, Entity, [Fx; 2])>> = const { RefCell::new(Vec::new()) };
}

fn reset() {
    LOG.with(|l| l.borrow_mut().clear());
    PLAN.with(|l| l.borrow_mut().clear());
    TASK_PLAN.with(|l| l.borrow_mut().clear());
    SPAWNED.with(|l| l.borrow_mut().clear());
    QUERIES.with(|l| l.borrow_mut().clear());
    MOTION.with(|l| l.borrow_mut().clear());
}

fn push(r: Rec) {
    LOG.with(|l| l.borrow_mut().push(r));
}

/// Sets what `Script` does when `def` activates (replacing any earlier plan for it).
fn plan(def: AbilityDefId, acts: &[Act]) {
    PLAN.with(|p| {
        let mut p = p.borrow_mut();
        p.retain(|(d, _)| *d != def);
        p.extend(acts.iter().map(|a| (def, *a)));
    });
}

/// Adds what `Script` does when task `user` of `def` reports.
fn on_task_plan(def: AbilityDefId, user: u16, act: Act) {
    TASK_PLAN.with(|p| p.borrow_mut().push((def, user, act)));
}

fn log() -> Vec<Rec> {
    LOG.with(|l| l.borrow().clone())
}

/// `(frame, serial)` of every activation of `h` seen by the behaviour.
fn activations_of(h: AbilityHandle) -> Vec<(u32, u32)> {
    log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Activated { frame, h: x, serial, .. } if x == h => Some((frame, serial)),
            _ => None,
        })
        .collect()
}

/// `(frame, user id, event)` of every task report delivered to `h`.
fn task_reports(h: AbilityHandle) -> Vec<(u32, u16, TaskEvent)> {
    log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Task { frame, h: x, user, event } if x == h => Some((frame, user, event)),
            _ => None,
        })
        .collect()
}

/// `(frame, cancelled)` of every `on_end` call of `h`.
fn ends_of(h: AbilityHandle) -> Vec<(u32, bool)> {
    log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Ended { frame, h: x, cancelled } if x == h => Some((frame, cancelled)),
            _ => None,
        })
        .collect()
}

/// The task handles spawned for `h` (successful spawns), by user id.
fn spawned(h: AbilityHandle, user: u16) -> Vec<TaskHandle> {
    SPAWNED.with(|s| s.borrow().iter().filter(|x| x.0 == h && x.1 == user).map(|x| x.2).collect())
}

fn ctx_def(ctx: &AbilityCtx<'_, PadProbeGame>) -> AbilityDefId {
    ctx.world().ability(ctx.handle()).map(|s| s.def).unwrap_or(AbilityDefId(u16::MAX))
}

fn run_act(ctx: &mut AbilityCtx<'_, PadProbeGame>, act: Act) {
    let h = ctx.handle();
    let frame = ctx.frame();
    match act {
        Act::Spawn(user, spec) => {
            let result = ctx.spawn_task(user, spec);
            if let Ok(t) = result {
                SPAWNED.with(|s| s.borrow_mut().push((h, user, t)));
            }
            push(Rec::Spawned { h, user, result });
        }
        Act::Commit => {
            let ok = ctx.commit().is_ok();
            push(Rec::Commit { frame, h, ok });
        }
        Act::CommitCost => {
            let ok = ctx.commit_cost().is_ok();
            push(Rec::Commit { frame, h, ok });
        }
        Act::CommitCooldown => {
            let ok = ctx.commit_cooldown().is_ok();
            push(Rec::Commit { frame, h, ok });
        }
        Act::End => ctx.end(),
        Act::Cancel => ctx.cancel(),
        Act::EndTask(user) => {
            if let Some(t) = spawned(h, user).last() {
                ctx.end_task(*t);
            }
        }
        Act::Remove(other) => ctx.world_mut().remove_ability(other),
        Act::Grant(def) => {
            let owner = ctx.owner();
            ctx.world_mut().grant_ability(owner, def, 1).expect("room for the grant");
        }
        Act::CancelOther(other) => ctx.world_mut().cancel_ability(other),
        Act::Activate(other) => {
            let r = ctx.world_mut().try_activate(other);
            push(Rec::Queued(r));
        }
        Act::Probe(other) => push(Rec::Probe {
            other,
            granted: ctx.world().ability(other).is_some(),
            active: ctx.world().is_ability_active(other),
        }),
        Act::Apply(def, target) => {
            let target = if target.is_none() { ctx.owner() } else { target };
            let spec = ctx.make_spec(def);
            ctx.apply(spec, target);
        }
        Act::Send(to, tag) => {
            let owner = ctx.owner();
            ctx.send_event(to, EventData::new(tag, owner, to));
        }
        Act::Bump => {
            let value: u32 = ctx.state();
            push(Rec::State { h, value });
            ctx.set_state(&(value + 1));
        }
        Act::Random => {
            let draws = [ctx.random_u32(), ctx.random_u32(), ctx.random_below(100)];
            let unit = ctx.random_unit();
            let chance = ctx.random_chance(Fx::ONE);
            push(Rec::Random { h, serial: ctx.serial(), draws, unit, chance });
        }
    }
}

fn s_activate(ctx: &mut AbilityCtx<'_, PadProbeGame>) {
    push(Rec::Activated {
        frame: ctx.frame(),
        h: ctx.handle(),
        serial: ctx.serial(),
        event: ctx.event().copied(),
        avatar: ctx.avatar(),
        level: ctx.level(),
    });
    let def = ctx_def(ctx);
    let acts: Vec<Act> =
        PLAN.with(|p| p.borrow().iter().filter(|(d, _)| *d == def).map(|(_, a)| *a).collect());
    for a in acts {
        run_act(ctx, a);
    }
}

fn s_task(ctx: &mut AbilityCtx<'_, PadProbeGame>, r: &TaskResult) {
    push(Rec::Task { frame: ctx.frame(), h: ctx.handle(), user: r.user_id, event: r.event });
    let def = ctx_def(ctx);
    let acts: Vec<Act> = TASK_PLAN.with(|p| {
        p.borrow().iter().filter(|(d, u, _)| *d == def && *u == r.user_id).map(|x| x.2).collect()
    });
    for a in acts {
        run_act(ctx, a);
    }
}

fn s_input(ctx: &mut AbilityCtx<'_, PadProbeGame>, edge: InputEdge) {
    push(Rec::Input { frame: ctx.frame(), h: ctx.handle(), edge });
}

fn s_end(ctx: &mut AbilityCtx<'_, PadProbeGame>, cancelled: bool) {
    push(Rec::Ended { frame: ctx.frame(), h: ctx.handle(), cancelled });
}

/// `Lifecycle`'s `on_granted`: logs, heals the owner by 5 (`Heal`) and writes 7 into the state.
fn l_granted(ctx: &mut AbilityCtx<'_, PadProbeGame>) {
    push(Rec::Granted { frame: ctx.frame(), h: ctx.handle(), level: ctx.level() });
    let heal = ctx.make_spec(ctx.world().content().effect("Heal").unwrap());
    let owner = ctx.owner();
    ctx.apply(heal, owner);
    ctx.set_state(&7u32);
}

/// `Lifecycle`'s `on_removed`: logs the state and damages the owner by 20 (`Damage`).
fn l_removed(ctx: &mut AbilityCtx<'_, PadProbeGame>) {
    let (h, frame) = (ctx.handle(), ctx.frame());
    push(Rec::Removed { frame, h, state: ctx.state(), active: ctx.world().is_ability_active(h) });
    let damage = ctx.make_spec(ctx.world().content().effect("Damage").unwrap());
    let owner = ctx.owner();
    ctx.apply(damage, owner);
}

/// The custom activation check: refuses with code 42 while the owner has `Gate.Closed`.
fn gate(w: &World<PadProbeGame>, h: AbilityHandle, _: Option<&EventData>) -> Result<(), u16> {
    match w.content().tags().get("Gate.Closed") {
        Some(t) if w.has_tag(h.owner, t) => Err(42),
        _ => Ok(()),
    }
}

fn hooks() -> Hooks<PadProbeGame> {
    Hooks::new()
        .behaviour(
            "Script",
            Behaviour {
                on_activate: Some(s_activate),
                on_task: Some(s_task),
                on_input: Some(s_input),
                on_end: Some(s_end),
                ..Behaviour::default()
            },
        )
        .behaviour(
            "Lifecycle",
            Behaviour {
                on_activate: Some(s_activate),
                on_end: Some(s_end),
                on_granted: Some(l_granted),
                on_removed: Some(l_removed),
                ..Behaviour::default()
            },
        )
        .can_activate("Gate", gate)
}

// ---------------------------------------------------------------------------------------------
// Content and world helpers
// ---------------------------------------------------------------------------------------------

/// Tags, attributes, curves and effects every test shares; each test adds its own file.
const BASE: &str = r#"(
    settings: (dead_tag: "State.Dead"),
    tags: [
        "Ability.Skill.Fire", "Ability.Skill.Ice", "Ability.Skill.Spark", "Ability.Skill.Gauntlet",
        "Ability.Skill.Cleave", "Ability.Skill.Channel", "Ability.Skill.Jab",
        "Ability.Movement.Dash", "Ability.Guard", "Ability.Passive", "Ability.Trigger",
        "State.Dead", "State.Stunned", "State.Casting", "State.Rooted", "State.Ready",
        "State.Burning", "State.Channeling",
        "Cooldown.Fire", "Cooldown.Ice", "Cooldown.Spark", "Cooldown.Gauntlet",
        "Event.Hit", "Event.Hit.Heavy", "Event.Ping", "Event.Hitbox", "Event.Sound",
        "Team.Red", "Team.Blue", "Gate.Closed", "Data.Cost", "Targetable",
        "Phase.Startup", "Phase.Active", "Phase.Recovery", "Cancel.Window.Light",
        "Trigger.Added", "Trigger.Present",
    ],
    attribute_sets: {
        "Stats": (attributes: {
            "Health": (default: 100), "Mana": (default: 50), "Stamina": (default: 10),
            "Focus": (default: 0),
        }),
    },
    curves: {
        "CostByLevel": (points: [(1, 10), (2, 20), (3, 30)]),
        "DashCurve": (points: [(0, 0), (2, 30), (5, 45)]),
    },
    effects: {
        "ManaCost": (modifiers: [(attribute: "Mana", op: Add,
                                  magnitude: Scalable(coef: -1, curve: "CostByLevel"))]),
        "SbcCost": (modifiers: [(attribute: "Mana", op: Add, magnitude: SetByCaller("Data.Cost"))]),
        "FireCooldown": (duration: Frames(30), granted_tags: ["Cooldown.Fire"],
                         modifiers: [(attribute: "Focus", op: Add,
                                      magnitude: Scalable(coef: 1, curve: "CostByLevel"))]),
        "SharedCooldown": (duration: Frames(1)),
        "Silence": (duration: Frames(20), blocked_ability_tags: ["Ability.Skill"]),
        "Damage": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -20))]),
        "Heal": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: 5))]),
        "Burn": (duration: Frames(50), granted_tags: ["State.Burning"],
                 stacking: (kind: ByTarget, limit: 3)),
        "Buff": (duration: Frames(40), asset_tags: ["Team.Red"]),
    },
)"#;

fn build(extra: &str, config: WorldConfig) -> World<PadProbeGame> {
    reset();
    let c = ContentBuilder::new()
        .file("base.ron", BASE)
        .file("test.ron", extra)
        .build()
        .unwrap_or_else(|e| panic!("content does not freeze: {e}"));
    World::new(Arc::new(c), &hooks(), config).expect("world")
}

fn arena(extra: &str) -> World<PadProbeGame> {
    build(extra, WorldConfig::default())
}

fn ab(w: &World<PadProbeGame>, name: &str) -> AbilityDefId {
    w.content().ability(name).unwrap_or_else(|e| panic!("{e}"))
}

fn eff(w: &World<PadProbeGame>, name: &str) -> EffectDefId {
    w.content().effect(name).unwrap_or_else(|e| panic!("{e}"))
}

fn actor(w: &mut World<PadProbeGame>) -> Entity {
    let stats = w.content().attr_set("Stats").unwrap();
    w.spawn_actor(&[stats]).expect("spawn")
}

fn grant(w: &mut World<PadProbeGame>, owner: Entity, name: &str) -> AbilityHandle {
    let d = ab(w, name);
    w.grant_ability(owner, d, 1).expect("grant")
}

/// Steps one frame with no input, running `script` in P6; returns the frame's output.
fn frame(
    w: &mut World<PadProbeGame>,
    script: impl FnOnce(&mut World<PadProbeGame>),
) -> FrameOutput {
    w.step_with(&[], script).clone()
}

/// Steps one frame with inputs.
fn frame_in(
    w: &mut World<PadProbeGame>,
    inputs: &[Pad],
    script: impl FnOnce(&mut World<PadProbeGame>),
) -> FrameOutput {
    w.step_with(inputs, script).clone()
}

fn activated(out: &FrameOutput) -> Vec<(AbilityHandle, u32, Option<TagId>)> {
    out.ability_events
        .iter()
        .filter_map(|e| match e {
            AbilityEvent::Activated { handle, serial, trigger, .. } => {
                Some((*handle, *serial, *trigger))
            }
            _ => None,
        })
        .collect()
}

fn failed(out: &FrameOutput) -> Vec<(AbilityHandle, ActivationFailure)> {
    out.ability_events
        .iter()
        .filter_map(|e| match e {
            AbilityEvent::ActivationFailed { handle, reason, .. } => Some((*handle, *reason)),
            _ => None,
        })
        .collect()
}

fn ended(out: &FrameOutput) -> Vec<(AbilityHandle, bool)> {
    out.ability_events
        .iter()
        .filter_map(|e| match e {
            AbilityEvent::Ended { handle, was_cancelled, .. } => Some((*handle, *was_cancelled)),
            _ => None,
        })
        .collect()
}

fn tasks_ended(out: &FrameOutput) -> Vec<TaskHandle> {
    out.ability_events
        .iter()
        .filter_map(|e| match e {
            AbilityEvent::TaskEnded { task, .. } => Some(*task),
            _ => None,
        })
        .collect()
}

fn ok(serial: u32) -> Result<Activation, ActivationFailure> {
    Ok(Activation::Activated { serial })
}

fn set(tags: &[TagId]) -> TagSet {
    TagSet::of(tags)
}

// ---------------------------------------------------------------------------------------------
// F-GA-01 Definition
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_01_definition_carries_every_container_and_flag() {
    let w = arena(
        r#"(
        timelines: { "Punch": (startup: 3, active: 2, recovery: 4) },
        abilities: {
            "Full": (
                tags: ["Ability.Skill.Fire"],
                cancel_abilities_with_tags: ["Ability.Movement"],
                block_abilities_with_tags: ["Ability.Guard"],
                activation_owned_tags: ["State.Casting"],
                activation_required_tags: ["State.Ready"],
                activation_blocked_tags: ["State.Stunned"],
                source_required_tags: ["Team.Red"],
                source_blocked_tags: ["Team.Blue"],
                target_required_tags: ["Targetable"],
                target_blocked_tags: ["State.Dead"],
                cost: "SbcCost", cost_set_by_caller: { "Data.Cost": -3 },
                cooldown: "SharedCooldown", cooldown_duration: Seconds(0.5),
                cooldown_tags: ["Cooldown.Ice"],
                instancing: PerActor,
                triggers: [Event("Event.Hit"), TagAdded("Trigger.Added"), TagPresent("Trigger.Present")],
                activate_on_input: false, input: 4, state_size: 16,
                behaviour: "Script", can_activate: "Gate",
                retrigger: true, commit_on_activate: false,
                timeline: "Punch", end_after: Frames(90),
            ),
            "Bare": (),
            "Regen": (passive: true),
        },
    )"#,
    );
    let c = w.content().clone();
    let t = |n: &str| c.tag(n).unwrap();
    let full = c.ability_def(ab(&w, "Full"));
    assert_eq!(full.name, "Full");
    assert_eq!(full.tags.explicit, set(&[t("Ability.Skill.Fire")]));
    assert!(full.tags.expanded.contains(t("Ability.Skill")), "ancestors are expanded");
    assert!(full.tags.expanded.contains(t("Ability")));
    assert_eq!(full.cancel_abilities_with_tags, set(&[t("Ability.Movement")]));
    assert_eq!(full.block_abilities_with_tags, set(&[t("Ability.Guard")]));
    assert_eq!(full.activation_owned_tags, set(&[t("State.Casting")]));
    assert_eq!(full.activation_required_tags, set(&[t("State.Ready")]));
    assert_eq!(full.activation_blocked_tags, set(&[t("State.Stunned")]));
    assert_eq!(full.source_required_tags, set(&[t("Team.Red")]));
    assert_eq!(full.source_blocked_tags, set(&[t("Team.Blue")]));
    assert_eq!(full.target_required_tags, set(&[t("Targetable")]));
    assert_eq!(full.target_blocked_tags, set(&[t("State.Dead")]));
    assert_eq!(full.cost, Some(eff(&w, "SbcCost")));
    assert_eq!(full.cost_set_by_caller, vec![(t("Data.Cost"), int(-3))]);
    assert_eq!(full.cooldown, Some(eff(&w, "SharedCooldown")));
    assert_eq!(full.cooldown_duration, Some(30), "0.5 s at 60 Hz");
    assert_eq!(full.cooldown_tags, vec![t("Cooldown.Ice")]);
    assert_eq!(full.all_cooldown_tags, set(&[t("Cooldown.Ice")]));
    assert_eq!(full.instancing, Instancing::PerActor);
    assert_eq!(
        full.triggers,
        vec![
            TriggerDef::Event(t("Event.Hit")),
            TriggerDef::TagAdded(t("Trigger.Added")),
            TriggerDef::TagPresent(t("Trigger.Present")),
        ]
    );
    assert!(!full.passive);
    assert!(!full.activate_on_input);
    assert_eq!(full.input, Some(4));
    assert_eq!(full.state_size, 16);
    assert_eq!(c.function(full.behaviour.unwrap()).unwrap().name, "Script");
    assert_eq!(c.function(full.can_activate.unwrap()).unwrap().name, "Gate");
    assert!(full.retrigger);
    assert!(!full.commit_on_activate);
    assert_eq!(full.timeline, Some(c.timeline("Punch").unwrap()));
    assert_eq!(full.end_after, Some(90));
    // Defaults.
    let bare = c.ability_def(ab(&w, "Bare"));
    assert!(bare.tags.explicit.is_empty());
    assert_eq!(bare.instancing, Instancing::PerExecution);
    assert!(bare.activate_on_input && bare.commit_on_activate);
    assert!(!bare.retrigger && !bare.passive);
    assert_eq!((bare.input, bare.state_size, bare.cost, bare.cooldown), (None, 0, None, None));
    assert_eq!((bare.behaviour, bare.timeline, bare.end_after), (None, None, None));
    assert!(bare.triggers.is_empty());
    assert!(c.ability_def(ab(&w, "Regen")).passive);
    assert_eq!(c.ability_name(ab(&w, "Regen")), "Regen");
}

#[test]
fn f_ga_01_contradictory_definitions_are_refused() {
    let cases = [
        r#"(abilities: { "X": (instancing: NonInstanced, state_size: 8) })"#,
        r#"(abilities: { "X": (passive: true, end_after: Frames(5)) })"#,
        r#"(abilities: { "X": (cost: "Burn") })"#,
        r#"(abilities: { "X": (cooldown: "Damage") })"#,
        r#"(abilities: { "X": (cooldown: "SharedCooldown") })"#,
        r#"(abilities: { "X": (cooldown_tags: ["Cooldown.Ice"]) })"#,
    ];
    for text in cases {
        let err = ContentBuilder::new()
            .file("base.ron", BASE)
            .file("test.ron", text)
            .build()
            .expect_err(text);
        assert_eq!(err.kind, ContentErrorKind::InvalidCombination, "{text}: {err}");
    }
}

// ---------------------------------------------------------------------------------------------
// F-GA-02 Spec and granting
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_02_grant_creates_specs_with_level_input_and_source_object() {
    let mut w = build(
        r#"(abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], input: 2, behaviour: "Script"),
            "Ice": (tags: ["Ability.Skill.Ice"], behaviour: "Script"),
        })"#,
        WorldConfig { abilities_per_entity: 3, ..WorldConfig::default() },
    );
    let (fire, ice) = (ab(&w, "Fire"), ab(&w, "Ice"));
    let hero = actor(&mut w);
    let item = w.spawn().unwrap();
    let out = frame(&mut w, |_| {});
    assert!(out.ability_events.is_empty());

    let mut handles = (AbilityHandle::NONE, AbilityHandle::NONE);
    let out = frame(&mut w, |w| {
        handles.0 = w.grant_ability(hero, fire, 2).unwrap();
        handles.1 = w.grant_ability_with(hero, ice, 0, Some(7), item).unwrap();
    });
    let (h1, h2) = handles;
    assert_eq!(
        out.ability_events,
        vec![
            AbilityEvent::Granted { handle: h1, def: fire },
            AbilityEvent::Granted { handle: h2, def: ice }
        ]
    );
    assert_eq!((h1.owner, h1.slot, h2.owner, h2.slot), (hero, 0, hero, 1));
    let s1 = *w.ability(h1).unwrap();
    assert_eq!((s1.def, s1.level, s1.input_id()), (fire, 2, Some(2)), "default input of the def");
    assert!(s1.is_granted() && !s1.is_active() && !s1.input_held());
    assert_eq!((s1.activation_serial, s1.granted_by, s1.source_object), (0, 0, Entity::NONE));
    let s2 = *w.ability(h2).unwrap();
    assert_eq!((s2.def, s2.level, s2.input_id(), s2.source_object), (ice, 1, Some(7), item));
    // Specs made by the ability carry its handle, serial, level and source object.
    let dmg = eff(&w, "Damage");
    let spec = w.make_ability_spec(h2, dmg);
    assert_eq!((spec.level, spec.context.ability, spec.context.source_object), (1, h2, item));
    assert_eq!((spec.context.instigator, spec.context.causer), (hero, hero));
    // Dynamic ability tags (two by default) join the ability's tags and its specs' source
    // tags.
    let red = tag(&w, "Team.Red");
    assert!(!w.ability_tags(h1).contains(red));
    w.set_ability_dynamic_tags(h1, &[red]).unwrap();
    assert!(w.ability_tags(h1).contains(red));
    assert!(w.ability_tags(h1).contains(tag(&w, "Ability.Skill")));
    assert_eq!(w.ability(h1).unwrap().dynamic_tags, [red.0, u16::MAX]);
    let spec = w.make_ability_spec(h1, dmg);
    assert!(
        spec.source_tags.contains(red) && spec.source_tags.contains(tag(&w, "Ability.Skill.Fire"))
    );
    assert_eq!(w.specs_matching(hero, &set(&[tag(&w, "Team")]), false), vec![h1]);
    // One slot left; then the owner is full. Entities without an ability system get nothing.
    let h3 = w.grant_ability(hero, ice, 5).unwrap();
    assert_eq!(h3.slot, 2);
    let full = CapacityExceeded { capacity: Capacity::AbilitiesPerEntity, needed: 4, limit: 3 };
    assert_eq!(w.grant_ability(hero, ice, 1), Err(GrantError::OverCapacity(full)));
    assert_eq!(w.grant_ability(item, fire, 1), Err(GrantError::NotAnActor(item)));
    let listed: Vec<(AbilityHandle, AbilityDefId, u16)> =
        w.abilities(hero).map(|(h, s)| (h, s.def, s.level)).collect();
    assert_eq!(listed, vec![(h1, fire, 2), (h2, ice, 1), (h3, ice, 5)]);
    assert_eq!(w.find_ability(hero, ice), Some(h2), "the first spec of the definition");
    assert_eq!(w.abilities(item).count(), 0);
}

#[test]
fn f_ga_02_removed_specs_leave_stale_handles() {
    let mut w = arena(
        r#"(abilities: { "Fire": (tags: ["Ability.Skill.Fire"], activation_owned_tags: ["State.Casting"], behaviour: "Script") })"#,
    );
    let fire = ab(&w, "Fire");
    let casting = tag(&w, "State.Casting");
    let hero = actor(&mut w);
    let h = grant(&mut w, hero, "Fire");
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(h), ok(1));
    });
    assert_eq!(activated(&out), vec![(h, 1, None)]);
    assert!(w.has_tag(hero, casting));
    // Removing an active ability cancels it first.
    let out = frame(&mut w, |w| w.remove_ability(h));
    assert_eq!(
        out.ability_events,
        vec![
            AbilityEvent::Ended { handle: h, def: fire, was_cancelled: true },
            AbilityEvent::Removed { handle: h, def: fire }
        ]
    );
    assert_eq!(ends_of(h), vec![(1, true)]);
    assert!(!w.has_tag(hero, casting));
    assert_eq!(w.ability(h), None);
    assert!(!w.is_ability_active(h));
    assert_eq!(w.try_activate(h), Err(ActivationFailure::InvalidHandle));
    assert_eq!(w.can_activate(h, None), Err(ActivationFailure::InvalidHandle));
    // The slot is reused under a new generation; the old handle stays stale.
    let h2 = grant(&mut w, hero, "Fire");
    assert_eq!((h2.slot, h2.generation), (h.slot, h.generation + 1));
    assert_eq!(w.try_activate(h), Err(ActivationFailure::InvalidHandle));
    assert_eq!(w.try_activate(h2), ok(1), "a new spec starts at serial 1");
    // A despawned owner makes every handle stale.
    w.despawn(hero);
    assert_eq!(w.try_activate(h2), Err(ActivationFailure::InvalidHandle));
    assert_eq!(w.ability(h2), None);
}

#[test]
fn f_ga_02_effect_granted_abilities_follow_their_removal_policy() {
    let mut w = arena(
        r#"(
        effects: {
            "GrantDash": (duration: Frames(10),
                          granted_abilities: [(ability: "Dash", level: 2, input: 3)]),
            "GrantChannel": (duration: Frames(10),
                             granted_abilities: [(ability: "Channel", removal: RemoveOnEnd)]),
            "GrantGuard": (duration: Frames(10),
                           granted_abilities: [(ability: "Guard", removal: DoNothing)]),
        },
        abilities: {
            "Dash": (tags: ["Ability.Movement.Dash"], behaviour: "Script"),
            "Channel": (tags: ["Ability.Skill.Channel"], behaviour: "Script"),
            "Guard": (tags: ["Ability.Guard"], behaviour: "Script"),
        },
    )"#,
    );
    let (dash, channel, guard) = (ab(&w, "Dash"), ab(&w, "Channel"), ab(&w, "Guard"));
    let hero = actor(&mut w);
    let mut effs = Vec::new();
    frame(&mut w, |w| {
        for n in ["GrantDash", "GrantChannel", "GrantGuard"] {
            effs.push(handle(apply(w, n, hero, hero)));
        }
    });
    let hd = w.find_ability(hero, dash).unwrap();
    let hc = w.find_ability(hero, channel).unwrap();
    let hg = w.find_ability(hero, guard).unwrap();
    let sd = *w.ability(hd).unwrap();
    assert_eq!((sd.level, sd.input_id(), sd.granted_by), (2, Some(3), effs[0].seq));
    assert_eq!(w.granting_effect(hd), Some(effs[0]));
    assert_eq!(w.granting_effect(hc), Some(effs[1]));
    frame(&mut w, |w| {
        w.try_activate(hc).unwrap();
        w.try_activate(hd).unwrap();
    });
    run_through(&mut w, 9);
    // Frame 10: the effects expire. Dash is cancelled and removed at once; Channel keeps
    // running until it ends; Guard stays granted and forgets its effect.
    let out = frame(&mut w, |_| {});
    assert_eq!(ended(&out), vec![(hd, true)]);
    assert!(out.ability_events.contains(&AbilityEvent::Removed { handle: hd, def: dash }));
    assert_eq!(w.ability(hd), None);
    assert!(w.is_ability_active(hc));
    assert!(w.ability(hg).is_some());
    assert_eq!(w.granting_effect(hg), None);
    let out = frame(&mut w, |w| w.end_ability(hc));
    assert_eq!(
        out.ability_events,
        vec![
            AbilityEvent::Ended { handle: hc, def: channel, was_cancelled: false },
            AbilityEvent::Removed { handle: hc, def: channel }
        ]
    );
    assert_eq!(w.ability(hc), None);
    assert_eq!(w.abilities(hero).map(|(h, _)| h).collect::<Vec<_>>(), vec![hg]);
}

// ---------------------------------------------------------------------------------------------
// F-GA-03 List mutation safety
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_03_grants_removals_and_cancels_from_a_behaviour_are_deferred() {
    let mut w = arena(
        r#"(abilities: {
            "Mutator": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script"),
            "Victim": (tags: ["Ability.Skill.Ice"], input: 0, behaviour: "Script"),
            "Runner": (tags: ["Ability.Movement.Dash"], behaviour: "Script"),
            "Buddy": (tags: ["Ability.Trigger"], behaviour: "Script"),
            "Newcomer": (tags: ["Ability.Guard"], input: 0, behaviour: "Script"),
        })"#,
    );
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    let mutator = grant(&mut w, hero, "Mutator");
    let victim = grant(&mut w, hero, "Victim");
    let runner = grant(&mut w, hero, "Runner");
    let buddy = grant(&mut w, hero, "Buddy");
    let newcomer_def = ab(&w, "Newcomer");
    plan(
        ab(&w, "Mutator"),
        &[
            Act::Remove(victim),
            Act::CancelOther(runner),
            Act::Grant(newcomer_def),
            Act::Activate(buddy),
            Act::Probe(victim),
            Act::Probe(runner),
            Act::Probe(buddy),
        ],
    );
    frame(&mut w, |w| {
        w.try_activate(runner).unwrap();
    });
    // Frame 1: input 0 is pressed; Mutator (slot 0) runs first and changes the list that the
    // input phase is walking.
    let out = frame_in(&mut w, &[pad(1)], |_| {});
    let newcomer = w.find_ability(hero, newcomer_def).expect("granted");
    let probes: Vec<Rec> =
        log().into_iter().filter(|r| matches!(r, Rec::Probe { .. } | Rec::Queued(_))).collect();
    assert_eq!(
        probes,
        vec![
            Rec::Queued(Ok(Activation::Queued)),
            Rec::Probe { other: victim, granted: true, active: false },
            Rec::Probe { other: runner, granted: true, active: true },
            Rec::Probe { other: buddy, granted: true, active: false },
        ],
        "inside the call nothing has changed yet"
    );
    let seq: Vec<AbilityEvent> = out
        .ability_events
        .iter()
        .copied()
        .filter(|e| !matches!(e, AbilityEvent::Granted { .. } | AbilityEvent::Committed { .. }))
        .collect();
    let (mdef, vdef, rdef, bdef) =
        (ab(&w, "Mutator"), ab(&w, "Victim"), ab(&w, "Runner"), ab(&w, "Buddy"));
    assert_eq!(
        seq,
        vec![
            AbilityEvent::Activated { handle: mutator, def: mdef, serial: 1, trigger: None },
            AbilityEvent::Removed { handle: victim, def: vdef },
            AbilityEvent::Ended { handle: runner, def: rdef, was_cancelled: true },
            AbilityEvent::Activated { handle: buddy, def: bdef, serial: 1, trigger: None },
        ],
        "queued commands run in order after the behaviour returns"
    );
    assert!(
        out.ability_events.contains(&AbilityEvent::Granted { handle: newcomer, def: newcomer_def })
    );
    // The removed Victim never saw the press; the Newcomer was not part of this input phase.
    assert_eq!(w.ability(victim), None);
    assert!(w.last_activation(victim).is_none());
    assert!(!w.is_ability_active(newcomer));
    assert!(w.is_ability_active(mutator) && w.is_ability_active(buddy));
    assert!(!w.is_ability_active(runner));
    assert_eq!(ends_of(runner), vec![(1, true)]);
}

// ---------------------------------------------------------------------------------------------
// F-GA-04 Activation pipeline
// ---------------------------------------------------------------------------------------------

const GAUNTLET: &str = r#"(
    effects: { "GauntletCooldown": (duration: Frames(10), granted_tags: ["Cooldown.Gauntlet"]) },
    abilities: {
        "Gauntlet": (tags: ["Ability.Skill.Gauntlet"], activation_required_tags: ["State.Ready"],
                     activation_blocked_tags: ["State.Stunned"], source_required_tags: ["Team.Red"],
                     target_blocked_tags: ["Team.Blue"], cost: "ManaCost",
                     cooldown: "GauntletCooldown", can_activate: "Gate", behaviour: "Script"),
        "Guard": (tags: ["Ability.Guard"], block_abilities_with_tags: ["Ability.Skill"],
                  behaviour: "Script"),
    },
)"#;

#[test]
fn f_ga_04_pipeline_checks_run_in_order() {
    use ActivationFailure as F;
    let mut w = arena(GAUNTLET);
    let t = |w: &World<PadProbeGame>, n: &str| tag(w, n);
    let (ready, stunned, dead, red, blue, closed) = (
        t(&w, "State.Ready"),
        t(&w, "State.Stunned"),
        t(&w, "State.Dead"),
        t(&w, "Team.Red"),
        t(&w, "Team.Blue"),
        t(&w, "Gate.Closed"),
    );
    let mana = attr(&w, "Mana");
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let g = grant(&mut w, hero, "Gauntlet");
    let guard = grant(&mut w, hero, "Guard");
    let ev = EventData::new(t(&w, "Event.Ping"), enemy, hero);
    w.step(&[]);
    // Everything passes.
    w.add_loose_tag(hero, ready);
    w.add_loose_tag(enemy, red);
    assert_eq!(w.can_activate(g, Some(&ev)), Ok(()));
    assert_eq!(w.try_activate_with_event(g, ev), ok(1));
    assert_eq!(w.attr(hero, mana), Some(int(40)));
    // Now make every check fail, then fix them one at a time.
    assert_eq!(w.try_activate(guard), ok(1));
    w.add_loose_tag(hero, dead);
    w.add_loose_tag(hero, stunned);
    w.remove_loose_tag(hero, ready);
    w.remove_loose_tag(enemy, red);
    w.add_loose_tag(hero, blue);
    w.set_base(hero, mana, int(5));
    w.add_loose_tag(hero, closed);
    let mut seen = Vec::new();
    let mut attempt = |w: &mut World<PadProbeGame>| {
        let a = w.can_activate(g, Some(&ev));
        let r = w.try_activate_with_event(g, ev);
        assert_eq!(r.map(|_| ()), a, "can_activate agrees with try_activate");
        assert_eq!(w.last_activation(g).map(|r| r.result), Some(r.map(|_| 2)));
        seen.push(r);
    };
    attempt(&mut w);
    w.end_ability(g);
    attempt(&mut w);
    w.remove_loose_tag(hero, dead);
    attempt(&mut w);
    w.remove_loose_tag(hero, stunned);
    attempt(&mut w);
    w.add_loose_tag(hero, ready);
    attempt(&mut w);
    w.end_ability(guard);
    attempt(&mut w);
    w.add_loose_tag(enemy, red);
    attempt(&mut w);
    // Without an event the source/target lists are not checked.
    assert_eq!(w.can_activate(g, None), Err(F::OnCooldown));
    w.remove_loose_tag(hero, blue);
    attempt(&mut w);
    let cd = w.effects(hero).iter().find(|e| e.def == eff(&w, "GauntletCooldown")).unwrap().seq;
    w.remove_effect(EffectHandle { target: hero, seq: cd });
    attempt(&mut w);
    w.set_base(hero, mana, int(10));
    attempt(&mut w);
    w.remove_loose_tag(hero, closed);
    attempt(&mut w);
    assert_eq!(
        seen,
        vec![
            Err(F::AlreadyActive),
            Err(F::Dead),
            Err(F::BlockedByTags),
            Err(F::MissingTags),
            Err(F::BlockedByAbility),
            Err(F::SourceOrTargetTags),
            Err(F::SourceOrTargetTags),
            Err(F::OnCooldown),
            Err(F::CantAffordCost),
            Err(F::Custom(42)),
            ok(2),
        ]
    );
    assert_eq!(w.attr(hero, mana), Some(int(0)), "a cost to exactly 0 is affordable");
    assert_eq!(w.ability(g).unwrap().activation_serial, 2);
}

#[test]
fn f_ga_04_success_cancels_others_blocks_and_owns_tags() {
    let mut w = arena(
        r#"(abilities: {
            "Cleave": (tags: ["Ability.Skill.Cleave"],
                       cancel_abilities_with_tags: ["Ability.Skill", "Ability.Movement"],
                       block_abilities_with_tags: ["Ability.Movement"],
                       activation_owned_tags: ["State.Casting", "State.Rooted"],
                       behaviour: "Script"),
            "Channel": (tags: ["Ability.Skill.Channel"], activation_owned_tags: ["State.Casting"],
                        behaviour: "Script"),
            "Dash": (tags: ["Ability.Movement.Dash"], behaviour: "Script"),
            "Guard": (tags: ["Ability.Guard"], behaviour: "Script"),
        })"#,
    );
    let (casting, rooted) = (tag(&w, "State.Casting"), tag(&w, "State.Rooted"));
    let movement = tag(&w, "Ability.Movement");
    let hero = actor(&mut w);
    let cleave = grant(&mut w, hero, "Cleave");
    let channel = grant(&mut w, hero, "Channel");
    let dash = grant(&mut w, hero, "Dash");
    let guard = grant(&mut w, hero, "Guard");
    let out = frame(&mut w, |w| {
        for h in [channel, dash, guard] {
            assert_eq!(w.try_activate(h), ok(1));
        }
    });
    assert_eq!(activated(&out), vec![(channel, 1, None), (dash, 1, None), (guard, 1, None)]);
    assert_eq!(w.tag_count_exact(hero, casting), 1);
    assert!(w.block_set(hero, None).is_empty());
    // Cleave cancels the matching running abilities (in slot order) before it activates; its
    // own tags match its cancel list, but it is excluded.
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(cleave), ok(1)));
    let (cdef, chdef, ddef) = (ab(&w, "Cleave"), ab(&w, "Channel"), ab(&w, "Dash"));
    let seq: Vec<AbilityEvent> = out
        .ability_events
        .iter()
        .copied()
        .filter(|e| !matches!(e, AbilityEvent::Committed { .. }))
        .collect();
    assert_eq!(
        seq,
        vec![
            AbilityEvent::Ended { handle: channel, def: chdef, was_cancelled: true },
            AbilityEvent::Ended { handle: dash, def: ddef, was_cancelled: true },
            AbilityEvent::Activated { handle: cleave, def: cdef, serial: 1, trigger: None },
        ]
    );
    assert_eq!(ends_of(channel), vec![(1, true)]);
    assert!(w.is_ability_active(cleave) && w.is_ability_active(guard));
    assert!(!w.is_ability_active(channel) && !w.is_ability_active(dash));
    // Owned tags: Channel's State.Casting went, Cleave's came.
    assert_eq!(w.tag_count_exact(hero, casting), 1);
    assert_eq!(w.tag_count_exact(hero, rooted), 1);
    // While Cleave runs, movement abilities are blocked (hierarchically); others are not.
    assert!(w.block_set(hero, None).contains(movement));
    assert!(w.block_set(hero, Some(cleave)).is_empty(), "except the ability itself");
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(dash), Err(ActivationFailure::BlockedByAbility));
        assert_eq!(w.try_activate(guard), Err(ActivationFailure::AlreadyActive));
        assert_eq!(w.try_activate(channel), ok(2), "not blocked: only cancelled");
    });
    assert_eq!(
        failed(&out),
        vec![
            (dash, ActivationFailure::BlockedByAbility),
            (guard, ActivationFailure::AlreadyActive)
        ]
    );
    // Ending Cleave removes its owned tags and unblocks.
    let out = frame(&mut w, |w| {
        w.end_ability(cleave);
        w.end_ability(channel);
    });
    assert_eq!(ended(&out), vec![(cleave, false), (channel, false)]);
    let changes: Vec<(TagId, u32, u32)> = out
        .tag_events
        .iter()
        .filter(|e| e.tag == casting || e.tag == rooted)
        .map(|e| (e.tag, e.old, e.new))
        .collect();
    assert_eq!(changes, vec![(casting, 2, 1), (rooted, 1, 0), (casting, 1, 0)]);
    assert!(!w.has_tag(hero, casting) && !w.has_tag(hero, rooted));
    frame(&mut w, |w| assert_eq!(w.try_activate(dash), ok(2)));
    frame(&mut w, |w| assert_eq!(w.try_activate(cleave), ok(2)));
    assert_eq!(w.ability(cleave).unwrap().activation_serial, 2);
    assert_eq!(w.ability(cleave).unwrap().activated_at, 5);
    assert_eq!(activations_of(cleave), vec![(1, 1), (5, 2)]);
}

#[test]
fn f_ga_04_effect_blocked_ability_tags_block_hierarchically_while_active() {
    let mut w = arena(
        r#"(
        effects: {
            "SilenceWhileBurning": (duration: Infinite, blocked_ability_tags: ["Ability.Skill"],
                                    ongoing_requirements: (require: ["State.Burning"])),
        },
        abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], end_after: Frames(1)),
            "Dash": (tags: ["Ability.Movement.Dash"], end_after: Frames(1)),
        },
    )"#,
    );
    let hero = actor(&mut w);
    let fire = grant(&mut w, hero, "Fire");
    let dash = grant(&mut w, hero, "Dash");
    let skill = tag(&w, "Ability.Skill");
    w.step(&[]);
    let silence = handle(apply(&mut w, "Silence", hero, hero));
    assert!(w.block_set(hero, None).contains(skill));
    assert_eq!(w.try_activate(fire), Err(ActivationFailure::BlockedByAbility));
    assert_eq!(w.try_activate(dash), ok(1));
    w.remove_effect(silence);
    assert_eq!(w.try_activate(fire), ok(1));
    w.end_ability(fire);
    // An inhibited effect blocks nothing; switched on, it blocks.
    apply(&mut w, "SilenceWhileBurning", hero, hero);
    assert_eq!(w.can_activate(fire, None), Ok(()));
    w.add_loose_tag(hero, tag(&w, "State.Burning"));
    assert_eq!(w.can_activate(fire, None), Err(ActivationFailure::BlockedByAbility));
    w.remove_loose_tag(hero, tag(&w, "State.Burning"));
    assert_eq!(w.try_activate(fire), ok(2));
}

#[test]
fn f_ga_04_event_activation_checks_source_and_target_tags() {
    let mut w = arena(
        r#"(abilities: {
            "Counter": (tags: ["Ability.Trigger"], triggers: [Event("Event.Hit")],
                        source_required_tags: ["Team.Red"], source_blocked_tags: ["State.Dead"],
                        target_required_tags: ["Targetable"], target_blocked_tags: ["Team.Blue"],
                        behaviour: "Script"),
        })"#,
    );
    let (red, blue, targetable) =
        (tag(&w, "Team.Red"), tag(&w, "Team.Blue"), tag(&w, "Targetable"));
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let counter = grant(&mut w, hero, "Counter");
    let heavy = tag(&w, "Event.Hit.Heavy");
    let ev = EventData::new(heavy, enemy, hero).with_magnitude(int(7));
    let send = |w: &mut World<PadProbeGame>| frame(w, |w| w.send_event(hero, ev));
    // 0: the instigator lacks Team.Red.
    let out = send(&mut w);
    assert_eq!(failed(&out), vec![(counter, ActivationFailure::SourceOrTargetTags)]);
    assert_eq!(out.gameplay_events.len(), 1);
    assert_eq!((out.gameplay_events[0].frame, out.gameplay_events[0].to), (0, hero));
    // 1: the target lacks Targetable.
    w.add_loose_tag(enemy, red);
    assert_eq!(failed(&send(&mut w)), vec![(counter, ActivationFailure::SourceOrTargetTags)]);
    // 2: the target is Team.Blue.
    w.add_loose_tag(hero, targetable);
    w.add_loose_tag(hero, blue);
    assert_eq!(failed(&send(&mut w)), vec![(counter, ActivationFailure::SourceOrTargetTags)]);
    // 3: the instigator is dead.
    w.remove_loose_tag(hero, blue);
    w.add_loose_tag(enemy, tag(&w, "State.Dead"));
    assert_eq!(failed(&send(&mut w)), vec![(counter, ActivationFailure::SourceOrTargetTags)]);
    // 4: all pass; the behaviour sees the event.
    w.remove_loose_tag(enemy, tag(&w, "State.Dead"));
    let out = send(&mut w);
    assert_eq!(activated(&out), vec![(counter, 1, Some(heavy))]);
    let seen: Vec<Option<EventData>> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Activated { event, .. } => Some(event),
            _ => None,
        })
        .collect();
    assert_eq!(seen, vec![Some(ev)]);
    // try_activate_with_event applies the same lists; plain try_activate skips them.
    w.end_ability(counter);
    w.remove_loose_tag(enemy, red);
    assert_eq!(w.try_activate_with_event(counter, ev), Err(ActivationFailure::SourceOrTargetTags));
    assert_eq!(w.try_activate(counter), ok(2));
}

#[test]
fn f_ga_04_retrigger_restarts_an_active_ability() {
    let mut w = arena(
        r#"(abilities: {
            "Repeat": (tags: ["Ability.Skill.Fire"], retrigger: true, behaviour: "Script",
                       activation_owned_tags: ["State.Casting"]),
            "Once": (tags: ["Ability.Skill.Ice"], behaviour: "Script"),
        })"#,
    );
    let casting = tag(&w, "State.Casting");
    let hero = actor(&mut w);
    let rep = grant(&mut w, hero, "Repeat");
    let once = grant(&mut w, hero, "Once");
    plan(ab(&w, "Repeat"), &[Act::Spawn(0, TaskSpec::WaitFrames(100))]);
    frame(&mut w, |w| {
        assert_eq!(w.try_activate(rep), ok(1));
        assert_eq!(w.try_activate(once), ok(1));
    });
    let first_task = spawned(rep, 0)[0];
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(rep), ok(2));
        assert_eq!(w.try_activate(once), Err(ActivationFailure::AlreadyActive));
    });
    let (rdef, odef) = (ab(&w, "Repeat"), ab(&w, "Once"));
    let seq: Vec<AbilityEvent> = out
        .ability_events
        .iter()
        .copied()
        .filter(|e| !matches!(e, AbilityEvent::Committed { .. }))
        .collect();
    assert_eq!(
        seq,
        vec![
            AbilityEvent::TaskEnded { task: first_task, ability: rep },
            AbilityEvent::Ended { handle: rep, def: rdef, was_cancelled: true },
            AbilityEvent::Activated { handle: rep, def: rdef, serial: 2, trigger: None },
            AbilityEvent::ActivationFailed {
                handle: once,
                def: odef,
                reason: ActivationFailure::AlreadyActive
            },
        ]
    );
    assert_eq!(ends_of(rep), vec![(1, true)]);
    assert!(!w.is_task_live(first_task));
    let second_task = spawned(rep, 0)[1];
    assert!(w.is_task_live(second_task));
    assert_eq!(w.task(second_task).unwrap().activation_serial, 2);
    assert_eq!(w.tag_count_exact(hero, casting), 1, "owned tags are not doubled");
}

#[test]
fn f_ga_04_task_capacity_fails_activation_of_timeline_abilities() {
    let mut w = build(
        r#"(
        timelines: { "Punch": (startup: 3, active: 2, recovery: 4) },
        abilities: {
            "JabA": (tags: ["Ability.Skill.Jab"], timeline: "Punch"),
            "JabB": (tags: ["Ability.Skill.Jab"], timeline: "Punch", cost: "ManaCost",
                     cooldown: "FireCooldown", activation_owned_tags: ["State.Casting"]),
            "Worker": (tags: ["Ability.Skill.Fire"], behaviour: "Script"),
        },
    )"#,
        WorldConfig { max_tasks: 1, ..WorldConfig::default() },
    );
    let hero = actor(&mut w);
    let a = grant(&mut w, hero, "JabA");
    let b = grant(&mut w, hero, "JabB");
    let worker = grant(&mut w, hero, "Worker");
    plan(ab(&w, "Worker"), &[Act::Spawn(0, TaskSpec::WaitFrames(3))]);
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(a), ok(1));
        assert_eq!(w.try_activate(b), Err(ActivationFailure::TaskCapacity));
        assert_eq!(w.try_activate(worker), ok(1));
    });
    assert!(failed(&out).contains(&(b, ActivationFailure::TaskCapacity)));
    assert!(!w.is_ability_active(b));
    assert!(!w.has_tag(hero, tag(&w, "State.Casting")));
    // A failed activation commits nothing and is not reported as an activation.
    assert_eq!(w.attr(hero, attr(&w, "Mana")), Some(int(50)), "no cost paid");
    assert!(!w.has_tag(hero, tag(&w, "Cooldown.Fire")), "no cooldown applied");
    assert!(!activated(&out).iter().any(|x| x.0 == b), "{:?}", out.ability_events);
    assert_eq!(w.ability(b).unwrap().activation_serial, 0);
    assert_eq!(w.last_activation(b).map(|r| r.result), Some(Err(ActivationFailure::TaskCapacity)));
    // A behaviour's spawn into the full pool fails with the same reason; the ability runs.
    assert!(w.is_ability_active(worker));
    assert!(log().contains(&Rec::Spawned {
        h: worker,
        user: 0,
        result: Err(ActivationFailure::TaskCapacity)
    }));
    // When the timeline ends its slot is free again.
    run_through(&mut w, 9);
    assert!(!w.is_ability_active(a));
    frame(&mut w, |w| assert_eq!(w.try_activate(b), ok(1)));
}

// ---------------------------------------------------------------------------------------------
// F-GA-05 Failure reasons
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_05_failures_are_events_and_log_entries() {
    let mut w = arena(
        r#"(abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], cooldown: "FireCooldown", end_after: Frames(2)),
            "Ice": (tags: ["Ability.Skill.Ice"], activation_required_tags: ["State.Ready"]),
        })"#,
    );
    let hero = actor(&mut w);
    let fire = grant(&mut w, hero, "Fire");
    let ice = grant(&mut w, hero, "Ice");
    let (fdef, idef) = (ab(&w, "Fire"), ab(&w, "Ice"));
    run_through(&mut w, 2);
    let out = frame(&mut w, |w| {
        w.try_activate(fire).unwrap();
        assert_eq!(w.try_activate(ice), Err(ActivationFailure::MissingTags));
    });
    assert_eq!(
        out.ability_events.last(),
        Some(&AbilityEvent::ActivationFailed {
            handle: ice,
            def: idef,
            reason: ActivationFailure::MissingTags
        })
    );
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(fire), Err(ActivationFailure::AlreadyActive));
    });
    assert_eq!(failed(&out), vec![(fire, ActivationFailure::AlreadyActive)]);
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(fire), Err(ActivationFailure::OnCooldown));
    });
    assert_eq!(failed(&out), vec![(fire, ActivationFailure::OnCooldown)]);
    let entries: Vec<(u32, AbilityHandle, AbilityDefId, Result<u32, ActivationFailure>)> =
        w.activation_log().map(|r| (r.frame, r.handle, r.def, r.result)).collect();
    assert_eq!(
        entries,
        vec![
            (3, fire, fdef, Ok(1)),
            (3, ice, idef, Err(ActivationFailure::MissingTags)),
            (4, fire, fdef, Err(ActivationFailure::AlreadyActive)),
            (5, fire, fdef, Err(ActivationFailure::OnCooldown)),
        ]
    );
    assert_eq!(
        w.last_activation(ice).map(|r| (r.frame, r.result)),
        Some((3, Err(ActivationFailure::MissingTags)))
    );
    assert_eq!(w.last_activation(fire).map(|r| r.frame), Some(5));
    // The log is a debug ring outside the snapshot: rewound by a load, capped at 256.
    let snap = w.snapshot();
    frame(&mut w, |w| {
        let _ = w.try_activate(ice);
    });
    assert_eq!(w.activation_log().count(), 5);
    w.load(&snap).unwrap();
    assert_eq!(w.activation_log().count(), 4);
    assert_eq!(w.checksum(), snap.checksums().total, "failures change no sim state");
    for _ in 0..300 {
        frame(&mut w, |w| {
            let _ = w.try_activate(ice);
        });
    }
    assert_eq!(w.activation_log().count(), 256);
    assert_eq!(w.activation_log().next().map(|r| r.frame), Some(6 + 300 - 256));
    assert!(w.activation_log().all(|r| r.result == Err(ActivationFailure::MissingTags)));
}

// ---------------------------------------------------------------------------------------------
// F-GA-06 Commit
// ---------------------------------------------------------------------------------------------

const LATE: &str = r#"(abilities: {
    "Late": (tags: ["Ability.Skill.Fire"], commit_on_activate: false, cost: "ManaCost",
             cooldown: "FireCooldown", behaviour: "Script"),
})"#;

#[test]
fn f_ga_06_commit_cost_and_cooldown_from_the_behaviour() {
    // (acts, mana after, cooldown tag, Committed carries a cooldown)
    let cases: [(&[Act], i64, bool, bool); 4] = [
        (&[], 50, false, false),
        (&[Act::Commit], 40, true, true),
        (&[Act::CommitCost], 40, false, false),
        (&[Act::CommitCooldown], 50, true, true),
    ];
    for (acts, mana_after, cd, has_cd_handle) in cases {
        let mut w = arena(LATE);
        let mana = attr(&w, "Mana");
        let cd_tag = tag(&w, "Cooldown.Fire");
        let hero = actor(&mut w);
        let h = grant(&mut w, hero, "Late");
        plan(ab(&w, "Late"), acts);
        let out = frame(&mut w, |w| assert_eq!(w.try_activate(h), ok(1)));
        assert_eq!(w.attr(hero, mana), Some(int(mana_after)), "{acts:?}");
        assert_eq!(w.has_tag(hero, cd_tag), cd, "{acts:?}");
        let committed: Vec<Option<EffectHandle>> = out
            .ability_events
            .iter()
            .filter_map(|e| match e {
                AbilityEvent::Committed { handle, cooldown } if *handle == h => Some(*cooldown),
                _ => None,
            })
            .collect();
        if acts.is_empty() {
            assert!(committed.is_empty(), "nothing is committed on activation");
            continue;
        }
        assert_eq!(committed.len(), 1, "{acts:?}");
        assert_eq!(committed[0].is_some(), has_cd_handle, "{acts:?}");
        if let Some(eh) = committed[0] {
            let ef = w.effect(eh).expect("the cooldown effect is active");
            assert_eq!((ef.def, ef.duration, eh.target), (eff(&w, "FireCooldown"), 30, hero));
            assert_eq!(w.ability_cooldown_remaining(h), Some((30, 30)));
        }
        assert!(log().contains(&Rec::Commit { frame: 0, h, ok: true }));
        assert!(w.is_ability_active(h));
    }
}

#[test]
fn f_ga_06_a_failed_commit_recheck_cancels_the_ability() {
    let mut w = arena(LATE);
    let mana = attr(&w, "Mana");
    let hero = actor(&mut w);
    let h = grant(&mut w, hero, "Late");
    let late = ab(&w, "Late");
    plan(late, &[Act::Spawn(0, TaskSpec::WaitFrames(2))]);
    on_task_plan(late, 0, Act::Commit);
    frame(&mut w, |w| assert_eq!(w.try_activate(h), ok(1)));
    frame(&mut w, |w| w.set_base(hero, mana, int(5)));
    // Frame 2: the task finishes, the behaviour commits; the cost re-check fails.
    let out = frame(&mut w, |_| {});
    assert!(log().contains(&Rec::Commit { frame: 2, h, ok: false }));
    assert_eq!(ended(&out), vec![(h, true)]);
    assert!(!out.ability_events.iter().any(|e| matches!(e, AbilityEvent::Committed { .. })));
    assert!(!w.is_ability_active(h));
    assert_eq!(w.attr(hero, mana), Some(int(5)));
    assert!(!w.has_tag(hero, tag(&w, "Cooldown.Fire")), "no partial commit");
    // From outside: a cooldown re-check fails while the cooldown runs.
    plan(late, &[Act::CommitCooldown]);
    w.set_base(hero, mana, int(50));
    frame(&mut w, |w| assert_eq!(w.try_activate(h), ok(2)));
    assert!(w.has_tag(hero, tag(&w, "Cooldown.Fire")));
    let out = frame(&mut w, |w| {
        assert_eq!(w.commit_ability(h, false, true), Err(ActivationFailure::OnCooldown));
    });
    assert_eq!(ended(&out), vec![(h, true)]);
    assert_eq!(ends_of(h), vec![(2, true), (4, true)]);
    // Committing an inactive or stale ability does nothing.
    assert_eq!(
        w.commit_ability(AbilityHandle::NONE, true, true),
        Err(ActivationFailure::InvalidHandle)
    );
}

// ---------------------------------------------------------------------------------------------
// F-GA-07 Cost
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_07_cost_is_affordable_while_every_touched_value_stays_non_negative() {
    let mut w = arena(
        r#"(
        effects: {
            "DoubleCost": (modifiers: [
                (attribute: "Mana", op: Add, magnitude: Scalable(coef: -20)),
                (attribute: "Stamina", op: Add, magnitude: Scalable(coef: -4)),
            ]),
            "TwoStep": (modifiers: [
                (attribute: "Mana", op: Add, magnitude: Scalable(coef: -5)),
                (attribute: "Mana", op: Add, magnitude: Scalable(coef: -6)),
            ]),
            "ManaBuff": (duration: Infinite,
                         modifiers: [(attribute: "Mana", op: Add, magnitude: Scalable(coef: 5))]),
        },
        abilities: {
            "Pricey": (cost: "DoubleCost", end_after: Frames(1)),
            "Steps": (cost: "TwoStep", end_after: Frames(1)),
            "Seven": (cost: "SbcCost", cost_set_by_caller: { "Data.Cost": -7 }, end_after: Frames(1)),
            "Fifteen": (cost: "SbcCost", cost_set_by_caller: { "Data.Cost": -15 }, end_after: Frames(1)),
            "Sixteen": (cost: "SbcCost", cost_set_by_caller: { "Data.Cost": -16 }, end_after: Frames(1)),
        },
    )"#,
    );
    let (mana, stamina) = (attr(&w, "Mana"), attr(&w, "Stamina"));
    let hero = actor(&mut w);
    let hs: Vec<AbilityHandle> = ["Pricey", "Steps", "Seven", "Fifteen", "Sixteen"]
        .iter()
        .map(|n| grant(&mut w, hero, n))
        .collect();
    let (pricey, steps, seven, fifteen, sixteen) = (hs[0], hs[1], hs[2], hs[3], hs[4]);
    let values =
        |w: &World<PadProbeGame>| (w.attr(hero, mana).unwrap(), w.attr(hero, stamina).unwrap());
    w.step(&[]);
    // Two attributes: Mana 50 → 30 → 10; Stamina 10 → 6 → 2; then Stamina would go negative.
    assert_eq!(w.try_activate(pricey), ok(1));
    w.end_ability(pricey);
    assert_eq!(values(&w), (int(30), int(6)));
    assert_eq!(w.try_activate(pricey), ok(2));
    w.end_ability(pricey);
    assert_eq!(values(&w), (int(10), int(2)));
    w.set_base(hero, mana, int(100));
    assert_eq!(w.try_activate(pricey), Err(ActivationFailure::CantAffordCost));
    assert_eq!(values(&w), (int(100), int(2)), "nothing is paid on failure");
    // Both to exactly 0 is affordable.
    w.set_base(hero, mana, int(20));
    w.set_base(hero, stamina, int(4));
    assert_eq!(w.try_activate(pricey), ok(3));
    w.end_ability(pricey);
    assert_eq!(values(&w), (int(0), int(0)));
    // Two modifiers on one attribute add up (11).
    w.set_base(hero, mana, int(10));
    assert_eq!(w.try_activate(steps), Err(ActivationFailure::CantAffordCost));
    w.set_base(hero, mana, int(11));
    assert_eq!(w.try_activate(steps), ok(1));
    assert_eq!(values(&w).0, int(0));
    // SetByCaller cost values come from the ability definition.
    w.set_base(hero, mana, int(50));
    assert_eq!(w.try_activate(seven), ok(1));
    assert_eq!(values(&w).0, int(43));
    // The resulting *current* value counts: base 10 + buff 5 pays 15 but not 16.
    w.set_base(hero, mana, int(10));
    apply(&mut w, "ManaBuff", hero, hero);
    assert_eq!(values(&w).0, int(15));
    assert_eq!(w.can_activate(sixteen, None), Err(ActivationFailure::CantAffordCost));
    assert_eq!(w.try_activate(fifteen), ok(1));
    assert_eq!(w.attr_value(hero, mana).map(|v| (v.base, v.current)), Some((int(-5), int(0))));
}

// ---------------------------------------------------------------------------------------------
// F-GA-08 Cooldowns
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_08_per_ability_and_shared_cooldown_effects() {
    let mut w = arena(
        r#"(abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], cooldown: "FireCooldown", end_after: Frames(1)),
            "Ice": (tags: ["Ability.Skill.Ice"], cooldown: "SharedCooldown",
                    cooldown_duration: Frames(60), cooldown_tags: ["Cooldown.Ice"], end_after: Frames(1)),
            "Spark": (tags: ["Ability.Skill.Spark"], cooldown: "SharedCooldown",
                      cooldown_duration: Seconds(0.5), cooldown_tags: ["Cooldown.Spark"],
                      end_after: Frames(1)),
        })"#,
    );
    let (cd_fire, cd_ice, cd_spark) =
        (tag(&w, "Cooldown.Fire"), tag(&w, "Cooldown.Ice"), tag(&w, "Cooldown.Spark"));
    let shared = eff(&w, "SharedCooldown");
    let hero = actor(&mut w);
    let fire = grant(&mut w, hero, "Fire");
    let ice = grant(&mut w, hero, "Ice");
    let spark = grant(&mut w, hero, "Spark");
    let mut results = Vec::new();
    for f in 0..=70u32 {
        frame(&mut w, |w| {
            if [0, 5, 29, 30].contains(&f) {
                results.push(("fire", f, w.try_activate(fire)));
            }
            if [0, 1, 59, 60].contains(&f) {
                results.push(("ice", f, w.try_activate(ice)));
            }
            if [1, 2, 30, 31].contains(&f) {
                results.push(("spark", f, w.try_activate(spark)));
            }
        });
        match f {
            1 => {
                assert!(w.has_tag(hero, cd_ice) && w.has_tag(hero, cd_spark));
                assert_eq!(w.cooldown_remaining(hero, &set(&[cd_ice])), Some((59, 60)));
                assert_eq!(w.cooldown_remaining(hero, &set(&[cd_spark])), Some((30, 30)));
                assert_eq!(w.ability_cooldown_remaining(ice), Some((59, 60)));
                assert_eq!(w.ability_cooldown_remaining(spark), Some((30, 30)));
                assert_eq!(w.ability_cooldown_remaining(fire), Some((29, 30)));
                let durations: Vec<u32> = w
                    .effects(hero)
                    .iter()
                    .filter(|e| e.def == shared)
                    .map(|e| e.duration)
                    .collect();
                assert_eq!(durations, vec![60, 30], "one shared effect, two durations");
            }
            30 => assert_eq!(w.ability_cooldown_remaining(spark), Some((1, 30))),
            31 => assert_eq!(w.ability_cooldown_remaining(spark), Some((30, 30))),
            _ => {}
        }
    }
    use ActivationFailure::OnCooldown;
    assert_eq!(
        results,
        vec![
            ("fire", 0, ok(1)),
            ("ice", 0, ok(1)),
            ("ice", 1, Err(OnCooldown)),
            ("spark", 1, ok(1)),
            ("spark", 2, Err(OnCooldown)),
            ("fire", 5, Err(OnCooldown)),
            ("fire", 29, Err(OnCooldown)),
            ("fire", 30, ok(2)),
            ("spark", 30, Err(OnCooldown)),
            ("spark", 31, ok(2)),
            ("ice", 59, Err(OnCooldown)),
            ("ice", 60, ok(2)),
        ]
    );
    // Frame 70: Fire's second cooldown (30..60) is over; Ice's (60..120) runs.
    assert!(!w.has_tag(hero, cd_fire));
    assert_eq!(w.ability_cooldown_remaining(fire), None);
    assert_eq!(w.ability_cooldown_remaining(ice), Some((50, 60)));
}

// ---------------------------------------------------------------------------------------------
// F-GA-09 Cooldown remaining / listening
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_09_longest_remaining_cooldown_wins_and_tags_signal_begin_and_end() {
    let mut w = arena(
        r#"(effects: {
            "LongFire": (duration: Frames(50), granted_tags: ["Cooldown.Fire"]),
            "ShortFire": (duration: Frames(30), granted_tags: ["Cooldown.Fire"]),
        })"#,
    );
    let cd_fire = tag(&w, "Cooldown.Fire");
    let parent = tag(&w, "Cooldown");
    let hero = actor(&mut w);
    let fire = set(&[cd_fire]);
    let mut pairs = Vec::new();
    for f in 0..=60u32 {
        let out = frame(&mut w, |w| {
            if f == 0 {
                apply(w, "LongFire", hero, hero);
            }
            if f == 25 {
                apply(w, "ShortFire", hero, hero);
            }
        });
        pairs.extend(
            out.tag_events
                .iter()
                .filter(|e| e.tag == cd_fire && e.is_new_or_removed())
                .map(|e| (e.frame, e.new > 0)),
        );
        match f {
            0 => assert_eq!(w.cooldown_remaining(hero, &fire), Some((50, 50))),
            10 => assert_eq!(w.cooldown_remaining(hero, &fire), Some((40, 50))),
            // Long has 20 left, Short 25: the longest remaining wins, not the longest duration.
            30 => assert_eq!(w.cooldown_remaining(hero, &fire), Some((25, 30))),
            49 => assert_eq!(w.cooldown_remaining(hero, &fire), Some((6, 30))),
            54 => assert_eq!(w.cooldown_remaining(hero, &fire), Some((1, 30))),
            55 => assert_eq!(w.cooldown_remaining(hero, &fire), None),
            _ => {}
        }
        if f == 30 {
            assert_eq!(w.cooldown_remaining(hero, &set(&[parent])), Some((25, 30)), "hierarchical");
            assert_eq!(w.cooldown_remaining(hero, &set(&[tag(&w, "Cooldown.Ice")])), None);
        }
    }
    assert_eq!(pairs, vec![(0, true), (55, false)], "one begin and one end signal");
}

// ---------------------------------------------------------------------------------------------
// F-GA-10 End and cancel
// ---------------------------------------------------------------------------------------------

const MODES: &str = r#"(abilities: {
    "PerExec": (tags: ["Ability.Skill.Fire"], instancing: PerExecution, state_size: 4,
                activation_owned_tags: ["State.Casting"], behaviour: "Script"),
    "PerActor": (tags: ["Ability.Skill.Ice"], instancing: PerActor, state_size: 4,
                 activation_owned_tags: ["State.Casting"], behaviour: "Script"),
    "NonInst": (tags: ["Ability.Movement.Dash"], instancing: NonInstanced,
                activation_owned_tags: ["State.Casting"], behaviour: "Script"),
})"#;

#[test]
fn f_ga_10_end_and_cancel_are_uniform_across_instancing_modes() {
    let mut w = arena(MODES);
    let casting = tag(&w, "State.Casting");
    let hero = actor(&mut w);
    let names = ["PerExec", "PerActor", "NonInst"];
    let hs: Vec<AbilityHandle> = names.iter().map(|n| grant(&mut w, hero, n)).collect();
    for n in names {
        let d = ab(&w, n);
        plan(
            d,
            &[
                Act::Spawn(0, TaskSpec::WaitFrames(100)),
                Act::Spawn(1, TaskSpec::WaitEvent { tag: tag(&w, "Event.Ping"), once: false }),
            ],
        );
    }
    for (i, h) in hs.iter().copied().enumerate() {
        let instanced = i < 2;
        for cancelled in [false, true] {
            frame(&mut w, |w| assert!(w.try_activate(h).is_ok()));
            assert!(w.has_tag(hero, casting));
            let tasks: Vec<TaskHandle> = w.tasks_of(h).map(|(t, _)| t).collect();
            assert_eq!(tasks.len(), if instanced { 2 } else { 0 }, "{}", names[i]);
            let at = w.next_frame();
            let out =
                frame(&mut w, |w| if cancelled { w.cancel_ability(h) } else { w.end_ability(h) });
            assert_eq!(ended(&out), vec![(h, cancelled)], "{}", names[i]);
            assert_eq!(tasks_ended(&out), tasks, "ending ends the tasks");
            assert!(ends_of(h).contains(&(at, cancelled)), "on_end({cancelled}) ran");
            assert!(!w.is_ability_active(h));
            assert!(!w.has_tag(hero, casting));
            assert_eq!(w.tasks_of(h).count(), 0);
        }
        // Ending an inactive ability does nothing.
        let out = frame(&mut w, |w| w.end_ability(h));
        assert!(ended(&out).is_empty());
    }
    // Matching filters with an ignore, then all.
    let (pe, pa, ni) = (hs[0], hs[1], hs[2]);
    let (skill, ice) = (tag(&w, "Ability.Skill"), tag(&w, "Ability.Skill.Ice"));
    frame(&mut w, |w| {
        for h in [pe, pa, ni] {
            w.try_activate(h).unwrap();
        }
    });
    let out =
        frame(&mut w, |w| w.cancel_abilities_matching(hero, &set(&[skill]), &set(&[ice]), None));
    assert_eq!(ended(&out), vec![(pe, true)]);
    let out = frame(&mut w, |w| {
        w.cancel_abilities_matching(hero, &set(&[skill]), &TagSet::EMPTY, Some(pa))
    });
    assert!(ended(&out).is_empty(), "the only match is ignored");
    let out = frame(&mut w, |w| w.cancel_all_abilities(hero, Some(ni)));
    assert_eq!(ended(&out), vec![(pa, true)]);
    assert!(w.is_ability_active(ni));
    let out = frame(&mut w, |w| {
        w.try_activate(pe).unwrap();
        w.cancel_all_abilities(hero, None);
    });
    assert_eq!(ended(&out), vec![(pe, true), (ni, true)]);
    assert_eq!(w.tag_count_exact(hero, casting), 0);
}

#[test]
fn f_ga_10_a_behaviour_ends_or_cancels_itself_after_it_returns() {
    let mut w = arena(
        r#"(abilities: {
            "Quick": (tags: ["Ability.Skill.Fire"], behaviour: "Script"),
            "Abort": (tags: ["Ability.Skill.Ice"], behaviour: "Script"),
        })"#,
    );
    let hero = actor(&mut w);
    let quick = grant(&mut w, hero, "Quick");
    let abort = grant(&mut w, hero, "Abort");
    plan(ab(&w, "Quick"), &[Act::End, Act::Probe(quick)]);
    plan(ab(&w, "Abort"), &[Act::Cancel, Act::Probe(abort)]);
    let out = frame(&mut w, |w| {
        w.try_activate(quick).unwrap();
        w.try_activate(abort).unwrap();
    });
    assert_eq!(ended(&out), vec![(quick, false), (abort, true)]);
    let probes: Vec<Rec> = log().into_iter().filter(|r| matches!(r, Rec::Probe { .. })).collect();
    assert_eq!(
        probes,
        vec![
            Rec::Probe { other: quick, granted: true, active: true },
            Rec::Probe { other: abort, granted: true, active: true },
        ]
    );
    assert_eq!(ends_of(quick), vec![(0, false)]);
    assert_eq!(ends_of(abort), vec![(0, true)]);
}

// ---------------------------------------------------------------------------------------------
// F-GA-11 Passive abilities
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_11_passive_abilities_activate_when_granted_and_on_avatar_change() {
    let mut w = arena(
        r#"(
        effects: { "GrantAura": (duration: Infinite,
                                 granted_abilities: [(ability: "Aura")]) },
        abilities: {
            "Regen": (tags: ["Ability.Passive"], passive: true, behaviour: "Script"),
            "Aura": (tags: ["Ability.Passive"], passive: true, behaviour: "Script"),
        },
    )"#,
    );
    let regen_def = ab(&w, "Regen");
    let hero = actor(&mut w);
    run_through(&mut w, 2);
    let mut regen = AbilityHandle::NONE;
    let out = frame(&mut w, |w| regen = w.grant_ability(hero, regen_def, 1).unwrap());
    assert_eq!(
        &out.ability_events[..2],
        &[
            AbilityEvent::Granted { handle: regen, def: regen_def },
            AbilityEvent::Activated { handle: regen, def: regen_def, serial: 1, trigger: None }
        ]
    );
    assert_eq!(activations_of(regen), vec![(3, 1)]);
    // Granted between frames, it is active when the call returns.
    let other = actor(&mut w);
    let h = w.grant_ability(other, regen_def, 1).unwrap();
    assert!(w.is_ability_active(h));
    // An effect-granted passive activates with the grant.
    frame(&mut w, |w| {
        apply(w, "GrantAura", hero, hero);
    });
    let aura = w.find_ability(hero, ab(&w, "Aura")).unwrap();
    assert!(w.is_ability_active(aura));
    // It never ends on its own.
    run_through(&mut w, 200);
    assert!(w.is_ability_active(regen) && w.is_ability_active(aura));
    assert!(ends_of(regen).is_empty());
    // A new avatar re-activates passives that are not active, and only those.
    let body = w.spawn().unwrap();
    frame(&mut w, |w| w.cancel_ability(regen));
    assert!(!w.is_ability_active(regen));
    let out = frame(&mut w, |w| w.set_avatar(hero, body));
    assert_eq!(activated(&out), vec![(regen, 2, None)]);
    assert!(failed(&out).is_empty(), "the active Aura is left alone");
    assert_eq!(w.avatar(hero), body);
    let seen_avatar = log().into_iter().rev().find_map(|r| match r {
        Rec::Activated { h, avatar, .. } if h == regen => Some(avatar),
        _ => None,
    });
    assert_eq!(seen_avatar, Some(body));
}

// ---------------------------------------------------------------------------------------------
// F-GA-12 Triggers and events
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_12_event_triggers_match_hierarchically_in_slot_order_with_data() {
    let mut w = arena(
        r#"(abilities: {
            "OnHit": (tags: ["Ability.Trigger"], triggers: [Event("Event.Hit")], behaviour: "Script"),
            "OnHeavy": (tags: ["Ability.Trigger"], triggers: [Event("Event.Hit.Heavy")],
                        behaviour: "Script"),
            "OnPing": (tags: ["Ability.Trigger"], triggers: [Event("Event.Ping")], behaviour: "Script"),
        })"#,
    );
    let (hit, heavy, ping) =
        (tag(&w, "Event.Hit"), tag(&w, "Event.Hit.Heavy"), tag(&w, "Event.Ping"));
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let on_hit = grant(&mut w, hero, "OnHit");
    let on_heavy = grant(&mut w, hero, "OnHeavy");
    let on_ping = grant(&mut w, hero, "OnPing");
    // OnHit's behaviour sends a ping: queued, it runs after the behaviour returns.
    plan(ab(&w, "OnHit"), &[Act::Send(hero, ping), Act::Probe(on_ping)]);
    let ev = EventData::new(heavy, enemy, hero).with_magnitude(int(7));
    let out = frame(&mut w, |w| w.send_event(hero, ev));
    assert_eq!(
        activated(&out),
        vec![(on_hit, 1, Some(heavy)), (on_heavy, 1, Some(heavy)), (on_ping, 1, Some(ping))]
    );
    assert!(log().contains(&Rec::Probe { other: on_ping, granted: true, active: false }));
    let events: Vec<(u32, Entity, TagId, Entity)> = out
        .gameplay_events
        .iter()
        .map(|g| (g.frame, g.to, g.data.tag, g.data.instigator))
        .collect();
    assert_eq!(events, vec![(0, hero, heavy, enemy), (0, hero, ping, hero)]);
    let seen: Vec<(AbilityHandle, Option<EventData>)> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Activated { h, event, .. } => Some((h, event)),
            _ => None,
        })
        .collect();
    assert_eq!(seen[0], (on_hit, Some(ev)));
    assert_eq!(seen[1], (on_heavy, Some(ev)));
    assert_eq!(seen[2].1.map(|e| (e.tag, e.instigator, e.target)), Some((ping, hero, hero)));
    // The parent event only reaches the parent trigger; nothing fails for the others.
    let out = frame(&mut w, |w| {
        w.cancel_all_abilities(hero, None);
        w.send_event(hero, EventData::new(hit, enemy, hero));
    });
    assert_eq!(activated(&out), vec![(on_hit, 2, Some(hit)), (on_ping, 2, Some(ping))]);
    assert!(failed(&out).is_empty());
    // Events to another entity trigger nothing here.
    let out = frame(&mut w, |w| {
        w.cancel_all_abilities(hero, None);
        w.send_event(enemy, EventData::new(heavy, hero, enemy));
    });
    assert!(activated(&out).is_empty());
    assert_eq!(out.gameplay_events.len(), 1);
}

#[test]
fn f_ga_12_tag_added_and_tag_present_triggers() {
    let mut w = arena(
        r#"(abilities: {
            "OnAdd": (tags: ["Ability.Trigger"], triggers: [TagAdded("Trigger.Added")],
                      behaviour: "Script"),
            "WhilePresent": (tags: ["Ability.Trigger"], triggers: [TagPresent("Trigger.Present")],
                             behaviour: "Script"),
        })"#,
    );
    let (added, present) = (tag(&w, "Trigger.Added"), tag(&w, "Trigger.Present"));
    let hero = actor(&mut w);
    let on_add = grant(&mut w, hero, "OnAdd");
    let while_present = grant(&mut w, hero, "WhilePresent");
    let mut log_frames = Vec::new();
    for f in 0..=8u32 {
        let out = frame(&mut w, |w| match f {
            1 => w.add_loose_tag(hero, added),
            2 => w.remove_loose_tag(hero, added),
            3 => w.add_loose_tag(hero, present),
            4 => w.add_loose_tag(hero, present),
            5 => w.remove_loose_tag(hero, present),
            7 => w.remove_loose_tag(hero, present),
            _ => {}
        });
        for (h, s, _) in activated(&out) {
            log_frames.push(("activated", f, h, s));
        }
        for (h, c) in ended(&out) {
            log_frames.push(if c { ("cancelled", f, h, 0) } else { ("ended", f, h, 0) });
        }
        assert!(failed(&out).is_empty(), "frame {f}: a count going 1 → 2 is not an addition");
        match f {
            2 => assert!(w.is_ability_active(on_add), "TagAdded does not end on removal"),
            5 => assert!(w.is_ability_active(while_present), "the tag is still present once"),
            _ => {}
        }
    }
    assert_eq!(
        log_frames,
        vec![
            ("activated", 1, on_add, 1),
            ("activated", 3, while_present, 1),
            ("cancelled", 7, while_present, 0)
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// F-GA-13 Input binding, F-GA-18 same-frame fairness
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_13_pressed_edges_activate_and_active_abilities_get_input_edges() {
    let mut w = arena(
        r#"(abilities: {
            "Charge": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script"),
            "Manual": (tags: ["Ability.Skill.Ice"], input: 1, activate_on_input: false,
                       behaviour: "Script"),
        })"#,
    );
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    assert_eq!(w.player_owner(0), Some(hero));
    assert_eq!(w.player_owner(1), None);
    let charge = grant(&mut w, hero, "Charge");
    let manual = grant(&mut w, hero, "Manual");
    plan(
        ab(&w, "Charge"),
        &[
            Act::Spawn(0, TaskSpec::WaitInput(InputEdge::Released)),
            Act::Spawn(1, TaskSpec::WaitInput(InputEdge::Pressed)),
        ],
    );
    let inputs: [u16; 7] = [0, 1, 1, 0, 1, 2, 0];
    let mut held = Vec::new();
    for (f, bits) in inputs.iter().enumerate() {
        let out = frame_in(&mut w, &[pad(*bits)], |_| {});
        held.push((
            w.ability(charge).unwrap().input_held(),
            w.ability(manual).unwrap().input_held(),
        ));
        if f == 1 {
            assert_eq!(activated(&out), vec![(charge, 1, None)]);
        } else {
            assert!(activated(&out).is_empty(), "frame {f}");
            assert!(failed(&out).is_empty(), "frame {f}: no activation attempt");
        }
    }
    assert_eq!(
        held,
        vec![
            (false, false),
            (true, false),
            (true, false),
            (false, false),
            (true, false),
            (false, true),
            (false, false)
        ]
    );
    let edges: Vec<(u32, InputEdge)> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Input { frame, h, edge } if h == charge => Some((frame, edge)),
            _ => None,
        })
        .collect();
    assert_eq!(
        edges,
        vec![(3, InputEdge::Released), (4, InputEdge::Pressed), (5, InputEdge::Released)],
        "the activating press is not also an input edge"
    );
    let reports = task_reports(charge);
    assert_eq!(
        &reports[..2],
        &[
            (3, 0, TaskEvent::Input(InputEdge::Released)),
            (4, 1, TaskEvent::Input(InputEdge::Pressed))
        ]
    );
    assert!(!w.is_ability_active(manual));
    assert!(w.last_activation(manual).is_none(), "activate_on_input: false never tries");
    // Manual still activates explicitly, then receives its input edges.
    frame(&mut w, |w| assert_eq!(w.try_activate(manual), ok(1)));
    frame_in(&mut w, &[pad(2)], |_| {});
    assert!(log().contains(&Rec::Input { frame: 8, h: manual, edge: InputEdge::Pressed }));
}

#[test]
fn f_ga_13_confirm_and_cancel_go_to_waiting_tasks_not_to_abilities() {
    let mut w = arena(
        r#"(abilities: {
            "Aim": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script"),
            "Other": (tags: ["Ability.Skill.Ice"], input: 1, behaviour: "Script"),
        })"#,
    );
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    let aim = grant(&mut w, hero, "Aim");
    let other = grant(&mut w, hero, "Other");
    plan(ab(&w, "Aim"), &[Act::Spawn(0, TaskSpec::WaitConfirmCancel)]);
    frame_in(&mut w, &[pad(1)], |_| {});
    let out = frame_in(&mut w, &[pad(1 | CONFIRM)], |_| {});
    assert_eq!(task_reports(aim), vec![(1, 0, TaskEvent::Confirmed)]);
    assert!(activated(&out).is_empty() && failed(&out).is_empty());
    assert!(!log().iter().any(|r| matches!(r, Rec::Input { .. })), "confirm is not an input edge");
    assert!(!w.is_ability_active(other));
    // Cancel reaches a new waiting task.
    frame_in(&mut w, &[pad(0)], |w| {
        w.end_ability(aim);
    });
    frame_in(&mut w, &[pad(1)], |_| {});
    frame_in(&mut w, &[pad(1 | CANCEL)], |_| {});
    assert_eq!(task_reports(aim), vec![(1, 0, TaskEvent::Confirmed), (4, 0, TaskEvent::Cancelled)]);
}

#[test]
fn f_ga_18_same_frame_activations_resolve_in_player_handle_order() {
    let mut w = arena(
        r#"(abilities: { "Charge": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script") })"#,
    );
    let a = actor(&mut w);
    let b = actor(&mut w);
    assert!(a.index < b.index);
    // Player 0 drives the higher entity index, player 1 the lower one.
    w.bind_player(0, b);
    w.bind_player(1, a);
    let ha = grant(&mut w, a, "Charge");
    let hb = grant(&mut w, b, "Charge");
    let out = frame_in(&mut w, &[pad(1), pad(1)], |_| {});
    assert_eq!(activated(&out), vec![(hb, 1, None), (ha, 1, None)]);
    assert!(w.is_ability_active(ha) && w.is_ability_active(hb));
    // Only player 1 presses: only its owner activates.
    let mut w2 = arena(
        r#"(abilities: { "Charge": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script") })"#,
    );
    let a2 = actor(&mut w2);
    let b2 = actor(&mut w2);
    w2.bind_player(0, a2);
    w2.bind_player(1, b2);
    grant(&mut w2, a2, "Charge");
    let hb2 = grant(&mut w2, b2, "Charge");
    let out = frame_in(&mut w2, &[pad(0), pad(1)], |_| {});
    assert_eq!(activated(&out), vec![(hb2, 1, None)]);
}

// ---------------------------------------------------------------------------------------------
// F-GA-14 Finding abilities
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_14_specs_matching_and_activity_queries() {
    let mut w = arena(
        r#"(abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], cost: "ManaCost"),
            "Ice": (tags: ["Ability.Skill.Ice"]),
            "Dash": (tags: ["Ability.Movement.Dash"]),
        })"#,
    );
    let mana = attr(&w, "Mana");
    let hero = actor(&mut w);
    let fire = grant(&mut w, hero, "Fire");
    let ice = grant(&mut w, hero, "Ice");
    let dash = grant(&mut w, hero, "Dash");
    let c = w.content().clone();
    let t = |n: &str| c.tag(n).unwrap();
    assert_eq!(w.specs_matching(hero, &set(&[t("Ability.Skill")]), false), vec![fire, ice]);
    assert_eq!(w.specs_matching(hero, &set(&[t("Ability.Skill.Fire")]), false), vec![fire]);
    assert_eq!(
        w.specs_matching(hero, &set(&[t("Ability.Skill.Ice"), t("Ability.Movement")]), false),
        vec![ice, dash]
    );
    assert_eq!(w.specs_matching(hero, &set(&[t("Ability")]), true), vec![fire, ice, dash]);
    w.set_base(hero, mana, int(0));
    assert_eq!(w.specs_matching(hero, &set(&[t("Ability")]), true), vec![ice, dash]);
    assert_eq!(w.specs_matching(hero, &set(&[t("Team")]), false), vec![]);
    w.try_activate(ice).unwrap();
    assert!(w.is_ability_active(ice) && !w.is_ability_active(fire));
    assert_eq!(
        w.specs_matching(hero, &set(&[t("Ability")]), true),
        vec![dash],
        "active: AlreadyActive"
    );
    let active: Vec<AbilityHandle> =
        w.abilities(hero).filter(|(_, s)| s.is_active()).map(|(h, _)| h).collect();
    assert_eq!(active, vec![ice]);
    assert_eq!(w.find_ability(hero, ab(&w, "Dash")), Some(dash));
    assert_eq!(w.abilities(hero).count(), 3);
}

// ---------------------------------------------------------------------------------------------
// F-GA-15 Levels, F-GA-16 Ability sets
// ---------------------------------------------------------------------------------------------

/// A cost made only of level-scaled magnitudes is checked without building the ability's spec:
/// the check still reads the ability's level (cost 10 per level here), at the edge of
/// affordability in both directions.
#[test]
fn f_ga_15_a_level_scaled_cost_is_checked_at_the_ability_level() {
    let mut w =
        arena(r#"(abilities: { "Fire": (tags: ["Ability.Skill.Fire"], cost: "ManaCost") })"#);
    let mana = attr(&w, "Mana");
    let hero = actor(&mut w);
    let h = w.grant_ability(hero, ab(&w, "Fire"), 3).expect("grant");
    w.step(&[]);
    w.set_base(hero, mana, int(29));
    assert_eq!(w.try_activate(h), Err(ActivationFailure::CantAffordCost), "level 3 costs 30");
    assert_eq!(w.attr(hero, mana), Some(int(29)), "nothing is paid on failure");
    w.set_base(hero, mana, int(30));
    assert_eq!(w.try_activate(h), ok(1));
    w.end_ability(h);
    assert_eq!(w.attr(hero, mana), Some(int(0)));
    // At level 1 the same mana affords it.
    w.set_base(hero, mana, int(10));
    w.set_ability_level(h, 1);
    w.step(&[]);
    assert_eq!(w.try_activate(h), ok(2));
    assert_eq!(w.attr(hero, mana), Some(int(0)));
}

#[test]
fn f_ga_15_set_level_in_place_and_regrant_with_a_new_handle() {
    let mut w = arena(
        r#"(abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], cost: "ManaCost", cooldown: "FireCooldown",
                     input: 2, behaviour: "Script"),
        })"#,
    );
    let (mana, focus) = (attr(&w, "Mana"), attr(&w, "Focus"));
    let fire_def = ab(&w, "Fire");
    let cd_def = eff(&w, "FireCooldown");
    let hero = actor(&mut w);
    let h = grant(&mut w, hero, "Fire");
    plan(fire_def, &[Act::Spawn(0, TaskSpec::WaitFrames(50))]);
    frame(&mut w, |w| assert_eq!(w.try_activate(h), ok(1)));
    assert_eq!(w.attr(hero, mana), Some(int(40)), "level 1 cost 10");
    let cd = *w.effects(hero).iter().find(|e| e.def == cd_def).unwrap();
    assert_eq!(cd.level, 1);
    assert_eq!(w.effect_magnitude(cd.handle(hero), 0), Some(int(10)));
    assert_eq!(w.attr(hero, focus), Some(int(10)));
    // In place: it keeps running with its tasks and handle.
    let task = spawned(h, 0)[0];
    frame(&mut w, |w| w.set_ability_level(h, 3));
    assert!(w.is_ability_active(h) && w.is_task_live(task));
    assert_eq!(w.ability(h).unwrap().level, 3);
    run_through(&mut w, 30);
    frame(&mut w, |w| {
        w.end_ability(h);
        assert_eq!(w.try_activate(h), ok(2));
    });
    assert_eq!(w.attr(hero, mana), Some(int(10)), "level 3 cost 30");
    let cd = *w.effects(hero).iter().find(|e| e.def == cd_def).unwrap();
    assert_eq!(cd.level, 3);
    assert_eq!(w.effect_magnitude(cd.handle(hero), 0), Some(int(30)));
    assert_eq!(w.attr(hero, focus), Some(int(30)));
    assert_eq!(activations_of(h).last().map(|_| ()), Some(()));
    let levels: Vec<u16> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Activated { level, .. } => Some(level),
            _ => None,
        })
        .collect();
    assert_eq!(levels, vec![1, 3]);
    // Regrant: the running ability ends (cancelled) and the new spec has a new handle.
    let mut h2 = Err(GrantError::InvalidHandle(h));
    let out = frame(&mut w, |w| h2 = w.regrant_ability(h, 2));
    let h2 = h2.unwrap();
    assert_eq!(
        out.ability_events,
        vec![
            AbilityEvent::TaskEnded { task: spawned(h, 0)[1], ability: h },
            AbilityEvent::Ended { handle: h, def: fire_def, was_cancelled: true },
            AbilityEvent::Removed { handle: h, def: fire_def },
            AbilityEvent::Granted { handle: h2, def: fire_def },
        ]
    );
    assert_ne!(h2, h);
    assert_eq!((h2.slot, h2.generation), (h.slot, h.generation + 1));
    let s = *w.ability(h2).unwrap();
    assert_eq!((s.level, s.input_id(), s.activation_serial, s.is_active()), (2, Some(2), 0, false));
    assert_eq!(w.try_activate(h), Err(ActivationFailure::InvalidHandle));
    assert_eq!(w.regrant_ability(h, 5), Err(GrantError::InvalidHandle(h)));
    w.set_ability_level(h, 9);
    assert_eq!(w.ability(h2).unwrap().level, 2, "a stale handle changes nothing");
}

#[test]
fn f_ga_16_ability_sets_grant_levels_and_inputs() {
    let mut w = arena(
        r#"(
        abilities: {
            "Fire": (tags: ["Ability.Skill.Fire"], input: 2),
            "Ice": (tags: ["Ability.Skill.Ice"]),
        },
        ability_sets: {
            "Kit": [(ability: "Fire", level: 3, input: 5), (ability: "Ice")],
            "Empty": [],
        },
    )"#,
    );
    let c = w.content().clone();
    let kit = c.ability_set("Kit").unwrap();
    let hero = actor(&mut w);
    let hs = w.grant_ability_set(hero, kit);
    assert_eq!(hs.len(), 2);
    let got: Vec<(AbilityDefId, u16, Option<u8>)> =
        hs.iter().map(|h| w.ability(*h).map(|s| (s.def, s.level, s.input_id())).unwrap()).collect();
    assert_eq!(got, vec![(ab(&w, "Fire"), 3, Some(5)), (ab(&w, "Ice"), 1, None)]);
    assert_eq!(c.ability_set_defs()[kit.index()].name, "Kit");
    assert!(w.grant_ability_set(hero, c.ability_set("Empty").unwrap()).is_empty());
    assert!(w.grant_ability_set(hero, AbilitySetId(99)).is_empty());
    let plain = w.spawn().unwrap();
    assert!(w.grant_ability_set(plain, kit).is_empty());
    assert_eq!(w.abilities(hero).count(), 2);
}

// ---------------------------------------------------------------------------------------------
// F-GA-17 Owner vs avatar
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_17_abilities_act_through_the_avatar_for_the_owner() {
    let mut w = arena(
        r#"(abilities: {
            "Strike": (tags: ["Ability.Skill.Fire"], cooldown: "FireCooldown", behaviour: "Script"),
        })"#,
    );
    let health = attr(&w, "Health");
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let body = w.spawn().unwrap();
    assert_eq!(w.avatar(hero), hero, "the owner is its own avatar by default");
    let strike = grant(&mut w, hero, "Strike");
    plan(
        ab(&w, "Strike"),
        &[Act::Apply(eff(&w, "Damage"), enemy), Act::Apply(eff(&w, "Burn"), enemy)],
    );
    frame(&mut w, |w| w.set_avatar(hero, body));
    assert_eq!(w.avatar(hero), body);
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(strike), ok(1)));
    let avatars: Vec<Entity> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Activated { avatar, .. } => Some(avatar),
            _ => None,
        })
        .collect();
    assert_eq!(avatars, vec![body]);
    let exec: Vec<(Entity, Entity, Entity)> = out
        .executions
        .iter()
        .filter(|x| x.attr == health)
        .map(|x| (x.target, x.instigator, x.causer))
        .collect();
    assert_eq!(exec, vec![(enemy, hero, body)], "instigator = owner, causer = avatar");
    let burn = *w.effects(enemy).iter().find(|e| e.def == eff(&w, "Burn")).unwrap();
    let origin = w.effect_origin(burn.handle(enemy)).unwrap();
    assert_eq!((origin.instigator, origin.causer, origin.ability), (hero, body, strike));
    assert_eq!(origin.activation_serial, 1);
    // The cooldown and effects live on the owner and survive a new avatar (respawn).
    let body2 = w.spawn().unwrap();
    let before = w.effects(hero).to_vec();
    frame(&mut w, |w| {
        w.end_ability(strike);
        w.despawn(body);
        w.set_avatar(hero, body2);
    });
    assert_eq!(w.avatar(hero), body2);
    assert_eq!(w.effects(hero), &before[..]);
    assert_eq!(w.try_activate(strike), Err(ActivationFailure::OnCooldown));
    assert_eq!(w.ability_cooldown_remaining(strike), Some((29, 30)));
    let spec = w.make_ability_spec(strike, eff(&w, "Damage"));
    assert_eq!((spec.context.instigator, spec.context.causer), (hero, body2));
}

// ---------------------------------------------------------------------------------------------
// F-GA-19 Instancing
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_19_state_blob_per_execution_per_actor_and_none() {
    let mut w = arena(MODES);
    let hero = actor(&mut w);
    let names = ["PerExec", "PerActor", "NonInst"];
    let hs: Vec<AbilityHandle> = names.iter().map(|n| grant(&mut w, hero, n)).collect();
    for n in names {
        let d = ab(&w, n);
        plan(d, &[Act::Bump, Act::Spawn(0, TaskSpec::WaitFrames(1))]);
        on_task_plan(d, 0, Act::Bump);
        on_task_plan(d, 0, Act::End);
    }
    for _ in 0..3 {
        frame(&mut w, |w| {
            for h in &hs {
                w.try_activate(*h).unwrap();
            }
        });
        frame(&mut w, |w| w.end_ability(hs[2]));
    }
    let states = |h: AbilityHandle| -> Vec<u32> {
        log()
            .into_iter()
            .filter_map(|r| match r {
                Rec::State { h: x, value } if x == h => Some(value),
                _ => None,
            })
            .collect()
    };
    // PerExecution: zeroed at every activation, kept across frames within one.
    assert_eq!(states(hs[0]), vec![0, 1, 0, 1, 0, 1]);
    // PerActor: persists between activations.
    assert_eq!(states(hs[1]), vec![0, 1, 2, 3, 4, 5]);
    // NonInstanced: no blob (reads zero, writes vanish) and no tasks.
    assert_eq!(states(hs[2]), vec![0, 0, 0]);
    let spawns: Vec<Result<TaskHandle, ActivationFailure>> = log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Spawned { h, result, .. } if h == hs[2] => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(spawns, vec![Err(ActivationFailure::TaskCapacity); 3]);
    assert!(hs.iter().all(|h| !w.is_ability_active(*h)));
    assert!(hs.iter().all(|h| w.ability(*h).unwrap().activation_serial == 3));
    // The PerExecution and PerActor abilities ended themselves from their task reports.
    assert_eq!(ends_of(hs[0]), vec![(1, false), (3, false), (5, false)]);
    assert_eq!(ends_of(hs[1]), vec![(1, false), (3, false), (5, false)]);
}

// ---------------------------------------------------------------------------------------------
// F-GA-21 Passing data
// ---------------------------------------------------------------------------------------------

#[test]
fn f_ga_21_event_payload_and_target_data_reach_the_behaviour() {
    let mut w = arena(
        r#"(abilities: {
            "OnHit": (tags: ["Ability.Trigger"], triggers: [Event("Event.Hit")], behaviour: "Script"),
        })"#,
    );
    let (hit, heavy) = (tag(&w, "Event.Hit"), tag(&w, "Event.Hit.Heavy"));
    let hero = actor(&mut w);
    let e1 = actor(&mut w);
    let e2 = actor(&mut w);
    let on_hit = grant(&mut w, hero, "OnHit");
    plan(ab(&w, "OnHit"), &[Act::Spawn(0, TaskSpec::WaitEvent { tag: hit, once: true })]);
    let mut ev = EventData::new(heavy, e1, hero)
        .with_magnitude(crate::common::fx("2.5"))
        .with_target_data(TargetData::entities(&[e1, e2]));
    ev.object = e2;
    ev.user[0] = 9;
    frame(&mut w, |w| w.send_event(hero, ev));
    let seen = log().into_iter().find_map(|r| match r {
        Rec::Activated { event, .. } => event,
        _ => None,
    });
    let seen = seen.expect("the trigger event reaches on_activate");
    assert_eq!(seen, ev);
    assert_eq!(seen.magnitude, crate::common::fx("2.5"));
    assert_eq!(seen.target_data.view(), TargetView::Entities(&[e1, e2]));
    assert_eq!((seen.object, seen.user[0]), (e2, 9));
    // A later event reaches the waiting task with its payload.
    let later = EventData::new(hit, e2, hero)
        .with_magnitude(int(11))
        .with_target_data(TargetData::location([int(1), int(2), int(3)], [int(4), int(5), int(6)]));
    frame(&mut w, |w| w.send_event(hero, later));
    assert_eq!(task_reports(on_hit), vec![(1, 0, TaskEvent::Event(later))]);
}

// ---------------------------------------------------------------------------------------------
// F-AT-01 Model, F-AT-03 Ticking, F-AT-04 Use and cancellation
// ---------------------------------------------------------------------------------------------

const WORKERS: &str = r#"(abilities: {
    "Worker": (tags: ["Ability.Skill.Fire"], behaviour: "Script"),
    "Helper": (tags: ["Ability.Skill.Ice"], behaviour: "Script"),
})"#;

#[test]
fn f_at_01_tasks_are_pool_records_with_generational_handles_and_a_capacity() {
    let mut w = build(WORKERS, WorldConfig { max_tasks: 3, ..WorldConfig::default() });
    let ping = tag(&w, "Event.Ping");
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let helper = grant(&mut w, hero, "Helper");
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitFrames(5)),
            Act::Spawn(1, TaskSpec::WaitEvent { tag: ping, once: false }),
            Act::Spawn(2, TaskSpec::Repeat { count: 0, every: 1 }),
            Act::Spawn(3, TaskSpec::WaitFrames(1)),
        ],
    );
    plan(ab(&w, "Helper"), &[Act::Spawn(7, TaskSpec::WaitFrames(1))]);
    frame(&mut w, |w| assert_eq!(w.try_activate(worker), ok(1)));
    assert!(log().contains(&Rec::Spawned {
        h: worker,
        user: 3,
        result: Err(ActivationFailure::TaskCapacity)
    }));
    let listed: Vec<(TaskHandle, u16, Entity, u32, u32)> = w
        .tasks_of(worker)
        .map(|(t, r)| (t, r.user_id, r.owner, r.activation_serial, r.started))
        .collect();
    let (t0, t1, t2) = (spawned(worker, 0)[0], spawned(worker, 1)[0], spawned(worker, 2)[0]);
    assert_eq!(
        listed,
        vec![(t0, 0, hero, 1, 0), (t1, 1, hero, 1, 0), (t2, 2, hero, 1, 0)],
        "pool order"
    );
    assert!(w.tasks_of(worker).all(|(_, r)| r.ability() == worker && r.is_live()));
    assert!(w.is_task_live(t0) && w.task(t0).is_some());
    // Frame 5: the wait finishes; its slot is freed at delivery.
    run_through(&mut w, 4);
    let out = frame(&mut w, |_| {});
    assert_eq!(tasks_ended(&out), vec![t0]);
    assert!(!w.is_task_live(t0) && w.task(t0).is_none());
    assert!(task_reports(worker).contains(&(5, 0, TaskEvent::Finished)));
    // The freed slot is reused under a new generation; the old handle stays dead.
    frame(&mut w, |w| assert_eq!(w.try_activate(helper), ok(1)));
    let t7 = spawned(helper, 7)[0];
    assert_eq!(t7.slot, t0.slot);
    assert_ne!(t7.generation, t0.generation);
    assert!(!w.is_task_live(t0) && w.is_task_live(t7));
    w.end_task(t0);
    assert!(w.is_task_live(t7), "ending a stale handle ends nothing");
    // Results came to on_task with the spawner's user ids.
    let ticks: Vec<(u32, TaskEvent)> =
        task_reports(worker).into_iter().filter(|r| r.1 == 2).map(|r| (r.0, r.2)).collect();
    assert_eq!(ticks, (1..=6).map(|n| (n, TaskEvent::Tick(n))).collect::<Vec<_>>());
}

#[test]
fn f_at_03_tasks_tick_once_per_frame() {
    let mut w = arena(WORKERS);
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    plan(ab(&w, "Worker"), &[Act::Spawn(0, TaskSpec::Repeat { count: 0, every: 1 })]);
    run_through(&mut w, 9);
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    run_through(&mut w, 20);
    let ticks: Vec<(u32, TaskEvent)> =
        task_reports(worker).into_iter().map(|r| (r.0, r.2)).collect();
    assert_eq!(ticks, (1..=10).map(|n| (10 + n, TaskEvent::Tick(n))).collect::<Vec<_>>());
}

#[test]
fn f_at_04_end_task_and_ending_the_ability_end_tasks() {
    let mut w = arena(WORKERS);
    let ping = tag(&w, "Event.Ping");
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let wdef = ab(&w, "Worker");
    plan(
        wdef,
        &[
            Act::Spawn(0, TaskSpec::Repeat { count: 0, every: 2 }),
            Act::Spawn(1, TaskSpec::WaitEvent { tag: ping, once: false }),
            Act::Spawn(2, TaskSpec::WaitFrames(100)),
        ],
    );
    // The behaviour ends the repeat from its own report at the second tick.
    on_task_plan(wdef, 0, Act::EndTask(0));
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    let (t0, t1, t2) = (spawned(worker, 0)[0], spawned(worker, 1)[0], spawned(worker, 2)[0]);
    let out = frame(&mut w, |_| {});
    assert!(tasks_ended(&out).is_empty());
    let out = frame(&mut w, |_| {});
    assert_eq!(tasks_ended(&out), vec![t0], "end_task from on_task");
    run_through(&mut w, 6);
    assert_eq!(task_reports(worker), vec![(2, 0, TaskEvent::Tick(1))]);
    // From outside.
    let out = frame(&mut w, |w| w.end_task(t1));
    assert_eq!(tasks_ended(&out), vec![t1]);
    let out = frame(&mut w, |w| w.send_event(hero, EventData::new(ping, hero, hero)));
    assert!(task_reports(worker).iter().all(|r| r.1 != 1), "an ended task never reports");
    assert_eq!(out.gameplay_events.len(), 1);
    // Ending the ability ends what is left, and a new activation's tasks are separate.
    let out = frame(&mut w, |w| w.end_ability(worker));
    assert_eq!(tasks_ended(&out), vec![t2]);
    assert_eq!(w.tasks_of(worker).count(), 0);
    frame(&mut w, |w| assert_eq!(w.try_activate(worker), ok(2)));
    assert_eq!(w.tasks_of(worker).count(), 3);
    assert!(w.tasks_of(worker).all(|(_, r)| r.activation_serial == 2));
}

#[test]
fn f_at_04_despawned_entities_are_safe_for_running_tasks() {
    let mut w = arena(WORKERS);
    let ping = tag(&w, "Event.Ping");
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let burn = handle(apply(&mut w, "Burn", hero, enemy));
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitEffectRemoved(burn)),
            Act::Spawn(1, TaskSpec::WaitEvent { tag: ping, once: false }),
            Act::Spawn(2, TaskSpec::Repeat { count: 0, every: 1 }),
        ],
    );
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    // The watched effect's target despawns: the effect is removed and the task reports it.
    let out = frame(&mut w, |w| w.despawn(enemy));
    assert!(task_reports(worker).contains(&(1, 0, TaskEvent::EffectRemoved(burn))));
    assert_eq!(tasks_ended(&out), vec![spawned(worker, 0)[0]]);
    // The owner despawns: its abilities end and are removed with their tasks.
    let (t1, t2) = (spawned(worker, 1)[0], spawned(worker, 2)[0]);
    let out = frame(&mut w, |w| w.despawn(hero));
    let wdef = ab(&w, "Worker");
    assert_eq!(
        out.ability_events,
        vec![
            AbilityEvent::TaskEnded { task: t1, ability: worker },
            AbilityEvent::TaskEnded { task: t2, ability: worker },
            AbilityEvent::Ended { handle: worker, def: wdef, was_cancelled: true },
            AbilityEvent::Removed { handle: worker, def: wdef },
        ]
    );
    assert!(!w.is_task_live(t1) && !w.is_task_live(t2));
    let reports = task_reports(worker).len();
    run_through(&mut w, 10);
    assert_eq!(task_reports(worker).len(), reports, "nothing reports after the despawn");
    // A new actor in the freed slot starts clean.
    let newcomer = actor(&mut w);
    assert_eq!(newcomer.index, hero.index);
    assert_eq!(w.abilities(newcomer).count(), 0);
    assert_eq!(w.tasks_of(worker).count(), 0);
}

// ---------------------------------------------------------------------------------------------
// F-AT-02 Built-in tasks
// ---------------------------------------------------------------------------------------------

/// A world with one `Worker` ability on `hero` whose activation spawns `tasks` (user ids 0..).
fn worker_world(tasks: &[TaskSpec]) -> (World<PadProbeGame>, Entity, AbilityHandle) {
    let mut w = arena(WORKERS);
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let acts: Vec<Act> = tasks.iter().enumerate().map(|(i, t)| Act::Spawn(i as u16, *t)).collect();
    plan(ab(&w, "Worker"), &acts);
    (w, hero, worker)
}

#[test]
fn f_at_02_wait_frames_finishes_in_p5_of_spawn_frame_plus_n() {
    let mut w = arena(
        r#"(abilities: {
            "Worker": (tags: ["Ability.Skill.Fire"], behaviour: "Script"),
            "Pressed": (tags: ["Ability.Skill.Ice"], input: 0, behaviour: "Script"),
        })"#,
    );
    let health = attr(&w, "Health");
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    let worker = grant(&mut w, hero, "Worker");
    let pressed = grant(&mut w, hero, "Pressed");
    let (wdef, pdef) = (ab(&w, "Worker"), ab(&w, "Pressed"));
    plan(wdef, &[Act::Spawn(0, TaskSpec::WaitFrames(5))]);
    on_task_plan(wdef, 0, Act::Apply(eff(&w, "Damage"), Entity::NONE));
    plan(pdef, &[Act::Spawn(0, TaskSpec::WaitFrames(3))]);
    run_through(&mut w, 9);
    // Spawned in P6 of frame 10.
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    let t = spawned(worker, 0)[0];
    let mut health_in_p6 = Vec::new();
    for f in 11..=15u32 {
        let out = frame(&mut w, |w| health_in_p6.push((f, w.attr(hero, health).unwrap())));
        assert_eq!(tasks_ended(&out), if f == 15 { vec![t] } else { vec![] }, "frame {f}");
    }
    assert_eq!(task_reports(worker), vec![(15, 0, TaskEvent::Finished)]);
    // The report (and the damage its handler applied) happened before P6 of frame 15.
    assert_eq!(health_in_p6.last(), Some(&(15, int(80))));
    assert_eq!(health_in_p6[3], (14, int(100)));
    // Spawned in P4 (an input activation) of frame 20: finishes in P5 of frame 23.
    run_through(&mut w, 19);
    frame_in(&mut w, &[pad(1)], |_| {});
    run_through(&mut w, 25);
    assert_eq!(task_reports(pressed), vec![(23, 0, TaskEvent::Finished)]);
}

#[test]
fn f_at_02_repeat_ticks_every_n_frames_then_finishes() {
    let (mut w, _, worker) = worker_world(&[
        TaskSpec::Repeat { count: 3, every: 4 },
        TaskSpec::Repeat { count: 0, every: 2 },
    ]);
    let mut ended_frames = Vec::new();
    for f in 0..=15u32 {
        let out = frame(&mut w, |w| {
            if f == 0 {
                w.try_activate(worker).unwrap();
            }
            if f == 7 {
                let t = spawned(worker, 1)[0];
                w.end_task(t);
            }
        });
        if !tasks_ended(&out).is_empty() {
            ended_frames.push(f);
        }
    }
    assert_eq!(
        task_reports(worker),
        vec![
            (2, 1, TaskEvent::Tick(1)),
            (4, 0, TaskEvent::Tick(1)),
            (4, 1, TaskEvent::Tick(2)),
            (6, 1, TaskEvent::Tick(3)),
            (8, 0, TaskEvent::Tick(2)),
            (12, 0, TaskEvent::Tick(3)),
            (12, 0, TaskEvent::Finished),
        ]
    );
    assert_eq!(ended_frames, vec![7, 12]);
}

#[test]
fn f_at_02_wait_event_once_and_many() {
    let mut w = arena(WORKERS);
    let (hit, heavy, ping) =
        (tag(&w, "Event.Hit"), tag(&w, "Event.Hit.Heavy"), tag(&w, "Event.Ping"));
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitEvent { tag: hit, once: true }),
            Act::Spawn(1, TaskSpec::WaitEvent { tag: hit, once: false }),
        ],
    );
    let e_heavy = EventData::new(heavy, enemy, hero).with_magnitude(int(3));
    let e_ping = EventData::new(ping, enemy, hero);
    let e_hit = EventData::new(hit, enemy, hero).with_magnitude(int(4));
    let mut ends = Vec::new();
    for f in 0..=5u32 {
        let out = frame(&mut w, |w| match f {
            0 => w.try_activate(worker).map(|_| ()).unwrap(),
            2 => w.send_event(hero, e_heavy),
            3 => w.send_event(hero, e_ping),
            4 => w.send_event(hero, e_hit),
            5 => w.send_event(enemy, e_hit),
            _ => {}
        });
        ends.extend(tasks_ended(&out).into_iter().map(|t| (f, t)));
    }
    assert_eq!(
        task_reports(worker),
        vec![
            (2, 0, TaskEvent::Event(e_heavy)),
            (2, 1, TaskEvent::Event(e_heavy)),
            (4, 1, TaskEvent::Event(e_hit)),
        ]
    );
    assert_eq!(ends, vec![(2, spawned(worker, 0)[0])], "once: ends after the first");
    assert!(w.is_task_live(spawned(worker, 1)[0]));
}

#[test]
fn f_at_02_wait_tag_added_and_removed_report_at_once_when_already_true() {
    let mut w = arena(WORKERS);
    let (ready, stunned) = (tag(&w, "State.Ready"), tag(&w, "State.Stunned"));
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    w.add_loose_tag(hero, ready);
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitTagAdded(ready)),
            Act::Spawn(1, TaskSpec::WaitTagRemoved(stunned)),
            Act::Spawn(2, TaskSpec::WaitTagAdded(stunned)),
            Act::Spawn(3, TaskSpec::WaitTagRemoved(ready)),
        ],
    );
    let mut ends = Vec::new();
    for f in 0..=8u32 {
        let out = frame(&mut w, |w| match f {
            1 => w.try_activate(worker).map(|_| ()).unwrap(),
            5 => w.add_loose_tag(hero, stunned),
            7 => w.remove_loose_tag(hero, ready),
            _ => {}
        });
        ends.extend(tasks_ended(&out).into_iter().map(|t| (f, t)));
    }
    assert_eq!(
        task_reports(worker),
        vec![
            (1, 0, TaskEvent::Tag(true)),
            (1, 1, TaskEvent::Tag(false)),
            (5, 2, TaskEvent::Tag(true)),
            (7, 3, TaskEvent::Tag(false)),
        ]
    );
    let s = |u| spawned(worker, u)[0];
    assert_eq!(ends, vec![(1, s(0)), (1, s(1)), (5, s(2)), (7, s(3))]);
}

#[test]
fn f_at_02_wait_tag_query_reports_when_the_outcome_is_reached() {
    let mut w = arena(WORKERS);
    let (ready, stunned) = (tag(&w, "State.Ready"), tag(&w, "State.Stunned"));
    let hero = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let wdef = ab(&w, "Worker");
    plan(
        wdef,
        &[Act::Spawn(
            0,
            TaskSpec::WaitTagQuery { all: Some(ready), none: Some(stunned), when: true },
        )],
    );
    for f in 0..=10u32 {
        frame(&mut w, |w| match f {
            0 => w.try_activate(worker).map(|_| ()).unwrap(),
            3 => w.add_loose_tag(hero, stunned),
            4 => w.add_loose_tag(hero, ready),
            6 => w.remove_loose_tag(hero, stunned),
            7 => {
                // A query already false when spawned waits for... false: reported at once;
                // one already true waits for the change.
                plan(
                    wdef,
                    &[
                        Act::Spawn(
                            1,
                            TaskSpec::WaitTagQuery { all: Some(ready), none: None, when: false },
                        ),
                        Act::Spawn(
                            2,
                            TaskSpec::WaitTagQuery { all: None, none: Some(stunned), when: false },
                        ),
                    ],
                );
                w.end_ability(worker);
                w.try_activate(worker).map(|_| ()).unwrap();
            }
            9 => w.remove_loose_tag(hero, ready),
            _ => {}
        });
    }
    assert_eq!(
        task_reports(worker),
        vec![(6, 0, TaskEvent::Query(true)), (9, 1, TaskEvent::Query(false))]
    );
    assert!(w.is_task_live(spawned(worker, 2)[0]), "Stunned never came back");
}

#[test]
fn f_at_02_wait_attribute_reports_when_the_comparison_holds() {
    let mut w = arena(WORKERS);
    let (health, mana) = (attr(&w, "Health"), attr(&w, "Mana"));
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(
                0,
                TaskSpec::WaitAttribute { attr: health, cmp: AttrCmp::Lt, value: int(50) },
            ),
            Act::Spawn(1, TaskSpec::WaitAttribute { attr: mana, cmp: AttrCmp::Ge, value: int(50) }),
            Act::Spawn(2, TaskSpec::WaitAttribute { attr: mana, cmp: AttrCmp::Eq, value: int(7) }),
        ],
    );
    for f in 0..=6u32 {
        frame(&mut w, |w| match f {
            1 => w.try_activate(worker).map(|_| ()).unwrap(),
            3 => {
                apply(w, "Damage", enemy, hero);
            }
            4 => w.set_base(hero, health, int(40)),
            5 => w.set_base(hero, mana, int(8)),
            6 => w.set_base(hero, mana, int(7)),
            _ => {}
        });
    }
    assert_eq!(w.attr(hero, health), Some(int(40)));
    assert_eq!(
        task_reports(worker),
        vec![
            (1, 1, TaskEvent::Attribute(int(50))),
            (4, 0, TaskEvent::Attribute(int(40))),
            (6, 2, TaskEvent::Attribute(int(7))),
        ]
    );
    assert_eq!(w.tasks_of(worker).count(), 0, "each reports once");
}

#[test]
fn f_at_02_wait_input_reports_the_next_edge_once() {
    let mut w = arena(
        r#"(abilities: { "Charge": (tags: ["Ability.Skill.Fire"], input: 0, behaviour: "Script") })"#,
    );
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    let charge = grant(&mut w, hero, "Charge");
    plan(
        ab(&w, "Charge"),
        &[
            Act::Spawn(0, TaskSpec::WaitInput(InputEdge::Released)),
            Act::Spawn(1, TaskSpec::WaitInput(InputEdge::Pressed)),
        ],
    );
    let mut ends = Vec::new();
    for (f, bits) in [1u16, 1, 0, 1, 0, 1, 0].iter().enumerate() {
        let out = frame_in(&mut w, &[pad(*bits)], |_| {});
        ends.extend(tasks_ended(&out).into_iter().map(|t| (f as u32, t)));
    }
    assert_eq!(
        task_reports(charge),
        vec![
            (2, 0, TaskEvent::Input(InputEdge::Released)),
            (3, 1, TaskEvent::Input(InputEdge::Pressed))
        ],
        "each task reports the next edge of its kind, once"
    );
    assert_eq!(ends, vec![(2, spawned(charge, 0)[0]), (3, spawned(charge, 1)[0])]);
}

#[test]
fn f_at_02_wait_confirm_cancel_reports_once() {
    let (mut w, hero, worker) = worker_world(&[TaskSpec::WaitConfirmCancel]);
    w.bind_player(0, hero);
    let mut ends = Vec::new();
    for (f, bits) in [0u16, CONFIRM, 0, CONFIRM, CANCEL].iter().enumerate() {
        let out = frame_in(&mut w, &[pad(*bits)], |w| {
            if f == 0 {
                w.try_activate(worker).unwrap();
            }
        });
        ends.extend(tasks_ended(&out).into_iter().map(|t| (f as u32, t)));
    }
    assert_eq!(task_reports(worker), vec![(1, 0, TaskEvent::Confirmed)]);
    assert_eq!(ends, vec![(1, spawned(worker, 0)[0])]);
    // A cancel-first task.
    let (mut w, hero, worker) = worker_world(&[TaskSpec::WaitConfirmCancel]);
    w.bind_player(0, hero);
    frame_in(&mut w, &[pad(0)], |w| w.try_activate(worker).map(|_| ()).unwrap());
    frame_in(&mut w, &[pad(CANCEL)], |_| {});
    frame_in(&mut w, &[pad(CONFIRM)], |_| {});
    assert_eq!(task_reports(worker), vec![(1, 0, TaskEvent::Cancelled)]);
}

#[test]
fn f_at_02_wait_effect_added_removed_and_stack_change() {
    let mut w = arena(WORKERS);
    let burning = tag(&w, "State.Burning");
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    let helper = grant(&mut w, hero, "Helper");
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitEffectAdded(Some(burning))),
            Act::Spawn(1, TaskSpec::WaitEffectAdded(None)),
        ],
    );
    let mut burn = EffectHandle::NONE;
    let mut buff = EffectHandle::NONE;
    for f in 0..=9u32 {
        frame(&mut w, |w| match f {
            0 => w.try_activate(worker).map(|_| ()).unwrap(),
            1 => {
                apply(w, "Heal", enemy, hero);
            }
            2 => buff = handle(apply(w, "Buff", enemy, hero)),
            3 => burn = handle(apply(w, "Burn", enemy, hero)),
            4 => {
                let hdef = ab(w, "Helper");
                plan(
                    hdef,
                    &[
                        Act::Spawn(0, TaskSpec::WaitEffectRemoved(burn)),
                        Act::Spawn(1, TaskSpec::WaitStackChange(burn)),
                        Act::Spawn(2, TaskSpec::WaitEffectRemoved(buff)),
                    ],
                );
                w.try_activate(helper).map(|_| ()).unwrap();
            }
            5 | 6 => {
                apply(w, "Burn", enemy, hero);
            }
            8 => w.remove_effect(burn),
            _ => {}
        });
    }
    assert_eq!(
        task_reports(worker),
        vec![(2, 1, TaskEvent::EffectAdded(buff)), (3, 0, TaskEvent::EffectAdded(burn))],
        "instant effects are never added; the tag filter applies"
    );
    assert_eq!(
        task_reports(helper),
        vec![
            (5, 1, TaskEvent::StackChanged { old: 1, new: 2 }),
            (6, 1, TaskEvent::StackChanged { old: 2, new: 3 }),
            (8, 0, TaskEvent::EffectRemoved(burn)),
            (8, 1, TaskEvent::EffectRemoved(burn)),
        ]
    );
    // Buff expires at frame 2 + 40.
    run_through(&mut w, 42);
    assert_eq!(task_reports(helper).last(), Some(&(42, 2, TaskEvent::EffectRemoved(buff))));
    assert_eq!(w.tasks_of(helper).count(), 0);
}

#[test]
fn f_at_02_wait_damage_reports_executions_lowering_the_attribute() {
    let mut w = arena(
        r#"(
        effects: { "Bleed": (duration: Frames(20), period: Frames(5),
                             modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -3))]) },
        abilities: { "Worker": (tags: ["Ability.Skill.Fire"], behaviour: "Script") },
    )"#,
    );
    let health = attr(&w, "Health");
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let other = actor(&mut w);
    let worker = grant(&mut w, hero, "Worker");
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(0, TaskSpec::WaitDamage { attr: health, once: false }),
            Act::Spawn(1, TaskSpec::WaitDamage { attr: health, once: true }),
        ],
    );
    for f in 0..=12u32 {
        frame(&mut w, |w| match f {
            0 => w.try_activate(worker).map(|_| ()).unwrap(),
            2 => {
                apply(w, "Damage", enemy, hero);
            }
            3 => {
                apply(w, "Heal", enemy, hero);
            }
            4 => {
                apply(w, "Damage", other, hero);
                apply(w, "Damage", hero, enemy);
            }
            6 => {
                apply(w, "Bleed", other, hero);
            }
            _ => {}
        });
    }
    assert_eq!(
        task_reports(worker),
        vec![
            (2, 0, TaskEvent::Damaged { amount: int(20), instigator: enemy }),
            (2, 1, TaskEvent::Damaged { amount: int(20), instigator: enemy }),
            (4, 0, TaskEvent::Damaged { amount: int(20), instigator: other }),
            (11, 0, TaskEvent::Damaged { amount: int(3), instigator: other }),
        ]
    );
    assert_eq!(w.attr(hero, health), Some(int(100 - 20 + 5 - 20 - 3)));
}

// ---------------------------------------------------------------------------------------------
// F-AT-02 Timelines and end_after
// ---------------------------------------------------------------------------------------------

const TIMELINES: &str = r#"(
    timelines: {
        "Punch": (startup: 3, active: 2, recovery: 4,
                  startup_tag: "Phase.Startup", active_tag: "Phase.Active",
                  recovery_tag: "Phase.Recovery",
                  notifies: [(frame: 6, event: "Event.Sound"), (frame: 3, event: "Event.Hitbox")],
                  windows: [(from: 5, to: 8, tag: "Cancel.Window.Light")]),
        "Flurry": (startup: 1, active: 7, recovery: 1,
                   notifies: [(frame: 8, event: "Event.Sound")]),
    },
    abilities: {
        "Jab": (tags: ["Ability.Skill.Jab"], timeline: "Punch", input: 0),
        "Follow": (tags: ["Ability.Skill.Fire"], activation_required_tags: ["Cancel.Window.Light"],
                   cancel_abilities_with_tags: ["Ability.Skill.Jab"], end_after: Frames(2)),
        "Player": (tags: ["Ability.Skill.Ice"], behaviour: "Script"),
        "Timed": (tags: ["Ability.Skill.Spark"], end_after: Frames(10)),
        "TimedSec": (tags: ["Ability.Guard"], end_after: Seconds(0.25)),
    },
)"#;

/// Per frame: which of the phase and window tags the owner has, as a 4-char string.
fn phases(w: &World<PadProbeGame>, e: Entity) -> String {
    ["Phase.Startup", "Phase.Active", "Phase.Recovery", "Cancel.Window.Light"]
        .iter()
        .zip(['S', 'A', 'R', 'W'])
        .map(|(n, c)| if w.has_tag(e, tag(w, n)) { c } else { '.' })
        .collect()
}

#[test]
fn f_at_02_play_timeline_phases_notifies_windows_and_end() {
    let mut w = arena(TIMELINES);
    let (hitbox, sound) = (tag(&w, "Event.Hitbox"), tag(&w, "Event.Sound"));
    let punch = w.content().timeline("Punch").unwrap();
    let tl = w.content().timeline_defs()[punch.index()].clone();
    assert_eq!((tl.frames, tl.startup, tl.active), (9, 3, 2));
    assert_eq!(tl.notifies, vec![(3, hitbox), (6, sound)], "sorted by frame");
    assert_eq!(tl.windows.len(), 4, "three phase tags and one window");
    let hero = actor(&mut w);
    let jab = grant(&mut w, hero, "Jab");
    run_through(&mut w, 9);
    let mut seen = Vec::new();
    let mut notified = Vec::new();
    let mut end_frames = Vec::new();
    for f in 10..=22u32 {
        let out = frame(&mut w, |w| {
            if f == 10 {
                assert_eq!(w.try_activate(jab), ok(1));
            }
        });
        seen.push(phases(&w, hero));
        notified.extend(
            out.gameplay_events.iter().map(|g| (g.frame, g.to, g.data.tag, g.data.instigator)),
        );
        for (h, c) in ended(&out) {
            end_frames.push((f, h, c, tasks_ended(&out).len()));
        }
        assert_eq!(w.is_ability_active(jab), f < 19, "frame {f}");
    }
    assert_eq!(
        seen,
        vec![
            "S...", "S...", "S...", // 10–12 startup
            ".A..", ".A..", // 13–14 active
            "..RW", "..RW", "..RW", "..R.", // 15–18 recovery, window 15–17
            "....", "....", "....", "....",
        ]
    );
    assert_eq!(notified, vec![(13, hero, hitbox, hero), (16, hero, sound, hero)]);
    assert_eq!(end_frames, vec![(19, jab, false, 1)], "a data-only timeline ability ends itself");
}

#[test]
fn f_at_02_timeline_window_tags_go_when_the_ability_is_cancelled() {
    let mut w = arena(TIMELINES);
    let sound = tag(&w, "Event.Sound");
    let hero = actor(&mut w);
    let jab = grant(&mut w, hero, "Jab");
    let mut seen = Vec::new();
    let mut notified = Vec::new();
    let mut tag_changes_after = 0;
    for f in 0..=15u32 {
        let out = frame(&mut w, |w| match f {
            0 => assert_eq!(w.try_activate(jab), ok(1)),
            6 => w.cancel_ability(jab),
            _ => {}
        });
        seen.push(phases(&w, hero));
        notified.extend(out.gameplay_events.iter().map(|g| (g.frame, g.data.tag)));
        if f == 6 {
            assert_eq!(ended(&out), vec![(jab, true)]);
            assert_eq!(tasks_ended(&out).len(), 1);
            assert!(
                !out.ability_events
                    .iter()
                    .any(|e| matches!(e, AbilityEvent::Ended { was_cancelled: false, .. }))
            );
        }
        if f > 6 {
            tag_changes_after += out.tag_events.len();
        }
    }
    assert_eq!(&seen[4..8], &[".A..", "..RW", "....", "...."]);
    assert_eq!(notified.last(), Some(&(6, sound)), "frame 6 was entered in P5 before the cancel");
    assert_eq!(tag_changes_after, 0, "nothing happens after the cancel");
    assert_eq!(w.tag_count(hero, tag(&w, "Phase")), 0);
}

#[test]
fn f_at_02_cancel_window_tags_gate_a_follow_up_move() {
    let mut w = arena(TIMELINES);
    let hero = actor(&mut w);
    let jab = grant(&mut w, hero, "Jab");
    let follow = grant(&mut w, hero, "Follow");
    let mut results = Vec::new();
    for f in 0..=8u32 {
        let out = frame(&mut w, |w| {
            if f == 0 {
                w.try_activate(jab).unwrap();
            }
            if f == 3 || f == 5 {
                results.push((f, w.try_activate(follow)));
            }
        });
        if f == 5 {
            assert_eq!(ended(&out), vec![(jab, true)]);
            assert_eq!(phases(&w, hero), "....", "the cancelled move's window closed");
        }
    }
    assert_eq!(results, vec![(3, Err(ActivationFailure::MissingTags)), (5, ok(1))]);
    assert!(!w.is_ability_active(follow), "Follow ended after 2 frames");
}

#[test]
fn f_at_02_play_timeline_task_at_rate_two_reports_notifies_and_end() {
    let mut w = arena(TIMELINES);
    let (hitbox, sound) = (tag(&w, "Event.Hitbox"), tag(&w, "Event.Sound"));
    let punch = w.content().timeline("Punch").unwrap();
    let hero = actor(&mut w);
    let player = grant(&mut w, hero, "Player");
    plan(
        ab(&w, "Player"),
        &[Act::Spawn(4, TaskSpec::PlayTimeline { timeline: punch, rate: int(2) })],
    );
    let mut seen = Vec::new();
    let mut ends = Vec::new();
    for f in 0..=7u32 {
        let out = frame(&mut w, |w| {
            if f == 0 {
                w.try_activate(player).unwrap();
            }
        });
        seen.push(phases(&w, hero));
        ends.extend(tasks_ended(&out).into_iter().map(|_| f));
    }
    assert_eq!(
        task_reports(player),
        vec![
            (2, 4, TaskEvent::Notify(hitbox)),
            (3, 4, TaskEvent::Notify(sound)),
            (5, 4, TaskEvent::TimelineEnded)
        ]
    );
    // Timeline frames 0 | 1–2 | 3–4 | 5–6 | 7–8 | 9 (the window closes entering frame 8).
    assert_eq!(seen, vec!["S...", "S...", ".A..", "..RW", "..R.", "....", "....", "...."]);
    assert_eq!(ends, vec![5]);
    assert!(w.is_ability_active(player), "a behaviour's timeline does not end its ability");
}

#[test]
fn f_at_02_play_timeline_reports_a_notify_and_the_end_of_the_same_step() {
    let mut w = arena(TIMELINES);
    let sound = tag(&w, "Event.Sound");
    let flurry = w.content().timeline("Flurry").unwrap();
    let hero = actor(&mut w);
    let player = grant(&mut w, hero, "Player");
    // Rate 3 over 9 frames: frames 7–9 are entered in one step, the notify at 8 included.
    plan(
        ab(&w, "Player"),
        &[Act::Spawn(0, TaskSpec::PlayTimeline { timeline: flurry, rate: int(3) })],
    );
    frame(&mut w, |w| w.try_activate(player).map(|_| ()).unwrap());
    run_through(&mut w, 5);
    assert_eq!(
        task_reports(player),
        vec![(3, 0, TaskEvent::Notify(sound)), (3, 0, TaskEvent::TimelineEnded)]
    );
}

#[test]
fn f_at_02_end_after_ends_the_ability_normally() {
    let mut w = arena(TIMELINES);
    let hero = actor(&mut w);
    let timed = grant(&mut w, hero, "Timed");
    let timed_sec = grant(&mut w, hero, "TimedSec");
    let mut ends = Vec::new();
    for f in 0..=20u32 {
        let out = frame(&mut w, |w| {
            if f == 2 {
                w.try_activate(timed).unwrap();
                w.try_activate(timed_sec).unwrap();
            }
        });
        ends.extend(ended(&out).into_iter().map(|(h, c)| (f, h, c)));
    }
    assert_eq!(ends, vec![(12, timed, false), (17, timed_sec, false)], "10 frames; 0.25 s = 15");
    assert_eq!(w.content().ability_def(ab(&w, "TimedSec")).end_after, Some(15));
}

// ---------------------------------------------------------------------------------------------
// F-AT-05 Root motion
// ---------------------------------------------------------------------------------------------

#[test]
fn f_at_05_root_motion_moves_the_avatar_by_curve_deltas() {
    let mut w = arena(WORKERS);
    let curve = w.content().curve("DashCurve").unwrap();
    let hero = actor(&mut w);
    let body = w.spawn().unwrap();
    w.set_avatar(hero, body);
    let worker = grant(&mut w, hero, "Worker");
    plan(
        ab(&w, "Worker"),
        &[Act::Spawn(0, TaskSpec::RootMotion { curve, frames: 5, dir: [int(1), int(-2)] })],
    );
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    run_through(&mut w, 8);
    let moves = MOTION.with(|m| m.borrow().clone());
    let c = w.content().curve_defs()[curve.index()].clone();
    let expected: Vec<(u32, Entity, [Fx; 2])> = (1..=5u16)
        .map(|k| {
            let d = rollback_abilities::num::sub(c.eval(k), c.eval(k - 1));
            (u32::from(k), body, [d, d * -2])
        })
        .collect();
    assert_eq!(moves, expected, "one step per frame, to the avatar");
    assert_eq!(moves[0].2, [int(15), int(-30)]);
    let total = moves.iter().fold([Fx::ZERO; 2], |a, m| [a[0] + m.2[0], a[1] + m.2[1]]);
    assert_eq!(total, [int(45), int(-90)], "the deltas sum to the curve's total");
    assert_eq!(w.component(body).unwrap().pos, [int(45).to_bits(), int(-90).to_bits()]);
    assert_eq!(w.component(hero).unwrap().pos, [0, 0]);
    assert_eq!(task_reports(worker), vec![(5, 0, TaskEvent::Finished)]);
}

// ---------------------------------------------------------------------------------------------
// F-TGT-01 … F-TGT-03 Targeting
// ---------------------------------------------------------------------------------------------

fn ent(index: u32) -> Entity {
    Entity { index, generation: 1 }
}

#[test]
fn f_tgt_01_target_data_constructors_and_views() {
    let p = [int(1), int(2), int(3)];
    let n = [Fx::ZERO, Fx::ONE, Fx::ZERO];
    assert_eq!(TargetData::NONE.view(), TargetView::None);
    assert_eq!(TargetData::default().view(), TargetView::None);
    assert_eq!(TargetData::NONE.first_entity(), None);
    let one = TargetData::entity(ent(3));
    assert_eq!(one.view(), TargetView::Entity(ent(3)));
    assert_eq!(one.first_entity(), Some(ent(3)));
    let many = TargetData::entities(&[ent(1), ent(2), ent(3), ent(4), ent(5)]);
    assert_eq!(many.count, 4, "the data holds four");
    assert_eq!(many.total(), 5, "and says how many it was made from");
    assert!(many.is_longer_than_inline());
    assert_eq!(many.view(), TargetView::Entities(&[ent(1), ent(2), ent(3), ent(4)]));
    assert_eq!(many.first_entity(), Some(ent(1)));
    assert_eq!(TargetData::entities(&[]).view(), TargetView::Entities(&[]));
    assert_eq!(TargetData::entities(&[]).first_entity(), None);
    let hit = TargetData::hit(ent(2), p, n, 0xDEAD);
    assert_eq!(hit.view(), TargetView::Hit { entity: ent(2), point: p, normal: n, part: 0xDEAD });
    assert_eq!(hit.first_entity(), Some(ent(2)));
    let loc = TargetData::location(n, p);
    assert_eq!(loc.view(), TargetView::Location { source: n, target: p });
    assert_eq!(loc.first_entity(), None);
    let bytes = [7u8; 16];
    let custom = TargetData::custom(12, bytes);
    assert_eq!(custom.view(), TargetView::Custom { kind: 12, bytes: &bytes });
    assert_eq!(custom.first_entity(), None);
    // Plain data: the same bytes give the same value.
    let copy: TargetData = bytemuck::pod_read_unaligned(bytemuck::bytes_of(&hit));
    assert_eq!(copy, hit);
    assert_ne!(bytemuck::bytes_of(&hit), bytemuck::bytes_of(&loc));
}

/// A world of four actors (hero first) with one `Worker` on the hero, bound to `player`.
fn targeting_world(player: usize) -> (World<PadProbeGame>, [Entity; 4], AbilityHandle) {
    let mut w = build(WORKERS, WorldConfig { players: 2, ..WorldConfig::default() });
    let es = [actor(&mut w), actor(&mut w), actor(&mut w), actor(&mut w)];
    w.spawn().unwrap();
    w.bind_player(player, es[0]);
    let worker = grant(&mut w, es[0], "Worker");
    (w, es, worker)
}

fn target_reports(h: AbilityHandle) -> Vec<(u32, u16, TaskEvent)> {
    task_reports(h)
}

#[test]
fn f_tgt_02_instant_targeting_queries_at_once_with_the_quantised_aim() {
    let (mut w, es, worker) = targeting_world(1);
    let q = TargetQuery::new(int(10), int(1), 4);
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(
                0,
                TaskSpec::WaitTargetData { confirmation: Confirmation::Instant, query: q },
            ),
            Act::Spawn(
                1,
                TaskSpec::WaitTargetData {
                    confirmation: Confirmation::Instant,
                    query: q.shaped(2, 0),
                },
            ),
        ],
    );
    let aimed = Pad { bits: 0, aim: [16384, -32768] };
    let out = frame_in(&mut w, &[pad(0), aimed], |w| w.try_activate(worker).map(|_| ()).unwrap());
    let aim = [rollback_abilities::num::div(int(16384), int(32767), Fx::ZERO), int(-1)];
    let queries = QUERIES.with(|x| x.borrow().clone());
    assert_eq!(queries.len(), 2);
    assert_eq!(queries[0], (es[0], es[0], aim, q), "player 1's aim, clamped to ±32767");
    assert!(aim[0] > crate::common::fx("0.5") && aim[0] < crate::common::fx("0.50002"));
    assert_eq!(
        target_reports(worker),
        vec![
            (0, 0, TaskEvent::TargetData(TargetData::entities(&[es[1], es[2], es[3]]))),
            (
                0,
                1,
                TaskEvent::TargetData(TargetData::hit(
                    es[3],
                    [aim[0], aim[1], Fx::ZERO],
                    [Fx::ZERO, Fx::ZERO, Fx::ONE],
                    7
                ))
            ),
        ]
    );
    assert_eq!(tasks_ended(&out).len(), 2, "instant targeting ends with its report");
}

#[test]
fn f_tgt_02_user_confirmed_targeting_reports_once_on_confirm() {
    let (mut w, es, worker) = targeting_world(0);
    let q = TargetQuery::new(int(10), int(1), 4);
    plan(
        ab(&w, "Worker"),
        &[Act::Spawn(
            0,
            TaskSpec::WaitTargetData { confirmation: Confirmation::UserConfirmed, query: q },
        )],
    );
    let mut ends = Vec::new();
    let inputs = [0u16, 0, CONFIRM, 0, CONFIRM, CANCEL];
    for (f, bits) in inputs.iter().enumerate() {
        let input = Pad { bits: *bits, aim: [0, 32767] };
        let out = frame_in(&mut w, &[input], |w| {
            if f == 0 {
                w.try_activate(worker).unwrap();
            }
        });
        ends.extend(tasks_ended(&out).into_iter().map(|_| f as u32));
    }
    let reports = target_reports(worker);
    assert_eq!(
        reports.first(),
        Some(&(2, 0, TaskEvent::TargetData(TargetData::entities(&[es[1], es[2], es[3]])))),
        "nothing before the confirm"
    );
    let queries = QUERIES.with(|x| x.borrow().clone());
    assert_eq!(queries[0].2, [Fx::ZERO, Fx::ONE]);
    assert_eq!(ends, vec![2], "the task ends with its confirmed data");
    assert_eq!(reports.len(), 1, "later confirm/cancel inputs reach nothing: {reports:?}");
    // Cancel before confirming.
    let (mut w, _, worker) = targeting_world(0);
    plan(
        ab(&w, "Worker"),
        &[Act::Spawn(
            0,
            TaskSpec::WaitTargetData { confirmation: Confirmation::UserConfirmed, query: q },
        )],
    );
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    let out = frame_in(&mut w, &[pad(CANCEL)], |_| {});
    assert_eq!(target_reports(worker), vec![(1, 0, TaskEvent::TargetCancelled)]);
    assert_eq!(tasks_ended(&out).len(), 1, "a cancelled targeting task ends");
}

#[test]
fn f_tgt_02_custom_multi_reports_every_confirm_until_cancel() {
    let (mut w, es, worker) = targeting_world(0);
    let q = TargetQuery::new(int(10), int(1), 2);
    plan(
        ab(&w, "Worker"),
        &[Act::Spawn(
            0,
            TaskSpec::WaitTargetData { confirmation: Confirmation::CustomMulti, query: q },
        )],
    );
    let mut ends = Vec::new();
    let inputs = [0u16, 0, CONFIRM, 0, CONFIRM, 0, CANCEL, 0, CONFIRM];
    for (f, bits) in inputs.iter().enumerate() {
        let out = frame_in(&mut w, &[pad(*bits)], |w| {
            if f == 0 {
                w.try_activate(worker).unwrap();
            }
        });
        ends.extend(tasks_ended(&out).into_iter().map(|_| f as u32));
    }
    let data = TaskEvent::TargetData(TargetData::entities(&[es[1], es[2]]));
    let reports = target_reports(worker);
    assert_eq!(&reports[..3], &[(2, 0, data), (4, 0, data), (6, 0, TaskEvent::TargetCancelled)]);
    assert_eq!(ends, vec![6], "cancel ends multi-targeting");
    assert_eq!(reports.len(), 3, "{reports:?}");
}

#[test]
fn f_tgt_03_filters_exclude_self_require_tags_game_filter_and_limit() {
    let (mut w, es, worker) = targeting_world(0);
    let targetable = tag(&w, "Targetable");
    w.add_loose_tag(es[2], targetable);
    w.add_loose_tag(es[3], targetable);
    let base = TargetQuery::new(int(10), int(1), 4);
    let mut with_self = base;
    with_self.exclude_self = 0;
    let mut single_with_self = base.shaped(1, 0);
    single_with_self.exclude_self = 0;
    let queries = [
        base,
        with_self,
        base.requiring(targetable),
        base.shaped(0, 7),
        TargetQuery::new(int(10), int(1), 1),
        base.shaped(1, 0),
        single_with_self,
        base.shaped(9, 0),
    ];
    let acts: Vec<Act> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            Act::Spawn(
                i as u16,
                TaskSpec::WaitTargetData { confirmation: Confirmation::Instant, query: *q },
            )
        })
        .collect();
    plan(ab(&w, "Worker"), &acts);
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    let got: Vec<TargetData> = target_reports(worker)
        .into_iter()
        .map(|r| match r.2 {
            TaskEvent::TargetData(t) => t,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        vec![
            TargetData::entities(&[es[1], es[2], es[3]]),
            TargetData::entities(&[es[0], es[1], es[2], es[3]]),
            TargetData::entities(&[es[2], es[3]]),
            TargetData::entities(&[es[1], es[3]]),
            TargetData::entities(&[es[1]]),
            TargetData::NONE,
            TargetData::entity(es[0]),
            TargetData::NONE,
        ]
    );
    // The avatar counts as self too.
    plan(
        ab(&w, "Worker"),
        &[Act::Spawn(
            0,
            TaskSpec::WaitTargetData { confirmation: Confirmation::Instant, query: base },
        )],
    );
    frame(&mut w, |w| {
        w.end_ability(worker);
        w.set_avatar(es[0], es[1]);
        w.try_activate(worker).map(|_| ()).unwrap();
    });
    assert_eq!(
        task_reports(worker).last().map(|r| r.2),
        Some(TaskEvent::TargetData(TargetData::entities(&[es[2], es[3]])))
    );
    assert_eq!(QUERIES.with(|q| q.borrow().last().map(|x| (x.0, x.1))), Some((es[0], es[1])));
}

#[test]
fn f_tgt_03_persistent_targeting_keeps_the_last_valid_target() {
    for persistent in [true, false] {
        let (mut w, es, worker) = targeting_world(0);
        let targetable = tag(&w, "Targetable");
        w.add_loose_tag(es[2], targetable);
        let mut q = TargetQuery::new(int(10), int(1), 4).requiring(targetable);
        if persistent {
            q = q.persistent();
        }
        plan(
            ab(&w, "Worker"),
            &[Act::Spawn(
                0,
                TaskSpec::WaitTargetData { confirmation: Confirmation::CustomMulti, query: q },
            )],
        );
        for (f, bits) in [0u16, CONFIRM, 0, CONFIRM, 0, CONFIRM].iter().enumerate() {
            frame_in(&mut w, &[pad(*bits)], |w| match f {
                0 => w.try_activate(worker).map(|_| ()).unwrap(),
                2 => w.remove_loose_tag(es[2], targetable),
                4 => w.despawn(es[2]),
                _ => {}
            });
        }
        let got: Vec<(u32, TaskEvent)> =
            target_reports(worker).into_iter().map(|r| (r.0, r.2)).collect();
        let first = TaskEvent::TargetData(TargetData::entities(&[es[2]]));
        let empty = TaskEvent::TargetData(TargetData::entities(&[]));
        let kept =
            if persistent { TaskEvent::TargetData(TargetData::entity(es[2])) } else { empty };
        assert_eq!(got, vec![(1, first), (3, kept), (5, empty)], "persistent: {persistent}");
    }
}

// ---------------------------------------------------------------------------------------------
// F-REC-04 Shared randomness
// ---------------------------------------------------------------------------------------------

fn dice_run(seed: u64, frames: u32) -> (World<PadProbeGame>, AbilityHandle, Vec<Rec>) {
    let mut w = build(
        r#"(abilities: { "Dice": (tags: ["Ability.Skill.Fire"], behaviour: "Script") })"#,
        WorldConfig { seed, ..WorldConfig::default() },
    );
    let hero = actor(&mut w);
    let dice = grant(&mut w, hero, "Dice");
    let d = ab(&w, "Dice");
    plan(d, &[Act::Random, Act::Spawn(0, TaskSpec::WaitFrames(1))]);
    on_task_plan(d, 0, Act::Random);
    on_task_plan(d, 0, Act::End);
    for f in 0..frames {
        frame(&mut w, |w| {
            if f.is_multiple_of(3) {
                w.try_activate(dice).unwrap();
            }
        });
    }
    let draws = log().into_iter().filter(|r| matches!(r, Rec::Random { .. })).collect();
    (w, dice, draws)
}

#[test]
fn f_rec_04_activation_random_streams_are_shared_and_per_activation() {
    let (w1, dice, a) = dice_run(7, 8);
    let (w2, _, b) = dice_run(7, 8);
    assert_eq!(a.len(), 6, "two draws per activation, three activations");
    assert_eq!(a, b, "identical worlds draw identical numbers");
    assert_eq!(w1.checksum(), w2.checksum());
    let draws: Vec<[u32; 3]> = a
        .iter()
        .map(|r| match r {
            Rec::Random { draws, unit, chance, h, .. } => {
                assert_eq!(*h, dice);
                assert!(draws[2] < 100);
                assert!(*unit >= Fx::ZERO && *unit < Fx::ONE);
                assert!(*chance, "chance(1) always succeeds");
                *draws
            }
            _ => unreachable!(),
        })
        .collect();
    let serials: Vec<u32> = a
        .iter()
        .map(|r| match r {
            Rec::Random { serial, .. } => *serial,
            _ => 0,
        })
        .collect();
    assert_eq!(serials, vec![1, 1, 2, 2, 3, 3]);
    // Activations differ, and a stream continues across frames within one activation.
    for i in 0..draws.len() {
        for j in i + 1..draws.len() {
            assert_ne!(draws[i], draws[j], "draw sets {i} and {j}");
        }
    }
    let (_, _, c) = dice_run(8, 8);
    assert_ne!(a, c, "another session seed, other numbers");
}

#[test]
fn f_rec_04_a_rollback_reproduces_the_same_draws() {
    let (mut w, dice, _) = dice_run(99, 2);
    let snap = w.snapshot();
    let mut first = Vec::new();
    for f in 2..8u32 {
        frame(&mut w, |w| {
            if f.is_multiple_of(3) {
                w.try_activate(dice).unwrap();
            }
        });
        first.push(w.checksum());
    }
    let draws_first: Vec<Rec> = log()
        .into_iter()
        .filter(|r| matches!(r, Rec::Random { serial, .. } if *serial > 1))
        .collect();
    assert_eq!(draws_first.len(), 4);
    LOG.with(|l| l.borrow_mut().clear());
    w.load(&snap).unwrap();
    let mut second = Vec::new();
    for f in 2..8u32 {
        frame(&mut w, |w| {
            if f.is_multiple_of(3) {
                w.try_activate(dice).unwrap();
            }
        });
        second.push(w.checksum());
    }
    let draws_second: Vec<Rec> =
        log().into_iter().filter(|r| matches!(r, Rec::Random { .. })).collect();
    assert_eq!(draws_second, draws_first);
    assert_eq!(second, first);
}

// ---------------------------------------------------------------------------------------------
// Rollback through running abilities, tasks and timelines
// ---------------------------------------------------------------------------------------------

const BATTLE: &str = r#"(
    timelines: {
        "Punch": (startup: 3, active: 2, recovery: 4,
                  startup_tag: "Phase.Startup", active_tag: "Phase.Active",
                  recovery_tag: "Phase.Recovery",
                  notifies: [(frame: 3, event: "Event.Hitbox"), (frame: 6, event: "Event.Sound")],
                  windows: [(from: 5, to: 8, tag: "Cancel.Window.Light")]),
    },
    abilities: {
        "Jab": (tags: ["Ability.Skill.Jab"], timeline: "Punch", input: 0, cost: "ManaCost",
                cooldown: "FireCooldown"),
        "Channel": (tags: ["Ability.Skill.Channel"], input: 1, behaviour: "Script",
                    instancing: PerActor, state_size: 4, activation_owned_tags: ["State.Channeling"]),
        "Counter": (tags: ["Ability.Trigger"], triggers: [Event("Event.Hitbox")],
                    behaviour: "Script", end_after: Frames(6)),
        "Regen": (tags: ["Ability.Passive"], passive: true, behaviour: "Script"),
    },
)"#;

fn battle_world() -> (World<PadProbeGame>, [Entity; 3], [AbilityHandle; 4]) {
    let mut w = build(BATTLE, WorldConfig { players: 2, seed: 1234, ..WorldConfig::default() });
    let hero = actor(&mut w);
    let enemy = actor(&mut w);
    let body = w.spawn().unwrap();
    w.set_avatar(hero, body);
    w.bind_player(0, hero);
    w.bind_player(1, enemy);
    let hs = [
        grant(&mut w, hero, "Jab"),
        grant(&mut w, hero, "Channel"),
        grant(&mut w, hero, "Counter"),
        grant(&mut w, hero, "Regen"),
    ];
    grant(&mut w, enemy, "Jab");
    let (health, dash) = (attr(&w, "Health"), w.content().curve("DashCurve").unwrap());
    let punch = w.content().timeline("Punch").unwrap();
    plan(
        ab(&w, "Channel"),
        &[
            Act::Bump,
            Act::Random,
            Act::Spawn(0, TaskSpec::Repeat { count: 0, every: 3 }),
            Act::Spawn(1, TaskSpec::WaitDamage { attr: health, once: false }),
            Act::Spawn(2, TaskSpec::RootMotion { curve: dash, frames: 10, dir: [int(1), int(0)] }),
            Act::Spawn(3, TaskSpec::PlayTimeline { timeline: punch, rate: int(2) }),
            Act::Spawn(4, TaskSpec::WaitInput(InputEdge::Released)),
        ],
    );
    on_task_plan(ab(&w, "Channel"), 0, Act::Random);
    on_task_plan(ab(&w, "Channel"), 4, Act::End);
    plan(ab(&w, "Counter"), &[Act::Apply(eff(&w, "Burn"), enemy), Act::Random]);
    plan(ab(&w, "Regen"), &[Act::Spawn(0, TaskSpec::Repeat { count: 0, every: 7 })]);
    on_task_plan(ab(&w, "Regen"), 0, Act::Apply(eff(&w, "Heal"), Entity::NONE));
    (w, [hero, enemy, body], hs)
}

/// The inputs and scripted actions of frame `f` (a pure function of the frame).
fn battle_frame(w: &mut World<PadProbeGame>, f: u32, es: [Entity; 3]) -> FrameOutput {
    let hero_bits: u16 = match f {
        8 => 2 | 1,
        5..=20 => 2,
        26 => 1,
        _ => 0,
    };
    let enemy_bits: u16 = if f == 9 || f == 30 { 1 } else { 0 };
    let inputs = [pad(hero_bits), Pad { bits: enemy_bits, aim: [100, -100] }];
    w.step_with(&inputs, |w| {
        if f.is_multiple_of(5) {
            let spec = w.make_spec(w.content().effect("Damage").unwrap(), 1, es[1]);
            let _ = w.apply_effect(spec, es[0]);
        }
        if f == 17 {
            let t = w.content().tag("Event.Ping").unwrap();
            w.send_event(es[0], EventData::new(t, es[1], es[0]));
        }
    })
    .clone()
}

#[test]
fn f_ga_rollback_through_running_abilities_tasks_and_timelines_reproduces_checksums() {
    let (mut w, es, hs) = battle_world();
    let mut snap = None;
    let mut checks = Vec::new();
    let mut events = Vec::new();
    for f in 0..45u32 {
        if f == 12 {
            snap = Some(w.snapshot());
            // Mid-frame state worth rolling back through.
            assert!(w.is_ability_active(hs[0]), "Jab's timeline runs");
            assert!(w.is_ability_active(hs[1]), "Channel runs with tasks");
            assert!(w.tasks_of(hs[1]).count() >= 3);
            assert!(w.has_tag(es[0], tag(&w, "State.Channeling")));
        }
        let out = battle_frame(&mut w, f, es);
        checks.push(w.checksums());
        events.push((
            out.ability_events.clone(),
            out.gameplay_events.clone(),
            out.tag_events.clone(),
        ));
    }
    let moved = w.component(es[2]).unwrap().pos;
    assert_ne!(moved, [0, 0], "root motion moved the avatar");
    let draws_first: Vec<Rec> =
        log().into_iter().filter(|r| matches!(r, Rec::Random { .. })).collect();
    assert!(draws_first.len() >= 3);
    // Load the mid-ability snapshot and re-simulate.
    LOG.with(|l| l.borrow_mut().clear());
    w.load(snap.as_ref().unwrap()).unwrap();
    assert_eq!(w.next_frame(), 12);
    assert_eq!(w.checksums(), checks[11]);
    for f in 12..45u32 {
        let out = battle_frame(&mut w, f, es);
        assert_eq!(w.checksums(), checks[f as usize], "frame {f}");
        let again =
            (out.ability_events.clone(), out.gameplay_events.clone(), out.tag_events.clone());
        assert_eq!(again, events[f as usize], "frame {f} outputs");
    }
    assert_eq!(w.component(es[2]).unwrap().pos, moved);
    // A fresh world with the same inputs gets the same checksums too.
    let (mut w2, es2, _) = battle_world();
    for f in 0..45u32 {
        battle_frame(&mut w2, f, es2);
        assert_eq!(w2.checksums(), checks[f as usize], "fresh run, frame {f}");
    }
}

// ---------------------------------------------------------------------------------------------
// GAS fidelity: commits that cannot fail silently, SetByCaller cooldown durations,
// finite cooldown timers, default inputs of set and effect grants, grant and removal hooks
// ---------------------------------------------------------------------------------------------

/// The 1-based line and column (in chars) of the first occurrence of `needle` in `text`.
fn pos_in(text: &str, needle: &str) -> (u32, u32) {
    let byte = text.find(needle).unwrap_or_else(|| panic!("{needle:?} not in the text"));
    let before = &text[..byte];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line as u32, col as u32)
}

/// Freezes `BASE` plus `text` (as `test.ron`) and checks the located error it gives.
#[track_caller]
fn refused(text: &str, kind: ContentErrorKind, at: &str, path: &str, message: &str) {
    let e = ContentBuilder::new()
        .file("base.ron", BASE)
        .file("test.ron", text)
        .build()
        .expect_err(text);
    assert_eq!(e.kind, kind, "kind of: {e}");
    assert_eq!(e.file, "test.ron", "file of: {e}");
    assert_eq!((e.line, e.col), pos_in(text, at), "line:col of: {e}");
    assert_eq!(e.path, path, "path of: {e}");
    assert!(e.message.contains(message), "message of: {e}\n  should contain: {message}");
}

const SBC_COOLDOWN: &str = r#"(
    tags: ["Data.Cooldown", "Cooldown.Bolt", "Cooldown.Nova"],
    effects: {
        // One shared cooldown whose duration is the caller's: GAS's SetByCaller cooldown recipe.
        // Its modifier shows the SetByCaller value the commit set.
        "SbcCooldown": (duration: SetByCaller("Data.Cooldown"),
                        modifiers: [(attribute: "Focus", op: Add,
                                     magnitude: SetByCaller("Data.Cooldown"))]),
    },
    abilities: {
        "Bolt": (tags: ["Ability.Skill.Fire"], cooldown: "SbcCooldown", cooldown_duration: Frames(40),
                 cooldown_tags: ["Cooldown.Bolt"], end_after: Frames(1)),
        "Nova": (tags: ["Ability.Skill.Ice"], cooldown: "SbcCooldown",
                 cooldown_set_by_caller: { "Data.Cooldown": 25 },
                 cooldown_tags: ["Cooldown.Nova"], end_after: Frames(1)),
    },
)"#;

/// F-GA-08: a shared cooldown effect with a `SetByCaller("Data.Cooldown")` duration is applied
/// on commit, its duration and key taken from `cooldown_duration` or `cooldown_set_by_caller`
/// (it used to fail with `MissingSetByCaller`, silently, and the ability re-activated at once).
#[test]
fn f_ga_08_a_set_by_caller_cooldown_duration_is_applied_on_commit() {
    let mut w = arena(SBC_COOLDOWN);
    let focus = attr(&w, "Focus");
    let hero = actor(&mut w);
    let bolt = grant(&mut w, hero, "Bolt");
    let nova = grant(&mut w, hero, "Nova");
    let mut results = Vec::new();
    let mut apply_failures = 0;
    for f in 0..=45u32 {
        let out = frame(&mut w, |w| {
            if [0, 1, 39, 40].contains(&f) {
                results.push(("bolt", f, w.try_activate(bolt)));
            }
            if [0, 24, 25].contains(&f) {
                results.push(("nova", f, w.try_activate(nova)));
            }
        });
        apply_failures += out
            .effect_events
            .iter()
            .filter(|e| matches!(e, rollback_abilities::EffectEvent::ApplyFailed { .. }))
            .count();
        match f {
            0 => {
                assert_eq!(w.ability_cooldown_remaining(bolt), Some((40, 40)));
                assert_eq!(w.ability_cooldown_remaining(nova), Some((25, 25)));
                // `cooldown_duration` also set the key: 40 + 25 while both run.
                assert_eq!(w.attr(hero, focus), Some(int(65)));
            }
            10 => assert_eq!(w.ability_cooldown_remaining(bolt), Some((30, 40))),
            30 => assert_eq!(w.attr(hero, focus), Some(int(65)), "Nova's second cooldown"),
            _ => {}
        }
    }
    use ActivationFailure::OnCooldown;
    assert_eq!(
        results,
        vec![
            ("bolt", 0, ok(1)),
            ("nova", 0, ok(1)),
            ("bolt", 1, Err(OnCooldown)),
            ("nova", 24, Err(OnCooldown)),
            ("nova", 25, ok(2)),
            ("bolt", 39, Err(OnCooldown)),
            ("bolt", 40, ok(2)),
        ]
    );
    assert_eq!(apply_failures, 0, "no application failed");
}

/// F-GA-08, F-GA-06: content whose commit could never apply its cost or cooldown is refused
/// with a located error: a SetByCaller duration nobody gives, a key given twice, a duration
/// below one frame, a cost or cooldown SetByCaller value the ability does not give.
#[test]
fn f_ga_08_costs_and_cooldowns_missing_set_by_caller_values_are_refused() {
    let tags = r#"tags: ["Data.Cooldown", "Data.Power"],"#;
    let cd = r#""SbcCooldown": (duration: SetByCaller("Data.Cooldown"), granted_tags: ["Cooldown.Ice"]),
        "PowerCooldown": (duration: Frames(30), granted_tags: ["Cooldown.Ice"],
                          modifiers: [(attribute: "Focus", op: Add, magnitude: SetByCaller("Data.Power"))]),"#;
    let text = |ability: &str| {
        format!(
            "(\n    {tags}\n    effects: {{\n        {cd}\n    }},\n    abilities: {{\n        \"X\": ({ability}),\n    }},\n)"
        )
    };
    let t = text(r#"cooldown: "SbcCooldown""#);
    refused(
        &t,
        ContentErrorKind::InvalidCombination,
        "cooldown:",
        "abilities.X.cooldown",
        r#"the cooldown effect "SbcCooldown" takes its duration from SetByCaller("Data.Cooldown"): give the ability `cooldown_duration: Frames(n)`"#,
    );
    let t = text(
        r#"cooldown: "SbcCooldown", cooldown_duration: Frames(5), cooldown_set_by_caller: { "Data.Cooldown": 5 }"#,
    );
    refused(
        &t,
        ContentErrorKind::InvalidCombination,
        r#""Data.Cooldown": 5"#,
        "abilities.X.cooldown_set_by_caller.Data.Cooldown",
        "the cooldown's duration is given twice",
    );
    let t = text(r#"cooldown: "SbcCooldown", cooldown_set_by_caller: { "Data.Cooldown": 0.5 }"#);
    refused(
        &t,
        ContentErrorKind::InvalidValue,
        r#""Data.Cooldown": 0.5"#,
        "abilities.X.cooldown_set_by_caller.Data.Cooldown",
        "must be at least 1",
    );
    let t = text(r#"cooldown: "PowerCooldown""#);
    refused(
        &t,
        ContentErrorKind::InvalidCombination,
        "cooldown:",
        "abilities.X.cooldown",
        r#"needs the SetByCaller value "Data.Power": give it in `cooldown_set_by_caller"#,
    );
    let t = text(r#"cost: "SbcCost""#);
    refused(
        &t,
        ContentErrorKind::InvalidCombination,
        "cost:",
        "abilities.X.cost",
        r#"the cost effect "SbcCost" needs the SetByCaller value "Data.Cost": give it in `cost_set_by_caller"#,
    );
    let t = text(r#"cooldown_set_by_caller: { "Data.Power": 1 }"#);
    refused(
        &t,
        ContentErrorKind::InvalidCombination,
        r#""X": ("#,
        "abilities.X.cooldown",
        "need a `cooldown` effect",
    );
    // With a SetByCaller duration, `cooldown_duration` sets one more value beside those given:
    // 32 given would make a 33rd, more than any world holds in one spec
    // (`WorldConfig::set_by_caller_per_spec` is at most 32).
    let keys: Vec<String> = (0..32).map(|i| format!("Data.N{i}")).collect();
    let list = |f: &dyn Fn(&String) -> String| keys.iter().map(f).collect::<Vec<_>>().join(", ");
    let t = text(&format!(
        r#"cooldown: "SbcCooldown", cooldown_duration: Frames(5),
           cooldown_set_by_caller: {{ {} }}"#,
        list(&|k| format!("{k:?}: 1"))
    ))
    .replace(
        tags,
        &format!(r#"tags: ["Data.Cooldown", "Data.Power", {}],"#, list(&|k| format!("{k:?}"))),
    );
    refused(
        &t,
        ContentErrorKind::Capacity,
        "cooldown_set_by_caller",
        "abilities.X.cooldown_set_by_caller",
        "at most 31 values besides the duration `cooldown_duration` sets",
    );
    // Given, they load: four values beside the duration's (a fifth value in all, which the
    // commit's spec names in the definition; it used to be refused).
    for ok_text in [
        text(
            r#"cooldown: "SbcCooldown", cooldown_duration: Frames(5),
               cooldown_set_by_caller: { "Data.Power": 1, "Data.A": 1, "Data.B": 1, "Data.C": 1 }"#,
        )
        .replace(tags, r#"tags: ["Data.Cooldown", "Data.Power", "Data.A", "Data.B", "Data.C"],"#),
        text(r#"cooldown: "SbcCooldown", cooldown_duration: Frames(5)"#),
        text(r#"cooldown: "SbcCooldown", cooldown_set_by_caller: { "Data.Cooldown": 5 }"#),
        text(r#"cooldown: "PowerCooldown", cooldown_set_by_caller: { "Data.Power": 2 }"#),
        text(r#"cost: "SbcCost", cost_set_by_caller: { "Data.Cost": -1 }"#),
    ] {
        ContentBuilder::new()
            .file("base.ron", BASE)
            .file("test.ron", ok_text.as_str())
            .build()
            .unwrap_or_else(|e| panic!("{ok_text}: {e}"));
    }
}

const COMMIT_FAILURES: &str = r#"(
    effects: {
        // A shared cooldown that holds one stack and denies more.
        "OneCooldown": (duration: Frames(30),
                        stacking: (kind: ByTarget, limit: 1, deny_overflow: true)),
        "Sanctuary": (duration: Infinite, immunity_tags: ["Ability.Skill.Fire"]),
    },
    abilities: {
        "Ice": (tags: ["Ability.Skill.Ice"], cost: "ManaCost", cooldown: "OneCooldown",
                cooldown_tags: ["Cooldown.Ice"], end_after: Frames(1)),
        "Spark": (tags: ["Ability.Skill.Spark"], cost: "ManaCost", cooldown: "OneCooldown",
                  cooldown_tags: ["Cooldown.Spark"], end_after: Frames(1), behaviour: "Script"),
        "Fire": (tags: ["Ability.Skill.Fire"], cost: "ManaCost", cooldown: "FireCooldown",
                 end_after: Frames(1), behaviour: "Script"),
        "Late": (tags: ["Ability.Skill.Gauntlet"], commit_on_activate: false, cost: "ManaCost",
                 cooldown: "OneCooldown", cooldown_tags: ["Cooldown.Gauntlet"], behaviour: "Script"),
    },
)"#;

/// F-GA-06: a commit whose cost or cooldown effect cannot be applied (a full stack that denies
/// overflow, an immunity, a full effect column) fails the activation with
/// `CommitFailed { part, error }` — in the result, the frame's ability events and the activation
/// log — pays nothing and starts nothing. A later commit from the behaviour fails the same way
/// and cancels the ability. (All of these used to succeed with the application silently lost.)
#[test]
fn f_ga_06_a_commit_that_cannot_apply_fails_the_activation_with_a_typed_reason() {
    use rollback_abilities::CommitPart;
    let mut w = arena(COMMIT_FAILURES);
    let mana = attr(&w, "Mana");
    let hero = actor(&mut w);
    let [ice, spark, fire, late] = ["Ice", "Spark", "Fire", "Late"].map(|n| grant(&mut w, hero, n));
    frame(&mut w, |w| assert_eq!(w.try_activate(ice), ok(1)));
    assert_eq!(w.attr(hero, mana), Some(int(40)));
    // Spark's cooldown would be a second stack of OneCooldown: denied.
    let overflow = ActivationFailure::CommitFailed {
        part: CommitPart::Cooldown,
        error: ApplyError::StackOverflowDenied,
    };
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(spark), Err(overflow)));
    assert_eq!(failed(&out), vec![(spark, overflow)]);
    assert!(!activated(&out).iter().any(|a| a.0 == spark), "it never started");
    assert!(!ended(&out).iter().any(|e| e.0 == spark));
    assert_eq!(w.last_activation(spark).map(|r| (r.frame, r.result)), Some((1, Err(overflow))));
    assert_eq!(w.attr(hero, mana), Some(int(40)), "no cost paid");
    assert!(!w.is_ability_active(spark) && !w.has_tag(hero, tag(&w, "Cooldown.Spark")));
    assert!(activations_of(spark).is_empty() && ends_of(spark).is_empty(), "no behaviour ran");
    assert!(overflow.to_string().contains("committing the cooldown failed"), "{overflow}");
    // Immune to the cost (the spec carries Fire's ability tags).
    let sanctuary = handle(apply(&mut w, "Sanctuary", hero, hero));
    let immune = ActivationFailure::CommitFailed {
        part: CommitPart::Cost,
        error: ApplyError::Immune { blocker: sanctuary },
    };
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(fire), Err(immune)));
    assert_eq!(failed(&out), vec![(fire, immune)]);
    assert_eq!(w.attr(hero, mana), Some(int(40)));
    assert!(!w.has_tag(hero, tag(&w, "Cooldown.Fire")), "no cooldown without the cost");
    w.remove_effect(sanctuary);
    frame(&mut w, |w| assert_eq!(w.try_activate(fire), ok(1)));
    assert_eq!(w.attr(hero, mana), Some(int(30)));
    // A commit from the behaviour: the activation succeeded, the commit fails, the ability is
    // cancelled, and the failure is reported like a failed activation.
    plan(ab(&w, "Late"), &[Act::Commit]);
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(late), ok(1)));
    assert!(log().contains(&Rec::Commit { frame: 4, h: late, ok: false }));
    assert_eq!(activated(&out), vec![(late, 1, None)]);
    assert_eq!(ended(&out).last(), Some(&(late, true)), "cancelled");
    assert_eq!(failed(&out), vec![(late, overflow)]);
    assert_eq!(w.last_activation(late).map(|r| r.result), Some(Err(overflow)));
    assert_eq!(w.attr(hero, mana), Some(int(30)), "nothing of a failed commit is paid");
    assert!(!w.has_tag(hero, tag(&w, "Cooldown.Gauntlet")));

    // A full effect column: the cooldown has no room.
    let mut w =
        build(COMMIT_FAILURES, WorldConfig { effects_per_entity: 1, ..WorldConfig::default() });
    let hero = actor(&mut w);
    let ice = grant(&mut w, hero, "Ice");
    apply(&mut w, "Buff", hero, hero);
    let full =
        ActivationFailure::CommitFailed { part: CommitPart::Cooldown, error: ApplyError::Capacity };
    let out = frame(&mut w, |w| assert_eq!(w.try_activate(ice), Err(full)));
    assert_eq!(failed(&out), vec![(ice, full)]);
    assert_eq!(w.attr(hero, attr(&w, "Mana")), Some(int(50)));
}

/// F-GA-06: `can_activate` answers what activating would: for a `commit_on_activate` ability
/// whose cost or cooldown could not be applied it reports the same `CommitFailed` (it used to
/// say `Ok` and the activation then failed), without changing anything. An ability that
/// commits later, from its behaviour, is only checked for cooldown tags and cost (GAS's
/// `CanActivateAbility`).
#[test]
fn f_ga_06_can_activate_reports_the_commit_failure_activation_would_give() {
    use rollback_abilities::CommitPart;
    let mut w = arena(COMMIT_FAILURES);
    let hero = actor(&mut w);
    let [ice, spark, fire, late] = ["Ice", "Spark", "Fire", "Late"].map(|n| grant(&mut w, hero, n));
    assert_eq!(w.can_activate(spark, None), Ok(()));
    frame(&mut w, |w| assert_eq!(w.try_activate(ice), ok(1)));
    let overflow = ActivationFailure::CommitFailed {
        part: CommitPart::Cooldown,
        error: ApplyError::StackOverflowDenied,
    };
    let before = w.checksum();
    assert_eq!(w.can_activate(spark, None), Err(overflow));
    assert_eq!(w.checksum(), before, "a question changes nothing");
    frame(&mut w, |w| assert_eq!(w.try_activate(spark), Err(overflow)));
    // Asking for the activatable abilities leaves it out.
    let sparks = TagSet::of(&[tag(&w, "Ability.Skill.Spark")]);
    assert_eq!(w.specs_matching(hero, &sparks, false), vec![spark]);
    assert!(w.specs_matching(hero, &sparks, true).is_empty());
    // The cost part, with the immunity as the reason.
    let sanctuary = handle(apply(&mut w, "Sanctuary", hero, hero));
    let immune = ActivationFailure::CommitFailed {
        part: CommitPart::Cost,
        error: ApplyError::Immune { blocker: sanctuary },
    };
    assert_eq!(w.can_activate(fire, None), Err(immune));
    frame(&mut w, |w| assert_eq!(w.try_activate(fire), Err(immune)));
    w.remove_effect(sanctuary);
    assert_eq!(w.can_activate(fire, None), Ok(()));
    // Committing from the behaviour: activation itself would succeed.
    assert_eq!(w.can_activate(late, None), Ok(()));
    // A full effect column.
    let mut w =
        build(COMMIT_FAILURES, WorldConfig { effects_per_entity: 1, ..WorldConfig::default() });
    let hero = actor(&mut w);
    let ice = grant(&mut w, hero, "Ice");
    apply(&mut w, "Buff", hero, hero);
    let full =
        ActivationFailure::CommitFailed { part: CommitPart::Cooldown, error: ApplyError::Capacity };
    assert_eq!(w.can_activate(ice, None), Err(full));
}

/// F-GA-09 with F-GE-04's rule: a duration too long to end at an exact frame is refused with a
/// located error pointing to `Infinite` (`cooldown_duration: Frames(u32::MAX)` used to load,
/// never end, and report `Ready`); the longest accepted cooldown is reported exactly, and an
/// infinite cooldown reports `(NEVER, NEVER)` instead of nothing.
#[test]
fn f_ga_09_cooldown_timers_are_finite_and_exact_to_the_frame() {
    let shared = r#"cooldown: "SharedCooldown", cooldown_tags: ["Cooldown.Ice"], "#;
    for (text, at, path) in [
        (
            format!(r#"(abilities: {{ "X": ({shared}cooldown_duration: Frames(4294967295)) }})"#),
            "cooldown_duration",
            "abilities.X.cooldown_duration",
        ),
        (
            format!(r#"(abilities: {{ "X": ({shared}cooldown_duration: Frames(4294967294)) }})"#),
            "cooldown_duration",
            "abilities.X.cooldown_duration",
        ),
        (
            format!(r#"(abilities: {{ "X": ({shared}cooldown_duration: Frames(2147483648)) }})"#),
            "cooldown_duration",
            "abilities.X.cooldown_duration",
        ),
        (
            format!(r#"(abilities: {{ "X": ({shared}cooldown_duration: Seconds(40000000)) }})"#),
            "40000000",
            "abilities.X.cooldown_duration[0]",
        ),
    ] {
        refused(
            &text,
            ContentErrorKind::InvalidValue,
            at,
            path,
            "give the cooldown effect `duration: Infinite`",
        );
        refused(&text, ContentErrorKind::InvalidValue, at, path, "at most 2147483647 frames");
    }
    refused(
        r#"(effects: { "Long": (duration: Frames(3000000000)) })"#,
        ContentErrorKind::InvalidValue,
        "duration",
        "effects.Long.duration",
        "use Infinite",
    );
    refused(
        r#"(abilities: { "X": (end_after: Frames(2147483648)) })"#,
        ContentErrorKind::InvalidValue,
        "end_after",
        "abilities.X.end_after",
        "leave out `end_after`",
    );

    const MAX: u32 = rollback_abilities::num::MAX_FINITE_FRAMES;
    let mut w = arena(
        r#"(
        effects: { "Endless": (duration: Infinite, granted_tags: ["Cooldown.Spark"]) },
        abilities: {
            "Longest": (cooldown: "SharedCooldown", cooldown_duration: Frames(2147483647),
                        cooldown_tags: ["Cooldown.Ice"], end_after: Frames(1)),
            "Forever": (cooldown: "Endless", end_after: Frames(1)),
        },
    )"#,
    );
    let hero = actor(&mut w);
    let longest = grant(&mut w, hero, "Longest");
    let forever = grant(&mut w, hero, "Forever");
    run_through(&mut w, 4);
    let out = frame(&mut w, |w| {
        assert_eq!(w.try_activate(longest), ok(1));
        assert_eq!(w.try_activate(forever), ok(1));
    });
    let cd = out
        .ability_events
        .iter()
        .find_map(|e| match e {
            AbilityEvent::Committed { handle, cooldown } if *handle == longest => *cooldown,
            _ => None,
        })
        .expect("Longest's cooldown");
    assert_eq!(w.effect_timer(cd).map(|t| t.expires_at), Some(5 + MAX));
    assert_eq!(w.ability_cooldown_remaining(longest), Some((MAX, MAX)));
    assert_eq!(w.ability_cooldown_remaining(forever), Some((u32::MAX, u32::MAX)));
    run_through(&mut w, 1004);
    assert_eq!(w.ability_cooldown_remaining(longest), Some((MAX - 999, MAX)));
    assert_eq!(w.effect_remaining(cd), Some((MAX - 999, MAX)));
    assert_eq!(w.can_activate(longest, None), Err(ActivationFailure::OnCooldown));
    assert_eq!(w.ability_cooldown_remaining(forever), Some((u32::MAX, u32::MAX)), "never Ready");
    assert_eq!(w.can_activate(forever, None), Err(ActivationFailure::OnCooldown));
}

/// F-GA-16, F-GE-21 (guide §3.8): a grant of an ability set or of an effect that names no
/// `input` binds the ability's own `input` (it used to bind none: the button did nothing).
#[test]
fn f_ga_16_set_and_effect_grants_bind_the_abilitys_own_input() {
    let mut w = arena(
        r#"(
        effects: {
            "GrantGuard": (duration: Frames(10), granted_abilities: [(ability: "Guard")]),
            "GrantGuardOn4": (duration: Frames(10), granted_abilities: [(ability: "Guard", input: 4)]),
        },
        abilities: { "Guard": (tags: ["Ability.Guard"], input: 3, behaviour: "Script") },
        ability_sets: { "Kit": [(ability: "Guard"), (ability: "Guard", input: 5)] },
    )"#,
    );
    let hero = actor(&mut w);
    w.bind_player(0, hero);
    let kit = w.content().ability_set("Kit").unwrap();
    let hs = w.grant_ability_set(hero, kit);
    let inputs = |w: &World<PadProbeGame>| -> Vec<Option<u8>> {
        w.abilities(hero).map(|(_, s)| s.input_id()).collect()
    };
    assert_eq!(inputs(&w), vec![Some(3), Some(5)]);
    // Input 3 activates the first grant of the set.
    let out = frame_in(&mut w, &[pad(1 << 3)], |_| {});
    assert_eq!(activated(&out), vec![(hs[0], 1, None)]);
    frame_in(&mut w, &[pad(0)], |w| {
        for h in &hs {
            w.remove_ability(*h);
        }
    });
    frame(&mut w, |w| {
        apply(w, "GrantGuard", hero, hero);
        apply(w, "GrantGuardOn4", hero, hero);
    });
    assert_eq!(inputs(&w), vec![Some(3), Some(4)]);
    let granted: Vec<AbilityHandle> = w.abilities(hero).map(|(h, _)| h).collect();
    let out = frame_in(&mut w, &[pad(1 << 3)], |_| {});
    assert_eq!(activated(&out), vec![(granted[0], 1, None)]);
}

const LIFECYCLE: &str = r#"(
    effects: {
        "Gift": (duration: Frames(10), granted_abilities: [(ability: "Blessed")]),
        "Loan": (duration: Frames(6),
                 granted_abilities: [(ability: "Blessed", removal: RemoveOnEnd)]),
        "Keep": (duration: Frames(4),
                 granted_abilities: [(ability: "Blessed", removal: DoNothing)]),
    },
    abilities: {
        "Blessed": (tags: ["Ability.Passive"], instancing: PerActor, state_size: 4,
                    behaviour: "Lifecycle"),
    },
    ability_sets: { "Kit": [(ability: "Blessed", level: 2)] },
)"#;

/// The ability `hero` got from an active or expired effect named `effect` (or directly: "").
fn blessed(w: &World<PadProbeGame>, hero: Entity, level: u16, from: &str) -> Option<AbilityHandle> {
    w.abilities(hero)
        .filter(|(_, s)| s.level == level)
        .find(|(h, _)| match w.granting_effect(*h).and_then(|e| w.effect(e)) {
            Some(ef) => w.content().effect_defs()[ef.def.index()].name == from,
            None => from.is_empty(),
        })
        .map(|(h, _)| h)
}

/// One frame of the lifecycle script: grants by code (0), by an ability set (1) and by effects
/// (2, 4, 6), a removal by code (3) and at an effect's end (Gift at 12; Loan's `RemoveOnEnd`
/// ability, activated at 5, when it ends at 14), a kept grant (Keep's `DoNothing`), and a removal
/// of the set's grant (15).
fn lifecycle_frame(w: &mut World<PadProbeGame>, f: u32, hero: Entity) -> FrameOutput {
    frame(w, |w| match f {
        0 => {
            w.grant_ability(hero, ab(w, "Blessed"), 1).unwrap();
        }
        1 => {
            let kit = w.content().ability_set("Kit").unwrap();
            assert_eq!(w.grant_ability_set(hero, kit).len(), 1);
        }
        2 => drop(apply(w, "Gift", hero, hero)),
        3 => w.remove_ability(blessed(w, hero, 1, "").unwrap()),
        4 => drop(apply(w, "Loan", hero, hero)),
        5 => assert_eq!(w.try_activate(blessed(w, hero, 1, "Loan").unwrap()), ok(1)),
        6 => drop(apply(w, "Keep", hero, hero)),
        14 => {
            let loan = w.abilities(hero).find(|(_, s)| s.is_active()).unwrap().0;
            w.end_ability(loan);
        }
        15 => w.remove_ability(blessed(w, hero, 2, "").unwrap()),
        _ => {}
    })
}

/// The `Lifecycle` hook calls logged so far.
fn hook_log() -> Vec<Rec> {
    log().into_iter().filter(|r| matches!(r, Rec::Granted { .. } | Rec::Removed { .. })).collect()
}

/// Beyond GAS (its 4.25+ `OnGiveAbility` / `OnRemoveAbility`): a behaviour's `on_granted` and
/// `on_removed` run exactly once per grant and per removal — by code, by an ability set, by an
/// effect, by the granting effect's end (right away or when the ability ends) — with a context
/// that applies effects and reads and writes the state blob; a grant kept by `DoNothing` is
/// not removed.
#[test]
fn f_ga_02_on_granted_and_on_removed_run_once_per_grant_and_removal() {
    let mut w = arena(LIFECYCLE);
    let health = attr(&w, "Health");
    let hero = actor(&mut w);
    let mut outs = Vec::new();
    for f in 0..=16u32 {
        outs.push(lifecycle_frame(&mut w, f, hero));
    }
    let granted_event = |f: usize| -> Vec<AbilityHandle> {
        outs[f]
            .ability_events
            .iter()
            .filter_map(|e| match e {
                AbilityEvent::Granted { handle, .. } => Some(*handle),
                _ => None,
            })
            .collect()
    };
    let [a, b, c, d, e] = [0, 1, 2, 4, 6].map(|f| {
        let g = granted_event(f);
        assert_eq!(g.len(), 1, "frame {f}");
        g[0]
    });
    let removed = |frame, h| Rec::Removed { frame, h, state: 7, active: false };
    assert_eq!(
        hook_log(),
        vec![
            Rec::Granted { frame: 0, h: a, level: 1 },
            Rec::Granted { frame: 1, h: b, level: 2 },
            Rec::Granted { frame: 2, h: c, level: 1 },
            removed(3, a),
            Rec::Granted { frame: 4, h: d, level: 1 },
            Rec::Granted { frame: 6, h: e, level: 1 },
            removed(12, c),
            removed(14, d),
            removed(15, b),
        ]
    );
    // Loan's ability was active when Loan ended (frame 10): removed after it ended (14).
    assert!(ends_of(d) == vec![(14, false)] && w.ability(d).is_none());
    assert!(w.ability(e).is_some() && w.granting_effect(e).is_none(), "kept by DoNothing");
    // Five grants healed 5 each, four removals dealt 20 each (queued applications, P6/P2).
    assert_eq!(w.attr(hero, health), Some(int(100 + 5 * 5 - 20 * 4)));
    assert_eq!(w.ability_state::<u32>(e), Some(7), "on_granted wrote the state blob");
}

/// The grant and removal hooks run inside the step: re-simulating from a snapshot runs them
/// again, identically, and every checksum matches the first run and a fresh world's.
#[test]
fn f_ga_02_grant_hooks_rerun_identically_after_a_snapshot_load() {
    let mut w = arena(LIFECYCLE);
    let hero = actor(&mut w);
    lifecycle_frame(&mut w, 0, hero);
    lifecycle_frame(&mut w, 1, hero);
    let snap = w.snapshot();
    LOG.with(|l| l.borrow_mut().clear());
    let mut first = Vec::new();
    for f in 2..=16u32 {
        let out = lifecycle_frame(&mut w, f, hero);
        first.push((w.checksums(), out.ability_events.clone()));
    }
    let hooks_first = hook_log();
    assert_eq!(hooks_first.len(), 7, "{hooks_first:?}");
    w.load(&snap).unwrap();
    LOG.with(|l| l.borrow_mut().clear());
    for f in 2..=16u32 {
        let out = lifecycle_frame(&mut w, f, hero);
        assert_eq!((w.checksums(), out.ability_events.clone()), first[f as usize - 2], "frame {f}");
    }
    assert_eq!(hook_log(), hooks_first, "each hook once per grant and removal, again");
    // A fresh world gets the same checksums.
    let mut fresh = arena(LIFECYCLE);
    let hero = actor(&mut fresh);
    for f in 0..=16u32 {
        lifecycle_frame(&mut fresh, f, hero);
        if f >= 2 {
            assert_eq!(fresh.checksums(), first[f as usize - 2].0, "fresh run, frame {f}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Beyond GAS: input buffer (F-GA-22), hitstop and time scale (F-GA-23), timeline
// rate changes, custom task kinds (F-AT-06)
// ---------------------------------------------------------------------------------------------

mod beyond_gas {
    use rollback_abilities::prelude::*;
    use rollback_abilities::session::RollbackDriver;
    use rollback_abilities::{
        AbilityCtx, AbilityEvent, AbilityHandle, AbilityInput, Behaviour, ContentBuilder,
        ContentErrorKind, TaskCtx, TaskEvent, TaskResult, TaskSpec,
    };
    use std::cell::RefCell;
    use std::sync::Arc;

    /// Bit `i` of the input is ability input `i`.
    pub struct Pads;
    impl Game for Pads {
        type Input = u8;
        type Component = ();
        type Global = ();
        fn ability_input(input: &u8) -> AbilityInput {
            AbilityInput { held: u32::from(*input), ..AbilityInput::default() }
        }
    }

    const CONTENT: &str = r#"(
        tags: ["State.Attacking", "State.Poisoned", "Ability.Jab", "Ability.Follow",
               "Cancel.Window.Jab", "Event.Hit", "Cooldown.Heavy", "Cooldown.Move"],
        attribute_sets: { "Vitals": (attributes: {
            "Health": (default: 100), "Mana": (default: 0) }) },
        effects: {
            "HeavyCooldown": (duration: Frames(10), granted_tags: ["Cooldown.Heavy"]),
            "MoveCooldown": (duration: Frames(10), granted_tags: ["Cooldown.Move"]),
            "Poison": (duration: Frames(30), period: Frames(10), granted_tags: ["State.Poisoned"],
                       modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -1))]),
            "Cost": (modifiers: [(attribute: "Mana", op: Add, magnitude: Scalable(coef: -10))]),
            "Strike": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -5))],
                       hitstop: 3, instigator_hitstop: 2),
            "Slam": (inherits: "Strike"),
        },
        timelines: {
            "Light": (startup: 2, active: 2, recovery: 4),
            "Jab": (startup: 3, active: 2, recovery: 6,
                    windows: [(from: 4, to: 9, tag: "Cancel.Window.Jab")]),
            "Move": (startup: 4, active: 2, recovery: 4, notifies: [(frame: 4, event: "Event.Hit")],
                     windows: [(from: 3, to: 5, tag: "State.Attacking")]),
        },
        abilities: {
            "Light": (input: 0, timeline: "Light", activation_owned_tags: ["State.Attacking"],
                      input_buffer: 6),
            "Heavy": (input: 1, activation_blocked_tags: ["State.Attacking"], end_after: Frames(3),
                      input_buffer: 6),
            "HeavyNoBuffer": (input: 2, activation_blocked_tags: ["State.Attacking"],
                              end_after: Frames(3)),
            "Jab": (input: 3, tags: ["Ability.Jab"], timeline: "Jab"),
            "Follow": (input: 4, tags: ["Ability.Follow"],
                       activation_required_tags: ["Cancel.Window.Jab"],
                       cancel_abilities_with_tags: ["Ability.Jab"], end_after: Frames(5),
                       input_buffer: 6),
            "Smash": (input: 5, cooldown: "HeavyCooldown", end_after: Frames(2), input_buffer: 6),
            "Spell": (input: 6, cost: "Cost", end_after: Frames(2), input_buffer: 6),
            "Move": (timeline: "Move", cooldown: "MoveCooldown"),
            "Charger": (behaviour: "Charger"),
        },
    )"#;

    thread_local! {
        /// (frame, event) of every task report the `Charger` behaviour received.
        static REPORTS: RefCell<Vec<(u32, TaskEvent)>> = const { RefCell::new(Vec::new()) };
    }

    /// A custom task kind: counts its ticks in word 0 and adds 0.5 to its number per tick;
    /// reports every second tick and finishes at tick `words[1]`.
    fn charge_tick(ctx: &mut TaskCtx<'_, Pads>) {
        let mut w = ctx.words();
        w[0] += 1;
        ctx.set_words(w);
        let v = ctx.value() + Fx::from_num(0.5);
        ctx.set_value(v);
        assert_eq!(ctx.elapsed(), w[0], "elapsed counts the owner's running frames");
        if w[0] == w[1] {
            ctx.finish(1, v);
        } else if w[0].is_multiple_of(2) {
            ctx.report(0, v);
        }
    }

    fn charger_activate(ctx: &mut AbilityCtx<'_, Pads>) {
        let kind = ctx.world().task_kind("Charge").expect("registered");
        let spec = TaskSpec::Custom { kind, words: [0, 4, 0, 0], value: Fx::ZERO };
        ctx.spawn_task(7, spec).unwrap();
    }

    fn charger_task(ctx: &mut AbilityCtx<'_, Pads>, r: &TaskResult) {
        let frame = ctx.frame();
        REPORTS.with(|l| l.borrow_mut().push((frame, r.event)));
        if matches!(r.event, TaskEvent::Custom { code: 1, .. }) {
            ctx.end();
        }
    }

    fn hooks() -> Hooks<Pads> {
        Hooks::new().task_kind("Charge", charge_tick).behaviour(
            "Charger",
            Behaviour {
                on_activate: Some(charger_activate),
                on_task: Some(charger_task),
                ..Behaviour::default()
            },
        )
    }

    struct Rig {
        w: World<Pads>,
        hero: Entity,
        foe: Entity,
    }

    impl Rig {
        fn h(&self, name: &str) -> AbilityHandle {
            let def = self.w.content().ability(name).unwrap();
            self.w.abilities(self.hero).find(|(_, s)| s.def == def).unwrap().0
        }
    }

    fn rig() -> Rig {
        REPORTS.with(|l| l.borrow_mut().clear());
        let content = Arc::new(Content::from_ron_str(CONTENT).unwrap());
        let config = WorldConfig { abilities_per_entity: 16, ..WorldConfig::default() };
        let mut w = World::<Pads>::new(content.clone(), &hooks(), config).unwrap();
        let vitals = [content.attr_set("Vitals").unwrap()];
        let hero = w.spawn_actor(&vitals).unwrap();
        let foe = w.spawn_actor(&vitals).unwrap();
        w.bind_player(0, hero);
        for name in [
            "Light",
            "Heavy",
            "HeavyNoBuffer",
            "Jab",
            "Follow",
            "Smash",
            "Spell",
            "Move",
            "Charger",
        ] {
            w.grant_ability(hero, content.ability(name).unwrap(), 1).unwrap();
        }
        Rig { w, hero, foe }
    }

    /// Activation frames of an ability over `frames` frames, with player 0's input per frame
    /// and a P6 script.
    fn run(
        rig: &mut Rig,
        frames: u32,
        input: impl Fn(u32) -> u8,
        mut script: impl FnMut(&mut World<Pads>, u32),
    ) -> Vec<(u32, AbilityHandle)> {
        let mut out = Vec::new();
        for f in 0..frames {
            rig.w.step_with(&[input(f), 0], |w| script(w, f));
            for e in &rig.w.output().ability_events {
                if let AbilityEvent::Activated { handle, .. } = e {
                    out.push((f, *handle));
                }
            }
        }
        out
    }

    fn frames_of(acts: &[(u32, AbilityHandle)], h: AbilityHandle) -> Vec<u32> {
        acts.iter().filter(|(_, x)| *x == h).map(|(f, _)| *f).collect()
    }

    const LIGHT: u8 = 1;
    const HEAVY: u8 = 2;
    const HEAVY_NB: u8 = 4;

    /// A press that cannot activate the ability is remembered for `input_buffer` frames and
    /// activates it on the first frame it can (here when the light attack's recovery ends, in
    /// P5 of frame 8, so in P4 of frame 9); exactly once; without a buffer the press is lost.
    #[test]
    fn f_ga_22_a_press_during_recovery_is_buffered_and_used_once() {
        let mut r = rig();
        let (light, heavy, heavy_nb) = (r.h("Light"), r.h("Heavy"), r.h("HeavyNoBuffer"));
        let mut buffered = Vec::new();
        let acts = run(
            &mut r,
            20,
            |f| match f {
                0 => LIGHT,
                5 => HEAVY | HEAVY_NB,
                _ => 0,
            },
            |w, _| buffered.push(w.buffered_press(0, 1)),
        );
        assert_eq!(frames_of(&acts, light), [0]);
        assert_eq!(frames_of(&acts, heavy), [9], "buffered at 5, used at 9");
        assert_eq!(frames_of(&acts, heavy_nb), Vec::<u32>::new(), "no buffer: the press is lost");
        // Pending from its press frame until it was used (seen in P6 of frames 5..=8).
        let pending: Vec<usize> =
            buffered.iter().enumerate().filter(|(_, b)| b.is_some()).map(|(f, _)| f).collect();
        assert_eq!(pending, [5, 6, 7, 8]);
        assert_eq!(buffered[5], Some(5));
        // The press frame's failure is reported as usual; the silent retries are not.
        assert_eq!(r.w.last_activation(heavy).map(|a| a.result.is_ok()), Some(true));
    }

    /// The window is `input_buffer` frames after the press frame: a press 7 frames before the
    /// ability can activate is dropped; one 6 frames before is used.
    #[test]
    fn f_ga_22_presses_expire_after_the_window() {
        for (press, expected) in [(2u32, vec![]), (3, vec![9u32])] {
            let mut r = rig();
            let heavy = r.h("Heavy");
            let acts = run(
                &mut r,
                20,
                |f| {
                    if f == 0 {
                        LIGHT
                    } else if f == press {
                        HEAVY
                    } else {
                        0
                    }
                },
                |_, _| {},
            );
            assert_eq!(frames_of(&acts, heavy), expected, "pressed in frame {press}");
            assert_eq!(r.w.buffered_press(0, 1), None);
        }
    }

    /// Mashing: a press of the running light attack is buffered and starts it again when it
    /// ends; two presses inside one move still give one more activation.
    #[test]
    fn f_ga_22_a_press_of_the_running_ability_restarts_it_when_it_ends() {
        let mut r = rig();
        let light = r.h("Light");
        let acts = run(&mut r, 30, |f| if [0, 4, 6].contains(&f) { LIGHT } else { 0 }, |_, _| {});
        // 0: activates; 4: buffered; 6: replaces it; 9: starts again (age 3); then ends at 17.
        assert_eq!(frames_of(&acts, light), [0, 9]);
    }

    /// A buffered press waits for a cancel window to open (visible to inputs from the frame
    /// after it opens), for a cooldown to end and for a cost to become affordable.
    #[test]
    fn f_ga_22_buffered_presses_wait_for_windows_cooldowns_and_costs() {
        let mut r = rig();
        let (jab, follow, smash, spell) = (r.h("Jab"), r.h("Follow"), r.h("Smash"), r.h("Spell"));
        let hero = r.hero;
        let mana = r.w.content().attr("Mana").unwrap();
        let acts = run(
            &mut r,
            30,
            |f| match f {
                0 => 1 << 5,  // Smash: activates, cooldown frames 0..=9
                3 => 1 << 6,  // Spell: no mana yet
                6 => 1 << 5,  // Smash again: on cooldown, buffered
                10 => 1 << 3, // Jab: window tag from P5 of 14
                11 => 1 << 4, // Follow: needs the window, buffered
                _ => 0,
            },
            |w, f| {
                if f == 5 {
                    w.set_base(hero, mana, Fx::from_num(10));
                }
            },
        );
        assert_eq!(frames_of(&acts, smash), [0, 10], "cooldown over in P2 of 10");
        assert_eq!(frames_of(&acts, spell), [6], "affordable from P6 of 5");
        assert_eq!(frames_of(&acts, jab), [10]);
        assert_eq!(frames_of(&acts, follow), [15], "window visible to inputs from 15");
        assert!(!r.w.is_ability_active(jab), "the follow-up cancelled the jab");
        assert_eq!(r.w.last_activation(smash).map(|a| a.result.is_ok()), Some(true));
    }

    /// Hitstop holds the entity's timeline (notify and end), its periodic effect and its
    /// cooldown for the held frames; another entity's clocks run on.
    #[test]
    fn f_ga_23_hitstop_holds_timelines_effects_and_cooldowns() {
        let mut r = rig();
        let (hero, foe) = (r.hero, r.foe);
        let mv = r.h("Move");
        let c = r.w.content().clone();
        let poison = c.effect("Poison").unwrap();
        let health = c.attr("Health").unwrap();
        let cd = TagSet::of(&[c.tag("Cooldown.Move").unwrap()]);
        let (mut hits, mut ticks_hero, mut ticks_foe, mut held) = (vec![], vec![], vec![], vec![]);
        let mut cooldown = vec![];
        let mut ended = None;
        for f in 0..40u32 {
            r.w.step_with(&[0, 0], |w| {
                if f == 0 {
                    w.try_activate(mv).unwrap();
                    for e in [hero, foe] {
                        let s = w.make_spec(poison, 1, e);
                        w.apply_effect(s, e).unwrap();
                    }
                }
                if f == 1 {
                    w.hitstop(hero, 5);
                    assert_eq!(w.hitstop_remaining(hero), 5);
                }
            });
            let out = r.w.output();
            hits.extend(out.gameplay_events.iter().map(|e| e.frame));
            for x in &out.executions {
                if x.attr == health {
                    if x.target == hero { ticks_hero.push(f) } else { ticks_foe.push(f) }
                }
            }
            if r.w.is_time_held(hero) {
                held.push(f);
            }
            assert!(!r.w.is_time_held(foe));
            cooldown.push(r.w.cooldown_remaining(hero, &cd).map(|c| c.0));
            if ended.is_none() && !r.w.is_ability_active(mv) {
                ended = Some(f);
            }
        }
        assert_eq!(held, [2, 3, 4, 5, 6]);
        assert_eq!(hits, [9], "timeline frame 4: world frame 4 + 5");
        assert_eq!(ended, Some(15), "10 timeline frames + 5 held");
        assert_eq!(ticks_hero, [15, 25, 35]);
        assert_eq!(ticks_foe, [10, 20, 30]);
        assert_eq!(cooldown[0], Some(10));
        assert_eq!(&cooldown[1..7], &[Some(9); 6][..], "the cooldown stands still while held");
        assert_eq!(cooldown[7], Some(8));
        assert_eq!(cooldown[15], None);
        assert_eq!(r.w.hitstop_remaining(hero), 0);
        assert!(r.w.effects(hero).is_empty() && r.w.effects(foe).is_empty());
    }

    /// An effect's `hitstop` and `instigator_hitstop` freeze the target and the attacker when
    /// an application lands (inherited like any field); a blocked one freezes nobody.
    #[test]
    fn f_ga_23_effects_give_hitstop_when_they_land() {
        let mut r = rig();
        let (hero, foe) = (r.hero, r.foe);
        let c = r.w.content().clone();
        let (mut hero_held, mut foe_held) = (vec![], vec![]);
        for f in 0..12u32 {
            r.w.step_with(&[0, 0], |w| {
                let name = match f {
                    0 => "Strike",
                    6 => "Slam",
                    _ => return,
                };
                let s = w.make_spec(c.effect(name).unwrap(), 1, hero);
                w.apply_effect(s, foe).unwrap();
            });
            if r.w.is_time_held(hero) {
                hero_held.push(f);
            }
            if r.w.is_time_held(foe) {
                foe_held.push(f);
            }
        }
        assert_eq!(foe_held, [1, 2, 3, 7, 8, 9]);
        assert_eq!(hero_held, [1, 2, 7, 8]);
        assert_eq!(c.effect_def(c.effect("Slam").unwrap()).hitstop, 3);
        let err = ContentBuilder::new()
            .file("t.ron", r#"(effects: { "X": (hitstop: 121) })"#)
            .build()
            .expect_err("too long");
        assert_eq!(err.kind, ContentErrorKind::InvalidValue);
        assert!(err.to_string().contains("t.ron:1:") && err.to_string().contains("hitstop"));
    }

    /// A time scale of 0.5 holds every other frame (the first one included): timeline frame k
    /// is reached at world frame 2k − 1 and a 30-frame effect lasts 60 frames; back at 1 the
    /// clock runs with the world again.
    #[test]
    fn f_ga_23_time_scale_slows_an_entity() {
        let mut r = rig();
        let (hero, mv) = (r.hero, r.h("Move"));
        let c = r.w.content().clone();
        let poison = c.effect("Poison").unwrap();
        let poisoned = c.tag("State.Poisoned").unwrap();
        r.w.set_time_scale(hero, Fx::from_num(0.5));
        assert_eq!(r.w.time_scale(hero), Fx::from_num(0.5));
        let (mut hits, mut ended, mut gone) = (vec![], None, None);
        for f in 0..70u32 {
            r.w.step_with(&[0, 0], |w| {
                if f == 0 {
                    w.try_activate(mv).unwrap();
                    let s = w.make_spec(poison, 1, hero);
                    w.apply_effect(s, hero).unwrap();
                }
            });
            assert_eq!(r.w.is_time_held(hero), f % 2 == 0, "frame {f}");
            hits.extend(r.w.output().gameplay_events.iter().map(|e| e.frame));
            if ended.is_none() && !r.w.is_ability_active(mv) {
                ended = Some(f);
            }
            if gone.is_none() && !r.w.has_tag(hero, poisoned) {
                gone = Some(f);
            }
        }
        assert_eq!(hits, [7]);
        assert_eq!(ended, Some(19));
        assert_eq!(gone, Some(59));
        assert_eq!(r.w.attr(hero, c.attr("Health").unwrap()), Some(Fx::from_num(97)));
        r.w.set_time_scale(hero, Fx::ONE);
        r.w.step(&[0, 0]);
        r.w.step(&[0, 0]);
        assert!(!r.w.is_time_held(hero));
        assert_eq!(r.w.time_scale(hero), Fx::ONE);
    }

    /// A timeline's rate can change while it plays: every notify and window still fires
    /// once, at the frame the new rate reaches it.
    #[test]
    fn timeline_rate_changes_mid_play() {
        for (rate, hit_at, end_at) in [(2.0, 3u32, 6u32), (0.5, 6, 18), (1.0, 4, 10)] {
            let mut r = rig();
            let (hero, mv) = (r.hero, r.h("Move"));
            let window = r.w.content().tag("State.Attacking").unwrap();
            let (mut hits, mut window_events, mut ended) = (vec![], 0, None);
            for f in 0..30u32 {
                r.w.step_with(&[0, 0], |w| {
                    if f == 0 {
                        w.try_activate(mv).unwrap();
                    }
                    if f == 2 {
                        let task = w.timeline_task(mv).unwrap();
                        assert_eq!(w.timeline_rate(task), Some(Fx::ONE));
                        assert!(w.set_timeline_rate(task, Fx::from_num(rate)));
                    }
                });
                let out = r.w.output();
                hits.extend(out.gameplay_events.iter().map(|e| e.frame));
                window_events += out.tag_events.iter().filter(|t| t.tag == window).count();
                if ended.is_none() && !r.w.is_ability_active(mv) {
                    ended = Some(f);
                }
            }
            assert_eq!(hits, [hit_at], "rate {rate}");
            assert_eq!(window_events, 2, "rate {rate}: opened and closed once");
            assert_eq!(ended, Some(end_at), "rate {rate}");
            assert!(!r.w.has_tag(hero, window));
        }
    }

    /// A custom task kind ticks once per frame of its owner's clock, keeps its state in the
    /// task pool and reports through `on_task`; hitstop holds it like a built-in task.
    #[test]
    fn f_at_06_custom_task_kinds_tick_in_owner_time_and_report() {
        for (stop, expected) in [(false, [2u32, 4]), (true, [5, 7])] {
            let mut r = rig();
            let (hero, charger) = (r.hero, r.h("Charger"));
            assert_eq!(r.w.task_kind("Nope"), None);
            assert!(r.w.hooks_signature().contains("task_kind Charge"));
            for f in 0..12u32 {
                r.w.step_with(&[0, 0], |w| {
                    if f == 0 {
                        w.try_activate(charger).unwrap();
                    }
                    if f == 1 && stop {
                        w.hitstop(hero, 3);
                    }
                });
            }
            let reports = REPORTS.with(|l| l.borrow().clone());
            let want = [
                (expected[0], TaskEvent::Custom { code: 0, value: Fx::from_num(1) }),
                (expected[1], TaskEvent::Custom { code: 1, value: Fx::from_num(2) }),
            ];
            assert_eq!(reports, want, "hitstop: {stop}");
            assert!(!r.w.is_ability_active(charger));
            assert_eq!(r.w.tasks_of(charger).count(), 0);
        }
    }

    #[test]
    fn f_ga_22_input_buffer_content_is_checked() {
        for (text, kind) in [
            (r#"(abilities: { "X": (input_buffer: 121) })"#, ContentErrorKind::InvalidValue),
            (
                r#"(abilities: { "X": (input_buffer: 4, activate_on_input: false) })"#,
                ContentErrorKind::InvalidCombination,
            ),
        ] {
            let err = ContentBuilder::new().file("t.ron", text).build().expect_err(text);
            assert_eq!(err.kind, kind, "{err}");
            let shown = err.to_string();
            assert!(shown.contains("t.ron:1:") && shown.contains("input_buffer"), "{shown}");
        }
        // Content without buffers keeps its hash (the field is left out of the rendering).
        let a = Content::from_ron_str(r#"(abilities: { "X": (input: 0) })"#).unwrap();
        let b =
            Content::from_ron_str(r#"(abilities: { "X": (input: 0, input_buffer: 0) })"#).unwrap();
        assert_eq!(a.hash(), b.hash());
        assert!(!a.canonical_text().contains("input_buffer"));
    }

    /// Scripted play exercising buffers, hitstop, time scales, rate changes and custom tasks.
    fn busy_input(f: u32) -> u8 {
        if !f.is_multiple_of(3) {
            return 0;
        }
        let x = f.wrapping_mul(2_654_435_761) >> 27;
        [LIGHT, HEAVY, 0, 1 << 3, 1 << 4, 1 << 5, 1 << 6, HEAVY][(x % 8) as usize]
    }

    fn busy_script(w: &mut World<Pads>, hero: Entity, foe: Entity) {
        let f = w.frame();
        let c = w.content().clone();
        let owned = |w: &World<Pads>, n: &str| {
            let def = c.ability(n).unwrap();
            w.abilities(hero).find(|(_, s)| s.def == def).unwrap().0
        };
        match f % 40 {
            1 => {
                let _ = w.try_activate(owned(w, "Move"));
                let _ = w.try_activate(owned(w, "Charger"));
            }
            3 => {
                if let Some(t) = w.timeline_task(owned(w, "Move")) {
                    w.set_timeline_rate(t, Fx::from_num(1.5));
                }
            }
            5 => w.hitstop(hero, 4),
            7 => {
                w.hitstop(foe, 6);
                let s = w.make_spec(c.effect("Poison").unwrap(), 1, hero);
                let _ = w.apply_effect(s, foe);
            }
            11 => w.set_time_scale(hero, Fx::from_num(0.25)),
            23 => w.set_time_scale(hero, Fx::ONE),
            29 => w.set_time_scale(foe, Fx::ZERO),
            33 => w.set_time_scale(foe, Fx::from_num(0.75)),
            _ => {}
        }
        if f == 150 {
            w.despawn(foe); // a despawned entity's clock record goes with it
        }
    }

    /// Every feature above, rolled back at random depths (up to 1, 2, 5 and 8 frames): the same
    /// checksums as the straight run, at every frame.
    #[test]
    fn beyond_gas_features_are_rollback_invariant() {
        let frames = 240u32;
        let mut r = rig();
        let (hero, foe) = (r.hero, r.foe);
        let mut straight = Vec::new();
        let (mut held, mut buffered) = (0, 0);
        for f in 0..frames {
            r.w.step_with(&[busy_input(f), 0], |w| busy_script(w, hero, foe));
            straight.push(r.w.checksums());
            held += u32::from(r.w.is_time_held(hero));
            buffered += (0..8).filter(|i| r.w.buffered_press(0, *i).is_some()).count();
        }
        assert!(held > 20 && buffered > 0, "held {held}, buffered {buffered}");
        assert!(REPORTS.with(|l| !l.borrow().is_empty()), "custom tasks reported");
        for (seed, depth) in [(1u64, 1u32), (2, 2), (3, 5), (4, 8), (5, 8)] {
            let mut r = rig();
            let mut driver = RollbackDriver::new(&r.w, depth, seed);
            for _ in 0..frames {
                driver
                    .advance(
                        &mut r.w,
                        |f, i| i.extend([busy_input(f), 0]),
                        |w| busy_script(w, hero, foe),
                    )
                    .unwrap_or_else(|d| panic!("seed {seed}: {d}"));
                assert_eq!(r.w.checksums(), straight[r.w.frame() as usize], "seed {seed}");
            }
            assert_eq!(driver.stats().max_depth, depth, "seed {seed}");
        }
    }

    /// The clocks and buffers are state: they change the checksum while in use.
    #[test]
    fn clocks_and_buffers_are_in_the_checksum() {
        let mut r = rig();
        r.w.step(&[0, 0]);
        let before = r.w.checksums();
        r.w.hitstop(r.hero, 3);
        assert_ne!(r.w.checksums(), before);
        // Same inputs from frame 2 on; only the buffered press of frame 1 differs.
        let (mut r, mut r2) = (rig(), rig());
        for input in [LIGHT, HEAVY, 0, 0] {
            r.w.step(&[input, 0]);
        }
        for input in [LIGHT, 0, 0, 0] {
            r2.w.step(&[input, 0]);
        }
        assert_eq!(r.w.buffered_press(0, 1), Some(1));
        assert_ne!(r.w.checksums(), r2.w.checksums());
    }
}

/// Granting a definition the owner already has gives a second spec, as each `GiveAbility`
/// does in GAS: its own slot and handle, listed by `abilities`, while `find_ability` finds the
/// first; each activates and ends on its own.
#[test]
fn granting_twice_gives_a_second_spec() {
    let mut w = crate::common::world(r#"(abilities: { "Dash": (end_after: Frames(3)) })"#);
    let hero = crate::common::actor(&mut w, &[]);
    let dash = w.content().ability("Dash").unwrap();
    let first = w.grant_ability(hero, dash, 1).unwrap();
    let second = w.grant_ability(hero, dash, 2).unwrap();
    assert_ne!(first, second);
    let handles: Vec<_> = w.abilities(hero).map(|(h, s)| (h, s.level)).collect();
    assert_eq!(handles, [(first, 1), (second, 2)]);
    assert_eq!(w.find_ability(hero, dash), Some(first));
    assert!(w.try_activate(second).is_ok());
    assert!(w.is_ability_active(second) && !w.is_ability_active(first));
}
