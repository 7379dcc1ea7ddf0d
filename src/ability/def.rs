//! Frozen ability definitions: triggers, grants, timelines, cancel rules, instancing.

use crate::effect::GrantDef;
use crate::id::{FnId, TagId};
use crate::num::{Frame, Fx};
use crate::tag::{TagContainer, TagSet};
use serde::{Deserialize, Serialize};

/// How an ability is triggered besides input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TriggerDef {
    /// A gameplay event whose tag matches (hierarchically).
    Event(TagId),
    /// The owner gains the tag.
    TagAdded(TagId),
    /// The owner gains the tag; the ability is cancelled when it goes away.
    TagPresent(TagId),
}

impl TriggerDef {
    /// The trigger's tag.
    pub fn tag(self) -> TagId {
        match self {
            TriggerDef::Event(t) | TriggerDef::TagAdded(t) | TriggerDef::TagPresent(t) => t,
        }
    }
}

/// A frozen ability definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AbilityDef {
    /// The ability's name.
    pub name: String,
    /// Tags describing the ability.
    pub tags: TagContainer,
    /// Activating cancels running abilities whose tags match.
    pub cancel_abilities_with_tags: TagSet,
    /// While running, abilities whose tags match cannot activate.
    pub block_abilities_with_tags: TagSet,
    /// Tags the owner carries while the ability runs.
    pub activation_owned_tags: TagSet,
    /// The owner needs all of these.
    pub activation_required_tags: TagSet,
    /// The owner may have none of these.
    pub activation_blocked_tags: TagSet,
    /// Event activations: instigator requirements.
    pub source_required_tags: TagSet,
    /// Event activations: instigator blockers.
    pub source_blocked_tags: TagSet,
    /// Event activations: target requirements.
    pub target_required_tags: TagSet,
    /// Event activations: target blockers.
    pub target_blocked_tags: TagSet,
    /// The cost effect (instant).
    pub cost: Option<crate::id::EffectDefId>,
    /// SetByCaller values for the cost spec.
    pub cost_set_by_caller: Vec<(TagId, Fx)>,
    /// The cooldown effect (duration).
    pub cooldown: Option<crate::id::EffectDefId>,
    /// A duration override for the cooldown effect; when the effect's duration is
    /// `SetByCaller(key)`, the commit also sets `key` to this many frames.
    pub cooldown_duration: Option<Frame>,
    /// SetByCaller values for the cooldown spec (a SetByCaller duration's key is frames).
    /// Left out of the content hash's rendering when empty, so content that does not use it
    /// keeps its hash.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cooldown_set_by_caller: Vec<(TagId, Fx)>,
    /// Extra cooldown tags granted by the cooldown effect for this ability.
    pub cooldown_tags: Vec<TagId>,
    /// The cost spec's SetByCaller values beyond the four a spec holds in itself
    /// (`cost_set_by_caller` from the fifth on): the commit's spec names them (its `ext`,
    /// `src/world/capacity.rs`) instead of copying them. Derived, so not hashed.
    #[serde(skip)]
    pub cost_values_beyond: Vec<crate::effect::SbcEntry>,
    /// Every SetByCaller value of the cooldown spec in the order the commit sets them:
    /// `cooldown_set_by_caller`, then a SetByCaller duration's key set by
    /// `cooldown_duration`. Derived, so not hashed.
    #[serde(skip)]
    pub cooldown_values: Vec<(TagId, Fx)>,
    /// [`AbilityDef::cooldown_values`] from the fifth on (see
    /// [`AbilityDef::cost_values_beyond`]).
    #[serde(skip)]
    pub cooldown_values_beyond: Vec<crate::effect::SbcEntry>,
    /// `cooldown_tags` from the third on (the cooldown spec's dynamic granted tags beyond its
    /// two), as tag id + 1. Derived, so not hashed.
    #[serde(skip)]
    pub cooldown_tags_beyond: Vec<u16>,
    /// The cooldown tags: the cooldown effect's granted tags ∪ `cooldown_tags` (computed at
    /// freeze, never in a shared scratch: G-18).
    pub all_cooldown_tags: TagSet,
    /// State-blob policy.
    pub instancing: Instancing,
    /// Triggers.
    pub triggers: Vec<TriggerDef>,
    /// Activates when granted.
    pub passive: bool,
    /// Whether a pressed bound input activates it.
    pub activate_on_input: bool,
    /// Releasing the bound input ends the ability.
    pub end_on_release: bool,
    /// Frames a press that could not activate the ability stays buffered (0: none). Left out
    /// of the content hash's rendering when 0, so content without buffers keeps its hash.
    #[serde(skip_serializing_if = "is_zero_u16")]
    pub input_buffer: u16,
    /// The default input id.
    pub input: Option<u8>,
    /// The state blob size in bytes.
    pub state_size: u16,
    /// The registered behaviour.
    pub behaviour: Option<FnId>,
    /// The registered custom activation check.
    pub can_activate: Option<FnId>,
    /// Re-activation restarts instead of failing.
    pub retrigger: bool,
    /// Commit on activation.
    pub commit_on_activate: bool,
    /// The timeline played on activation.
    pub timeline: Option<crate::id::TimelineId>,
    /// Automatic end after this many frames.
    pub end_after: Option<Frame>,
    /// Persistent cues shown while the ability is active.
    pub cues: Vec<TagId>,
}

/// A frozen ability set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AbilitySetDef {
    /// The set's name.
    pub name: String,
    /// Its grants.
    pub grants: Vec<GrantDef>,
}

/// A frozen timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimelineDef {
    /// The timeline's name.
    pub name: String,
    /// Total frames (startup + active + recovery, at least 1).
    pub frames: Frame,
    /// Startup frames.
    pub startup: Frame,
    /// Active frames.
    pub active: Frame,
    /// `(frame, event tag)` notifies, by frame.
    pub notifies: Vec<(Frame, TagId)>,
    /// `(from, to, tag)` windows, including the phase tags.
    pub windows: Vec<(Frame, Frame, TagId)>,
    /// Hit, hurt and push boxes, each out during its window, in authored order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<super::boxes::BoxDef>,
}

/// A rule cancelling abilities when their owner gains a tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CancelRuleDef {
    /// The tag.
    pub tag: TagId,
    /// Only abilities with any of these tags (all when empty).
    pub with: TagSet,
    /// Never abilities with any of these tags.
    pub without: TagSet,
}

/// For `skip_serializing_if`: a zero that the content hash's rendering leaves out.
#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero_u16(v: &u16) -> bool {
    *v == 0
}

/// How an ability keeps its state blob between activations (F-GA-19).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Instancing {
    /// The state blob is zeroed at every activation (the default; no stale variables, G-28).
    #[default]
    PerExecution,
    /// The state blob persists between activations.
    PerActor,
    /// No state blob and no tasks.
    NonInstanced,
}
