//! Deterministic bots: a player's input as a pure function of the peer's world view, the
//! player, the frame and a seed.

use super::ids::ids;
use super::systems::{fighter, nearest_opponent, standing};
use super::{Duel, FIGHTER_HALF, Input, Kind, MAX_FIGHTERS};
use rollback_abilities::World;
use rollback_abilities::num::{self, Frame, Fx};
use rollback_abilities::random::Stream;

/// A bot's decision window in frames: a plan is drawn at the start of each window and buttons
/// are held for its first half, so every plan makes fresh press edges.
const PLAN_FRAMES: Frame = 8;

/// The input a bot gives for `player` in `frame`, reading `world`.
///
/// It is a pure function of its arguments: its randomness is a [`Stream`] derived from `seed`,
/// the player and the frame's decision window (no OS randomness, no wall clock), so the same
/// world view, player, frame and seed always give the same input. The match drivers
/// ([`DuelMatch`](super::DuelMatch), [`DuelPeer`](super::DuelPeer)) pass a
/// [`BotView`](super::BotView): the match as it stood
/// [`BOT_REACTION_FRAMES`](super::BOT_REACTION_FRAMES) earlier, replayed from confirmed inputs
/// only. A peer's own world would be a prediction while remote inputs are late, and packet
/// timing would then change what the bot does and who wins.
///
/// The bot walks to its nearest opponent, jabs in range and cancels into the heavy attack
/// inside the jab's cancel window, throws fireballs from afar, sprints to close long gaps,
/// raises its shield against incoming fireballs or when hurt, and backs off now and then.
///
/// ```
/// use rollback_abilities_kit::duel;
/// let world = duel::new_world(7, 2);
/// let a = duel::bot_input(&world, 0, 100, 42);
/// assert_eq!(a, duel::bot_input(&world, 0, 100, 42));
/// ```
pub fn bot_input(world: &World<Duel>, player: usize, frame: Frame, seed: u64) -> Input {
    let i = ids();
    if world.global().match_over != 0 {
        // A decided match: ask for the rematch (alternating, as a person taps a button).
        let tap = if frame.is_multiple_of(2) { super::REMATCH_BUTTON } else { 0 };
        return Input { buttons: tap, axis: 0 };
    }
    let Some(me) = fighter(world, player) else { return Input::default() };
    if player >= MAX_FIGHTERS || !standing(world, me) || world.has_tag(me, i.t_stun) {
        return Input::default();
    }
    let Some(foe) = nearest_opponent(world, me) else { return Input::default() };
    let (Some(body), Some(foe_body)) = (world.component(me), world.component(foe)) else {
        return Input::default();
    };
    let window = frame / PLAN_FRAMES;
    let mut rng = Stream::derive(seed ^ 0x0D0E_1B07, &[player as u64, u64::from(window)]);
    let plan = rng.below(100);
    let press = frame % PLAN_FRAMES < PLAN_FRAMES / 2;
    let dx = num::sub(foe_body.x, body.x);
    let toward: i8 = if dx >= Fx::ZERO { 127 } else { -127 };
    let dist = dx.saturating_abs();
    let attr = |a| world.attr(me, a).unwrap_or(Fx::ZERO);
    let mana = attr(i.mana);
    let stamina = attr(i.stamina);
    let hurt = attr(i.health) < num::mul(attr(i.max_health), num::ratio(2, 5));
    let fireball_ready = mana >= num::int(25) && !world.has_tag(me, i.t_cd_fireball);
    let shield_ready = mana >= num::int(30) && !world.has_tag(me, i.t_cd_shield);
    let shielded = world.has_tag(me, i.t_shield);

    let mut buttons = 0u8;
    let mut axis = 0i8;
    let tap = |b: u8| if press { b } else { 0 };

    // Once the jab connects or its cancel window is open: finish the combo most of the time.
    // Pressed while the jab is still active, the heavy attack cannot start yet; its input
    // buffer keeps the press until the window opens (after the hit's hitstop).
    if (world.has_tag(me, i.t_window) || world.has_tag(me, i.t_light_active)) && plan < 70 {
        return Input { buttons: Input::HEAVY, axis: 0 };
    }
    // An enemy fireball about to land: shield if possible.
    if shield_ready && !shielded && incoming_fireball(world, body.x, me) && plan < 80 {
        return Input { buttons: Input::SHIELD, axis: 0 };
    }
    let close = num::sub(super::moves().light_reach, num::int(4));
    if dist <= close {
        match plan {
            0..45 => buttons = tap(Input::LIGHT),
            45..58 => buttons = tap(Input::HEAVY),
            58..72 => axis = -toward,
            72..80 if hurt && shield_ready && !shielded => buttons = tap(Input::SHIELD),
            _ => {}
        }
    } else if dist <= num::int(150) {
        match plan {
            0..35 => axis = toward,
            35..50 if stamina > num::int(30) => {
                buttons = Input::SPRINT;
                axis = toward;
            }
            50..70 if fireball_ready => buttons = tap(Input::FIREBALL),
            70..78 => axis = -toward,
            78..84 if hurt && shield_ready && !shielded => buttons = tap(Input::SHIELD),
            _ => axis = toward / 2,
        }
    } else {
        match plan {
            0..35 if fireball_ready => buttons = tap(Input::FIREBALL),
            35..75 if stamina > num::int(20) => {
                buttons = Input::SPRINT;
                axis = toward;
            }
            _ => axis = toward,
        }
    }
    Input { buttons, axis }
}

/// Whether an enemy fireball is flying towards `x` and is less than 70 units away.
fn incoming_fireball(world: &World<Duel>, x: Fx, me: rollback_abilities::Entity) -> bool {
    world.entities().any(|e| {
        world.component(e).is_some_and(|b| {
            let ahead = num::sub(x, b.x);
            b.kind == Kind::Fireball as u8
                && b.owner != me
                && ((ahead > Fx::ZERO) == (b.vx > Fx::ZERO))
                && ahead.saturating_abs() <= num::int(70 + FIGHTER_HALF)
        })
    })
}
