//! Effect queries (F-GE-26): find active effects by owned tags, definition, instigator or
//! modified attribute.

use super::{ActiveEffect, EffectDef, EffectOrigin};
use crate::id::{AttrId, EffectDefId, Entity};
use crate::tag::{TagQuery, TagSet};

/// A filter over active effects. Every set criterion must hold; the empty query matches every
/// effect. Owned tags are the definition's asset ∪ granted tags, matched hierarchically.
///
/// ```
/// use rollback_abilities::{EffectQuery, TagSet};
/// let q = EffectQuery::new().with_owned_any(TagSet::EMPTY).including_inhibited(false);
/// assert!(!q.include_inhibited);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectQuery {
    /// The effect owns any of these tags (ignored when empty).
    pub owned_any: TagSet,
    /// The effect owns all of these tags (ignored when empty).
    pub owned_all: TagSet,
    /// A tag query over the owned tags.
    pub owned_query: Option<TagQuery>,
    /// The definition.
    pub def: Option<EffectDefId>,
    /// The instigator.
    pub instigator: Option<Entity>,
    /// The effect has a modifier on this attribute.
    pub modifies: Option<AttrId>,
    /// The effect was applied by this ability (any activation).
    pub ability: Option<crate::id::AbilityHandle>,
    /// Whether inhibited effects match (default true).
    pub include_inhibited: bool,
}

impl Default for EffectQuery {
    fn default() -> Self {
        EffectQuery {
            owned_any: TagSet::EMPTY,
            owned_all: TagSet::EMPTY,
            owned_query: None,
            def: None,
            instigator: None,
            modifies: None,
            ability: None,
            include_inhibited: true,
        }
    }
}

impl EffectQuery {
    /// The query matching every effect.
    pub fn new() -> Self {
        Self::default()
    }

    /// Effects owning any of `tags` (hierarchically).
    #[must_use]
    pub fn with_owned_any(mut self, tags: TagSet) -> Self {
        self.owned_any = tags;
        self
    }

    /// Effects owning all of `tags` (hierarchically).
    #[must_use]
    pub fn with_owned_all(mut self, tags: TagSet) -> Self {
        self.owned_all = tags;
        self
    }

    /// Effects whose owned tags match a query.
    #[must_use]
    pub fn with_owned_query(mut self, q: TagQuery) -> Self {
        self.owned_query = Some(q);
        self
    }

    /// Effects of one definition.
    #[must_use]
    pub fn with_def(mut self, def: EffectDefId) -> Self {
        self.def = Some(def);
        self
    }

    /// Effects applied by one instigator.
    #[must_use]
    pub fn with_instigator(mut self, e: Entity) -> Self {
        self.instigator = Some(e);
        self
    }

    /// Effects with a modifier on an attribute.
    #[must_use]
    pub fn with_modifies(mut self, a: AttrId) -> Self {
        self.modifies = Some(a);
        self
    }

    /// Effects applied by an ability.
    #[must_use]
    pub fn with_ability(mut self, h: crate::id::AbilityHandle) -> Self {
        self.ability = Some(h);
        self
    }

    /// Whether inhibited effects match.
    #[must_use]
    pub fn including_inhibited(mut self, yes: bool) -> Self {
        self.include_inhibited = yes;
        self
    }

    /// Whether an active effect matches: `defs` are the content's effect definitions
    /// ([`Content::effect_defs`](crate::Content::effect_defs)) and `origin` is the effect's
    /// entry in [`World::effect_origins`](crate::World::effect_origins).
    pub fn matches(&self, defs: &[EffectDef], e: &ActiveEffect, origin: &EffectOrigin) -> bool {
        self.matches_owning(defs, e, origin, |def| def.owned_tags.expanded)
    }

    /// Whether the query matches an active effect whose owned tags are `owned(def)` (asked
    /// only when the query has tag conditions): [`World::effects_matching`] passes the
    /// effect's own tags, the granted tags its spec added included.
    ///
    /// [`World::effects_matching`]: crate::World::effects_matching
    pub fn matches_owning(
        &self,
        defs: &[EffectDef],
        e: &ActiveEffect,
        origin: &EffectOrigin,
        owned: impl FnOnce(&EffectDef) -> TagSet,
    ) -> bool {
        if !self.include_inhibited && e.is_inhibited() {
            return false;
        }
        if self.def.is_some_and(|d| d != e.def)
            || self.instigator.is_some_and(|i| i != origin.instigator)
            || self.ability.is_some_and(|a| a != origin.ability)
        {
            return false;
        }
        let Some(def) = defs.get(e.def.index()) else { return false };
        if self.owned_any.is_empty() && self.owned_all.is_empty() && self.owned_query.is_none() {
            return self.modifies.is_none_or(|a| def.modifiers.iter().any(|m| m.attr == a));
        }
        let owned = &owned(def);
        if !self.owned_any.is_empty() && !self.owned_any.intersects(owned) {
            return false;
        }
        if !self.owned_all.is_empty() && !self.owned_all.is_subset(owned) {
            return false;
        }
        if self.owned_query.as_ref().is_some_and(|q| !q.matches(owned)) {
            return false;
        }
        self.modifies.is_none_or(|a| def.modifiers.iter().any(|m| m.attr == a))
    }
}
