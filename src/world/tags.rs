//! Per-entity tag counts.
//!
//! Each entity stores one `u16` count per registered tag (the tag's *own* count: loose tags plus
//! grants) and a presence bitset of its ancestor-expanded view. A tag's hierarchical count is
//! the sum of its own count and its descendants', a contiguous slice of the count array because
//! descendants follow their ancestor in id order. Counts saturate; going below zero is a
//! diagnostic, never a wrap.

use super::output::Diagnostic;
use super::{Game, World};
use crate::id::TagId;

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
