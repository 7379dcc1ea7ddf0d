//! Runtime cooldown tags of a granted ability (GAS: a per-instance `GetCooldownTags`): a
//! granted ability may carry, instead of its definition's `cooldown_tags`, one tag set at run
//! time — or none — kept in its snapshot record, so it rolls back, replays and is checksummed
//! with the rest of the ability.
//!
//! An ability's cooldown tags are its cooldown effect's own granted tags plus its *extra*
//! cooldown tags: the definition's `cooldown_tags`, or the runtime ones. The activation check,
//! the commit (which grants the extra tags through the cooldown effect as dynamic granted tags)
//! and the cooldown query (`World::ability_cooldown_remaining`) all read them through here.
//! A cooldown already running keeps the tags it was granted: after a change, it blocks the
//! ability only if those tags are still among the ability's cooldown tags.

/// `AbilitySpec::cooldown_tag`: the definition's extra cooldown tags.
pub(crate) const FROM_DEFINITION: u16 = 0;
/// `AbilitySpec::cooldown_tag`: no extra cooldown tag.
pub(crate) const NO_EXTRA: u16 = 1;
/// `AbilitySpec::cooldown_tag`: `TAG_BASE + t` is the tag `t`.
pub(crate) const TAG_BASE: u16 = 2;

/// Why `World::set_cooldown_tags` refused a change.
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

/// Whether a stored `cooldown_tag` value names no tag beyond the registry (snapshot
/// validation).
pub(crate) fn cooldown_tag_valid(value: u16, tags: usize) -> bool {
    value < TAG_BASE || usize::from(value - TAG_BASE) < tags
}
