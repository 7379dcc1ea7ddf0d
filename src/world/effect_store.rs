//! The effect store: every entity's active effects, the pools beside them, and the rules that
//! keep them together.
//!
//! An entity's active effects are the first `n_effects` records of its rows (a fixed number per
//! entity) in application order: [`ActiveEffect`] records, their [`EffectTimers`], their
//! modifiers' magnitudes and their granted tags beyond the inline two, the same row index in
//! every column. Beside them: the origin pool (dense, its first `origins_len` records in use,
//! each pointing back at its effect), the stored-spec pool (a slot is free while its spec is not
//! `stored`; `specs_high_water` slots were ever used) with each kept spec's row of values
//! beyond its inline room, the per-entity counts (`n_effects`, and `n_live`, the effects whose
//! magnitudes follow attributes) and the per-entity wake frames, the earliest of the timers.
//!
//! All of them are snapshot columns (entries of `snapshot_columns!`, the one order save, load
//! and the checksum follow) or counters of its header, so the store borrows them rather than
//! owning them: [`EffectStore`] reads, [`EffectStoreMut`] writes. The store owns what they obey
//! together: an effect is inserted at the end of its entity's rows and removed by shifting the
//! later ones down (application order is kept, the freed row is zero again); its pooled origin
//! and kept spec are taken and given back with it; the counts follow; every change of a timer
//! keeps the entity's wake frames the earliest timers. [`EffectStore::validate`] checks a
//! loaded snapshot against the same rules. Which effect to apply, remove or retime and what
//! that means (events, cues, tags, attribute re-evaluation) is the world's business: each
//! change returns what it changed. Nothing here names the game, so the store is compiled once
//! for every world.

use crate::content::Content;
use crate::effect::{ActiveEffect, EffectOrigin, EffectSpec, EffectTimers, PooledOrigin};
use crate::effect::{SELF_ORIGIN, effect_flags};
use crate::id::{EffectHandle, Entity, TagId};
use crate::num::{Frame, Fx, NEVER};
use crate::world::state::{COLUMN, EntityRec, EntityWake, entity_flags};
use crate::{InvalidSnapshot, SnapshotProblem};
use bytemuck::Zeroable;
use core::ops::Range;

/// The store's columns and counters, to read.
#[derive(Clone, Copy)]
pub(crate) struct EffectColumns<'a> {
    /// Entity slots (the effect counts; liveness and generation for handles).
    pub entities: &'a [EntityRec],
    /// Per entity: its effect rows.
    pub effects: &'a [ActiveEffect],
    /// Per effect row: its timers.
    pub timers: &'a [EffectTimers],
    /// Per effect row: `mods` magnitudes.
    pub mags: &'a [Fx],
    /// Per effect row: `tags_extra` granted tags beyond the inline two (tag id + 1, 0 unused).
    pub tags_ext: &'a [u16],
    /// Per entity: the earliest timers of its effects.
    pub wake: &'a [EntityWake],
    /// The origin pool.
    pub origins: &'a [PooledOrigin],
    /// Origin records in use at the front of the pool.
    pub origins_len: u32,
    /// The stored-spec pool.
    pub specs: &'a [EffectSpec],
    /// Stored-spec slots ever used.
    pub specs_high_water: u32,
    /// Effect rows per entity.
    pub rows: usize,
    /// Magnitudes per effect row.
    pub mods: usize,
    /// Granted tags beyond the inline two per effect row.
    pub tags_extra: usize,
}

/// The store's columns and counters, to change: as [`EffectColumns`], plus the kept specs'
/// rows of values beyond their inline room.
pub(crate) struct EffectColumnsMut<'a> {
    /// See [`EffectColumns::entities`].
    pub entities: &'a mut [EntityRec],
    /// See [`EffectColumns::effects`].
    pub effects: &'a mut [ActiveEffect],
    /// See [`EffectColumns::timers`].
    pub timers: &'a mut [EffectTimers],
    /// See [`EffectColumns::mags`].
    pub mags: &'a mut [Fx],
    /// See [`EffectColumns::tags_ext`].
    pub tags_ext: &'a mut [u16],
    /// See [`EffectColumns::wake`].
    pub wake: &'a mut [EntityWake],
    /// See [`EffectColumns::origins`].
    pub origins: &'a mut [PooledOrigin],
    /// See [`EffectColumns::origins_len`].
    pub origins_len: &'a mut u32,
    /// See [`EffectColumns::specs`].
    pub specs: &'a mut [EffectSpec],
    /// Per stored-spec slot: its values beyond the inline room (the same words per slot).
    pub spec_ext: &'a mut [u64],
    /// See [`EffectColumns::specs_high_water`].
    pub specs_high_water: &'a mut u32,
    /// See [`EffectColumns::rows`].
    pub rows: usize,
    /// See [`EffectColumns::mods`].
    pub mods: usize,
    /// See [`EffectColumns::tags_extra`].
    pub tags_extra: usize,
}

/// The earliest timers of `timers`: when the entity holding them next needs phases P1 and P2.
fn earliest(timers: &[EffectTimers]) -> EntityWake {
    let (period, expiry) = timers
        .iter()
        .fold((NEVER, NEVER), |(p, x), t| (p.min(t.next_period_at), x.min(t.expires_at)));
    EntityWake { period, expiry }
}

/// Reads the effect store: rows by entity slot, records by column slot (the entity's slot times
/// the rows per entity, plus the row).
#[derive(Clone, Copy)]
pub(crate) struct EffectStore<'a> {
    c: EffectColumns<'a>,
}

impl<'a> EffectStore<'a> {
    /// The store over `columns`.
    #[inline]
    pub(crate) fn new(columns: EffectColumns<'a>) -> Self {
        EffectStore { c: columns }
    }

    /// The column slots of the active effects of the entity in slot `index`.
    #[inline]
    pub(crate) fn range(&self, index: u32) -> Range<usize> {
        let rows = self.c.rows;
        let n = self.c.entities.get(index as usize).map_or(0, |r| r.n_effects as usize);
        let start = index as usize * rows;
        start..start + n.min(rows)
    }

    /// Whether the entity in slot `index` has room for another effect.
    #[inline]
    pub(crate) fn has_room(&self, index: u32) -> bool {
        self.c.entities.get(index as usize).is_some_and(|r| (r.n_effects as usize) < self.c.rows)
    }

    /// Whether an effect of the entity in slot `index` has magnitudes that follow attributes.
    #[inline]
    pub(crate) fn has_live(&self, index: u32) -> bool {
        self.c.entities[index as usize].n_live > 0
    }

    /// The active effects of the entity in slot `index`, in application order.
    #[inline]
    pub(crate) fn effects(&self, index: u32) -> &'a [ActiveEffect] {
        &self.c.effects[self.range(index)]
    }

    /// Their timers (the same index is the same effect).
    #[inline]
    pub(crate) fn timers(&self, index: u32) -> &'a [EffectTimers] {
        &self.c.timers[self.range(index)]
    }

    /// The column slots of the active effects of `e`: empty unless `e` is a live entity (its
    /// generation is the slot's).
    #[inline]
    pub(crate) fn range_of(&self, e: Entity) -> Range<usize> {
        let live = self.c.entities.get(e.index as usize).is_some_and(|r| {
            r.generation == e.generation && r.flags & entity_flags::ALIVE != 0 && e.generation != 0
        });
        if live { self.range(e.index) } else { 0..0 }
    }

    /// The row of the effect `seq` among the effects of the entity in slot `index`.
    #[inline]
    pub(crate) fn position(&self, index: u32, seq: u32) -> Option<usize> {
        self.effects(index).iter().position(|e| e.seq == seq)
    }

    /// The column slot of the effect a handle names: `None` unless its target is alive (the
    /// handle's generation) and holds an effect with its sequence number.
    #[inline]
    pub(crate) fn find(&self, handle: EffectHandle) -> Option<usize> {
        let range = self.range_of(handle.target);
        let k = self.c.effects[range.clone()].iter().position(|e| e.seq == handle.seq)?;
        Some(range.start + k)
    }

    /// The entity slot whose rows hold column slot `slot`.
    #[inline]
    pub(crate) fn owner(&self, slot: usize) -> u32 {
        (slot / self.c.rows.max(1)) as u32
    }

    /// The effect in column slot `slot`.
    #[inline]
    pub(crate) fn effect(&self, slot: usize) -> &'a ActiveEffect {
        &self.c.effects[slot]
    }

    /// Its timers.
    #[inline]
    pub(crate) fn timer(&self, slot: usize) -> &'a EffectTimers {
        &self.c.timers[slot]
    }

    /// The active effects of `e`, in application order (none unless `e` is alive).
    #[inline]
    pub(crate) fn effects_of(&self, e: Entity) -> &'a [ActiveEffect] {
        &self.c.effects[self.range_of(e)]
    }

    /// Their timers (the same index is the same effect).
    #[inline]
    pub(crate) fn timers_of(&self, e: Entity) -> &'a [EffectTimers] {
        &self.c.timers[self.range_of(e)]
    }

    /// Its stored magnitudes (the modifiers' in order, then a period computed at application).
    #[inline]
    pub(crate) fn mags(&self, slot: usize) -> &'a [Fx] {
        let m = self.c.mods;
        &self.c.mags[slot * m..(slot + 1) * m]
    }

    /// The stored magnitude of its modifier `i` (`None` past the magnitudes kept per effect).
    #[inline]
    pub(crate) fn mag(&self, slot: usize, i: usize) -> Option<Fx> {
        (i < self.c.mods).then(|| self.c.mags[slot * self.c.mods + i])
    }

    /// Its granted tags beyond the inline two (tag id + 1, 0 unused).
    #[inline]
    pub(crate) fn tag_row(&self, slot: usize) -> &'a [u16] {
        let k = self.c.tags_extra;
        self.c.tags_ext.get(slot * k..(slot + 1) * k).unwrap_or(&[])
    }

    /// The pooled origin of `ef` (`None`: it keeps none, its target applied it to itself).
    #[inline]
    pub(crate) fn origin(&self, ef: &ActiveEffect) -> Option<EffectOrigin> {
        match self.c.origins.get(ef.origin as usize) {
            Some(p) if ef.origin != SELF_ORIGIN => Some(p.origin),
            _ => None,
        }
    }

    /// The spec kept for `ef` and its stored-spec slot, if one is kept.
    #[inline]
    pub(crate) fn kept_spec(&self, ef: &ActiveEffect) -> Option<(usize, &'a EffectSpec)> {
        let at = ef.spec_slot as usize;
        self.c.specs.get(at).filter(|s| s.stored != 0).map(|s| (at, s))
    }

    /// Appends `(entity slot, seq)` of every effect whose timer (`at`) is due at `frame`, for
    /// the live entities below `high_water`: entities in slot order, effects in application
    /// order. The entity's wake frame for that timer (`wake`) skips entities with none due.
    pub(crate) fn collect_due(
        &self,
        frame: Frame,
        high_water: u32,
        wake: impl Fn(&EntityWake) -> Frame,
        at: impl Fn(&EffectTimers) -> Frame,
        due: &mut Vec<(u32, u32)>,
    ) {
        for ei in 0..high_water {
            // The dense wake column first: most entities have nothing due.
            if wake(&self.c.wake[ei as usize]) > frame {
                continue;
            }
            if self.c.entities[ei as usize].flags & entity_flags::ALIVE == 0 {
                continue;
            }
            let range = self.range(ei);
            for (t, e) in self.c.timers[range.clone()].iter().zip(&self.c.effects[range]) {
                if at(t) <= frame {
                    due.push((ei, e.seq));
                }
            }
        }
    }

    /// Checks the store's part of a loaded snapshot against `content` (`abilities`: ability
    /// slots per entity): the pool counters within their pools, the counts within the rows,
    /// every live effect's definition, tags and origin, the wake frames of live entities, the
    /// origin pool pointing back one-to-one, and the kept specs' ids. The first bad field is
    /// the error.
    pub(crate) fn validate(
        &self,
        content: &Content,
        abilities: usize,
    ) -> Result<(), InvalidSnapshot> {
        let c = &self.c;
        let (bad, exceeds) = (InvalidSnapshot::out_of_range, InvalidSnapshot::exceeds);
        let origins = c.origins.len();
        check(c.origins_len as usize <= origins, || {
            exceeds(COLUMN.header, "origins_len", c.origins_len.into(), origins as u64)
        })?;
        check(c.specs_high_water as usize <= c.specs.len(), || {
            exceeds(
                COLUMN.header,
                "specs_high_water",
                c.specs_high_water.into(),
                c.specs.len() as u64,
            )
        })?;
        for (i, r) in c.entities.iter().enumerate() {
            let w = |f| bad(COLUMN.entities, Some(i), None, f);
            check(r.n_effects as usize <= c.rows, || w("n_effects"))?;
            check(r.n_live <= r.n_effects, || w("n_live"))?;
        }
        let n = c.entities.len();
        let tags = content.tags().len();
        let ent = |e: Entity| (e.index as usize) < n || e == Entity::NONE;
        let tag = |t: u16| (t as usize) < tags || t == u16::MAX;
        let ability_slot = |slot: u16| (slot as usize) < abilities.max(1);
        // Active effects (only the first `n_effects` of each entity are live).
        let effects = content.effect_defs().len();
        for (i, r) in c.entities.iter().enumerate() {
            let live = self.range(i as u32);
            for (j, e) in c.effects[live.clone()].iter().enumerate() {
                let w = |f| bad(COLUMN.effects, Some(i), Some(j), f);
                check(e.def.index() < effects, || w("def"))?;
                check(e.dynamic_tags.iter().all(|t| tag(*t)), || w("dynamic_tags"))?;
                // A pooled origin is this effect's (the pool's records point back).
                check(
                    e.origin == SELF_ORIGIN
                        || e.origin < c.origins_len
                            && c.origins
                                .get(e.origin as usize)
                                .is_some_and(|p| p.target as usize == i && p.seq == e.seq),
                    || w("origin"),
                )?;
            }
            // The wake frames are the earliest timers (a later one would skip executions and
            // expiries); only live entities are scanned by the step.
            if r.flags & entity_flags::ALIVE != 0 && c.wake[i] != earliest(&c.timers[live]) {
                return Err(InvalidSnapshot {
                    problem: SnapshotProblem::Stale,
                    ..bad(COLUMN.wake, Some(i), None, "")
                });
            }
        }
        // The origin pool: every used record belongs to a live effect that points at it (with
        // the check above, a one-to-one match).
        for (j, p) in c.origins.iter().enumerate().take(c.origins_len as usize) {
            let w = |f| bad(COLUMN.origins, Some(j), None, f);
            let o = &p.origin;
            check(ent(o.instigator) && ent(o.causer) && ent(o.source_object), || w("entity"))?;
            check(ent(o.ability.owner) && ability_slot(o.ability.slot), || w("ability"))?;
            let pointed = (p.target as usize) < n
                && self.effects(p.target).iter().any(|e| e.seq == p.seq && e.origin as usize == j);
            check(pointed, || w("target"))?;
        }
        // Stored specs.
        let attrs = content.attr_defs().len();
        for (i, s) in c.specs.iter().enumerate().filter(|(_, s)| s.stored != 0) {
            let w = |f| bad(COLUMN.effect_specs, Some(i), None, f);
            check(s.def.index() < effects, || w("def"))?;
            check(s.source_tags.iter().all(|t: TagId| t.index() < tags), || w("source_tags"))?;
            check(usize::from(s.n_set_by_caller) <= s.set_by_caller.len(), || {
                w("n_set_by_caller")
            })?;
            check(usize::from(s.n_inline) <= s.inline.len(), || w("n_inline"))?;
            check(usize::from(s.n_source_captures) <= s.source_captures.len(), || {
                w("n_source_captures")
            })?;
            let sbc = &s.set_by_caller[..usize::from(s.n_set_by_caller)];
            check(sbc.iter().all(|e| tag(e.tag)), || w("set_by_caller"))?;
            let inline = &s.inline[..usize::from(s.n_inline)];
            check(inline.iter().all(|m| usize::from(m.attr) < attrs), || w("inline"))?;
            check(s.dynamic_granted_tags.iter().all(|t| tag(*t)), || w("dynamic_granted_tags"))?;
            // A kept spec's values beyond its inline room are in its `spec_overflow` row.
            check(s.ext == 0, || w("ext"))?;
            let x = &s.context;
            check(
                ent(x.instigator) && ent(x.causer) && ent(x.source_object) && ent(x.hit_entity),
                || w("context"),
            )?;
            check(ent(x.ability.owner) && ability_slot(x.ability.slot), || w("context.ability"))?;
        }
        Ok(())
    }
}

fn check(ok: bool, what: impl FnOnce() -> InvalidSnapshot) -> Result<(), InvalidSnapshot> {
    if ok { Ok(()) } else { Err(what()) }
}

/// An effect to insert ([`EffectStoreMut::insert`]).
pub(crate) struct NewEffect<'m> {
    /// The record (its `origin` and `spec_slot` are the store's to set).
    pub effect: ActiveEffect,
    /// Its timers.
    pub timers: EffectTimers,
    /// Its magnitudes (the rest of its row is zero).
    pub mags: &'m [Fx],
    /// Its granted tags beyond the inline two (the rest of its row is zero).
    pub tags: &'m [u16],
    /// Who applied it, unless its target applied it to itself ([`EffectOrigin::of_self`]).
    pub origin: Option<EffectOrigin>,
    /// Whether its magnitudes follow attributes (counted in `n_live`).
    pub live: bool,
}

/// Writes the effect store.
pub(crate) struct EffectStoreMut<'a> {
    c: EffectColumnsMut<'a>,
}

impl<'a> EffectStoreMut<'a> {
    /// The store over `columns`.
    #[inline]
    pub(crate) fn new(columns: EffectColumnsMut<'a>) -> Self {
        EffectStoreMut { c: columns }
    }

    /// The same store, read-only.
    #[inline]
    pub(crate) fn view(&self) -> EffectStore<'_> {
        let c = &self.c;
        EffectStore::new(EffectColumns {
            entities: c.entities,
            effects: c.effects,
            timers: c.timers,
            mags: c.mags,
            tags_ext: c.tags_ext,
            wake: c.wake,
            origins: c.origins,
            origins_len: *c.origins_len,
            specs: c.specs,
            specs_high_water: *c.specs_high_water,
            rows: c.rows,
            mods: c.mods,
            tags_extra: c.tags_extra,
        })
    }

    /// Appends an effect to the rows of the entity in slot `index`: its origin pooled (unless
    /// it has none), its counts and wake frames updated. Returns its column slot, or `None`
    /// (nothing changed) when the rows are full.
    pub(crate) fn insert(&mut self, index: u32, new: NewEffect<'_>) -> Option<usize> {
        if !self.view().has_room(index) {
            return None;
        }
        let slot = self.view().range(index).end;
        let mut ef = new.effect;
        ef.spec_slot = u32::MAX;
        ef.origin = match new.origin {
            Some(origin) => self.keep_origin(index, ef.seq, origin),
            None => SELF_ORIGIN,
        };
        self.c.effects[slot] = ef;
        self.c.timers[slot] = new.timers;
        let (m, k) = (self.c.mods, self.c.tags_extra);
        for (i, v) in self.c.mags[slot * m..(slot + 1) * m].iter_mut().enumerate() {
            *v = new.mags.get(i).copied().unwrap_or(Fx::ZERO);
        }
        for (i, t) in self.c.tags_ext[slot * k..(slot + 1) * k].iter_mut().enumerate() {
            *t = new.tags.get(i).copied().unwrap_or(0);
        }
        let rec = &mut self.c.entities[index as usize];
        rec.n_effects += 1;
        rec.n_live += u32::from(new.live);
        self.rewake(index, EffectTimers { expires_at: NEVER, next_period_at: NEVER }, new.timers);
        Some(slot)
    }

    /// Keeps `origin` for the effect `seq` of entity slot `index`; what its
    /// [`ActiveEffect::origin`] holds. The pool has a record for every effect row, so it is
    /// not full while a row is free.
    fn keep_origin(&mut self, index: u32, seq: u32, origin: EffectOrigin) -> u32 {
        let at = *self.c.origins_len;
        let Some(rec) = self.c.origins.get_mut(at as usize) else {
            debug_assert!(false, "the origin pool is sized to the effect rows");
            return SELF_ORIGIN;
        };
        *rec = PooledOrigin { origin, target: index, seq };
        *self.c.origins_len = at + 1;
        at
    }

    /// Releases pooled origin `at`: the last record moves into its place (its effect is
    /// re-pointed), so the used records stay at the front and the rest stay zero.
    fn release_origin(&mut self, at: u32) {
        let len = *self.c.origins_len as usize;
        let at = at as usize;
        if at >= len {
            return;
        }
        let last = len - 1;
        if at != last {
            let moved = self.c.origins[last];
            self.c.origins[at] = moved;
            let range = self.view().range(moved.target);
            if let Some(ef) = self.c.effects[range].iter_mut().find(|e| e.seq == moved.seq) {
                ef.origin = at as u32;
            }
        }
        self.c.origins[last] = PooledOrigin::default();
        *self.c.origins_len = last as u32;
    }

    /// Keeps `spec` (marked stored) for the effect in column slot `slot`, in the first free
    /// stored-spec slot; that slot, whose row of values beyond the inline room the caller
    /// fills, or `None` when the pool is full.
    pub(crate) fn keep_spec(&mut self, slot: usize, spec: EffectSpec) -> Option<usize> {
        let at = self.c.specs.iter().position(|s| s.stored == 0)?;
        self.c.specs[at] = EffectSpec { stored: 1, ..spec };
        *self.c.specs_high_water = (*self.c.specs_high_water).max(at as u32 + 1);
        self.c.effects[slot].spec_slot = at as u32;
        Some(at)
    }

    /// Stored-spec slot `at`'s row of values beyond the inline room, to fill.
    pub(crate) fn spec_row(&mut self, at: usize) -> &mut [u64] {
        let words = self.c.spec_ext.len() / self.c.specs.len().max(1);
        &mut self.c.spec_ext[at * words..(at + 1) * words]
    }

    /// Removes the effect in row `k` of the entity in slot `index`: its origin and kept spec
    /// given back, the later effects shifted down (application order is kept), the freed row
    /// zero again, the counts and wake frames updated. Returns the removed record.
    pub(crate) fn remove(&mut self, index: u32, k: usize, live: bool) -> Option<ActiveEffect> {
        let range = self.view().range(index);
        let (base, n) = (range.start, range.len());
        if k >= n {
            return None;
        }
        let ef = self.c.effects[base + k];
        if ef.origin != SELF_ORIGIN {
            self.release_origin(ef.origin);
        }
        let (from, last) = (base + k, base + n - 1);
        self.c.effects.copy_within(from + 1..=last, from);
        self.c.effects[last] = ActiveEffect::default();
        self.c.timers.copy_within(from + 1..=last, from);
        self.c.timers[last] = EffectTimers::default();
        let m = self.c.mods;
        self.c.mags.copy_within((from + 1) * m..(last + 1) * m, from * m);
        self.c.mags[last * m..(last + 1) * m].iter_mut().for_each(|v| *v = Fx::ZERO);
        let x = self.c.tags_extra;
        self.c.tags_ext.copy_within((from + 1) * x..(last + 1) * x, from * x);
        self.c.tags_ext[last * x..(last + 1) * x].iter_mut().for_each(|t| *t = 0);
        if let Some(kept) = self.c.specs.get_mut(ef.spec_slot as usize) {
            *kept = EffectSpec::zeroed();
            self.spec_row(ef.spec_slot as usize).iter_mut().for_each(|w| *w = 0);
        }
        let rec = &mut self.c.entities[index as usize];
        rec.n_effects -= 1;
        if live {
            rec.n_live = rec.n_live.saturating_sub(1);
        }
        self.c.wake[index as usize] = earliest(self.view().timers(index));
        Some(ef)
    }

    /// Sets the stack count of the effect in column slot `slot`; the count before.
    #[inline]
    pub(crate) fn set_stacks(&mut self, slot: usize, stacks: u16) -> u16 {
        core::mem::replace(&mut self.c.effects[slot].stacks, stacks)
    }

    /// Sets its level.
    #[inline]
    pub(crate) fn set_level(&mut self, slot: usize, level: u16) {
        self.c.effects[slot].level = level;
    }

    /// Sets its duration (frames; what a refresh restarts).
    #[inline]
    pub(crate) fn set_duration(&mut self, slot: usize, duration: u32) {
        self.c.effects[slot].duration = duration;
    }

    /// Switches it off (`inhibited`) or back on (active since `frame`); the record after.
    pub(crate) fn set_inhibited(
        &mut self,
        slot: usize,
        inhibited: bool,
        frame: Frame,
    ) -> ActiveEffect {
        let ef = &mut self.c.effects[slot];
        if inhibited {
            ef.flags |= effect_flags::INHIBITED;
        } else {
            ef.flags &= !effect_flags::INHIBITED;
            ef.active_since = frame;
        }
        *ef
    }

    /// Stores the magnitude of its modifier `i` (nothing past the magnitudes kept per effect);
    /// whether it changed.
    #[inline]
    pub(crate) fn set_mag(&mut self, slot: usize, i: usize, v: Fx) -> bool {
        if i >= self.c.mods {
            return false;
        }
        let m = &mut self.c.mags[slot * self.c.mods + i];
        let changed = *m != v;
        *m = v;
        changed
    }

    /// Changes the timers of the effect in column slot `slot` with `f`, keeping its entity's
    /// wake frames the earliest timers; the timers before.
    #[inline]
    pub(crate) fn retime(
        &mut self,
        slot: usize,
        f: impl FnOnce(&mut EffectTimers),
    ) -> EffectTimers {
        let old = self.c.timers[slot];
        f(&mut self.c.timers[slot]);
        let new = self.c.timers[slot];
        self.rewake(self.view().owner(slot), old, new);
        old
    }

    /// Moves every timer of the entity in slot `index` one frame later (its clock is held);
    /// infinite ones stay.
    pub(crate) fn delay(&mut self, index: u32) {
        let range = self.view().range(index);
        if range.is_empty() {
            return;
        }
        let later = |f: Frame| if f == NEVER { f } else { f.saturating_add(1).min(NEVER - 1) };
        for t in &mut self.c.timers[range] {
            t.expires_at = later(t.expires_at);
            t.next_period_at = later(t.next_period_at);
        }
        self.c.wake[index as usize] = earliest(self.view().timers(index));
    }

    /// Empties the counts of the entity in slot `index` (spawned, or despawned once its
    /// effects are removed): no effects, nothing to wake for.
    pub(crate) fn clear(&mut self, index: u32) {
        let rec = &mut self.c.entities[index as usize];
        rec.n_effects = 0;
        rec.n_live = 0;
        self.c.wake[index as usize] = EntityWake { period: NEVER, expiry: NEVER };
    }

    /// Keeps the wake frames of the entity in slot `index` the earliest timers after one
    /// effect's timers went from `old` to `new`: a timer that came earlier lowers them; a
    /// timer that held the earliest frame and moved later has them found again.
    #[inline]
    fn rewake(&mut self, index: u32, old: EffectTimers, new: EffectTimers) {
        let w = self.c.wake[index as usize];
        let raised = |o: Frame, n: Frame, earliest: Frame| n > o && o <= earliest;
        if raised(old.next_period_at, new.next_period_at, w.period)
            || raised(old.expires_at, new.expires_at, w.expiry)
        {
            self.c.wake[index as usize] = earliest(self.view().timers(index));
        } else {
            self.c.wake[index as usize] = EntityWake {
                period: w.period.min(new.next_period_at),
                expiry: w.expiry.min(new.expires_at),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::{AbilityHandle, EffectDefId};

    /// Two entities of three effect rows each (two magnitudes, one extra tag per row), an
    /// origin record per row and two stored-spec slots of one word each.
    #[derive(Clone)]
    struct Columns {
        entities: Vec<EntityRec>,
        effects: Vec<ActiveEffect>,
        timers: Vec<EffectTimers>,
        mags: Vec<Fx>,
        tags_ext: Vec<u16>,
        wake: Vec<EntityWake>,
        origins: Vec<PooledOrigin>,
        origins_len: u32,
        specs: Vec<EffectSpec>,
        spec_ext: Vec<u64>,
        specs_high_water: u32,
    }

    const ROWS: usize = 3;
    const MODS: usize = 2;
    const NOBODY: EntityWake = EntityWake { period: NEVER, expiry: NEVER };

    impl Columns {
        fn new() -> Self {
            let alive =
                EntityRec { generation: 1, flags: entity_flags::ALIVE, ..Default::default() };
            Columns {
                entities: vec![alive; 2],
                effects: vec![ActiveEffect::default(); 2 * ROWS],
                timers: vec![EffectTimers::default(); 2 * ROWS],
                mags: vec![Fx::ZERO; 2 * ROWS * MODS],
                tags_ext: vec![0; 2 * ROWS],
                wake: vec![NOBODY; 2],
                origins: vec![PooledOrigin::default(); 2 * ROWS],
                origins_len: 0,
                specs: vec![EffectSpec::zeroed(); 2],
                spec_ext: vec![0; 2],
                specs_high_water: 0,
            }
        }

        fn store(&self) -> EffectStore<'_> {
            EffectStore::new(EffectColumns {
                entities: &self.entities,
                effects: &self.effects,
                timers: &self.timers,
                mags: &self.mags,
                tags_ext: &self.tags_ext,
                wake: &self.wake,
                origins: &self.origins,
                origins_len: self.origins_len,
                specs: &self.specs,
                specs_high_water: self.specs_high_water,
                rows: ROWS,
                mods: MODS,
                tags_extra: 1,
            })
        }

        fn store_mut(&mut self) -> EffectStoreMut<'_> {
            EffectStoreMut::new(EffectColumnsMut {
                entities: &mut self.entities,
                effects: &mut self.effects,
                timers: &mut self.timers,
                mags: &mut self.mags,
                tags_ext: &mut self.tags_ext,
                wake: &mut self.wake,
                origins: &mut self.origins,
                origins_len: &mut self.origins_len,
                specs: &mut self.specs,
                spec_ext: &mut self.spec_ext,
                specs_high_water: &mut self.specs_high_water,
                rows: ROWS,
                mods: MODS,
                tags_extra: 1,
            })
        }

        /// Inserts effect `seq` on entity slot `index`, expiring at `expires`, its magnitudes
        /// `seq` and `-seq`, its extra tag `seq`, pooled with `by` as instigator (if any).
        fn add(
            &mut self,
            index: u32,
            seq: u32,
            expires: Frame,
            by: Option<Entity>,
        ) -> Option<usize> {
            let mags = [Fx::from_num(seq), Fx::from_num(-i64::from(seq))];
            let origin = by.map(|e| EffectOrigin { instigator: e, ..EffectOrigin::of_self(e) });
            self.store_mut().insert(
                index,
                NewEffect {
                    effect: ActiveEffect {
                        seq,
                        stacks: 1,
                        dynamic_tags: [u16::MAX; 2],
                        ..Default::default()
                    },
                    timers: EffectTimers { expires_at: expires, next_period_at: NEVER },
                    mags: &mags,
                    tags: &[seq as u16],
                    origin,
                    live: seq.is_multiple_of(2),
                },
            )
        }

        fn seqs(&self, index: u32) -> Vec<u32> {
            self.store().effects(index).iter().map(|e| e.seq).collect()
        }

        fn content() -> Content {
            Content::from_ron_str(r#"(effects: { "E": (duration: Frames(5)) })"#).unwrap()
        }

        fn validate(&self) -> Result<(), InvalidSnapshot> {
            self.store().validate(&Columns::content(), 1)
        }
    }

    fn entity(index: u32) -> Entity {
        Entity { index, generation: 1 }
    }

    #[test]
    fn effects_are_appended_and_removal_keeps_application_order() {
        let mut c = Columns::new();
        assert_eq!(c.add(1, 10, 50, None), Some(ROWS));
        assert_eq!(c.add(1, 11, 40, Some(entity(0))), Some(ROWS + 1));
        assert_eq!(c.add(1, 12, 60, Some(entity(0))), Some(ROWS + 2));
        assert_eq!(c.add(1, 13, 70, None), None, "the rows are full");
        assert!(!c.store().has_room(1) && c.store().has_room(0));
        assert_eq!(c.seqs(1), [10, 11, 12]);
        assert_eq!((c.entities[1].n_effects, c.entities[1].n_live), (3, 2));
        assert_eq!(c.wake[1], EntityWake { period: NEVER, expiry: 40 });
        assert_eq!(c.origins_len, 2);

        let removed = c.store_mut().remove(1, 1, false).unwrap();
        assert_eq!(removed.seq, 11);
        assert_eq!(c.seqs(1), [10, 12]);
        let s = c.store();
        let slot = s.find(EffectHandle { target: entity(1), seq: 12 }).unwrap();
        assert_eq!(slot, ROWS + 1, "shifted down");
        assert_eq!(s.mags(slot), [Fx::from_num(12), Fx::from_num(-12)]);
        assert_eq!(s.tag_row(slot), [12]);
        assert_eq!(s.timer(slot).expires_at, 60);
        assert_eq!(c.wake[1].expiry, 50, "the earliest timer left");
        // The freed row is zero again, the counts and the pool follow.
        assert_eq!(c.effects[ROWS + 2], ActiveEffect::default());
        assert_eq!(c.timers[ROWS + 2], EffectTimers::default());
        assert_eq!(c.mags[(ROWS + 2) * MODS..], [Fx::ZERO; MODS]);
        assert_eq!(c.tags_ext[ROWS + 2], 0);
        assert_eq!(c.entities[1].n_effects, 2);
        assert_eq!(c.origins_len, 1);
        assert_eq!(c.origins[1], PooledOrigin::default());
        c.validate().unwrap();
        // A freed row is used again.
        assert_eq!(c.add(1, 14, 30, None), Some(ROWS + 2));
        assert_eq!(c.seqs(1), [10, 12, 14]);
        assert_eq!(c.wake[1].expiry, 30);
        assert_eq!(c.store_mut().remove(1, 3, false), None, "past the live rows");
        c.validate().unwrap();
    }

    #[test]
    fn handles_find_effects_only_on_their_generation() {
        let mut c = Columns::new();
        c.add(0, 7, 9, None);
        let s = c.store();
        assert_eq!(s.find(EffectHandle { target: entity(0), seq: 7 }), Some(0));
        assert_eq!(s.find(EffectHandle { target: entity(0), seq: 8 }), None);
        let stale = Entity { index: 0, generation: 2 };
        assert_eq!(s.find(EffectHandle { target: stale, seq: 7 }), None, "another generation");
        assert!(s.effects_of(stale).is_empty() && s.effects_of(entity(0)).len() == 1);
        assert!(s.effects_of(Entity { index: 5, generation: 1 }).is_empty(), "no such slot");
        c.entities[0].flags = 0;
        assert_eq!(c.store().find(EffectHandle { target: entity(0), seq: 7 }), None, "dead");
    }

    #[test]
    fn pooled_origins_stay_dense_and_point_back() {
        let mut c = Columns::new();
        c.add(0, 1, 10, Some(entity(1)));
        c.add(1, 2, 10, Some(entity(0)));
        c.add(0, 3, 10, Some(entity(1)));
        assert_eq!(c.origins_len, 3);
        // Removing the first pooled origin moves the last one (effect 3's) into its place.
        c.store_mut().remove(0, 0, false);
        assert_eq!(c.origins_len, 2);
        let s = c.store();
        let three = s.effect(s.find(EffectHandle { target: entity(0), seq: 3 }).unwrap());
        assert_eq!(three.origin, 0);
        assert_eq!(s.origin(three).unwrap().instigator, entity(1));
        assert_eq!((c.origins[0].target, c.origins[0].seq), (0, 3));
        c.validate().unwrap();
        // An effect without one keeps none.
        c.add(1, 4, 10, None);
        let s = c.store();
        let four = s.effect(s.find(EffectHandle { target: entity(1), seq: 4 }).unwrap());
        assert_eq!((four.origin, s.origin(four)), (SELF_ORIGIN, None));
    }

    #[test]
    fn kept_specs_take_the_first_free_slot_and_leave_with_their_effect() {
        let mut c = Columns::new();
        let a = c.add(0, 1, 10, None).unwrap();
        let b = c.add(0, 2, 10, None).unwrap();
        let spec = EffectSpec::new(EffectDefId(0), 3);
        assert_eq!(c.store_mut().keep_spec(a, spec), Some(0));
        c.store_mut().spec_row(0)[0] = 99;
        assert_eq!(c.store_mut().keep_spec(b, spec), Some(1));
        assert_eq!(c.store_mut().keep_spec(b, spec), None, "the pool is full");
        assert_eq!(c.specs_high_water, 2);
        let s = c.store();
        let (at, kept) = s.kept_spec(s.effect(a)).unwrap();
        assert_eq!((at, kept.level, kept.stored), (0, 3, 1));
        c.store_mut().remove(0, 0, false);
        assert_eq!(c.specs[0], EffectSpec::zeroed());
        assert_eq!(c.spec_ext[0], 0, "its row too");
        assert_eq!(c.specs_high_water, 2, "a mark of slots ever used");
        let s = c.store();
        assert_eq!(s.kept_spec(s.effect(0)).map(|k| k.0), Some(1), "the other one moved down");
        let c2 = EffectSpec { stored: 1, ..spec };
        assert_eq!(c.specs[1], c2);
        c.validate().unwrap();
    }

    #[test]
    fn retiming_keeps_the_wake_frames_the_earliest_timers() {
        let mut c = Columns::new();
        let a = c.add(0, 1, 20, None).unwrap();
        let b = c.add(0, 2, 30, None).unwrap();
        c.store_mut().retime(b, |t| t.next_period_at = 5);
        assert_eq!(c.wake[0], EntityWake { period: 5, expiry: 20 });
        let old = c.store_mut().retime(a, |t| t.expires_at = 45);
        assert_eq!(old.expires_at, 20);
        assert_eq!(c.wake[0], EntityWake { period: 5, expiry: 30 }, "the earliest moved later");
        c.store_mut().retime(b, |t| t.next_period_at = 8);
        assert_eq!(c.wake[0].period, 8);
        c.store_mut().retime(a, |t| t.expires_at = 25);
        assert_eq!(c.wake[0].expiry, 25);
        c.store_mut().delay(0);
        assert_eq!(c.wake[0], EntityWake { period: 9, expiry: 26 });
        assert_eq!(c.store().timers(0)[1].expires_at, 31);
        assert_eq!(c.store().timers(0)[0].next_period_at, NEVER, "infinite stays");
        let mut due = Vec::new();
        c.store().collect_due(9, 2, |w| w.period, |t| t.next_period_at, &mut due);
        assert_eq!(due, [(0, 2)]);
        due.clear();
        c.store().collect_due(8, 2, |w| w.period, |t| t.next_period_at, &mut due);
        assert!(due.is_empty());
        c.validate().unwrap();
        c.store_mut().remove(0, 1, false);
        c.store_mut().remove(0, 0, false);
        assert_eq!(c.wake[0], NOBODY);
        c.store_mut().clear(0);
        assert_eq!((c.entities[0].n_effects, c.wake[0]), (0, NOBODY));
    }

    #[test]
    fn setters_say_what_they_changed() {
        let mut c = Columns::new();
        let a = c.add(1, 4, 20, None).unwrap();
        let mut s = c.store_mut();
        assert_eq!(s.set_stacks(a, 3), 1);
        assert!(s.set_mag(a, 1, Fx::from_num(2)));
        assert!(!s.set_mag(a, 1, Fx::from_num(2)));
        assert!(!s.set_mag(a, MODS, Fx::from_num(2)), "past the magnitudes kept");
        let off = s.set_inhibited(a, true, 7);
        assert!(off.is_inhibited() && off.active_since == 0);
        let on = s.set_inhibited(a, false, 9);
        assert!(!on.is_inhibited() && on.active_since == 9);
        s.set_level(a, 5);
        s.set_duration(a, 11);
        let ef = *c.store().effect(a);
        assert_eq!((ef.stacks, ef.level, ef.duration), (3, 5, 11));
        assert_eq!(c.store().mag(a, 1), Some(Fx::from_num(2)));
        assert_eq!(c.store().mag(a, MODS), None);
    }

    #[test]
    fn validation_rejects_what_the_rules_forbid() {
        let mut c = Columns::new();
        c.add(0, 1, 20, Some(entity(1)));
        c.add(1, 2, 20, Some(entity(0)));
        c.validate().unwrap();
        let fails = |c: &Columns, column: &str, field: &str| {
            let e = c.validate().unwrap_err();
            assert_eq!((e.column, e.field), (column, field), "{e}");
        };
        // A count the rows cannot hold, or live effects beyond the count.
        let mut d = c.clone();
        d.entities[0].n_effects = ROWS as u32 + 1;
        fails(&d, COLUMN.entities, "n_effects");
        let mut d = c.clone();
        d.entities[0].n_live = 2;
        fails(&d, COLUMN.entities, "n_live");
        // A count that disagrees with the pool: an origin record nobody points at.
        let mut d = c.clone();
        d.store_mut().remove(1, 0, true);
        d.validate().unwrap();
        d.origins_len = 2;
        fails(&d, COLUMN.origins, "target");
        let mut d = c.clone();
        d.origins_len = 2 * ROWS as u32 + 1;
        fails(&d, COLUMN.header, "origins_len");
        let mut d = c.clone();
        d.specs_high_water = 3;
        fails(&d, COLUMN.header, "specs_high_water");
        // An effect pointing at another's origin, or an unknown definition.
        let mut d = c.clone();
        d.effects[0].origin = 1;
        fails(&d, COLUMN.effects, "origin");
        let mut d = c.clone();
        d.effects[ROWS].def = EffectDefId(1);
        fails(&d, COLUMN.effects, "def");
        // A wake frame later than the earliest timer.
        let mut d = c.clone();
        d.wake[1].expiry = 21;
        let e = d.validate().unwrap_err();
        assert_eq!((e.column, e.record, e.problem), (COLUMN.wake, Some(1), SnapshotProblem::Stale));
        d.entities[1].flags = 0;
        d.validate().expect("a dead entity's wake frames are not read");
        // A kept spec naming an ability slot past the layout.
        let mut d = c.clone();
        d.specs[0] = EffectSpec { stored: 1, ..EffectSpec::new(EffectDefId(0), 1) };
        d.specs[0].context.ability = AbilityHandle { owner: entity(0), slot: 1, generation: 1 };
        fails(&d, COLUMN.effect_specs, "context.ability");
    }
}
