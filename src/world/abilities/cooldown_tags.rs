//! The world side of runtime cooldown tags (see `crate::ability::CooldownTagsError` for the
//! stored encoding): setting, resetting and reading a granted ability's extra cooldown tags.

use crate::ability::cooldown_tags::{FROM_DEFINITION, NO_EXTRA, TAG_BASE};
use crate::ability::{AbilitySpec, CooldownTagsError};
use crate::content::def::AbilityDef;
use crate::id::{AbilityHandle, TagId};
use crate::tag::TagSet;
use crate::world::{Game, World};
use std::borrow::Cow;

impl<G: Game> World<G> {
    /// Sets a granted ability's extra cooldown tags at run time: `Some(tag)` or none, in place
    /// of its definition's `cooldown_tags` (the cooldown effect's own granted tags always
    /// count). From now on the activation check, the commit and
    /// [`World::ability_cooldown_remaining`] use them; a cooldown already running keeps the
    /// tags it was granted. One runtime tag per granted ability (the snapshot keeps one);
    /// [`World::reset_cooldown_tags`] returns to the definition's.
    ///
    /// ```
    /// # use rollback_abilities::{Content, Game, Hooks, World, WorldConfig};
    /// # struct G; impl Game for G { type Input = u8; type Component = (); type Global = (); }
    /// let content = std::sync::Arc::new(Content::from_ron_str(r#"(
    ///     tags: ["Cooldown.Slot1", "Cooldown.Slot2"],
    ///     effects: { "Cd": (duration: Frames(60)) },
    ///     abilities: { "Bolt": (cooldown: "Cd", cooldown_tags: ["Cooldown.Slot1"]) },
    /// )"#)?);
    /// let mut world = World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
    /// let hero = world.spawn_actor(&[]).unwrap();
    /// let bolt = world.grant_ability(hero, content.ability("Bolt")?, 1).unwrap();
    /// let slot2 = content.tag("Cooldown.Slot2")?;
    /// world.set_cooldown_tags(bolt, Some(slot2)).unwrap();
    /// assert!(world.ability_cooldown_tags(bolt).unwrap().contains(slot2));
    /// assert!(!world.ability_cooldown_tags(bolt).unwrap().contains(content.tag("Cooldown.Slot1")?));
    /// # Ok::<(), rollback_abilities::ContentError>(())
    /// ```
    pub fn set_cooldown_tags(
        &mut self,
        h: AbilityHandle,
        tag: Option<TagId>,
    ) -> Result<(), CooldownTagsError> {
        let i = self.spec_slot(h).ok_or(CooldownTagsError::InvalidHandle)?;
        let def = self.content.ability_def(self.state.specs[i].def);
        let value = match tag {
            Some(t) => {
                if t.index() >= self.content.tags().len() {
                    return Err(CooldownTagsError::UnknownTag);
                }
                TAG_BASE + t.0
            }
            None => {
                if def
                    .cooldown
                    .is_some_and(|c| self.content.effect_def(c).granted_tags.explicit.is_empty())
                {
                    return Err(CooldownTagsError::NeverSeen);
                }
                NO_EXTRA
            }
        };
        self.state.specs[i].cooldown_tag = value;
        Ok(())
    }

    /// Returns a granted ability to its definition's `cooldown_tags`.
    pub fn reset_cooldown_tags(&mut self, h: AbilityHandle) -> Result<(), CooldownTagsError> {
        let i = self.spec_slot(h).ok_or(CooldownTagsError::InvalidHandle)?;
        self.state.specs[i].cooldown_tag = FROM_DEFINITION;
        Ok(())
    }

    /// A granted ability's cooldown tags now: its cooldown effect's granted tags plus its
    /// extra ones (the definition's, or those set by [`World::set_cooldown_tags`]).
    pub fn ability_cooldown_tags(&self, h: AbilityHandle) -> Option<TagSet> {
        let s = self.ability(h)?;
        Some(self.cooldown_tags_of(s, self.content.ability_def(s.def)).into_owned())
    }

    /// Whether a granted ability's cooldown tags were set at run time.
    pub fn has_runtime_cooldown_tags(&self, h: AbilityHandle) -> bool {
        self.ability(h).is_some_and(|s| s.cooldown_tag != FROM_DEFINITION)
    }

    /// The runtime extra tag: `None` for the definition's tags, `Some(None)` for none.
    fn runtime_extra(&self, s: &AbilitySpec) -> Option<Option<TagId>> {
        match s.cooldown_tag {
            FROM_DEFINITION => None,
            NO_EXTRA => Some(None),
            v => {
                // A snapshot holding an unknown tag (validation refuses it) counts as none.
                let t = TagId(v - TAG_BASE);
                Some((t.index() < self.content.tags().len()).then_some(t))
            }
        }
    }

    /// The cooldown tags an ability's activation check, commit and cooldown query use.
    pub(crate) fn cooldown_tags_of<'a>(
        &self,
        s: &AbilitySpec,
        def: &'a AbilityDef,
    ) -> Cow<'a, TagSet> {
        let Some(extra) = self.runtime_extra(s) else {
            return Cow::Borrowed(&def.all_cooldown_tags);
        };
        let mut set = def
            .cooldown
            .map_or(TagSet::EMPTY, |c| self.content.effect_def(c).granted_tags.explicit);
        if let Some(t) = extra {
            set.insert(t);
        }
        Cow::Owned(set)
    }

    /// The extra cooldown tags the commit grants through the cooldown effect (its dynamic
    /// granted tags; `u16::MAX`: unused).
    pub(crate) fn cooldown_extra_words(&self, s: &AbilitySpec, def: &AbilityDef) -> [u16; 2] {
        let mut out = [u16::MAX; 2];
        match self.runtime_extra(s) {
            None => {
                for (k, t) in def.cooldown_tags.iter().take(2).enumerate() {
                    out[k] = t.0;
                }
            }
            Some(Some(t)) => out[0] = t.0,
            Some(None) => {}
        }
        out
    }
}
