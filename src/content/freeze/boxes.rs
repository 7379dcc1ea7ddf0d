//! Validation and freezing of hit, hurt and push boxes (a timeline's and a body's).

use super::{Cx, Loc, Names};
use crate::content::boxes::{BodyDef, BoxDef, BoxKind, HitDef, RawBody, RawBox};
use crate::content::{ContentError, ContentErrorKind as K};
use crate::num::{Frame, Fx};
use std::collections::BTreeMap;

/// Freezes a timeline's boxes (`frames`: the timeline's length) or, with `frames` `None`, a
/// body's standing boxes.
pub(super) fn freeze_boxes(
    names: &Names<'_>,
    loc: &Loc,
    boxes: &[RawBox],
    frames: Option<Frame>,
) -> Result<Vec<BoxDef>, ContentError> {
    let cx: &Cx<'_> = &names.cx;
    let mut out = Vec::with_capacity(boxes.len());
    for (i, b) in boxes.iter().enumerate() {
        let bl = loc.at(i);
        let (from, to) = match (frames, b.from, b.to) {
            (Some(frames), Some(from), Some(to)) => {
                if from >= to || to > frames {
                    return Err(cx.err(
                        &bl,
                        K::InvalidValue,
                        format!(
                            "a box's window needs from < to <= {frames} (the timeline's \
                             length), got {from}..{to}"
                        ),
                    ));
                }
                (from, to)
            }
            (Some(_), _, _) => {
                return Err(cx.err(
                    &bl,
                    K::InvalidValue,
                    "a move's box needs `from` and `to` (the frames it is out)",
                ));
            }
            (None, None, None) => (0, Frame::MAX),
            (None, _, _) => {
                return Err(cx.err(
                    &bl,
                    K::InvalidCombination,
                    "a body's boxes stand while it is anchored: remove `from`/`to` (put a \
                     move's boxes in its timeline)",
                ));
            }
        };
        for (field, v) in [("w", b.w.0), ("h", b.h.0)] {
            if v <= Fx::ZERO {
                return Err(cx.err(
                    &bl.at(field),
                    K::InvalidValue,
                    format!("a box's {field} must be above 0, got {v}"),
                ));
            }
        }
        let hit = match (&b.hit, b.kind) {
            (None, _) => HitDef::default(),
            (Some(h), BoxKind::Hit) => {
                let hl = bl.at("hit");
                HitDef {
                    effect: match &h.effect {
                        Some(e) => Some(super::ability::effect_ref(names, &hl.at("effect"), e)?),
                        None => None,
                    },
                    event: match &h.event {
                        Some(t) => Some(names.tag(&hl.at("event"), t)?),
                        None => None,
                    },
                    damage: h.damage.0,
                    pushback: h.pushback.0,
                    rehit: h.rehit,
                }
            }
            (Some(_), kind) => {
                return Err(cx.err(
                    &bl.at("hit"),
                    K::InvalidCombination,
                    format!("only hit boxes carry hit data (this box is a {kind:?} box)"),
                ));
            }
        };
        out.push(BoxDef { kind: b.kind, from, to, x: b.x.0, y: b.y.0, w: b.w.0, h: b.h.0, hit });
    }
    Ok(out)
}

/// Freezes every body, in name order.
pub(super) fn freeze_bodies(
    names: &Names<'_>,
    src: &BTreeMap<String, (Loc, &RawBody)>,
) -> Result<Vec<BodyDef>, ContentError> {
    let mut out = Vec::with_capacity(src.len());
    for (name, (loc, body)) in src {
        let boxes = freeze_boxes(names, &loc.at("boxes"), &body.boxes, None)?;
        out.push(BodyDef { name: name.clone(), boxes });
    }
    Ok(out)
}
