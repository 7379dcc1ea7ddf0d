//! Hit, hurt and push boxes: the world resolves their overlaps every frame.
//!
//! Content declares the boxes (a move's timeline per frame window, a body's standing boxes:
//! [`crate::BoxDef`]); the game says where each entity stands through
//! [`Game::box_anchor`] — its anchor point, its facing and its body — because positions are the
//! game's (a component column, a Bevy `Transform`): the world never stores them. The world moves
//! nothing itself either: pushes go back to the game through [`Game::push_box`], and each hit
//! is reported to [`Game::on_hit`] and in [`FrameOutput::hits`](super::FrameOutput::hits).
//!
//! The pass runs in every frame right after phase P6 (the game's systems and a scenario's
//! script, so it sees where they moved things) when the content declares any box:
//!
//! 1. **Gather**, in entity index order: every live entity the game anchors puts out its body's
//!    hit boxes, its body's hurt and push boxes unless a move of its has a box of that kind
//!    out, then the boxes out in each of its playing timelines (timeline frame `f` is out when
//!    `from <= f < to`), timelines in task-pool order, boxes in authored order.
//! 2. **Push**: the push boxes are taken in x order (centre, then entity index), the order
//!    they keep; every pair of overlapping ones of different entities, in that order, is
//!    pushed apart through [`Game::push_box`] until the right one starts where the left one
//!    ends: the left one left by half that distance, the other right by the rest. How far each
//!    anchor really moved is read back ([`Game::box_anchor`]): one the game stopped (a wall)
//!    is pinned that way, the other takes the rest, and one pressed against a pinned entity is
//!    pinned too, so later pairs push the free side only. Rounds repeat while anything moves,
//!    at most [`PUSH_ROUNDS`]: push boxes end apart — in chains, against walls — wherever
//!    there is room. Hits (step 3) are found on the boxes as gathered.
//! 3. **Hits**: every hit box, in gathered order, hits every other entity (not its own
//!    instigator either) with a hurt box it overlaps — once per target while the box is out,
//!    or again every `rehit` frames when the content says so. The memory of who was hit is a
//!    snapshot column (`box_hits`, rows per entity), so it rolls back with everything else.
//!    All hits are found first, then delivered in order: the target is pushed back along the
//!    attacker's facing, the hit's effect is applied, its gameplay event sent (abilities can
//!    trigger on it), the hit recorded in the frame output and [`Game::on_hit`] called. A hit
//!    whose attacker or target is gone by then (despawned by an earlier hit) is dropped.
//!
//! Only integer and fixed-point arithmetic, fixed orders and no hash-map iteration: every peer
//! resolves the same frame to the same hits.
//!
//! A game with no positions of its own (the scenario runner's game, a test) sets
//! [`Game::KEEPS_ANCHORS`]: the world then keeps one [`BoxAnchor`] per entity in the snapshot
//! column `anchors` ([`World::set_anchor`], [`World::kept_anchor`]), which the default
//! [`Game::box_anchor`] reads and the default [`Game::push_box`] moves.

use super::{Game, World};
use crate::ability::EventData;
use crate::ability::task::kind;
use crate::content::boxes::{BodyId, BoxDef, BoxKind, BoxRect, HitDef};
use crate::id::Entity;
use crate::num::{self, Frame, Fx};
use bytemuck::{Pod, Zeroable};

/// Rows of hit memory per entity: how many (box, target) pairs an entity's hit boxes remember
/// at once. A row is freed when its box goes away; with every row taken by boxes still out, a
/// new target is hit but not remembered (it may be hit again in the next frame).
pub const HIT_MEMORY_ROWS: usize = 8;

/// Where an entity's boxes are this frame: the game's answer to [`Game::box_anchor`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxAnchor {
    /// The anchor's x (boxes are authored relative to it).
    pub x: Fx,
    /// The anchor's y.
    pub y: Fx,
    /// The owner faces left: its boxes mirror around the anchor.
    pub facing_left: bool,
    /// The body whose standing boxes it puts out (`None`: only its moves' boxes).
    pub body: Option<BodyId>,
    /// Who its hits are by (a projectile's caster); its boxes never hit the instigator.
    /// [`Entity::NONE`]: the entity itself.
    pub instigator: Entity,
}

impl BoxAnchor {
    /// An anchor at `(x, y)` facing right, with no body, instigating its own hits.
    pub fn at(x: Fx, y: Fx) -> BoxAnchor {
        BoxAnchor { x, y, facing_left: false, body: None, instigator: Entity::NONE }
    }
}

/// A row of the `anchors` snapshot column: an entity's kept [`BoxAnchor`]. All zero: not
/// placed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub(crate) struct KeptAnchor {
    /// The anchor's x.
    pub x: Fx,
    /// The anchor's y.
    pub y: Fx,
    /// Bit 0: placed; bit 1: facing left.
    pub flags: u32,
    /// The body id + 1 (0: no body).
    pub body: u32,
    /// Who its hits are by ([`Entity::NONE`]: the entity itself).
    pub instigator: Entity,
}

impl<G: Game> World<G> {
    /// Places `e`'s boxes at `anchor`, kept by the world (see the module docs). `false` when
    /// the world keeps no anchors ([`Game::KEEPS_ANCHORS`] is `false`, or the content declares
    /// no box) or `e` is not alive.
    pub fn set_anchor(&mut self, e: Entity, anchor: BoxAnchor) -> bool {
        if !self.is_alive(e) {
            return false;
        }
        let Some(row) = self.state.anchors.get_mut(e.index as usize) else { return false };
        *row = KeptAnchor {
            x: anchor.x,
            y: anchor.y,
            flags: 1 | if anchor.facing_left { 2 } else { 0 },
            body: anchor.body.map_or(0, |b| u32::from(b.0) + 1),
            instigator: anchor.instigator,
        };
        true
    }

    /// The anchor the world keeps for `e` ([`World::set_anchor`], moved by pushes); `None`
    /// when it keeps none for it.
    pub fn kept_anchor(&self, e: Entity) -> Option<BoxAnchor> {
        if !self.is_alive(e) {
            return None;
        }
        let row = self.state.anchors.get(e.index as usize).filter(|r| r.flags & 1 != 0)?;
        Some(BoxAnchor {
            x: row.x,
            y: row.y,
            facing_left: row.flags & 2 != 0,
            body: row.body.checked_sub(1).and_then(|b| u16::try_from(b).ok()).map(BodyId),
            instigator: row.instigator,
        })
    }
}

/// Where a box comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum BoxSource {
    /// A body's standing box.
    Body(BodyId),
    /// A playing timeline's box.
    Timeline {
        /// The timeline (an index into [`Content::timeline_defs`](crate::Content::timeline_defs)).
        timeline: u16,
        /// The timeline frame the owner is at.
        frame: Frame,
    },
}

/// A box out in the current frame, placed in the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PlacedBox {
    /// The entity putting it out.
    pub entity: Entity,
    /// Who its hits are by.
    pub instigator: Entity,
    /// What it does.
    pub kind: BoxKind,
    /// Where it is.
    pub rect: BoxRect,
    /// Where it comes from.
    pub source: BoxSource,
    /// Its index in its body's or timeline's boxes.
    pub index: u16,
    /// Its hit data (hit boxes).
    pub hit: HitDef,
    /// The entity faces left.
    pub facing_left: bool,
    /// Hit-memory key: the timeline task's slot + 1, or `u32::MAX - body` for a body's box.
    key: u32,
    /// Hit-memory key: the task's or the entity's generation.
    serial: u32,
}

/// A hit box's hit on a hurt box, as delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BoxHit {
    /// The entity whose hit box hit.
    pub attacker: Entity,
    /// Who the hit is by (the attacker, or a projectile's caster).
    pub instigator: Entity,
    /// The entity hit.
    pub target: Entity,
    /// The hit box's origin.
    pub source: BoxSource,
    /// The hit box's index in its body's or timeline's boxes.
    pub index: u16,
    /// What the hit carries.
    pub hit: HitDef,
    /// +1 when the attacker faces right, -1 left (the push-back's direction).
    pub dir: i8,
    /// The hit box.
    pub hit_box: BoxRect,
    /// The hurt box it overlapped (the target's first in gathered order).
    pub hurt_box: BoxRect,
}

/// A row of the `box_hits` snapshot column: one (hit box, target) pair an entity's hit box has
/// hit while it is out. All zero: free.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable, serde::Serialize)]
pub(crate) struct HitMemory {
    /// The box's key ([`PlacedBox::key`]; 0: free row).
    pub key: u32,
    /// The box's serial.
    pub serial: u32,
    /// The box's index.
    pub index: u32,
    /// The target.
    pub target: Entity,
    /// The frame of the last hit.
    pub last: Frame,
}

/// Reused buffers of the box pass (outside the snapshot: rebuilt every frame).
#[derive(Debug, Default)]
pub(crate) struct BoxScratch {
    placed: Vec<PlacedBox>,
    timelines: Vec<(u32, usize)>,
    /// The push boxes, where the push step has moved them so far (x order at its start).
    pushes: Vec<(Entity, BoxRect)>,
    /// The moves of a pile's boxes to lie side by side ([`World::spread_pile`]).
    moves: Vec<Fx>,
    hits: Vec<BoxHit>,
}

/// Rounds of the push step (see the module docs): boxes still overlapping after them (more
/// of them piled up than there is room for) stay as they are until the next frame.
pub const PUSH_ROUNDS: usize = 16;

impl BoxScratch {
    /// How far push box `j` reaches into push box `i` before it (`i < j` in x order) when they
    /// overlap and belong to different entities.
    fn overlap_before(&self, i: usize, j: usize) -> Option<Fx> {
        let ((a, ra), (b, rb)) = (self.pushes[i], self.pushes[j]);
        (a != b && ra.overlaps(&rb)).then(|| num::sub(ra.x1, rb.x0))
    }

    /// The end of the pile of push boxes starting at `k` (x order): each next box overlaps the
    /// one before it, reaching into the row the pile makes laid side by side.
    fn pile_end(&self, k: usize) -> usize {
        let mut row_end = self.pushes[k].1.x1;
        let mut m = k + 1;
        while let Some(&(e, r)) = self.pushes.get(m) {
            let (before, rb) = self.pushes[m - 1];
            let meets = r.y0 < rb.y1 && rb.y0 < r.y1 && r.x0 < row_end;
            if !meets || e == before {
                break;
            }
            row_end = num::add(row_end, num::sub(r.x1, r.x0));
            m += 1;
        }
        m
    }

    /// Whether two push boxes of different entities still overlap.
    fn any_push_overlap(&self) -> bool {
        let n = self.pushes.len();
        (0..n).any(|i| (i + 1..n).any(|j| self.overlap_before(i, j).is_some()))
    }
}

impl<G: Game> World<G> {
    /// Every box out in the current state, in the pass's gathered order (entity index, then
    /// body boxes, then timeline boxes): after a step, the boxes its pass resolved, placed
    /// where its pushes left their owners; for inspectors and replay viewers. Empty when the
    /// content declares no box.
    pub fn boxes(&self) -> Vec<PlacedBox> {
        let mut scratch = BoxScratch::default();
        self.gather_boxes(&mut scratch);
        scratch.placed
    }

    /// Step 2: separates overlapping push boxes (see the module docs), moving their owners
    /// through [`Game::push_box`].
    fn separate_push_boxes(&mut self, s: &mut BoxScratch) {
        s.pushes.clear();
        let pushes = s.placed.iter().filter(|b| b.kind == BoxKind::Push);
        s.pushes.extend(pushes.map(|b| (b.entity, b.rect)));
        s.pushes.sort_by_key(|(e, r)| (r.centre2(), e.index));
        let n = s.pushes.len();
        for _ in 0..PUSH_ROUNDS {
            if !s.any_push_overlap() {
                return;
            }
            let mut k = 0;
            while k < n {
                let m = s.pile_end(k);
                if m - k > 1 {
                    self.spread_pile(s, k, m);
                }
                k = m;
            }
        }
        // What walls left: a sweep to the right, each box to where the boxes before it that it
        // overlaps end, then one to the left, each box to where the ones after it start.
        for j in 0..n {
            let need = (0..j).filter_map(|i| s.overlap_before(i, j)).max();
            if let Some(need) = need.filter(|d| *d > Fx::ZERO) {
                self.push_measured(s, s.pushes[j].0, need);
            }
        }
        for i in (0..n).rev() {
            let need = (i + 1..n).filter_map(|j| s.overlap_before(i, j)).max();
            if let Some(need) = need.filter(|d| *d > Fx::ZERO) {
                self.push_measured(s, s.pushes[i].0, num::neg(need));
            }
        }
    }

    /// Lays the pile of push boxes `k..m` (x order) side by side in that order, centred where
    /// the pile stood: each moves by its place in the row less the row's mean move.
    fn spread_pile(&mut self, s: &mut BoxScratch, k: usize, m: usize) {
        let (mut place, mut total) = (s.pushes[k].1.x0, Fx::ZERO);
        s.moves.clear();
        for (_, r) in &s.pushes[k..m] {
            let d = num::sub(place, r.x0);
            s.moves.push(d);
            total = num::add(total, d);
            place = num::add(place, num::sub(r.x1, r.x0));
        }
        let mean = total / Fx::from_num((m - k) as i32);
        for i in k..m {
            let d = num::sub(s.moves[i - k], mean);
            self.push_measured(s, s.pushes[i].0, d);
        }
    }

    /// Pushes `e` by `dx` through [`Game::push_box`] and returns how far its anchor moved (the
    /// game may stop it at a wall), moving its push boxes in `s.pushes` along.
    fn push_measured(&mut self, s: &mut BoxScratch, e: Entity, dx: Fx) -> Fx {
        if dx == Fx::ZERO || !self.is_alive(e) {
            return Fx::ZERO;
        }
        let before = G::box_anchor(self, e).map(|a| a.x);
        G::push_box(self, e, dx);
        self.drain();
        let moved = match (before, G::box_anchor(self, e).map(|a| a.x)) {
            (Some(b), Some(a)) => num::sub(a, b),
            _ => Fx::ZERO,
        };
        if moved != Fx::ZERO {
            for (_, r) in s.pushes.iter_mut().filter(|(p, _)| *p == e) {
                r.x0 = num::add(r.x0, moved);
                r.x1 = num::add(r.x1, moved);
            }
        }
        moved
    }

    /// Step 1: gathers every box out, into `s.placed`.
    fn gather_boxes(&self, s: &mut BoxScratch) {
        s.placed.clear();
        s.timelines.clear();
        if !self.content.has_boxes() {
            return;
        }
        let timelines = self.content.timeline_defs();
        let hw = (self.state.header.task_high_water as usize).min(self.state.tasks.len());
        for (slot, t) in self.state.tasks[..hw].iter().enumerate() {
            if t.is_live()
                && t.kind == kind::PLAY_TIMELINE
                && timelines.get(t.a as usize).is_some_and(|d| !d.boxes.is_empty())
            {
                s.timelines.push((t.owner.index, slot));
            }
        }
        // Pool order within an owner; owners in index order.
        s.timelines.sort_unstable();
        for e in self.entities() {
            let Some(a) = G::box_anchor(self, e) else { continue };
            let instigator = if a.instigator == Entity::NONE { e } else { a.instigator };
            let mine = {
                let lo = s.timelines.partition_point(|(o, _)| *o < e.index);
                let hi = s.timelines.partition_point(|(o, _)| *o <= e.index);
                lo..hi
            };
            // Which kinds a move of the entity has out (its body's hurt/push boxes give way).
            let (mut move_hurt, mut move_push) = (false, false);
            for &(_, slot) in &s.timelines[mine.clone()] {
                let t = &self.state.tasks[slot];
                let Some(d) = timelines.get(t.a as usize) else { continue };
                for b in d.boxes.iter().filter(|b| b.is_out_at(t.counter)) {
                    move_hurt |= b.kind == BoxKind::Hurt;
                    move_push |= b.kind == BoxKind::Push;
                }
            }
            let base = PlacedBox {
                entity: e,
                instigator,
                kind: BoxKind::Hit,
                rect: BoxRect::default(),
                source: BoxSource::Body(BodyId(0)),
                index: 0,
                hit: HitDef::default(),
                facing_left: a.facing_left,
                key: 0,
                serial: 0,
            };
            let place =
                |b: &BoxDef, i: usize, source: BoxSource, key: u32, serial: u32| PlacedBox {
                    kind: b.kind,
                    rect: b.placed(a.x, a.y, a.facing_left),
                    source,
                    index: i as u16,
                    hit: b.hit,
                    key,
                    serial,
                    ..base
                };
            if let Some(body) =
                a.body.and_then(|id| self.content.body_defs().get(usize::from(id.0)))
            {
                let id = a.body.unwrap_or_default();
                for (i, b) in body.boxes.iter().enumerate() {
                    let skip = match b.kind {
                        BoxKind::Hit => false,
                        BoxKind::Hurt => move_hurt,
                        BoxKind::Push => move_push,
                    };
                    if !skip {
                        let key = u32::MAX - u32::from(id.0);
                        s.placed.push(place(b, i, BoxSource::Body(id), key, e.generation));
                    }
                }
            }
            for &(_, slot) in &s.timelines[mine] {
                let t = &self.state.tasks[slot];
                let Some(d) = timelines.get(t.a as usize) else { continue };
                let source = BoxSource::Timeline { timeline: t.a as u16, frame: t.counter };
                for (i, b) in d.boxes.iter().enumerate().filter(|(_, b)| b.is_out_at(t.counter)) {
                    s.placed.push(place(b, i, source, slot as u32 + 1, t.generation));
                }
            }
        }
    }

    /// The box pass (module docs), run after phase P6 when the content declares boxes.
    pub(crate) fn resolve_boxes(&mut self) {
        if !self.content.has_boxes() {
            return;
        }
        let mut s = core::mem::take(&mut self.box_scratch);
        self.gather_boxes(&mut s);
        self.free_hit_memory(&s.placed);
        self.separate_push_boxes(&mut s);
        // Step 3: hits, found first, then delivered.
        s.hits.clear();
        let frame = self.frame();
        for h in s.placed.iter().filter(|b| b.kind == BoxKind::Hit) {
            for (j, u) in s.placed.iter().enumerate().filter(|(_, b)| b.kind == BoxKind::Hurt) {
                if u.entity == h.entity || u.entity == h.instigator || !h.rect.overlaps(&u.rect) {
                    continue;
                }
                // The target's first overlapping hurt box only.
                let earlier = s.placed[..j].iter().any(|v| {
                    v.kind == BoxKind::Hurt && v.entity == u.entity && h.rect.overlaps(&v.rect)
                });
                if earlier || !self.remember_hit(h, u.entity, frame) {
                    continue;
                }
                s.hits.push(BoxHit {
                    attacker: h.entity,
                    instigator: h.instigator,
                    target: u.entity,
                    source: h.source,
                    index: h.index,
                    hit: h.hit,
                    dir: if h.facing_left { -1 } else { 1 },
                    hit_box: h.rect,
                    hurt_box: u.rect,
                });
            }
        }
        for hit in &s.hits {
            self.deliver_hit(hit);
        }
        self.box_scratch = s;
    }

    /// One hit, delivered (module docs, step 3).
    fn deliver_hit(&mut self, hit: &BoxHit) {
        if !self.is_alive(hit.attacker) || !self.is_alive(hit.target) {
            return;
        }
        let h = hit.hit;
        if h.pushback != Fx::ZERO {
            let dx = if hit.dir < 0 { num::neg(h.pushback) } else { h.pushback };
            G::push_box(self, hit.target, dx);
            self.drain();
        }
        if let Some(def) = h.effect {
            let spec = self.make_spec(def, 1, hit.instigator);
            let _ = self.apply_effect(spec, hit.target);
            self.drain();
        }
        if let Some(tag) = h.event {
            let mut data = EventData::new(tag, hit.instigator, hit.target);
            data.magnitude = h.damage;
            data.object = hit.attacker;
            self.send_event(hit.target, data);
            self.drain();
        }
        self.out.hits.push(*hit);
        G::on_hit(self, hit);
        self.drain();
    }

    /// The hit-memory rows of an entity.
    fn hit_rows(&mut self, e: Entity) -> &mut [HitMemory] {
        let n = self.state.layout.hit_memory;
        let at = e.index as usize * n;
        self.state.box_hits.get_mut(at..at + n).unwrap_or_default()
    }

    /// Frees the rows whose box is no longer out.
    fn free_hit_memory(&mut self, placed: &[PlacedBox]) {
        if self.state.layout.hit_memory == 0 {
            return;
        }
        let hw = self.state.header.high_water as usize;
        for index in 0..hw {
            let e = Entity { index: index as u32, generation: 0 };
            let mine = placed.iter().filter(|p| p.entity.index == index as u32);
            for r in self.hit_rows(e).iter_mut() {
                if r.key != 0
                    && !mine.clone().any(|p| {
                        p.kind == BoxKind::Hit
                            && (p.key, p.serial, u32::from(p.index)) == (r.key, r.serial, r.index)
                    })
                {
                    *r = HitMemory::default();
                }
            }
        }
    }

    /// Whether hit box `h` may hit `target` in `frame`, remembering it if so.
    fn remember_hit(&mut self, h: &PlacedBox, target: Entity, frame: Frame) -> bool {
        let rehit = h.hit.rehit;
        let key = (h.key, h.serial, u32::from(h.index));
        let rows = self.hit_rows(h.entity);
        if let Some(r) =
            rows.iter_mut().find(|r| (r.key, r.serial, r.index) == key && r.target == target)
        {
            if rehit == 0 || frame.saturating_sub(r.last) < rehit {
                return false;
            }
            r.last = frame;
            return true;
        }
        if let Some(r) = rows.iter_mut().find(|r| r.key == 0) {
            *r = HitMemory { key: key.0, serial: key.1, index: key.2, target, last: frame };
        }
        true
    }
}
