//! Runtime cooldown tags of a granted ability (GAS: a per-instance `GetCooldownTags`): a
//! granted ability may carry, instead of its definition's `cooldown_tags`, one tag set at run
//! time — or none — kept in its snapshot record, so it rolls back, replays and is checksummed
//! with the rest of the ability.
//!
//! An ability's cooldown tags are its cooldown effect's own granted tags plus its *extra*
//! cooldown tags: the definition's `cooldown_tags`, or the runtime ones. The activation check,
//! the commit (which grants the extra tags through the cooldown effect as dynamic granted tags)
//! and the cooldown query ([`World::ability_cooldown_remaining`]) all read them through here.
//! A cooldown already running keeps the tags it was granted: after a change, it blocks the
//! ability only if those tags are still among the ability's cooldown tags.

use super::AbilitySpec;
use crate::content::def::AbilityDef;
use crate::id::{AbilityHandle, TagId};
use crate::tag::TagSet;
use crate::world::{Game, World};
use std::borrow::Cow;

/// `AbilitySpec::cooldown_tag`: the definition's extra cooldown tags.
const FROM_DEFINITION: u16 = 0;
/// `AbilitySpec::cooldown_tag`: no extra cooldown tag.
const NO_EXTRA: u16 = 1;
/// `AbilitySpec::cooldown_tag`: `TAG_BASE + t` is the tag `t`.
const TAG_BASE: u16 = 2;

/// Why [`World::set_cooldown_tags`] refused a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum CooldownTagsError {
    /// The handle names no granted ability.
    InvalidHandle,
    /// The tag is not in the content's registry.
    UnknownTag,
    /// The ability's cooldown effect grants no tag of its own: without an extra cooldown tag,
    /// its cooldown could never be seen (content validation refuses the same definition).
    NeverSeen,
}

impl core::fmt::Display for CooldownTagsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            CooldownTagsError::InvalidHandle => "the handle names no granted ability",
            CooldownTagsError::UnknownTag => "the tag is not in the content's registry",
            CooldownTagsError::NeverSeen => {
                "the ability's cooldown effect grants no tag, so without a cooldown tag the \
                 cooldown could never be seen"
            }
        })
    }
}

impl std::error::Error for CooldownTagsError {}

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

/// Whether a stored `cooldown_tag` value names no tag beyond the registry (snapshot
/// validation).
pub(crate) fn cooldown_tag_valid(value: u16, tags: usize) -> bool {
    value < TAG_BASE || usize::from(value - TAG_BASE) < tags
}
