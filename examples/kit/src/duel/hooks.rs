//! The functions `duel.ron` names: ability behaviours, the heavy attack's cancel-window check,
//! the damage execution and the vitals post-execute hook.

use super::ids::ids;
use super::{Body, Duel, FIGHTER_HALF, FIREBALL_SPEED, FIREBALL_TTL, Kind};
use rollback_abilities::EffectSpec;
use rollback_abilities::ModOp;
use rollback_abilities::TaskSpec;
use rollback_abilities::num::{self, Fx};
use rollback_abilities::{
    AbilityCtx, AbilityEvent, AttrCmp, EventData, InputEdge, TaskEvent, TaskResult,
};
use rollback_abilities::{AbilityHandle, EffectDefId, EffectHandle, TagId};
use rollback_abilities::{Behaviour, Capture, ExecCtx, ExecutedMod, Hooks, World};
use rollback_abilities::{CueOrigin, CueParams};

type Ctx<'w> = AbilityCtx<'w, Duel>;

/// The hooks table of the duel: every function `duel.ron` names.
///
/// ```
/// use rollback_abilities_kit::duel;
/// let hooks = duel::hooks();
/// assert!(hooks.signature().contains("DuelDamage"));
/// ```
pub fn hooks() -> Hooks<Duel> {
    Hooks::new()
        .behaviour("Melee", Behaviour { on_activate: Some(melee_activate), ..Behaviour::default() })
        .behaviour(
            "Fireball",
            Behaviour {
                on_activate: Some(fireball_activate),
                on_task: Some(fireball_task),
                ..Behaviour::default()
            },
        )
        .behaviour(
            "Shield",
            Behaviour { on_activate: Some(shield_activate), ..Behaviour::default() },
        )
        .behaviour_with_state::<Held>(
            "Sprint",
            Behaviour {
                on_activate: Some(sprint_activate),
                on_task: Some(sprint_task),
                on_input: Some(sprint_input),
                on_end: Some(sprint_end),
                ..Behaviour::default()
            },
        )
        .can_activate("HeavyCancel", heavy_cancel)
        .execution(
            "DuelDamage",
            &[
                Capture::source("AttackPower"),
                Capture::source("CritChance"),
                Capture::source("CritBonus"),
                Capture::source("Lifesteal"),
            ],
            duel_damage,
        )
        .post_execute("Vitals", vitals)
}

// ---------------------------------------------------------------------------------------------
// Melee: the hitbox itself is the melee system's (phase P6); the behaviour only starts a fresh
// "already hit" mask and counts light → heavy cancels and attacks that came out of the input
// buffer.
// ---------------------------------------------------------------------------------------------

fn melee_activate(ctx: &mut Ctx<'_>) {
    let i = ids();
    let owner = ctx.owner();
    let me = ctx.handle();
    let is_heavy = ctx.world().ability(me).is_some_and(|s| s.def == i.abilities[1]);
    // Pressed earlier and kept by the heavy attack's input buffer (F-GA-22).
    let buffered = ctx.from_input_buffer();
    // The heavy attack cancelled a light attack of the same owner in this frame: a combo.
    let cancelled_light = is_heavy
        && ctx.world().output().ability_events.iter().any(|e| {
            matches!(e, AbilityEvent::Ended { handle, def, was_cancelled: true }
                if handle.owner == owner && *def == i.abilities[0])
        });
    let w = ctx.world_mut();
    if cancelled_light {
        w.global_mut().stats.heavy_cancels += 1;
    }
    if buffered {
        w.global_mut().stats.buffered_attacks += 1;
    }
}

/// The heavy attack starts from neutral or inside the light attack's cancel window — never
/// during the rest of a light attack (refusal code 1).
fn heavy_cancel(w: &World<Duel>, h: AbilityHandle, _event: Option<&EventData>) -> Result<(), u16> {
    let i = ids();
    if w.has_tag(h.owner, i.t_light) && !w.has_tag(h.owner, i.t_window) { Err(1) } else { Ok(()) }
}

// ---------------------------------------------------------------------------------------------
// Fireball: a projectile entity leaves at the cast timeline's release notify.
// ---------------------------------------------------------------------------------------------

fn fireball_activate(ctx: &mut Ctx<'_>) {
    let _ = ctx.spawn_task(0, TaskSpec::WaitEvent { tag: ids().t_release, once: true });
}

fn fireball_task(ctx: &mut Ctx<'_>, r: &TaskResult) {
    if !matches!(r.event, TaskEvent::Event(_)) {
        return;
    }
    let owner = ctx.owner();
    let w = ctx.world_mut();
    let Some(caster) = w.component(owner).copied() else { return };
    let Ok(p) = w.spawn() else { return };
    let dir = num::int(i64::from(caster.facing.signum()));
    if let Some(b) = w.component_mut(p) {
        *b = Body {
            x: num::add(caster.x, num::mul(dir, num::int(FIGHTER_HALF + 2))),
            vx: num::mul(dir, FIREBALL_SPEED),
            owner,
            kind: Kind::Fireball as u8,
            facing: caster.facing,
            player: caster.player,
            ttl: FIREBALL_TTL,
            ..Body::default()
        };
    }
    w.global_mut().stats.fireballs_launched += 1;
    let params = CueParams { instigator: owner, causer: p, ..CueParams::default() };
    w.execute_cue(owner, ids().c_launch, CueOrigin::game(p.index, p.generation), params);
}

// ---------------------------------------------------------------------------------------------
// Shield: apply the buff and end.
// ---------------------------------------------------------------------------------------------

fn shield_activate(ctx: &mut Ctx<'_>) {
    let spec = ctx.make_spec(ids().e_shield);
    let owner = ctx.owner();
    ctx.apply(spec, owner);
    ctx.end();
}

// ---------------------------------------------------------------------------------------------
// Sprint (held): a speed buff and a periodic stamina drain, removed when the ability ends.
// ---------------------------------------------------------------------------------------------

/// Sprint's state blob: the handles of the two infinite effects it applied, indexed by the
/// task user id that reported them.
type Held = [EffectHandle; 2];

/// The task user id of "stamina is empty".
const EXHAUSTED: u16 = 10;

fn apply_and_track(ctx: &mut Ctx<'_>, slot: u16, effect: EffectDefId, asset_tag: TagId) {
    // `apply` is queued until the behaviour returns: a task reports the new effect's handle.
    let _ = ctx.spawn_task(slot, TaskSpec::WaitEffectAdded(Some(asset_tag)));
    let spec = ctx.make_spec(effect);
    let owner = ctx.owner();
    ctx.apply(spec, owner);
}

fn sprint_activate(ctx: &mut Ctx<'_>) {
    let i = ids();
    apply_and_track(ctx, 0, i.e_sprint_speed, i.t_sprint_speed);
    apply_and_track(ctx, 1, i.e_sprint_drain, i.t_sprint_drain);
    let exhausted = TaskSpec::WaitAttribute { attr: i.stamina, cmp: AttrCmp::Le, value: Fx::ZERO };
    let _ = ctx.spawn_task(EXHAUSTED, exhausted);
}

fn sprint_task(ctx: &mut Ctx<'_>, r: &TaskResult) {
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

fn sprint_input(ctx: &mut Ctx<'_>, edge: InputEdge) {
    if edge == InputEdge::Released {
        ctx.end();
    }
}

fn sprint_end(ctx: &mut Ctx<'_>, _cancelled: bool) {
    let held: Held = ctx.state();
    for h in held {
        if h.seq != 0 {
            ctx.world_mut().remove_effect(h);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Damage and vitals.
// ---------------------------------------------------------------------------------------------

/// Every hit: `Data.Damage × AttackPower / 10`, times `1 + CritBonus` with probability
/// `CritChance` (drawn from the execution's random stream: the same on every peer and at every
/// rollback depth), then a lifesteal heal of `Lifesteal × damage` for effects with the
/// `Effect.CanLifesteal` asset tag.
fn duel_damage(ctx: &mut ExecCtx<'_>) {
    let i = ids();
    let (power, chance, bonus, share) =
        (ctx.capture(0), ctx.capture(1), ctx.capture(2), ctx.capture(3));
    let base = ctx.set_by_caller(i.d_damage).unwrap_or(Fx::ZERO);
    let mut dmg = num::mul(base, num::div(power, num::int(10), Fx::ONE));
    if ctx.random().chance(chance) {
        dmg = num::mul(dmg, num::add(Fx::ONE, bonus));
        let params = CueParams { magnitude: dmg, instigator: ctx.source(), ..CueParams::default() };
        ctx.cue(i.c_crit, params);
    }
    if dmg <= Fx::ZERO {
        return;
    }
    ctx.output(i.health, ModOp::Add, num::neg(dmg));
    let lifesteal = ctx.def().is_some_and(|d| d.asset_tags.has(i.t_lifesteal));
    if lifesteal && share > Fx::ZERO && !ctx.source_tags().contains(i.t_dead) {
        let source = ctx.source();
        let heal = EffectSpec::new(i.e_lifesteal, 1)
            .with_set_by_caller(i.d_heal, num::mul(dmg, share))
            .with_instigator(source);
        ctx.apply(heal, source);
    }
}

/// Statistics and death: Health reaching 0 sets `State.Dead` (which cancels abilities, blocks
/// activation and stops movement) and emits the `GameplayCue.KO` burst (a `Confirmed` cue:
/// presentation shows it only once the frame is confirmed).
fn vitals(w: &mut World<Duel>, m: &ExecutedMod) {
    let i = ids();
    if m.attr != i.health {
        return;
    }
    let player = w.component(m.target).map(|b| usize::from(b.player));
    let g = w.global_mut();
    if m.def == Some(i.e_poison) {
        g.stats.poison_ticks += 1;
    }
    if m.def == Some(i.e_lifesteal) {
        g.stats.lifesteal_heals += 1;
    }
    if m.new_base < m.old_base
        && let Some(slot) = player.and_then(|p| g.damage_taken.get_mut(p))
    {
        *slot = num::add(*slot, num::sub(m.old_base, m.new_base));
    }
    if m.old_base > Fx::ZERO && m.new_base <= Fx::ZERO {
        g.stats.kos += 1;
        // Not `add_loose_tag`: two lethal hits in one cascade must not count twice.
        w.set_loose_tag_count(m.target, i.t_dead, 1);
        let params = CueParams { instigator: m.instigator, ..CueParams::default() };
        w.execute_cue(m.target, i.c_ko, CueOrigin::game(m.target.index, 0), params);
    }
}
