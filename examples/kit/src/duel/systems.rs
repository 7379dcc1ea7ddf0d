//! The duel's systems (phase P6): the match and its rounds, movement and projectiles; and what
//! a hit does ([`apply_hit`], called by the world's box pass). Fighters never overlap: the
//! world's box pass separates their push boxes, and [`Duel::push_box`] keeps them in the arena.
//!
//! The world finds every hit of a frame before it delivers the first, so two fighters hitting
//! each other in the same frame trade instead of the first player's hit cancelling the
//! second's. Everything here is allocation-free and fixed point.

use super::ids::ids;
use super::{
    ARENA_HALF, Body, Duel, FIREBALL_HITSTOP, HEAVY_HITSTOP, KO_PAUSE, Kind, LIGHT_HITSTOP,
    MAX_FIGHTERS, MAX_ROUNDS, REMATCH_BUTTON, ROUND_FRAMES, ROUNDS_TO_WIN, Round,
};
use rollback_abilities::AbilityEvent;
use rollback_abilities::BoxHit;
use rollback_abilities::EffectQuery;
use rollback_abilities::Entity;
use rollback_abilities::num::{self, Frame, Fx};
use rollback_abilities::{ApplyError, World};
use rollback_abilities::{CueOrigin, CueParams};

/// What hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HitKind {
    Light,
    Heavy,
    Fireball,
}

/// A hit as [`apply_hit`] applies it: by whom (a fireball's caster) on whom.
#[derive(Clone, Copy, Debug)]
struct Hit {
    kind: HitKind,
    source: Entity,
    target: Entity,
}

/// Phase P6 of every frame.
pub(crate) fn run(w: &mut World<Duel>) {
    if rounds(w) {
        return;
    }
    movement(w);
    projectiles(w);
}

/// The fighter of a player, if alive.
pub(crate) fn fighter(w: &World<Duel>, player: usize) -> Option<Entity> {
    w.player_owner(player).filter(|e| w.is_alive(*e))
}

/// Whether a fighter is standing (alive and not knocked out).
pub(crate) fn standing(w: &World<Duel>, e: Entity) -> bool {
    w.is_alive(e) && !w.has_tag(e, ids().t_dead)
}

/// The nearest standing opponent of `me` (ties: the lower player).
pub(crate) fn nearest_opponent(w: &World<Duel>, me: Entity) -> Option<Entity> {
    let x = w.component(me)?.x;
    let mut best: Option<(Fx, Entity)> = None;
    for p in 0..w.players().min(MAX_FIGHTERS) {
        let Some(e) = fighter(w, p) else { continue };
        if e == me || !standing(w, e) {
            continue;
        }
        let Some(b) = w.component(e) else { continue };
        let d = num::sub(b.x, x).saturating_abs();
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, e));
        }
    }
    best.map(|(_, e)| e)
}

/// Round flow. Returns `true` while a round is being reset (the other systems skip the frame).
fn rounds(w: &mut World<Duel>) -> bool {
    let frame = w.frame();
    let g = *w.global();
    if g.match_over != 0 {
        return rematch(w, frame);
    }
    if g.ko != 0 {
        if frame >= g.ko_frame.saturating_add(KO_PAUSE) {
            reset_round(w, frame);
            return true;
        }
        return false;
    }
    let i = ids();
    let players = w.players().min(MAX_FIGHTERS);
    let mut standing_count = 0;
    let mut last = None;
    // The best health among standing fighters, and whether it is shared.
    let mut best: Option<(Fx, usize)> = None;
    let mut tied = false;
    for p in 0..players {
        let Some(e) = fighter(w, p) else { continue };
        if !standing(w, e) {
            continue;
        }
        standing_count += 1;
        last = Some(p);
        let hp = w.attr(e, i.health).unwrap_or(Fx::ZERO);
        match best {
            Some((b, _)) if hp < b => {}
            Some((b, _)) if hp == b => tied = true,
            _ => {
                best = Some((hp, p));
                tied = false;
            }
        }
    }
    let timeout = frame.saturating_sub(g.round_start) >= ROUND_FRAMES;
    if standing_count > 1 && !timeout {
        return false;
    }
    let winner = if standing_count <= 1 {
        last
    } else if tied {
        None
    } else {
        best.map(|(_, p)| p)
    };
    let g = w.global_mut();
    g.ko = 1;
    g.ko_frame = frame;
    match winner {
        Some(p) => {
            if let Some(n) = g.wins.get_mut(p) {
                *n += 1;
            }
            g.last_winner = p as u32 + 1;
        }
        None => {
            g.draws += 1;
            g.last_winner = 0;
        }
    }
    if let Some(winner) = match_decision(g) {
        g.match_over = 1;
        g.matches = g.matches.saturating_add(1);
        g.match_winner = winner.map_or(0, |p| p as u32 + 1);
        g.rematch = 0;
    }
    false
}

/// Whether the rounds decided so far decide the match: `None` while it goes on, `Some(winner)`
/// once it is decided. A player who has won [`ROUNDS_TO_WIN`] rounds wins it; once
/// [`BEST_OF`](super::BEST_OF) rounds were decided (draws included), the player with the most
/// rounds won wins it if no one else has as many; a shared lead plays tie-break rounds, and
/// after [`MAX_ROUNDS`] decided rounds it is a drawn match (`Some(None)`).
pub fn match_decision(g: &Round) -> Option<Option<usize>> {
    let decided = g.wins.iter().sum::<u32>().saturating_add(g.draws);
    let top = g.wins.iter().copied().max().unwrap_or(0);
    let mut leaders = (0..MAX_FIGHTERS).filter(|p| g.wins[*p] == top);
    let first = leaders.next();
    let sole = if leaders.next().is_some() { None } else { first };
    if top >= ROUNDS_TO_WIN || (decided >= super::BEST_OF && sole.is_some()) {
        return Some(sole);
    }
    (decided >= MAX_ROUNDS).then_some(None)
}

/// After a decided match: once the result's pause is over, gathers the players pressing
/// [`REMATCH_BUTTON`] and starts the next match when all of them asked. Returns `true` on the
/// frame the match restarts (the other systems skip it).
fn rematch(w: &mut World<Duel>, frame: Frame) -> bool {
    let g = *w.global();
    if frame < g.ko_frame.saturating_add(KO_PAUSE) {
        return false;
    }
    let players = w.players().min(MAX_FIGHTERS);
    let mut asked = g.rematch;
    for p in 0..players {
        if w.input(p).buttons & REMATCH_BUTTON != 0 {
            asked |= 1 << p;
        }
    }
    if asked != (1u32 << players) - 1 {
        w.global_mut().rematch = asked;
        return false;
    }
    reset_round(w, frame);
    let g = w.global_mut();
    *g = Round {
        round: 1,
        round_start: frame,
        stats: g.stats,
        matches: g.matches,
        match_winner: g.match_winner,
        ..Round::default()
    };
    true
}

/// Starts a new round: full vitals and resources, no effects, no abilities running, starting
/// positions, no projectiles.
fn reset_round(w: &mut World<Duel>, frame: Frame) {
    let i = ids();
    let players = w.players().min(MAX_FIGHTERS);
    for p in 0..players {
        let Some(e) = fighter(w, p) else { continue };
        w.cancel_all_abilities(e, None);
        w.remove_matching(e, &EffectQuery::new());
        w.set_loose_tag_count(e, i.t_dead, 0);
        let max = w.attr(e, i.max_health).unwrap_or(Fx::ZERO);
        w.set_base(e, i.health, max);
        w.set_base(e, i.mana, num::int(100));
        w.set_base(e, i.stamina, num::int(100));
        place(w, e, p, players);
        start_regen(w, e);
    }
    let mut projectiles = [Entity::NONE; 64];
    let mut n = 0;
    for e in w.entities() {
        if w.component(e).is_some_and(|b| b.kind == Kind::Fireball as u8)
            && let Some(slot) = projectiles.get_mut(n)
        {
            *slot = e;
            n += 1;
        }
    }
    for e in &projectiles[..n] {
        w.despawn(*e);
    }
    let g = w.global_mut();
    g.round = g.round.saturating_add(1);
    g.round_start = frame;
    g.ko = 0;
}

/// Puts a fighter at its starting position, facing the middle.
pub(crate) fn place(w: &mut World<Duel>, e: Entity, player: usize, players: usize) {
    let x = super::start_x(player, players);
    if let Some(b) = w.component_mut(e) {
        *b = Body {
            x,
            kind: Kind::Fighter as u8,
            facing: if x > Fx::ZERO { -1 } else { 1 },
            player: player as u8,
            ..Body::default()
        };
    }
}

/// Applies the regeneration effects (infinite, periodic).
pub(crate) fn start_regen(w: &mut World<Duel>, e: Entity) {
    let i = ids();
    for def in [i.e_mana_regen, i.e_stamina_regen] {
        let spec = w.make_spec(def, 1, e);
        let _ = w.apply_effect(spec, e);
    }
}

/// Moves fighters by their stick at their current MoveSpeed (0 while stunned, knocked out,
/// attacking or frozen by hitstop) and turns them towards the nearest opponent (not during an
/// attack).
fn movement(w: &mut World<Duel>) {
    let i = ids();
    for p in 0..w.players().min(MAX_FIGHTERS) {
        let Some(e) = fighter(w, p) else { continue };
        let attacking = w.has_tag(e, i.t_attacking);
        // Hitstop holds the fighter's clock (its timeline and effect timers stand still): the
        // game freezes its body too.
        let frozen = w.is_time_held(e);
        if frozen {
            w.global_mut().stats.hitstop_frames += 1;
        }
        let rooted = attacking || frozen || w.has_tag(e, i.t_stun) || !standing(w, e);
        let speed = if rooted { Fx::ZERO } else { w.attr(e, i.move_speed).unwrap_or(Fx::ZERO) };
        let axis = i64::from(w.input(p).axis.clamp(-127, 127));
        let vx = num::mul(speed, num::ratio(axis, 127));
        let facing = match nearest_opponent(w, e).and_then(|o| w.component(o)).map(|b| b.x) {
            Some(ox) if !attacking => {
                let x = w.component(e).map_or(Fx::ZERO, |b| b.x);
                if ox > x {
                    Some(1)
                } else if ox < x {
                    Some(-1)
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some(b) = w.component_mut(e) {
            b.vx = vx;
            b.x = num::clamp(num::add(b.x, vx), num::neg(ARENA_HALF), ARENA_HALF);
            if let Some(f) = facing {
                b.facing = f;
            }
        }
    }
}

/// Moves projectiles and despawns spent ones (their hits come from their hit boxes).
fn projectiles(w: &mut World<Duel>) {
    let mut list = [Entity::NONE; 64];
    let mut n = 0;
    for e in w.entities() {
        if w.component(e).is_some_and(|b| b.kind == Kind::Fireball as u8)
            && let Some(slot) = list.get_mut(n)
        {
            *slot = e;
            n += 1;
        }
    }
    for &proj in &list[..n] {
        let Some(b) = w.component_mut(proj) else { continue };
        b.x = num::add(b.x, b.vx);
        b.ttl = b.ttl.saturating_sub(1);
        let out = b.x.saturating_abs() > num::add(ARENA_HALF, num::int(40));
        if b.ttl == 0 || out {
            w.despawn(proj);
        }
    }
}

/// Applies one hit the world's box pass delivered, by its event tag, and its follow-up (light:
/// a poison stack; heavy: a stun), keeping the round's statistics. The damage is the hit box's
/// (SetByCaller `Data.Damage`); a fireball is spent by its hit.
pub(crate) fn apply_hit(w: &mut World<Duel>, delivered: &BoxHit) {
    let i = ids();
    let kind = match delivered.hit.event {
        Some(t) if t == i.ev_light => HitKind::Light,
        Some(t) if t == i.ev_heavy => HitKind::Heavy,
        Some(t) if t == i.ev_fireball => HitKind::Fireball,
        _ => return,
    };
    let hit = Hit { kind, source: delivered.instigator, target: delivered.target };
    if kind == HitKind::Fireball {
        w.despawn(delivered.attacker);
    }
    let def = match hit.kind {
        HitKind::Light => i.e_light,
        HitKind::Heavy => i.e_heavy,
        HitKind::Fireball => i.e_fireball,
    };
    let damage = delivered.hit.damage;
    let spec = w.make_spec(def, 1, hit.source).with_set_by_caller(i.d_damage, damage);
    let cues_before = w.output().cues.len();
    match w.apply_effect(spec, hit.target) {
        Ok(_) => {}
        Err(ApplyError::Immune { .. }) => {
            w.global_mut().stats.shield_blocks += 1;
            let params = CueParams { instigator: hit.source, ..CueParams::default() };
            let origin = CueOrigin::game(hit.source.index, hit.kind as u32);
            w.execute_cue(hit.target, i.c_blocked, origin, params);
            return;
        }
        Err(_) => return,
    }
    // Hit freeze (F-GA-23): a melee hit holds both fighters' clocks, a fireball its target's.
    let freeze = match hit.kind {
        HitKind::Light => LIGHT_HITSTOP,
        HitKind::Heavy => HEAVY_HITSTOP,
        HitKind::Fireball => FIREBALL_HITSTOP,
    };
    w.hitstop(hit.target, freeze);
    if hit.kind != HitKind::Fireball {
        w.hitstop(hit.source, freeze);
    }
    let crits = w
        .output()
        .cues
        .iter()
        .skip(cues_before)
        .filter(|c| c.key.tag == i.c_crit && c.key.target == hit.target)
        .count() as u32;
    {
        let s = &mut w.global_mut().stats;
        s.crits += crits;
        if hit.kind == HitKind::Fireball {
            s.fireball_hits += 1;
        } else {
            s.melee_hits += 1;
        }
    }
    if !standing(w, hit.target) {
        return;
    }
    match hit.kind {
        HitKind::Light => {
            let spec = w.make_spec(i.e_poison, 1, hit.source);
            if w.apply_effect(spec, hit.target).is_ok() {
                w.global_mut().stats.poison_stacks += 1;
            }
        }
        HitKind::Heavy => {
            let spec = w.make_spec(i.e_stun, 1, hit.source);
            let events_before = w.output().ability_events.len();
            if w.apply_effect(spec, hit.target).is_ok() {
                let cancelled = w
                    .output()
                    .ability_events
                    .iter()
                    .skip(events_before)
                    .filter(|e| {
                        matches!(e, AbilityEvent::Ended { handle, was_cancelled: true, .. }
                            if handle.owner == hit.target)
                    })
                    .count() as u32;
                let s = &mut w.global_mut().stats;
                s.stuns += 1;
                s.stun_cancels += cancelled;
            }
        }
        HitKind::Fireball => {}
    }
}
