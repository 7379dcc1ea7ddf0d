//! Structural validation of snapshot bytes that come from outside the process (a replay's
//! initial state and keyframes, a dump): [`World::load_bytes`](super::World::load_bytes) rejects
//! a snapshot whose ids, counts and links do not fit the world's content and layout, so that a
//! crafted file (one whose integrity checksum was recomputed after tampering) is a typed error
//! instead of an out-of-bounds panic during the next step.
//!
//! It checks what the simulation uses as an index: definition ids (effects, abilities, tags,
//! attributes, curves, timelines), per-entity counts, slot numbers, free lists and entity
//! references. Values (attributes, magnitudes, frames, random states) are not constrained: any
//! value steps deterministically.

use super::Game;
use super::attribute_table::sets_declared;
use super::state::{COLUMN, State, entity_flags};
use crate::ability::spec_flags;
use crate::ability::task::kind as task_kind;
use crate::content::Content;
use crate::id::Entity;

use super::{InvalidSnapshot, SnapshotProblem as P};

/// Why a snapshot does not fit: the first bad field.
pub(crate) type Invalid = InvalidSnapshot;

fn check(ok: bool, what: impl FnOnce() -> Invalid) -> Result<(), Invalid> {
    if ok { Ok(()) } else { Err(what()) }
}

/// `column[record][slot].field` is out of range.
fn bad(c: &'static str, record: Option<usize>, slot: Option<usize>, f: &'static str) -> Invalid {
    InvalidSnapshot::out_of_range(c, record, slot, f)
}

/// `column.field` is `value`, above `limit`.
fn exceeds(column: &'static str, field: &'static str, value: u64, limit: u64) -> Invalid {
    InvalidSnapshot::exceeds(column, field, value, limit)
}

impl<G: Game> State<G> {
    /// Checks every index-like field against `content` and the layout (see the module docs),
    /// part by part; the first bad field is the error.
    pub(crate) fn validate(&self, content: &Content) -> Result<(), Invalid> {
        self.validate_header()?;
        self.validate_entities(content)?;
        self.validate_effects(content)?;
        self.validate_abilities(content)?;
        self.validate_extras(content)?;
        self.validate_unused()?;
        Ok(())
    }

    /// The header's allocation counters and free lists (no cycle, every link in range).
    fn validate_header(&self) -> Result<(), Invalid> {
        let l = self.layout;
        let n = l.entities;
        let h = &self.header;
        // Header: allocation counters and free lists.
        check(h.high_water as usize <= n, || {
            exceeds(COLUMN.header, "high_water", h.high_water.into(), n as u64)
        })?;
        check(h.alive <= h.high_water, || {
            exceeds(COLUMN.header, "alive", h.alive.into(), h.high_water.into())
        })?;
        check(h.free_head == u32::MAX || h.free_head < h.high_water, || {
            bad(COLUMN.header, None, None, "free_head")
        })?;
        check(h.task_high_water as usize <= l.tasks, || {
            exceeds(COLUMN.header, "task_high_water", h.task_high_water.into(), l.tasks as u64)
        })?;
        check(h.tasks_live <= h.task_high_water, || {
            exceeds(COLUMN.header, "tasks_live", h.tasks_live.into(), h.task_high_water.into())
        })?;
        check(h.task_free_head == u32::MAX || h.task_free_head < h.task_high_water, || {
            bad(COLUMN.header, None, None, "task_free_head")
        })?;
        // The free lists end (no cycle, every link in range).
        let mut at = h.free_head;
        for _ in 0..=n {
            if at == u32::MAX {
                break;
            }
            let r = self
                .entities
                .get(at as usize)
                .ok_or_else(|| bad(COLUMN.entities, Some(at as usize), None, "next_free"))?;
            check(r.flags & entity_flags::ALIVE == 0, || InvalidSnapshot {
                problem: P::FreeButAlive,
                ..bad(COLUMN.entities, Some(at as usize), None, "flags")
            })?;
            at = r.next_free;
        }
        check(at == u32::MAX, || InvalidSnapshot {
            problem: P::ListDoesNotEnd,
            ..bad(COLUMN.header, None, None, "free_head")
        })?;
        let mut at = h.task_free_head;
        for _ in 0..=l.tasks {
            if at == u32::MAX {
                break;
            }
            let t = self
                .tasks
                .get(at as usize)
                .ok_or_else(|| bad(COLUMN.tasks, Some(at as usize), None, "next_free"))?;
            at = t.next_free;
        }
        check(at == u32::MAX, || InvalidSnapshot {
            problem: P::ListDoesNotEnd,
            ..bad(COLUMN.header, None, None, "task_free_head")
        })?;
        Ok(())
    }

    /// Entities and their tag bits.
    fn validate_entities(&self, content: &Content) -> Result<(), Invalid> {
        let l = self.layout;
        let n = l.entities;
        let ent = |e: Entity| (e.index as usize) < n || e == Entity::NONE;
        let h = &self.header;
        // Entities.
        let sets = content.attr_set_defs().len();
        for (i, r) in self.entities.iter().enumerate() {
            let w = |f| bad(COLUMN.entities, Some(i), None, f);
            check(r.flags & !(entity_flags::ALIVE | entity_flags::ASC) == 0, || w("flags"))?;
            check(sets_declared(r.sets, sets), || w("sets"))?;
            check(r.n_tasks as usize <= l.tasks, || w("n_tasks"))?;
            check(ent(r.avatar), || w("avatar"))?;
            // Slots past the high-water mark were never used: still zeroed, not links.
            let used = (i as u64) < u64::from(h.high_water);
            check(!used || r.next_free == u32::MAX || r.next_free < h.high_water, || {
                w("next_free")
            })?;
        }
        // Tags: no bit above the registry.
        if let Some(i) = self.tag_table(content.tags()).slot_with_stray_bit() {
            return Err(bad(COLUMN.tag_bits, Some(i), None, ""));
        }
        Ok(())
    }

    /// Active effects, the origin pool and stored specs: the effect store's rules.
    fn validate_effects(&self, content: &Content) -> Result<(), Invalid> {
        self.effect_store().validate(content, self.layout.abilities)
    }

    /// Granted abilities and tasks.
    fn validate_abilities(&self, content: &Content) -> Result<(), Invalid> {
        let l = self.layout;
        let n = l.entities;
        let tags = content.tags().len();
        let ent = |e: Entity| (e.index as usize) < n || e == Entity::NONE;
        let tag = |t: u16| (t as usize) < tags || t == u16::MAX;
        let attrs = content.attr_defs().len();
        // Granted abilities.
        let abilities = content.ability_defs().len();
        for (i, s) in self.specs.iter().enumerate() {
            let w = |f| bad(COLUMN.specs, Some(i), None, f);
            if s.flags & spec_flags::GRANTED == 0 {
                continue;
            }
            check(s.def.index() < abilities, || w("def"))?;
            check(s.dynamic_tags.iter().all(|t| tag(*t)), || w("dynamic_tags"))?;
            check(
                crate::ability::cooldown_tag_valid(s.cooldown_tag, content.tags().len()),
                || w("cooldown_tag"),
            )?;
            check(ent(s.source_object), || w("source_object"))?;
        }
        check(self.player_owner.iter().all(|e| ent(*e)), || {
            bad(COLUMN.player_owner, None, None, "")
        })?;

        // Tasks.
        let curves = content.curve_defs().len();
        let timelines = content.timeline_defs().len();
        for (i, t) in self.tasks.iter().enumerate() {
            if !t.is_live() {
                continue;
            }
            let w = |f| bad(COLUMN.tasks, Some(i), None, f);
            check(ent(t.owner) && ent(t.other), || w("entity"))?;
            check((t.ability_slot as usize) < l.abilities.max(1), || w("ability_slot"))?;
            check(t.kind <= task_kind::CUSTOM, || w("kind"))?;
            check(tag(t.tag) && tag(t.tag2), || w("tag"))?;
            match t.kind {
                task_kind::WAIT_ATTRIBUTE | task_kind::WAIT_DAMAGE => {
                    check(usize::from(t.attr) < attrs, || w("attr"))?;
                }
                task_kind::PLAY_TIMELINE => {
                    check((t.a as usize) < timelines, || w("a (timeline)"))?;
                }
                task_kind::ROOT_MOTION => check((t.a as usize) < curves, || w("a (curve)"))?,
                task_kind::WAIT_TARGET_DATA => {
                    check(tag(t.query.require_tag), || w("query.require_tag"))?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Entity clocks, input buffers, the rows beyond the inline rooms and standalone cues.
    fn validate_extras(&self, content: &Content) -> Result<(), Invalid> {
        let l = self.layout;
        let n = l.entities;
        let tags = content.tags().len();
        let ent = |e: Entity| (e.index as usize) < n || e == Entity::NONE;
        // Entity clocks and input buffers (their marks and the entities they name).
        let x = &self.ext;
        check(x.time_high_water as usize <= n, || {
            exceeds(COLUMN.ext, "time_high_water", x.time_high_water.into(), n as u64)
        })?;
        check(x.buffer_high_water as usize <= l.players, || {
            exceeds(COLUMN.ext, "buffer_high_water", x.buffer_high_water.into(), l.players as u64)
        })?;
        for (i, t) in self.entity_time.iter().enumerate().take(x.time_high_water as usize) {
            check(ent(t.entity), || bad(COLUMN.entity_time, Some(i), None, "entity"))?;
            check(t.scale >= crate::num::Fx::ZERO && t.scale <= crate::num::Fx::ONE, || {
                bad(COLUMN.entity_time, Some(i), None, "scale")
            })?;
        }
        for (i, b) in self.input_buffers.iter().enumerate().take(x.buffer_high_water as usize) {
            check(ent(b.owner), || bad(COLUMN.input_buffers, Some(i), None, "owner"))?;
        }
        // Values beyond the inline rooms (src/world/capacity.rs): tag ids + 1 in the rows, a
        // spill whose records in use fit.
        let row_tag = |t: u16| t == 0 || usize::from(t - 1) < tags;
        check(self.effect_tags_ext.iter().all(|t| row_tag(*t)), || {
            bad(COLUMN.effect_tags_ext, None, None, "")
        })?;
        check(self.ability_tags_ext.iter().all(|t| row_tag(*t)), || {
            bad(COLUMN.ability_tags_ext, None, None, "")
        })?;
        if let Some(w) = self.spill.first() {
            check((w >> 32) as usize <= l.spills, || {
                bad(COLUMN.spill, None, None, "records in use")
            })?;
        }
        // Standalone cues.
        for (i, c) in self.standalone_cues.iter().enumerate() {
            if c.live == 0 {
                continue;
            }
            check(ent(c.target) && c.tag.index() < tags, || {
                bad(COLUMN.standalone_cues, Some(i), None, "")
            })?;
        }
        Ok(())
    }

    /// The records past the marks: as a new world has them.
    fn validate_unused(&self) -> Result<(), Invalid> {
        let l = self.layout;
        let h = &self.header;
        // Past the entity, task and stored-spec high-water marks and the origin pool's used
        // front, every record is as a new world has it: copies and checksums stop at those
        // marks. (Compared in place: the columns are borrowed, not copied.)
        let fresh = State::<G>::new(l, h.seed);
        let mut new_columns = Vec::new();
        fresh.visit_columns(|_, _, b, _| new_columns.push(b));
        let mut mine = Vec::new();
        self.visit_columns(|_, name, b, used| mine.push((name, b, used)));
        for ((name, b, used), new) in mine.into_iter().zip(new_columns) {
            check(new.get(used..) == b.get(used..), || InvalidSnapshot {
                column: name,
                record: None,
                slot: None,
                field: "",
                problem: P::UnusedBytes { from: used },
            })?;
        }
        Ok(())
    }
}
