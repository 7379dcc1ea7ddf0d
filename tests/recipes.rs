//! The gameplay recipes of `docs/features.md` (F-REC-01, F-REC-02, F-REC-03, F-REC-05,
//! F-REC-07, F-REC-08, F-REC-09 and F-REC-11) as content (`examples/content/recipes.ron`) plus
//! the registered functions that content names, with frame-by-frame tests of each recipe and a
//! rollback-invariance property test of abilities, tasks, timelines and cooldowns driven by
//! random inputs.
//!
//! The Rust half of every recipe is in the "Recipe functions" section below: behaviours are
//! plain `fn`s over an [`AbilityCtx`] and the ability's `Pod` state blob, the damage execution
//! reads declared captures and draws from the execution's random stream, and the death check is
//! a post-execute hook.

use proptest::prelude::*;
use rollback_abilities::AttrCmp;
use rollback_abilities::num;
use rollback_abilities::prelude::*;
use rollback_abilities::session::Determinism;
use rollback_abilities::{
    AbilityCtx, AbilityDefId, AbilityEvent, AbilityHandle, AbilityInput, ActivationFailure,
    Behaviour, CurveId, EffectEvent, InputEdge, TaskEvent, TaskResult, TaskSpec,
};
use rollback_abilities::{Capture, ExecCtx, ExecutedMod};
use std::sync::{Arc, OnceLock};

// ============================================================================================
// The game
// ============================================================================================

/// Input bits (the input byte is the held ability-input bits, bit 6 confirm, bit 7 cancel).
const SPRINT: u8 = 1 << 0;
const AIM: u8 = 1 << 1;
const LIGHT: u8 = 1 << 2;
const HEAVY: u8 = 1 << 3;
const BITE: u8 = 1 << 4;

/// The recipes' two-player game: positions, the speed the movement system allows, and each
/// fighter's opponent (the target of its attacks).
pub struct RecipeGame;

#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Body {
    pub x: Fx,
    pub y: Fx,
    /// Written by the movement system in phase P6 from the state at that point.
    pub max_speed: Fx,
    pub opponent: Entity,
}

impl Game for RecipeGame {
    type Input = u8;
    type Component = Body;
    type Global = ();

    fn ability_input(input: &u8) -> AbilityInput {
        AbilityInput {
            held: u32::from(*input & 0x3f),
            confirm: input & 0x40 != 0,
            cancel: input & 0x80 != 0,
        }
    }

    /// The movement system: records the speed each fighter may move at this frame.
    fn systems(world: &mut World<Self>) {
        let fighters: Vec<Entity> = world.entities().collect();
        for e in fighters {
            let v = max_speed(world, e);
            if let Some(b) = world.component_mut(e) {
                b.max_speed = v;
            }
        }
    }

    /// Root motion (F-AT-05): the `RootMotion` task moves the avatar's position.
    fn root_motion(world: &mut World<Self>, avatar: Entity, delta: [Fx; 2]) {
        if let Some(b) = world.component_mut(avatar) {
            b.x = num::add(b.x, delta[0]);
            b.y = num::add(b.y, delta[1]);
        }
    }
}

/// The movement hook (F-REC-01): 0 while stunned or dead, else the current MoveSpeed.
pub fn max_speed(w: &World<RecipeGame>, e: Entity) -> Fx {
    let i = ids();
    if w.has_tag(e, i.t_stun) || w.has_tag(e, i.t_dead) {
        return Fx::ZERO;
    }
    w.attr(e, i.move_speed).unwrap_or(Fx::ZERO)
}

// ============================================================================================
// Content and ids
// ============================================================================================

fn content() -> Arc<Content> {
    static CONTENT: OnceLock<Arc<Content>> = OnceLock::new();
    CONTENT
        .get_or_init(|| {
            let text = include_str!("../examples/content/recipes.ron");
            Arc::new(Content::from_ron_str(text).unwrap_or_else(|e| panic!("recipes.ron: {e}")))
        })
        .clone()
}

/// Every id the recipes refer to, resolved once from the content (all worlds here share it).
struct Ids {
    t_stun: TagId,
    t_dead: TagId,
    t_sprinting: TagId,
    t_aiming: TagId,
    t_knocked: TagId,
    t_attacking: TagId,
    t_window: TagId,
    t_lifesteal: TagId,
    t_hit: TagId,
    t_hit_light: TagId,
    t_hit_heavy: TagId,
    t_data_damage: TagId,
    t_cd_heavy: TagId,
    t_sprint_speed: TagId,
    t_sprint_drain: TagId,
    t_aim: TagId,
    health: AttrId,
    max_health: AttrId,
    armor: AttrId,
    move_speed: AttrId,
    stamina: AttrId,
    attack_power: AttrId,
    crit_chance: AttrId,
    e_stun: EffectDefId,
    e_sprint_speed: EffectDefId,
    e_sprint_drain: EffectDefId,
    e_aim: EffectDefId,
    e_potion: EffectDefId,
    e_strike: EffectDefId,
    e_vampiric: EffectDefId,
    e_vampirism: EffectDefId,
    e_heal: EffectDefId,
    e_armor: EffectDefId,
    e_knockback: EffectDefId,
    e_heavy_cd: EffectDefId,
    sprint: AbilityDefId,
    aim: AbilityDefId,
    light: AbilityDefId,
    heavy: AbilityDefId,
    bite: AbilityDefId,
    armor_up: AbilityDefId,
    knocked_back: AbilityDefId,
    knockback_curve: CurveId,
    sets: [AttrSetId; 3],
}

fn ids() -> &'static Ids {
    static IDS: OnceLock<Ids> = OnceLock::new();
    IDS.get_or_init(|| {
        let c = content();
        let t = |n: &str| c.tag(n).unwrap();
        let a = |n: &str| c.attr(n).unwrap();
        let e = |n: &str| c.effect(n).unwrap();
        let ab = |n: &str| c.ability(n).unwrap();
        Ids {
            t_stun: t("State.Debuff.Stun"),
            t_dead: t("State.Dead"),
            t_sprinting: t("State.Sprinting"),
            t_aiming: t("State.Aiming"),
            t_knocked: t("State.KnockedBack"),
            t_attacking: t("State.Attacking"),
            t_window: t("Cancel.Window.Light"),
            t_lifesteal: t("Effect.CanLifesteal"),
            t_hit: t("Event.Hit"),
            t_hit_light: t("Event.Hit.Light"),
            t_hit_heavy: t("Event.Hit.Heavy"),
            t_data_damage: t("Data.Damage"),
            t_cd_heavy: t("Cooldown.Attack.Heavy"),
            t_sprint_speed: t("Effect.Sprint.Speed"),
            t_sprint_drain: t("Effect.Sprint.Drain"),
            t_aim: t("Effect.Aim"),
            health: a("Health"),
            max_health: a("MaxHealth"),
            armor: a("Armor"),
            move_speed: a("MoveSpeed"),
            stamina: a("Stamina"),
            attack_power: a("AttackPower"),
            crit_chance: a("CritChance"),
            e_stun: e("Stun"),
            e_sprint_speed: e("SprintSpeed"),
            e_sprint_drain: e("SprintDrain"),
            e_aim: e("AimSlow"),
            e_potion: e("StaminaPotion"),
            e_strike: e("Strike"),
            e_vampiric: e("VampiricStrike"),
            e_vampirism: e("Vampirism"),
            e_heal: e("Heal"),
            e_armor: e("ArmorStack"),
            e_knockback: e("Knockback"),
            e_heavy_cd: e("HeavyCooldown"),
            sprint: ab("Sprint"),
            aim: ab("Aim"),
            light: ab("LightAttack"),
            heavy: ab("HeavyAttack"),
            bite: ab("Bite"),
            armor_up: ab("ArmorUp"),
            knocked_back: ab("KnockedBack"),
            knockback_curve: c.curve("KnockbackDistance").unwrap(),
            sets: [
                c.attr_set("Vitals").unwrap(),
                c.attr_set("Movement").unwrap(),
                c.attr_set("Offense").unwrap(),
            ],
        }
    })
}

// ============================================================================================
// Recipe functions (registered under the names content uses)
// ============================================================================================

type Ctx<'w> = AbilityCtx<'w, RecipeGame>;

/// The state blob of "Sprint" (24 bytes) and "Aim" (12 bytes, slot 0 only): the handles of the
/// infinite effects the ability applied, indexed by the task user id that reported them.
type Held = [EffectHandle; 2];

/// The task user id of Sprint's "stamina is empty" wait.
const EXHAUSTED: u16 = 10;

/// Applies an infinite effect to the owner and arranges for its handle to be stored in the state
/// blob: `ctx.apply` only queues the application (no handle yet), so a `WaitEffectAdded` task
/// reports the new effect to `held_task`.
fn apply_and_track(ctx: &mut Ctx<'_>, slot: u16, effect: EffectDefId, asset_tag: TagId) {
    let _ = ctx.spawn_task(slot, TaskSpec::WaitEffectAdded(Some(asset_tag)));
    let spec = ctx.make_spec(effect);
    let owner = ctx.owner();
    ctx.apply(spec, owner);
}

/// F-REC-02: Sprint applies the speed buff and the stamina drain and waits for empty stamina.
fn sprint_activate(ctx: &mut Ctx<'_>) {
    let i = ids();
    apply_and_track(ctx, 0, i.e_sprint_speed, i.t_sprint_speed);
    apply_and_track(ctx, 1, i.e_sprint_drain, i.t_sprint_drain);
    let exhausted = TaskSpec::WaitAttribute { attr: i.stamina, cmp: AttrCmp::Le, value: Fx::ZERO };
    let _ = ctx.spawn_task(EXHAUSTED, exhausted);
}

/// F-REC-02 (ADS): Aim applies the slow.
fn aim_activate(ctx: &mut Ctx<'_>) {
    let i = ids();
    apply_and_track(ctx, 0, i.e_aim, i.t_aim);
}

fn held_task(ctx: &mut Ctx<'_>, r: &TaskResult) {
    match r.event {
        TaskEvent::EffectAdded(h) => {
            let mut held: Held = ctx.state();
            if let Some(slot) = held.get_mut(usize::from(r.user_id)) {
                *slot = h;
            }
            ctx.set_state(&held);
        }
        TaskEvent::Attribute(_) if r.user_id == EXHAUSTED => ctx.end(),
        _ => {}
    }
}

fn end_on_release(ctx: &mut Ctx<'_>, edge: InputEdge) {
    if edge == InputEdge::Released {
        ctx.end();
    }
}

/// Ending (normally or cancelled) removes the effects the ability applied.
fn remove_held(ctx: &mut Ctx<'_>, _cancelled: bool) {
    let held: Held = ctx.state();
    for h in held {
        if h.seq != 0 {
            ctx.world_mut().remove_effect(h);
        }
    }
}

fn opponent(w: &World<RecipeGame>, e: Entity) -> Entity {
    w.component(e).map(|b| b.opponent).unwrap_or(Entity::NONE)
}

/// F-REC-11: melee attacks turn their timeline's hit notify into a Strike on the opponent (the
/// heavy hit adds 10 damage through SetByCaller `Data.Damage`).
fn melee_activate(ctx: &mut Ctx<'_>) {
    let _ = ctx.spawn_task(0, TaskSpec::WaitEvent { tag: ids().t_hit, once: false });
}

fn melee_task(ctx: &mut Ctx<'_>, r: &TaskResult) {
    let TaskEvent::Event(ev) = r.event else { return };
    let i = ids();
    let mut spec = ctx.make_spec(i.e_strike);
    if ev.tag == i.t_hit_heavy {
        spec.set_set_by_caller(i.t_data_damage, num::int(10));
    }
    let target = opponent(ctx.world(), ctx.owner());
    ctx.apply(spec, target);
}

/// F-REC-03: an instant lifesteal bite.
fn bite_activate(ctx: &mut Ctx<'_>) {
    let spec = ctx.make_spec(ids().e_vampiric);
    let target = opponent(ctx.world(), ctx.owner());
    ctx.apply(spec, target);
    ctx.end();
}

/// F-REC-07: one armor stack every 240 frames; one stack less whenever damaged.
fn armor_activate(ctx: &mut Ctx<'_>) {
    let _ = ctx.spawn_task(0, TaskSpec::Repeat { count: 0, every: 240 });
    let _ = ctx.spawn_task(1, TaskSpec::WaitDamage { attr: ids().health, once: false });
}

fn armor_task(ctx: &mut Ctx<'_>, r: &TaskResult) {
    let i = ids();
    let owner = ctx.owner();
    match r.event {
        TaskEvent::Tick(_) => {
            let spec = ctx.make_spec(i.e_armor);
            ctx.apply(spec, owner);
        }
        TaskEvent::Damaged { .. } => {
            let query = EffectQuery::new().with_def(i.e_armor);
            let stack = ctx.world().effects_matching(owner, &query).next().map(|e| e.handle(owner));
            if let Some(h) = stack {
                ctx.world_mut().remove_effect_stacks(h, 1);
            }
        }
        _ => {}
    }
}

/// F-REC-09: pushed away from whoever applied the granting Knockback effect, along the curve.
fn knocked_activate(ctx: &mut Ctx<'_>) {
    let w = ctx.world();
    let me = w.component(ctx.avatar()).map(|b| b.x);
    let from = w
        .granting_effect(ctx.handle())
        .and_then(|h| w.effect_origin(h))
        .and_then(|o| w.component(o.instigator))
        .map(|b| b.x);
    let dir = match (me, from) {
        (Some(me), Some(from)) if me < from => -1,
        _ => 1,
    };
    let motion = TaskSpec::RootMotion {
        curve: ids().knockback_curve,
        frames: 12,
        dir: [num::int(dir), Fx::ZERO],
    };
    let _ = ctx.spawn_task(0, motion);
}

/// F-REC-03 + F-REC-05 (+ armor): see the "Damage" comment in recipes.ron.
fn damage(ctx: &mut ExecCtx<'_>) {
    let i = ids();
    let asset_lifesteal = !ctx.spec().is_inline()
        && ctx.content().effect_def(ctx.spec().def).asset_tags.has(i.t_lifesteal);
    let lifesteal = asset_lifesteal || ctx.source_tags().contains(i.t_lifesteal);
    let (power, chance, crit, armor) =
        (ctx.capture(0), ctx.capture(1), ctx.capture(2), ctx.capture(3));
    let mut dmg = num::add(power, ctx.set_by_caller(i.t_data_damage).unwrap_or(Fx::ZERO));
    if ctx.random().chance(chance) {
        dmg = num::add(dmg, crit);
    }
    let dmg = num::sub(dmg, armor).max(Fx::ONE);
    ctx.output(i.health, ModOp::Add, num::neg(dmg));
    if lifesteal {
        let source = ctx.source();
        let heal = EffectSpec::inline(&[(i.health, ModOp::Add, dmg / 2)]).with_instigator(source);
        ctx.apply(heal, source);
    }
}

/// F-REC-08: Health reaching 0 sets the loose `State.Dead` tag. `set_loose_tag_count` rather
/// than `add_loose_tag`: two lethal hits in one cascade both see the tag missing (the first
/// change is still queued), and respawn must clear it with one call.
fn death_check(w: &mut World<RecipeGame>, m: &ExecutedMod) {
    let i = ids();
    if m.attr == i.health && m.new_base <= Fx::ZERO {
        w.set_loose_tag_count(m.target, i.t_dead, 1);
    }
}

fn hooks() -> Hooks<RecipeGame> {
    let held = |on_activate| Behaviour {
        on_activate: Some(on_activate),
        on_task: Some(held_task),
        on_input: Some(end_on_release),
        on_end: Some(remove_held),
        ..Behaviour::default()
    };
    Hooks::new()
        .behaviour("Sprint", held(sprint_activate))
        .behaviour("Aim", held(aim_activate))
        .behaviour(
            "Melee",
            Behaviour {
                on_activate: Some(melee_activate),
                on_task: Some(melee_task),
                ..Behaviour::default()
            },
        )
        .behaviour("Bite", Behaviour { on_activate: Some(bite_activate), ..Behaviour::default() })
        .behaviour(
            "ArmorStacks",
            Behaviour {
                on_activate: Some(armor_activate),
                on_task: Some(armor_task),
                ..Behaviour::default()
            },
        )
        .behaviour(
            "KnockedBack",
            Behaviour { on_activate: Some(knocked_activate), ..Behaviour::default() },
        )
        .execution(
            "Damage",
            &[
                Capture::source("AttackPower"),
                Capture::source("CritChance"),
                Capture::source("CritDamage"),
                Capture::target("Armor"),
            ],
            damage,
        )
        .post_execute("DeathCheck", death_check)
}

// ============================================================================================
// Test helpers
// ============================================================================================

/// Two fighters: A (player 0) at x = 0 and B (player 1) at x = 100, each the other's opponent,
/// with Sprint, Aim, LightAttack, HeavyAttack and Bite granted (bound to their default inputs).
fn recipe_world(seed: u64) -> (World<RecipeGame>, Entity, Entity) {
    let config = WorldConfig {
        max_entities: 8,
        effects_per_entity: 16,
        players: 2,
        seed,
        abilities_per_entity: 12,
        max_tasks: 64,
        ..WorldConfig::default()
    };
    let i = ids();
    let mut w = World::new(content(), &hooks(), config).expect("world");
    let a = w.spawn_actor(&i.sets).unwrap();
    let b = w.spawn_actor(&i.sets).unwrap();
    *w.component_mut(a).unwrap() = Body { opponent: b, ..Body::default() };
    *w.component_mut(b).unwrap() = Body { x: num::int(100), opponent: a, ..Body::default() };
    w.bind_player(0, a);
    w.bind_player(1, b);
    for e in [a, b] {
        for def in [i.sprint, i.aim, i.light, i.heavy, i.bite] {
            w.grant_ability(e, def, 1).unwrap();
        }
    }
    (w, a, b)
}

fn ability(w: &World<RecipeGame>, e: Entity, def: AbilityDefId) -> AbilityHandle {
    w.find_ability(e, def).expect("granted")
}

fn count_effects(w: &World<RecipeGame>, e: Entity, def: EffectDefId) -> usize {
    w.effects(e).iter().filter(|ef| ef.def == def).count()
}

fn stacks(w: &World<RecipeGame>, e: Entity, def: EffectDefId) -> u16 {
    w.effects(e).iter().filter(|ef| ef.def == def).map(|ef| ef.stacks).sum()
}

fn attr(w: &World<RecipeGame>, e: Entity, a: AttrId) -> Fx {
    w.attr(e, a).expect("attribute")
}

fn int(v: i64) -> Fx {
    num::int(v)
}

fn strike(w: &mut World<RecipeGame>, def: EffectDefId, from: Entity, to: Entity) {
    let spec = w.make_spec(def, 1, from);
    w.apply_effect(spec, to).expect("applies");
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

fn activated(out: &FrameOutput) -> Vec<AbilityHandle> {
    out.ability_events
        .iter()
        .filter_map(|e| match e {
            AbilityEvent::Activated { handle, .. } => Some(*handle),
            _ => None,
        })
        .collect()
}

/// Health changes of `e` by executions in a frame: (magnitude, effect definition).
fn health_hits(out: &FrameOutput, e: Entity) -> Vec<(Fx, Option<EffectDefId>)> {
    let h = ids().health;
    out.executions
        .iter()
        .filter(|m| m.target == e && m.attr == h)
        .map(|m| (m.magnitude, m.def))
        .collect()
}

// ============================================================================================
// F-REC-01 Stun
// ============================================================================================

/// The stun cancels Sprint (not the passive), blocks activations for 120 frames, the movement
/// hook reports 0 speed, and Sprint works again once the tag is gone.
#[test]
fn stun_cancels_blocks_and_stops_movement() {
    let (mut w, a, b) = recipe_world(1);
    let i = ids();
    let armor_up = w.grant_ability(b, i.armor_up, 1).unwrap();
    let sprint = ability(&w, b, i.sprint);
    let aim = ability(&w, b, i.aim);
    let light = ability(&w, b, i.light);
    let mut blocked = Vec::new();
    for frame in 0..=230u32 {
        // B holds sprint 50..=220 (through the stun), releases at 221, presses again at 222,
        // and taps light at 150 (during the stun).
        let mut input = 0;
        if (50..=220).contains(&frame) || frame >= 222 {
            input |= SPRINT;
        }
        if frame == 150 {
            input |= LIGHT;
        }
        let out = w
            .step_with(&[0, input], |w| {
                if frame == 100 {
                    let spec = w.make_spec(i.e_stun, 1, a);
                    w.apply_effect(spec, b).unwrap();
                }
                if (101..=219).contains(&frame) {
                    blocked.push(w.try_activate(aim));
                }
            })
            .clone();
        let stunned = (100..220).contains(&frame);
        let sprinting = (50..100).contains(&frame) || frame >= 222;
        assert_eq!(w.has_tag(b, i.t_stun), stunned, "frame {frame}");
        assert_eq!(w.is_ability_active(sprint), sprinting, "frame {frame}");
        assert_eq!(w.has_tag(b, i.t_sprinting), sprinting, "frame {frame}");
        assert!(w.is_ability_active(armor_up), "the passive survives the stun (frame {frame})");
        // The movement hook, read after the frame.
        let hook = if stunned {
            0
        } else if sprinting {
            900
        } else {
            600
        };
        assert_eq!(max_speed(&w, b), int(hook), "frame {frame}");
        // The movement system ran in P6 before the script applied the stun, so its component
        // shows the stun from frame 101 on (and the end of the stun, removed in P2, at 220).
        let system = if (101..220).contains(&frame) {
            0
        } else if sprinting || frame == 100 {
            900
        } else {
            600
        };
        assert_eq!(w.component(b).unwrap().max_speed, int(system), "frame {frame}");
        assert_eq!(w.component(a).unwrap().max_speed, int(600), "frame {frame}");
        if frame == 100 {
            assert_eq!(ended(&out), vec![(sprint, true)], "cancelled by the rule");
            assert_eq!(count_effects(&w, b, i.e_sprint_speed), 0);
            assert_eq!(count_effects(&w, b, i.e_sprint_drain), 0);
            assert_eq!(attr(&w, b, i.move_speed), int(600));
        }
        // Sprint drained 10 stamina every 10 frames from 60 through 100 (P1 of frame 100 runs
        // before the stun), then nothing until the new sprint at 222.
        if frame == 230 {
            assert_eq!(attr(&w, b, i.stamina), int(50));
        }
    }
    assert_eq!(blocked.len(), 119);
    assert!(blocked.iter().all(|r| *r == Err(ActivationFailure::BlockedByTags)), "{blocked:?}");
    assert_eq!(
        w.last_activation(light).map(|r| (r.frame, r.result)),
        Some((150, Err(ActivationFailure::BlockedByTags)))
    );
    // The held sprint input never re-activated Sprint during the stun (no new press edge).
    assert_eq!(
        w.activation_log().filter(|r| r.handle == sprint && (100..222).contains(&r.frame)).count(),
        0
    );
}

// ============================================================================================
// F-REC-02 Sprint and ADS
// ============================================================================================

/// Holding sprint: ×1.5 speed and 10 stamina per 10 frames; releasing ends it and removes both
/// effects (by the handles in the state blob).
#[test]
fn sprint_while_held_then_release() {
    let (mut w, a, _) = recipe_world(2);
    let i = ids();
    let sprint = ability(&w, a, i.sprint);
    for frame in 0..=60u32 {
        let input = if (10..40).contains(&frame) { SPRINT } else { 0 };
        let out = w.step(&[input, 0]).clone();
        let active = (10..40).contains(&frame);
        assert_eq!(w.is_ability_active(sprint), active, "frame {frame}");
        assert_eq!(w.has_tag(a, i.t_sprinting), active, "frame {frame}");
        let speed = if active { 900 } else { 600 };
        assert_eq!(attr(&w, a, i.move_speed), int(speed), "frame {frame}");
        assert_eq!(count_effects(&w, a, i.e_sprint_speed), usize::from(active), "frame {frame}");
        assert_eq!(count_effects(&w, a, i.e_sprint_drain), usize::from(active), "frame {frame}");
        // Drain ticks at 20, 30 and 40 (P1 of frame 40 precedes the release in P4).
        let ticks = if frame < 10 { 0 } else { (frame.min(40) - 10) / 10 };
        assert_eq!(attr(&w, a, i.stamina), int(100 - 10 * i64::from(ticks)), "frame {frame}");
        if frame == 10 {
            assert_eq!(activated(&out), vec![sprint]);
        }
        if frame == 40 {
            assert_eq!(ended(&out), vec![(sprint, false)]);
            let removed: Vec<EffectDefId> = out
                .effect_events
                .iter()
                .filter_map(|e| match e {
                    EffectEvent::Removed { def, .. } => Some(*def),
                    _ => None,
                })
                .collect();
            assert_eq!(removed, vec![i.e_sprint_speed, i.e_sprint_drain]);
        }
    }
    assert_eq!(attr(&w, a, i.stamina), int(70));
}

/// Running out of stamina ends Sprint through the `WaitAttribute` task; holding the input does
/// not restart it, a new press with empty stamina starts and ends in the same frame without
/// leaving effects behind, and a stamina potion makes it usable again.
#[test]
fn sprint_ends_when_stamina_runs_out() {
    let (mut w, a, _) = recipe_world(3);
    let i = ids();
    let sprint = ability(&w, a, i.sprint);
    for frame in 0..=200u32 {
        // Held 10..120, tap at 125, held again from 140.
        let input =
            if (10..120).contains(&frame) || frame == 125 || frame >= 140 { SPRINT } else { 0 };
        let out = w
            .step_with(&[input, 0], |w| {
                if frame == 130 {
                    let spec = w.make_spec(i.e_potion, 1, a);
                    w.apply_effect(spec, a).unwrap();
                }
            })
            .clone();
        let active = (10..110).contains(&frame) || (140..190).contains(&frame);
        assert_eq!(w.is_ability_active(sprint), active, "frame {frame}");
        assert_eq!(attr(&w, a, i.move_speed), int(if active { 900 } else { 600 }), "frame {frame}");
        assert_eq!(
            count_effects(&w, a, i.e_sprint_speed) + count_effects(&w, a, i.e_sprint_drain),
            if active { 2 } else { 0 },
            "frame {frame}"
        );
        match frame {
            110 => {
                assert_eq!(attr(&w, a, i.stamina), Fx::ZERO);
                assert_eq!(ended(&out), vec![(sprint, false)]);
            }
            125 => {
                assert_eq!(activated(&out), vec![sprint], "activates (no cost)…");
                assert_eq!(ended(&out), vec![(sprint, false)], "…and ends at once");
            }
            130 => assert_eq!(attr(&w, a, i.stamina), int(50)),
            190 => {
                assert_eq!(attr(&w, a, i.stamina), Fx::ZERO);
                assert_eq!(ended(&out), vec![(sprint, false)]);
            }
            _ => {}
        }
    }
    // Exactly three activations: 10, 125, 140.
    let starts: Vec<u32> = w
        .activation_log()
        .filter(|r| r.handle == sprint && r.result.is_ok())
        .map(|r| r.frame)
        .collect();
    assert_eq!(starts, vec![10, 125, 140]);
}

/// ADS: a −240 speed modifier without cost; with sprint the modifiers combine
/// ((600 − 240) × 1.5 = 540) and only sprint drains stamina.
#[test]
fn aim_down_sights_slows_without_cost() {
    let (mut w, a, _) = recipe_world(4);
    let i = ids();
    let aim = ability(&w, a, i.aim);
    let sprint = ability(&w, a, i.sprint);
    for frame in 0..=60u32 {
        let mut input = 0;
        if (10..30).contains(&frame) || (40..50).contains(&frame) {
            input |= AIM;
        }
        if (40..50).contains(&frame) {
            input |= SPRINT;
        }
        w.step(&[input, 0]);
        let aiming = (10..30).contains(&frame) || (40..50).contains(&frame);
        let sprinting = (40..50).contains(&frame);
        assert_eq!(w.is_ability_active(aim), aiming, "frame {frame}");
        assert_eq!(w.is_ability_active(sprint), sprinting, "frame {frame}");
        assert_eq!(w.has_tag(a, i.t_aiming), aiming, "frame {frame}");
        let speed = match (aiming, sprinting) {
            (true, true) => 540,
            (true, false) => 360,
            _ => 600,
        };
        assert_eq!(attr(&w, a, i.move_speed), int(speed), "frame {frame}");
        assert_eq!(count_effects(&w, a, i.e_aim), usize::from(aiming), "frame {frame}");
        if frame < 40 {
            assert_eq!(attr(&w, a, i.stamina), int(100), "aiming is free (frame {frame})");
        }
    }
    // Only the sprint's drain tick at 50 (P1, before the release in P4) cost stamina.
    assert_eq!(attr(&w, a, i.stamina), int(90));
}

// ============================================================================================
// F-REC-03 Lifesteal
// ============================================================================================

/// Damage heals the source by half the damage dealt only when the effect has the
/// `Effect.CanLifesteal` asset tag or its source carries that tag; the heal is an inline instant
/// spec applied to the source.
#[test]
fn lifesteal_heals_the_source() {
    let (mut w, a, b) = recipe_world(5);
    let i = ids();
    let bite = ability(&w, a, i.bite);
    w.set_base(a, i.health, int(50));
    let mut log: Vec<(u32, Fx, Fx)> = Vec::new();
    for frame in 0..=80u32 {
        let input = if matches!(frame, 40 | 50 | 70) { BITE } else { 0 };
        let out = w
            .step_with(&[input, 0], |w| match frame {
                10 | 31 => strike(w, i.e_strike, a, b),
                20 => strike(w, i.e_vampiric, a, b),
                30 => strike(w, i.e_vampirism, a, a),
                _ => {}
            })
            .clone();
        if matches!(frame, 10 | 20 | 31 | 40 | 50 | 70) {
            log.push((frame, attr(&w, a, i.health), attr(&w, b, i.health)));
        }
        if frame == 20 {
            // Damage on B by the definition, then the inline heal on A (no definition).
            assert_eq!(health_hits(&out, b), vec![(int(-10), Some(i.e_vampiric))]);
            assert_eq!(health_hits(&out, a), vec![(int(5), None)]);
            assert!(out.executions.iter().any(|m| m.target == a && m.instigator == a));
        }
        if frame == 50 {
            assert_eq!(
                w.last_activation(bite).map(|r| r.result),
                Some(Err(ActivationFailure::OnCooldown))
            );
        }
    }
    assert_eq!(
        log,
        vec![
            (10, int(50), int(90)), // plain strike: no heal
            (20, int(55), int(80)), // asset tag
            (31, int(60), int(70)), // source tag (Vampirism buff)
            (40, int(65), int(60)), // the Bite ability (VampiricStrike)
            (50, int(65), int(60)), // Bite on cooldown (30 frames)
            (70, int(70), int(50)), // Bite again
        ]
    );
}

// ============================================================================================
// F-REC-05 Critical hits
// ============================================================================================

/// Per-frame damage of `hits` Strikes per frame from A to B with the given crit chance.
fn crit_run(seed: u64, chance: &str, frames: u32, hits: usize) -> Vec<Vec<Fx>> {
    let (mut w, a, b) = recipe_world(seed);
    let i = ids();
    w.set_base(a, i.crit_chance, num::parse_fx(chance).unwrap());
    w.set_base(b, i.max_health, int(1_000_000));
    w.set_base(b, i.health, int(1_000_000));
    let mut per_frame = Vec::new();
    for _ in 0..frames {
        let out = w.step_with(&[0, 0], |w| (0..hits).for_each(|_| strike(w, i.e_strike, a, b)));
        per_frame.push(health_hits(out, b).iter().map(|h| num::neg(h.0)).collect());
    }
    per_frame
}

/// Crits draw from the execution's random stream: identical worlds agree hit for hit, another
/// session seed gives other rolls, and the rate follows CritChance.
#[test]
fn crits_are_deterministic_and_follow_crit_chance() {
    let one = crit_run(42, "0.25", 2000, 1);
    let two = crit_run(42, "0.25", 2000, 1);
    assert_eq!(one, two, "identical worlds agree");
    let other = crit_run(43, "0.25", 2000, 1);
    assert_ne!(one, other, "the session seed feeds the stream");
    let all: Vec<Fx> = one.iter().flatten().copied().collect();
    assert_eq!(all.len(), 2000);
    assert!(all.iter().all(|d| *d == int(10) || *d == int(20)), "10, or 10 + 10 on a crit");
    let crits = all.iter().filter(|d| **d == int(20)).count();
    // 2000 × 0.25 = 500 expected; σ ≈ 19.4, so ±100 is over 5σ.
    assert!((400..=600).contains(&crits), "{crits} crits in 2000 hits at 25%");
    let never = crit_run(42, "0", 200, 1);
    assert!(never.iter().flatten().all(|d| *d == int(10)));
    let always = crit_run(42, "1", 200, 1);
    assert!(always.iter().flatten().all(|d| *d == int(20)));
}

/// Two hits on the same target in the same frame (a shotgun's pellets, two systems) roll
/// independently: "a random stream unique to this execution".
#[test]
fn two_hits_in_one_frame_roll_independently() {
    let frames = crit_run(7, "0.5", 300, 2);
    let differ = frames.iter().filter(|f| f.len() == 2 && f[0] != f[1]).count();
    assert!(frames.iter().all(|f| f.len() == 2));
    // Independent 50% rolls differ in half the frames (150 ± 8.7).
    assert!(
        differ >= 100,
        "the two hits of a frame rolled the same crit outcome in {} of 300 frames",
        300 - differ
    );
}

/// The same with the hits queued for phase P7 (`queue_effect`, two-phase application).
#[test]
fn two_queued_hits_in_one_frame_roll_independently() {
    let (mut w, a, b) = recipe_world(7);
    let i = ids();
    w.set_base(a, i.crit_chance, num::ratio(1, 2));
    w.set_base(b, i.max_health, int(1_000_000));
    w.set_base(b, i.health, int(1_000_000));
    let mut differ = 0;
    for _ in 0..300 {
        let out = w.step_with(&[0, 0], |w| {
            for _ in 0..2 {
                let spec = w.make_spec(i.e_strike, 1, a);
                w.queue_effect(spec, b);
            }
        });
        let hits = health_hits(out, b);
        assert_eq!(hits.len(), 2);
        differ += usize::from(hits[0] != hits[1]);
    }
    assert!(
        differ >= 100,
        "the two hits rolled the same outcome in {} of 300 frames",
        300 - differ
    );
}

// ============================================================================================
// F-REC-08 Death
// ============================================================================================

/// Health reaching 0 adds the loose dead tag (once, even when hit again), activations fail with
/// `Dead` and running abilities are cancelled; clearing the tag on respawn restores them.
#[test]
fn death_blocks_activation_until_respawn() {
    let (mut w, a, b) = recipe_world(6);
    let i = ids();
    let armor_up = w.grant_ability(b, i.armor_up, 1).unwrap();
    let sprint = ability(&w, b, i.sprint);
    let light = ability(&w, b, i.light);
    let aim = ability(&w, b, i.aim);
    w.set_base(b, i.health, int(25));
    let mut at_41 = None;
    for frame in 0..=70u32 {
        let mut input = 0;
        if (5..35).contains(&frame) {
            input |= SPRINT;
        }
        if matches!(frame, 40 | 61) {
            input |= LIGHT;
        }
        let out = w
            .step_with(&[0, input], |w| match frame {
                10 | 20 | 30 | 45 => strike(w, i.e_strike, a, b),
                41 => at_41 = Some(w.try_activate(aim)),
                60 => {
                    // Respawn: clear the tag, refill health.
                    w.set_loose_tag_count(b, i.t_dead, 0);
                    w.set_base(b, i.health, int(100));
                }
                _ => {}
            })
            .clone();
        let dead = (30..60).contains(&frame);
        assert_eq!(w.has_tag(b, i.t_dead), dead, "frame {frame}");
        assert!(w.is_ability_active(armor_up), "the passive keeps running (frame {frame})");
        match frame {
            10 => assert_eq!(attr(&w, b, i.health), int(15)),
            20 => assert_eq!(attr(&w, b, i.health), int(5)),
            30 => {
                assert_eq!(attr(&w, b, i.health), Fx::ZERO);
                assert_eq!(ended(&out), vec![(sprint, true)], "death cancels the sprint");
            }
            40 => {
                assert_eq!(
                    w.last_activation(light).map(|r| r.result),
                    Some(Err(ActivationFailure::Dead))
                )
            }
            45 => {
                assert_eq!(attr(&w, b, i.health), Fx::ZERO);
                assert_eq!(w.tag_count_exact(b, i.t_dead), 1, "a second lethal hit adds nothing");
            }
            61 => assert_eq!(activated(&out), vec![light]),
            _ => {}
        }
    }
    assert_eq!(at_41, Some(Err(ActivationFailure::Dead)));
    assert_eq!(attr(&w, b, i.health), int(100));
}

// ============================================================================================
// F-REC-07 Passive armor stacks
// ============================================================================================

/// The passive gains an armor stack every 240 frames up to 4 and loses one per hit; armor
/// reduces the damage of each hit.
#[test]
fn passive_armor_stacks() {
    let (mut w, a, b) = recipe_world(8);
    let i = ids();
    let armor_up = w.grant_ability(b, i.armor_up, 1).unwrap();
    assert!(w.is_ability_active(armor_up), "passive: active when granted");
    w.set_base(a, i.attack_power, int(30));
    let hits = [1000u32, 1100, 1700, 1701, 1702, 1703];
    for frame in 0..=1710u32 {
        let out = w
            .step_with(&[0, 0], |w| {
                if hits.contains(&frame) {
                    strike(w, i.e_strike, a, b);
                }
            })
            .clone();
        let expected_stacks: u16 = match frame {
            0..240 => 0,
            240..480 => 1,
            480..720 => 2,
            720..960 => 3,
            960..1000 => 4,
            1000..1100 => 3,
            1100..1200 => 2,
            1200..1440 => 3,
            1440..1700 => 4, // the tick at 1680 is a 5th application: still 4
            1700 => 3,
            1701 => 2,
            1702 => 1,
            _ => 0,
        };
        assert_eq!(stacks(&w, b, i.e_armor), expected_stacks, "frame {frame}");
        assert_eq!(attr(&w, b, i.armor), int(5 * i64::from(expected_stacks)), "frame {frame}");
        let damage = match frame {
            1000 => Some(10), // 30 − 20
            1100 => Some(15), // 30 − 15
            1700 => Some(10),
            1701 => Some(15),
            1702 => Some(20),
            1703 => Some(25),
            _ => None,
        };
        let dealt: Vec<Fx> = health_hits(&out, b).iter().map(|h| num::neg(h.0)).collect();
        assert_eq!(dealt, damage.map(int).into_iter().collect::<Vec<_>>(), "frame {frame}");
    }
    assert_eq!(count_effects(&w, b, i.e_armor), 0, "the last stack removed the effect");
    assert_eq!(attr(&w, b, i.health), int(100 - 10 - 15 - 10 - 15 - 20 - 25));
    assert!(w.is_ability_active(armor_up));
}

// ============================================================================================
// F-REC-09 Forced movement
// ============================================================================================

/// Knockback grants a passive ability that moves the target along the curve through
/// `Game::root_motion`, away from the source; the ability is cancelled and removed when the
/// effect ends.
#[test]
fn knockback_moves_along_the_curve() {
    let (mut w, a, b) = recipe_world(9);
    let i = ids();
    let curve = |k: i64| if k <= 4 { 20 * k } else { 80 + 5 * (k - 4) };
    let sprint = ability(&w, b, i.sprint);
    let mut knocked = None;
    for frame in 0..=125u32 {
        let input = if frame == 105 { SPRINT } else { 0 };
        let out = w
            .step_with(&[0, input], |w| {
                if frame == 100 {
                    let spec = w.make_spec(i.e_knockback, 1, a);
                    w.apply_effect(spec, b).unwrap();
                }
            })
            .clone();
        let granted = (100..120).contains(&frame);
        assert_eq!(w.find_ability(b, i.knocked_back).is_some(), granted, "frame {frame}");
        assert_eq!(w.has_tag(b, i.t_knocked), granted, "frame {frame}");
        let moved = match frame {
            0..=100 => 0,
            101..=112 => curve(i64::from(frame - 100)),
            _ => 120,
        };
        assert_eq!(w.component(b).unwrap().x, int(100 + moved), "frame {frame}");
        // The content's curve agrees with the closed form.
        let k = frame.saturating_sub(100).min(12) as u16;
        let c = content();
        assert_eq!(c.curve_defs()[i.knockback_curve.index()].eval(k), int(moved), "frame {frame}");
        assert_eq!(w.component(a).unwrap().x, Fx::ZERO);
        if frame == 100 {
            let h = w.find_ability(b, i.knocked_back).unwrap();
            assert_eq!(activated(&out), vec![h], "activates on grant");
            assert!(w.granting_effect(h).is_some());
            knocked = Some(h);
        }
        if (100..120).contains(&frame) {
            assert!(w.is_ability_active(knocked.unwrap()), "frame {frame}");
        }
        if frame == 112 {
            let motion_done = out.ability_events.iter().any(|e| {
                matches!(e, AbilityEvent::TaskEnded { ability, .. } if Some(*ability) == knocked)
            });
            assert!(motion_done, "the root-motion task finished");
        }
        if frame == 120 {
            let h = knocked.unwrap();
            assert_eq!(ended(&out), vec![(h, true)], "CancelImmediately");
            assert!(
                out.ability_events
                    .iter()
                    .any(|e| matches!(e, AbilityEvent::Removed { handle, .. } if *handle == h))
            );
        }
    }
    assert_eq!(curve(12), 120, "the displacement is the curve's total");
    assert_eq!(
        w.last_activation(sprint).map(|r| (r.frame, r.result)),
        Some((105, Err(ActivationFailure::BlockedByTags)))
    );
    // Knocked the other way: B pushes A (at x = 0, left of B) towards −x.
    w.step_with(&[0, 0], |w| {
        let spec = w.make_spec(i.e_knockback, 1, b);
        w.apply_effect(spec, a).unwrap();
    });
    for _ in 0..12 {
        w.step(&[0, 0]);
    }
    assert_eq!(w.component(a).unwrap().x, int(-120));
}

// ============================================================================================
// F-REC-11 Fighting-game cancel windows
// ============================================================================================

/// The light attack's timeline holds `Cancel.Window.Light` from timeline frame 5 to 12, hits at
/// frame 4 and ends after 17 frames.
#[test]
fn light_attack_timeline_and_window() {
    let (mut w, a, b) = recipe_world(10);
    let i = ids();
    let light = ability(&w, a, i.light);
    for frame in 0..=125u32 {
        let input = if frame == 100 { LIGHT } else { 0 };
        let out = w.step(&[input, 0]).clone();
        let t = frame.wrapping_sub(100);
        assert_eq!(w.has_tag(a, i.t_window), (5..12).contains(&t), "frame {frame}");
        assert_eq!(w.is_ability_active(light), (0..17).contains(&t), "frame {frame}");
        assert_eq!(w.has_tag(a, i.t_attacking), (0..17).contains(&t), "frame {frame}");
        let notified = out.gameplay_events.iter().any(|g| g.to == a && g.data.tag == i.t_hit_light);
        assert_eq!(notified, t == 4, "frame {frame}");
        assert_eq!(attr(&w, b, i.health), int(if (4..1000).contains(&t) { 90 } else { 100 }));
        if t == 17 {
            assert_eq!(ended(&out), vec![(light, false)], "the timeline completed");
        }
    }
}

/// A heavy attack pressed inside the light attack's cancel window cancels it; outside it fails
/// with `MissingTags`. Input activations run in P4, before the timeline advances in P5, so the
/// window seen by a press spans frames 6..=12 after the light attack; a script activation in P6
/// sees frames 5..=11.
#[test]
fn heavy_attack_cancels_light_only_inside_the_window() {
    let i = ids();
    for by_input in [true, false] {
        for offset in 1..=20u32 {
            let (mut w, a, b) = recipe_world(11);
            let light = ability(&w, a, i.light);
            let heavy = ability(&w, a, i.heavy);
            let press = 100 + offset;
            let mut scripted = None;
            let mut at_press = None;
            for frame in 0..=160u32 {
                let mut input = 0;
                if frame == 100 {
                    input |= LIGHT;
                }
                if by_input && frame == press {
                    input |= HEAVY;
                }
                let out = w
                    .step_with(&[input, 0], |w| {
                        if !by_input && frame == press {
                            scripted = Some(w.try_activate(heavy));
                        }
                    })
                    .clone();
                if frame == press {
                    let cooldown = w.effects(a).iter().any(|e| e.def == i.e_heavy_cd);
                    at_press = Some((ended(&out), w.has_tag(a, i.t_window), cooldown));
                }
            }
            let window = if by_input { 6..=12 } else { 5..=11 };
            let inside = window.contains(&offset);
            let result = w_result(&w, heavy, press, scripted);
            let (ended_at_press, window_open, cooldown) = at_press.unwrap();
            if inside {
                assert_eq!(result, Ok(()), "input {by_input} offset {offset}");
                assert_eq!(ended_at_press, vec![(light, true)], "input {by_input} offset {offset}");
                assert!(!window_open, "the cancelled timeline closed its window");
                // The light hit (10) at 104, the heavy hit (10 + 10) 8 frames after the press.
                assert_eq!(attr(&w, b, i.health), int(70), "input {by_input} offset {offset}");
                assert!(cooldown, "the heavy attack committed its cooldown");
                assert!(!w.is_ability_active(heavy), "ended after its 28-frame timeline");
            } else {
                assert_eq!(
                    result,
                    Err(ActivationFailure::MissingTags),
                    "input {by_input} offset {offset}"
                );
                assert_eq!(attr(&w, b, i.health), int(90), "input {by_input} offset {offset}");
                assert!(!cooldown);
            }
        }
    }
}

/// The outcome of the heavy attack's activation at `press` (from the log for input presses).
fn w_result(
    w: &World<RecipeGame>,
    heavy: AbilityHandle,
    press: u32,
    scripted: Option<Result<rollback_abilities::Activation, ActivationFailure>>,
) -> Result<(), ActivationFailure> {
    match scripted {
        Some(r) => r.map(|_| ()),
        None => {
            let r = w.activation_log().find(|r| r.handle == heavy && r.frame == press);
            r.expect("an activation attempt at the press").result.map(|_| ())
        }
    }
}

/// The heavy attack's cooldown (45 frames) applies to the next cancel too.
#[test]
fn heavy_attack_cooldown_blocks_the_next_cancel() {
    let (mut w, a, _) = recipe_world(12);
    let i = ids();
    let heavy = ability(&w, a, i.heavy);
    for frame in 0..=200u32 {
        // Light at 10, heavy at 18 (inside the window); light at 50 (after the heavy's 28
        // frames), heavy at 58 (inside the window, but the cooldown lasts until 63); light at 80,
        // heavy at 88.
        let input = match frame {
            10 | 50 | 80 => LIGHT,
            18 | 58 | 88 => HEAVY,
            _ => 0,
        };
        w.step(&[input, 0]);
        if frame == 58 {
            assert!(w.has_tag(a, i.t_cd_heavy));
        }
    }
    let log: Vec<(u32, Result<u32, ActivationFailure>)> =
        w.activation_log().filter(|r| r.handle == heavy).map(|r| (r.frame, r.result)).collect();
    assert_eq!(log, vec![(18, Ok(1)), (58, Err(ActivationFailure::OnCooldown)), (88, Ok(2))]);
}

// ============================================================================================
// Rollback invariance of abilities and tasks
// ============================================================================================

/// A scripted operation run in phase P6.
#[derive(Clone, Debug)]
enum Op {
    Apply { effect: usize, from: usize, to: usize },
    Respawn { who: usize },
    CritChance { who: usize, quarters: u8 },
}

/// The effects scripts apply (source, target from the op).
fn op_effects() -> [EffectDefId; 7] {
    let i = ids();
    [i.e_stun, i.e_knockback, i.e_strike, i.e_vampiric, i.e_vampirism, i.e_heal, i.e_potion]
}

fn run_op(w: &mut World<RecipeGame>, fighters: [Entity; 2], op: &Op) {
    let i = ids();
    match *op {
        Op::Apply { effect, from, to } => {
            let def = op_effects()[effect % 7];
            let spec = w.make_spec(def, 1, fighters[from % 2]);
            let _ = w.apply_effect(spec, fighters[to % 2]);
        }
        Op::Respawn { who } => {
            let e = fighters[who % 2];
            if w.has_tag(e, i.t_dead) {
                w.set_loose_tag_count(e, i.t_dead, 0);
                w.set_base(e, i.health, int(100));
            }
        }
        Op::CritChance { who, quarters } => {
            let v = num::ratio(i64::from(quarters.min(4)), 4);
            w.set_base(fighters[who % 2], i.crit_chance, v);
        }
    }
}

/// An input pattern: `(kind, len)` segments expanded to per-frame input bytes.
fn expand(segments: &[(u8, u8)], frames: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(frames + 64);
    for &(kind, len) in segments {
        let len = usize::from(len.max(1));
        match kind % 7 {
            0 => v.extend(std::iter::repeat_n(0, len)),
            1 => v.extend(std::iter::repeat_n(SPRINT, len)),
            2 => v.extend(std::iter::repeat_n(AIM, len)),
            3 => v.extend(std::iter::repeat_n(SPRINT | AIM, len)),
            4 => {
                v.push(LIGHT);
                v.extend(std::iter::repeat_n(0, len));
            }
            5 => {
                // A light → heavy combo, the heavy pressed 6..=12 frames after the light.
                let gap = 5 + len % 7;
                v.push(LIGHT);
                v.extend(std::iter::repeat_n(0, gap));
                v.push(HEAVY);
                v.extend(std::iter::repeat_n(0, len));
            }
            _ => {
                v.push(BITE);
                v.extend(std::iter::repeat_n(0, len));
            }
        }
        if v.len() >= frames {
            break;
        }
    }
    v.resize(frames, 0);
    v
}

/// [`recipe_world`] with the passive armor on both fighters.
fn armored_recipe_world(seed: u64) -> (World<RecipeGame>, [Entity; 2]) {
    let (mut w, a, b) = recipe_world(seed);
    for e in [a, b] {
        w.grant_ability(e, ids().armor_up, 1).unwrap();
    }
    (w, [a, b])
}

struct Script {
    inputs: [Vec<u8>; 2],
    ops: Vec<Option<Op>>,
}

/// Runs the script straight; returns the checksum after every frame and the outputs.
fn run_straight(seed: u64, s: &Script) -> (Vec<u64>, Vec<FrameOutput>) {
    let (mut w, fighters) = armored_recipe_world(seed);
    let mut sums = Vec::with_capacity(s.ops.len());
    let mut outs = Vec::with_capacity(s.ops.len());
    for f in 0..s.ops.len() {
        let out = w
            .step_with(&[s.inputs[0][f], s.inputs[1][f]], |w| {
                if let Some(op) = &s.ops[f] {
                    run_op(w, fighters, op);
                }
            })
            .clone();
        outs.push(out);
        sums.push(w.checksum());
    }
    (sums, outs)
}

/// Runs the script through the determinism harness (straight, then rolling back up to `depth`
/// frames after every frame); every frame's checksum must also equal `straight`'s.
fn run_with_rollbacks(
    seed: u64,
    s: &Script,
    depth: u32,
    straight: &[u64],
) -> Result<rollback_abilities::session::RollbackStats, String> {
    let fighters = armored_recipe_world(seed).1;
    let report = Determinism { max_depth: depth, seed: seed ^ 0x5EED }
        .check(
            || armored_recipe_world(seed).0,
            straight.len() as u32,
            &mut |frame, buf| {
                let frame = frame as usize;
                buf.extend([s.inputs[0][frame], s.inputs[1][frame]]);
            },
            &mut |w| {
                if let Some(op) = &s.ops[w.frame() as usize] {
                    run_op(w, fighters, op);
                }
            },
        )
        .map_err(|d| d.to_string())?;
    if report.checksums != straight {
        return Err("the harness's straight run differs from this file's".into());
    }
    Ok(report.stats)
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..7usize, 0..2usize, 0..2usize)
            .prop_map(|(effect, from, to)| Op::Apply { effect, from, to }),
        1 => (0..2usize).prop_map(|who| Op::Respawn { who }),
        1 => (0..2usize, 0..5u8).prop_map(|(who, quarters)| Op::CritChance { who, quarters }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Random inputs for both players plus random effect applications give the same checksum
    /// at every frame with random-depth rollbacks as straight.
    #[test]
    fn abilities_and_tasks_survive_random_rollbacks(
        seed in any::<u64>(),
        p0 in proptest::collection::vec((0u8..7, 1u8..40), 4..40),
        p1 in proptest::collection::vec((0u8..7, 1u8..40), 4..40),
        ops in proptest::collection::vec(proptest::option::weighted(0.12, op_strategy()), 120..240),
        depth in 1u32..=8,
    ) {
        let frames = ops.len();
        let script = Script { inputs: [expand(&p0, frames), expand(&p1, frames)], ops };
        let (straight, _) = run_straight(seed, &script);
        let r = run_with_rollbacks(seed, &script, depth, &straight);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// A deterministic 600-frame script (no proptest) for the fixed-seed test.
fn fixed_script(seed: u64, frames: usize) -> Script {
    let mut s = rollback_abilities::random::Stream::derive(seed, &[0x2EC1]);
    let segments = |s: &mut rollback_abilities::random::Stream| {
        let segs: Vec<(u8, u8)> =
            (0..200).map(|_| (s.below(7) as u8, 1 + s.below(40) as u8)).collect();
        expand(&segs, frames)
    };
    let inputs = [segments(&mut s), segments(&mut s)];
    let ops = (0..frames)
        .map(|_| {
            (s.below(100) < 10).then(|| match s.below(8) {
                0..=5 => Op::Apply {
                    effect: s.below(7) as usize,
                    from: s.below(2) as usize,
                    to: s.below(2) as usize,
                },
                6 => Op::Respawn { who: s.below(2) as usize },
                _ => Op::CritChance { who: s.below(2) as usize, quarters: s.below(5) as u8 },
            })
        })
        .collect();
    Script { inputs, ops }
}

/// A fixed 600-frame match: no divergence at any rollback depth, and the workload really
/// activated every ability, ran and ended tasks, played timelines and applied cooldowns.
#[test]
fn fixed_600_frame_match_with_rollbacks() {
    let i = ids();
    let seed = 0xA11CE;
    let script = fixed_script(seed, 600);
    let (straight, outs) = run_straight(seed, &script);
    for depth in [1, 4, 8] {
        let stats = run_with_rollbacks(seed, &script, depth, &straight).unwrap();
        assert!(stats.rollbacks >= 599 && stats.max_depth == depth, "{stats:?}");
    }
    let c = content();
    let mut activations = std::collections::BTreeMap::<String, u32>::new();
    let (mut ended_normally, mut cancelled, mut tasks_ended, mut cooldowns) = (0, 0, 0, 0);
    let (mut notifies, mut failures, mut armor_stacks) = (0, 0, 0);
    let mut tasks = std::collections::BTreeSet::new();
    for out in &outs {
        for e in &out.ability_events {
            match e {
                AbilityEvent::Activated { def, .. } => {
                    *activations.entry(c.ability_name(*def).to_string()).or_default() += 1
                }
                AbilityEvent::Ended { was_cancelled: false, .. } => ended_normally += 1,
                AbilityEvent::Ended { was_cancelled: true, .. } => cancelled += 1,
                AbilityEvent::TaskEnded { task, .. } => {
                    tasks_ended += 1;
                    tasks.insert((task.slot, task.generation));
                }
                AbilityEvent::Committed { cooldown: Some(_), .. } => cooldowns += 1,
                AbilityEvent::ActivationFailed { .. } => failures += 1,
                _ => {}
            }
        }
        notifies += out
            .gameplay_events
            .iter()
            .filter(|g| c.tags().is_descendant_or_self(g.data.tag, i.t_hit))
            .count();
        armor_stacks += out
            .effect_events
            .iter()
            .filter(|e| match e {
                EffectEvent::Added { def, .. } => *def == i.e_armor,
                EffectEvent::StackChanged { old, new, .. } => new > old,
                _ => false,
            })
            .count();
    }
    eprintln!(
        "activations {activations:?}, ended {ended_normally}, cancelled {cancelled}, tasks ended \
         {tasks_ended} ({} distinct), cooldowns {cooldowns}, notifies {notifies}, failures \
         {failures}, armor stacks {armor_stacks}",
        tasks.len()
    );
    for name in ["Sprint", "Aim", "LightAttack", "HeavyAttack", "Bite", "KnockedBack"] {
        assert!(activations.get(name).copied().unwrap_or(0) > 0, "{name} never activated");
    }
    assert!(ended_normally > 10 && cancelled > 0, "{ended_normally} {cancelled}");
    assert!(tasks.len() > 20, "{} distinct tasks ended", tasks.len());
    assert!(cooldowns > 2, "{cooldowns} cooldowns");
    assert!(notifies > 5, "{notifies} timeline notifies");
    assert!(failures > 0);
    assert!(armor_stacks >= 2, "{armor_stacks} armor stacks");
}
