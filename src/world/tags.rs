//! Per-entity tag counts.
//!
//! Each entity stores one `u16` count per registered tag (the tag's *own* count: loose tags plus
//! grants) and a presence bitset of its ancestor-expanded view. A tag's hierarchical count is
//! the sum of its own count and its descendants', a contiguous slice of the count array because
//! descendants follow their ancestor in id order. Counts saturate; going below zero is a
//! diagnostic, never a wrap.

use super::cascade::Work;
use super::output::Diagnostic;
use super::{Game, World};
use crate::id::{Entity, TagId};
use crate::tag::TagSet;

/// The tag queries and loose-tag changes of the public API.
impl<G: Game> World<G> {
    /// Whether the entity has `t` or a descendant of `t` (count > 0).
    pub fn has_tag(&self, e: Entity, t: TagId) -> bool {
        self.tag_view(e).is_some_and(|w| {
            w.get(t.index() / 64).is_some_and(|x| x & (1 << (t.index() % 64)) != 0)
        })
    }

    /// Whether the entity has exactly `t` (its own count > 0).
    pub fn has_tag_exact(&self, e: Entity, t: TagId) -> bool {
        self.tag_count_exact(e, t) > 0
    }

    /// The hierarchical count of `t`: its own count plus its descendants'.
    pub fn tag_count(&self, e: Entity, t: TagId) -> u32 {
        if !self.has_ability_system(e) || t.index() >= self.state.layout.tags {
            return 0;
        }
        self.derived_count(e.index, t)
    }

    /// The count of exactly `t` (loose tags plus grants from effects and abilities).
    pub fn tag_count_exact(&self, e: Entity, t: TagId) -> u32 {
        if !self.has_ability_system(e) || t.index() >= self.state.layout.tags {
            return 0;
        }
        u32::from(self.state.tag_counts[e.index as usize * self.state.layout.tags + t.index()])
    }

    /// The entity's tags, ancestor-expanded (what hierarchical queries test).
    pub fn tags(&self, e: Entity) -> TagSet {
        match self.tag_view(e) {
            Some(words) => TagSet::from_words(words, self.state.layout.tags),
            None => TagSet::EMPTY,
        }
    }

    /// The tags the entity holds exactly (count > 0).
    pub fn explicit_tags(&self, e: Entity) -> TagSet {
        let mut s = TagSet::EMPTY;
        if self.has_ability_system(e) {
            let n = self.state.layout.tags;
            let base = e.index as usize * n;
            for (t, c) in self.state.tag_counts[base..base + n].iter().enumerate() {
                if *c > 0 {
                    s.insert(TagId(t as u16));
                }
            }
        }
        s
    }

    /// Whether the entity's tags pass requirements.
    pub fn passes(&self, e: Entity, req: &crate::tag::TagRequirements) -> bool {
        match self.tag_view(e) {
            Some(w) => req.passes_words(w),
            None => req.passes_words(&[]),
        }
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

    pub(crate) fn tag_view(&self, e: Entity) -> Option<&[u64]> {
        if !self.has_ability_system(e) {
            return None;
        }
        let w = self.state.layout.tag_words;
        let start = e.index as usize * w;
        Some(&self.state.tag_bits[start..start + w])
    }

    pub(crate) fn tag_view_index(&self, index: u32) -> &[u64] {
        let w = self.state.layout.tag_words;
        let start = index as usize * w;
        &self.state.tag_bits[start..start + w]
    }
}

impl<G: Game> World<G> {
    /// The hierarchical count of `t` on the entity in slot `index`.
    pub(crate) fn derived_count(&self, index: u32, t: TagId) -> u32 {
        let n = self.state.layout.tags;
        let base = index as usize * n;
        let end = self.content.tags().subtree_end(t).min(n);
        if t.index() >= end {
            return 0;
        }
        self.state.tag_counts[base + t.index()..base + end].iter().map(|c| u32::from(*c)).sum()
    }

    fn record_tag_old(&mut self, index: u32, t: TagId) {
        let slot = index as usize * self.state.layout.tags + t.index();
        if self.scratch.tag_mark[slot] == 0 {
            let old = self.derived_count(index, t);
            self.scratch.tag_touched.push((index, t, old));
            self.scratch.tag_mark[slot] = self.scratch.tag_touched.len() as u32;
        }
    }

    /// Changes the own count of `t` by `delta` on the entity in slot `index`, keeping the
    /// presence bits of `t` and its ancestors right and recording old counts for events.
    pub(crate) fn change_tag(&mut self, index: u32, t: TagId, delta: i32) {
        let n = self.state.layout.tags;
        if delta == 0 || t.index() >= n {
            return;
        }
        let slot = index as usize * n + t.index();
        let old = i32::from(self.state.tag_counts[slot]);
        let mut new = old.saturating_add(delta);
        if new < 0 {
            let entity = self.entity_of(index);
            self.out.diagnostics.push(Diagnostic::TagUnderflow { entity, tag: t });
            new = 0;
        }
        if new > i32::from(u16::MAX) {
            let entity = self.entity_of(index);
            self.out.diagnostics.push(Diagnostic::TagOverflow { entity, tag: t });
            new = i32::from(u16::MAX);
        }
        if new == old {
            return;
        }
        // Old hierarchical counts of `t` and its ancestors, for the item's tag events.
        let mut cur = Some(t);
        while let Some(a) = cur {
            self.record_tag_old(index, a);
            cur = self.content.tags().parent(a);
        }
        self.state.tag_counts[slot] = new as u16;
        // Presence bits: only a count crossing zero changes the view.
        let mut flipped_ongoing = false;
        if old == 0 || new == 0 {
            let w = self.state.layout.tag_words;
            let mut cur = Some(t);
            while let Some(a) = cur {
                let present = new > 0 || self.derived_count(index, a) > 0;
                let word = &mut self.state.tag_bits[index as usize * w + a.index() / 64];
                let bit = 1u64 << (a.index() % 64);
                if (*word & bit != 0) != present {
                    *word ^= bit;
                    flipped_ongoing |= self.content.accel.ongoing_tags.contains(a);
                }
                if new == 0 && present {
                    // A descendant still holds this tag, so every ancestor keeps it too.
                    break;
                }
                cur = self.content.tags().parent(a);
            }
        }
        // Inhibition reads only the presence bits of the tags ongoing requirements test.
        if flipped_ongoing {
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
