//! The world's tag API over the tag table.
//!
//! The counts, presence bits and their rules live in [`super::tag_table`]; this file answers the
//! public queries through it and turns what a change did into the world's consequences: the
//! item's tag events, inhibition rechecks and diagnostics.

use super::cascade::Work;
use super::output::Diagnostic;
use super::state::State;
use super::tag_table::{Clamp, TagTable, TagTableMut, lineage};
use super::{Game, World};
use crate::id::{Entity, TagId};
use crate::tag::{TagRegistry, TagSet};

impl<G: Game> State<G> {
    /// The tag table over this state's columns, with `registry`'s hierarchy.
    pub(crate) fn tag_table<'a>(&'a self, registry: &'a TagRegistry) -> TagTable<'a> {
        let l = &self.layout;
        TagTable::new(&self.tag_counts, &self.tag_bits, l.tags, l.tag_words, registry)
    }

    /// [`State::tag_table`], to change.
    pub(crate) fn tag_table_mut<'a>(&'a mut self, registry: &'a TagRegistry) -> TagTableMut<'a> {
        let l = &self.layout;
        TagTableMut::new(&mut self.tag_counts, &mut self.tag_bits, l.tags, l.tag_words, registry)
    }
}

/// The tag queries and loose-tag changes of the public API.
impl<G: Game> World<G> {
    /// Whether the entity has `t` or a descendant of `t` (count > 0).
    pub fn has_tag(&self, e: Entity, t: TagId) -> bool {
        self.has_ability_system(e) && self.tag_table().has(e.index, t)
    }

    /// Whether the entity has exactly `t` (its own count > 0).
    pub fn has_tag_exact(&self, e: Entity, t: TagId) -> bool {
        self.tag_count_exact(e, t) > 0
    }

    /// The hierarchical count of `t`: its own count plus its descendants'.
    pub fn tag_count(&self, e: Entity, t: TagId) -> u32 {
        if !self.has_ability_system(e) {
            return 0;
        }
        self.tag_table().count(e.index, t)
    }

    /// The count of exactly `t` (loose tags plus grants from effects and abilities).
    pub fn tag_count_exact(&self, e: Entity, t: TagId) -> u32 {
        if !self.has_ability_system(e) {
            return 0;
        }
        u32::from(self.tag_table().own(e.index, t))
    }

    /// The entity's tags, ancestor-expanded (what hierarchical queries test).
    pub fn tags(&self, e: Entity) -> TagSet {
        if !self.has_ability_system(e) {
            return TagSet::EMPTY;
        }
        self.tag_table().expanded(e.index)
    }

    /// The tags the entity holds exactly (count > 0).
    pub fn explicit_tags(&self, e: Entity) -> TagSet {
        if !self.has_ability_system(e) {
            return TagSet::EMPTY;
        }
        self.tag_table().explicit(e.index)
    }

    /// Whether the entity's tags pass requirements.
    pub fn passes(&self, e: Entity, req: &crate::tag::TagRequirements) -> bool {
        req.passes_words(self.tag_view(e).unwrap_or(&[]))
    }

    /// Whether a query matches the entity's tags.
    pub fn matches(&self, e: Entity, q: &crate::tag::TagQuery) -> bool {
        q.matches_words(self.tag_view(e).unwrap_or(&[]))
    }

    /// Adds one to a loose tag's count.
    pub fn add_loose_tag(&mut self, e: Entity, t: TagId) {
        self.submit(Work::LooseTag { entity: e, tag: t, delta: 1, set: false });
    }

    /// Removes one from a loose tag's count (never below zero).
    pub fn remove_loose_tag(&mut self, e: Entity, t: TagId) {
        self.submit(Work::LooseTag { entity: e, tag: t, delta: -1, set: false });
    }

    /// Sets the exact count of a tag (GAS `SetLooseGameplayTagCount`: the count includes grants).
    pub fn set_loose_tag_count(&mut self, e: Entity, t: TagId, count: u16) {
        self.submit(Work::LooseTag { entity: e, tag: t, delta: i32::from(count), set: true });
    }

    /// The tag table over this world's columns.
    pub(crate) fn tag_table(&self) -> TagTable<'_> {
        self.state.tag_table(self.content.tags())
    }

    /// The entity's presence words, if it has an ability system.
    pub(crate) fn tag_view(&self, e: Entity) -> Option<&[u64]> {
        self.has_ability_system(e).then(|| self.tag_table().bits(e.index))
    }

    /// The presence words of the entity in slot `index`.
    pub(crate) fn tag_view_index(&self, index: u32) -> &[u64] {
        self.tag_table().bits(index)
    }

    /// Changes the own count of `t` by `delta` on the entity in slot `index` through the tag
    /// table, then acts on what changed: a count held at a bound is a diagnostic, the old
    /// hierarchical counts of `t` and its ancestors are recorded for the item's tag events, and
    /// a presence bit that ongoing requirements test marks the entity for an inhibition check.
    pub(crate) fn change_tag(&mut self, index: u32, t: TagId, delta: i32) {
        let change = self.state.tag_table_mut(self.content.tags()).change(index, t, delta);
        if let Some(clamp) = change.clamp {
            let entity = self.entity_of(index);
            self.out.diagnostics.push(match clamp {
                Clamp::Underflow => Diagnostic::TagUnderflow { entity, tag: t },
                Clamp::Overflow => Diagnostic::TagOverflow { entity, tag: t },
            });
        }
        if !change.changed() {
            return;
        }
        let registry = self.content.tags();
        let table = self.state.tag_table(registry);
        let n = self.state.layout.tags;
        for a in lineage(registry, t) {
            let slot = index as usize * n + a.index();
            if self.scratch.tag_mark[slot] == 0 {
                let old = change.count_before(table.count(index, a));
                self.scratch.tag_touched.push((index, a, old));
                self.scratch.tag_mark[slot] = self.scratch.tag_touched.len() as u32;
            }
        }
        // Inhibition reads only the presence bits of the tags ongoing requirements test.
        let ongoing = &self.content.accel.ongoing_tags;
        if change.flipped(registry).any(|a| ongoing.contains(a)) {
            self.mark_tags_dirty(index);
        }
    }

    /// Adds (or with `sign = -1` removes) one count of every tag in a set.
    pub(crate) fn change_tags(&mut self, index: u32, set: &crate::tag::TagSet, sign: i32) {
        for t in set.iter() {
            self.change_tag(index, t, sign);
        }
    }
}
