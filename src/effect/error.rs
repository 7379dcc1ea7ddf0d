//! Why applying an effect failed.

use crate::id::{EffectHandle, TagId};
use serde::Serialize;

/// Why an application failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ApplyError {
    /// The target is not alive or has no ability system.
    InvalidTarget,
    /// The definition id is not in the content.
    UnknownDefinition,
    /// The target's tags fail the application requirements.
    Requirements,
    /// An active effect on the target grants immunity.
    Immune {
        /// The effect granting the immunity.
        blocker: EffectHandle,
    },
    /// A custom application requirement refused.
    CustomRequirement,
    /// A SetByCaller value the definition needs is missing from the spec.
    MissingSetByCaller {
        /// The missing key.
        tag: TagId,
    },
    /// The stack is full and the definition denies overflow.
    StackOverflowDenied,
    /// The target's effect capacity is exhausted.
    Capacity,
    /// A builder without the world could not keep a value in the spec's inline room (a fifth
    /// SetByCaller value, a third granted tag, a fifth inline modifier), or a world call could
    /// not find room for one: the spec is incomplete, so it is not applied. Set such values
    /// with [`World::set_set_by_caller`](crate::World::set_set_by_caller),
    /// [`World::add_granted_tag`](crate::World::add_granted_tag) or
    /// [`World::inline_spec`](crate::World::inline_spec), within the capacity named here.
    SpecValuesDropped {
        /// The capacity whose room was missing.
        capacity: crate::capacity::Capacity,
    },
    /// The spec's values beyond its inline room were made in an earlier frame: they lived in
    /// the frame spill, which every step empties at its end (see
    /// [`World::set_set_by_caller`](crate::World::set_set_by_caller)). Make such a spec in the frame
    /// it is applied in.
    SpecExpired,
    /// A spec needs more room than a capacity of the world's configuration gives (returned
    /// by the calls that set values beyond a spec's inline room).
    OverCapacity(crate::capacity::CapacityExceeded),
}

impl core::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ApplyError::InvalidTarget => {
                write!(f, "the target is not alive or has no ability system")
            }
            ApplyError::UnknownDefinition => {
                write!(f, "the effect definition is not in the content")
            }
            ApplyError::Requirements => {
                write!(f, "the target's tags fail the application requirements")
            }
            ApplyError::Immune { blocker } => {
                write!(f, "the target is immune ({blocker:?} grants the immunity)")
            }
            ApplyError::CustomRequirement => write!(f, "a custom application requirement refused"),
            ApplyError::MissingSetByCaller { tag } => {
                write!(f, "the spec lacks the SetByCaller value {tag:?}")
            }
            ApplyError::StackOverflowDenied => {
                write!(f, "the stack is full and the effect denies overflow")
            }
            ApplyError::Capacity => write!(f, "the target's effect capacity is exhausted"),
            ApplyError::SpecValuesDropped { capacity } => write!(
                f,
                "the spec lost a value that did not fit its inline room ({} {}); set such \
                 values through the world (up to {capacity})",
                capacity.inline(),
                capacity.counts()
            ),
            ApplyError::SpecExpired => write!(
                f,
                "the spec's values beyond its inline room were made in an earlier frame (the \
                 frame spill is emptied at the end of every step)"
            ),
            ApplyError::OverCapacity(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ApplyError {}
