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

mod activation;
mod beyond_gas;
mod costs_and_cooldowns;
mod gas_fidelity;
mod grants;
mod lifecycle;
mod randomness_and_rollback;
mod targeting;
mod tasks;
mod timelines;

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
// Content shared by several areas: one ability per instancing mode, two scripted workers
// ---------------------------------------------------------------------------------------------

const MODES: &str = r#"(abilities: {
    "PerExec": (tags: ["Ability.Skill.Fire"], instancing: PerExecution, state_size: 4,
                activation_owned_tags: ["State.Casting"], behaviour: "Script"),
    "PerActor": (tags: ["Ability.Skill.Ice"], instancing: PerActor, state_size: 4,
                 activation_owned_tags: ["State.Casting"], behaviour: "Script"),
    "NonInst": (tags: ["Ability.Movement.Dash"], instancing: NonInstanced,
                activation_owned_tags: ["State.Casting"], behaviour: "Script"),
})"#;

const WORKERS: &str = r#"(abilities: {
    "Worker": (tags: ["Ability.Skill.Fire"], behaviour: "Script"),
    "Helper": (tags: ["Ability.Skill.Ice"], behaviour: "Script"),
})"#;
