//! The tag table: per-entity tag counts and presence bits, and the rules that keep them.
//!
//! Each entity stores one `u16` count per registered tag (the tag's *own* count: loose tags plus
//! grants) and a presence bitset of its ancestor-expanded view. A tag's hierarchical count is
//! the sum of its own count and its descendants', a contiguous slice of the count array because
//! descendants follow their ancestor in id order. Counts saturate; going below zero is reported
//! to the caller and held at zero, never a wrap.
//!
//! The two arrays are snapshot columns (`tag_counts` and `tag_bits` of `snapshot_columns!`, the
//! one order save, load and the checksum follow), so the table borrows them rather than owning
//! them: [`TagTable`] reads, [`TagTableMut`] writes, both over the columns, the column shape and
//! the registry's hierarchy. [`TagTableMut::change`] is the only way a count changes, and it
//! keeps the bits right; it returns a [`TagChange`] saying what changed, and the caller decides
//! what that means (tag events, inhibition, diagnostics). Nothing here names the game, so the
//! table is compiled once for every `World<G>`.

use crate::id::TagId;
use crate::tag::{TagRegistry, TagSet};

/// The tag and its ancestors, nearest first.
pub(crate) fn lineage(registry: &TagRegistry, t: TagId) -> impl Iterator<Item = TagId> + '_ {
    core::iter::successors(Some(t), move |a| registry.parent(*a))
}

/// Reads the tag columns: every query is by entity slot.
#[derive(Clone, Copy)]
pub(crate) struct TagTable<'a> {
    counts: &'a [u16],
    bits: &'a [u64],
    /// Counts per entity (the registry's tags).
    tags: usize,
    /// Presence words per entity.
    words: usize,
    registry: &'a TagRegistry,
}

impl<'a> TagTable<'a> {
    /// The table over `counts` (`tags` per entity) and `bits` (`words` per entity).
    pub(crate) fn new(
        counts: &'a [u16],
        bits: &'a [u64],
        tags: usize,
        words: usize,
        registry: &'a TagRegistry,
    ) -> Self {
        TagTable { counts, bits, tags, words, registry }
    }

    /// The own count of `t` (0 for a tag outside the registry).
    #[inline]
    pub(crate) fn own(&self, index: u32, t: TagId) -> u16 {
        if t.index() >= self.tags {
            return 0;
        }
        self.counts[index as usize * self.tags + t.index()]
    }

    /// The hierarchical count of `t`: its own count plus its descendants' (0 outside the
    /// registry).
    pub(crate) fn count(&self, index: u32, t: TagId) -> u32 {
        let base = index as usize * self.tags;
        let end = self.registry.subtree_end(t).min(self.tags);
        if t.index() >= end {
            return 0;
        }
        self.counts[base + t.index()..base + end].iter().map(|c| u32::from(*c)).sum()
    }

    /// The presence words: bit `t` is set when the hierarchical count of `t` is above zero.
    #[inline]
    pub(crate) fn bits(&self, index: u32) -> &'a [u64] {
        let start = index as usize * self.words;
        &self.bits[start..start + self.words]
    }

    /// Whether `t` or a descendant of `t` is held (its presence bit).
    #[inline]
    pub(crate) fn has(&self, index: u32, t: TagId) -> bool {
        self.bits(index).get(t.index() / 64).is_some_and(|w| w & (1 << (t.index() % 64)) != 0)
    }

    /// The ancestor-expanded tags (the presence bits as a set).
    pub(crate) fn expanded(&self, index: u32) -> TagSet {
        TagSet::from_words(self.bits(index), self.tags)
    }

    /// The tags held exactly (own count above zero).
    pub(crate) fn explicit(&self, index: u32) -> TagSet {
        let base = index as usize * self.tags;
        let mut s = TagSet::EMPTY;
        for (t, c) in self.counts[base..base + self.tags].iter().enumerate() {
            if *c > 0 {
                s.insert(TagId(t as u16));
            }
        }
        s
    }

    /// The first entity slot with a presence bit past the registry's last tag (which no change
    /// sets: only bytes loaded from outside can hold one).
    pub(crate) fn slot_with_stray_bit(&self) -> Option<usize> {
        let tags = self.tags;
        self.bits.chunks(self.words.max(1)).position(|words| {
            words.iter().enumerate().any(|(wi, word)| {
                let first = wi * 64;
                (0..64).any(|b| word & (1u64 << b) != 0 && first + b >= tags)
            })
        })
    }
}

/// Which bound a change ran into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clamp {
    /// The count would have gone below zero: it stays at zero.
    Underflow,
    /// The count would have passed `u16::MAX`: it stays there.
    Overflow,
}

/// What one [`TagTableMut::change`] did.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TagChange {
    /// The tag whose own count was changed.
    pub tag: TagId,
    /// Its own count before.
    pub old: u16,
    /// Its own count after.
    pub new: u16,
    /// The bound the requested change ran into, if it did.
    pub clamp: Option<Clamp>,
    /// How many of the tag's [`lineage`] had their presence bit flipped: only a count crossing
    /// zero flips any, and the flips are the first `flipped` of the lineage.
    pub flipped: usize,
}

impl TagChange {
    fn none(tag: TagId) -> Self {
        TagChange { tag, old: 0, new: 0, clamp: None, flipped: 0 }
    }

    /// Whether the own count changed (and with it the hierarchical count of the tag and every
    /// ancestor).
    pub(crate) fn changed(&self) -> bool {
        self.old != self.new
    }

    /// The hierarchical count of the tag or an ancestor before the change, from its count
    /// `now`.
    pub(crate) fn count_before(&self, now: u32) -> u32 {
        now + u32::from(self.old) - u32::from(self.new)
    }

    /// The tags whose presence bit flipped (the tag first, then ancestors).
    pub(crate) fn flipped<'r>(
        &self,
        registry: &'r TagRegistry,
    ) -> impl Iterator<Item = TagId> + 'r {
        lineage(registry, self.tag).take(self.flipped)
    }
}

/// Writes the tag columns, keeping counts and presence bits in step.
pub(crate) struct TagTableMut<'a> {
    counts: &'a mut [u16],
    bits: &'a mut [u64],
    tags: usize,
    words: usize,
    registry: &'a TagRegistry,
}

impl<'a> TagTableMut<'a> {
    /// The table over `counts` (`tags` per entity) and `bits` (`words` per entity).
    pub(crate) fn new(
        counts: &'a mut [u16],
        bits: &'a mut [u64],
        tags: usize,
        words: usize,
        registry: &'a TagRegistry,
    ) -> Self {
        TagTableMut { counts, bits, tags, words, registry }
    }

    /// The same table, read-only.
    pub(crate) fn view(&self) -> TagTable<'_> {
        TagTable::new(self.counts, self.bits, self.tags, self.words, self.registry)
    }

    /// Changes the own count of `t` by `delta` (held to `0..=u16::MAX`), flipping the presence
    /// bits of `t` and of the ancestors whose hierarchical count crossed zero. A tag outside the
    /// registry or a zero `delta` changes nothing.
    pub(crate) fn change(&mut self, index: u32, t: TagId, delta: i32) -> TagChange {
        let mut change = TagChange::none(t);
        if delta == 0 || t.index() >= self.tags {
            return change;
        }
        let slot = index as usize * self.tags + t.index();
        let old = self.counts[slot];
        let sum = i32::from(old).saturating_add(delta);
        let new = if sum < 0 {
            change.clamp = Some(Clamp::Underflow);
            0
        } else if sum > i32::from(u16::MAX) {
            change.clamp = Some(Clamp::Overflow);
            u16::MAX
        } else {
            sum as u16
        };
        change.old = old;
        change.new = new;
        if new == old {
            return change;
        }
        self.counts[slot] = new;
        // Presence bits: only a count crossing zero changes the view.
        if old == 0 || new == 0 {
            let base = index as usize * self.words;
            for (at, a) in lineage(self.registry, t).enumerate() {
                let present = new > 0 || self.view().count(index, a) > 0;
                let word = &mut self.bits[base + a.index() / 64];
                let bit = 1u64 << (a.index() % 64);
                if (*word & bit != 0) != present {
                    *word ^= bit;
                    change.flipped = at + 1;
                }
                if new == 0 && present {
                    // A descendant still holds this tag, so every ancestor keeps it too.
                    break;
                }
            }
        }
        change
    }

    /// Clears every count and presence bit of the entity in slot `index`.
    pub(crate) fn clear(&mut self, index: u32) {
        let (i, n, w) = (index as usize, self.tags, self.words);
        self.counts[i * n..(i + 1) * n].iter_mut().for_each(|c| *c = 0);
        self.bits[i * w..(i + 1) * w].iter_mut().for_each(|c| *c = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `A`, `A.B`, `A.B.C`, `A.D`, `E`: ids 0..5 in that order.
    fn registry() -> TagRegistry {
        TagRegistry::new(["A.B.C", "A.D", "E"], []).unwrap()
    }

    struct Columns {
        registry: TagRegistry,
        counts: Vec<u16>,
        bits: Vec<u64>,
    }

    impl Columns {
        fn new(entities: usize) -> Self {
            let registry = registry();
            let (n, w) = (registry.len(), registry.words());
            Columns { counts: vec![0; entities * n], bits: vec![0; entities * w], registry }
        }

        fn table(&self) -> TagTable<'_> {
            let (n, w) = (self.registry.len(), self.registry.words());
            TagTable::new(&self.counts, &self.bits, n, w, &self.registry)
        }

        fn table_mut(&mut self) -> TagTableMut<'_> {
            let (n, w) = (self.registry.len(), self.registry.words());
            TagTableMut::new(&mut self.counts, &mut self.bits, n, w, &self.registry)
        }

        /// Every presence bit is what the counts say: set exactly when the hierarchical count
        /// is above zero.
        fn assert_bits_follow_counts(&self, index: u32) {
            let t = self.table();
            for id in 0..self.registry.len() {
                let id = TagId(id as u16);
                assert_eq!(t.has(index, id), t.count(index, id) > 0, "{}", self.registry.name(id));
            }
        }
    }

    fn tag(name: &str) -> TagId {
        registry().get(name).unwrap()
    }

    #[test]
    fn a_count_and_its_hierarchy() {
        let mut c = Columns::new(2);
        let (a, ab, abc, ad, e) = (tag("A"), tag("A.B"), tag("A.B.C"), tag("A.D"), tag("E"));
        let _ = c.table_mut().change(1, abc, 2);
        let _ = c.table_mut().change(1, ad, 1);
        let t = c.table();
        assert_eq!((t.own(1, abc), t.own(1, ab), t.own(1, a)), (2, 0, 0));
        assert_eq!((t.count(1, abc), t.count(1, ab), t.count(1, a)), (2, 2, 3));
        assert_eq!(t.count(1, e), 0);
        assert_eq!(t.count(0, a), 0, "the other entity is untouched");
        assert_eq!(t.explicit(1), TagSet::of(&[abc, ad]));
        assert_eq!(t.expanded(1), TagSet::of(&[a, ab, abc, ad]));
        c.assert_bits_follow_counts(1);
        c.assert_bits_follow_counts(0);
    }

    #[test]
    fn bits_follow_counts_as_tags_come_and_go() {
        let mut c = Columns::new(1);
        let (a, ab, abc, ad) = (tag("A"), tag("A.B"), tag("A.B.C"), tag("A.D"));
        let steps: [(TagId, i32); 8] =
            [(abc, 1), (ad, 1), (abc, -1), (ab, 3), (ad, -1), (ab, -3), (a, 1), (a, -1)];
        for (t, d) in steps {
            let change = c.table_mut().change(0, t, d);
            assert!(change.changed() && change.clamp.is_none());
            c.assert_bits_follow_counts(0);
        }
        assert_eq!(c.table().expanded(0), TagSet::EMPTY);
        assert!(c.counts.iter().all(|n| *n == 0));
    }

    #[test]
    fn a_change_says_which_bits_flipped() {
        let mut c = Columns::new(1);
        let (a, ab, abc, ad) = (tag("A"), tag("A.B"), tag("A.B.C"), tag("A.D"));
        let reg = registry();
        let flipped = |ch: TagChange| ch.flipped(&reg).collect::<Vec<_>>();
        // From nothing: the tag and every ancestor appear.
        assert_eq!(flipped(c.table_mut().change(0, abc, 1)), [abc, ab, a]);
        // A sibling under a present ancestor: only itself.
        assert_eq!(flipped(c.table_mut().change(0, ad, 1)), [ad]);
        // Not crossing zero: nothing.
        assert_eq!(flipped(c.table_mut().change(0, abc, 1)), []);
        assert_eq!(flipped(c.table_mut().change(0, abc, -1)), []);
        // Gone, but `A.D` still holds `A`.
        assert_eq!(flipped(c.table_mut().change(0, abc, -1)), [abc, ab]);
        assert_eq!(flipped(c.table_mut().change(0, ad, -1)), [ad, a]);
    }

    #[test]
    fn the_count_before_a_change_is_recovered() {
        let mut c = Columns::new(1);
        let (a, abc) = (tag("A"), tag("A.B.C"));
        let _ = c.table_mut().change(0, a, 4);
        let before = c.table().count(0, a);
        let change = c.table_mut().change(0, abc, 3);
        assert_eq!(change.count_before(c.table().count(0, a)), before);
        let change = c.table_mut().change(0, abc, -2);
        assert_eq!(change.count_before(c.table().count(0, a)), before + 3);
    }

    #[test]
    fn counts_saturate() {
        let mut c = Columns::new(1);
        let e = tag("E");
        let change = c.table_mut().change(0, e, i32::from(u16::MAX) - 1);
        assert_eq!(change.clamp, None);
        let change = c.table_mut().change(0, e, 5);
        assert_eq!(
            (change.old, change.new, change.clamp),
            (u16::MAX - 1, u16::MAX, Some(Clamp::Overflow))
        );
        let change = c.table_mut().change(0, e, i32::MAX);
        assert_eq!(change.clamp, Some(Clamp::Overflow));
        assert!(!change.changed());
        assert_eq!(c.table().own(0, e), u16::MAX);
        c.assert_bits_follow_counts(0);
    }

    #[test]
    fn going_below_zero_is_reported_not_wrapped() {
        let mut c = Columns::new(1);
        let (a, ab) = (tag("A"), tag("A.B"));
        let change = c.table_mut().change(0, ab, -1);
        assert_eq!((change.old, change.new, change.clamp), (0, 0, Some(Clamp::Underflow)));
        assert!(!change.changed() && change.flipped == 0);
        let _ = c.table_mut().change(0, ab, 2);
        let change = c.table_mut().change(0, ab, -5);
        assert_eq!((change.old, change.new, change.clamp), (2, 0, Some(Clamp::Underflow)));
        assert!(!c.table().has(0, a));
        assert_eq!(c.table().count(0, a), 0);
        c.assert_bits_follow_counts(0);
    }

    #[test]
    fn tags_outside_the_registry_are_ignored() {
        let mut c = Columns::new(1);
        let past = TagId(registry().len() as u16);
        let change = c.table_mut().change(0, past, 1);
        assert_eq!(change, TagChange::none(past));
        let t = c.table();
        assert_eq!((t.own(0, past), t.count(0, past), t.has(0, past)), (0, 0, false));
        assert_eq!(t.slot_with_stray_bit(), None);
    }

    #[test]
    fn clearing_an_entity_leaves_the_others() {
        let mut c = Columns::new(2);
        let (abc, e) = (tag("A.B.C"), tag("E"));
        for i in 0..2 {
            let _ = c.table_mut().change(i, abc, 1);
            let _ = c.table_mut().change(i, e, 2);
        }
        c.table_mut().clear(0);
        assert_eq!(c.table().expanded(0), TagSet::EMPTY);
        assert_eq!(c.table().explicit(0), TagSet::EMPTY);
        assert_eq!(c.table().explicit(1), TagSet::of(&[abc, e]));
        c.assert_bits_follow_counts(0);
        c.assert_bits_follow_counts(1);
    }

    #[test]
    fn a_stray_bit_is_found() {
        let mut c = Columns::new(3);
        c.bits[2] |= 1 << registry().len();
        assert_eq!(c.table().slot_with_stray_bit(), Some(2));
    }
}
