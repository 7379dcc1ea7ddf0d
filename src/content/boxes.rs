//! Hit, hurt and push boxes: what content declares (a move's boxes per frame window beside its
//! cancel windows, and the standing boxes of each kind of body) and what it freezes to.
//!
//! A box is a rectangle in fixed point, authored for an owner **facing right**: `x` is its left
//! edge and `y` its bottom edge, relative to the owner's anchor (the point the game reports
//! through [`Game::box_anchor`](crate::Game::box_anchor)), `w` and `h` its width and height.
//! When the owner faces left the box mirrors around the anchor: it covers
//! `[anchor.x - x - w, anchor.x - x)`. Boxes cover half-open ranges, so two boxes that only touch
//! do not overlap.

use crate::id::{EffectDefId, TagId};
use crate::num::{Frame, Fx};
use serde::{Deserialize, Serialize};

use super::raw::Num;

/// What a box does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename = "kind")]
pub enum BoxKind {
    /// Hits an enemy's hurt box: a hit is delivered (with the box's [`HitDef`]).
    Hit,
    /// Where the owner can be hit.
    Hurt,
    /// Keeps bodies apart: two overlapping push boxes of different owners are pushed apart by
    /// half the overlap each.
    Push,
}

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

/// A box's hit data, frozen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HitDef {
    /// The effect applied to the target.
    pub effect: Option<EffectDefId>,
    /// The gameplay event sent to the target.
    pub event: Option<TagId>,
    /// The damage figure carried.
    pub damage: Fx,
    /// The push-back along the attacker's facing.
    pub pushback: Fx,
    /// 0: once per target while the box is out; `n`: again every `n` frames.
    pub rehit: u32,
}

/// A frozen box.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BoxDef {
    /// What it does.
    pub kind: BoxKind,
    /// First timeline frame it is out (0 for a body's box).
    pub from: Frame,
    /// Frame it goes away (exclusive; [`Frame::MAX`] for a body's box).
    pub to: Frame,
    /// Left edge facing right, relative to the anchor.
    pub x: Fx,
    /// Bottom edge, relative to the anchor.
    pub y: Fx,
    /// Width (above 0).
    pub w: Fx,
    /// Height (above 0).
    pub h: Fx,
    /// A hit box's hit data (default for other boxes).
    pub hit: HitDef,
}

impl BoxDef {
    /// Whether the box is out at timeline frame `f`.
    pub fn is_out_at(&self, f: Frame) -> bool {
        self.from <= f && f < self.to
    }

    /// The box placed at an anchor, mirrored when the owner faces left.
    pub fn placed(&self, x: Fx, y: Fx, facing_left: bool) -> BoxRect {
        use crate::num::{add, sub};
        let (x0, x1) = if facing_left {
            (sub(x, add(self.x, self.w)), sub(x, self.x))
        } else {
            (add(x, self.x), add(x, add(self.x, self.w)))
        };
        let y0 = add(y, self.y);
        BoxRect { x0, y0, x1, y1: add(y0, self.h) }
    }
}

/// A placed box: the half-open rectangle `[x0, x1) × [y0, y1)` in world units.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    bytemuck::Pod,
    bytemuck::Zeroable,
)]
#[repr(C)]
pub struct BoxRect {
    /// Left edge.
    pub x0: Fx,
    /// Bottom edge.
    pub y0: Fx,
    /// Right edge (exclusive).
    pub x1: Fx,
    /// Top edge (exclusive).
    pub y1: Fx,
}

impl BoxRect {
    /// Whether two rectangles share some area (touching edges do not).
    pub fn overlaps(&self, o: &BoxRect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    /// The width of the shared horizontal range (0 when none).
    pub fn overlap_x(&self, o: &BoxRect) -> Fx {
        let w = crate::num::sub(self.x1.min(o.x1), self.x0.max(o.x0));
        if w > Fx::ZERO { w } else { Fx::ZERO }
    }

    /// The horizontal centre, doubled (exact in fixed point).
    pub fn centre2(&self) -> Fx {
        crate::num::add(self.x0, self.x1)
    }
}

/// The standing boxes of a kind of body, frozen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BodyDef {
    /// Its name.
    pub name: String,
    /// Its boxes, in authored order.
    pub boxes: Vec<BoxDef>,
}

/// A body's id (its index in name order), from [`Content::body`](crate::Content::body).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct BodyId(pub u16);
