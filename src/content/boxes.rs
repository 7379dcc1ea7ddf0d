//! Hit, hurt and push boxes as content declares them: a move's boxes per frame window beside
//! its cancel windows, and the standing boxes of each kind of body. They freeze to the
//! definitions of `src/ability/boxes.rs` (authored facing right, relative to the anchor the
//! game reports through [`Game::box_anchor`](crate::Game::box_anchor)).

pub use crate::ability::boxes::{BodyDef, BodyId, BoxDef, BoxKind, BoxRect, HitDef};
use serde::Deserialize;

use super::raw::Num;

/// A box as written, in a timeline's `boxes` (with `from` and `to`) or a body's `boxes`
/// (without them).
///
/// ```ron
/// (kind: Hit, from: 4, to: 7, x: 0, y: 20, w: 44, h: 20,
///  hit: (event: "Event.Hit.Jab", damage: 8, pushback: 12))
/// ```
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename = "box")]
pub struct RawBox {
    /// What the box does.
    pub kind: BoxKind,
    /// First timeline frame the box is out (inclusive; timeline boxes only).
    #[serde(default)]
    pub from: Option<u32>,
    /// Frame the box goes away (exclusive; timeline boxes only).
    #[serde(default)]
    pub to: Option<u32>,
    /// Left edge, relative to the owner's anchor, facing right.
    #[serde(default)]
    pub x: Num,
    /// Bottom edge, relative to the owner's anchor.
    #[serde(default)]
    pub y: Num,
    /// Width (above 0).
    pub w: Num,
    /// Height (above 0).
    pub h: Num,
    /// What a hit box's hit carries (hit boxes only; a hit box without it delivers a bare hit).
    #[serde(default)]
    pub hit: Option<RawHit>,
}

/// What a hit box's hit carries, as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "hit")]
pub struct RawHit {
    /// An effect the world applies to the target, made by the box's instigator at level 1.
    pub effect: Option<String>,
    /// A gameplay event tag the world sends to the target (instigator: the box's instigator;
    /// object: the box's owner; magnitude: `damage`), which abilities can trigger on.
    pub event: Option<String>,
    /// A damage figure the hit carries to the game and to the event's magnitude.
    pub damage: Num,
    /// How far the target is pushed away from the attacker, along the attacker's facing.
    pub pushback: Num,
    /// 0 (the default): a target is hit at most once while the box is out. `n > 0`: it may be
    /// hit again every `n` frames while the box is out (multi-hit moves).
    pub rehit: u32,
}

/// The standing boxes of one kind of body (a fighter, a projectile), out whenever the body is
/// anchored: its hurt and push boxes give way while one of its moves has a box of the same
/// kind out; its hit boxes always count.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, rename = "body")]
pub struct RawBody {
    /// The boxes (no `from`/`to`).
    pub boxes: Vec<RawBox>,
}
