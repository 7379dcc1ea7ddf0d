//! The box game — bevy_ggrs's `box_game` ported onto `rollback_abilities`: every player steers a
//! box on a square plane (accelerate with the arrows or WASD, friction when released, walls at
//! the plane's edge), and, to show what the plugin adds, dashes with Space: a gameplay effect
//! (`Dash`, 12 frames of double speed, tag `State.Dashing`) behind a cooldown effect
//! (`DashCooldown`, 60 frames), whose cue (`GameplayCue.Dash`) reaches Bevy once as a
//! `CueMessage` however often the frame is re-simulated.
//!
//! The simulation is fixed point and allocation-free; positions are in plane units (the plane
//! spans `-PLANE_HALF..PLANE_HALF` on both axes). The rendered game (`box_game` package) and
//! the headless example (`box_game_headless`) share this file.

use bytemuck::{Pod, Zeroable};
use rollback_abilities::num::{self, Fx};
use rollback_abilities::{Content, Entity, Game, Hooks, World, WorldConfig};
use std::sync::Arc;

/// Input bit: accelerate up (+y).
pub const UP: u8 = 1 << 0;
/// Input bit: accelerate down (-y).
pub const DOWN: u8 = 1 << 1;
/// Input bit: accelerate left (-x).
pub const LEFT: u8 = 1 << 2;
/// Input bit: accelerate right (+x).
pub const RIGHT: u8 = 1 << 3;
/// Input bit: dash.
pub const DASH: u8 = 1 << 4;

/// Half the plane's side.
pub const PLANE_HALF: Fx = Fx::const_from_int(240);
/// Half a box's side.
pub const BOX_HALF: Fx = Fx::const_from_int(16);
/// At most this many players (boxes).
pub const MAX_PLAYERS: usize = 4;
/// The top speed in units per frame (twice that while dashing).
const MAX_SPEED: Fx = Fx::const_from_int(4);

/// The game's content: the dash, its cooldown and its cue.
pub const CONTENT: &str = r#"(
    tags: ["State.Dashing", "Cooldown.Dash", "GameplayCue.Dash"],
    effects: {
        "Dash": (
            duration: Frames(12),
            granted_tags: ["State.Dashing"],
            cues: [(tag: "GameplayCue.Dash")],
        ),
        "DashCooldown": (duration: Frames(60), granted_tags: ["Cooldown.Dash"]),
    },
)"#;

/// A box: position and velocity (fixed point), and the player steering it (40 bytes, `Pod`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BoxBody {
    /// Position.
    pub x: Fx,
    /// Position.
    pub y: Fx,
    /// Velocity in units per frame.
    pub vx: Fx,
    /// Velocity in units per frame.
    pub vy: Fx,
    /// The player's handle.
    pub handle: u32,
    _pad: u32,
}

/// The box game.
pub struct BoxGame;

impl Game for BoxGame {
    type Input = u8;
    type Component = BoxBody;
    type Global = ();

    fn systems(world: &mut World<BoxGame>) {
        movement(world);
    }
}

/// The content, parsed once per call (it is a few hundred bytes).
pub fn content() -> Result<Arc<Content>, String> {
    Content::from_ron_str(CONTENT).map(Arc::new).map_err(|e| e.to_string())
}

/// A new match of `players` boxes (2 to [`MAX_PLAYERS`]) spread along the plane's diagonal,
/// player `i` steering box `i`.
pub fn new_world(players: usize) -> Result<World<BoxGame>, String> {
    let players = players.clamp(2, MAX_PLAYERS);
    let config = WorldConfig {
        players: players as u16,
        max_entities: MAX_PLAYERS as u32,
        seed: 1,
        ..WorldConfig::default()
    };
    let mut w = World::new(content()?, &Hooks::new(), config).map_err(|e| e.to_string())?;
    for p in 0..players {
        let e = w.spawn_actor(&[]).map_err(|e| e.to_string())?;
        w.bind_player(p, e);
        // Evenly spaced on the diagonal, as box_game places its cubes on a circle.
        let at = num::sub(
            num::mul_int(PLANE_HALF, 2 * p as i64 + 1),
            num::mul_int(PLANE_HALF, players as i64),
        );
        let at = num::div(at, num::int(players as i64), Fx::ZERO);
        if let Some(b) = w.component_mut(e) {
            *b = BoxBody { x: at, y: at, handle: p as u32, ..BoxBody::default() };
        }
    }
    Ok(w)
}

/// A scripted player (the headless example, the tests, the rendered game's `--bots`): its
/// input is a function of the player and the frame only, so every peer and every run agrees.
/// It turns every 40 frames and dashes every 90 (player 1 half a period after player 0).
pub fn scripted(player: usize, frame: u32) -> u8 {
    let turns = [RIGHT | UP, DOWN, LEFT | DOWN, UP, LEFT];
    let step = (frame / 40) as usize + player * 2;
    let dash = if (frame + 45 * player as u32).is_multiple_of(90) { DASH } else { 0 };
    turns[step % turns.len()] | dash
}

/// One axis of one frame: accelerate towards `dir` (-1, 0, 1) up to `max`, or slow down by
/// friction when no key is held.
fn accelerate(v: Fx, dir: i64, accel: Fx, max: Fx) -> Fx {
    if dir == 0 {
        // Friction: 9/10 of the speed, and a crawl below 1/64 unit a frame stops.
        let slowed = num::mul(v, num::ratio(9, 10));
        if slowed.abs() < num::ratio(1, 64) { Fx::ZERO } else { slowed }
    } else {
        num::clamp(num::add(v, num::mul_int(accel, dir)), num::neg(max), max)
    }
}

/// The direction of two opposite input bits.
fn axis(input: u8, minus: u8, plus: u8) -> i64 {
    i64::from(input & plus != 0) - i64::from(input & minus != 0)
}

/// Phase P6: dashes start, boxes accelerate, move and stop at the walls.
fn movement(w: &mut World<BoxGame>) {
    let c = w.content().clone();
    let (Ok(dashing), Ok(cooldown), Ok(dash), Ok(dash_cooldown)) = (
        c.tag("State.Dashing"),
        c.tag("Cooldown.Dash"),
        c.effect("Dash"),
        c.effect("DashCooldown"),
    ) else {
        return;
    };
    let mut boxes = [Entity::NONE; MAX_PLAYERS];
    for (slot, e) in boxes.iter_mut().zip(w.entities()) {
        *slot = e;
    }
    let wall = num::sub(PLANE_HALF, BOX_HALF);
    for e in boxes.into_iter().filter(|e| *e != Entity::NONE) {
        let Some(mut b) = w.component(e).copied() else { continue };
        let input = w.input(b.handle as usize);
        if input & DASH != 0 && !w.has_tag(e, cooldown) {
            for def in [dash, dash_cooldown] {
                let spec = w.make_spec(def, 1, e);
                let _ = w.apply_effect(spec, e);
            }
        }
        let boost = if w.has_tag(e, dashing) { 2 } else { 1 };
        let (accel, max) = (num::mul_int(num::ratio(1, 2), boost), num::mul_int(MAX_SPEED, boost));
        b.vx = accelerate(b.vx, axis(input, LEFT, RIGHT), accel, max);
        b.vy = accelerate(b.vy, axis(input, DOWN, UP), accel, max);
        b.x = num::clamp(num::add(b.x, b.vx), num::neg(wall), wall);
        b.y = num::clamp(num::add(b.y, b.vy), num::neg(wall), wall);
        if let Some(slot) = w.component_mut(e) {
            *slot = b;
        }
    }
}
