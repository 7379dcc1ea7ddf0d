//! The frozen tag registry.

use super::set::{MAX_TAGS, TagContainer, TagSet};
use crate::id::TagId;
use crate::located::Clip;
use ahash::AHashMap;
use core::fmt;

/// Why a set of tag names cannot form a registry.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TagRegistryError {
    /// A name is empty, has an empty segment (`A..B`, `.A`, `A.`) or a character other than
    /// ASCII letters, digits and `_`.
    InvalidName {
        /// The rejected name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// More tags (including implicit parents) than a [`TagSet`] can hold.
    TooManyTags {
        /// How many tags were requested.
        count: usize,
    },
    /// An alias names a tag that does not exist, or is itself a tag.
    BadAlias {
        /// The alias.
        alias: String,
        /// Why it is rejected.
        reason: String,
    },
}

impl fmt::Display for TagRegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TagRegistryError::InvalidName { name, reason } => {
                write!(f, "invalid tag name \"{}\": {reason}", Clip(name))
            }
            TagRegistryError::TooManyTags { count } => write!(
                f,
                "{count} tags (implicit parents included) exceed the capacity of {MAX_TAGS}"
            ),
            TagRegistryError::BadAlias { alias, reason } => {
                write!(f, "tag alias \"{}\": {reason}", Clip(alias))
            }
        }
    }
}

impl std::error::Error for TagRegistryError {}

crate::located::readable_debug!(TagRegistryError);

/// Checks one tag name: non-empty dot-separated segments of `[A-Za-z0-9_]`.
pub(crate) fn validate_name(name: &str) -> Result<(), TagRegistryError> {
    let bad = |reason| Err(TagRegistryError::InvalidName { name: name.to_string(), reason });
    if name.is_empty() {
        return bad("the name is empty");
    }
    if name.len() > 200 {
        return bad("the name is longer than 200 bytes");
    }
    for seg in name.split('.') {
        if seg.is_empty() {
            return bad("it has an empty segment (check for a leading, trailing or double '.')");
        }
        if !seg.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return bad("segments may hold only ASCII letters, digits and '_'");
        }
    }
    Ok(())
}

/// The frozen, hierarchical tag registry.
///
/// Ids are the positions of the names sorted segment by segment, so the descendants of a tag
/// are exactly the ids in `(id, subtree_end(id))`.
#[derive(Clone, Default)]
pub struct TagRegistry {
    names: Vec<String>,
    parent: Vec<Option<TagId>>,
    depth: Vec<u8>,
    subtree_end: Vec<u16>,
    self_and_ancestors: Vec<TagSet>,
    /// Whether the tag was named explicitly (as opposed to being an implicit parent).
    explicit: Vec<bool>,
    lookup: AHashMap<String, TagId>,
    aliases: Vec<(String, TagId)>,
}

impl fmt::Debug for TagRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TagRegistry").field("tags", &self.names).finish()
    }
}

impl TagRegistry {
    /// Builds a registry from explicit tag names (duplicates are fine) and aliases
    /// (`old name → current name`, so replays recorded before a rename still resolve).
    pub fn new<'a>(
        names: impl IntoIterator<Item = &'a str>,
        aliases: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<TagRegistry, TagRegistryError> {
        // Collect explicit names plus implicit parents, as segment vectors.
        let mut all: Vec<(Vec<&'a str>, bool)> = Vec::new();
        for name in names {
            validate_name(name)?;
            let segs: Vec<&str> = name.split('.').collect();
            for n in 1..segs.len() {
                all.push((segs[..n].to_vec(), false));
            }
            all.push((segs, true));
        }
        // Segment-wise sort gives pre-order; explicit entries sort after implicit duplicates
        // (false < true) so the dedup below keeps "explicit" if any copy was explicit.
        all.sort();
        let mut merged: Vec<(Vec<&str>, bool)> = Vec::with_capacity(all.len());
        for (segs, exp) in all {
            match merged.last_mut() {
                Some((last, last_exp)) if *last == segs => *last_exp |= exp,
                _ => merged.push((segs, exp)),
            }
        }
        if merged.len() > MAX_TAGS {
            return Err(TagRegistryError::TooManyTags { count: merged.len() });
        }
        let n = merged.len();
        let mut reg = TagRegistry {
            names: merged.iter().map(|(s, _)| s.join(".")).collect(),
            parent: vec![None; n],
            depth: vec![0; n],
            subtree_end: vec![0; n],
            self_and_ancestors: vec![TagSet::EMPTY; n],
            explicit: merged.iter().map(|(_, e)| *e).collect(),
            lookup: AHashMap::with_capacity(n),
            aliases: Vec::new(),
        };
        // Parents via a stack of open ancestors (pre-order walk).
        let mut stack: Vec<usize> = Vec::new();
        for (i, (segs, _)) in merged.iter().enumerate() {
            while let Some(&top) = stack.last() {
                let top_segs = &merged[top].0;
                if top_segs.len() < segs.len() && segs[..top_segs.len()] == top_segs[..] {
                    break;
                }
                reg.subtree_end[top] = i as u16;
                stack.pop();
            }
            reg.parent[i] = stack.last().map(|p| TagId(*p as u16));
            reg.depth[i] = segs.len().min(255) as u8;
            let mut anc = match reg.parent[i] {
                Some(p) => reg.self_and_ancestors[p.index()],
                None => TagSet::EMPTY,
            };
            anc.insert(TagId(i as u16));
            reg.self_and_ancestors[i] = anc;
            stack.push(i);
        }
        for top in stack {
            reg.subtree_end[top] = n as u16;
        }
        for (i, name) in reg.names.iter().enumerate() {
            reg.lookup.insert(name.clone(), TagId(i as u16));
        }
        let mut resolved: Vec<(String, TagId)> = Vec::new();
        for (alias, target) in aliases_sorted(aliases) {
            validate_name(alias)?;
            if reg.lookup.contains_key(alias) {
                return Err(TagRegistryError::BadAlias {
                    alias: alias.to_string(),
                    reason: "it is also a tag name".to_string(),
                });
            }
            let Some(id) = reg.lookup.get(target).copied() else {
                return Err(TagRegistryError::BadAlias {
                    alias: alias.to_string(),
                    reason: format!("its target \"{}\" is not a tag", Clip(target)),
                });
            };
            resolved.push((alias.to_string(), id));
        }
        for (alias, id) in &resolved {
            reg.lookup.insert(alias.clone(), *id);
        }
        reg.aliases = resolved;
        Ok(reg)
    }

    /// The number of tags, implicit parents included.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the registry holds no tags.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Looks a tag up by name or alias.
    pub fn get(&self, name: &str) -> Option<TagId> {
        self.lookup.get(name).copied()
    }

    /// The full name of a tag (`"?"` for an id outside the registry).
    pub fn name(&self, t: TagId) -> &str {
        self.names.get(t.index()).map(String::as_str).unwrap_or("?")
    }

    /// All names in id order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The aliases (`old name`, current id), sorted by alias.
    pub fn aliases(&self) -> &[(String, TagId)] {
        &self.aliases
    }

    /// The parent tag (`State.Debuff` for `State.Debuff.Stun`).
    pub fn parent(&self, t: TagId) -> Option<TagId> {
        self.parent.get(t.index()).copied().flatten()
    }

    /// The number of segments in the name.
    pub fn depth(&self, t: TagId) -> u8 {
        self.depth.get(t.index()).copied().unwrap_or(0)
    }

    /// Whether the tag was named in content (not only an implicit parent).
    pub fn is_explicit(&self, t: TagId) -> bool {
        self.explicit.get(t.index()).copied().unwrap_or(false)
    }

    /// The exclusive end of the tag's subtree: descendants are `t+1 .. end`.
    #[inline]
    pub fn subtree_end(&self, t: TagId) -> usize {
        self.subtree_end.get(t.index()).map(|e| usize::from(*e)).unwrap_or(t.index() + 1)
    }

    /// Whether `t` is `ancestor` or one of its descendants.
    #[inline]
    pub fn is_descendant_or_self(&self, t: TagId, ancestor: TagId) -> bool {
        t.index() >= ancestor.index() && t.index() < self.subtree_end(ancestor)
    }

    /// The tag and all its ancestors.
    #[inline]
    pub fn self_and_ancestors(&self, t: TagId) -> &TagSet {
        self.self_and_ancestors.get(t.index()).unwrap_or(&TagSet::EMPTY)
    }

    /// The ancestor-expanded form of a set.
    pub fn expand(&self, set: &TagSet) -> TagSet {
        let mut out = TagSet::EMPTY;
        for t in set.iter() {
            out.union_with(self.self_and_ancestors(t));
        }
        out
    }

    /// A container (explicit + expanded) from explicit tags.
    pub fn container(&self, set: TagSet) -> TagContainer {
        TagContainer { explicit: set, expanded: self.expand(&set) }
    }

    /// The number of 64-bit words needed for a bitset over every tag of this registry.
    pub fn words(&self) -> usize {
        self.names.len().div_ceil(64)
    }

    /// Renders a set as `{A.B, C}` with names.
    pub fn display_set(&self, set: &TagSet) -> String {
        let names: Vec<&str> = set.iter().map(|t| self.name(t)).collect();
        format!("{{{}}}", names.join(", "))
    }
}

fn aliases_sorted<'a>(
    aliases: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(&'a str, &'a str)> {
    let mut v: Vec<_> = aliases.into_iter().collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(names: &[&str]) -> TagRegistry {
        TagRegistry::new(names.iter().copied(), []).unwrap()
    }

    #[test]
    fn ids_are_preorder_with_implicit_parents() {
        let r = reg(&["State.Debuff.Stun", "State.Dead", "Ability", "State.Debuff.Slow", "AB"]);
        assert_eq!(
            r.names(),
            &[
                "AB",
                "Ability",
                "State",
                "State.Dead",
                "State.Debuff",
                "State.Debuff.Slow",
                "State.Debuff.Stun"
            ]
        );
        let state = r.get("State").unwrap();
        let debuff = r.get("State.Debuff").unwrap();
        let stun = r.get("State.Debuff.Stun").unwrap();
        assert!(!r.is_explicit(state));
        assert!(r.is_explicit(stun));
        assert_eq!(r.parent(stun), Some(debuff));
        assert_eq!(r.parent(state), None);
        assert_eq!(r.depth(stun), 3);
        assert!(r.is_descendant_or_self(stun, state));
        assert!(!r.is_descendant_or_self(state, stun));
        assert!(!r.is_descendant_or_self(r.get("AB").unwrap(), r.get("Ability").unwrap()));
        assert_eq!(r.subtree_end(state), 7);
        assert_eq!(r.subtree_end(debuff), 7);
        assert_eq!(r.subtree_end(r.get("State.Dead").unwrap()), 4);
        assert_eq!(r.self_and_ancestors(stun).len(), 3);
    }

    #[test]
    fn segment_order_is_not_byte_order() {
        // Byte order would put "A.B" after "A-"-like names; with segment order the subtree of
        // "A" is contiguous even when a sibling shares its prefix.
        let r = reg(&["A.B", "A_C", "A"]);
        assert_eq!(r.names(), &["A", "A.B", "A_C"]);
        assert_eq!(r.subtree_end(r.get("A").unwrap()), 2);
    }

    #[test]
    fn container_matching() {
        let r = reg(&["A.1", "A.2", "B"]);
        let a = r.get("A").unwrap();
        let a1 = r.get("A.1").unwrap();
        let a2 = r.get("A.2").unwrap();
        let c = r.container(TagSet::of(&[a1]));
        assert!(c.has(a));
        assert!(!c.has_exact(a));
        assert!(c.has_exact(a1));
        assert!(!c.has(a2));
        assert!(c.has_all(&TagSet::of(&[a, a1])));
        assert!(!c.has_all_exact(&TagSet::of(&[a, a1])));
        assert_eq!(r.display_set(&TagSet::of(&[a1, a2])), "{A.1, A.2}");
    }

    #[test]
    fn invalid_names_and_aliases() {
        for bad in ["", "A..B", ".A", "A.", "A B", "Ä"] {
            assert!(matches!(
                TagRegistry::new([bad], []),
                Err(TagRegistryError::InvalidName { .. })
            ));
        }
        let r = TagRegistry::new(["New.Name"], [("Old.Name", "New.Name")]).unwrap();
        assert_eq!(r.get("Old.Name"), r.get("New.Name"));
        assert!(TagRegistry::new(["A"], [("B", "Missing")]).is_err());
        assert!(TagRegistry::new(["A"], [("A", "A")]).is_err());
        let many: Vec<String> = (0..1100).map(|i| format!("T{i}")).collect();
        assert!(matches!(
            TagRegistry::new(many.iter().map(String::as_str), []),
            Err(TagRegistryError::TooManyTags { count: 1100 })
        ));
    }
}
