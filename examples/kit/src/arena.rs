//! The reference workload "arena": the scene the benchmarks, the allocation tests and the
//! performance documentation (`docs/performance.md`) measure.
//!
//! # The workload
//!
//! [`ArenaSpec::entities`] fighters (256 by default) in pairs; each fighter's opponent is its
//! pair partner. Fighters 0 and 1 are bound to players 0 and 1 and driven by a deterministic input
//! pattern ([`Arena::player_input`]); every other fighter is scripted by the game's systems
//! ([`ArenaGame`]), as a function of the frame only, so every re-simulation after a rollback does
//! the same thing.
//!
//! The generated content ([`content_ron`]) has:
//!
//! - at least [`ArenaSpec::tags`] registered tags (160 by default, implicit parents included):
//!   states, ability tags, effect tags, traits, auras, cues, events and a set of marker tags that
//!   the trait effects grant so tag counts spread over the whole registry;
//! - 16 attributes in 4 sets (`Vitals`, `Resources`, `Offense`, `Movement`), with clamps that
//!   read other attributes;
//! - 24 duration/infinite effect definitions per fighter plus 8 instant ones (costs, strikes,
//!   heal, adrenaline) and two registered damage executions;
//! - 6 abilities, two timelines and a root-motion curve.
//!
//! Every fighter in steady state (after [`Arena::WARMUP`] frames, which [`Arena::new`] runs) has:
//!
//! - 16 attributes;
//! - exactly 24 active effects: 4 periodic (`RegenHealth` every 12 frames, `RegenMana` every 20,
//!   `RegenStamina` every 30, and `Burn`: 240 frames long, every 60, with a persistent and an
//!   executed cue), 2 stacked (`Rage`: 5 stacks, one stack expires every 120 frames and the
//!   passive adds one every 30; `Fortify`: 4 stacks, infinite), 12 infinite traits (two of them
//!   switched off by ongoing requirements while the fighter guards, one with a persistent cue)
//!   and 6 auras of 97 to 240 frames that the script re-applies in the frame they expire;
//! - 6 granted abilities: the passive `Stance` is always active with two running tasks (a
//!   `Repeat` adding Rage/Fortify stacks and a `WaitDamage` answering every hit with
//!   `Adrenaline`); `Jab` and `Heavy` play timelines whose hit notify applies a damage execution
//!   to the opponent (with an executed cue); `Heal` heals at once; `Dash` runs a root-motion
//!   task; `Guard` holds `State.Guarding` for up to 30 frames. Every ability except `Stance` has
//!   an instant cost. Scripted fighters try `Jab`, `Heavy`, `Heal`, `Dash` and `Guard` every 45,
//!   97, 160, 71 and 131 frames (phase-shifted per fighter); activations that fail (already
//!   active, blocked, cannot afford) are part of the workload.
//!
//! Per frame at 256 fighters that is, on average, about 47 periodic executions, 12 activation
//! attempts, 8 damage executions and 5 timed effects expiring and being re-applied (with their
//! tag, attribute, task and cue consequences).
//!
//! ```
//! use rollback_abilities_kit::arena::{Arena, ArenaSpec};
//! let mut arena = Arena::new(ArenaSpec { entities: 16, ..ArenaSpec::default() });
//! arena.step();
//! let shape = arena.shape();
//! assert_eq!((shape.min_effects, shape.max_effects), (24, 24));
//! ```

use bytemuck::{Pod, Zeroable};
use core::fmt::Write as _;
use rollback_abilities::Content;
use rollback_abilities::ModOp;
use rollback_abilities::num::{self, Fx};
use rollback_abilities::{AbilityCtx, InputEdge, TaskEvent, TaskResult, TaskSpec};
use rollback_abilities::{
    AbilityDefId, AbilityHandle, AttrId, CurveId, EffectDefId, Entity, TagId,
};
use rollback_abilities::{
    AbilityInput, Behaviour, Capture, EffectEvent, ExecCtx, FrameOutput, Game, Hooks, World,
    WorldConfig,
};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The parameters of an arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArenaSpec {
    /// Fighters (at least 2; rounded up to an even number).
    pub entities: u32,
    /// The least number of registered tags (implicit parents included; at least 128).
    pub tags: u32,
    /// The session seed.
    pub seed: u64,
    /// Active-effect capacity per fighter (24 are used in steady state; at least 24). The
    /// default is exactly 24: every slot of capacity is snapshot bytes that every save, load
    /// and checksum touches, used or not.
    pub effects_per_entity: u16,
    /// Granted-ability capacity per fighter (6 are used; at least 6; default 6).
    pub abilities_per_entity: u16,
    /// Task-pool slots per fighter (the pool holds `entities × tasks_per_entity`; at least 4,
    /// the default: about 3.2 tasks per fighter are live at the peak).
    pub tasks_per_entity: u32,
}

impl Default for ArenaSpec {
    fn default() -> Self {
        ArenaSpec {
            entities: 256,
            tags: 160,
            seed: 0x0041_5245_4E41,
            effects_per_entity: 24,
            abilities_per_entity: 6,
            tasks_per_entity: 4,
        }
    }
}

/// The arena the determinism fuzz harness runs (`rollback-abilities fuzz --arena`): 8 fighters,
/// the default seed (each case sets its own). Replays of its findings are recognised by its
/// content hash.
pub fn fuzz_spec() -> ArenaSpec {
    ArenaSpec { entities: 8, ..ArenaSpec::default() }
}

/// Input bits of the arena's `u8` input (bit `i` is ability input `i`).
pub mod input {
    /// `Jab` (input 0).
    pub const JAB: u8 = 1 << 0;
    /// `Heavy` (input 1).
    pub const HEAVY: u8 = 1 << 1;
    /// `Heal` (input 2).
    pub const HEAL: u8 = 1 << 2;
    /// `Dash` (input 3).
    pub const DASH: u8 = 1 << 3;
    /// `Guard` (input 4; released ends it).
    pub const GUARD: u8 = 1 << 4;
}

/// The ability slots, in grant order.
const ABILITIES: [&str; 6] = ["Stance", "Jab", "Heavy", "Heal", "Dash", "Guard"];
/// Scripted fighters try ability `k` (slot order, `Stance` excluded) every `AI_PERIODS[k]`
/// frames.
const AI_PERIODS: [u32; 6] = [0, 45, 97, 160, 71, 131];
/// Durations of the six auras (re-applied in the frame they expire).
const AURA_FRAMES: [u32; 6] = [97, 120, 143, 180, 211, 240];
/// The length of `Burn` (re-applied in the frame it expires).
const BURN_FRAMES: u32 = 240;
/// Attributes modified by the twelve traits, and whether the trait multiplies.
const TRAITS: [(&str, bool); 12] = [
    ("MaxHealth", false),
    ("Armor", false),
    ("MaxMana", false),
    ("MaxStamina", false),
    ("AttackPower", false),
    ("CritDamage", false),
    ("Haste", true),
    ("MoveSpeed", true),
    ("JumpHeight", false),
    ("CritChance", false),
    ("Shield", false),
    ("MaxHealth", true),
];
/// Attributes modified by the six auras.
const AURAS: [&str; 6] = ["MoveSpeed", "AttackPower", "Armor", "Haste", "CritDamage", "MaxMana"];

/// The arena's game: fighters with a position, an opponent and their ability handles; the
/// scripted behaviour runs in [`Game::systems`].
#[derive(Debug)]
pub struct ArenaGame;

/// A fighter's game component (in the snapshot).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable, serde::Serialize)]
pub struct Fighter {
    /// Position (moved by `Dash`'s root motion).
    pub x: Fx,
    /// Position.
    pub y: Fx,
    /// The fighter its attacks hit.
    pub opponent: Entity,
    /// Its six abilities in slot order: Stance, Jab, Heavy, Heal, Dash, Guard.
    pub abilities: [AbilityHandle; 6],
    /// The frame its effects and abilities were set up (`u32::MAX`: not yet).
    pub phase: u32,
    /// `p + 1` for the fighter of player `p`, 0 for scripted fighters.
    pub player: u32,
}

/// Content ids the game's functions need (in the snapshot's global block, so every world
/// carries the ids of its own content).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct ArenaIds {
    /// `Rage` (stacked).
    pub rage: EffectDefId,
    /// `Fortify` (stacked).
    pub fortify: EffectDefId,
    /// `JabStrike` (instant damage).
    pub jab_strike: EffectDefId,
    /// `HeavyStrike` (instant damage).
    pub heavy_strike: EffectDefId,
    /// `HealSelf` (instant heal).
    pub heal_self: EffectDefId,
    /// `Adrenaline` (instant, on damage).
    pub adrenaline: EffectDefId,
    /// `Burn` (periodic, re-applied).
    pub burn: EffectDefId,
    /// `Aura0` … `Aura5` (timed, re-applied).
    pub auras: [EffectDefId; 6],
    /// `Event.Hit` (both hit notifies are below it).
    pub hit: TagId,
    /// `Event.Hit.Heavy`.
    pub hit_heavy: TagId,
    /// The dash curve.
    pub dash_curve: CurveId,
    /// `Health`.
    pub health: AttrId,
    _reserved: u16,
}

/// The arena's global block.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct ArenaGlobal {
    /// Fighters (slots `0..entities`, generation 1: the arena never despawns).
    pub entities: u32,
    /// Content ids.
    pub ids: ArenaIds,
}

impl Game for ArenaGame {
    type Input = u8;
    type Component = Fighter;
    type Global = ArenaGlobal;

    fn ability_input(input: &u8) -> AbilityInput {
        AbilityInput { held: u32::from(*input & 0x1f), confirm: false, cancel: false }
    }

    /// The scripted behaviour: timed effects are re-applied in the frame they expire, and
    /// scripted fighters try their abilities on a fixed schedule. A function of the frame and
    /// the snapshot only.
    fn systems(w: &mut World<Self>) {
        let frame = w.frame();
        let g = *w.global();
        for index in 0..g.entities {
            let e = Entity { index, generation: 1 };
            let Some(f) = w.component(e).copied() else { continue };
            if f.phase == u32::MAX || frame <= f.phase {
                continue;
            }
            let age = frame - f.phase;
            for (k, d) in AURA_FRAMES.iter().enumerate() {
                if age.is_multiple_of(*d) {
                    let spec = w.make_spec(g.ids.auras[k], 1, e);
                    let _ = w.apply_effect(spec, e);
                }
            }
            if age.is_multiple_of(BURN_FRAMES) {
                let spec = w.make_spec(g.ids.burn, 1, f.opponent);
                let _ = w.apply_effect(spec, e);
            }
            if f.player == 0 {
                let shift = index.wrapping_mul(13);
                for (k, p) in AI_PERIODS.iter().enumerate().skip(1) {
                    if age.wrapping_add(shift) % p == 0 {
                        let _ = w.try_activate(f.abilities[k]);
                    }
                }
            }
        }
    }

    fn root_motion(w: &mut World<Self>, avatar: Entity, delta: [Fx; 2]) {
        if let Some(f) = w.component_mut(avatar) {
            f.x = num::add(f.x, delta[0]);
            f.y = num::add(f.y, delta[1]);
        }
    }
}

// ============================================================================================
// Registered functions
// ============================================================================================

type Ctx<'w> = AbilityCtx<'w, ArenaGame>;

fn ids(ctx: &Ctx<'_>) -> ArenaIds {
    ctx.world().global().ids
}

fn opponent(ctx: &Ctx<'_>) -> Entity {
    ctx.world().component(ctx.owner()).map(|f| f.opponent).unwrap_or(Entity::NONE)
}

/// `Stance` (passive): a repeat adding stacks and a damage listener.
fn stance_activate(ctx: &mut Ctx<'_>) {
    let _ = ctx.spawn_task(0, TaskSpec::Repeat { count: 0, every: 30 });
    let health = ids(ctx).health;
    let _ = ctx.spawn_task(1, TaskSpec::WaitDamage { attr: health, once: false });
}

fn stance_task(ctx: &mut Ctx<'_>, r: &TaskResult) {
    let i = ids(ctx);
    let owner = ctx.owner();
    match r.event {
        TaskEvent::Tick(n) => {
            let spec = ctx.make_spec(i.rage);
            ctx.apply(spec, owner);
            if n % 4 == 0 {
                let spec = ctx.make_spec(i.fortify);
                ctx.apply(spec, owner);
            }
        }
        TaskEvent::Damaged { .. } => {
            let spec = ctx.make_spec(i.adrenaline);
            ctx.apply(spec, owner);
        }
        _ => {}
    }
}

/// `Jab` and `Heavy`: the timeline's hit notify becomes a strike on the opponent.
fn melee_activate(ctx: &mut Ctx<'_>) {
    let hit = ids(ctx).hit;
    let _ = ctx.spawn_task(0, TaskSpec::WaitEvent { tag: hit, once: false });
}

fn melee_task(ctx: &mut Ctx<'_>, r: &TaskResult) {
    let TaskEvent::Event(ev) = r.event else { return };
    let i = ids(ctx);
    let def = if ev.tag == i.hit_heavy { i.heavy_strike } else { i.jab_strike };
    let spec = ctx.make_spec(def);
    let target = opponent(ctx);
    ctx.apply(spec, target);
}

fn heal_activate(ctx: &mut Ctx<'_>) {
    let spec = ctx.make_spec(ids(ctx).heal_self);
    let owner = ctx.owner();
    ctx.apply(spec, owner);
    ctx.end();
}

fn dash_activate(ctx: &mut Ctx<'_>) {
    let w = ctx.world();
    let me = w.component(ctx.owner()).map(|f| f.x).unwrap_or(Fx::ZERO);
    let them = w.component(opponent(ctx)).map(|f| f.x).unwrap_or(Fx::ZERO);
    let dir = if me < them { Fx::ONE } else { num::neg(Fx::ONE) };
    let curve = ids(ctx).dash_curve;
    let _ = ctx.spawn_task(0, TaskSpec::RootMotion { curve, frames: 8, dir: [dir, Fx::ZERO] });
}

fn end_on_finish(ctx: &mut Ctx<'_>, r: &TaskResult) {
    if r.event == TaskEvent::Finished {
        ctx.end();
    }
}

fn end_on_release(ctx: &mut Ctx<'_>, edge: InputEdge) {
    if edge == InputEdge::Released {
        ctx.end();
    }
}

/// The damage executions: `AttackPower` (+ `bonus`) of the source, plus `CritDamage` with
/// probability `CritChance`, minus the target's `Armor`, at least 1.
fn damage_with(ctx: &mut ExecCtx<'_>, bonus: i64) {
    let (power, chance, crit, armor) =
        (ctx.capture(0), ctx.capture(1), ctx.capture(2), ctx.capture(3));
    let mut dmg = num::add(power, num::int(bonus));
    if ctx.random().chance(chance) {
        dmg = num::add(dmg, crit);
    }
    let dmg = num::sub(dmg, armor).max(Fx::ONE);
    if let Ok(health) = ctx.content().attr("Health") {
        ctx.output(health, ModOp::Add, num::neg(dmg));
    }
}

fn jab_damage(ctx: &mut ExecCtx<'_>) {
    damage_with(ctx, 0);
}

fn heavy_damage(ctx: &mut ExecCtx<'_>) {
    damage_with(ctx, 10);
}

/// The registered functions the arena content names.
pub fn hooks() -> Hooks<ArenaGame> {
    let captures = [
        Capture::source("AttackPower"),
        Capture::source("CritChance"),
        Capture::source("CritDamage"),
        Capture::target("Armor"),
    ];
    Hooks::new()
        .behaviour(
            "Stance",
            Behaviour {
                on_activate: Some(stance_activate),
                on_task: Some(stance_task),
                ..Behaviour::default()
            },
        )
        .behaviour(
            "Melee",
            Behaviour {
                on_activate: Some(melee_activate),
                on_task: Some(melee_task),
                ..Behaviour::default()
            },
        )
        .behaviour("Heal", Behaviour { on_activate: Some(heal_activate), ..Behaviour::default() })
        .behaviour(
            "Dash",
            Behaviour {
                on_activate: Some(dash_activate),
                on_task: Some(end_on_finish),
                ..Behaviour::default()
            },
        )
        .behaviour("Guard", Behaviour { on_input: Some(end_on_release), ..Behaviour::default() })
        .execution("JabDamage", &captures, jab_damage)
        .execution("HeavyDamage", &captures, heavy_damage)
}

// ============================================================================================
// Content
// ============================================================================================

/// The tags the content uses by name (marker tags are added to reach [`ArenaSpec::tags`]).
fn named_tags() -> Vec<String> {
    let mut v: Vec<String> = [
        "State.Guarding",
        "State.Attacking",
        "State.Dashing",
        "State.Burning",
        "Ability.Passive.Stance",
        "Ability.Attack.Jab",
        "Ability.Attack.Heavy",
        "Ability.Support.Heal",
        "Ability.Movement.Dash",
        "Ability.Defense.Guard",
        "Effect.Regen",
        "Effect.Dot",
        "Effect.Damage",
        "Effect.Cost",
        "Buff.Rage",
        "Buff.Fortify",
        "Event.Hit.Jab",
        "Event.Hit.Heavy",
        "Window.Combo",
        "GameplayCue.Hit",
        "GameplayCue.Burn",
        "GameplayCue.Shield",
        "GameplayCue.Aura",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend((0..TRAITS.len()).map(|k| format!("Trait.T{k:02}")));
    v.extend((0..AURAS.len()).map(|k| format!("Aura.A{k}")));
    v
}

fn with_parents(names: &[String]) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for n in names {
        for (i, c) in n.char_indices() {
            if c == '.' {
                all.insert(n[..i].to_string());
            }
        }
        all.insert(n.clone());
    }
    all
}

/// The arena's content as RON text (what [`Arena::new`] freezes).
// Long because it writes the content's RON text in the order of its sections (tags, attribute
// sets, effects, abilities, cues), each a few lines of `format!`: read it as a template.
pub fn content_ron(spec: &ArenaSpec) -> String {
    let mut tags = named_tags();
    let want = spec.tags.max(128) as usize;
    let mut markers = 0usize;
    while with_parents(&tags).len() < want {
        tags.push(format!("Arena.Marker.M{markers:03}"));
        markers += 1;
    }
    let marker = |k: usize| -> Option<String> {
        (markers > 0).then(|| format!("Arena.Marker.M{:03}", k % markers))
    };
    let mut s = String::with_capacity(16 * 1024);
    s.push_str("// Generated by rollback_abilities_kit::arena::content_ron.\n(\n    tags: [\n");
    for t in &tags {
        let _ = writeln!(s, "        \"{t}\",");
    }
    s.push_str(
        r#"    ],
    attribute_sets: {
        "Vitals": (attributes: {
            "Health": (default: 500, min: Const(0), max: Attr("MaxHealth")),
            "MaxHealth": (default: 500, min: Const(1)),
            "Armor": (default: 5, min: Const(0)),
            "Shield": (default: 0, min: Const(0), max: Const(400)),
        }),
        "Resources": (attributes: {
            "Mana": (default: 100, min: Const(0), max: Attr("MaxMana")),
            "MaxMana": (default: 100, min: Const(1)),
            "Stamina": (default: 100, min: Const(0), max: Attr("MaxStamina")),
            "MaxStamina": (default: 100, min: Const(1)),
            "Energy": (default: 0, min: Const(0), max: Const(100)),
            "Focus": (default: 50, min: Const(0), max: Const(100)),
        }),
        "Offense": (attributes: {
            "AttackPower": (default: 10),
            "CritChance": (default: 0.1, min: Const(0), max: Const(1)),
            "CritDamage": (default: 5),
            "Haste": (default: 1, min: Const(0.1)),
        }),
        "Movement": (attributes: {
            "MoveSpeed": (default: 600, min: Const(0)),
            "JumpHeight": (default: 100, min: Const(0)),
        }),
    },
    curves: {
        "DashCurve": (interp: Linear, points: [(0, 0), (8, 120)]),
    },
    effects: {
        // ---- 4 periodic -------------------------------------------------------------------
        "RegenHealth": (duration: Infinite, period: Frames(12), asset_tags: ["Effect.Regen"],
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: 4))]),
        "RegenMana": (duration: Infinite, period: Frames(20), asset_tags: ["Effect.Regen"],
            modifiers: [(attribute: "Mana", op: Add, magnitude: Scalable(coef: 3))]),
        "RegenStamina": (duration: Infinite, period: Frames(30), asset_tags: ["Effect.Regen"],
            modifiers: [(attribute: "Stamina", op: Add, magnitude: Scalable(coef: 15))]),
        "Burn": (duration: Frames(240), period: Frames(60), asset_tags: ["Effect.Dot"],
            granted_tags: ["State.Burning"],
            modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: -2))],
            cues: [(tag: "GameplayCue.Burn")]),
        // ---- 2 stacked --------------------------------------------------------------------
        "Rage": (duration: Frames(120), granted_tags: ["Buff.Rage"],
            modifiers: [(attribute: "AttackPower", op: Add, magnitude: Scalable(coef: 1))],
            stacking: (kind: ByTarget, limit: 5, refresh: Never, expiration: RemoveOneAndRefresh)),
        "Fortify": (duration: Infinite, granted_tags: ["Buff.Fortify"],
            modifiers: [(attribute: "Armor", op: Add, magnitude: Scalable(coef: 2))],
            stacking: (kind: ByTarget, limit: 4)),
"#,
    );
    // ---- 12 infinite traits ----------------------------------------------------------------
    for (k, (attr, mul)) in TRAITS.iter().enumerate() {
        let (op, mag) = if *mul { ("Multiply", "1.05") } else { ("Add", "2") };
        let mut granted = format!("\"Trait.T{k:02}\"");
        if let Some(m) = marker(2 * k) {
            let _ = write!(granted, ", \"{m}\"");
        }
        if let Some(m) = marker(2 * k + 1) {
            let _ = write!(granted, ", \"{m}\"");
        }
        let _ = write!(
            s,
            "        \"Trait{k}\": (duration: Infinite, granted_tags: [{granted}],\n            modifiers: [(attribute: \"{attr}\", op: {op}, magnitude: Scalable(coef: {mag}))"
        );
        if k % 3 == 0 {
            s.push_str(", (attribute: \"Focus\", op: Add, magnitude: Scalable(coef: 1))");
        }
        s.push(']');
        if k == 3 || k == 7 {
            s.push_str(", ongoing_requirements: (ignore: [\"State.Guarding\"])");
        }
        if k == 10 {
            s.push_str(", cues: [(tag: \"GameplayCue.Shield\")]");
        }
        s.push_str("),\n");
    }
    // ---- 6 timed auras ---------------------------------------------------------------------
    for (k, attr) in AURAS.iter().enumerate() {
        let _ = write!(
            s,
            "        \"Aura{k}\": (duration: Frames({}), granted_tags: [\"Aura.A{k}\"],\n            modifiers: [(attribute: \"{attr}\", op: Add, magnitude: Scalable(coef: 3))]",
            AURA_FRAMES[k]
        );
        if k == 0 {
            s.push_str(", cues: [(tag: \"GameplayCue.Aura\")]");
        }
        s.push_str("),\n");
    }
    s.push_str(
        r#"        // ---- instant --------------------------------------------------------------------
        "JabStrike": (asset_tags: ["Effect.Damage"], executions: [(calc: "JabDamage")],
            cues: [(tag: "GameplayCue.Hit")]),
        "HeavyStrike": (asset_tags: ["Effect.Damage"], executions: [(calc: "HeavyDamage")],
            cues: [(tag: "GameplayCue.Hit")]),
        "HealSelf": (modifiers: [(attribute: "Health", op: Add, magnitude: Scalable(coef: 25))]),
        "Adrenaline": (modifiers: [(attribute: "Energy", op: Add, magnitude: Scalable(coef: 1))]),
        "JabCost": (asset_tags: ["Effect.Cost"],
            modifiers: [(attribute: "Stamina", op: Add, magnitude: Scalable(coef: -5))]),
        "HeavyCost": (asset_tags: ["Effect.Cost"],
            modifiers: [(attribute: "Stamina", op: Add, magnitude: Scalable(coef: -15))]),
        "HealCost": (asset_tags: ["Effect.Cost"],
            modifiers: [(attribute: "Mana", op: Add, magnitude: Scalable(coef: -20))]),
        "DashCost": (asset_tags: ["Effect.Cost"],
            modifiers: [(attribute: "Stamina", op: Add, magnitude: Scalable(coef: -10))]),
    },
    abilities: {
        "Stance": (tags: ["Ability.Passive.Stance"], passive: true, activate_on_input: false,
            behaviour: "Stance"),
        "Jab": (tags: ["Ability.Attack.Jab"], activation_blocked_tags: ["State.Attacking"],
            activation_owned_tags: ["State.Attacking"], cost: "JabCost", timeline: "JabTimeline",
            input: 0, behaviour: "Melee"),
        "Heavy": (tags: ["Ability.Attack.Heavy"], cancel_abilities_with_tags: ["Ability.Attack.Jab"],
            activation_blocked_tags: ["State.Guarding"], activation_owned_tags: ["State.Attacking"],
            cost: "HeavyCost", timeline: "HeavyTimeline", input: 1, behaviour: "Melee"),
        "Heal": (tags: ["Ability.Support.Heal"], cost: "HealCost", input: 2, behaviour: "Heal"),
        "Dash": (tags: ["Ability.Movement.Dash"], activation_owned_tags: ["State.Dashing"],
            cost: "DashCost", input: 3, behaviour: "Dash"),
        "Guard": (tags: ["Ability.Defense.Guard"], activation_blocked_tags: ["State.Attacking"],
            activation_owned_tags: ["State.Guarding"], end_after: Frames(30), input: 4,
            behaviour: "Guard"),
    },
    timelines: {
        "JabTimeline": (startup: 3, active: 2, recovery: 8,
            notifies: [(frame: 3, event: "Event.Hit.Jab")],
            windows: [(from: 5, to: 10, tag: "Window.Combo")]),
        "HeavyTimeline": (startup: 6, active: 3, recovery: 12,
            notifies: [(frame: 6, event: "Event.Hit.Heavy")]),
    },
)
"#,
    );
    s
}

// ============================================================================================
// The arena
// ============================================================================================

/// The steady-state shape of an arena (what the shape test and the docs check).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArenaShape {
    /// Fighters.
    pub entities: u32,
    /// The fewest active effects on a fighter.
    pub min_effects: usize,
    /// The most active effects on a fighter.
    pub max_effects: usize,
    /// Active effects over all fighters.
    pub total_effects: usize,
    /// Active periodic effects over all fighters.
    pub periodic_effects: usize,
    /// Active effects with more than one stack over all fighters.
    pub stacked_effects: usize,
    /// The fewest granted abilities on a fighter.
    pub min_abilities: usize,
    /// The fewest active abilities on a fighter.
    pub min_active_abilities: usize,
    /// The fewest live tasks owned by a fighter's abilities.
    pub min_tasks: usize,
    /// Live tasks in the pool.
    pub tasks_live: usize,
    /// Attributes per fighter.
    pub attributes: usize,
    /// Registered tags.
    pub tags: usize,
    /// Tags with a non-zero count, over all fighters.
    pub tag_counts_nonzero: usize,
    /// Snapshot size in bytes.
    pub snapshot_bytes: usize,
}

/// The reference arena: a world plus the deterministic driver of its two players.
pub struct Arena {
    /// The world.
    pub world: World<ArenaGame>,
    /// What it was built from.
    pub spec: ArenaSpec,
    /// The fighters, in slot order (fighters 0 and 1 belong to players 0 and 1).
    pub fighters: Vec<Entity>,
    inputs: [u8; 2],
}

impl core::fmt::Debug for Arena {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Arena").field("spec", &self.spec).field("world", &self.world).finish()
    }
}

/// What setting a fighter up applies and grants (the warm-up's ids, resolved once).
struct Setup {
    ids: ArenaIds,
    fighters: Vec<Entity>,
    abilities: Vec<AbilityDefId>,
    periodic: Vec<EffectDefId>,
    traits: Vec<EffectDefId>,
}

impl Setup {
    /// Fighter `i`'s regeneration, burn, buffs, traits, auras and abilities, its schedule
    /// starting at `frame`.
    fn set_up(&self, w: &mut World<ArenaGame>, i: usize, frame: u32) {
        let e = self.fighters[i];
        let opp = self.fighters[i ^ 1];
        let apply = |w: &mut World<ArenaGame>, def: EffectDefId, src: Entity| {
            let spec = w.make_spec(def, 1, src);
            let _ = w.apply_effect(spec, e);
        };
        for d in &self.periodic {
            apply(w, *d, e);
        }
        apply(w, self.ids.burn, opp);
        apply(w, self.ids.rage, e);
        apply(w, self.ids.fortify, e);
        for d in &self.traits {
            apply(w, *d, e);
        }
        for d in self.ids.auras {
            apply(w, d, e);
        }
        let handles: [AbilityHandle; 6] = core::array::from_fn(|k| {
            w.grant_ability(e, self.abilities[k], 1).unwrap_or(AbilityHandle::NONE)
        });
        if let Some(f) = w.component_mut(e) {
            f.abilities = handles;
            f.phase = frame;
        }
    }
}

impl Arena {
    /// Frames [`Arena::new`] steps to set every fighter up (fighter `i` in frame `i % WARMUP`,
    /// so periodic schedules, timers and tasks are spread over frames).
    pub const WARMUP: u32 = 32;

    /// The world configuration of an arena.
    pub fn config(spec: &ArenaSpec) -> WorldConfig {
        let n = spec.entities.max(2).next_multiple_of(2);
        WorldConfig {
            max_entities: n,
            effects_per_entity: spec.effects_per_entity.max(24),
            players: 2,
            seed: spec.seed,
            abilities_per_entity: spec.abilities_per_entity.max(6),
            max_tasks: n.saturating_mul(spec.tasks_per_entity.max(4)),
            max_standalone_cues: 8,
            max_stored_specs: 0,
            ..WorldConfig::default()
        }
    }

    /// The frozen content of an arena.
    ///
    /// # Panics
    ///
    /// Never for the generated text (the crate's tests freeze it for several specs).
    pub fn content(spec: &ArenaSpec) -> Arc<Content> {
        let text = content_ron(spec);
        match Content::from_ron_str(&text) {
            Ok(c) => Arc::new(c),
            Err(e) => panic!("the generated arena content does not freeze: {e}"),
        }
    }

    /// Builds the arena and steps it [`Arena::WARMUP`] frames, so it is in steady state.
    ///
    /// # Panics
    ///
    /// If the generated content or world cannot be built (a bug, covered by the tests).
    pub fn new(spec: ArenaSpec) -> Arena {
        let mut arena = Arena::unwarmed(spec);
        let mut warmup = arena.warmup();
        for frame in 0..Arena::WARMUP {
            let inputs = Arena::player_inputs(frame);
            arena.world.step_with(&inputs, &mut warmup);
        }
        arena.inputs = Arena::player_inputs(arena.world.next_frame());
        arena
    }

    /// The arena at frame 0, before its warm-up: the fighters spawned and bound, nothing
    /// applied or granted yet. Stepping it with [`Arena::player_inputs`] and [`Arena::warmup`]
    /// as the script for [`Arena::WARMUP`] frames gives [`Arena::new`]'s world (a driver that
    /// must start at frame 0, such as a GGRS session, runs the warm-up as its script).
    ///
    /// # Panics
    ///
    /// If the generated content or world cannot be built (a bug, covered by the tests).
    pub fn unwarmed(spec: ArenaSpec) -> Arena {
        let content = Arena::content(&spec);
        let config = Arena::config(&spec);
        let mut world = match World::new(content.clone(), &hooks(), config) {
            Ok(w) => w,
            Err(e) => panic!("the arena world cannot be built: {e}"),
        };
        let id = |r: Result<EffectDefId, _>| r.expect("arena effect");
        let ids = ArenaIds {
            rage: id(content.effect("Rage")),
            fortify: id(content.effect("Fortify")),
            jab_strike: id(content.effect("JabStrike")),
            heavy_strike: id(content.effect("HeavyStrike")),
            heal_self: id(content.effect("HealSelf")),
            adrenaline: id(content.effect("Adrenaline")),
            burn: id(content.effect("Burn")),
            auras: core::array::from_fn(|k| id(content.effect(&format!("Aura{k}")))),
            hit: content.tag("Event.Hit").expect("tag"),
            hit_heavy: content.tag("Event.Hit.Heavy").expect("tag"),
            dash_curve: content.curve("DashCurve").expect("curve"),
            health: content.attr("Health").expect("attribute"),
            _reserved: 0,
        };
        let n = config.max_entities;
        *world.global_mut() = ArenaGlobal { entities: n, ids };
        let sets: Vec<_> = ["Vitals", "Resources", "Offense", "Movement"]
            .iter()
            .map(|s| content.attr_set(s).expect("set"))
            .collect();
        let fighters: Vec<Entity> =
            (0..n).map(|_| world.spawn_actor(&sets).expect("capacity")).collect();
        for (i, e) in fighters.iter().enumerate() {
            let f = world.component_mut(*e).expect("alive");
            *f = Fighter {
                x: num::int(i as i64 * 10),
                y: Fx::ZERO,
                opponent: fighters[i ^ 1],
                abilities: [AbilityHandle::NONE; 6],
                phase: u32::MAX,
                player: if i < 2 { i as u32 + 1 } else { 0 },
            };
        }
        world.bind_player(0, fighters[0]);
        world.bind_player(1, fighters[1]);
        Arena { world, spec, fighters, inputs: Arena::player_inputs(0) }
    }

    /// The warm-up script of [`Arena::unwarmed`]'s world: in frames `0..WARMUP`, fighter `i`
    /// gets its regeneration, burn, buffs, traits, auras and abilities in frame
    /// `i % WARMUP`; from frame [`Arena::WARMUP`] on it does nothing.
    pub fn warmup(&self) -> impl Fn(&mut World<ArenaGame>) + Send + Sync + 'static {
        let setup = self.setup();
        move |w: &mut World<ArenaGame>| {
            let frame = w.frame();
            if frame >= Arena::WARMUP {
                return;
            }
            for i in 0..setup.fighters.len() {
                if i as u32 % Arena::WARMUP == frame {
                    setup.set_up(w, i, frame);
                }
            }
        }
    }

    /// The arena at frame 0 with every fighter already set up, in frame 0 (as if all were
    /// fighter 0 of [`Arena::warmup`]): for a driver that starts at frame 0 and runs no script,
    /// such as the determinism fuzz harness. Its schedules all start together, so it is not the
    /// benchmarks' steady state.
    ///
    /// # Panics
    ///
    /// If the generated content or world cannot be built (a bug, covered by the tests).
    pub fn ready(spec: ArenaSpec) -> Arena {
        let mut arena = Arena::unwarmed(spec);
        let setup = arena.setup();
        for i in 0..setup.fighters.len() {
            setup.set_up(&mut arena.world, i, 0);
        }
        arena
    }

    fn setup(&self) -> Setup {
        let content = self.world.content().clone();
        let id = |r: Result<EffectDefId, _>| r.expect("arena effect");
        Setup {
            ids: self.world.global().ids,
            fighters: self.fighters.clone(),
            abilities: ABILITIES.iter().map(|a| content.ability(a).expect("ability")).collect(),
            periodic: ["RegenHealth", "RegenMana", "RegenStamina"]
                .iter()
                .map(|n| id(content.effect(n)))
                .collect(),
            traits: (0..TRAITS.len()).map(|k| id(content.effect(&format!("Trait{k}")))).collect(),
        }
    }

    /// Player `player`'s input in `frame`: a fixed pattern of presses and holds of all five
    /// ability inputs.
    pub fn player_input(frame: u32, player: usize) -> u8 {
        let t = frame.wrapping_add(player as u32 * 37);
        let mut b = 0;
        if t % 40 < 2 {
            b |= input::JAB;
        }
        if t % 90 == 50 || t % 90 == 51 {
            b |= input::HEAVY;
        }
        if t % 160 == 80 {
            b |= input::HEAL;
        }
        if t % 70 == 20 {
            b |= input::DASH;
        }
        if t % 150 >= 100 && t % 150 < 120 {
            b |= input::GUARD;
        }
        b
    }

    /// Both players' inputs in `frame`.
    pub fn player_inputs(frame: u32) -> [u8; 2] {
        [Arena::player_input(frame, 0), Arena::player_input(frame, 1)]
    }

    /// The inputs the next [`Arena::step`] will use.
    pub fn next_inputs(&self) -> [u8; 2] {
        self.inputs
    }

    /// Steps one frame with the players' inputs for it (the scripted fighters run in
    /// [`Game::systems`]). Rollback-safe: the inputs are a function of the frame, so after a
    /// [`World::load`] the same frames are simulated the same way.
    pub fn step(&mut self) -> &FrameOutput {
        let inputs = Arena::player_inputs(self.world.next_frame());
        self.world.step(&inputs);
        self.inputs = Arena::player_inputs(self.world.next_frame());
        self.world.output()
    }

    /// Periodic executions in the last stepped frame.
    pub fn periodic_executions(&self) -> usize {
        self.world
            .output()
            .effect_events
            .iter()
            .filter(|e| matches!(e, EffectEvent::Executed { handle: Some(_), .. }))
            .count()
    }

    /// The current shape of the arena.
    pub fn shape(&self) -> ArenaShape {
        let w = &self.world;
        let content = w.content();
        let mut s = ArenaShape {
            entities: self.fighters.len() as u32,
            min_effects: usize::MAX,
            min_abilities: usize::MAX,
            min_active_abilities: usize::MAX,
            min_tasks: usize::MAX,
            attributes: content.num_attrs(),
            tags: content.tags().len(),
            snapshot_bytes: w.snapshot_bytes(),
            ..ArenaShape::default()
        };
        let mut tasks_per = vec![0usize; self.fighters.len()];
        for e in &self.fighters {
            let effects = w.effects(*e);
            s.min_effects = s.min_effects.min(effects.len());
            s.max_effects = s.max_effects.max(effects.len());
            s.total_effects += effects.len();
            s.periodic_effects +=
                effects.iter().filter(|ef| content.effect_def(ef.def).is_periodic()).count();
            s.stacked_effects += effects.iter().filter(|ef| ef.stacks > 1).count();
            let granted = w.abilities(*e).count();
            let active = w.abilities(*e).filter(|(_, sp)| sp.is_active()).count();
            s.min_abilities = s.min_abilities.min(granted);
            s.min_active_abilities = s.min_active_abilities.min(active);
            for (h, _) in w.abilities(*e) {
                let n = w.tasks_of(h).count();
                tasks_per[e.index as usize] += n;
                s.tasks_live += n;
            }
            s.tag_counts_nonzero += w.explicit_tags(*e).len();
        }
        s.min_tasks = tasks_per.iter().copied().min().unwrap_or(0);
        s
    }
}

pub mod baseline {
    //! What the arena's snapshot path is compared against (`docs/performance.md`):
    //!
    //! - [`GgrsState`], [`serialize_fixint`] and [`fletcher16`]: the save pattern of the GGRS
    //!   example game (`ex_game.rs`): the game state is an owned `#[derive(Clone, Serialize)]`
    //!   struct; saving serializes it with bincode 1.3, fletcher16s the bytes and clones the
    //!   state into the cell (dropping the previous clone). bincode is not a dependency of this
    //!   crate, so [`serialize_fixint`] is a serde serializer writing bincode 1.3's default
    //!   format (little-endian fixed-size integers, `u64` lengths, `u32` variant indices). The
    //!   state holds the same data as the arena snapshot, column by column, as typed records.
    //! - [`IdiomaticWorld`]: the same arena content as a hand-rolled heap world (hash maps of
    //!   attributes and tag counts, vectors of effects each with a vector of modifiers and of
    //!   granted tags, vectors of abilities each with a vector of tasks), the shape of a
    //!   conventional heap-based implementation; saving it is a `clone()`.
    //!
    //! None of this runs inside the simulation (the idiomatic world uses `f32`).

    use super::{ArenaGame, Fighter};
    use core::fmt;
    use rollback_abilities::ModOp;
    use rollback_abilities::StandaloneCue;
    use rollback_abilities::num::Fx;
    use rollback_abilities::{AbilitySpec, TaskRec};
    use rollback_abilities::{ActiveEffect, EffectOrigin, EffectSpec, EffectTimers};
    use rollback_abilities::{AttrValue, World};
    use serde::Serialize;
    use serde::ser;
    use std::collections::HashMap;

    /// Copies bytes into a vector of `T` (any alignment).
    fn pod_collect_to_vec<T: bytemuck::Pod>(b: &[u8]) -> Vec<T> {
        let n = b.len() / core::mem::size_of::<T>();
        let mut v = vec![<T as bytemuck::Zeroable>::zeroed(); n];
        let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut v);
        let len = dst.len();
        dst.copy_from_slice(&b[..len]);
        v
    }

    /// The fletcher16 of the GGRS example ("copied from wikipedia"): two `% 255` per byte.
    pub fn fletcher16(data: &[u8]) -> u16 {
        let mut sum1: u16 = 0;
        let mut sum2: u16 = 0;
        for b in data {
            sum1 = (sum1 + u16::from(*b)) % 255;
            sum2 = (sum2 + sum1) % 255;
        }
        (sum2 << 8) | sum1
    }

    /// The arena snapshot as an owned serde struct (the GGRS example's `State` shape).
    #[derive(Clone, Debug, Default, Serialize)]
    pub struct GgrsState {
        /// The next frame.
        pub frame: u32,
        /// Header and entity slots, as words.
        pub slots: Vec<u32>,
        /// Tag counts.
        pub tag_counts: Vec<u16>,
        /// Ancestor-expanded tag bits.
        pub tag_bits: Vec<u64>,
        /// Attribute values.
        pub attributes: Vec<AttrValue>,
        /// Active effects.
        pub effects: Vec<ActiveEffect>,
        /// When each effect expires and next executes.
        pub effect_timers: Vec<EffectTimers>,
        /// Who applied the effects that keep an origin (the used records of the pool).
        pub effect_origins: Vec<EffectOrigin>,
        /// Effect magnitudes.
        pub magnitudes: Vec<Fx>,
        /// Stored specs.
        pub specs: Vec<EffectSpec>,
        /// Granted abilities.
        pub abilities: Vec<AbilitySpec>,
        /// Ability state blobs.
        pub ability_state: Vec<u64>,
        /// The task pool.
        pub tasks: Vec<TaskRec>,
        /// Standalone cues.
        pub cues: Vec<StandaloneCue>,
        /// The game's components.
        pub fighters: Vec<Fighter>,
        /// Every other column's bytes (inputs, bindings, the global block).
        pub other: Vec<u8>,
    }

    impl GgrsState {
        /// The arena world's snapshot as typed records.
        pub fn from_world(w: &World<ArenaGame>) -> GgrsState {
            let mut s = GgrsState { frame: w.next_frame(), ..GgrsState::default() };
            w.for_each_column(|_, name, b| match name {
                "header" | "entities" => s.slots.extend(pod_collect_to_vec::<u32>(b)),
                "tag_counts" => s.tag_counts = pod_collect_to_vec(b),
                "tag_bits" => s.tag_bits = pod_collect_to_vec(b),
                "attributes" => s.attributes = pod_collect_to_vec(b),
                "effects" => s.effects = pod_collect_to_vec(b),
                "effect_timers" => s.effect_timers = pod_collect_to_vec(b),
                // The pool's used records: one per effect not applied by its target to itself
                // (read per entity; the pool's own order is not part of the public API).
                "effect_origins" => {
                    s.effect_origins = w
                        .entities()
                        .flat_map(|e| {
                            let own = EffectOrigin::of_self(e);
                            w.effect_origins(e).filter(move |o| *o != own)
                        })
                        .collect();
                }
                "effect_magnitudes" => s.magnitudes = pod_collect_to_vec(b),
                "effect_specs" => s.specs = pod_collect_to_vec(b),
                "ability_specs" => s.abilities = pod_collect_to_vec(b),
                "ability_state" => s.ability_state = pod_collect_to_vec(b),
                "tasks" => s.tasks = pod_collect_to_vec(b),
                "standalone_cues" => s.cues = pod_collect_to_vec(b),
                "components" => s.fighters = pod_collect_to_vec(b),
                _ => s.other.extend_from_slice(b),
            });
            s
        }
    }

    /// A serializer error (the formats here cannot fail; serde needs the type).
    #[derive(Debug)]
    pub struct SerError(String);

    impl fmt::Display for SerError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for SerError {}

    impl ser::Error for SerError {
        fn custom<T: fmt::Display>(msg: T) -> Self {
            SerError(msg.to_string())
        }
    }

    /// Serializes `v` as bincode 1.3's default options do (`bincode::serialize`), appending to
    /// `out`.
    pub fn serialize_fixint<T: Serialize + ?Sized>(
        v: &T,
        out: &mut Vec<u8>,
    ) -> Result<(), SerError> {
        v.serialize(&mut Fixint { out })
    }

    struct Fixint<'a> {
        out: &'a mut Vec<u8>,
    }

    impl Fixint<'_> {
        fn put(&mut self, b: &[u8]) -> Result<(), SerError> {
            self.out.extend_from_slice(b);
            Ok(())
        }
        fn len(&mut self, n: Option<usize>) -> Result<(), SerError> {
            let n = n.ok_or_else(|| SerError("sequence length unknown".into()))?;
            self.put(&(n as u64).to_le_bytes())
        }
    }

    impl<'a, 'b> ser::Serializer for &'a mut Fixint<'b> {
        type Ok = ();
        type Error = SerError;
        type SerializeSeq = Self;
        type SerializeTuple = Self;
        type SerializeTupleStruct = Self;
        type SerializeTupleVariant = Self;
        type SerializeMap = Self;
        type SerializeStruct = Self;
        type SerializeStructVariant = Self;

        fn serialize_bool(self, v: bool) -> Result<(), SerError> {
            self.put(&[u8::from(v)])
        }
        fn serialize_i8(self, v: i8) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_i16(self, v: i16) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_i32(self, v: i32) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_i64(self, v: i64) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_i128(self, v: i128) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_u8(self, v: u8) -> Result<(), SerError> {
            self.put(&[v])
        }
        fn serialize_u16(self, v: u16) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_u32(self, v: u32) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_u64(self, v: u64) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_u128(self, v: u128) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_f32(self, v: f32) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_f64(self, v: f64) -> Result<(), SerError> {
            self.put(&v.to_le_bytes())
        }
        fn serialize_char(self, v: char) -> Result<(), SerError> {
            let mut b = [0u8; 4];
            self.put(v.encode_utf8(&mut b).as_bytes())
        }
        fn serialize_str(self, v: &str) -> Result<(), SerError> {
            self.len(Some(v.len()))?;
            self.put(v.as_bytes())
        }
        fn serialize_bytes(self, v: &[u8]) -> Result<(), SerError> {
            self.len(Some(v.len()))?;
            self.put(v)
        }
        fn serialize_none(self) -> Result<(), SerError> {
            self.put(&[0])
        }
        fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), SerError> {
            self.put(&[1])?;
            v.serialize(self)
        }
        fn serialize_unit(self) -> Result<(), SerError> {
            Ok(())
        }
        fn serialize_unit_struct(self, _: &'static str) -> Result<(), SerError> {
            Ok(())
        }
        fn serialize_unit_variant(
            self,
            _: &'static str,
            index: u32,
            _: &'static str,
        ) -> Result<(), SerError> {
            self.put(&index.to_le_bytes())
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            v: &T,
        ) -> Result<(), SerError> {
            v.serialize(self)
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            index: u32,
            _: &'static str,
            v: &T,
        ) -> Result<(), SerError> {
            self.put(&index.to_le_bytes())?;
            v.serialize(self)
        }
        fn serialize_seq(self, len: Option<usize>) -> Result<Self, SerError> {
            self.len(len)?;
            Ok(self)
        }
        fn serialize_tuple(self, _: usize) -> Result<Self, SerError> {
            Ok(self)
        }
        fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, SerError> {
            Ok(self)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            index: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self, SerError> {
            self.put(&index.to_le_bytes())?;
            Ok(self)
        }
        fn serialize_map(self, len: Option<usize>) -> Result<Self, SerError> {
            self.len(len)?;
            Ok(self)
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, SerError> {
            Ok(self)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            index: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self, SerError> {
            self.put(&index.to_le_bytes())?;
            Ok(self)
        }
    }

    impl ser::SerializeSeq for &mut Fixint<'_> {
        type Ok = ();
        type Error = SerError;
        fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), SerError> {
            v.serialize(&mut **self)
        }
        fn end(self) -> Result<(), SerError> {
            Ok(())
        }
    }

    impl ser::SerializeTuple for &mut Fixint<'_> {
        type Ok = ();
        type Error = SerError;
        fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), SerError> {
            v.serialize(&mut **self)
        }
        fn end(self) -> Result<(), SerError> {
            Ok(())
        }
    }

    impl ser::SerializeTupleStruct for &mut Fixint<'_> {
        type Ok = ();
        type Error = SerError;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), SerError> {
            v.serialize(&mut **self)
        }
        fn end(self) -> Result<(), SerError> {
            Ok(())
        }
    }

    impl ser::SerializeTupleVariant for &mut Fixint<'_> {
        type Ok = ();
        type Error = SerError;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), SerError> {
            v.serialize(&mut **self)
        }
        fn end(self) -> Result<(), SerError> {
            Ok(())
        }
    }

    impl ser::SerializeMap for &mut Fixint<'_> {
        type Ok = ();
        type Error = SerError;
        fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), SerError> {
            k.serialize(&mut **self)
        }
        fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), SerError> {
            v.serialize(&mut **self)
        }
        fn end(self) -> Result<(), SerError> {
            Ok(())
        }
    }

    impl ser::SerializeStruct for &mut Fixint<'_> {
        type Ok = ();
        type Error = SerError;
        fn serialize_field<T: Serialize + ?Sized>(
            &mut self,
            _: &'static str,
            v: &T,
        ) -> Result<(), SerError> {
            v.serialize(&mut **self)
        }
        fn end(self) -> Result<(), SerError> {
            Ok(())
        }
    }

    impl ser::SerializeStructVariant for &mut Fixint<'_> {
        type Ok = ();
        type Error = SerError;
        fn serialize_field<T: Serialize + ?Sized>(
            &mut self,
            _: &'static str,
            v: &T,
        ) -> Result<(), SerError> {
            v.serialize(&mut **self)
        }
        fn end(self) -> Result<(), SerError> {
            Ok(())
        }
    }

    /// One save of the GGRS example pattern: serialize `state` into a fresh buffer, fletcher16
    /// it, and replace `cell` with a clone of the state (dropping the previous clone). Returns
    /// the checksum.
    pub fn ggrs_save(state: &GgrsState, cell: &mut Option<GgrsState>, size_hint: usize) -> u16 {
        let mut buf = Vec::with_capacity(size_hint);
        let _ = serialize_fixint(state, &mut buf);
        let checksum = fletcher16(&buf);
        *cell = Some(state.clone());
        checksum
    }

    /// A modifier operation as the idiomatic world stores it.
    fn op_code(op: ModOp) -> u8 {
        match op {
            ModOp::Add => 0,
            ModOp::Multiply => 1,
            ModOp::Divide => 2,
            ModOp::Override => 3,
        }
    }

    /// A modifier of an [`IdiomaticEffect`].
    #[derive(Clone, Copy, Debug)]
    pub struct IdiomaticModifier {
        /// The attribute.
        pub attr: u32,
        /// The operation (0 add, 1 multiply, 2 divide, 3 override).
        pub op: u8,
        /// The magnitude.
        pub magnitude: f32,
    }

    /// An active effect of an [`IdiomaticEntity`].
    #[derive(Clone, Debug)]
    pub struct IdiomaticEffect {
        /// The definition.
        pub def: u16,
        /// The level.
        pub level: u16,
        /// Stacks.
        pub stacks: u16,
        /// Start frame.
        pub start: u32,
        /// Duration.
        pub duration: u32,
        /// Expiry frame.
        pub expires_at: u32,
        /// Next periodic execution.
        pub next_period_at: u32,
        /// The instigator's slot.
        pub instigator: u32,
        /// Modifiers.
        pub modifiers: Vec<IdiomaticModifier>,
        /// Granted tags.
        pub granted_tags: Vec<u16>,
    }

    /// A task of an [`IdiomaticAbility`].
    #[derive(Clone, Copy, Debug)]
    pub struct IdiomaticTask {
        /// The kind.
        pub kind: u16,
        /// Start frame.
        pub started: u32,
        /// Counter.
        pub counter: u32,
        /// Parameters.
        pub params: [u32; 3],
    }

    /// A granted ability of an [`IdiomaticEntity`].
    #[derive(Clone, Debug)]
    pub struct IdiomaticAbility {
        /// The definition.
        pub def: u16,
        /// The level.
        pub level: u16,
        /// Whether it is active.
        pub active: bool,
        /// Activation serial.
        pub serial: u32,
        /// Live tasks.
        pub tasks: Vec<IdiomaticTask>,
    }

    /// One fighter of the [`IdiomaticWorld`].
    #[derive(Clone, Debug)]
    pub struct IdiomaticEntity {
        /// Attribute id → current value.
        pub attributes: HashMap<u32, f32>,
        /// Active effects.
        pub effects: Vec<IdiomaticEffect>,
        /// Tag id → count (non-zero counts only).
        pub tags: HashMap<u16, u16>,
        /// Granted abilities.
        pub abilities: Vec<IdiomaticAbility>,
        /// Position.
        pub position: (f32, f32),
    }

    /// The arena's content as a hand-rolled heap world.
    #[derive(Clone, Debug)]
    pub struct IdiomaticWorld {
        /// The frame.
        pub frame: u32,
        /// The fighters.
        pub entities: Vec<IdiomaticEntity>,
    }

    impl IdiomaticWorld {
        /// The arena world's current content, rebuilt as heap objects.
        pub fn from_world(w: &World<ArenaGame>) -> IdiomaticWorld {
            let c = w.content();
            let f = |v: Fx| v.to_num::<f32>();
            let entities = w
                .entities()
                .map(|e| {
                    let attributes = (0..c.num_attrs())
                        .filter_map(|a| {
                            let id = rollback_abilities::AttrId(a as u16);
                            w.attr(e, id).map(|v| (a as u32, f(v)))
                        })
                        .collect();
                    let effects = w
                        .effects(e)
                        .iter()
                        .zip(w.effect_origins(e))
                        .zip(w.effect_timers(e))
                        .map(|((ef, origin), t)| {
                            let d = c.effect_def(ef.def);
                            IdiomaticEffect {
                                def: ef.def.0,
                                level: ef.level,
                                stacks: ef.stacks,
                                start: ef.start,
                                duration: ef.duration,
                                expires_at: t.expires_at,
                                next_period_at: t.next_period_at,
                                instigator: origin.instigator.index,
                                modifiers: d
                                    .modifiers
                                    .iter()
                                    .enumerate()
                                    .map(|(i, m)| IdiomaticModifier {
                                        attr: u32::from(m.attr.0),
                                        op: op_code(m.op),
                                        magnitude: f(w
                                            .effect_magnitude(ef.handle(e), i)
                                            .unwrap_or(Fx::ZERO)),
                                    })
                                    .collect(),
                                granted_tags: d.granted_tags.explicit.iter().map(|t| t.0).collect(),
                            }
                        })
                        .collect();
                    let tags = w
                        .explicit_tags(e)
                        .iter()
                        .map(|t| (t.0, w.tag_count_exact(e, t) as u16))
                        .collect();
                    let abilities = w
                        .abilities(e)
                        .map(|(h, s)| IdiomaticAbility {
                            def: s.def.0,
                            level: s.level,
                            active: s.is_active(),
                            serial: s.activation_serial,
                            tasks: w
                                .tasks_of(h)
                                .map(|(_, t)| IdiomaticTask {
                                    kind: t.kind,
                                    started: t.started,
                                    counter: t.counter,
                                    params: [t.a, t.b, t.c],
                                })
                                .collect(),
                        })
                        .collect();
                    let p = w.component(e).copied().unwrap_or_default();
                    IdiomaticEntity {
                        attributes,
                        effects,
                        tags,
                        abilities,
                        position: (f(p.x), f(p.y)),
                    }
                })
                .collect();
            IdiomaticWorld { frame: w.next_frame(), entities }
        }

        /// Heap allocations a clone makes.
        pub fn allocations(&self) -> usize {
            1 + self
                .entities
                .iter()
                .map(|e| {
                    3 + 1
                        + e.effects
                            .iter()
                            .map(|x| {
                                usize::from(!x.modifiers.is_empty())
                                    + usize::from(!x.granted_tags.is_empty())
                            })
                            .sum::<usize>()
                        + e.abilities.iter().filter(|a| !a.tasks.is_empty()).count()
                })
                .sum::<usize>()
        }
    }

    // The serializer must agree with bincode 1.3 on a sequence's length prefix.
    #[cfg(test)]
    #[test]
    fn fixint_matches_bincode_layout() {
        use serde::ser::SerializeSeq as _;
        let mut out = Vec::new();
        let v: Vec<u16> = vec![1, 2];
        serialize_fixint(&v, &mut out).unwrap();
        assert_eq!(out, [2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0]);
        let mut seq = Vec::new();
        let mut s = Fixint { out: &mut seq };
        let mut q = ser::Serializer::serialize_seq(&mut s, Some(1)).unwrap();
        q.serialize_element(&7u8).unwrap();
        assert_eq!(seq, [1, 0, 0, 0, 0, 0, 0, 0, 7]);
        assert_eq!(fletcher16(b"abcde"), 0xC8F0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_freezes_with_enough_tags() {
        for tags in [128, 160, 300] {
            let spec = ArenaSpec { tags, ..ArenaSpec::default() };
            let c = Arena::content(&spec);
            assert!(c.tags().len() >= tags as usize, "{} < {tags}", c.tags().len());
            assert_eq!(c.num_attrs(), 16);
            assert_eq!(c.ability_defs().len(), 6);
        }
    }

    /// The arena cannot silently degrade: after 300 frames every fighter still has its 24
    /// effects (4 periodic, 2 stacked), 6 abilities with one active and at least 2 live tasks,
    /// and periodic executions happen.
    #[test]
    fn arena_256_keeps_its_steady_state_shape() {
        let mut arena = Arena::new(ArenaSpec::default());
        let health = arena.world.content().attr("Health").unwrap();
        let mut periodic = 0;
        let mut damage = 0;
        let mut activations = 0;
        for _ in 0..300 {
            let out = arena.step();
            damage += out
                .executions
                .iter()
                .filter(|m| m.attr == health && m.new_base < m.old_base)
                .count();
            activations += out
                .ability_events
                .iter()
                .filter(|e| matches!(e, rollback_abilities::AbilityEvent::Activated { .. }))
                .count();
            periodic += arena.periodic_executions();
            let s = arena.shape();
            assert_eq!((s.min_effects, s.max_effects), (24, 24), "frame {}", arena.world.frame());
        }
        let s = arena.shape();
        assert_eq!(s.entities, 256);
        assert_eq!(s.attributes, 16);
        assert!(s.tags >= 128, "{s:?}");
        assert_eq!(s.periodic_effects, 4 * 256, "{s:?}");
        assert_eq!(s.stacked_effects, 2 * 256, "{s:?}");
        assert_eq!(s.min_abilities, 6, "{s:?}");
        assert!(s.min_active_abilities >= 1, "{s:?}");
        assert!(s.min_tasks >= 2, "{s:?}");
        // About 47 periodic executions a frame.
        assert!(periodic > 300 * 40, "periodic executions: {periodic}");
        assert!(damage > 300 * 4, "damage executions: {damage}");
        assert!(activations > 300 * 5, "activations: {activations}");
    }
}
