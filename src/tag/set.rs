//! Fixed-capacity tag bitsets.

use crate::id::TagId;
use bytemuck::{Pod, Zeroable};
use core::fmt;

/// The largest number of tags a registry may hold (the capacity of a [`TagSet`]).
pub const MAX_TAGS: usize = 1024;
const WORDS: usize = MAX_TAGS / 64;

/// A fixed-capacity set of tag ids (a 1024-bit bitset, `Pod`).
///
/// A `TagSet` is exact: it answers only for the ids stored in it. Hierarchical questions go
/// through [`TagContainer`] (or an entity's ancestor-expanded tag view).
///
/// # Tags
///
/// Gameplay tags: the hierarchical registry, tag sets, queries and requirements.
///
/// Tags are dotted names (`State.Debuff.Stun`). The registry assigns ids by sorting full names
/// segment by segment, with implicit parents inserted, so every peer that loaded the same names
/// agrees on every id, and a tag's descendants always occupy the id range right after it
/// (`State` < `State.Debuff` < `State.Debuff.Stun` < `State.Dead`). That makes "is `a` a
/// descendant of `b`" a range check and lets per-entity counts be plain dense arrays.
///
/// ## Matching rules (the same as GAS)
///
/// A container holding `A.1` answers "has `A`" with true (hierarchical match); the exact forms
/// (`has_exact`, …) do not. [`TagContainer`] keeps both the explicit tags and their
/// ancestor-expanded view so either question is a bitset test.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct TagSet {
    words: [u64; WORDS],
}

impl Default for TagSet {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl TagSet {
    /// The empty set.
    pub const EMPTY: TagSet = TagSet { words: [0; WORDS] };

    /// A set holding the given tags.
    pub fn of(tags: &[TagId]) -> TagSet {
        let mut s = TagSet::EMPTY;
        for t in tags {
            s.insert(*t);
        }
        s
    }

    /// Adds a tag. Ids beyond [`MAX_TAGS`] are ignored (the registry never creates them).
    #[inline]
    pub fn insert(&mut self, t: TagId) {
        if let Some(w) = self.words.get_mut(t.index() / 64) {
            *w |= 1u64 << (t.index() % 64);
        }
    }

    /// Removes a tag.
    #[inline]
    pub fn remove(&mut self, t: TagId) {
        if let Some(w) = self.words.get_mut(t.index() / 64) {
            *w &= !(1u64 << (t.index() % 64));
        }
    }

    /// Whether the exact tag is in the set.
    #[inline]
    pub fn contains(&self, t: TagId) -> bool {
        self.words.get(t.index() / 64).is_some_and(|w| w & (1u64 << (t.index() % 64)) != 0)
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        // Branch-free folds over the fixed words vectorise (these run on every activation
        // check and effect application).
        self.words.iter().fold(0, |m, w| m | w) == 0
    }

    /// The number of tags in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the two sets share a tag.
    #[inline]
    pub fn intersects(&self, other: &TagSet) -> bool {
        self.words.iter().zip(&other.words).fold(0, |m, (a, b)| m | (a & b)) != 0
    }

    /// Whether every tag of `self` is in `other`.
    #[inline]
    pub fn is_subset(&self, other: &TagSet) -> bool {
        self.words.iter().zip(&other.words).fold(0, |m, (a, b)| m | (a & !b)) == 0
    }

    /// Whether the set shares a tag with a word slice (an entity's tag view).
    #[inline]
    pub fn intersects_words(&self, words: &[u64]) -> bool {
        self.words.iter().zip(words).fold(0, |m, (a, b)| m | (a & b)) != 0
    }

    /// Whether every tag of `self` is in a word slice (an entity's tag view). Tags beyond the
    /// slice count as absent.
    #[inline]
    pub fn is_subset_of_words(&self, words: &[u64]) -> bool {
        let n = words.len().min(WORDS);
        let (head, tail) = self.words.split_at(n);
        let missing = head.iter().zip(&words[..n]).fold(0, |m, (a, b)| m | (a & !b));
        (tail.iter().fold(missing, |m, a| m | a)) == 0
    }

    /// Adds every tag of `other`.
    pub fn union_with(&mut self, other: &TagSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// The union of two sets.
    pub fn union(mut self, other: &TagSet) -> TagSet {
        self.union_with(other);
        self
    }

    /// The tags in ascending id order.
    pub fn iter(&self) -> impl Iterator<Item = TagId> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, w)| {
            let mut w = *w;
            core::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(TagId((wi * 64 + b as usize) as u16))
            })
        })
    }

    /// The raw words (bit `i % 64` of word `i / 64` is tag `i`).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The set whose bits are `words` restricted to tags below `n_tags` (word copies, not a
    /// loop over every tag).
    pub(crate) fn from_words(words: &[u64], n_tags: usize) -> TagSet {
        let mut s = TagSet::EMPTY;
        s.copy_words(words, n_tags);
        s
    }

    /// Overwrites the words that hold tags `0..n_tags` with `words` (bits from `n_tags` on
    /// cleared); the words past them are left as they are (empty in a set built from
    /// [`TagSet::EMPTY`]).
    #[inline]
    pub(crate) fn copy_words(&mut self, words: &[u64], n_tags: usize) {
        let n = n_tags.min(MAX_TAGS);
        let k = n.div_ceil(64).min(words.len());
        self.words[..k].copy_from_slice(&words[..k]);
        // The word holding the last tags keeps only theirs.
        let (last, bits) = (n / 64, n % 64);
        if bits != 0 && last < k {
            self.words[last] &= (1u64 << bits) - 1;
        }
    }
}

impl fmt::Debug for TagSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(|t| t.0)).finish()
    }
}

impl FromIterator<TagId> for TagSet {
    fn from_iter<I: IntoIterator<Item = TagId>>(iter: I) -> Self {
        let mut s = TagSet::EMPTY;
        for t in iter {
            s.insert(t);
        }
        s
    }
}

impl serde::Serialize for TagSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for TagSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let ids: Vec<TagId> = serde::Deserialize::deserialize(d)?;
        if let Some(bad) = ids.iter().find(|t| t.index() >= MAX_TAGS) {
            return Err(serde::de::Error::custom(format!(
                "tag id {} is beyond the {MAX_TAGS}-tag capacity",
                bad.0
            )));
        }
        Ok(ids.into_iter().collect())
    }
}

/// A set of explicit tags together with its ancestor-expanded view, as GAS containers answer
/// hierarchical questions. Built by [`crate::tag::TagRegistry::container`].
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TagContainer {
    /// The tags as written.
    pub explicit: TagSet,
    /// The tags as written plus all their ancestors.
    pub expanded: TagSet,
}

impl TagContainer {
    /// The empty container.
    pub const EMPTY: TagContainer =
        TagContainer { explicit: TagSet::EMPTY, expanded: TagSet::EMPTY };

    /// Whether the container holds `t` or a descendant of `t`.
    #[inline]
    pub fn has(&self, t: TagId) -> bool {
        self.expanded.contains(t)
    }

    /// Whether the container holds exactly `t`.
    #[inline]
    pub fn has_exact(&self, t: TagId) -> bool {
        self.explicit.contains(t)
    }

    /// Whether the container matches any tag of `tags` hierarchically.
    #[inline]
    pub fn has_any(&self, tags: &TagSet) -> bool {
        self.expanded.intersects(tags)
    }

    /// Whether the container matches every tag of `tags` hierarchically.
    #[inline]
    pub fn has_all(&self, tags: &TagSet) -> bool {
        tags.is_subset(&self.expanded)
    }

    /// Whether the container holds any tag of `tags` exactly.
    #[inline]
    pub fn has_any_exact(&self, tags: &TagSet) -> bool {
        self.explicit.intersects(tags)
    }

    /// Whether the container holds every tag of `tags` exactly.
    #[inline]
    pub fn has_all_exact(&self, tags: &TagSet) -> bool {
        tags.is_subset(&self.explicit)
    }

    /// Whether the container is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.explicit.is_empty()
    }

    /// The union of two containers.
    pub fn union(&self, other: &TagContainer) -> TagContainer {
        TagContainer {
            explicit: self.explicit.union(&other.explicit),
            expanded: self.expanded.union(&other.expanded),
        }
    }
}

impl fmt::Debug for TagContainer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.explicit, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_basics() {
        let mut s = TagSet::EMPTY;
        assert!(s.is_empty());
        s.insert(TagId(3));
        s.insert(TagId(700));
        s.insert(TagId(3));
        assert_eq!(s.len(), 2);
        assert!(s.contains(TagId(700)));
        assert!(!s.contains(TagId(4)));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![TagId(3), TagId(700)]);
        s.remove(TagId(3));
        assert_eq!(s.len(), 1);
        // Out of range ids are ignored rather than panicking.
        s.insert(TagId(60000));
        assert!(!s.contains(TagId(60000)));
        let a = TagSet::of(&[TagId(1), TagId(2)]);
        let b = TagSet::of(&[TagId(2)]);
        assert!(b.is_subset(&a));
        assert!(!a.is_subset(&b));
        assert!(a.intersects(&b));
        assert!(b.is_subset_of_words(a.words()));
        assert!(!a.is_subset_of_words(&a.words()[..0]));
    }

    #[test]
    fn serde_round_trip() {
        let s = TagSet::of(&[TagId(5), TagId(64), TagId(1023)]);
        let text = ron::to_string(&s).unwrap();
        assert_eq!(text, "[5,64,1023]");
        let back: TagSet = ron::from_str(&text).unwrap();
        assert_eq!(back, s);
        assert!(ron::from_str::<TagSet>("[1024]").is_err());
    }
}
