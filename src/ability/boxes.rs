//! Hit, hurt and push boxes as content freezes them (what a move's timeline and a body declare;
//! the format is in `src/content/boxes.rs`).
//!
//! A box is a rectangle in fixed point, authored for an owner **facing right**: `x` is its left
//! edge and `y` its bottom edge, relative to the owner's anchor, `w` and `h` its width and
//! height. When the owner faces left the box mirrors around the anchor: it covers
//! `[anchor.x - x - w, anchor.x - x)`. Boxes cover half-open ranges, so two boxes that only
//! touch do not overlap.

use crate::id::{EffectDefId, TagId};
use crate::num::{Frame, Fx};
use serde::{Deserialize, Serialize};

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
